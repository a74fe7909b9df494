"""etllm.export_llm on a Llama-style decoder written as an nn.Module (the
KV cache as buffers): the program matches torch eager, matches the program
etllm-export makes from the same weights saved as a Hugging Face
checkpoint, keeps module boundaries, buffers and parameters, and runs
through every recipe."""

import json
import re
import subprocess

import numpy as np
import pytest
import torch

import etllm
import models

PROMPT = [1, 45, 300, 12, 7]
MAX_SEQ = 64


def export(module, path=None, config=None, **kw):
    cfg = {"model": {"max_seq_len": MAX_SEQ}}
    cfg.update(config or {})
    n = len(PROMPT)
    return etllm.export_llm(module, (torch.tensor([PROMPT]), torch.arange(n)),
                            cfg, output=path, **kw)


def program_greedy(program, prompt, steps):
    program.reset()
    logits = program.forward(prompt, 0)
    out, pos = [], len(prompt)
    for _ in range(steps):
        nxt = int(np.argmax(logits[0, -1]))
        out.append(nxt)
        logits = program.forward([nxt], pos)
        pos += 1
    return out


def save_hf(module, directory):
    """The module's parameters as a Hugging Face checkpoint."""
    directory.mkdir()
    etllm.write_safetensors(str(directory / "model.safetensors"),
                            dict(module.named_parameters()))
    (directory / "config.json").write_text(json.dumps(module.config))


def test_logits_match_eager_prefill_and_decode(tmp_path):
    m = models.tiny_llama()
    prog = export(m, tmp_path / "m.pte")
    models.reset_caches(m)
    worst = 0.0
    with torch.no_grad():
        ref = m(torch.tensor([PROMPT]), torch.arange(len(PROMPT))).numpy()
        out = prog.forward(PROMPT, 0)
        assert out.shape == ref.shape == (1, len(PROMPT), 512)
        worst = max(worst, float(np.abs(out - ref).max()))
        for step, tok in enumerate([3, 99, 511, 0, 42, 42, 8, 250]):
            pos = len(PROMPT) + step
            ref = m(torch.tensor([[tok]]), torch.tensor([pos])).numpy()
            out = prog.forward([tok], pos)
            assert out.shape == (1, 1, 512)
            worst = max(worst, float(np.abs(out - ref).max()))
    assert worst <= 1e-4, worst
    # A second prefill, longer than the traced lengths, after a reset.
    prog.reset()
    models.reset_caches(m)
    long = list(range(1, 40))
    with torch.no_grad():
        ref = m(torch.tensor([long]), torch.arange(len(long))).numpy()
    assert np.abs(prog.forward(long, 0) - ref).max() <= 1e-4


def test_same_greedy_tokens_as_the_hf_checkpoint(tmp_path, tok512, tool):
    m = models.tiny_llama(seed=3)
    prog = export(m, tmp_path / "module.pte")
    save_hf(m, tmp_path / "hf")
    subprocess.run([tool("etllm-export"), "--quiet", "--model",
                    str(tmp_path / "hf"), "--set",
                    f"model.max_seq_len={MAX_SEQ}", "-o",
                    str(tmp_path / "hf.pte")], check=True)
    hf = etllm.Program(str(tmp_path / "hf.pte"))
    steps = 40
    eager = models.greedy(m, PROMPT, steps)
    assert program_greedy(prog, PROMPT, steps) == eager
    assert program_greedy(hf, PROMPT, steps) == eager
    # The same text through the runtime's Runner (tokenizer + sampler).
    texts = []
    for path in ("module.pte", "hf.pte"):
        r = etllm.Runner(tmp_path / path, tokenizer=tok512)
        g = r.generate("Once upon a time", max_new_tokens=30, temperature=0)
        texts.append((g.text, g.stats["generated_tokens"]))
    assert texts[0] == texts[1]
    assert texts[0][1] > 0


