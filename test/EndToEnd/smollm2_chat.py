"""A scripted chat with SmolLM2-135M-Instruct, checked against transformers.

usage: smollm2_chat.py ETLLM_RUN PROGRAM GGUF

Runs `etllm-run PROGRAM --chat` greedily over three user messages (stdin
not a terminal: one message per line, one reply per line on stdout) with
`--verbose-prompt` and `--stats-json`, then checks, printing one line per
check and "smollm2_chat: PASS" at the end (exit status 1 on any failure):

- every turn's rendering of the conversation (what the model was fed)
  equals, byte for byte, what transformers' `apply_chat_template` renders
  for the same messages with the tokenizer and chat template transformers
  loads from the same GGUF (`AutoTokenizer.from_pretrained(...,
  gguf_file=...)`), add_generation_prompt=True;
- the first turn prefilled as many tokens as transformers' tokenizer makes
  of that rendering, and every later turn reused the KV cache (prefilling
  only the new suffix);
- every reply ended at the end of the turn (stop reason "eos": the
  template's <|im_end|>), and no reply shows the end-of-turn marker.
"""

import json
import os
import re
import subprocess
import sys

SYSTEM = "You are a helpful assistant. Answer in one short sentence."
USERS = [
    "What is the capital of France?",
    "What is the capital of Germany?",
    "Thank you!",
]


def run_chat(etllm_run, program):
    cmd = [etllm_run, program, "--chat", "--system", SYSTEM,
           "--temperature", "0", "-n", "64", "--threads", "2",
           "--verbose-prompt", "--stats-json"]
    r = subprocess.run(cmd, input=("\n".join(USERS) + "\n").encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.exit("smollm2_chat: etllm-run failed (%d):\n%s" %
                 (r.returncode, r.stderr.decode(errors="replace")))
    # stderr: "etllm-run: prompt of turn N (B bytes):\n" + B bytes + "\n",
    # then the turn's statistics as one JSON line.
    err, prompts, stats, i = r.stderr, {}, [], 0
    header = re.compile(rb"etllm-run: prompt of turn (\d+) \((\d+) bytes\):\n")
    while i < len(err):
        m = header.match(err, i)
        if m:
            n, size = int(m.group(1)), int(m.group(2))
            start = m.end()
            prompts[n] = err[start:start + size]
            i = start + size + 1
            continue
        end = err.find(b"\n", i)
        end = len(err) if end < 0 else end
        line = err[i:end]
        if line.startswith(b"{"):
            stats.append(json.loads(line))
        i = end + 1
    replies = r.stdout.decode().split("\n")
    if replies[-1] != "" or len(replies) != len(USERS) + 1:
        sys.exit("smollm2_chat: expected one reply per line, got %r" %
                 r.stdout)
    return prompts, stats, replies[:-1]


def main():
    etllm_run, program, gguf = sys.argv[1:4]
    prompts, stats, replies = run_chat(etllm_run, program)

    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(os.path.dirname(gguf),
                                        gguf_file=os.path.basename(gguf))
    failed = 0

    def check(ok, what):
        nonlocal failed
        print(("PASS " if ok else "FAIL ") + what)
        failed += not ok

    messages = [{"role": "system", "content": SYSTEM}]
    for k, user in enumerate(USERS, start=1):
        messages.append({"role": "user", "content": user})
        ref = tok.apply_chat_template(messages, tokenize=False,
                                      add_generation_prompt=True).encode()
        got = prompts.get(k, b"")
        same = got == ref
        if not same:
            at = next((j for j in range(min(len(got), len(ref)))
                       if got[j] != ref[j]), min(len(got), len(ref)))
            print("turn %d differs at byte %d:\n  etllm:        %r\n"
                  "  transformers: %r" % (k, at, got[at:at + 60],
                                          ref[at:at + 60]))
        check(same, "turn %d: the rendered prompt equals transformers' "
              "apply_chat_template (%d bytes)" % (k, len(ref)))
        s = stats[k - 1]
        if k == 1:
            n = len(tok(ref.decode(), add_special_tokens=False)["input_ids"])
            check(s["prompt_tokens"] == n and s["cached_tokens"] == 0,
                  "turn 1: prefilled %d tokens (transformers' tokenizer: "
                  "%d)" % (s["prompt_tokens"], n))
        else:
            check(s["cached_tokens"] > 0 and not s["reprefilled"],
                  "turn %d: reused %d cached tokens, prefilled %d" %
                  (k, s["cached_tokens"], s["prompt_tokens"]))
        check(s["stop_reason"] == "eos" and "<|im_end|>" not in replies[k - 1]
              and replies[k - 1].strip() != "",
              "turn %d: the reply ended at the end of the turn (%s): %r" %
              (k, s["stop_reason"], replies[k - 1]))
        messages.append({"role": "assistant", "content": replies[k - 1]})
    print("smollm2_chat: " + ("PASS" if not failed else
                              "FAIL (%d checks)" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
