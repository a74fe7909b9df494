"""LoRA adapters merged at export (`--lora PATH[:SCALE]`, the `lora` config
key): merging then quantizing equals quantizing the merged float checkpoint
(logits bit-identical, for every recipe), adapters change the output, two
adapters equal their merge, scale 0 is the base, and every malformed adapter
is one clear error that names the file and the tensor or key."""

import json
import subprocess

import numpy as np
import pytest

import etllm
import lora_util

FAMILIES = ["llama", "qwen3", "phi3"]
RECIPES = ["portable", "cpu-fp32", "cpu-int4", "cpu-8da4w"]
TARGETS = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
           "down_proj", "qkv_proj", "gate_up_proj"}
TOKENS = [1, 7, 42, 3, 99, 12]


@pytest.fixture(scope="module")
def models(tmp_path_factory, tool):
    """{family: (base dir, adapter dir, second adapter dir)}."""
    root = tmp_path_factory.mktemp("lora")
    out = {}
    for i, family in enumerate(FAMILIES):
        base = root / f"{family}-base"
        subprocess.run([tool("etllm-gen-checkpoint"), "--arch", family,
                        "--format", "hf", "--dtype", "f32", "--layers", "2",
                        "--seed", str(11 + i), "-o", str(base)], check=True,
                       stdout=subprocess.DEVNULL)
        a = lora_util.make_adapter(base, root / f"{family}-a", rank=4,
                                   alpha=8, targets=TARGETS, seed=1)
        b = lora_util.make_adapter(base, root / f"{family}-b", rank=2,
                                   alpha=2, targets={"q_proj", "v_proj",
                                                     "qkv_proj", "down_proj"},
                                   seed=2)
        out[family] = (base, a, b)
    return out


def export(tool, model, out, recipe, lora=(), extra=()):
    cmd = [tool("etllm-export"), "--model", str(model), "--pipeline", recipe,
           "--set", "model.last_logits_only=false", "--quiet", "-o",
           str(out)]
    for spec in lora:
        cmd += ["--lora", spec]
    subprocess.run(cmd + list(extra), check=True)
    return out


def logits(program):
    return np.array(etllm.Program(program).forward(TOKENS, start_pos=0))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("recipe", RECIPES)
def test_merge_equals_the_merged_checkpoint(models, tool, tmp_path, family,
                                            recipe):
    base, a, _ = models[family]
    merged = lora_util.merge(base, tmp_path / "merged", [(a, 0.75)])
    x = export(tool, base, tmp_path / "lora.pte", recipe, [f"{a}:0.75"])
    y = export(tool, merged, tmp_path / "merged.pte", recipe)
    z = export(tool, base, tmp_path / "base.pte", recipe)
    lx, ly, lz = logits(x), logits(y), logits(z)
    # The same weights bit for bit: the same logits bit for bit.
    assert np.array_equal(lx, ly), np.abs(lx - ly).max()
    # The adapter changes the model measurably.
    assert np.abs(lx - lz).max() > 1e-3


def test_two_adapters_equal_their_merge_and_scale_zero_is_the_base(
        models, tool, tmp_path):
    base, a, b = models["llama"]
    both = lora_util.merge(base, tmp_path / "both", [(a, 1.0), (b, -0.5)])
    x = export(tool, base, tmp_path / "ab.pte", "portable",
               [str(a), f"{b}:-0.5"])
    y = export(tool, both, tmp_path / "both.pte", "portable")
    assert np.array_equal(logits(x), logits(y))
    zero = export(tool, base, tmp_path / "zero.pte", "portable", [f"{a}:0"])
    plain = export(tool, base, tmp_path / "plain.pte", "portable")
    assert np.array_equal(logits(zero), logits(plain))


def test_the_config_key_equals_the_flag(models, tool, tmp_path):
    base, a, _ = models["qwen3"]
    flag = export(tool, base, tmp_path / "flag.pte", "cpu-8da4w",
                  [f"{a}:0.5"])
    cfg = etllm.export(base, tmp_path / "cfg.pte",
                       {"pipeline": {"name": "cpu-8da4w"},
                        "model": {"last_logits_only": False},
                        "lora": [f"{a}:0.5"]})
    assert np.array_equal(logits(flag), logits(tmp_path / "cfg.pte"))


def test_the_adapter_is_an_input_of_the_program(models, tool, tmp_path):
    base, a, _ = models["llama"]
    x = export(tool, base, tmp_path / "x.pte", "portable", [f"{a}:0.5"])
    text = subprocess.run([tool("etllm-translate"), "--pte-to-text", str(x)],
                          check=True, capture_output=True, text=True).stdout
    # The adapter's files with their hashes, and the adapter with its scale
    # in the config the program was made with.
    assert "    adapter_config.json sha256:" in text
    assert "    adapter_model.safetensors sha256:" in text
    assert f"{a}:0.5" in etllm.Program(x).metadata["config_yaml"]


def _fails(tool, tmp_path, model, spec, *needles):
    out = tmp_path / "bad.pte"
    r = subprocess.run([tool("etllm-export"), "--model", str(model), "--quiet",
                        "--lora", spec, "-o", str(out)], capture_output=True,
                       text=True)
    assert r.returncode != 0 and r.returncode < 128, r
    assert not out.exists() and not list(tmp_path.glob("*.tmp*"))
    assert r.stderr.count("error") == 1, r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr
    return r.stderr


