"""A float64 NumPy reference of DeepSeek-V2/V3, written from the modeling
code: DeepSeek's modeling_deepseek.py (DeepSeek-V2 and V2-Lite: dense
layers and DeepseekMoE with MoEGate's softmax, greedy or
group_limited_greedy routing) and transformers' modeling_deepseek_v3.py
(rope_interleave; DeepseekV3MoE with DeepseekV3TopkRouter's sigmoid
scores, e_score_correction_bias and noaux_tc group selection).

Independent of etllm: it reads config.json and model.safetensors itself
and computes the logits of a whole token sequence (causal attention over
all of it, which is what a cache gives step by step).

    cfg, weights = load_hf(directory)
    logits = forward(cfg, weights, tokens)   # [len(tokens), vocab]
"""

import json
import math
import pathlib
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


def load_safetensors(path):
    """name -> float64 array (F32/F16/F64 tensors; BF16 by widening)."""
    data = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[base + begin:base + end]
        if info["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=_DTYPES[info["dtype"]])
        out[name] = arr.reshape(info["shape"]).astype(np.float64)
    return out


def load_hf(directory):
    directory = pathlib.Path(directory)
    cfg = json.loads((directory / "config.json").read_text())
    return cfg, load_safetensors(directory / "model.safetensors")


def rms_norm(x, w, eps):
    """DeepseekV2RMSNorm."""
    var = np.mean(x * x, axis=-1, keepdims=True)
    return w * (x / np.sqrt(var + eps))


def yarn_get_mscale(scale=1.0, mscale=1.0):
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def rope_tables(cfg, positions):
    """cos, sin [S, rope] of DeepseekV2(Yarn)RotaryEmbedding."""
    dim = cfg["qk_rope_head_dim"]
    base = cfg.get("rope_theta", 10000.0)
    i2 = np.arange(0, dim, 2, dtype=np.float64) / dim
    freq_extra = 1.0 / (base ** i2)
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("type", scaling.get("rope_type"))
    mscale = 1.0
    if kind == "yarn":
        factor = scaling["factor"]
        orig = scaling["original_max_position_embeddings"]
        beta_fast = scaling.get("beta_fast", 32)
        beta_slow = scaling.get("beta_slow", 1)
        freq_inter = 1.0 / (factor * base ** i2)

        def correction_dim(rotations):
            return (dim * math.log(orig / (rotations * 2 * math.pi))) / (
                2 * math.log(base))

        low = max(math.floor(correction_dim(beta_fast)), 0)
        high = min(math.ceil(correction_dim(beta_slow)), dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) /
                       (high - low), 0, 1)
        mask = 1.0 - ramp
        inv_freq = freq_inter * (1 - mask) + freq_extra * mask
        mscale = yarn_get_mscale(factor, scaling.get("mscale", 1)) / \
            yarn_get_mscale(factor, scaling.get("mscale_all_dim", 0))
    elif kind in (None, "default"):
        inv_freq = freq_extra
    else:
        raise ValueError(f"rope scaling {kind!r} is not in this reference")
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb) * mscale, np.sin(emb) * mscale


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def apply_rope_interleaved(x, cos, sin):
    """DeepSeek's apply_rotary_pos_emb: interleaved pairs to halves, then
    rotate_half (x [..., S, d], cos/sin [S, d])."""
    d = x.shape[-1]
    shape = x.shape
    x = x.reshape(*shape[:-1], d // 2, 2).swapaxes(-1, -2).reshape(shape)
    return x * cos + rotate_half(x) * sin


def softmax_scale(cfg):
    qk = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]
    scale = qk ** -0.5
    scaling = cfg.get("rope_scaling")
    if scaling is not None:
        mscale_all_dim = scaling.get("mscale_all_dim", 0)
        if mscale_all_dim:
            m = yarn_get_mscale(scaling["factor"], mscale_all_dim)
            scale = scale * m * m
    return scale


