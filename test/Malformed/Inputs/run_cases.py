#!/usr/bin/env python3
"""The malformed-input suite: runs every case of cases.txt and checks it.

A case is one line of cases.txt:

    name | inputs | command | expectation

- inputs: "-" or "FILE = EXPR; FILE = EXPR ...": each EXPR is a Python
  expression over the generators below (bytes or str), written to FILE in the
  case's own directory. Hand-made inputs live next to this script and are
  read with inp("name").
- command: run in the case's directory, split like a shell line; {shared}
  is the shared test data, {program} a good stories260K program (with its
  tokenizer), {model} stories260K.bin, {deep100k} 100,000 "[";
  {lora_program} stories260K with LoRA hooks on q_proj and v_proj (max rank
  4), {lora_peft} a PEFT adapter for it and {lora_adapter} that adapter as
  an adapter file (etllm-export-lora); lora_adapter() reads its bytes.
- expectation: "OK" (the command must succeed), or the texts the error must
  contain, separated by " && " (they name the file or flag and the problem).

Every failing case must: exit with a status in 1..127 (no signal, no
abort), print its error in at most 3 lines on stderr with none of the IR
(no "see current operation", no module), leave no file behind (no output,
no .tmp), and finish within 2 seconds of CPU time and 512 MiB. Successful cases must
finish within the same bounds. Memory is bounded with RLIMIT_AS (ulimit -v)
and checked from the peak resident size; under AddressSanitizer
(ETLLM_SANITIZED=1) only the resident size is checked, and the time limit is
multiplied by ETLLM_TIME_SCALE (default 1; sanitize.sh sets 5).
"""
import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import threading
import time

TIME_LIMIT = 2.0
MEMORY_LIMIT = 512 << 20
MAX_ERROR_LINES = 3
# What an IR dump shows (a diagnostic's one-line source excerpt is fine): the
# operation MLIR attaches to an error, the pass manager's IR printing.
IR_MARKERS = ["see current operation", "IR Dump", '"builtin.module"() (']


# ---------------------------------------------------------------------------
# Generators for the inputs column.

INPUTS = os.path.dirname(os.path.abspath(__file__))
SHARED = None


def inp(name):
    with open(os.path.join(INPUTS, name), "rb") as f:
        return f.read()


def repo(name):
    """A file of the repository (a kept fuzz regression, say)."""
    with open(os.path.join(INPUTS, "..", "..", "..", name), "rb") as f:
        return f.read()


def shared(name):
    with open(os.path.join(SHARED, name), "rb") as f:
        return f.read()


def nest(prefix, opener, closer, depth, inner="", suffix=""):
    return prefix + opener * depth + inner + closer * depth + suffix


def gpt2(**changes):
    """GPT-2's tokenizer.json with top-level keys replaced (None deletes)."""
    t = json.loads(shared("tokenizers/gpt2/tokenizer.json"))
    for k, v in changes.items():
        if v is None:
            t.pop(k, None)
        else:
            t[k] = v
    return json.dumps(t)


def gpt2_text(key, raw):
    """GPT-2's tokenizer.json with `key` set to the raw JSON text `raw`."""
    t = json.loads(shared("tokenizers/gpt2/tokenizer.json"))
    t[key] = "@@RAW@@"
    return json.dumps(t).replace('"@@RAW@@"', raw)


def deep_sequence(kind, items, leaf, depth):
    """`depth` nested {"type": "Sequence", items: [...]} around `leaf`."""
    return (('{"type": "Sequence", "%s": [' % items) * depth + leaf +
            "]}" * depth)


def tiny_json(**changes):
    """A four-token tokenizer.json (fits any program's vocabulary)."""
    t = {"model": tiny_bpe()}
    t.update(changes)
    return json.dumps(t)


def setbyte(data, offset, value):
    b = bytearray(data)
    b[offset] = value
    return bytes(b)


def tiny_bpe(**model_changes):
    m = {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "!": 3},
         "merges": ["a b"]}
    m.update(model_changes)
    return m


def tiktoken_lines(n):
    lines = shared("tokenizers/llama3/tokenizer.model").split(b"\n")
    return b"\n".join(lines[:n]) + b"\n"


