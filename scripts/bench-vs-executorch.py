#!/usr/bin/env python3
"""The ExecuTorch half of scripts/bench-vs-executorch.sh (issue 31): run with
the Python of ExecuTorch's own virtual environment (never the project's).

Subcommands (each prints what it does; results as one JSON line prefixed
"RESULT " where the shell script reads them):

  versions                     the versions of python, torch, executorch,
                               torchao, transformers, gguf
  hf-from-gguf GGUF OUT_DIR    the float Hugging Face form of a GGUF model:
                               transformers' GGUF loader dequantizes every
                               tensor to float32; OUT_DIR gets
                               model.safetensors, config.json and the
                               tokenizer (tokenizer.json)
  meta-checkpoint HF_DIR CKPT PARAMS
                               the checkpoint ExecuTorch's llama export reads
                               (Meta's names, q/k rows in the interleaved
                               rotary order), converted as ExecuTorch's
                               examples/models/smollm2/convert_weights.py
                               does (which needs torchtune's
                               FullModelHFCheckpointer: its q/k permutation is
                               restated here), and the params JSON made from
                               config.json (the fields of ExecuTorch's
                               smollm2/135M_config.json)
  prompt HF_DIR TEXT N OUT     N tokens of the file TEXT (from its start, or
                               the first later token where the cut
                               round-trips), decoded into OUT: OUT encodes to
                               exactly those N tokens again
  reference HF_DIR PROMPT N    N greedy tokens of the float model (transformers,
                               float32) after the prompt file PROMPT
  run PTE TOKENIZER PROMPT --threads T --gen N [--reps R]
                               ExecuTorch's TextLLMRunner (Python bindings of
                               its C++ runner) on PTE: a warm-up generation,
                               then R timed ones (greedy, N new tokens), with
                               the XNNPACK threadpool set to T threads; the
                               text pieces of the last one, one per token
  agreement HF_DIR PROMPT N REFERENCE_LOG EXECUTORCH_LOG ETLLM_OUT
                               the three greedy texts side by side, each with
                               the number of leading tokens equal to the
                               float model's
  summary RUNS WORK_DIR PROMPT GEN
                               the table: medians over the rounds (and
                               ranges) of everything in RUNS (JSON lines the
                               shell script wrote), ratios etllm / ExecuTorch

The prompt is given without BOS (SmolLM2's GGUF says add_bos_token = false
and its tokenizer adds none), the same ids for the three models.
"""
import argparse
import json
import os
import re
import sys
import time


def result(obj):
    print("RESULT " + json.dumps(obj), flush=True)


def _dec(tok, ids):
    """The text of token ids, as the runners print it (no clean-up of
    spaces before punctuation)."""
    return tok.decode(ids, clean_up_tokenization_spaces=False)


