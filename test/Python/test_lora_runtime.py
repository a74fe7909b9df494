"""LoRA adapters applied at run time (docs/LoRA.md): a base program exported
with `lora_runtime.targets` plus an adapter file (etllm-export-lora) gives
the logits and the greedy text of the program with the adapter merged at
export; adapters add up, rescale and come off again (the base output, bit
for bit); over int4 / 8da4w bases the result matches the merged program
within the quantization of the merged weights; every malformed adapter is
one clear error and the loaded program keeps working."""

import hashlib
import subprocess

import numpy as np
import pytest

import etllm
import lora_util

FAMILIES = ["llama", "qwen3", "phi3"]
KINDS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
         "down_proj", "qkv_proj", "gate_up_proj"]
TOKENS = [1, 7, 42, 3, 99, 12]


def kinds_of(base):
    """The adaptable module kinds of an HF checkpoint."""
    names = lora_util.read_safetensors(base / "model.safetensors")
    return sorted({n.split(".")[-2] for n in names
                   if n.endswith(".weight") and n.split(".")[-2] in KINDS})


@pytest.fixture(scope="module")
def models(tmp_path_factory, tool, shared):
    """{name: (base dir, adapter a, adapter b, export extra args)}."""
    root = tmp_path_factory.mktemp("lora-rt")
    out = {}
    for i, family in enumerate(FAMILIES):
        base = root / f"{family}-base"
        subprocess.run([tool("etllm-gen-checkpoint"), "--arch", family,
                        "--format", "hf", "--dtype", "f32", "--layers", "2",
                        "--seed", str(21 + i), "-o", str(base)], check=True,
                       stdout=subprocess.DEVNULL)
        out[family] = base
    out["stories260K"] = shared / "models" / "stories260K-hf"
    result = {}
    for name, base in out.items():
        kinds = set(kinds_of(base))
        a = lora_util.make_adapter(base, root / f"{name}-a", rank=4, alpha=8,
                                   targets=kinds, seed=3)
        b = lora_util.make_adapter(base, root / f"{name}-b", rank=2, alpha=2,
                                   targets=kinds & {"q_proj", "v_proj",
                                                    "qkv_proj", "down_proj"},
                                   seed=4)
        extra = []
        if name == "stories260K":
            extra = ["--tokenizer",
                     str(shared / "models" / "stories260K" / "tok512.bin")]
        result[name] = (base, a, b, sorted(kinds), extra)
    return result


def export(tool, model, out, recipe, lora=(), targets=(), extra=(),
           max_rank=None):
    cmd = [tool("etllm-export"), "--model", str(model), "--pipeline", recipe,
           "--set", "model.last_logits_only=false", "--quiet", "-o",
           str(out)]
    for spec in lora:
        cmd += ["--lora", spec]
    if targets:
        cmd += ["--set", "lora_runtime.targets=[" + ",".join(targets) + "]"]
    if max_rank is not None:
        cmd += ["--set", f"lora_runtime.max_rank={max_rank}"]
    subprocess.run(cmd + list(extra), check=True)
    return out


def export_lora(tool, base_pte, adapter, out, dtype=None):
    cmd = [tool("etllm-export-lora"), "--base", str(base_pte), "--adapter",
           str(adapter), "-o", str(out)]
    if dtype:
        cmd += ["--dtype", dtype]
    subprocess.run(cmd, check=True)
    return out


def logits(program):
    return np.array(program.forward(TOKENS, start_pos=0))


def greedy(program, n=8):
    """Greedy continuation of TOKENS, one forward call per token."""
    program.reset()
    seq = list(TOKENS)
    out = program.forward(seq, start_pos=0)
    for _ in range(n):
        seq.append(int(np.argmax(np.array(out)[0, -1])))
        out = program.forward([seq[-1]], start_pos=len(seq) - 1)
    program.reset()
    return seq[len(TOKENS):]