def truncate(data, n):
    return data[:n]


def flip(data, offset, mask=0xFF):
    b = bytearray(data)
    b[offset] ^= mask
    return bytes(b)


def u32(v):
    return int(v).to_bytes(4, "little", signed=v < 0)


# ---------------------------------------------------------------------------
# GGUF files with changed metadata: gguf_edit(data, key=value...) parses the
# header (GGUF v2/v3), replaces or adds the key/value pairs (None removes a
# key; a value is (type, payload) with the types below, or a Python str,
# int, float or list of them taking the old entry's type) and writes the file
# back with the tensor data realigned.

GGUF_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f",
               7: "?", 10: "Q", 11: "q", 12: "d"}
GGUF_STRING, GGUF_ARRAY = 8, 9


def _gguf_read(data):
    import struct
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        v = data[pos:pos + n].decode("utf-8", "surrogateescape")
        pos += n
        return v

    def value(t):
        if t == GGUF_STRING:
            return string()
        if t == GGUF_ARRAY:
            et, n = take("I"), take("Q")
            return (et, [value(et) for _ in range(n)])
        return take(GGUF_SCALAR[t])

    assert data[:4] == b"GGUF"
    pos = 4
    version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    kvs = {}
    for _ in range(n_kv):
        k = string()
        t = take("I")
        kvs[k] = (t, value(t))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    align = kvs.get("general.alignment", (4, 32))[1]
    start = (pos + align - 1) // align * align
    return version, kvs, infos, data[start:]


def _gguf_write(version, kvs, infos, blob):
    import struct
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(infos), len(kvs)))

    def string(v):
        b = v.encode("utf-8", "surrogateescape")
        out.extend(struct.pack("<Q", len(b)) + b)

    def value(t, v):
        if t == GGUF_STRING:
            string(v)
        elif t == GGUF_ARRAY:
            et, items = v
            out.extend(struct.pack("<IQ", et, len(items)))
            for x in items:
                value(et, x)
        else:
            out.extend(struct.pack("<" + GGUF_SCALAR[t], v))

    for k, (t, v) in kvs.items():
        string(k)
        out.extend(struct.pack("<I", t))
        value(t, v)
    for name, dims, t, off in infos:
        string(name)
        out.extend(struct.pack("<I", len(dims)))
        for d in dims:
            out.extend(struct.pack("<Q", d))
        out.extend(struct.pack("<IQ", t, off))
    align = kvs.get("general.alignment", (4, 32))[1]
    out.extend(bytes(-len(out) % align))
    return bytes(out) + blob


def safetensors_edit(data, **tensors):
    """`data` (a safetensors file) with header entries changed: name=dict
    of fields to set (a '__' in a name stands for '.')."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    for name, fields in tensors.items():
        header[name.replace("__", ".")].update(fields)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + n:]


def safetensors_offsets(data, name):
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + n])[name]["data_offsets"]


def gguf_get(data, key):
    """The value of `key` (arrays as Python lists)."""
    t, v = _gguf_read(data)[1][key]
    return v[1] if t == GGUF_ARRAY else v


def gguf_edit(data, **changes):
    """`data` with the keys changed (a '__' in a name stands for '.')."""
    version, kvs, infos, blob = _gguf_read(data)
    for k, v in changes.items():
        k = k.replace("__", ".")
        if v is None:
            kvs.pop(k, None)
        elif isinstance(v, tuple):
            kvs[k] = v
        elif k in kvs and kvs[k][0] == GGUF_ARRAY:
            kvs[k] = (GGUF_ARRAY, (kvs[k][1][0], list(v)))
        elif k in kvs:
            kvs[k] = (kvs[k][0], v)
        else:
            kvs[k] = (GGUF_STRING, v) if isinstance(v, str) else (5, v)
    return _gguf_write(version, kvs, infos, blob)


def stories_gguf(**changes):
    """The shared stories260K.gguf (512 tokens) with metadata changed."""
    return gguf_edit(shared("models/stories260K/stories260K.gguf"), **changes)


def stories_vocab(n):
    """The first n entries of stories260K.gguf's tokens, scores, types."""
    d = shared("models/stories260K/stories260K.gguf")
    return {k: gguf_get(d, "tokenizer.ggml." + k)[:n]
            for k in ("tokens", "scores", "token_type")}


