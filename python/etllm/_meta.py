"""Meta's native Llama checkpoints: consolidated.*.pth + params.json.

The checkpoint is read with torch (weights_only: no arbitrary unpickling)
and mapped to the Llama family as a Hugging Face directory (config.json +
model.safetensors) that etllm-export's importer reads like any other:

* Meta's names to Hugging Face's (the table below),
* the q/k projection rows from Meta's interleaved-pair RoPE order to
  rotate-half order, by the C++ permutation the GGUF and llama2.c readers
  use (etllm._etllm.permute_qk_rows_to_rotate_half),
* the feed-forward size from dim, multiple_of and ffn_dim_multiplier as
  Meta's model.py computes it,
* config.json written by the C++ writer of every checkpoint format
  (formats::toHfConfigJson, etllm._etllm.hf_config_json) from the model
  config's fields.
"""

import glob
import json
import math
import os

import torch

from . import _etllm

# Meta's tensor names -> Hugging Face's; {i} is the layer.
_LAYER_NAMES = {
    "attention.wq.weight": "self_attn.q_proj.weight",
    "attention.wk.weight": "self_attn.k_proj.weight",
    "attention.wv.weight": "self_attn.v_proj.weight",
    "attention.wo.weight": "self_attn.o_proj.weight",
    "feed_forward.w1.weight": "mlp.gate_proj.weight",
    "feed_forward.w2.weight": "mlp.down_proj.weight",
    "feed_forward.w3.weight": "mlp.up_proj.weight",
    "attention_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
}
_GLOBAL_NAMES = {
    "tok_embeddings.weight": "model.embed_tokens.weight",
    "norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
# Tensors Meta's checkpoints carry that the model does not use.
_IGNORED = {"rope.freqs"}

_ST_DTYPES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
}


class MetaCheckpointError(Exception):
    pass


