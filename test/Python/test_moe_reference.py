"""An independent check of the mixture-of-experts import: the logits of a
tiny random Mixtral, Qwen2-MoE and Qwen3-MoE checkpoint through the
`portable` program against a float64 NumPy reference written from the
transformers modeling code (modeling_mixtral.py, modeling_qwen2_moe.py,
modeling_qwen3_moe.py, 4.x), reading the same safetensors and config.json.

The reference does not share code with etllm: it parses the safetensors
header itself and follows the modeling code's operations (RMSNorm, RoPE
with rotate_half, grouped-query attention with a causal mask, the sparse
block's softmax / top-k / renormalization and its per-expert sum, Qwen2-MoE's
sigmoid-gated shared expert, Qwen3's q/k norms)."""

import json
import pathlib
import struct
import subprocess

import numpy as np
import pytest

import etllm

TOKENS = [1, 17, 300, 42, 7, 255, 99, 3, 481]


def read_safetensors(directory):
    tensors = {}
    for path in sorted(pathlib.Path(directory).glob("*.safetensors")):
        data = path.read_bytes()
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + n])
        base = 8 + n
        for name, info in header.items():
            if name == "__metadata__":
                continue
            assert info["dtype"] == "F32", (name, info["dtype"])
            lo, hi = info["data_offsets"]
            tensors[name] = np.frombuffer(
                data[base + lo:base + hi], dtype="<f4").astype(
                    np.float64).reshape(info["shape"])
    return tensors