@pytest.mark.parametrize("name", FAMILIES + ["stories260K"])
@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_runtime_adapter_equals_the_merged_program(models, tool, tmp_path,
                                                   name, recipe):
    base, a, _, kinds, extra = models[name]
    hooked = export(tool, base, tmp_path / "hooked.pte", recipe,
                    targets=kinds, extra=extra)
    plain = export(tool, base, tmp_path / "plain.pte", recipe, extra=extra)
    merged = export(tool, base, tmp_path / "merged.pte", recipe,
                    lora=[f"{a}:0.75"], extra=extra)
    etla = export_lora(tool, hooked, a, tmp_path / "a.etla")

    p = etllm.Program(hooked)
    assert {h[0].rsplit(".", 1)[1] for h in p.lora_hooks} == set(kinds)
    # The content hash is the SHA-256 of the file before the hash segment,
    # the last one (32 bytes, padded to 64).
    data = hooked.read_bytes()
    assert hashlib.sha256(data[:-64]).hexdigest() == p.content_hash
    assert data[-64:-32].hex() == p.content_hash
    base_logits = logits(p)
    # Hooks with no adapter applied: the plain program, bit for bit.
    assert np.array_equal(base_logits, logits(etllm.Program(plain)))
    adapter = p.load_lora(etla)
    assert adapter.rank == 4 and adapter.scaling == 2.0
    p.apply_lora(adapter, 0.75)
    p.reset()
    with_adapter = logits(p)
    m = etllm.Program(merged)
    want = logits(m)
    np.testing.assert_allclose(with_adapter, want, rtol=0, atol=1e-4)
    # The adapter changes the model measurably.
    assert np.abs(with_adapter - base_logits).max() > 1e-3
    assert greedy(p) == greedy(m)
    # Removed: the base output, bit for bit.
    p.remove_lora(adapter)
    p.reset()
    assert np.array_equal(logits(p), base_logits)


def test_two_adapters_rescaled_equal_their_merge(models, tool, tmp_path):
    base, a, b, kinds, _ = models["llama"]
    hooked = export(tool, base, tmp_path / "hooked.pte", "cpu-fp32",
                    targets=kinds)
    both = export(tool, base, tmp_path / "both.pte", "cpu-fp32",
                  lora=[f"{a}:0.5", f"{b}:-1.5"])
    p = etllm.Program(hooked, threads=2)
    base_logits = logits(p)
    ea = p.load_lora(export_lora(tool, hooked, a, tmp_path / "a.etla"))
    eb = p.load_lora(export_lora(tool, hooked, b, tmp_path / "b.etla"))
    p.apply_lora(ea, 2.0)
    p.apply_lora(eb, -1.5)
    p.set_lora_scale(ea, 0.5)   # rescaled without reloading anything
    p.reset()
    np.testing.assert_allclose(logits(p), logits(etllm.Program(both)),
                               rtol=0, atol=1e-4)
    p.remove_lora(eb)
    p.remove_lora(ea)
    p.reset()
    assert np.array_equal(logits(p), base_logits)


@pytest.mark.parametrize("recipe", ["cpu-int4", "cpu-8da4w"])
@pytest.mark.parametrize("name", FAMILIES)
def test_a_quantized_base_takes_a_runtime_adapter(models, tool, tmp_path,
                                                  recipe, name):
    """The base weights stay quantized and the adapter runs in f32, so the
    result is not the merged-then-quantized program's: both approximate the
    float merged model. Gate (max abs logit distance to the float merged
    program): the runtime adapter's is below half the quantized base's and
    at most 1.25 times the merged-then-quantized program's (measured: 0.86
    to 1.02 times, 2 layers, rank 4 on every projection)."""
    base, a, _, kinds, _ = models[name]
    hooked = export(tool, base, tmp_path / "hooked.pte", recipe,
                    targets=kinds)
    merged_q = export(tool, base, tmp_path / "mq.pte", recipe,
                      lora=[str(a)])
    merged_f = export(tool, base, tmp_path / "mf.pte", "portable",
                      lora=[str(a)])
    p = etllm.Program(hooked)
    base_q = logits(p)
    p.apply_lora(p.load_lora(export_lora(tool, hooked, a, tmp_path / "a.etla")))
    p.reset()
    rt = logits(p)
    ref = logits(etllm.Program(merged_f))
    mq = logits(etllm.Program(merged_q))
    err_rt = np.abs(rt - ref).max()
    err_base = np.abs(base_q - ref).max()
    err_mq = np.abs(mq - ref).max()
    assert err_rt < 0.5 * err_base, (err_rt, err_base)
    assert err_rt <= 1.25 * err_mq, (err_rt, err_mq)