# ---------------------------------------------------------------------------
# Corrupt programs: a good program with one field of one kernel call changed.
# A minimal flatbuffers reader over runtime/schema/program.fbs (field ids in
# declaration order): Program.methods = 1, Method.instructions = 4,
# InstructionEntry.instruction = 1 (0 is its union type), KernelCall.op = 0,
# .inputs = 1, .outputs = 2, .ints = 3, .floats = 4.

PROGRAM = None

KERNEL_CALL_FIELDS = {"inputs": (1, 4, "<I"), "outputs": (2, 4, "<I"),
                      "ints": (3, 8, "<q"), "floats": (4, 8, "<d")}


def _field(b, table, field):
    """Absolute offset of `field` of the table at `table`, or None."""
    import struct
    vt = table - struct.unpack_from("<i", b, table)[0]
    vtsize = struct.unpack_from("<H", b, vt)[0]
    if 4 + 2 * field >= vtsize:
        return None
    off = struct.unpack_from("<H", b, vt + 4 + 2 * field)[0]
    return table + off if off else None


def _deref(b, at):
    import struct
    return at + struct.unpack_from("<I", b, at)[0]


def _vector(b, at):
    """(first element offset, length) of the vector referenced at `at`."""
    import struct
    v = _deref(b, at)
    return v + 4, struct.unpack_from("<I", b, v)[0]


def kernel_calls(b):
    """(op name, KernelCall table offset) of the first method's calls."""
    import struct
    fb = struct.unpack_from("<Q", b, 16)[0]  # FileHeader.flatbufferOffset
    root = _deref(b, fb)
    methods, _ = _vector(b, _field(b, root, 1))
    method = _deref(b, methods)
    instrs, n = _vector(b, _field(b, method, 4))
    out = []
    for i in range(n):
        entry = _deref(b, instrs + 4 * i)
        kind = _field(b, entry, 0)
        if kind is None or b[kind] != 1:  # 1 = KernelCall
            continue
        call = _deref(b, _field(b, entry, 1))
        name, length = _vector(b, _field(b, call, 0))
        out.append((bytes(b[name:name + length]).decode(), call))
    return out


