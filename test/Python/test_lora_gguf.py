"""LoRA adapters in llama.cpp's GGUF form (general.type = adapter,
adapter.type = lora, blk.N.<weight>.lora_a / lora_b) merged at export: a
PEFT adapter and the same adapter in GGUF form give the same program (the
same segments and instructions; only the recorded input files differ), for
families whose converter permutes q/k rows (Llama), plain ones (Qwen3) and
fused projections (Phi-3); GGUF adapters apply to GGUF and HF bases alike;
etllm-gen-checkpoint writes both forms of one seed; every malformed GGUF
adapter is one clear error naming the file and the key or tensor."""

import os
import struct
import subprocess

import numpy as np
import pytest

import etllm

FAMILIES = ["llama", "qwen3", "phi3"]
TOKENS = [1, 7, 42, 3, 99, 12]


def gen(tool, *args):
    subprocess.run([tool("etllm-gen-checkpoint"), *map(str, args)],
                   check=True, stdout=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def models(tmp_path_factory, tool):
    """{family: (hf base, f32 gguf base, peft adapter, gguf adapter)}."""
    root = tmp_path_factory.mktemp("lora-gguf")
    out = {}
    for i, family in enumerate(FAMILIES):
        hf, gg = root / f"{family}-hf", root / f"{family}.gguf"
        common = ["--arch", family, "--dtype", "f32", "--layers", "2",
                  "--seed", 21 + i]
        gen(tool, *common, "--format", "hf", "-o", hf)
        gen(tool, *common, "--format", "gguf", "--gguf-type", "f32", "-o", gg)
        peft, ad = root / f"{family}-peft", root / f"{family}-lora.gguf"
        for fmt, dst in (("hf", peft), ("gguf", ad)):
            gen(tool, "--lora-for", hf, "--format", fmt, "--rank", 4,
                "--alpha", 6, "--seed", 5, "-o", dst)
        out[family] = (hf, gg, peft, ad)
    return out


def export(tool, model, out, recipe, lora=()):
    cmd = [tool("etllm-export"), "--model", str(model), "--pipeline", recipe,
           "--set", "model.last_logits_only=false", "--quiet", "-o", str(out)]
    for spec in lora:
        cmd += ["--lora", str(spec)]
    subprocess.run(cmd, check=True)
    return out


def logits(program):
    return np.array(etllm.Program(program).forward(TOKENS, start_pos=0))


def segments(program):
    """The program's segment data (weights, delegate blobs, tokenizer)."""
    data = program.read_bytes()
    assert data[:8] == b"ETLLMPTE"
    base, size = struct.unpack_from("<QQ", data, 32)
    return data[base:base + size]


def listing(tool, program):
    """The program listing without the recorded input files."""
    text = subprocess.run([tool("etllm-translate"), "--pte-to-text",
                           str(program)], check=True, capture_output=True,
                          text=True).stdout
    lines = text.splitlines()[1:]  # the first line states the file size
    return [l for l in lines if " sha256:" not in l]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("recipe", ["portable", "cpu-int4"])
def test_peft_and_gguf_forms_give_the_same_program(models, tool, tmp_path,
                                                   family, recipe):
    hf, _, peft, ad = models[family]
    x = export(tool, hf, tmp_path / "peft.pte", recipe, [f"{peft}:0.5"])
    y = export(tool, hf, tmp_path / "gguf.pte", recipe, [f"{ad}:0.5"])
    z = export(tool, hf, tmp_path / "base.pte", recipe)
    assert segments(x) == segments(y)
    assert listing(tool, x) == listing(tool, y)
    lx, ly = logits(x), logits(y)
    assert np.array_equal(lx, ly)
    assert np.abs(lx - logits(z)).max() > 1e-3


@pytest.mark.parametrize("family", FAMILIES)
def test_a_gguf_adapter_on_a_gguf_base(models, tool, tmp_path, family):
    """The GGUF base's q/k rows and the adapter's q/k lora_b rows are both
    interleaved (Llama) and both put back in HF order: the result is the HF
    base with the PEFT adapter."""
    hf, gg, peft, ad = models[family]
    a = logits(export(tool, gg, tmp_path / "gg.pte", "portable", [ad]))
    b = logits(export(tool, hf, tmp_path / "hf.pte", "portable", [peft]))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_the_generator_writes_what_llama_cpp_reads(models):
    """The GGUF adapter as llama.cpp's loader expects it: the keys, and
    lora_a ne [in, r], lora_b ne [r, out] (PyTorch [r, in] and [out, r])."""
    _, _, _, ad = models["llama"]
    meta, tensors = read_gguf(ad.read_bytes())
    assert meta["general.type"] == (8, "adapter")
    assert meta["adapter.type"] == (8, "lora")
    assert meta["general.architecture"] == (8, "llama")
    assert meta["adapter.lora.alpha"] == (6, 6.0)
    a = tensors["blk.0.attn_q.weight.lora_a"]
    b = tensors["blk.0.attn_q.weight.lora_b"]
    assert a["ne"][1] == 4 and b["ne"][0] == 4
    assert a["ne"][0] == tensors["blk.0.attn_k.weight.lora_a"]["ne"][0]
    assert "blk.1.ffn_down.weight.lora_b" in tensors


# A small GGUF reader/writer of the container (independent of etllm's), to
# make malformed adapters from a good one.
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
           10: "Q", 11: "q", 12: "d"}


