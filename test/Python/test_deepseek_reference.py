"""The portable program of a tiny DeepSeek checkpoint against an
independent float64 NumPy reference written from the modeling code
(deepseek_reference.py): every logit of a prefill and of the decode steps
after it within 1e-4 of the largest reference logit (relative).

The cpu-fp32 program of the split GGUF is held to the same tolerance,
and so are the latent-cache programs (model.mla_cache: latent, the absorbed
attention) of the HF and split GGUF files through portable and
cpu-fp32.

Covered: DeepSeek-V2-Lite-like (q_proj), DeepSeek-V2-like (q LoRA) and
DeepSeek-V3-like models (V2's layer 1 a DeepseekMoE: greedy top-2 of 4
experts and a shared expert; V3's layer 1 a DeepseekV3MoE: sigmoid scores
with e_score_correction_bias, noaux_tc over 8 experts in 4 groups, the best
2 groups, top-2, renormalized, times 2.5, and a shared expert), with YaRN
(V2-Lite's mscale 0.707, V3's 1.0) and
v_head_dim != qk_nope_head_dim, from the HF directory and from the GGUF
files of the same weights (llama.cpp's split attn_k_b/attn_v_b form and the
older joint attn_kv_b).
"""

import subprocess

import numpy as np
import pytest

import deepseek_reference as ref
import etllm

CASES = {
    "v2-lite": ["--arch", "deepseekv2"],
    "v2-qlora": ["--arch", "deepseekv2", "--q-lora-rank", "24"],
    "v3": ["--arch", "deepseekv3"],
}
TOKENS = [1, 57, 300, 11, 7, 402, 99, 258, 3, 480]
PREFILL = 6
RTOL = 1e-4


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, tool):
    out = {}
    base = tmp_path_factory.mktemp("deepseek")
    for name, args in CASES.items():
        hf = base / name
        subprocess.run([tool("etllm-gen-checkpoint"), *args, "--format", "hf",
                        "--layers", "2", "--seed", "7", "-o", str(hf)],
                       check=True, capture_output=True)
        files = {"hf": hf}
        for form in ("split", "joint"):
            g = base / f"{name}-{form}.gguf"
            subprocess.run([tool("etllm-gen-checkpoint"), *args, "--format",
                            "gguf", "--gguf-kv-b", form, "--layers", "2",
                            "--seed", "7", "-o", str(g)],
                           check=True, capture_output=True)
            files[form] = g
        out[name] = files
    return out


def program_logits(model, tmp_path, recipe="portable", mla_cache="expanded"):
    pte = tmp_path / "model.pte"
    etllm.export(model, pte, {"pipeline": {"name": recipe},
                              "model": {"last_logits_only": False,
                                        "max_seq_len": 64,
                                        "mla_cache": mla_cache}})
    prog = etllm.Program(pte)
    first = np.array(prog.forward(TOKENS[:PREFILL], 0))[0]
    rows = [first]
    for i in range(PREFILL, len(TOKENS)):
        rows.append(np.array(prog.forward([TOKENS[i]], i))[0])
    return np.concatenate(rows, axis=0).astype(np.float64)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("source", ["hf", "split", "joint"])
def test_portable_logits_match_the_float64_reference(checkpoints, case,
                                                     source, tmp_path):
    cfg, weights = ref.load_hf(checkpoints[case]["hf"])
    want = ref.forward(cfg, weights, TOKENS)
    got = program_logits(checkpoints[case][source], tmp_path)
    assert got.shape == want.shape
    scale = np.abs(want).max()
    err = np.abs(got - want).max() / scale
    assert err <= RTOL, f"max relative error {err:.3g} (scale {scale:.3g})"
    # The greedy tokens agree too.
    assert (got.argmax(-1) == want.argmax(-1)).all()


@pytest.mark.parametrize("case", sorted(CASES))
def test_cpu_fp32_logits_match_the_float64_reference(checkpoints, case,
                                                          tmp_path):
    # The cpu-fp32 recipe (its fused sdpa over the expanded latent
    # keys and values, the CPU backend's linears) holds the same tolerance.
    cfg, weights = ref.load_hf(checkpoints[case]["hf"])
    want = ref.forward(cfg, weights, TOKENS)
    got = program_logits(checkpoints[case]["split"], tmp_path, "cpu-fp32")
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= RTOL, f"max relative error {err:.3g}"
    assert (got.argmax(-1) == want.argmax(-1)).all()


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
@pytest.mark.parametrize("source", ["hf", "split"])
def test_latent_cache_logits_match_the_float64_reference(checkpoints, case,
                                                         recipe, source,
                                                         tmp_path, tool):
    # Level B: the latent cache and the absorbed attention
    # (model.mla_cache: latent) compute the same function.
    cfg, weights = ref.load_hf(checkpoints[case]["hf"])
    want = ref.forward(cfg, weights, TOKENS)
    got = program_logits(checkpoints[case][source], tmp_path, recipe,
                         "latent")
    text = subprocess.run([tool("etllm-translate"), "--pte-to-text",
                           str(tmp_path / "model.pte")], check=True,
                          capture_output=True, text=True).stdout
    assert "self_attn.latent_cache" in text and "k_cache" not in text
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= RTOL, f"max relative error {err:.3g}"
    assert (got.argmax(-1) == want.argmax(-1)).all()


