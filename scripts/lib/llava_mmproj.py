#!/usr/bin/env python3
"""Writes llama.cpp's mmproj GGUF of a LLaVA checkpoint's vision tower and
projector (an HF directory: config.json, model.safetensors,
preprocessor_config.json), for timing llama.cpp's mtmd on the same weights
as an etllm program (scripts/bench-image-encode-vs-mtmd.sh).

The keys and tensor names are those tools/mtmd/clip.cpp reads for projector
type "mlp" (LLaVA-1.5; its legacy converter,
tools/mtmd/legacy-models/convert_image_encoder_to_gguf.py, writes the
same): clip.vision.* sizes, block_count = the layers vision_feature_layer
uses, feature_layer, image_mean/std, use_gelu false (quick GELU), v.* tower
tensors of those layers (no post-LayerNorm), mm.0 / mm.2 the projector.
etllm reads it (`model.mmproj`) as it reads llama.cpp's; the tests use it
to compose a GGUF text model with the same weights as an HF checkpoint.

usage: llava_mmproj.py HF_DIR OUT.gguf [--f16] [--legacy-ffn-names]
  --legacy-ffn-names  fc1 as ffn_down and fc2 as ffn_up, as the legacy
                      converter names them (clip.cpp and etllm detect it)
"""
import sys

from safetensors.numpy import load_file

import mmproj_writer


def main():
    a = mmproj_writer.Source(__doc__, ("--f16", "--legacy-ffn-names"))
    src, out, flags, f16 = a.src, a.out, a.flags, a.f16
    cfg, v, pre = a.cfg, a.vision, a.pre
    layers = v["num_hidden_layers"]
    feature = cfg.get("vision_feature_layer", -2)
    if not isinstance(feature, int):
        sys.exit("one vision_feature_layer only")
    used = feature if feature >= 0 else layers + 1 + feature
    text_hidden = cfg["text_config"]["hidden_size"]

    w = mmproj_writer.open_writer(
        out, "mlp", v, text_hidden, pre, f16=f16, block_count=used,
        eps_default=1e-5, use_gelu=v.get("hidden_act") == "gelu")
    w.add_bool("clip.has_llava_projector", True)
    w.add_array("clip.vision.feature_layer", [used])

    tower = "vision_tower.vision_model."
    names = {
        "embeddings.class_embedding": "v.class_embd",
        "embeddings.patch_embedding.weight": "v.patch_embd.weight",
        "embeddings.position_embedding.weight": "v.position_embd.weight",
        "pre_layrnorm.weight": "v.pre_ln.weight",
        "pre_layrnorm.bias": "v.pre_ln.bias",
    }
    parts = dict(mmproj_writer.BLOCK_PARTS)
    if "--legacy-ffn-names" in flags:
        parts["mlp.fc1"], parts["mlp.fc2"] = "ffn_down", "ffn_up"
    names.update(mmproj_writer.block_names(used, parts))
    pairs = [(tower + k, g) for k, g in names.items()]
    for i, hf in ((0, "linear_1"), (2, "linear_2")):
        for kind in ("weight", "bias"):
            pairs.append((f"multi_modal_projector.{hf}.{kind}",
                          f"mm.{i}.{kind}"))
    mmproj_writer.write(w, load_file(src / "model.safetensors"), pairs,
                        f16=f16)


if __name__ == "__main__":
    main()