def test_the_cli_applies_adapters(models, tool, tmp_path):
    """etllm-run --lora: the greedy text of the merged program."""
    base, a, b, kinds, extra = models["stories260K"]
    hooked = export(tool, base, tmp_path / "hooked.pte", "cpu-fp32",
                    targets=kinds, extra=extra)
    merged = export(tool, base, tmp_path / "merged.pte", "cpu-fp32",
                    lora=[f"{a}:1.5", f"{b}:0.5"], extra=extra)
    plain = export(tool, base, tmp_path / "plain.pte", "cpu-fp32",
                   extra=extra)
    ea = export_lora(tool, hooked, a, tmp_path / "a.etla")
    eb = export_lora(tool, hooked, b, tmp_path / "b.etla")

    def run(program, *args):
        return subprocess.run(
            [tool("etllm-run"), str(program), "--prompt", "Once upon a time",
             "-n", "32", "--temperature", "0", *args], check=True,
            capture_output=True, text=True).stdout

    got = run(hooked, "--lora", f"{ea}:1.5", "--lora", f"{eb}:0.5")
    assert got == run(merged)
    assert got != run(hooked)
    assert run(hooked) == run(plain)


# Per dtype: the largest file size against the f32 file's, and the largest
# logit distance to the f32 file's as a fraction of the adapter's effect.
# Half keeps 11 significant bits (measured: 0.03% of the effect on these
# models); int8 with one scale per rank index rounds each factor value by up
# to half a step of max|column| / 127 (measured 0.65% on Phi-3, 0.81% on
# Llama; 2% leaves margin and still fails a wrong scale or layout, which
# moves the update by its own size).
# (The sizes include each target's name and, for int8, its scales: on these
# tiny models an int8 file is 0.30 of the f32 one, a quarter at real sizes.)
COMPACT = {"f16": (0.55, 0.01), "int8": (0.33, 0.02)}


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
@pytest.mark.parametrize("dtype", sorted(COMPACT))
@pytest.mark.parametrize("name", ["llama", "phi3"])
def test_a_compact_adapter_file(models, tool, tmp_path, name, dtype, recipe):
    """--dtype f16 / int8: about half / a quarter of the file, read in place
    by the portable kernel and the cpu delegate's; the logits of the f32
    file within the rounding of the factors, the same greedy tokens."""
    base, a, _, kinds, extra = models[name]
    hooked = export(tool, base, tmp_path / "hooked.pte", recipe,
                    targets=kinds, extra=extra)
    e32 = export_lora(tool, hooked, a, tmp_path / "a32.etla")
    ec = export_lora(tool, hooked, a, tmp_path / "ac.etla", dtype=dtype)
    max_size, max_diff = COMPACT[dtype]
    assert ec.stat().st_size < max_size * e32.stat().st_size
    p = etllm.Program(hooked)
    base_logits = logits(p)
    out = {}
    for key, path in (("f32", e32), ("compact", ec)):
        adapter = p.load_lora(path)
        p.apply_lora(adapter, 1.0)
        p.reset()
        out[key] = logits(p)
        g = greedy(p)
        out[key + "-greedy"] = g
        p.remove_lora(adapter)
        p.reset()
    effect = np.abs(out["f32"] - base_logits).max()
    diff = np.abs(out["compact"] - out["f32"]).max()
    assert effect > 1e-3
    assert diff < max_diff * effect, (diff, effect)
    assert out["compact-greedy"] == out["f32-greedy"]
    _fails(tool, [tool("etllm-export-lora"), "--base", str(hooked),
                  "--adapter", str(a), "-o", str(tmp_path / "x.etla"),
                  "--dtype", "bf16"], "--dtype 'bf16'", "f32, f16 or int8")
    assert not (tmp_path / "x.etla").exists()