def routed_variant(checkpoints, tmp_path, case="v2-lite", **keys):
    """The case's HF checkpoint with other routing keys in config.json."""
    import json
    import shutil
    d = tmp_path / "variant"
    shutil.copytree(checkpoints[case]["hf"], d)
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(keys)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


MOE_VARIANTS = {
    "group-limited": dict(topk_method="group_limited_greedy", n_group=2,
                          topk_group=1, routed_scaling_factor=2.5),
    "renormalized": dict(norm_topk_prob=True),
    "top3-scaled": dict(num_experts_per_tok=3, routed_scaling_factor=16.0),
}


V3_VARIANTS = {
    "one-group": dict(n_group=1, topk_group=1),
    "unnormalized": dict(norm_topk_prob=False, routed_scaling_factor=1.0),
    "top3-two-groups": dict(num_experts_per_tok=3, n_group=2, topk_group=1),
}
# DeepSeek-V2's routing keys (group_limited_greedy, norm_topk_prob,
# routed_scaling_factor) on the v2-lite checkpoint, and V3's (n_group /
# topk_group, one group being the biased top-k over all experts,
# norm_topk_prob, the factor, top_k) on the v3 one.
ROUTING = [("v2-lite", v, k) for v, k in sorted(MOE_VARIANTS.items())] + \
          [("v3", v, k) for v, k in sorted(V3_VARIANTS.items())]


@pytest.mark.parametrize("case,variant,keys", ROUTING,
                         ids=[f"{c}-{v}" for c, v, _ in ROUTING])
@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_moe_routing_matches_the_float64_reference(checkpoints, case, variant,
                                                   keys, recipe, tmp_path):
    # Through etllm.moe (with V3's score bias) on portable and cpu.
    d = routed_variant(checkpoints, tmp_path, case, **keys)
    cfg, weights = ref.load_hf(d)
    want = ref.forward(cfg, weights, TOKENS)
    got = program_logits(d, tmp_path, recipe)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= RTOL, f"max relative error {err:.3g}"
    assert (got.argmax(-1) == want.argmax(-1)).all()


def test_the_v3_routing_is_not_trivially_satisfied(checkpoints):
    # The score-correction bias, the group limit and each variant's keys
    # change the logits well beyond the tolerance.
    cfg, weights = ref.load_hf(checkpoints["v3"]["hf"])
    want = ref.forward(cfg, weights, TOKENS)
    unbiased = dict(weights)
    for name in weights:
        if name.endswith("e_score_correction_bias"):
            unbiased[name] = np.zeros_like(weights[name])
    others = [ref.forward(cfg, unbiased, TOKENS)]
    others += [ref.forward(dict(cfg, **keys), weights, TOKENS)
               for keys in V3_VARIANTS.values()]
    for other in others:
        assert np.abs(other - want).max() / np.abs(want).max() > 10 * RTOL


def test_the_reference_is_not_trivially_satisfied(checkpoints):
    # The YaRN and latent-norm details change the numbers well beyond the
    # tolerance: dropping the mscale from the softmax scale is caught.
    cfg, weights = ref.load_hf(checkpoints["v2-lite"]["hf"])
    want = ref.forward(cfg, weights, TOKENS)
    cfg2 = dict(cfg, rope_scaling=dict(cfg["rope_scaling"], mscale_all_dim=0,
                                       mscale=0))
    other = ref.forward(cfg2, weights, TOKENS)
    assert np.abs(other - want).max() / np.abs(want).max() > 10 * RTOL
    # So does a kv_b_proj read with its key and value halves swapped.
    H, nope, v = (cfg["num_attention_heads"], cfg["qk_nope_head_dim"],
                  cfg["v_head_dim"])
    swapped = dict(weights)
    for i in range(cfg["num_hidden_layers"]):
        name = f"model.layers.{i}.self_attn.kv_b_proj.weight"
        w = weights[name].reshape(H, nope + v, -1)
        swapped[name] = np.concatenate([w[:, v:], w[:, :v]], axis=1).reshape(
            H * (nope + v), -1)
    other = ref.forward(cfg, swapped, TOKENS)
    assert np.abs(other - want).max() / np.abs(want).max() > 10 * RTOL
    # The routing matters: DeepSeek-V2's group limit and its scale each
    # change the logits beyond the tolerance.
    for keys in MOE_VARIANTS.values():
        other = ref.forward(dict(cfg, **keys), weights, TOKENS)
        assert np.abs(other - want).max() / np.abs(want).max() > 10 * RTOL
