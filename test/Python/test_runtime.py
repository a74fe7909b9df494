"""etllm.Program and etllm.Runner over the runtime: logits as NumPy views of
the program's memory (no copy), generation through the runtime's tokenizer
and sampler with the statistics etllm-run reports."""

import gc
import json
import subprocess
import sys

import numpy as np
import pytest

import etllm


@pytest.fixture(scope="module")
def stories(tmp_path_factory, shared):
    out = tmp_path_factory.mktemp("stories") / "stories.pte"
    etllm.export(shared / "models" / "stories260K" / "stories260K.bin", out,
                 {"model": {"last_logits_only": False}},
                 tokenizer=shared / "models" / "stories260K" / "tok512.bin")
    return out


def test_forward_returns_views_of_the_program_memory(stories):
    prog = etllm.Program(stories)
    a = prog.forward([1, 403, 407], start_pos=0)
    assert a.shape == (1, 3, 512) and a.dtype == np.float32
    assert not a.flags.writeable and not a.flags.owndata
    assert a.base is prog  # keeps the program alive
    first = np.array(a)  # a copy survives the next call
    b = prog.forward([9, 10], start_pos=0)
    # The same planned memory: the first view now shows the new call's data
    # (views are valid until the next call).
    assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    assert np.array_equal(a[0, :2], b[0])
    assert not np.array_equal(a[0, :2], first[0, :2])
    # The view outlives the Python name of the program.
    del prog, b
    gc.collect()
    assert np.isfinite(a).all()


def test_forward_continues_from_the_cache(stories):
    prog = etllm.Program(stories)
    whole = np.array(prog.forward([1, 403, 407, 261], 0))
    prog.reset()
    prog.forward([1, 403], 0)
    tail = np.array(prog.forward([407, 261], 2))
    assert np.abs(whole[0, 2:] - tail[0]).max() <= 1e-4
    with pytest.raises(etllm.Error, match="tokens is empty"):
        prog.forward([], 0)
    with pytest.raises(etllm.Error, match="start_pos"):
        prog.forward([1], -1)
    with pytest.raises(etllm.Error):
        prog.forward([1] * 600, 0)  # beyond max_seq_len


def test_metadata_and_signature(stories):
    prog = etllm.Program(stories)
    md = prog.metadata
    assert md["vocab_size"] == 512 and md["max_seq_len"] == 512
    assert md["model_config"]["architecture"] == "LlamaForCausalLM"
    assert md["pipeline"] == "portable"
    assert md["stages"][0] == "import" and md["stages"][-1] == "serialize"
    assert [i[0] for i in prog.inputs] == ["i64", "i64"]
    assert prog.method_names == ["forward"]
    with pytest.raises(etllm.Error, match="no_such"):
        etllm.Program(stories, method="no_such")


def test_generate_matches_etllm_run(stories, shared, tool):
    r = etllm.Runner(stories)
    g = r.generate("Once upon a time", max_new_tokens=60, temperature=0)
    pieces = list(g)
    assert "".join(pieces) == g.text
    assert len(pieces) > 1  # streamed
    ref = (shared / "models" / "stories260K" /
           "greedy_once_upon_a_time_n64.txt").read_text()
    assert "Once upon a time" + g.text + "\n" == ref
    stats = g.stats
    assert stats is r.stats
    assert stats["prompt_tokens"] == 5 and stats["generated_tokens"] == 60
    assert stats["stop_reason"] == "max_new_tokens"
    run = subprocess.run([tool("etllm-run"), str(stories), "--prompt",
                          "Once upon a time", "-n", "60", "--temperature", "0",
                          "--stats-json"], capture_output=True, text=True,
                         check=True)
    assert run.stdout == ref
    assert set(json.loads(run.stderr.strip().splitlines()[-1])) == set(stats)


def test_sampling_callbacks_and_stop_strings(stories):
    r = etllm.Runner(stories)
    kw = dict(max_new_tokens=40, temperature=0.9, top_p=0.9, top_k=40,
              min_p=0.05, seed=7)
    got = []
    g = r.generate("Once upon a time", callback=got.append, **kw)
    assert "".join(got) == g.text
    assert r.generate("Once upon a time", **kw).text == g.text  # seeded
    assert r.generate("Once upon a time", **dict(kw, seed=8)).text != g.text
    g = r.generate("Once upon a time", max_new_tokens=60, temperature=0,
                   stop=["Lily"])
    assert g.stats["stop_reason"] == "stop_string"
    assert g.text == ", there was a little girl named "
    with pytest.raises(etllm.Error, match="top_p"):
        r.generate("x", top_p=0).text