def attention(cfg, w, p, x, cos, sin):
    """DeepseekV2Attention over a whole sequence x [S, hidden]."""
    S = x.shape[0]
    H = cfg["num_attention_heads"]
    nope, rope = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"]
    vdim, kvl = cfg["v_head_dim"], cfg["kv_lora_rank"]
    qk = nope + rope
    if cfg.get("q_lora_rank") is None:
        q = x @ w[p + "q_proj.weight"].T
    else:
        qa = rms_norm(x @ w[p + "q_a_proj.weight"].T,
                      w[p + "q_a_layernorm.weight"], 1e-6)
        q = qa @ w[p + "q_b_proj.weight"].T
    q = q.reshape(S, H, qk).transpose(1, 0, 2)  # [H, S, qk]
    q_nope, q_pe = q[..., :nope], q[..., nope:]
    ckv = x @ w[p + "kv_a_proj_with_mqa.weight"].T
    c, k_pe = ckv[:, :kvl], ckv[:, kvl:]
    kv = rms_norm(c, w[p + "kv_a_layernorm.weight"], 1e-6) @ \
        w[p + "kv_b_proj.weight"].T
    kv = kv.reshape(S, H, nope + vdim).transpose(1, 0, 2)
    k_nope, v = kv[..., :nope], kv[..., nope:]
    q_pe = apply_rope_interleaved(q_pe, cos, sin)
    k_pe = apply_rope_interleaved(k_pe[None], cos, sin)  # [1, S, rope]
    query = np.concatenate([q_nope, q_pe], axis=-1)
    key = np.concatenate([k_nope, np.broadcast_to(k_pe, (H, S, rope))],
                         axis=-1)
    scores = query @ key.transpose(0, 2, 1) * softmax_scale(cfg)
    causal = np.triu(np.ones((S, S), dtype=bool), 1)
    scores = np.where(causal, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    o = (probs @ v).transpose(1, 0, 2).reshape(S, H * vdim)
    return o @ w[p + "o_proj.weight"].T


def silu(x):
    return x / (1.0 + np.exp(-x))


def mlp(w, p, x):
    """DeepseekV2MLP (the dense layers)."""
    g = x @ w[p + "gate_proj.weight"].T
    u = x @ w[p + "up_proj.weight"].T
    return (silu(g) * u) @ w[p + "down_proj.weight"].T


def is_moe_layer(cfg, i):
    """DeepseekDecoderLayer: DeepseekMoE when n_routed_experts is set,
    i >= first_k_dense_replace and i % moe_layer_freq == 0."""
    return (cfg.get("n_routed_experts") is not None and
            i >= cfg["first_k_dense_replace"] and
            i % cfg["moe_layer_freq"] == 0)


def v3_route(cfg, w, p, x):
    """DeepseekV3TopkRouter: (expert indices [S, k], weights [S, k])."""
    E, k = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    G, tg = cfg["n_group"], cfg["topk_group"]
    logits = x @ w[p + "gate.weight"].T
    scores = 1.0 / (1.0 + np.exp(-logits))
    choice = scores + w[p + "gate.e_score_correction_bias"][None, :]
    # The sum of each group's two best choices (topk(2)[0].sum(-1)).
    best2 = -np.sort(-choice.reshape(-1, G, E // G), axis=-1)[..., :2]
    group_scores = best2.sum(-1)
    group_idx = np.argsort(-group_scores, axis=-1, kind="stable")[:, :tg]
    group_mask = np.zeros_like(group_scores)
    np.put_along_axis(group_mask, group_idx, 1.0, axis=-1)
    score_mask = np.repeat(group_mask, E // G, axis=-1)
    masked = np.where(score_mask > 0, choice, 0.0)
    idx = np.argsort(-masked, axis=-1, kind="stable")[:, :k]
    weight = np.take_along_axis(scores, idx, axis=-1)
    if cfg.get("norm_topk_prob"):
        weight = weight / (weight.sum(-1, keepdims=True) + 1e-20)
    return idx, weight * cfg.get("routed_scaling_factor", 1.0)


def moe(cfg, w, p, x):
    """DeepseekMoE (DeepSeek-V2's MoEGate + experts + shared_experts) or
    DeepseekV3MoE (its TopkRouter) over x [S, hidden]."""
    if cfg["architectures"][0] == "DeepseekV3ForCausalLM":
        idx, weight = v3_route(cfg, w, p, x)
        return experts_sum(cfg, w, p, x, idx, weight)
    if cfg.get("scoring_func", "softmax") != "softmax":
        raise ValueError("DeepSeek-V2's MoEGate scores with a softmax")
    E, k = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    logits = x @ w[p + "gate.weight"].T
    scores = np.exp(logits - logits.max(-1, keepdims=True))
    scores /= scores.sum(-1, keepdims=True)
    method = cfg.get("topk_method", "greedy")
    if method == "greedy":
        choice = scores
    elif method == "group_limited_greedy":
        G, tg = cfg["n_group"], cfg["topk_group"]
        group_scores = scores.reshape(-1, G, E // G).max(-1)
        # torch.topk's order is irrelevant here: only the chosen set is.
        group_idx = np.argsort(-group_scores, axis=-1, kind="stable")[:, :tg]
        group_mask = np.zeros_like(group_scores)
        np.put_along_axis(group_mask, group_idx, 1.0, axis=-1)
        score_mask = np.repeat(group_mask, E // G, axis=-1)
        choice = np.where(score_mask > 0, scores, 0.0)
    else:
        raise ValueError(f"topk_method {method!r} is not DeepSeek-V2's")
    idx = np.argsort(-choice, axis=-1, kind="stable")[:, :k]
    weight = np.take_along_axis(choice, idx, axis=-1)
    if k > 1 and cfg.get("norm_topk_prob"):
        weight = weight / (weight.sum(-1, keepdims=True) + 1e-20)
    else:
        weight = weight * cfg.get("routed_scaling_factor", 1.0)
    return experts_sum(cfg, w, p, x, idx, weight)


def experts_sum(cfg, w, p, x, idx, weight):
    """The routed experts' weighted sum plus the shared experts."""
    E = cfg["n_routed_experts"]
    y = np.zeros_like(x)
    for j in range(E):
        wj = np.where(idx == j, weight, 0.0).sum(-1, keepdims=True)
        if wj.any():
            y = y + wj * mlp(w, f"{p}experts.{j}.", x)
    if cfg.get("n_shared_experts"):
        y = y + mlp(w, p + "shared_experts.", x)
    return y


def forward(cfg, w, tokens):
    """Logits [len(tokens), vocab] of DeepseekV2/V3ForCausalLM."""
    if cfg.get("hidden_act", "silu") != "silu":
        raise ValueError("this reference has SiLU only")
    eps = cfg.get("rms_norm_eps", 1e-6)
    h = w["model.embed_tokens.weight"][np.asarray(tokens)]
    cos, sin = rope_tables(cfg, np.arange(len(tokens)))
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        h = h + attention(cfg, w, p + "self_attn.", x, cos, sin)
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        h = h + (moe(cfg, w, p + "mlp.", x) if is_moe_layer(cfg, i)
                 else mlp(w, p + "mlp.", x))
    h = rms_norm(h, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") \
        else w["lm_head.weight"]
    return h @ head.T
