"""What llama.cpp's mmproj writers share (scripts/lib/*_mmproj.py): the
clip.* header keys, the tower's tensor names (v.blk.N.*) and the tensors'
writing (f32, or 2-D and 4-D weights in f16 as llama.cpp's converters write
them)."""

import json
import pathlib
import sys

import numpy as np

import gguf

class Source:
    """The command line `HF_DIR OUT.gguf [flags]` of a writer (exits with
    its usage `doc` otherwise) and the checkpoint's configs: src, out,
    flags, f16, cfg (config.json), vision (its vision_config), pre
    (preprocessor_config.json)."""

    def __init__(self, doc, allowed=("--f16",)):
        args = sys.argv[1:]
        self.flags = {a for a in args if a.startswith("--")}
        paths = [a for a in args if not a.startswith("--")]
        if len(paths) != 2 or self.flags - set(allowed):
            sys.exit(doc)
        self.src, self.out = pathlib.Path(paths[0]), paths[1]
        self.f16 = "--f16" in self.flags
        self.cfg = json.loads((self.src / "config.json").read_text())
        self.vision = self.cfg["vision_config"]
        self.pre = json.loads(
            (self.src / "preprocessor_config.json").read_text())


# HF tower module -> llama.cpp's name of it in a block.
BLOCK_PARTS = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
               "self_attn.v_proj": "attn_v", "self_attn.out_proj": "attn_out",
               "layer_norm1": "ln1", "layer_norm2": "ln2",
               "mlp.fc1": "ffn_up", "mlp.fc2": "ffn_down"}


def open_writer(out, projector_type, vision, text_hidden, pre, *, f16,
                block_count, eps_default, use_gelu):
    """A GGUFWriter with the clip.* keys every projector type has."""
    w = gguf.GGUFWriter(out, "clip")
    w.add_string("clip.projector_type", projector_type)
    w.add_bool("clip.has_text_encoder", False)
    w.add_bool("clip.has_vision_encoder", True)
    w.add_file_type(1 if f16 else 0)
    w.add_uint32("clip.vision.image_size", vision["image_size"])
    w.add_uint32("clip.vision.patch_size", vision["patch_size"])
    w.add_uint32("clip.vision.embedding_length", vision["hidden_size"])
    w.add_uint32("clip.vision.feed_forward_length",
                 vision["intermediate_size"])
    w.add_uint32("clip.vision.projection_dim", text_hidden)
    w.add_uint32("clip.vision.attention.head_count",
                 vision["num_attention_heads"])
    w.add_float32("clip.vision.attention.layer_norm_epsilon",
                  vision.get("layer_norm_eps", eps_default))
    w.add_uint32("clip.vision.block_count", block_count)
    w.add_array("clip.vision.image_mean", pre["image_mean"])
    w.add_array("clip.vision.image_std", pre["image_std"])
    w.add_bool("clip.use_gelu", use_gelu)
    return w


def block_names(layers, parts=BLOCK_PARTS):
    """encoder.layers.N.<part>.{weight,bias} -> v.blk.N.<name>.{...}."""
    return {f"encoder.layers.{i}.{hf}.{kind}": f"v.blk.{i}.{gg}.{kind}"
            for i in range(layers) for hf, gg in parts.items()
            for kind in ("weight", "bias")}


def write(w, tensors, pairs, *, f16, keep_f32=("v.position_embd",),
          adjust=None):
    """Adds each (HF name, GGUF name) of `pairs` from `tensors` (f32; with
    `f16`, 2-D and 4-D weights in f16 but those starting with `keep_f32`),
    `adjust(gguf name, array)` applied first, and writes the file."""
    for hf, gg in pairs:
        t = tensors[hf].astype(np.float32)
        if adjust:
            t = adjust(gg, t)
        if f16 and t.ndim >= 2 and not gg.startswith(tuple(keep_f32)):
            t = t.astype(np.float16)
        w.add_tensor(gg, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
