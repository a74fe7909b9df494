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
    if len(paths) != 2 or flags - {"--f16", "--legacy-ffn-names"}:
        sys.exit(__doc__)
    src, out = pathlib.Path(paths[0]), paths[1]
    f16 = "--f16" in flags
    cfg = json.loads((src / "config.json").read_text())
    v = cfg["vision_config"]
    pre = json.loads((src / "preprocessor_config.json").read_text())
    layers = v["num_hidden_layers"]
    feature = cfg.get("vision_feature_layer", -2)
    if not isinstance(feature, int):
        sys.exit("one vision_feature_layer only")
    used = feature if feature >= 0 else layers + 1 + feature
    text_hidden = cfg["text_config"]["hidden_size"]

    w = gguf.GGUFWriter(out, "clip")
    w.add_string("clip.projector_type", "mlp")
    w.add_bool("clip.has_text_encoder", False)
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.has_llava_projector", True)
    w.add_file_type(1 if f16 else 0)
    w.add_uint32("clip.vision.image_size", v["image_size"])
    w.add_uint32("clip.vision.patch_size", v["patch_size"])
    w.add_uint32("clip.vision.embedding_length", v["hidden_size"])
    w.add_uint32("clip.vision.feed_forward_length", v["intermediate_size"])
    w.add_uint32("clip.vision.projection_dim", text_hidden)
    w.add_uint32("clip.vision.attention.head_count",
                 v["num_attention_heads"])
    w.add_float32("clip.vision.attention.layer_norm_epsilon",
                  v.get("layer_norm_eps", 1e-5))
    w.add_uint32("clip.vision.block_count", used)
    w.add_array("clip.vision.feature_layer", [used])
    w.add_array("clip.vision.image_mean", pre["image_mean"])
    w.add_array("clip.vision.image_std", pre["image_std"])
    w.add_bool("clip.use_gelu", v.get("hidden_act") == "gelu")

    tensors = load_file(src / "model.safetensors")
    tower = "vision_tower.vision_model."
    names = {
        "embeddings.class_embedding": "v.class_embd",
        "embeddings.patch_embedding.weight": "v.patch_embd.weight",
        "embeddings.position_embedding.weight": "v.position_embd.weight",
        "pre_layrnorm.weight": "v.pre_ln.weight",
        "pre_layrnorm.bias": "v.pre_ln.bias",
    }
    parts = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.out_proj": "attn_out",
             "layer_norm1": "ln1", "layer_norm2": "ln2",
             "mlp.fc1": "ffn_up", "mlp.fc2": "ffn_down"}
    if "--legacy-ffn-names" in flags:
        parts["mlp.fc1"], parts["mlp.fc2"] = "ffn_down", "ffn_up"
    for i in range(used):
        for hf, gg in parts.items():
            for kind in ("weight", "bias"):
                names[f"encoder.layers.{i}.{hf}.{kind}"] = f"v.blk.{i}.{gg}.{kind}"
    out_tensors = [(tower + k, g) for k, g in names.items()]
    for i, hf in ((0, "linear_1"), (2, "linear_2")):
        for kind in ("weight", "bias"):
            out_tensors.append((f"multi_modal_projector.{hf}.{kind}",
                                f"mm.{i}.{kind}"))
    for hf, gg in out_tensors:
        t = tensors[hf].astype(np.float32)
        # 2-D and 4-D weights in f16 (as llama.cpp's converters write them),
        # norms, biases and embeddings' rows in f32.
        if f16 and t.ndim >= 2 and not gg.startswith("v.position_embd"):
            t = t.astype(np.float16)
        w.add_tensor(gg, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
