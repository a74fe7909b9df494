"""Renders chat templates with etllm's interpreter and with jinja2
configured as transformers configures it, over a set of conversations, and
checks that the two agree byte for byte (or fail alike: a raise_exception in
the template must be reported by both, with the same message).

usage: render_vs_jinja2.py [--expect-ok] RENDER_TOOL WORK_DIR TEMPLATE...

--expect-ok: every rendering must succeed (for the feature template, so that
a mistake in it cannot make both sides fail alike and pass).

The Jinja environment mirrors transformers' _compile_jinja_template:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with
loop controls and a `generation` block, `tojson` = json.dumps(ensure_ascii=
False, ...), and the globals raise_exception and strftime_now; render
receives messages, tools=None, documents=None, add_generation_prompt and the
special tokens, as apply_chat_template passes them.
"""
import json
import os
import subprocess
import sys
from datetime import datetime

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit("render_vs_jinja2: jinja2 is missing (run scripts/setup.sh, "
             "which installs it)")


class Raised(Exception):
    pass


class Generation(Extension):
    """transformers' AssistantTracker: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_gen"), [], [], body).set_lineno(lineno)

    def _gen(self, caller):
        return caller()


def environment():
    def raise_exception(message):
        raise Raised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def msg(role, content):
    return {"role": role, "content": content}


SYSTEM = "You are a helpful assistant."
TRICKY = "  Hello, \"world\"\n\twith 'quotes' & <tags>, héllo 世界 🙂  "

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string"}},
                       "required": ["city"]},
    },
}]


def conversations():
    """(name, context) pairs: system / no system, 1-3 turns, with and
    without the generation prompt, odd contents, tools."""
    base = []
    one = [msg("user", "Hello")]
    two = [msg("user", "Hello"), msg("assistant", "Hi there!"),
           msg("user", "Who are you?")]
    three = [msg("user", "Hello"), msg("assistant", "Hi there!"),
             msg("user", "Who are you?"), msg("assistant", "   I am an assistant   "),
             msg("user", "Tell me a story.")]
    for name, messages in [("1turn", one), ("2turns", two), ("3turns", three)]:
        for system in (False, True):
            m = ([msg("system", SYSTEM)] if system else []) + messages
            for gen in (True, False):
                base.append((f"{name}{'-system' if system else ''}-gen{int(gen)}",
                             {"messages": m, "add_generation_prompt": gen}))
    base.append(("ends-with-assistant",
                 {"messages": [msg("user", "Hi"), msg("assistant", "Hello!")],
                  "add_generation_prompt": False}))
    base.append(("tricky-content",
                 {"messages": [msg("system", TRICKY), msg("user", TRICKY),
                               msg("assistant", TRICKY), msg("user", TRICKY)],
                  "add_generation_prompt": True}))
    base.append(("empty-content",
                 {"messages": [msg("user", ""), msg("assistant", ""), msg("user", "")],
                  "add_generation_prompt": True}))
    base.append(("thinking",
                 {"messages": [msg("user", "2+2?"),
                               msg("assistant", "<think>\nadd them\n</think>\n\n4"),
                               msg("user", "and 3+3?")],
                  "add_generation_prompt": True}))
    base.append(("no-thinking",
                 {"messages": [msg("user", "Hi")], "add_generation_prompt": True,
                  "enable_thinking": False}))
    base.append(("date-string",
                 {"messages": [msg("system", SYSTEM), msg("user", "What day is it?")],
                  "add_generation_prompt": True, "date_string": "01 Jan 2025"}))
    base.append(("consecutive-users",
                 {"messages": [msg("user", "a"), msg("user", "b")],
                  "add_generation_prompt": True}))
    base.append(("tools",
                 {"messages": [msg("user", "Weather in Paris?")],
                  "add_generation_prompt": True, "tools": TOOLS}))
    base.append(("tool-call",
                 {"messages": [
                     msg("system", SYSTEM),
                     msg("user", "Weather in Paris?"),
                     {"role": "assistant", "content": "",
                      "tool_calls": [{"id": "call12345", "type": "function",
                                      "function": {"name": "get_weather",
                                                   "arguments": {"city": "Paris"}}}]},
                     {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
                      "content": "{\"temperature\": 21}"},
                 ], "add_generation_prompt": True, "tools": TOOLS}))
    out = []
    for name, ctx in base:
        full = {"tools": None, "documents": None, "bos_token": "<s>",
                "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
        full.update(ctx)
        out.append((name, full))
    return out


def main():
    args = sys.argv[1:]
    expect_ok = bool(args) and args[0] == "--expect-ok"
    if expect_ok:
        args = args[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    tool, work, templates = args[0], args[1], args[2:]
    os.makedirs(work, exist_ok=True)
    env = environment()
    failures = 0
    checked = 0
    for path in templates:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        compiled = env.from_string(source)
        for name, ctx in conversations():
            ctx_path = os.path.join(work, "context.json")
            with open(ctx_path, "w", encoding="utf-8") as f:
                json.dump(ctx, f, ensure_ascii=False)
            try:
                expected = ("ok", compiled.render(**ctx).encode("utf-8"))
            except Raised as e:
                expected = ("raised", str(e).encode("utf-8"))
            except jinja2.TemplateError as e:
                expected = ("error", str(e).encode("utf-8"))
            except Exception as e:  # TypeError etc. inside the template
                expected = ("error", repr(e).encode("utf-8"))
            r = subprocess.run([tool, path, ctx_path], capture_output=True)
            if r.returncode == 0:
                got = ("ok", r.stdout)
            elif r.returncode == 2 and r.stderr.startswith(b"raised: "):
                got = ("raised", r.stderr[len(b"raised: "):].rstrip(b"\n"))
            else:
                got = ("error", r.stderr)
            checked += 1
            same = got[0] == expected[0] and (got[0] == "error" or got[1] == expected[1])
            if expect_ok and expected[0] != "ok":
                same = False
            label = f"{os.path.basename(path)} / {name}"
            if same:
                print(f"PASS {label} ({expected[0]})")
            else:
                failures += 1
                print(f"FAIL {label}")
                print(f"  jinja2: {expected[0]}: {expected[1]!r}")
                print(f"  etllm:  {got[0]}: {got[1]!r}")
    print(f"{checked - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