def _fails(tool, args, *needles):
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode != 0 and r.returncode < 128, r
    assert r.stderr.count("error") == 1, r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr
    return r.stderr


def test_malformed_adapters(models, tool, tmp_path):
    base, a, _, kinds, extra = models["stories260K"]
    oa = models["llama"][1]  # an adapter for another model (other shapes)
    hooked = export(tool, base, tmp_path / "hooked.pte", "portable",
                    targets=kinds, max_rank=4, extra=extra)
    some = export(tool, base, tmp_path / "some.pte", "portable",
                  targets=["q_proj"], max_rank=4, extra=extra)
    small = export(tool, base, tmp_path / "small.pte", "portable",
                   targets=kinds, max_rank=2, extra=extra)
    plain = export(tool, base, tmp_path / "plain.pte", "portable",
                   extra=extra)
    etla = export_lora(tool, hooked, a, tmp_path / "a.etla")
    run = [tool("etllm-run"), "--prompt", "x", "-n", "2"]
    exp = [tool("etllm-export-lora"), "--adapter"]

    # etllm-export-lora: unknown target, shape mismatch (an adapter for
    # another model), rank above the maximum, NaN, no hooks, no output left.
    out = tmp_path / "x.etla"
    _fails(tool, exp + [str(a), "--base", str(some), "-o", str(out)],
           "stories260K-a", "mlp.down_proj.lora_A.weight", "has no LoRA hook")
    _fails(tool, exp + [str(oa), "--base", str(hooked), "-o", str(out)],
           "llama-a", "lora_A.weight", "the hook")
    _fails(tool, exp + [str(a), "--base", str(small), "-o", str(out)],
           "rank 4", "maximum", "lora_runtime.max_rank")
    _fails(tool, exp + [str(a), "--base", str(plain), "-o", str(out)],
           "plain.pte", "no LoRA hooks")
    q = "base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"
    t = lora_util.read_safetensors(a / "adapter_model.safetensors")
    t[q] = t[q].copy()
    t[q][2, 1] = np.inf
    nan_dir = tmp_path / "inf"
    nan_dir.mkdir()
    (nan_dir / "adapter_config.json").write_bytes(
        (a / "adapter_config.json").read_bytes())
    lora_util.write_safetensors(nan_dir / "adapter_model.safetensors", t)
    _fails(tool, exp + [str(nan_dir), "--base", str(hooked), "-o", str(out)],
           q, "NaN or infinity")
    assert not out.exists() and not list(tmp_path.glob("*.tmp*"))

    # etllm-run --lora: a wrong base (the adapter of another program, or of
    # the same model exported otherwise), a truncated file, a bad scale, a
    # program without hooks.
    _fails(tool, run + [str(some), "--lora", str(etla)], "a.etla",
           "made for another program")
    _fails(tool, run + [str(small), "--lora", str(etla)], "a.etla",
           "made for another program")
    cut = tmp_path / "cut.etla"
    cut.write_bytes(etla.read_bytes()[:len(etla.read_bytes()) // 2])
    _fails(tool, run + [str(hooked), "--lora", str(cut)], "cut.etla",
           "truncated")
    _fails(tool, run + [str(hooked), "--lora", f"{etla}:inf"], "--lora",
           "not a finite")
    _fails(tool, run + [str(plain), "--lora", str(etla)], "no LoRA hooks")

    # The Python API: each error leaves the program working.
    p = etllm.Program(hooked)
    before = logits(p)
    for bad in [cut, tmp_path / "missing.etla"]:
        with pytest.raises(etllm.Error, match=bad.name):
            p.load_lora(bad)
        p.reset()
        assert np.array_equal(logits(p), before)
    ad = p.load_lora(etla)
    with pytest.raises(etllm.Error, match="not a finite"):
        p.apply_lora(ad, float("nan"))
    p.reset()
    assert np.array_equal(logits(p), before)


def test_hooks_need_matching_linears(models, tool, tmp_path):
    base, _, _, _, _ = models["llama"]
    r = subprocess.run([tool("etllm-export"), "--model", str(base), "--quiet",
                        "--set", "lora_runtime.targets=[q_proj,qkv_proj]",
                        "-o", str(tmp_path / "x.pte")], capture_output=True,
                       text=True)
    assert r.returncode != 0 and "qkv_proj" in r.stderr, r.stderr
    assert not (tmp_path / "x.pte").exists()


def test_a_gguf_base_takes_the_adapter_at_run_time(models, tool, tmp_path):
    """Hooks are named by Hugging Face module paths and see the q/k rows in
    Hugging Face order (a GGUF base's are permuted back when serialized),
    so an HF adapter applied at run time to a program from the GGUF form of
    the checkpoint gives the HF program's merged logits."""
    base, a, _, kinds, _ = models["llama"]
    gguf = tmp_path / "base.gguf"
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "llama",
                    "--format", "gguf", "--gguf-type", "f32", "--dtype",
                    "f32", "--layers", "2", "--seed", "21", "-o", str(gguf)],
                   check=True, stdout=subprocess.DEVNULL)
    hooked = export(tool, gguf, tmp_path / "hooked.pte", "portable",
                    targets=kinds)
    merged = export(tool, base, tmp_path / "merged.pte", "portable",
                    lora=[str(a)])
    p = etllm.Program(hooked)
    plain = logits(p)
    p.apply_lora(p.load_lora(export_lora(tool, hooked, a, tmp_path / "a.etla")))
    p.reset()
    got = logits(p)
    np.testing.assert_allclose(got, logits(etllm.Program(merged)), rtol=0,
                               atol=1e-4)
    assert np.abs(got - plain).max() > 1e-3


