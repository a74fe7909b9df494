"""Drives `etllm-run --chat` through a pseudo-terminal, as a person would.

usage: chat_pty.py BIN_DIR TEMPLATE WORK_DIR

Builds a tiny random Qwen2 model (etllm-gen-checkpoint) with a byte-level
tokenizer.json (256 byte tokens, no merges, and the ChatML special tokens)
and the given chat template in its tokenizer_config.json, exports it, and:

Session 1: three turns. Every turn's prefill must be exactly the tokens that
are new: the count is computed here independently, by rendering the
conversation with jinja2 and counting tokens (one per byte, one per
special token) after the previous reply; the second and third turns must
reuse the whole KV cache of the turn before (--stats-json, per turn).

Session 2: a long reply is stopped with Ctrl-C: the reply ends ("reply
interrupted"), the prompt comes back and the next turn reuses the cache;
that turn runs into the context limit and says so; the turn after it is
refused with a clear "context is full" message, and the chat still answers
after /reset; /quit leaves with status 0.
"""
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
TIMEOUT = 120  # seconds for any one wait (the machine may be busy)


def fail(msg):
    sys.exit("chat_pty: FAIL: " + msg)


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def write_tokenizer(path):
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    added = [{"id": 256 + k, "content": s, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for k, s in enumerate(SPECIALS)]
    tok = {
        "version": "1.0",
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                          "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": []},
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)


def ntokens(text):
    """Tokens of `text` with the byte-level, merge-free tokenizer."""
    n = 0
    pattern = "|".join(re.escape(s) for s in SPECIALS)
    for part in re.split("(" + pattern + ")", text):
        if part in SPECIALS:
            n += 1
        else:
            n += len(part.encode("utf-8"))
    return n


def renderer(template_source):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    t = env.from_string(template_source)

    def render(messages):
        return t.render(messages=messages, tools=None, documents=None,
                        add_generation_prompt=True, bos_token="",
                        eos_token="<|im_end|>")
    return render


class Chat:
    """etllm-run --chat on a pty (stdin and stdout a terminal, stderr to a
    file, so the per-turn JSON stays apart from the conversation)."""

    def __init__(self, argv, stderr_path):
        self.stderr_path = stderr_path
        err = open(stderr_path, "wb")
        pid, fd = pty.fork()
        if pid == 0:
            os.dup2(err.fileno(), 2)
            os.execv(argv[0], argv)
        err.close()
        self.pid, self.fd, self.out = pid, fd, b""

    def read_until(self, pattern, start):
        deadline = time.time() + TIMEOUT
        while True:
            m = re.search(pattern, self.out[start:], re.S)
            if m:
                return start + m.end()
            left = deadline - time.time()
            if left <= 0:
                fail(f"timed out waiting for {pattern!r}; output so far: "
                     f"{self.out[-400:]!r}; stderr: {self.stderr()[-400:]!r}")
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:
                    data = b""
                if not data:
                    fail(f"etllm-run ended while waiting for {pattern!r}; "
                         f"stderr: {self.stderr()[-600:]!r}")
                self.out += data

    def send(self, line):
        os.write(self.fd, line.encode() + b"\r")

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stats(self):
        return [json.loads(l) for l in self.stderr().splitlines()
                if l.startswith("{")]

    def wait_for_stats(self, count):
        deadline = time.time() + TIMEOUT
        while len(self.stats()) < count:
            if time.time() > deadline:
                fail(f"no statistics for turn {count}; stderr: {self.stderr()!r}")
            time.sleep(0.05)
        return self.stats()[count - 1]

    def finish(self):
        deadline = time.time() + TIMEOUT
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return status
            if time.time() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                fail("etllm-run did not leave after /quit")
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    os.read(self.fd, 4096)
                except OSError:
                    pass


def pending(stat):
    """1 when the last generated token was shown but never fed back (the
    reply stopped for a reason other than an end-of-turn token)."""
    return 1 if stat["generated_tokens"] > 0 and stat["stop_reason"] in (
        "max_new_tokens", "interrupted", "context") else 0