def test_module_boundaries_buffers_and_parameters_in_the_ir(tmp_path):
    m = models.tiny_llama()
    assert export(m, tmp_path / "m.mlir", stop_after="import") is None
    ir = (tmp_path / "m.mlir").read_text()
    weights = tmp_path / "m.safetensors"
    assert f'etllm.checkpoint = "{weights}"' in ir
    # Module paths on the ops, classes in the table.
    assert 'etllm.module = "model.layers.1.self_attn"' in ir
    assert 'etllm.module = "model.layers.0.mlp.down_proj"' in ir
    classes = re.search(r"etllm.module_classes = \{([^}]*)\}", ir).group(1)
    for path, cls in [("model.layers.0.self_attn", "LlamaAttention"),
                      ("model.layers.1.input_layernorm", "LlamaRMSNorm"),
                      ("model.rotary_emb", "LlamaRotaryEmbedding"),
                      ("lm_head", "Linear"), ("model", "LlamaModel")]:
        assert f'{path} = "{cls}"' in classes
    # The caches are mutable buffers, read, updated functionally, written.
    for layer in range(2):
        for kv in ("k", "v"):
            sym = f"@model.layers.{layer}.self_attn.{kv}_cache"
            assert f"etllm.buffer {sym} : tensor<1x4x64x8xf32>" in ir
            assert f"etllm.buffer.read {sym}" in ir
            assert re.search(rf"etllm.buffer.write %\S+ to {re.escape(sym)}", ir)
    assert ir.count("etllm.index_copy") == 4
    # Every weight is a named parameter (no bytes in the IR); the only
    # constants are scalars and the 4-entry RoPE table.
    for name, p in m.named_parameters():
        assert f"etllm.parameter @{name} : tensor<" in ir
    for const in re.findall(r"etllm.constant dense<[^>]*> : (tensor<[^>]*>)", ir):
        assert const in ("tensor<f32>", "tensor<4xf32>"), const
    # The dynamic sequence dimension.
    assert "func.func @forward(%arg0: tensor<1x?xi64>, %arg1: tensor<?xi64>)" \
        " -> tensor<1x?x512xf32>" in ir
    # The IR alone (with its weights file) serializes to the same program.
    plan = etllm.plan_memory(ir)
    assert plan["buffer_bytes"] == 4 * (4 * 64 * 8) * 4
    etllm.serialize(ir, str(tmp_path / "from-ir.pte"))
    prog = etllm.Program(tmp_path / "from-ir.pte")
    models.reset_caches(m)
    with torch.no_grad():
        ref = m(torch.tensor([PROMPT]), torch.arange(len(PROMPT))).numpy()
    assert np.abs(prog.forward(PROMPT, 0) - ref).max() <= 1e-4


def test_recipes_fuse_and_match_the_imported_graph(tmp_path):
    m = models.tiny_llama()
    export(m, tmp_path / "m.mlir", stop_after="import", model_config={
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 8,
        "rms_norm_eps": 1e-5})
    ir = (tmp_path / "m.mlir").read_text()
    # The source swap finds attention and norms by class.
    t = etllm.Tester.from_ir(ir)
    t.run_recipe("cpu-fp32").check_count("etllm.sdpa", 2) \
        .check_count("etllm.rms_norm", 5).check_count("etllm.kv_cache.update", 4) \
        .check_not("etllm.softmax").run_and_compare(1e-4, 1e-4, against="input")
    assert t.ok(), t.report()
    t = etllm.Tester.from_ir(ir)
    t.run_recipe("cpu-8da4w").run_and_compare_relative(0.2, 0.7,
                                                            against="input")
    assert t.ok(), t.report()


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32", "cpu-int4"])
def test_every_recipe_exports_and_runs(tmp_path, recipe):
    m = models.tiny_llama()
    prog = export(m, tmp_path / "m.pte", {"pipeline": {"name": recipe}})
    models.reset_caches(m)
    with torch.no_grad():
        ref = m(torch.tensor([PROMPT]), torch.arange(len(PROMPT))).numpy()
    out = prog.forward(PROMPT, 0)
    assert prog.metadata["pipeline"] == recipe
    if recipe == "cpu-int4":
        rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
        assert rel < 0.2, rel
    else:
        assert np.abs(out - ref).max() <= 1e-4


def test_former_recipe_name_exports_the_same_program(tmp_path):
    # xnnpack-int4 (the CPU backend's former name) is cpu-int4: the same
    # stages, the same bytes, and the program records the recipe's name.
    m = models.tiny_llama()
    a = export(m, tmp_path / "a.pte", {"pipeline": {"name": "xnnpack-int4"}})
    b = export(m, tmp_path / "b.pte", {"pipeline": {"name": "cpu-int4"}})
    assert a.metadata["pipeline"] == "cpu-int4"
    assert (tmp_path / "a.pte").read_bytes() == (tmp_path / "b.pte").read_bytes()
    # The Tester takes the alias too.
    export(m, tmp_path / "m.mlir", stop_after="import")
    t = etllm.Tester.from_ir((tmp_path / "m.mlir").read_text())
    t.run_recipe("xnnpack-fp32").check_not("etllm.softmax") \
        .run_and_compare(1e-4, 1e-4, against="input")
    assert t.ok(), t.report()


