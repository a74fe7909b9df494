"""transformers models through the torch.export front end: LlamaForCausalLM,
Qwen3ForCausalLM and Gemma3ForCausalLM built from small configs (random
weights), wrapped by etllm.hf.StaticCacheLM, captured by torch.export and
exported with the portable recipe; the program's logits match the eager
model's (fp32, 1e-4 relative) for a prefill and decode steps, and the
attention is fused with the masks transformers builds."""

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

import etllm  # noqa: E402
import etllm.hf  # noqa: E402

MAX_SEQ = 48
PROMPT = [1, 17, 90, 5, 33, 8, 71]
DECODE = [4, 120, 9, 9, 64]

COMMON = dict(vocab_size=128, hidden_size=64, intermediate_size=96,
              num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16,
              max_position_embeddings=128)


def build(kind):
    torch.manual_seed({"llama": 1, "qwen3": 2, "gemma3": 3}[kind])
    if kind == "llama":
        cfg = transformers.LlamaConfig(**COMMON)
        model = transformers.LlamaForCausalLM(cfg)
    elif kind == "qwen3":
        cfg = transformers.Qwen3Config(**COMMON)
        model = transformers.Qwen3ForCausalLM(cfg)
    else:
        # A 4-token window on the local layer: the prompt and decode steps
        # cross it, so the sliding mask is exercised.
        cfg = transformers.Gemma3TextConfig(
            **COMMON, sliding_window=4,
            layer_types=["sliding_attention", "full_attention"])
        model = transformers.Gemma3ForCausalLM(cfg)
    # Random norm weights (transformers starts them at 1 or 0).
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def eager_logits(model, tokens):
    """Logits of the eager model for the whole sequence (no cache)."""
    with torch.no_grad():
        return model(input_ids=torch.tensor([tokens])).logits[0].numpy()


@pytest.mark.parametrize("kind", ["llama", "qwen3", "gemma3"])
def test_logits_match_eager(kind, tmp_path):
    model = build(kind)
    lm = etllm.hf.StaticCacheLM(model, MAX_SEQ)
    dump = tmp_path / "stages"
    program = etllm.export_llm(
        lm, (torch.tensor([PROMPT]), torch.arange(len(PROMPT))),
        {"model": {"max_seq_len": MAX_SEQ}},
        model_config=etllm.hf.model_config(model),
        output=tmp_path / f"{kind}.pte", dump_dir=dump)
    seq = PROMPT + DECODE
    ref = eager_logits(model, seq)
    scale = float(np.abs(ref).max())
    out = program.forward(PROMPT, 0)[0]
    worst = float(np.abs(out - ref[:len(PROMPT)]).max())
    for i, tok in enumerate(DECODE):
        pos = len(PROMPT) + i
        step = program.forward([tok], pos)[0, -1]
        worst = max(worst, float(np.abs(step - ref[pos]).max()))
    assert worst <= 1e-4 * scale, (worst, scale)

    # The masks transformers built became causal (and windowed) attention
    # over the positions: no mask operand is left on any sdpa.
    final = sorted(dump.glob("*.mlir"))[-1].read_text()
    sdpas = [line for line in final.splitlines() if "etllm.sdpa" in line]
    assert len(sdpas) == COMMON["num_hidden_layers"], sdpas
    assert all(" causal " in s and " mask " not in s for s in sdpas), sdpas
    if kind == "gemma3":
        assert sum(" window 4 " in s for s in sdpas) == 1, sdpas


def test_static_cache_wrapper_matches_eager_decode():
    """The wrapper itself (no export): prefill then one decode step equal
    the eager model on the whole sequence."""
    model = build("llama")
    lm = etllm.hf.StaticCacheLM(model, MAX_SEQ)
    seq = PROMPT + [11]
    ref = eager_logits(model, seq)
    with torch.no_grad():
        lm(torch.tensor([PROMPT]), torch.arange(len(PROMPT)))
        step = lm(torch.tensor([[11]]), torch.tensor([len(PROMPT)]))[0, -1]
    assert np.abs(step.numpy() - ref[-1]).max() <= 1e-5