def main():
    bin_dir, template_path, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    tool = lambda name: os.path.join(bin_dir, name)
    with open(template_path, encoding="utf-8") as f:
        template = f.read()
    model = os.path.join(work, "qwen2")
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "qwen2", "--format", "hf",
                    "--layers", "4", "--hidden", "128", "--heads", "4", "--kv-heads", "2",
                    "--ffn", "256", "--vocab", str(256 + len(SPECIALS)),
                    "--max-seq", "2048", "--seed", "3", "-o", model], check=True)
    with open(os.path.join(model, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": template, "eos_token": "<|im_end|>",
                   "bos_token": None}, f)
    tokenizer = os.path.join(work, "tokenizer.json")
    write_tokenizer(tokenizer)
    program = os.path.join(work, "chat.pte")
    subprocess.run([tool("etllm-export"), "--quiet", "--model", model,
                    "--tokenizer", tokenizer, "-o", program], check=True)
    render = renderer(template)

    # Session 1: three turns, each prefilling only its new tokens.
    users = ["Hello there", "What is 2 + 2?", "Thank you, bye"]

    def three_turns(extra, name):
        chat = Chat([tool("etllm-run"), program, "--chat", "--temperature", "0",
                     "-n", "24", "--stats-json", "--threads", "1"] + extra,
                    os.path.join(work, name + ".err"))
        pos = chat.read_until(rb"> ", 0)
        stats = []
        for k, text in enumerate(users):
            chat.send(text)
            pos = chat.read_until(rb"\n> ", pos)
            stats.append(chat.wait_for_stats(k + 1))
        chat.send("/quit")
        status = chat.finish()
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            fail(f"{name} ended with status {status}")
        return chat.out[:pos], stats

    transcript, stats = three_turns([], "session1")
    markers = [f"\x01REPLY{k}\x01" for k in range(len(users))]
    msgs = []
    for k, text in enumerate(users):
        msgs.append({"role": "user", "content": text})
        rendered = render(msgs)
        s = stats[k]
        if k == 0:
            expected, cached = ntokens(rendered), 0
        else:
            glue = rendered.split(markers[k - 1])[1]
            expected = ntokens(glue) + pending(stats[k - 1])
            cached = stats[k - 1]["context_tokens"]
        print(f"turn {k + 1}: prefilled {s['prompt_tokens']} (expected {expected}), "
              f"reused {s['cached_tokens']} (expected {cached}), "
              f"generated {s['generated_tokens']} ({s['stop_reason']})")
        if s["prompt_tokens"] != expected or s["cached_tokens"] != cached:
            fail(f"turn {k + 1} prefilled {s['prompt_tokens']} tokens reusing "
                 f"{s['cached_tokens']}; expected {expected} reusing {cached}")
        if s["reprefilled"] or s["turn"] != k + 1:
            fail(f"turn {k + 1}: unexpected stats {s}")
        msgs.append({"role": "assistant", "content": markers[k]})
    print("session 1: three turns, each prefilling only its new tokens")

    # The same conversation prefilling everything every turn: the replies
    # (greedy) must be the same bytes.
    full, full_stats = three_turns(["--no-kv-reuse"], "session1-full")
    if [s["cached_tokens"] for s in full_stats] != [0, 0, 0]:
        fail(f"--no-kv-reuse reused the cache: {full_stats}")
    if full != transcript:
        fail(f"reusing the KV cache changed the replies:\n{transcript!r}\n"
             f"vs\n{full!r}")
    print("the replies equal those of a full prefill every turn")

    # Session 2: Ctrl-C, then the context limit.
    chat = Chat([tool("etllm-run"), program, "--chat", "--temperature", "0",
                 "-n", "100000", "--stats-json", "--threads", "1",
                 "--no-context-shift",
                 "--system", "You are a test."],
                os.path.join(work, "session2.err"))
    pos = chat.read_until(rb"> ", 0)
    chat.send("Write a very long story")
    pos = chat.read_until(rb"story\r?\n.", pos)  # the echo, then reply bytes
    os.write(chat.fd, b"\x03")  # Ctrl-C: SIGINT from the terminal
    pos = chat.read_until(rb"\n> ", pos)
    first = chat.wait_for_stats(1)
    if first["stop_reason"] != "interrupted":
        fail(f"the reply was not interrupted: {first}")
    if "reply interrupted" not in chat.stderr():
        fail("no 'reply interrupted' message")
    print(f"Ctrl-C stopped the reply after {first['generated_tokens']} tokens")
    chat.send("Go on")
    pos = chat.read_until(rb"\n> ", pos)
    second = chat.wait_for_stats(2)
    if second["cached_tokens"] != first["context_tokens"] or second["reprefilled"]:
        fail(f"the turn after Ctrl-C did not reuse the cache: {second}")
    if second["stop_reason"] != "context":
        fail(f"the long reply should have filled the context: {second}")
    if "the context is full (2048 tokens" not in chat.stderr():
        fail(f"no context-full message: {chat.stderr()!r}")
    chat.send("And now?")
    pos = chat.read_until(rb"\n> ", pos)
    if "the context is full: the conversation needs" not in chat.stderr():
        fail(f"a turn past the context was not refused clearly: {chat.stderr()!r}")
    chat.send("/reset")
    pos = chat.read_until(rb"\n> ", pos)
    chat.send("Hello again")
    pos = chat.read_until(rb"again\r?\n.", pos)
    os.write(chat.fd, b"\x03")
    pos = chat.read_until(rb"\n> ", pos)
    third = chat.wait_for_stats(3)
    if third["cached_tokens"] != 0 or third["turn"] != 1:
        fail(f"/reset did not start a new conversation: {third}")
    chat.send("/quit")
    status = chat.finish()
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        fail(f"session 2 ended with status {status}")
    print("session 2: Ctrl-C ended the reply, not the chat; the context limit "
          "was reported; /reset and /quit work")
    print("chat_pty: PASS")


if __name__ == "__main__":
    main()
