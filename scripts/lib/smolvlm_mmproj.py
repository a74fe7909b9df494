#!/usr/bin/env python3
"""Writes llama.cpp's mmproj GGUF of a SmolVLM (or Idefics3) checkpoint's
vision tower and connector (an HF directory: config.json,
model.safetensors, preprocessor_config.json), as llama.cpp's converter does
(conversion/smolvlm.py, SmolVLMModel): projector type "idefics3",
clip.vision.* sizes, layer_norm_epsilon, projector.scale_factor, use_gelu,
preproc_image_size (the processor's size.longest_edge), image_mean/std;
v.* tower tensors with the patch bias and post_ln, mm.model.fc.weight the
connector's projection. etllm reads it (`model.mmproj`) as it reads
llama.cpp's; the tests use it to compose a GGUF text model with the same
weights as an HF checkpoint.

usage: smolvlm_mmproj.py HF_DIR OUT.gguf [--f16]
"""

from safetensors.numpy import load_file

import mmproj_writer


def main():
    a = mmproj_writer.Source(__doc__)
    src, out, f16 = a.src, a.out, a.f16
    cfg, v, pre = a.cfg, a.vision, a.pre
    layers = v["num_hidden_layers"]

    w = mmproj_writer.open_writer(
        out, "idefics3", v, cfg["text_config"]["hidden_size"], pre, f16=f16,
        block_count=layers, eps_default=1e-5, use_gelu=True)
    w.add_uint32("clip.vision.projector.scale_factor",
                 cfg.get("scale_factor", 2))
    w.add_uint32("clip.vision.preproc_image_size",
                 pre.get("size", {}).get("longest_edge", v["image_size"]))

    tower = "model.vision_model."
    names = {
        "embeddings.patch_embedding.weight": "v.patch_embd.weight",
        "embeddings.patch_embedding.bias": "v.patch_embd.bias",
        "embeddings.position_embedding.weight": "v.position_embd.weight",
        "post_layernorm.weight": "v.post_ln.weight",
        "post_layernorm.bias": "v.post_ln.bias",
    }
    names.update(mmproj_writer.block_names(layers))
    pairs = [(tower + k, g) for k, g in names.items()]
    pairs.append(("model.connector.modality_projection.proj.weight",
                  "mm.model.fc.weight"))
    mmproj_writer.write(w, load_file(src / "model.safetensors"), pairs,
                        f16=f16, keep_f32=("v.position_embd", "v.patch_embd"))


if __name__ == "__main__":
    main()
