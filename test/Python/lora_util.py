"""PEFT LoRA adapters for tests, independently of etllm: random adapters
shaped for a Hugging Face checkpoint, and the merged float checkpoint
W + scale * (alpha / r) * B @ A computed in float64 with NumPy (the
definition etllm's merge must equal bit for bit)."""

import json
import pathlib
import shutil

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


def read_safetensors(path):
    """{name: array} of a safetensors file (float dtypes only)."""
    data = pathlib.Path(path).read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        out[name] = np.frombuffer(raw, _DTYPES[info["dtype"]]).reshape(
            info["shape"]).copy()
    return out


def read_shapes(path):
    """{name: shape} of a safetensors file, from its header only (a 1B
    checkpoint is not read)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    return {k: tuple(v["shape"]) for k, v in header.items()
            if k != "__metadata__"}


def write_safetensors(path, tensors):
    header, offset = {}, 0
    names = list(tensors)
    for name in names:
        a = np.ascontiguousarray(tensors[name])
        kind = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
                np.dtype(np.float64): "F64"}[a.dtype]
        header[name] = {"dtype": kind, "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name in names:
            f.write(np.ascontiguousarray(tensors[name]).tobytes())


def make_adapter(base_dir, out_dir, rank, alpha, targets, seed, std=0.05,
                 config_extra=None, layers=None):
    """A random PEFT adapter for the HF checkpoint in base_dir: lora_A and
    lora_B (both random, unlike PEFT's zero-initialized B, so the adapter
    changes the model) for every linear whose module name is in targets."""
    base = read_shapes(pathlib.Path(base_dir) / "model.safetensors")
    rng = np.random.default_rng(seed)
    tensors = {}
    for name in sorted(base):
        parts = name.split(".")
        if not name.endswith(".weight") or parts[-2] not in targets:
            continue
        if layers is not None and int(parts[2]) not in layers:
            continue
        out_f, in_f = base[name]
        module = name[:-len(".weight")]
        tensors[f"base_model.model.{module}.lora_A.weight"] = (
            rng.standard_normal((rank, in_f)) * std).astype(np.float32)
        tensors[f"base_model.model.{module}.lora_B.weight"] = (
            rng.standard_normal((out_f, rank)) * std).astype(np.float32)
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_safetensors(out / "adapter_model.safetensors", tensors)
    config = {"peft_type": "LORA", "r": rank, "lora_alpha": alpha,
              "target_modules": sorted(targets), "lora_dropout": 0.0,
              "bias": "none", "use_rslora": False, "use_dora": False,
              "fan_in_fan_out": False, "task_type": "CAUSAL_LM",
              "rank_pattern": {}, "alpha_pattern": {},
              "modules_to_save": None}
    config.update(config_extra or {})
    (out / "adapter_config.json").write_text(json.dumps(config, indent=2))
    return out


def merge(base_dir, out_dir, adapters):
    """Writes an HF directory with the adapters [(dir, scale)] merged into
    base_dir's weights: float32(float64(W) + sum of scale * scaling * B @ A),
    each adapter added in order and rounded once per adapter, as etllm
    merges."""
    base_dir, out = pathlib.Path(base_dir), pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for f in base_dir.iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, out / f.name)
    weights = read_safetensors(base_dir / "model.safetensors")
    for adapter_dir, scale in adapters:
        adapter_dir = pathlib.Path(adapter_dir)
        cfg = json.loads((adapter_dir / "adapter_config.json").read_text())
        r, alpha = cfg["r"], cfg["lora_alpha"]
        scaling = alpha / np.sqrt(r) if cfg.get("use_rslora") else alpha / r
        lora = read_safetensors(adapter_dir / "adapter_model.safetensors")
        for name, a in lora.items():
            if not name.endswith(".lora_A.weight"):
                continue
            module = name[len("base_model.model."):-len(".lora_A.weight")]
            b = lora[f"base_model.model.{module}.lora_B.weight"]
            w = weights[module + ".weight"]
            delta = b.astype(np.float64) @ a.astype(np.float64)
            weights[module + ".weight"] = (
                w.astype(np.float64) + (scale * scaling) * delta).astype(
                    w.dtype)
    write_safetensors(out / "model.safetensors", weights)
    return out