def program_of(extra_args):
    """stories260K exported with `extra_args` (run before the case, outside
    its limits)."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "p.pte")
        subprocess.run(["etllm-export", "--quiet", "--model",
                        os.path.join(SHARED, "models/stories260K/"
                                     "stories260K.bin"), "--tokenizer",
                        os.path.join(SHARED, "models/stories260K/tok512.bin"),
                        "-o", out] + list(extra_args), check=True)
        with open(out, "rb") as f:
            return f.read()


LORA_ADAPTER = None


def lora_adapter():
    """The bytes of the good adapter file ({lora_adapter})."""
    with open(LORA_ADAPTER, "rb") as f:
        return f.read()


def make_lora(work):
    """{lora_program}, {lora_peft}, {lora_adapter} (made once per work
    directory, outside the cases' limits)."""
    sys.path.insert(0, os.path.join(INPUTS, "..", "..", "Python"))
    import lora_util
    hf = os.path.join(SHARED, "models/stories260K-hf")
    program = os.path.join(work, "stories260K-lora.pte")
    peft = os.path.join(work, "stories260K-peft")
    adapter = os.path.join(work, "stories260K.etla")
    if not os.path.exists(adapter):
        subprocess.run(["etllm-export", "--quiet", "--model", hf,
                        "--tokenizer",
                        os.path.join(SHARED, "models/stories260K/tok512.bin"),
                        "--set", "lora_runtime.targets=[q_proj,v_proj]",
                        "--set", "lora_runtime.max_rank=4", "-o", program],
                       check=True)
        lora_util.make_adapter(hf, peft, rank=4, alpha=8,
                               targets={"q_proj", "v_proj"}, seed=1)
        subprocess.run(["etllm-export-lora", "--base", program, "--adapter",
                        peft, "-o", adapter], check=True)
    return program, peft, adapter


def program_with(op, field, index, value, nth=0):
    """The good program with element `index` of `field` (ints, floats,
    inputs, outputs) of the `nth` call of `op` set to `value`."""
    import struct
    b = bytearray(open(PROGRAM, "rb").read())
    calls = [c for name, c in kernel_calls(b) if name == op]
    fid, size, fmt = KERNEL_CALL_FIELDS[field]
    first, n = _vector(b, _field(b, calls[nth], fid))
    assert index < n, (op, field, index, n)
    struct.pack_into(fmt, b, first + size * index, value)
    return bytes(b)


def blob_node_with(data, op, field, index, value, nth=0):
    """`data` (a program with a delegate) with element `index` of `field`
    (ints, floats, inputs, outputs) of the `nth` node `op` of its first
    delegate's EXN1 blob set to `value`. Program.segments = 4, .delegates =
    5; Delegate.segment = 1; Segment.offset = 0; the blob's Graph.nodes = 1,
    Node.op = 0 and the fields as KernelCall's."""
    import struct
    b = bytearray(data)
    fb = struct.unpack_from("<Q", b, 16)[0]  # FileHeader.flatbufferOffset
    segment_base = struct.unpack_from("<Q", b, 32)[0]
    root = _deref(b, fb)

    def scalar(table, field, fmt):
        at = _field(b, table, field)
        return struct.unpack_from(fmt, b, at)[0] if at is not None else 0

    delegates, count = _vector(b, _field(b, root, 5))
    assert count >= 1, "the program has no delegate"
    segment = scalar(_deref(b, delegates), 1, "<I")
    segments, _ = _vector(b, _field(b, root, 4))
    blob = segment_base + scalar(_deref(b, segments + 4 * segment), 0, "<Q")
    nodes, n = _vector(b, _field(b, _deref(b, blob), 1))
    found = []
    for i in range(n):
        node = _deref(b, nodes + 4 * i)
        name, length = _vector(b, _field(b, node, 0))
        if bytes(b[name:name + length]).decode() == op:
            found.append(node)
    assert nth < len(found), (op, len(found))
    fid, size, fmt = KERNEL_CALL_FIELDS[field]
    first, length = _vector(b, _field(b, found[nth], fid))
    assert index < length, (op, field, index, length)
    struct.pack_into(fmt, b, first + size * index, value)
    return bytes(b)


# ---------------------------------------------------------------------------

def parse_cases(path):
    cases = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split(" | ")]
            if len(fields) != 4:
                sys.exit("%s:%d: expected 4 fields separated by ' | '" %
                         (path, lineno))
            cases.append((lineno, *fields))
    return cases


def make_inputs(spec, directory):
    names = []
    if spec == "-":
        return names
    for item in spec.split("; "):
        name, expr = [x.strip() for x in item.split(" = ", 1)]
        data = eval(expr)  # the cases file is part of the repository
        if isinstance(data, str):
            data = data.encode("utf-8")
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        names.append(name)
    return names


def listing(directory):
    out = set()
    for root, dirs, files in os.walk(directory):
        for f in dirs + files:
            out.add(os.path.relpath(os.path.join(root, f), directory))
    return out