def _edit(src, dst, config=None, tensors=None):
    """A copy of adapter `src` with config keys replaced and tensors
    changed by `tensors(dict)`."""
    dst.mkdir()
    cfg = json.loads((src / "adapter_config.json").read_text())
    cfg.update(config or {})
    (dst / "adapter_config.json").write_text(json.dumps(cfg))
    t = lora_util.read_safetensors(src / "adapter_model.safetensors")
    if tensors:
        tensors(t)
    lora_util.write_safetensors(dst / "adapter_model.safetensors", t)
    return dst


def test_malformed_adapters(models, tool, tmp_path):
    base, a, _ = models["llama"]
    q = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
    _fails(tool, tmp_path, base, f"{a}:nan", "--lora", "not a finite")
    _fails(tool, tmp_path, base, str(tmp_path / "none"), "adapter_config.json")
    # A wrong base: the qwen3 adapter on the llama checkpoint.
    _fails(tool, tmp_path, base, str(models["qwen3"][1]), "qwen3-a",
           "k_proj", "shape")

    def nan(t):
        t[q] = t[q].copy()
        t[q][0, 0] = np.nan
    _fails(tool, tmp_path, base, str(_edit(a, tmp_path / "nan", tensors=nan)),
           q, "NaN")

    def unknown(t):
        t["base_model.model.model.layers.0.self_attn.zz_proj.lora_A.weight"] \
            = t[q]
    _fails(tool, tmp_path, base,
           str(_edit(a, tmp_path / "unknown", tensors=unknown)), "zz_proj")

    def unpaired(t):
        del t[q]
    _fails(tool, tmp_path, base,
           str(_edit(a, tmp_path / "unpaired", tensors=unpaired)),
           "q_proj", "no lora_A")
    _fails(tool, tmp_path, base,
           str(_edit(a, tmp_path / "rank", config={"r": 5000})), "'r'",
           "outside")
    _fails(tool, tmp_path, base,
           str(_edit(a, tmp_path / "rank2", config={"r": 3})), "rank 4")
    _fails(tool, tmp_path, base,
           str(_edit(a, tmp_path / "dora", config={"use_dora": True})),
           "use_dora", "DoRA")
    _fails(tool, tmp_path, base,
           str(_edit(a, tmp_path / "pattern",
                     config={"rank_pattern": {"q_proj": 8}})),
           "rank_pattern")
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "adapter_config.json").write_text("[" * 100000)
    lora_util.write_safetensors(tmp_path / "deep" /
                                "adapter_model.safetensors", {})
    _fails(tool, tmp_path, base, str(tmp_path / "deep"), "nested deeper")


def test_a_gguf_base_takes_the_same_adapter(models, tool, tmp_path):
    """The adapter is in Hugging Face row order; a GGUF base's q/k rows are
    interleaved and permuted back before the merge, so the same weights
    through GGUF give the HF result."""
    base, a, _ = models["llama"]
    gguf = tmp_path / "base.gguf"
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "llama",
                    "--format", "gguf", "--gguf-type", "f32", "--dtype",
                    "f32", "--layers", "2", "--seed", "11", "-o", str(gguf)],
                   check=True, stdout=subprocess.DEVNULL)
    hf = logits(export(tool, base, tmp_path / "hf.pte", "portable", [str(a)]))
    gg = logits(export(tool, gguf, tmp_path / "gguf.pte", "portable",
                       [str(a)]))
    plain = logits(export(tool, gguf, tmp_path / "plain.pte", "portable"))
    np.testing.assert_allclose(gg, hf, rtol=1e-5, atol=1e-5)
    assert np.abs(gg - plain).max() > 1e-3


@pytest.mark.parametrize("recipe", ["portable", "cpu-int4"])
def test_an_adapter_on_routed_experts(tool, tmp_path, recipe):
    """An adapter on a Qwen3-MoE's experts merges into the stacked expert
    parameters of etllm.moe as into the per-expert linears of the masked
    form: both equal the merged checkpoint, bit for bit."""
    base = tmp_path / "moe"
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "qwen3moe",
                    "--format", "hf", "--dtype", "f32", "--layers", "2",
                    "--seed", "4", "-o", str(base)], check=True,
                   stdout=subprocess.DEVNULL)
    a = lora_util.make_adapter(base, tmp_path / "a", rank=2, alpha=4,
                               targets={"q_proj", "gate_proj", "up_proj",
                                        "down_proj"}, seed=3)
    assert any(".experts." in n for n in lora_util.read_safetensors(
        a / "adapter_model.safetensors"))
    merged = lora_util.merge(base, tmp_path / "merged", [(a, 0.5)])
    for moe in ["experts", "masked"]:
        opt = ["--set", f"model.moe={moe}"]
        want = logits(export(tool, merged, tmp_path / f"m-{moe}.pte", recipe,
                             extra=opt))
        got = logits(export(tool, base, tmp_path / f"{moe}.pte", recipe,
                            [f"{a}:0.5"], opt))
        assert np.array_equal(got, want), (moe, np.abs(got - want).max())
        plain = logits(export(tool, base, tmp_path / f"p-{moe}.pte", recipe,
                              extra=opt))
        assert np.abs(want - plain).max() > 1e-3