class IndexPutCache(torch.nn.Module):
    """ExecuTorch-style cache update: cache[:, :, pos] = v, written with
    aten.index_put_ (torch 1.13's functionalization cannot trace the
    __setitem__ spelling), and a buffer replaced with copy_."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.register_buffer("cache", torch.zeros(1, 2, 16, 4))
        self.register_buffer("total", torch.zeros(8))

    def forward(self, x, pos):
        v = self.proj(x).view(1, -1, 2, 4).transpose(1, 2)
        torch.ops.aten.index_put_(self.cache, [None, None, pos], v)
        self.total.copy_(self.total + x.sum(dim=(0, 1)))
        return self.cache.sum(dim=2) + self.total.view(1, 2, 4)


def test_index_put_and_copy_buffers_persist_across_calls():
    torch.manual_seed(0)
    m = IndexPutCache().eval()
    x0 = torch.randn(1, 3, 8)
    prog = etllm.export_llm(m, (x0, torch.arange(3)), {"model": {"max_seq_len": 16}},
                            dynamic_dims=[1, 0])
    with torch.no_grad():
        for x, pos in [(x0, torch.arange(3)), (torch.randn(1, 1, 8), torch.tensor([3])),
                       (torch.randn(1, 2, 8), torch.tensor([4, 5]))]:
            ref = m(x, pos).numpy()
            out = prog.run(x.numpy(), pos.numpy())[0]
            assert np.abs(out - ref).max() <= 1e-5


class Unsupported(torch.nn.Module):
    class Inner(torch.nn.Module):
        def forward(self, x):
            return torch.erf(x) + torch.cumsum(x, dim=-1)

    def __init__(self):
        super().__init__()
        self.a = Unsupported.Inner()
        self.b = torch.nn.Sequential(Unsupported.Inner())

    def forward(self, x):
        return self.b(self.a(x)).atan()


def test_unsupported_ops_are_listed_once_with_module_paths():
    with pytest.raises(etllm.ExportError) as e:
        etllm.export_llm(Unsupported(), (torch.randn(2, 4),))
    msg = str(e.value)
    assert msg.count("not supported:") == 1
    assert "aten.erf.default at a, b.0" in msg
    assert "aten.cumsum.default at a, b.0" in msg
    assert "aten.atan.default at (top level)" in msg


class GrowingMask(torch.nn.Module):
    def forward(self, tokens, pos):
        return torch.zeros(tokens.shape[1], 4) + pos[:, None]


class Branchy(torch.nn.Module):
    def forward(self, tokens, pos):
        if tokens.shape[1] > 3:
            return pos.float() * 2
        return pos.float()


def test_sequence_length_errors():
    toks, pos = torch.zeros(1, 5, dtype=torch.long), torch.arange(5)
    cfg = {"model": {"max_seq_len": 8}}
    with pytest.raises(etllm.ExportError, match="derive it from an input"):
        etllm.export_llm(GrowingMask(), (toks, pos), cfg)
    with pytest.raises(etllm.ExportError, match="Python control flow"):
        etllm.export_llm(Branchy(), (toks, pos), cfg)
    with pytest.raises(etllm.ExportError, match="set model.max_seq_len"):
        etllm.export_llm(models.tiny_llama(), (toks, pos))


def test_config_errors_name_the_problem():
    m = models.tiny_llama()
    toks, pos = torch.zeros(1, 5, dtype=torch.long), torch.arange(5)
    with pytest.raises(etllm.ExportError, match="model.dtype is float16"):
        etllm.export_llm(m, (toks, pos), {"model": {"max_seq_len": 64,
                                                    "dtype": "float16"}})
    with pytest.raises(etllm.Error, match="model.max_seq_lenn"):
        etllm.export_llm(m, (toks, pos), {"model": {"max_seq_lenn": 64}})
    with torch.no_grad():
        m(toks, pos)  # fills the caches
    with pytest.raises(etllm.ExportError, match="starts non-zero"):
        etllm.export_llm(m, (toks, pos), {"model": {"max_seq_len": 64}})