def run_case(case, args, subst):
    lineno, name, inputs, command, expect = case
    directory = os.path.join(args.work, name)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    make_inputs(inputs, directory)
    before = listing(directory)
    argv = [a.format(**subst) for a in shlex.split(command)]
    sanitized = os.environ.get("ETLLM_SANITIZED") == "1"
    scale = float(os.environ.get("ETLLM_TIME_SCALE", "1"))

    def limit():
        if not sanitized:
            resource.setrlimit(resource.RLIMIT_AS,
                               (MEMORY_LIMIT, MEMORY_LIMIT))

    # Output to files and os.wait4 (not communicate) for this process's own
    # peak resident size.
    with open(os.path.join(args.work, name + ".stdout"), "w+b") as fout, \
            open(os.path.join(args.work, name + ".stderr"), "w+b") as ferr:
        start = time.monotonic()
        proc = subprocess.Popen(argv, cwd=directory, stdout=fout, stderr=ferr,
                                preexec_fn=limit)
        killer = threading.Timer(10 * TIME_LIMIT * scale, proc.kill)
        killer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        killer.cancel()
        elapsed = time.monotonic() - start
        proc.returncode = (-os.WTERMSIG(status) if os.WIFSIGNALED(status)
                           else os.WEXITSTATUS(status))
        timed_out = proc.returncode == -9 and elapsed >= 10 * TIME_LIMIT * scale
        ferr.seek(0)
        err = ferr.read()
    err = err.decode("utf-8", "replace")
    problems = []
    # CPU time, not wall-clock time: the machine may be busy with others'
    # builds (wall-clock time only bounds a hang, at ten times the limit).
    cpu = usage.ru_utime + usage.ru_stime
    if timed_out:
        problems.append("did not finish (killed after %.0f s)" % elapsed)
    elif cpu > TIME_LIMIT * scale:
        problems.append("took %.2f s of CPU time (limit %.1f s)" %
                        (cpu, TIME_LIMIT * scale))
    rc = proc.returncode
    if expect == "OK":
        if rc != 0:
            problems.append("exit status %d, expected success" % rc)
    else:
        if rc == 0:
            problems.append("succeeded, expected an error")
        elif rc < 0 or rc >= 128:
            problems.append("ended by a signal or abort (status %d)" % rc)
        for needle in expect.split(" && "):
            needle = needle.format(**subst)
            if needle not in err:
                problems.append("stderr lacks %r" % needle)
        # An MLIR diagnostic quotes its source line with a caret under it:
        # the quote is part of the message, not a line of its own.
        all_lines = err.splitlines()
        lines = [l for i, l in enumerate(all_lines) if l.strip() and
                 l.strip() != "^" and not (i + 1 < len(all_lines) and
                                           all_lines[i + 1].strip() == "^")]
        if len(lines) > MAX_ERROR_LINES:
            problems.append("%d lines on stderr (at most %d)" %
                            (len(lines), MAX_ERROR_LINES))
        for marker in IR_MARKERS:
            if marker in err:
                problems.append("stderr shows IR (%r)" % marker)
        left = sorted(listing(directory) - before)
        if left:
            problems.append("left files behind: %s" % ", ".join(left))
    return lineno, name, problems, cpu, err, usage


def main():
    global SHARED
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    SHARED = os.path.abspath(args.shared)
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)

    # A good program with its tokenizer, for the etllm-run cases.
    program = os.path.join(args.work, "stories260K.pte")
    model = os.path.join(SHARED, "models/stories260K/stories260K.bin")
    if not os.path.exists(program):
        subprocess.run(["etllm-export", "--quiet", "--model", model,
                        "--tokenizer",
                        os.path.join(SHARED, "models/stories260K/tok512.bin"),
                        "-o", program], check=True)
    global PROGRAM
    PROGRAM = program
    global LORA_ADAPTER
    lora_program, lora_peft, LORA_ADAPTER = make_lora(args.work)
    subst = {"shared": SHARED, "program": program, "model": model,
             "deep100k": "[" * 100000, "lora_program": lora_program,
             "lora_peft": lora_peft, "lora_adapter": LORA_ADAPTER}

    cases = [c for c in parse_cases(args.cases) if args.filter in c[1]]
    names = [c[1] for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit("duplicate case names: %s" % ", ".join(sorted(dup)))
    failed = 0
    peak = 0
    for case in cases:
        lineno, name, problems, elapsed, err, usage = run_case(case, args,
                                                               subst)
        rss = usage.ru_maxrss * 1024  # KiB on Linux
        peak = max(peak, rss)
        if rss > MEMORY_LIMIT:
            problems.append("peak resident memory %.0f MiB (limit %d MiB)" %
                            (rss / 2**20, MEMORY_LIMIT >> 20))
        status = "FAIL" if problems else "ok"
        print("%-4s %-40s %5.2f s cpu  %s" % (status, name, elapsed,
                                          err.strip().splitlines()[0][:110]
                                          if err.strip() else ""))
        for p in problems:
            print("       line %d: %s" % (lineno, p))
        if problems:
            failed += 1
            print("       stderr: " + err[:600].replace("\n", "\n               "))
    print("%d cases, %d failed; largest peak resident memory %.0f MiB" %
          (len(cases), failed, peak / 2**20))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