def rss_kb(field):
    """VmRSS or VmHWM of this process, in KB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def cmd_versions(_):
    import importlib.metadata as md

    out = {"python": sys.version.split()[0]}
    for pkg in ("torch", "executorch", "torchao", "transformers", "gguf",
                "safetensors", "tokenizers", "pytorch_tokenizers"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    result(out)


def cmd_hf_from_gguf(a):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    d, f = os.path.split(os.path.abspath(a.gguf))
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    from safetensors.torch import save_file

    os.makedirs(a.out_dir, exist_ok=True)
    # transformers 5 marks a model loaded from GGUF as quantized ("not
    # serializable") although its tensors are dequantized floats: write them
    # and the config directly. A tied lm_head is left out, as save_pretrained
    # does.
    sd = {}
    for k, v in model.state_dict().items():
        if not v.is_floating_point() or v.dtype != torch.float32:
            sys.exit(f"hf-from-gguf: {k} is {v.dtype}, not float32")
        if k == "lm_head.weight" and model.config.tie_word_embeddings:
            continue
        sd[k] = v.contiguous().clone()
    save_file(sd, os.path.join(a.out_dir, "model.safetensors"), metadata={"format": "pt"})
    cfg = model.config
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    cfg.save_pretrained(a.out_dir)
    tok.save_pretrained(a.out_dir)
    if not os.path.isfile(os.path.join(a.out_dir, "tokenizer.json")):
        sys.exit(f"hf-from-gguf: transformers wrote no tokenizer.json in {a.out_dir}")
    n = sum(p.numel() for p in model.parameters())
    result({"parameters": n, "tied": bool(model.config.tie_word_embeddings),
            "dir": a.out_dir})


def _permute(w, n_heads, dim):
    """HF's half-split rotary rows -> Meta's interleaved rows (torchtune's
    hf_to_tune permutation, which ExecuTorch's smollm2 converter relies on)."""
    head_dim = w.shape[0] // n_heads
    return (w.view(n_heads, 2, head_dim // 2, dim).transpose(1, 2)
            .reshape(head_dim * n_heads, dim))


def cmd_meta_checkpoint(a):
    import torch
    from safetensors.torch import load_file

    with open(os.path.join(a.hf_dir, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "llama":
        sys.exit(f"meta-checkpoint: {a.hf_dir} is a {cfg.get('model_type')!r} model, not llama")
    sd = load_file(os.path.join(a.hf_dir, "model.safetensors"))
    dim, n_heads = cfg["hidden_size"], cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads", n_heads)
    names = {
        "self_attn.q_proj": "attention.wq", "self_attn.k_proj": "attention.wk",
        "self_attn.v_proj": "attention.wv", "self_attn.o_proj": "attention.wo",
        "mlp.gate_proj": "feed_forward.w1", "mlp.down_proj": "feed_forward.w2",
        "mlp.up_proj": "feed_forward.w3", "input_layernorm": "attention_norm",
        "post_attention_layernorm": "ffn_norm",
    }
    out = {}
    for k, v in sd.items():
        if k == "model.embed_tokens.weight":
            out["tok_embeddings.weight"] = v
        elif k == "model.norm.weight":
            out["norm.weight"] = v
        elif k == "lm_head.weight":
            out["output.weight"] = v
        else:
            m = re.fullmatch(r"model\.layers\.(\d+)\.(.+)\.weight", k)
            if not m or m.group(2) not in names:
                sys.exit(f"meta-checkpoint: unexpected tensor {k} in {a.hf_dir}")
            if m.group(2) == "self_attn.q_proj":
                v = _permute(v, n_heads, dim)
            elif m.group(2) == "self_attn.k_proj":
                v = _permute(v, n_kv, dim)
            out[f"layers.{m.group(1)}.{names[m.group(2)]}.weight"] = v
    if "output.weight" not in out:  # tied: ExecuTorch's converter copies it
        out["output.weight"] = out["tok_embeddings.weight"]
    torch.save(out, a.ckpt)
    params = {
        "dim": dim,
        "ffn_dim_multiplier": 1,
        "hidden_dim": cfg["intermediate_size"],
        "n_heads": n_heads,
        "n_kv_heads": n_kv,
        "n_layers": cfg["num_hidden_layers"],
        "norm_eps": cfg["rms_norm_eps"],
        "rope_theta": float((cfg.get("rope_parameters") or {}).get("rope_theta")
                            or cfg.get("rope_theta")),
        "use_scaled_rope": False,
        "vocab_size": cfg["vocab_size"],
        "use_hf_rope": False,
        "attention_qkv_bias": False,
    }
    with open(a.params, "w") as f:
        json.dump(params, f, indent=2)
    result({"tensors": len(out), "params": params})


def cmd_prompt(a):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.hf_dir)
    with open(a.text, encoding="utf-8") as f:
        ids = tok.encode(f.read(), add_special_tokens=False)
    # N tokens from the start; when the decoded text does not encode to the
    # same ids again (a cut inside a word), from the next token on.
    for start in range(64):
        chunk = ids[start:start + a.n]
        text = _dec(tok, chunk)
        if len(chunk) == a.n and tok.encode(text, add_special_tokens=False) == chunk:
            break
    else:
        sys.exit(f"prompt: no {a.n} tokens of {a.text} round-trip through the tokenizer")
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(text)
    result({"tokens": a.n, "first_token": start, "bytes": len(text.encode())})


def cmd_reference(a):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(a.hf_dir)
    model = AutoModelForCausalLM.from_pretrained(a.hf_dir, dtype=torch.float32)
    model.eval()
    with open(a.prompt, encoding="utf-8") as f:
        ids = tok.encode(f.read(), add_special_tokens=False)
    x = torch.tensor([ids])
    with torch.no_grad():
        out = model.generate(x, max_new_tokens=a.n, do_sample=False,
                             eos_token_id=None, pad_token_id=tok.eos_token_id)
    gen = out[0, len(ids):].tolist()
    result({"prompt_tokens": len(ids), "tokens": gen, "text": _dec(tok, gen)})


def cmd_run(a):
    import torch  # noqa: F401  (loads libtorch for the bindings)
    from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner
    from executorch.extension.pybindings import portable_lib
    # The program's kernels outside the bindings' own: llama::custom_sdpa
    # and llama::update_cache (the custom SDPA and KV-cache update), and
    # quantized_decomposed::embedding_byte (the int8 embedding). Loading
    # these libraries registers them with the runtime, as ExecuTorch's own
    # Python llama runner does; without them the method fails to load.
    from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401
    from executorch.kernels import quantized  # noqa: F401

    with open(a.prompt, encoding="utf-8") as f:
        prompt = f.read()
    base_kb = rss_kb("VmRSS")
    # ExecuTorch's XNNPACK delegate and its kernels share one threadpool
    # (libexecutorch_threadpool.so, a singleton the runner's bindings link
    # too); the runner never sizes it, so its default is the core count.
    portable_lib._unsafe_reset_threadpool(a.threads)
    got = portable_lib._threadpool_get_thread_count()
    if got != a.threads:
        sys.exit(f"run: the threadpool has {got} threads, not {a.threads}")
    t0 = time.perf_counter()
    runner = TextLLMRunner(a.pte, a.tokenizer)
    load_s = time.perf_counter() - t0

    pieces = []
    stats_box = []

    def gen(record):
        runner.reset()
        pieces.clear()
        stats_box.clear()
        cfg = GenerationConfig(echo=False, max_new_tokens=a.gen, temperature=0.0,
                               num_bos=0, num_eos=0)
        runner.generate(prompt, cfg,
                        token_callback=(pieces.append if record else None),
                        stats_callback=stats_box.append)
        if not stats_box:
            sys.exit("run: the runner reported no statistics")
        s = stats_box[-1]
        return {
            "prompt_tokens": s.num_prompt_tokens,
            "generated": s.num_generated_tokens,
            "prefill_ms": s.prompt_eval_end_ms - s.inference_start_ms,
            "ttft_ms": s.first_token_ms - s.inference_start_ms,
            # The first token comes from the prefill's logits; the other
            # generated - 1 each cost one decode call.
            "decode_ms": s.inference_end_ms - s.first_token_ms,
            "total_ms": s.inference_end_ms - s.inference_start_ms,
        }

    gen(False)  # warm-up
    reps = [gen(r == a.reps - 1) for r in range(a.reps)]
    for r in reps:
        if r["prompt_tokens"] <= 0 or r["generated"] < 2:
            sys.exit(f"run: nothing measured: {r}")

    def mean(key):
        return sum(r[key] for r in reps) / len(reps)

    out = {
        "threads": a.threads,
        "load_s": round(load_s, 3),
        "prompt_tokens": reps[0]["prompt_tokens"],
        "generated": [r["generated"] for r in reps],
        "pp_tok_s": round(reps[0]["prompt_tokens"] / (mean("prefill_ms") / 1000), 2),
        "tg_tok_s": round(sum(r["generated"] - 1 for r in reps) / len(reps)
                          / (mean("decode_ms") / 1000), 2),
        "ttft_ms": round(mean("ttft_ms"), 1),
        "reps": reps,
        # The pool after the generations: the runner did not resize it.
        "threadpool_after": portable_lib._threadpool_get_thread_count(),
        "rss_before_load_kb": base_kb,
        "peak_rss_kb": rss_kb("VmHWM"),
    }
    # The pieces of the last generation, one per generated token.
    out["pieces"] = list(pieces)
    result(out)


def _result_of(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("RESULT "):
                return json.loads(line[7:])
    sys.exit(f"no RESULT line in {path}")


def _leading_equal(tok, ref_ids, text):
    """How many leading tokens of the reference the text reproduces: the
    largest k with text starting with the decoded first k reference tokens
    (a text-level comparison, for a runner that prints text, not ids)."""
    k = 0
    while k < len(ref_ids) and text.startswith(_dec(tok, ref_ids[:k + 1])):
        k += 1
    return k


def cmd_agreement(a):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.hf_dir)
    with open(a.prompt, encoding="utf-8") as f:
        prompt = f.read()
    ref = _result_of(a.reference_log)["tokens"][: a.n]
    et_pieces = _result_of(a.executorch_log)["pieces"][: a.n]
    et_text = "".join(et_pieces)
    with open(a.etllm_out, encoding="utf-8", errors="replace") as f:
        out = f.read()
    if not out.startswith(prompt):
        sys.exit(f"agreement: {a.etllm_out} does not start with the prompt")
    # etllm-run prints the prompt, the generated text and one newline.
    et2_text = out[len(prompt):]
    if et2_text.endswith("\n"):
        et2_text = et2_text[:-1]
    # etllm-run prints text: split it with the same tokenizer to show it
    # beside the others (its first N tokens).
    et2_ids = tok.encode(et2_text, add_special_tokens=False)[: a.n]
    et2_text = _dec(tok, et2_ids)
    ref_pieces = [_dec(tok, [i]) for i in ref]
    et2_pieces = [_dec(tok, [i]) for i in et2_ids]
    et_tok_equal = 0
    while (et_tok_equal < min(len(ref_pieces), len(et_pieces))
           and et_pieces[et_tok_equal] == ref_pieces[et_tok_equal]):
        et_tok_equal += 1
    print(f"| # | float (transformers) | ExecuTorch 8da4w | etllm 8da4w |")
    print("|---|---|---|---|")
    for i in range(a.n):
        cells = [p[i] if i < len(p) else "" for p in (ref_pieces, et_pieces, et2_pieces)]
        print(f"| {i} | " + " | ".join(json.dumps(c) for c in cells) + " |")
    print(f"float:      {json.dumps(_dec(tok, ref))}")
    print(f"ExecuTorch: {json.dumps(et_text)}")
    print(f"etllm:      {json.dumps(et2_text)}")
    r = {
        "tokens": a.n,
        "executorch_leading_equal": _leading_equal(tok, ref, et_text),
        "executorch_leading_equal_by_piece": et_tok_equal,
        "etllm_leading_equal": _leading_equal(tok, ref, et2_text),
    }
    print(f"leading tokens equal to the float model's, of {a.n}: ExecuTorch "
          f"{r['executorch_leading_equal']}, etllm {r['etllm_leading_equal']}")
    result(r)


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def _fmt(xs, digits=1):
    if not xs:
        return "-"
    m = _median(xs)
    if len(xs) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ({min(xs):.{digits}f}-{max(xs):.{digits}f})"


def _time_file(path):
    """(wall seconds, peak RSS KB) from a /usr/bin/time -f file, or None."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"([0-9.]+) s wall, .*?(\d+) KB peak RSS", text)
    return (float(m.group(1)), int(m.group(2))) if m else None


def cmd_summary(a):
    runs = []
    with open(a.runs) as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    threads = sorted({r["threads"] for r in runs if r["system"] == "executorch"})
    et = {}  # (measure, threads) -> per-round values
    el = {}
    eb = {}
    for r in runs:
        if r["system"] == "executorch":
            d, t = r["run"], r["threads"]
            for k, v in (("pp", d["pp_tok_s"]), ("tg", d["tg_tok_s"]),
                         ("ttft", d["ttft_ms"]), ("rss", d["peak_rss_kb"] / 1024),
                         ("rss0", d["rss_before_load_kb"] / 1024),
                         ("rssm", (d["peak_rss_kb"] - d["rss_before_load_kb"]) / 1024)):
                et.setdefault((k, t), []).append(v)
    # etllm-run: the reps of a round together, as the runner's helper does.
    rounds = {}
    for r in runs:
        if r["system"] == "etllm":
            rounds.setdefault((r["round"], r["threads"]), []).append(r["run"])
    for (_, t), reps in sorted(rounds.items()):
        def mean(k):
            return sum(x[k] for x in reps) / len(reps)
        el.setdefault(("pp", t), []).append(reps[0]["prompt_tokens"] / (mean("prefill_ms") / 1000))
        el.setdefault(("tg", t), []).append(
            sum(x["generated_tokens"] - 1 for x in reps) / len(reps) / (mean("decode_ms") / 1000))
        el.setdefault(("ttft", t), []).append(mean("ttft_ms"))
        el.setdefault(("rss", t), []).append(max(x["peak_rss_bytes"] for x in reps) / 2**20)
        # etllm-run's whole peak (its process before the model is a few MiB).
        el.setdefault(("rssm", t), []).append(el[("rss", t)][-1])
    for r in runs:
        if r["system"] == "etllm-bench":
            d = r["run"]
            test = "pp" if d.get("n_gen", 0) == 0 else "tg"
            eb.setdefault((test, d["n_threads"]), []).append(d["avg_ts"])
    ex_et = _time_file(os.path.join(a.work_dir, "executorch-export.time"))
    ex_el = _time_file(os.path.join(a.work_dir, "etllm-export.time"))
    sizes = {}
    for name in os.listdir(a.work_dir):
        if name.endswith(".pte"):
            sizes["executorch" if "executorch" in name else "etllm"] = \
                os.path.getsize(os.path.join(a.work_dir, name))

    def ratio(x, y):
        return f"{_median(x) / _median(y):.2f}x" if x and y and _median(y) else "-"

    p, g = a.prompt, a.gen
    print(f"Medians over the rounds (range). Runner: ExecuTorch's TextLLMRunner and "
          f"etllm-run, the same {p}-token prompt, greedy, {g} new tokens; decode "
          f"counts the {g}-1 calls after the first token. etllm-bench: pp{p} and "
          f"tg{g} as llama-bench measures them (tg from an empty cache).")
    print()
    print("| measure | threads | ExecuTorch | etllm | etllm / ExecuTorch | etllm-bench |")
    print("|---|---|---|---|---|---|")
    if ex_et or ex_el:
        print(f"| export wall s | | {ex_et[0] if ex_et else '-'} | {ex_el[0] if ex_el else '-'} | "
              f"{ratio([ex_el[0]], [ex_et[0]]) if ex_et and ex_el else '-'} | |")
        print(f"| export peak RSS MiB | | {ex_et[1] // 1024 if ex_et else '-'} | "
              f"{ex_el[1] // 1024 if ex_el else '-'} | "
              f"{ratio([ex_el[1]], [ex_et[1]]) if ex_et and ex_el else '-'} | |")
    if sizes:
        print(f"| program bytes | | {sizes.get('executorch', '-')} | {sizes.get('etllm', '-')} | "
              f"{ratio([sizes['etllm']], [sizes['executorch']]) if len(sizes) == 2 else '-'} | |")
    for t in threads:
        for k, label, digits in (("pp", f"prefill (pp{p}) tok/s", 1),
                                 ("tg", f"decode (tg{g}) tok/s", 1),
                                 ("ttft", "time to first token ms", 0),
                                 ("rss", "peak RSS MiB", 0),
                                 ("rssm", "peak RSS above the process before the model MiB", 0)):
            extra = _fmt(eb.get((k, t), []), 1) if k in ("pp", "tg") else ""
            et_cell = _fmt(et.get((k, t), []), digits)
            if k == "rss":
                et_cell += f" ({_fmt(et.get(('rss0', t), []), 0)} before the model: Python, torch)"
            print(f"| {label} | {t} | {et_cell} | {_fmt(el.get((k, t), []), digits)} | "
                  f"{ratio(el.get((k, t)), et.get((k, t)))} | {extra} |")
    print()
    print("Ratios are etllm / ExecuTorch: above 1 is etllm faster for tok/s, "
          "below 1 is etllm smaller or quicker for time, bytes and RSS.")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("versions").set_defaults(fn=cmd_versions)
    s = sub.add_parser("hf-from-gguf")
    s.add_argument("gguf")
    s.add_argument("out_dir")
    s.set_defaults(fn=cmd_hf_from_gguf)
    s = sub.add_parser("meta-checkpoint")
    s.add_argument("hf_dir")
    s.add_argument("ckpt")
    s.add_argument("params")
    s.set_defaults(fn=cmd_meta_checkpoint)
    s = sub.add_parser("prompt")
    s.add_argument("hf_dir")
    s.add_argument("text")
    s.add_argument("n", type=int)
    s.add_argument("out")
    s.set_defaults(fn=cmd_prompt)
    s = sub.add_parser("reference")
    s.add_argument("hf_dir")
    s.add_argument("prompt")
    s.add_argument("n", type=int)
    s.set_defaults(fn=cmd_reference)
    s = sub.add_parser("run")
    s.add_argument("pte")
    s.add_argument("tokenizer")
    s.add_argument("prompt")
    s.add_argument("--threads", type=int, required=True)
    s.add_argument("--gen", type=int, required=True)
    s.add_argument("--reps", type=int, default=3)
    s.set_defaults(fn=cmd_run)
    s = sub.add_parser("agreement")
    s.add_argument("hf_dir")
    s.add_argument("prompt")
    s.add_argument("n", type=int)
    s.add_argument("reference_log")
    s.add_argument("executorch_log")
    s.add_argument("etllm_out")
    s.set_defaults(fn=cmd_agreement)
    s = sub.add_parser("summary")
    s.add_argument("runs")
    s.add_argument("work_dir")
    s.add_argument("prompt", type=int)
    s.add_argument("gen", type=int)
    s.set_defaults(fn=cmd_summary)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
