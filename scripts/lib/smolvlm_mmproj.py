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
import json
import pathlib
import sys

import numpy as np
from safetensors.numpy import load_file

import gguf


def main():
    args = sys.argv[1:]
    flags = {a for a in args if a.startswith("--")}
    paths = [a for a in args if not a.startswith("--")]
    if len(paths) != 2 or flags - {"--f16"}:
        sys.exit(__doc__)
    src, out = pathlib.Path(paths[0]), paths[1]
    f16 = "--f16" in flags
    cfg = json.loads((src / "config.json").read_text())
    v = cfg["vision_config"]
    pre = json.loads((src / "preprocessor_config.json").read_text())
    layers = v["num_hidden_layers"]

    w = gguf.GGUFWriter(out, "clip")
    w.add_string("clip.projector_type", "idefics3")
    w.add_bool("clip.has_text_encoder", False)
    w.add_bool("clip.has_vision_encoder", True)
    w.add_file_type(1 if f16 else 0)
    w.add_uint32("clip.vision.image_size", v["image_size"])
    w.add_uint32("clip.vision.patch_size", v["patch_size"])
    w.add_uint32("clip.vision.embedding_length", v["hidden_size"])
    w.add_uint32("clip.vision.feed_forward_length", v["intermediate_size"])
    w.add_uint32("clip.vision.projection_dim",
                 cfg["text_config"]["hidden_size"])
    w.add_uint32("clip.vision.attention.head_count",
                 v["num_attention_heads"])
    w.add_float32("clip.vision.attention.layer_norm_epsilon",
                  v.get("layer_norm_eps", 1e-5))
    w.add_uint32("clip.vision.block_count", layers)
    w.add_array("clip.vision.image_mean", pre["image_mean"])
    w.add_array("clip.vision.image_std", pre["image_std"])
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.projector.scale_factor",
                 cfg.get("scale_factor", 2))
    w.add_uint32("clip.vision.preproc_image_size",
                 pre.get("size", {}).get("longest_edge", v["image_size"]))

    tensors = load_file(src / "model.safetensors")
    tower = "model.vision_model."
    names = {
        "embeddings.patch_embedding.weight": "v.patch_embd.weight",
        "embeddings.patch_embedding.bias": "v.patch_embd.bias",
        "embeddings.position_embedding.weight": "v.position_embd.weight",
        "post_layernorm.weight": "v.post_ln.weight",
        "post_layernorm.bias": "v.post_ln.bias",
    }
    parts = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.out_proj": "attn_out",
             "layer_norm1": "ln1", "layer_norm2": "ln2",
             "mlp.fc1": "ffn_up", "mlp.fc2": "ffn_down"}
    for i in range(layers):
        for hf, gg in parts.items():
            for kind in ("weight", "bias"):
                names[f"encoder.layers.{i}.{hf}.{kind}"] = f"v.blk.{i}.{gg}.{kind}"
    out_tensors = [(tower + k, g) for k, g in names.items()]
    out_tensors.append(("model.connector.modality_projection.proj.weight",
                        "mm.model.fc.weight"))
    for hf, gg in out_tensors:
        t = tensors[hf].astype(np.float32)
        # 2-D and 4-D weights in f16 (as llama.cpp's converters write them),
        # norms, biases and the embeddings in f32.
        if f16 and t.ndim >= 2 and not gg.startswith(("v.position_embd",
                                                      "v.patch_embd")):
            t = t.astype(np.float16)
        w.add_tensor(gg, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
