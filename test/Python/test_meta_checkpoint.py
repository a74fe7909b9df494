"""Meta's native checkpoint format (consolidated.00.pth + params.json): a
checkpoint made here from stories260K's weights (llama2.c's file holds
Meta's layout: interleaved-pair q/k rows) exports with
`python3 -m etllm.export_llm` and generates llama2.c's greedy text."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import etllm
import etllm._export
import etllm._meta


def stories_state(shared):
    """stories260K.bin read with NumPy, as Meta's tensor names."""
    path = shared / "models" / "stories260K" / "stories260K.bin"
    dim, hidden, layers, heads, kv_heads, vocab, seq = np.fromfile(
        path, dtype=np.int32, count=7).tolist()
    data = np.fromfile(path, dtype=np.float32, offset=28)
    at = 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        t = torch.from_numpy(data[at:at + n].reshape(shape).copy())
        at += n
        return t

    kv = dim // heads * kv_heads
    emb = take(abs(vocab), dim)
    groups = {}
    for name, shape in [("attention_norm", (dim,)), ("attention.wq", (dim, dim)),
                        ("attention.wk", (kv, dim)), ("attention.wv", (kv, dim)),
                        ("attention.wo", (dim, dim)), ("ffn_norm", (dim,)),
                        ("feed_forward.w1", (hidden, dim)),
                        ("feed_forward.w2", (dim, hidden)),
                        ("feed_forward.w3", (hidden, dim))]:
        groups[name] = [take(*shape) for _ in range(layers)]
    sd = {"tok_embeddings.weight": emb, "norm.weight": take(dim)}
    for name, ts in groups.items():
        for i, t in enumerate(ts):
            sd[f"layers.{i}.{name}.weight"] = t
    # Llama 2 checkpoints carry the rotary table; the model ignores it.
    sd["rope.freqs"] = torch.ones(dim // heads // 2)
    params = {"dim": dim, "n_layers": layers, "n_heads": heads,
              "n_kv_heads": kv_heads, "vocab_size": abs(vocab),
              "multiple_of": 4, "ffn_dim_multiplier": None, "norm_eps": 1e-5,
              "rope_theta": 10000.0, "use_scaled_rope": False}
    assert hidden == etllm._meta.ffn_dim(dim, 4, None) == 172
    return sd, params


def write_meta(directory, sd, params):
    directory.mkdir(parents=True, exist_ok=True)
    torch.save(sd, directory / "consolidated.00.pth")
    (directory / "params.json").write_text(json.dumps(params))
    return directory


def export_llm_cli(*args):
    """python3 -m etllm.export_llm, in a new interpreter."""
    return subprocess.run([sys.executable, "-m", "etllm.export_llm",
                           "--quiet", *map(str, args)],
                          capture_output=True, text=True)


def export_llm_main(capsys, *args):
    """The same command line, in this interpreter (faster: torch is
    imported once)."""
    rc = etllm._export.main(["--quiet", *map(str, args)])
    return rc, capsys.readouterr().err


def test_meta_checkpoint_generates_llama2c_greedy_text(tmp_path, shared, tok512,
                                                       tool):
    sd, params = stories_state(shared)
    meta = write_meta(tmp_path / "meta", sd, params)
    cfg = tmp_path / "export_config.yaml"
    cfg.write_text("model:\n  max_seq_len: 512\npipeline:\n  name: portable\n")
    out = tmp_path / "stories.pte"
    r = export_llm_cli("--check_point", meta / "consolidated.00.pth",
                       "--model_config", meta / "params.json",
                       "--export_config", cfg, "--tokenizer", tok512, "-o", out)
    assert r.returncode == 0, r.stderr
    expected = (shared / "models" / "stories260K" /
                "greedy_once_upon_a_time_n64.txt").read_text()
    run = subprocess.run([tool("etllm-run"), str(out), "--prompt",
                          "Once upon a time", "-n", "60", "--temperature", "0"],
                         capture_output=True, text=True, check=True)
    assert run.stdout == expected
    # The same through the Python Runner (the embedded tokenizer).
    g = etllm.Runner(out).generate("Once upon a time", max_new_tokens=60,
                                   temperature=0)
    assert "Once upon a time" + g.text + "\n" == expected
    assert g.stats["generated_tokens"] == 60


def test_untied_output_and_bf16_weights(tmp_path, shared, capsys):
    sd, params = stories_state(shared)
    sd = {k: v.to(torch.bfloat16) for k, v in sd.items()}
    sd["output.weight"] = sd["tok_embeddings.weight"].clone()
    meta = write_meta(tmp_path / "meta", sd, params)
    # params.json next to the checkpoint is found without --model_config.
    out = tmp_path / "m.mlir"
    rc, err = export_llm_main(capsys, "--check_point", meta, "--set",
                              "model.max_seq_len=64", "--stop_after_stage",
                              "import", "-o", out)
    assert rc == 0, err
    ir = out.read_text()
    assert "etllm.parameter @lm_head.weight : tensor<512x64xf32>" in ir
    # The converted checkpoint lives next to the IR, which refers to it.
    hf = tmp_path / "m.mlir.checkpoint"
    assert f'etllm.checkpoint = "{hf}"' in ir
    config = json.loads((hf / "config.json").read_text())
    assert config["intermediate_size"] == 172
    assert config["tie_word_embeddings"] is False
    header_len = int.from_bytes((hf / "model.safetensors").read_bytes()[:8],
                                "little")
    header = json.loads((hf / "model.safetensors").read_bytes()[8:8 + header_len])
    assert header["model.layers.0.self_attn.q_proj.weight"]["dtype"] == "BF16"
    assert "rope.freqs" not in header


def test_ffn_size_follows_metas_formula():
    ffn_dim = etllm._meta.ffn_dim
    # Llama 2 7B, Llama 3 8B, Llama 3.2 1B (params.json values).
    assert ffn_dim(4096, 256, None) == 11008
    assert ffn_dim(4096, 1024, 1.3) == 14336
    assert ffn_dim(2048, 256, 1.5) == 8192


@pytest.mark.parametrize("change, message", [
    (lambda sd, p: p.pop("n_heads"), "'n_heads' is missing"),
    (lambda sd, p: p.update(dim=32), "has shape [512, 64], expected [512, 32]"),
    (lambda sd, p: p.update(n_layers=6), "missing tensors: layers.5."),
    (lambda sd, p: sd.update({"layers.0.attention.wq.bias": torch.zeros(64)}),
     "tensors the Llama family does not have: layers.0.attention.wq.bias"),
    (lambda sd, p: p.update(n_kv_heads=3), "not a multiple of n_kv_heads 3"),
    (lambda sd, p: p.update(norm_eps="small"), "'norm_eps' must be a number"),
])
def test_bad_checkpoints_fail_clearly(tmp_path, shared, change, message,
                                      capsys):
    sd, params = stories_state(shared)
    change(sd, params)
    meta = write_meta(tmp_path / "meta", sd, params)
    out = tmp_path / "x.pte"
    rc, err = export_llm_main(capsys, "--check_point",
                              meta / "consolidated.00.pth", "--model_config",
                              meta / "params.json", "-o", out)
    assert rc == 1
    assert message in err, err
    assert err.startswith("export_llm: error: ")
    assert not out.exists()


def test_sharded_checkpoints_are_refused(tmp_path, shared, capsys):
    sd, params = stories_state(shared)
    meta = write_meta(tmp_path / "meta", sd, params)
    torch.save(sd, meta / "consolidated.01.pth")
    rc, err = export_llm_main(capsys, "--check_point", meta, "-o",
                              tmp_path / "x.pte")
    assert rc == 1
    assert "2 model-parallel shards" in err
    assert not os.path.exists(tmp_path / "x.pte")