def ffn_dim(dim, multiple_of, ffn_dim_multiplier):
    """FeedForward's hidden size, exactly as Meta's model.py computes it."""
    hidden = 4 * dim
    hidden = int(2 * hidden / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def _params(path):
    try:
        with open(path, encoding="utf-8") as f:
            p = json.load(f)
    except OSError as e:
        raise MetaCheckpointError(f"{path}: {e.strerror}") from e
    except ValueError as e:
        raise MetaCheckpointError(f"{path}: invalid JSON: {e}") from e
    if not isinstance(p, dict):
        raise MetaCheckpointError(f"{path}: not a JSON object")

    def get(key, kind, default=None, required=False, positive=True):
        if key not in p or p[key] is None:
            if required:
                raise MetaCheckpointError(f"{path}: '{key}' is missing")
            return default
        v = p[key]
        if kind is bool:
            ok = isinstance(v, bool)
        elif kind is int:
            ok = isinstance(v, int) and not isinstance(v, bool)
        else:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
            if ok:
                v = float(v)
                ok = math.isfinite(v)
        if not ok:
            raise MetaCheckpointError(f"{path}: '{key}' must be "
                                      f"{'a number' if kind is float else kind.__name__}"
                                      f", got {p[key]!r}")
        if kind in (int, float) and positive and not v > 0:
            raise MetaCheckpointError(f"{path}: '{key}' must be positive, "
                                      f"got {v!r}")
        return v

    out = {
        "dim": get("dim", int, required=True),
        "n_layers": get("n_layers", int, required=True),
        "n_heads": get("n_heads", int, required=True),
        "n_kv_heads": get("n_kv_heads", int),
        "vocab_size": get("vocab_size", int, positive=False),
        "multiple_of": get("multiple_of", int, 256),
        "ffn_dim_multiplier": get("ffn_dim_multiplier", float),
        "norm_eps": get("norm_eps", float, 1e-5),
        "rope_theta": get("rope_theta", float, 10000.0),
        "use_scaled_rope": get("use_scaled_rope", bool, False),
        # Meta's apply_scaling factor; ExecuTorch's params call it
        # rope_scale_factor. Default 8 (Llama 3.1).
        "rope_scaling_factor": get("rope_scaling_factor", float,
                                   get("rope_scale_factor", float, 8.0)),
        "max_seq_len": get("max_seq_len", int, 2048),
    }
    if out["n_kv_heads"] is None:
        out["n_kv_heads"] = out["n_heads"]
    for k, limit in (("dim", 1 << 20), ("n_layers", 4096), ("n_heads", 4096),
                     ("multiple_of", 1 << 20)):
        if out[k] > limit:
            raise MetaCheckpointError(f"{path}: '{k}' = {out[k]} is too large")
    if out["dim"] % out["n_heads"]:
        raise MetaCheckpointError(
            f"{path}: dim {out['dim']} is not a multiple of n_heads "
            f"{out['n_heads']}")
    if out["n_heads"] % out["n_kv_heads"]:
        raise MetaCheckpointError(
            f"{path}: n_heads {out['n_heads']} is not a multiple of "
            f"n_kv_heads {out['n_kv_heads']}")
    if (out["dim"] // out["n_heads"]) % 2:
        raise MetaCheckpointError(f"{path}: the head size is odd")
    return out


def _checkpoint_file(path):
    if os.path.isdir(path):
        files = sorted(glob.glob(os.path.join(path, "consolidated.*.pth")))
        if not files:
            raise MetaCheckpointError(f"{path}: no consolidated.*.pth")
    elif os.path.isfile(path):
        files = [path]
    else:
        raise MetaCheckpointError(f"{path}: no such file or directory")
    if len(files) > 1:
        raise MetaCheckpointError(
            f"{path}: {len(files)} model-parallel shards "
            f"({', '.join(os.path.basename(f) for f in files)}); merge them "
            "into one consolidated.00.pth first (etllm reads one shard)")
    return files[0]


def model_config(p, vocab_size, tied):
    """The model config of the Llama-family model a params.json describes,
    as etllm's ModelConfig fields (the keys of
    include/etllm/Models/ModelConfig.td). The config.json is written from
    it by the C++ writer every checkpoint format uses (hf_config_json)."""
    eos = [2]
    bos = 1
    if vocab_size >= 128000:  # Llama 3's tiktoken vocabulary
        bos, eos = 128000, [128001, 128008, 128009]
    config = {
        "architecture": "LlamaForCausalLM",
        "hidden_size": p["dim"],
        "intermediate_size": ffn_dim(p["dim"], p["multiple_of"],
                                     p["ffn_dim_multiplier"]),
        "num_hidden_layers": p["n_layers"],
        "num_attention_heads": p["n_heads"],
        "num_key_value_heads": p["n_kv_heads"],
        "head_dim": p["dim"] // p["n_heads"],
        "vocab_size": vocab_size,
        "max_position_embeddings": p["max_seq_len"],
        "rms_norm_eps": p["norm_eps"],
        "rope_theta": p["rope_theta"],
        "tie_word_embeddings": tied,
        "bos_token_id": bos,
        "eos_token_ids": eos,
    }
    if p["use_scaled_rope"]:
        # Meta's apply_scaling (llama3/model.py): low 1, high 4, 8192.
        config["rope_scaling"] = {
            "type": "llama3", "factor": p["rope_scaling_factor"],
            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192}
    return config


def hf_config_json(config, params_path):
    """The config.json of a model_config() (the C++ writer's)."""
    try:
        return _etllm.hf_config_json(json.dumps(config))
    except _etllm.Error as e:
        raise MetaCheckpointError(f"{params_path}: {e}") from e


def convert(checkpoint, params_path, out_dir):
    """Writes the Hugging Face directory of a Meta checkpoint to out_dir."""
    p = _params(params_path)
    path = _checkpoint_file(checkpoint)
    try:
        sd = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise MetaCheckpointError(f"{path}: cannot be read as a PyTorch "
                                  f"checkpoint: {e}") from e
    if isinstance(sd, dict) and "model" in sd and isinstance(sd["model"], dict):
        sd = sd["model"]
    if not isinstance(sd, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor)
            for k, v in sd.items()):
        raise MetaCheckpointError(f"{path}: not a state dict of tensors")

    emb = sd.get("tok_embeddings.weight")
    if emb is None or emb.dim() != 2:
        raise MetaCheckpointError(f"{path}: no 2-D tok_embeddings.weight")
    vocab = emb.shape[0]
    if p["vocab_size"] not in (None, -1) and p["vocab_size"] != vocab:
        raise MetaCheckpointError(
            f"{params_path}: vocab_size {p['vocab_size']} but {path} has "
            f"{vocab} embedding rows")
    tied = "output.weight" not in sd
    config = model_config(p, vocab, tied)
    config_json = hf_config_json(config, params_path)
    D, F = p["dim"], config["intermediate_size"]
    H, Hkv, Dh = p["n_heads"], p["n_kv_heads"], config["head_dim"]
    expected = {
        "tok_embeddings.weight": ([vocab, D], None),
        "norm.weight": ([D], None),
    }
    if not tied:
        expected["output.weight"] = ([vocab, D], None)
    for i in range(p["n_layers"]):
        L = f"layers.{i}."
        expected.update({
            L + "attention.wq.weight": ([H * Dh, D], H),
            L + "attention.wk.weight": ([Hkv * Dh, D], Hkv),
            L + "attention.wv.weight": ([Hkv * Dh, D], None),
            L + "attention.wo.weight": ([D, H * Dh], None),
            L + "feed_forward.w1.weight": ([F, D], None),
            L + "feed_forward.w2.weight": ([D, F], None),
            L + "feed_forward.w3.weight": ([F, D], None),
            L + "attention_norm.weight": ([D], None),
            L + "ffn_norm.weight": ([D], None),
        })
    unknown = sorted(set(sd) - set(expected) - _IGNORED)
    if unknown:
        raise MetaCheckpointError(
            f"{path}: tensors the Llama family does not have: "
            + ", ".join(unknown[:8]) + (" ..." if len(unknown) > 8 else ""))
    missing = sorted(set(expected) - set(sd))
    if missing:
        raise MetaCheckpointError(
            f"{path}: missing tensors: " + ", ".join(missing[:8]) +
            (" ..." if len(missing) > 8 else "") +
            f" (params.json says {p['n_layers']} layers)")

    os.makedirs(out_dir, exist_ok=True)
    writer = _etllm.SafetensorsWriter()
    writer.set_metadata("format", "pt")
    writer.set_metadata("source", "Meta checkpoint " + os.path.basename(path))
    order = []
    for name, (shape, heads) in expected.items():
        t = sd[name]
        if list(t.shape) != shape:
            raise MetaCheckpointError(
                f"{path}: {name} has shape {list(t.shape)}, expected {shape} "
                "from params.json")
        if t.dtype not in _ST_DTYPES:
            raise MetaCheckpointError(f"{path}: {name} has dtype {t.dtype}")
        hf = _GLOBAL_NAMES.get(name)
        if hf is None:
            i, rest = name[len("layers."):].split(".", 1)
            hf = f"model.layers.{i}.{_LAYER_NAMES[rest]}"
        writer.add_tensor(hf, _ST_DTYPES[t.dtype], shape)
        order.append((name, heads))
    writer.open(os.path.join(out_dir, "model.safetensors"))
    for name, heads in order:
        t = sd[name].contiguous()
        raw = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 \
            else t.numpy()
        if heads:
            raw = _etllm.permute_qk_rows_to_rotate_half(
                raw, _ST_DTYPES[t.dtype], list(t.shape), heads)
        writer.write(raw)
    writer.finish()
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        f.write(config_json)
    return out_dir