def rms_norm(x, w, eps):
    var = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(var + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def silu(x):
    return x / (1.0 + np.exp(-x))


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def topk(p, k):
    # torch.topk's order: descending, the lower index first among ties.
    idx = np.argsort(-p, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(p, idx, axis=-1), idx


class Reference:
    def __init__(self, directory):
        self.c = json.loads((pathlib.Path(directory) /
                             "config.json").read_text())
        self.w = read_safetensors(directory)
        c = self.c
        self.mixtral = c["model_type"] == "mixtral"
        self.qwen3 = c["model_type"] == "qwen3_moe"
        assert c.get("rope_scaling") is None
        assert c["hidden_act"] == "silu"
        self.heads = c["num_attention_heads"]
        self.kv_heads = c["num_key_value_heads"]
        self.head_dim = c.get("head_dim") or c["hidden_size"] // self.heads
        self.eps = c["rms_norm_eps"]
        self.experts = c["num_local_experts"] if self.mixtral else c[
            "num_experts"]
        self.top_k = c["num_experts_per_tok"]
        self.norm_topk = True if self.mixtral else c["norm_topk_prob"]

    def window(self):
        c = self.c
        if self.mixtral:
            return c.get("sliding_window")
        return c["sliding_window"] if c.get("use_sliding_window") else None

    def is_sparse(self, i):
        if self.mixtral:
            return True
        c = self.c
        return (i not in (c.get("mlp_only_layers") or []) and
                self.experts > 0 and
                (i + 1) % c["decoder_sparse_step"] == 0)

    def linear(self, x, name, bias=False):
        y = x @ self.w[name + ".weight"].T
        if bias:
            y = y + self.w[name + ".bias"]
        return y

    def mlp(self, x, p, gate="gate_proj", up="up_proj", down="down_proj"):
        return self.linear(
            silu(self.linear(x, f"{p}.{gate}")) * self.linear(x, f"{p}.{up}"),
            f"{p}.{down}")

    def attention(self, x, p):
        T = x.shape[0]
        H, KV, d = self.heads, self.kv_heads, self.head_dim
        bias = (self.c.get("attention_bias", False) if self.qwen3 else
                not self.mixtral)
        q = self.linear(x, p + ".q_proj", bias).reshape(T, H, d)
        k = self.linear(x, p + ".k_proj", bias).reshape(T, KV, d)
        v = self.linear(x, p + ".v_proj", bias).reshape(T, KV, d)
        if self.qwen3:
            q = rms_norm(q, self.w[p + ".q_norm.weight"], self.eps)
            k = rms_norm(k, self.w[p + ".k_norm.weight"], self.eps)
        theta = self.c.get("rope_theta", 1e6 if self.mixtral else 10000.0)
        inv = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
        ang = np.outer(np.arange(T, dtype=np.float64), inv)
        emb = np.concatenate([ang, ang], axis=-1)[:, None, :]
        cos, sin = np.cos(emb), np.sin(emb)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = H // KV
        k = np.repeat(k, rep, axis=1)
        v = np.repeat(v, rep, axis=1)
        s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
        i = np.arange(T)[:, None]
        j = np.arange(T)[None, :]
        allowed = j <= i
        wnd = self.window()
        if wnd:
            allowed &= (i - j) < wnd
        s = np.where(allowed[None], s, -np.inf)
        o = np.einsum("hqk,khd->qhd", softmax(s), v).reshape(T, H * d)
        return self.linear(o, p + ".o_proj")

    def sparse_moe(self, h, p):
        logits = self.linear(h, p + ".gate")
        probs = softmax(logits, axis=1)
        weights, selected = topk(probs, self.top_k)
        if self.norm_topk:
            weights = weights / np.sum(weights, axis=-1, keepdims=True)
        out = np.zeros_like(h)
        names = (("w1", "w3", "w2") if self.mixtral else
                 ("gate_proj", "up_proj", "down_proj"))
        for e in range(self.experts):
            rows, slot = np.nonzero(selected == e)
            if rows.size == 0:
                continue
            y = self.mlp(h[rows], f"{p}.experts.{e}", *names)
            out[rows] += y * weights[rows, slot][:, None]
        if f"{p}.shared_expert.gate_proj.weight" in self.w:
            shared = self.mlp(h, p + ".shared_expert")
            gate = 1.0 / (1.0 + np.exp(-self.linear(
                h, p + ".shared_expert_gate")))
            out = out + gate * shared
        return out

    def logits(self, tokens):
        x = self.w["model.embed_tokens.weight"][np.array(tokens)]
        for i in range(self.c["num_hidden_layers"]):
            p = f"model.layers.{i}"
            x = x + self.attention(
                rms_norm(x, self.w[p + ".input_layernorm.weight"], self.eps),
                p + ".self_attn")
            h = rms_norm(x, self.w[p + ".post_attention_layernorm.weight"],
                         self.eps)
            if not self.is_sparse(i):
                x = x + self.mlp(h, p + ".mlp")
            elif self.mixtral:
                x = x + self.sparse_moe(h, p + ".block_sparse_moe")
            else:
                x = x + self.sparse_moe(h, p + ".mlp")
        x = rms_norm(x, self.w["model.norm.weight"], self.eps)
        head = self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"])
        return x @ head.T


@pytest.mark.parametrize("arch", ["mixtral", "qwen2moe", "qwen3moe"])
def test_portable_logits_match_the_float64_reference(arch, tmp_path, tool):
    model = tmp_path / arch
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", arch,
                    "--format", "hf", "--dtype", "f32", "--layers", "2",
                    "--seed", "3", "-o", str(model)], check=True)
    ref = Reference(model)
    want = ref.logits(TOKENS)
    pte = tmp_path / (arch + ".pte")
    etllm.export(model, pte, {"model": {"last_logits_only": False}})
    got = np.array(etllm.Program(pte).forward(TOKENS, start_pos=0),
                   dtype=np.float64)[0]
    assert got.shape == want.shape
    # 1e-4 relative to the logits' scale (a per-element relative error is
    # meaningless for logits near 0).
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= 1e-4, f"max relative error {err:.3g}"
    # The routing the reference chose is the program's: the greedy token of
    # every position agrees.
    assert (got.argmax(-1) == want.argmax(-1)).all()