def _read_value(buf, off, vtype):
    if vtype in _SCALAR:
        fmt = "<" + _SCALAR[vtype]
        return struct.unpack_from(fmt, buf, off)[0], off + struct.calcsize(fmt)
    if vtype == 8:
        (n,) = struct.unpack_from("<Q", buf, off)
        return buf[off + 8:off + 8 + n].decode(), off + 8 + n
    if vtype == 9:
        etype, n = struct.unpack_from("<IQ", buf, off)
        off += 12
        items = []
        for _ in range(n):
            v, off = _read_value(buf, off, etype)
            items.append(v)
        return (etype, items), off
    raise ValueError(vtype)


def _write_value(vtype, v):
    if vtype in _SCALAR:
        return struct.pack("<" + _SCALAR[vtype], v)
    if vtype == 8:
        b = v.encode()
        return struct.pack("<Q", len(b)) + b
    etype, items = v
    return struct.pack("<IQ", etype, len(items)) + b"".join(
        _write_value(etype, x) for x in items)


def read_gguf(buf):
    """({key: (type, value)}, {name: {ne, type, data}}) of a GGUF file with
    the default alignment of 32."""
    _, _, nt, nkv = struct.unpack_from("<4sIQQ", buf, 0)
    off, meta = 24, {}
    for _ in range(nkv):
        key, off = _read_value(buf, off, 8)
        (vtype,) = struct.unpack_from("<I", buf, off)
        meta[key], off = (vtype, None), off + 4
        v, off = _read_value(buf, off, vtype)
        meta[key] = (vtype, v)
    infos = []
    for _ in range(nt):
        name, off = _read_value(buf, off, 8)
        (nd,) = struct.unpack_from("<I", buf, off)
        ne = list(struct.unpack_from(f"<{nd}Q", buf, off + 4))
        off += 4 + 8 * nd
        gtype, toff = struct.unpack_from("<IQ", buf, off)
        off += 12
        infos.append((name, ne, gtype, toff))
    start = off + (-off % 32)
    tensors = {}
    for i, (name, ne, gtype, toff) in enumerate(infos):
        end = infos[i + 1][3] if i + 1 < len(infos) else len(buf) - start
        tensors[name] = {"ne": ne, "type": gtype,
                         "data": buf[start + toff:start + end]}
    return meta, tensors


def write_gguf(path, meta, tensors):
    out = struct.pack("<4sIQQ", b"GGUF", 3, len(tensors), len(meta))
    for key, (vtype, v) in meta.items():
        out += _write_value(8, key) + struct.pack("<I", vtype)
        out += _write_value(vtype, v)
    offset, blobs = 0, []
    for name, t in tensors.items():
        out += _write_value(8, name) + struct.pack("<I", len(t["ne"]))
        out += struct.pack(f"<{len(t['ne'])}Q", *t["ne"])
        out += struct.pack("<IQ", t["type"], offset)
        data = t["data"] + b"\0" * (-len(t["data"]) % 32)
        blobs.append(data)
        offset += len(data)
    out += b"\0" * (-len(out) % 32)
    path.write_bytes(out + b"".join(blobs))
    return path


def _fails(tool, tmp_path, cmd, *needles):
    out = tmp_path / "bad.pte"
    r = subprocess.run(cmd + ["--quiet", "-o", str(out)], capture_output=True,
                       text=True)
    assert r.returncode != 0 and r.returncode < 128, r
    assert not out.exists() and not list(tmp_path.glob("*.tmp*"))
    assert r.stderr.count("error") == 1, r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr


def test_malformed_gguf_adapters(models, tool, tmp_path):
    hf, gg, _, ad = models["llama"]
    meta, tensors = read_gguf(ad.read_bytes())
    export_cmd = [tool("etllm-export"), "--model", str(hf)]

    def bad(name, *needles, meta_edit=None, tensor_edit=None):
        m, t = dict(meta), dict(tensors)
        if meta_edit:
            meta_edit(m)
        if tensor_edit:
            tensor_edit(t)
        path = write_gguf(tmp_path / f"{name}.gguf", m, t)
        _fails(tool, tmp_path, export_cmd + ["--lora", str(path)], str(path),
               *needles)

    # The good adapter read back and rewritten by this writer still works.
    good = write_gguf(tmp_path / "good.gguf", meta, tensors)
    export(tool, hf, tmp_path / "good.pte", "portable", [good])

    bad("model", "general.type", "not a LoRA adapter",
        meta_edit=lambda m: m.update({"general.type": (8, "model")}))
    bad("ia3", "adapter.type", "'ia3'",
        meta_edit=lambda m: m.update({"adapter.type": (8, "ia3")}))
    bad("noalpha-type", "adapter.lora.alpha",
        meta_edit=lambda m: m.update({"adapter.lora.alpha": (8, "x")}))
    bad("negalpha", "adapter.lora.alpha", "negative",
        meta_edit=lambda m: m.update({"adapter.lora.alpha": (6, -1.0)}))
    bad("arch", "general.architecture", "'qwen3'",
        meta_edit=lambda m: m.update({"general.architecture": (8, "qwen3")}))
    bad("alora", "adapter.alora.invocation_tokens",
        meta_edit=lambda m: m.update(
            {"adapter.alora.invocation_tokens": (9, (4, [1, 2]))}))

    q_a, q_b = "blk.0.attn_q.weight.lora_a", "blk.0.attn_q.weight.lora_b"
    bad("unpaired", "blk.0.attn_q.weight", "no lora_b",
        tensor_edit=lambda t: t.pop(q_b))
    bad("norm", "blk.0.attn_norm.weight", "not a LoRA tensor",
        tensor_edit=lambda t: t.update({"blk.0.attn_norm.weight": t[q_a]}))
    bad("unknown", "blk.0.attn_zz.weight.lora_a",
        tensor_edit=lambda t: t.update({"blk.0.attn_zz.weight.lora_a":
                                        t[q_a]}))
    bad("embd", "token_embd.weight.lora_a", "embeddings",
        tensor_edit=lambda t: t.update({
            "token_embd.weight.lora_a": t[q_a],
            "token_embd.weight.lora_b": t[q_b]}))

    def rank(t):
        # lora_b with rank 2 against lora_a's 4: half the bytes.
        b = dict(t[q_b])
        b["ne"] = [2, b["ne"][1]]
        b["data"] = b["data"][:len(b["data"]) // 2]
        t[q_b] = b
    bad("rank", q_b, "rank 4", tensor_edit=rank)

    def nan(t):
        a = dict(t[q_a])
        v = np.frombuffer(a["data"], np.float32).copy()
        v[3] = np.nan
        a["data"] = v.tobytes()
        t[q_a] = a
    bad("nan", q_a, "NaN", tensor_edit=nan)

    def shape(t):
        # An adapter made for wider q rows: [r, in] of 2 * in.
        a = dict(t[q_a])
        a["ne"] = [2 * a["ne"][0], a["ne"][1]]
        a["data"] = a["data"] * 2
        t[q_a] = a
    bad("shape", "q_proj", "shape", tensor_edit=shape)

    # A model GGUF is not an adapter; an adapter is not a model.
    _fails(tool, tmp_path, export_cmd + ["--lora", str(gg)], str(gg),
           "general.type")
    _fails(tool, tmp_path, [tool("etllm-export"), "--model", str(ad)],
           str(ad), "LoRA adapter", "--lora")
    # Truncated: the container checks name the file.
    trunc = tmp_path / "trunc.gguf"
    trunc.write_bytes(ad.read_bytes()[:200])
    _fails(tool, tmp_path, export_cmd + ["--lora", str(trunc)], str(trunc))


@pytest.mark.skipif(not os.environ.get("ETLLM_LLAMA_CPP_BIN"),
                    reason="set ETLLM_LLAMA_CPP_BIN to a llama.cpp build's "
                           "bin/ (with llama-export-lora) to cross-check")
def test_llama_cpp_merges_the_gguf_adapter_as_etllm_does(models, tool,
                                                         tmp_path):
    """llama.cpp's own llama-export-lora merges the generated GGUF adapter
    into the GGUF base; etllm's merge of the same files gives the same
    logits (both in f32; the tolerance is f32 rounding of the sums)."""
    _, gg, _, ad = models["llama"]
    merged = tmp_path / "merged.gguf"
    subprocess.run([os.path.join(os.environ["ETLLM_LLAMA_CPP_BIN"],
                                 "llama-export-lora"), "-m", str(gg),
                    "--lora-scaled", f"{ad}:0.5", "-o", str(merged)],
                   check=True, capture_output=True)
    a = logits(export(tool, merged, tmp_path / "m.pte", "portable"))
    b = logits(export(tool, gg, tmp_path / "e.pte", "portable",
                      [f"{ad}:0.5"]))
    c = logits(export(tool, gg, tmp_path / "b.pte", "portable"))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert np.abs(b - c).max() > 1e-2
