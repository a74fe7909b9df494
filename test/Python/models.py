"""Models written as torch.nn.Modules for the Python package's tests.

TinyLlama is a Llama-style decoder in the Hugging Face layout (the module
and parameter names of transformers' LlamaForCausalLM, rotate-half RoPE, a
static KV cache as buffers updated with index_copy_, the way transformers'
StaticCache does), so its state dict is an HF checkpoint. VisionBlock is a
ViT/CLIP-style encoder block: a patch-embedding convolution, LayerNorm,
multi-head attention without a cache and a GELU MLP.
"""

import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LlamaRMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, head_dim, theta):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, positions):
        freqs = positions.float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, c, max_seq):
        super().__init__()
        self.h, self.hkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        dim = c["hidden_size"]
        self.q_proj = nn.Linear(dim, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(dim, self.hkv * self.d, bias=False)
        self.v_proj = nn.Linear(dim, self.hkv * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, dim, bias=False)
        self.register_buffer("k_cache", torch.zeros(1, self.hkv, max_seq, self.d))
        self.register_buffer("v_cache", torch.zeros(1, self.hkv, max_seq, self.d))

    def forward(self, x, cos, sin, positions, mask):
        s = x.shape[1]
        q = self.q_proj(x).view(1, s, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(1, s, self.hkv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(1, s, self.hkv, self.d).transpose(1, 2)
        cos, sin = cos[None, None], sin[None, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        self.k_cache.index_copy_(2, positions, k)
        self.v_cache.index_copy_(2, positions, v)
        rep = self.h // self.hkv
        keys = self.k_cache[:, :, None].expand(1, self.hkv, rep, -1, self.d).reshape(1, self.h, -1, self.d)
        vals = self.v_cache[:, :, None].expand(1, self.hkv, rep, -1, self.d).reshape(1, self.h, -1, self.d)
        scores = torch.matmul(q, keys.transpose(2, 3)) * (1.0 / math.sqrt(self.d))
        scores = scores + mask
        probs = F.softmax(scores.float(), dim=-1).to(q.dtype)
        o = torch.matmul(probs, vals).transpose(1, 2).reshape(1, s, self.h * self.d)
        return self.o_proj(o)


class LlamaMLP(nn.Module):
    def __init__(self, dim, ffn):
        super().__init__()
        self.gate_proj = nn.Linear(dim, ffn, bias=False)
        self.up_proj = nn.Linear(dim, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c, max_seq):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = LlamaAttention(c, max_seq)
        self.post_attention_layernorm = LlamaRMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = LlamaMLP(c["hidden_size"], c["intermediate_size"])

    def forward(self, h, cos, sin, positions, mask):
        h = h + self.self_attn(self.input_layernorm(h), cos, sin, positions, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class LlamaModel(nn.Module):
    def __init__(self, c, max_seq):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(LlamaDecoderLayer(c, max_seq) for _ in range(c["num_hidden_layers"]))
        self.norm = LlamaRMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.rotary_emb = LlamaRotaryEmbedding(c["head_dim"], c["rope_theta"])
        self.max_seq = max_seq

    def forward(self, tokens, positions):
        h = self.embed_tokens(tokens)
        cos, sin = self.rotary_emb(positions)
        keys = torch.arange(self.max_seq)
        mask = torch.where(keys[None, :] > positions[:, None],
                           torch.tensor(float("-inf")), torch.tensor(0.0))
        for layer in self.layers:
            h = layer(h, cos, sin, positions, mask)
        return self.norm(h)


class LlamaForCausalLM(nn.Module):
    """forward(tokens [1, S] int64, positions [S] int64) -> logits [1, S, V]."""

    def __init__(self, config, max_seq):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config, max_seq)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)

    def forward(self, tokens, positions):
        return self.lm_head(self.model(tokens, positions))


TINY_LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 8,
    "vocab_size": 512, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
    "attention_bias": False, "mlp_bias": False, "bos_token_id": 1,
    "eos_token_id": 2, "torch_dtype": "float32",
}


def tiny_llama(seed=0, max_seq=64, config=TINY_LLAMA):
    torch.manual_seed(seed)
    m = LlamaForCausalLM(dict(config), max_seq)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("layernorm.weight") or name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif "embed_tokens" in name:
                p.normal_(0.0, 1.0)
            else:
                p.normal_(0.0, 0.5 / math.sqrt(p.shape[1]))
    return m.eval()


def reset_caches(module):
    for name, b in module.named_buffers():
        if name.endswith("_cache"):
            b.zero_()


def greedy(model, prompt, steps):
    """Greedy tokens of the eager module with its own KV cache."""
    reset_caches(model)
    toks = list(prompt)
    with torch.no_grad():
        logits = model(torch.tensor([toks]), torch.arange(len(toks)))
        out = []
        pos = len(toks)
        for _ in range(steps):
            nxt = int(logits[0, -1].argmax())
            out.append(nxt)
            logits = model(torch.tensor([[nxt]]), torch.tensor([pos]))
            pos += 1
    reset_caches(model)
    return out


class VisionAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.d = heads, dim // heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q = self.q_proj(x).view(b, n, self.heads, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, n, self.heads, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, n, self.heads, self.d).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * self.d ** -0.5
        o = att.softmax(dim=-1) @ v
        return self.out_proj(o.transpose(1, 2).reshape(b, n, c))


class VisionMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class VisionEncoderLayer(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.layer_norm1 = nn.LayerNorm(dim)
        self.self_attn = VisionAttention(dim, heads)
        self.layer_norm2 = nn.LayerNorm(dim)
        self.mlp = VisionMLP(dim, hidden)

    def forward(self, x):
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class VisionEncoder(nn.Module):
    """forward(pixels [B, 3, H, W] float32) -> features [B, 1 + N, dim]."""

    def __init__(self, image=32, patch=8, dim=48, heads=4, hidden=96, layers=2):
        super().__init__()
        self.patch_embedding = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        n = (image // patch) ** 2
        self.class_embedding = nn.Parameter(torch.randn(dim))
        self.position_embedding = nn.Parameter(0.02 * torch.randn(1 + n, dim))
        self.pre_layrnorm = nn.LayerNorm(dim)
        self.layers = nn.ModuleList(VisionEncoderLayer(dim, heads, hidden) for _ in range(layers))
        self.post_layernorm = nn.LayerNorm(dim)

    def forward(self, pixels):
        b = pixels.shape[0]
        p = self.patch_embedding(pixels).flatten(2).transpose(1, 2)
        cls = self.class_embedding.expand(b, 1, -1)
        x = torch.cat([cls, p], dim=1) + self.position_embedding
        x = self.pre_layrnorm(x)
        for layer in self.layers:
            x = layer(x)
        return self.post_layernorm(x)


def vision_encoder(seed=0):
    torch.manual_seed(seed)
    m = VisionEncoder()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, 0.1)
            elif "layer_norm" in name or "layrnorm" in name or "layernorm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    return m.eval()