def test_a_gguf_adapter_at_run_time(models, tool, tmp_path):
    """etllm-export-lora reads llama.cpp's LoRA GGUF with the reader --lora
    uses: the GGUF form of an adapter gives the PEFT form's logits, for
    Qwen3 (no q/k row permutation) and Llama (q/k lora_b rows permuted by
    the converter, put back with the head counts of the program's model
    config)."""
    for family in ["qwen3", "llama"]:
        base, _, _, kinds, _ = models[family]
        gen = [tool("etllm-gen-checkpoint"), "--lora-for", str(base),
               "--rank", "4", "--alpha", "8", "--seed", "5"]
        d = tmp_path / family
        d.mkdir()
        subprocess.run(gen + ["--format", "hf", "-o", str(d / "peft")],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(gen + ["--format", "gguf", "-o", str(d / "a.gguf")],
                       check=True, stdout=subprocess.DEVNULL)
        hooked = export(tool, base, d / "hooked.pte", "portable",
                        targets=kinds)
        p = etllm.Program(hooked)
        p.reset()
        plain = logits(p)
        out = []
        for src in ["peft", "a.gguf"]:
            ad = p.load_lora(export_lora(tool, hooked, d / src,
                                         d / f"{src}.etla"))
            p.apply_lora(ad, 0.5)
            p.reset()
            out.append(logits(p))
            p.remove_lora(ad)
        np.testing.assert_allclose(out[0], out[1], rtol=0, atol=1e-6)
        assert np.abs(out[0] - plain).max() > 1e-3