@pytest.mark.parametrize("kw, message", [
    (dict(temperature=float("nan")), "temperature: nan is not a finite"),
    (dict(temperature=float("inf")), "temperature: inf is not a finite"),
    (dict(temperature=-1.0), "temperature: -1 is out of range"),
    (dict(top_p=float("nan")), "top_p: nan is not a finite"),
    (dict(min_p=2.0), "min_p: 2 is out of range"),
    (dict(repetition_penalty=float("nan")), "repetition_penalty: nan"),
    (dict(repetition_penalty=0.0), "repetition_penalty: 0 is out of range"),
    (dict(max_new_tokens=-1), "max_new_tokens: -1 is out of range"),
    (dict(top_k=-3), "top_k: -3 is out of range"),
    (dict(sink_tokens=-1), "sink_tokens: -1 is out of range"),
])
def test_generation_numbers_are_checked(stories, kw, message):
    # The runtime's one check (llm::validate), the one etllm-run's flags and
    # the C API use: NaN, infinity and out-of-range values are refused.
    r = etllm.Runner(stories)
    with pytest.raises(etllm.Error, match=message):
        r.generate("Once", **kw).text


def test_a_full_context_shifts_when_asked(tmp_path, shared):
    # A 32-position context: stopping there (the default), or shifting and
    # going on to 4x the context (docs/Runtime.md).
    out = tmp_path / "short.pte"
    etllm.export(shared / "models" / "stories260K" / "stories260K.gguf", out,
                 {"model": {"max_seq_len": 32}})
    r = etllm.Runner(out)
    g = r.generate("Once upon a time", max_new_tokens=128, temperature=0)
    g.text
    assert g.stats["stop_reason"] == "context"
    assert g.stats["context_shifts"] == 0
    g2 = r.generate("Once upon a time", max_new_tokens=128, temperature=0,
                    shift_context=True, sink_tokens=4)
    assert g2.text.startswith(g.text)
    assert g2.stats["stop_reason"] == "max_new_tokens"
    assert g2.stats["generated_tokens"] == 128
    assert g2.stats["context_shifts"] >= 4
    assert g2.stats["context_tokens"] <= 32


def test_thread_count_is_bounded_by_the_machine(stories):
    with pytest.raises(etllm.Error, match="hardware threads"):
        etllm.Runner(stories, threads=100000)
    with pytest.raises(etllm.Error, match="threads: 0 is out of range"):
        etllm.Program(stories, threads=0)


def test_memory_budget_refuses_at_load(stories):
    with pytest.raises(etllm.Error, match=r"the program plans \d+ bytes .* "
                       r"more than the memory limit of 1024 bytes"):
        etllm.Runner(stories, max_memory=1024)
    with pytest.raises(etllm.Error, match="memory limit of 1024 bytes"):
        etllm.Program(stories, max_memory=1024)
    etllm.Runner(stories, max_memory=1 << 30)  # fits


def test_more_sampling(stories):
    r = etllm.Runner(stories)
    with pytest.raises(ZeroDivisionError):
        r.generate("Once", max_new_tokens=5, callback=lambda s: 1 / 0)
    assert r.encode("Once", add_bos=True)[0] == 1
    assert r.max_seq_len == 512


def test_profile_times_the_calls_while_on(stories):
    prog = etllm.Program(stories)
    assert prog.profile is None and not prog.profiling
    prog.forward([1, 403], 0)  # not profiled
    prog.profiling = True
    prog.forward([1, 403, 407], 0)
    prog.forward([261], 3)
    prog.profiling = False
    prog.forward([9], 4)  # not profiled
    p = prog.profile
    assert p["executions"] == 2 and p["delegate_calls"] == 0
    ops = {(o["op"], o["where"]): o for o in p["ops"]}
    # The portable program: 5 layers of 7 linears and the output layer.
    assert ops[("linear", "portable")]["calls"] == 2 * 36
    assert ops[("linear", "portable")]["nodes"] == 2 * 36
    assert 0 < sum(o["seconds"] for o in p["ops"]) <= p["seconds"]
    seconds = [o["seconds"] for o in p["ops"]]
    assert seconds == sorted(seconds, reverse=True)
    assert "| linear                | portable |       36.0 |" in p["table"]
    prog.profiling = True  # a fresh profile
    assert prog.profiling and prog.profile["executions"] == 0


def test_exit_with_a_generation_unread_is_clean(stories, shared):
    # The text is never read: the interpreter waits for the generation's
    # thread at exit instead of aborting inside the runtime.
    script = (
        "import etllm\n"
        f"r = etllm.Runner({str(stories)!r})\n"
        "print(r.generate('Once upon a time', max_new_tokens=20,"
        " temperature=0))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "terminate" not in run.stderr


def test_a_static_program_generates_what_forward_does(tmp_path, shared, stories):
    # prefill over 8 tokens and decode over one, the KV caches the runner's.
    static = tmp_path / "static.pte"
    etllm.export(shared / "models" / "stories260K" / "stories260K.bin", static,
                 {"model": {"static_prefill_chunk": 8}},
                 tokenizer=shared / "models" / "stories260K" / "tok512.bin")
    prefill = etllm.Program(static, method="prefill")
    assert set(prefill.method_names) == {"prefill", "decode"}
    prompt = "Once upon a time, there was a little girl named Lily. She"
    want = etllm.Runner(stories).generate(prompt, max_new_tokens=30,
                                          temperature=0).text
    got = etllm.Runner(static).generate(prompt, max_new_tokens=30,
                                        temperature=0).text
    assert len(want) > 40 and got == want
