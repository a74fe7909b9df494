#!/usr/bin/env python3
"""Writes llama.cpp's mmproj GGUF of a Gemma 3 checkpoint's vision tower and
projector (an HF directory: config.json, model.safetensors,
preprocessor_config.json), as llama.cpp's converter does
(conversion/gemma.py, Gemma3VisionModel): projector type "gemma3",
clip.vision.* sizes, image_mean/std, use_gelu (SigLIP's tanh GELU),
projector.scale_factor (the pooling side) when it is not 4; v.* tower
tensors with the patch bias and post_ln, mm.input_projection.weight
([vision hidden, hidden]) and mm.soft_emb_norm.weight with 1 added (the
converter's "correcting norm value"). etllm reads it (`model.mmproj`) as it
reads llama.cpp's; the tests use it to compose a GGUF text model with the
same weights as an HF checkpoint.

usage: gemma3_mmproj.py HF_DIR OUT.gguf [--f16]
"""
import math

import numpy as np
from safetensors.numpy import load_file

import mmproj_writer


def main():
    a = mmproj_writer.Source(__doc__)
    src, out, f16 = a.src, a.out, a.f16
    cfg, v, pre = a.cfg, a.vision, a.pre
    layers = v["num_hidden_layers"]
    per_side = math.isqrt(cfg.get("mm_tokens_per_image", 256))
    scale = (v["image_size"] // v["patch_size"]) // per_side

    w = mmproj_writer.open_writer(
        out, "gemma3", v, cfg["text_config"]["hidden_size"], pre, f16=f16,
        block_count=layers, eps_default=1e-6, use_gelu=True)
    if scale != 4:
        w.add_uint32("clip.vision.projector.scale_factor", scale)

    tower = "vision_tower.vision_model."
    names = {
        "embeddings.patch_embedding.weight": "v.patch_embd.weight",
        "embeddings.patch_embedding.bias": "v.patch_embd.bias",
        "embeddings.position_embedding.weight": "v.position_embd.weight",
        "post_layernorm.weight": "v.post_ln.weight",
        "post_layernorm.bias": "v.post_ln.bias",
    }
    names.update(mmproj_writer.block_names(layers))
    pairs = [(tower + k, g) for k, g in names.items()]
    pairs += [("multi_modal_projector.mm_input_projection_weight",
               "mm.input_projection.weight"),
              ("multi_modal_projector.mm_soft_emb_norm.weight",
               "mm.soft_emb_norm.weight")]

    def add_one(name, t):  # the converter's "correcting norm value"
        return t + np.float32(1) if name == "mm.soft_emb_norm.weight" else t

    mmproj_writer.write(w, load_file(src / "model.safetensors"), pairs,
                        f16=f16, adjust=add_one)


if __name__ == "__main__":
    main()
