#!/usr/bin/python3
"""Makes the seed corpora of the fuzz targets (scripts/fuzz.sh calls it).

Seeds come from the shared test data and from files the project's own tools
make (etllm-gen-checkpoint, etllm-export, etllm-translate): they are written
under the fuzz build directory and never committed. Large shared files are
cut down to small valid files (a vocabulary's first tokens, a tokenizer.json
with a few hundred entries) so that the fuzzer mutates kilobytes, not
megabytes. Also writes libFuzzer dictionaries (<target>.dict) built from the
IR's op names and the formats' keys.

  make_seeds.py --shared DIR --tools BUILD/bin --repo REPO --out DIR
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

# Model shapes small enough for fast runs, one checkpoint per family of the
# registry (etllm-gen-checkpoint --list-families). As many key/value heads
# as query heads: multi-head latent attention (DeepSeek) needs that.
SMALL = ["--hidden", "16", "--layers", "1", "--heads", "2", "--kv-heads", "2",
         "--head-dim", "8", "--ffn", "32", "--vocab", "261", "--max-seq", "16"]
RECIPES = ["portable", "cpu-fp32", "cpu-int4", "cpu-8da4w",
           "cpu-int8"]
HF_SEPARATOR = b"\n--- model.safetensors ---\n"


class Seeds:
    def __init__(self, out):
        self.out = out
        self.count = {}

    def add(self, target, name, data):
        d = os.path.join(self.out, target)
        os.makedirs(d, exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        self.count[target] = self.count.get(target, 0) + 1

    def add_file(self, target, path, name=None):
        with open(path, "rb") as f:
            self.add(target, name or os.path.basename(path), f.read())

    def dict(self, target, words):
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, target + ".dict"), "w") as f:
            for w in sorted(set(words)):
                esc = "".join(c if 32 <= ord(c) < 127 and c not in '"\\'
                              else "\\x%02x" % ord(c) for c in w)
                f.write('"%s"\n' % esc)


def families(gen):
    """The family ids of the registry, as etllm-gen-checkpoint lists them."""
    out = subprocess.run([gen, "--list-families"], check=True,
                         capture_output=True, text=True).stdout.split()
    if not out:
        sys.exit("make_seeds.py: %s --list-families listed no family" % gen)
    return out


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------------------
# GGUF metadata (enough to read the tokenizer.ggml.* arrays).

def gguf_metadata(path):
    data = read(path)
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n]
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
              10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(scalar[t])

    assert data[:4] == b"GGUF"
    pos = 8
    take("Q")  # tensors
    n = take("Q")
    meta = {}
    for _ in range(n):
        key = string().decode()
        meta[key] = value(take("I"))
    return meta


def vocab_seed(meta, max_tokens):
    """The tokenizer-gguf-vocab input format (see its target)."""
    g = lambda k, d: meta.get("tokenizer.ggml." + k, d)
    model = g("model", b"llama").decode()
    pre = g("pre", b"-").decode() or "-"
    tokens = g("tokens", [])[:max_tokens]
    scores = g("scores", [])
    types = g("token_type", [])
    ids = [g(k, -1) for k in ("bos_token_id", "eos_token_id",
                              "unknown_token_id", "padding_token_id",
                              "eot_token_id")]
    ids = [i if i < len(tokens) else -1 for i in ids]
    lines = ["%s %s %s 1 1" % (model, pre, " ".join(map(str, ids)))]

    def esc(b):
        return "".join(chr(c) if 33 <= c < 127 and c != 92 else "\\x%02x" % c
                       for c in b)
    for i, t in enumerate(tokens):
        ty = str(types[i]) if i < len(types) else "-"
        sc = "%g" % scores[i] if i < len(scores) else "0"
        lines.append("%s %s %s" % (ty, sc, esc(t)))
    merges = g("merges", [])
    if merges:
        lines.append("--- merges")
        kept = set(tokens)
        for m in merges:
            parts = m.split(b" ", 1)
            if len(parts) == 2 and parts[0] in kept and parts[1] in kept:
                lines.append(esc(parts[0]) + " " + esc(parts[1]))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Small tokenizer files cut from the shared ones.

def small_gpt2_json(tok, n_tokens):
    """gpt2's tokenizer.json with its first tokens and the merges among them."""
    t = json.loads(json.dumps(tok))
    vocab = {k: v for k, v in tok["model"]["vocab"].items() if v < n_tokens}
    t["model"]["vocab"] = vocab
    merges = []
    for m in tok["model"]["merges"]:
        a, b = m.split(" ", 1)
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    t["model"]["merges"] = merges
    t["added_tokens"] = [{"id": n_tokens, "content": "<|endoftext|>",
                          "special": True}]
    t["truncation"] = None
    return t


def hf_variants(tok):
    base = small_gpt2_json(tok, 400)
    out = {"gpt2-400.json": base}
    v = json.loads(json.dumps(base))
    v["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex":
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
            "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
            "\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
    v["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "trim_offsets": False},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}}],
         "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>",
                                              "ids": [400]}}}]}
    v["model"]["ignore_merges"] = True
    out["llama3-style.json"] = v
    # Metaspace (Llama 2 / Mistral style), with byte fallback.
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    words = ["\u2581", "a", "b", "c", "\u2581a", "ab", "\u2581ab", "abc"]
    vocab = {p: i for i, p in enumerate(pieces + words)}
    m = {"type": "BPE", "vocab": vocab, "unk_token": "<unk>",
         "byte_fallback": True, "fuse_unk": True,
         "merges": ["\u2581 a", "a b", "\u2581a b", "ab c"]}
    out["metaspace.json"] = {
        "added_tokens": [{"id": 0, "content": "<unk>", "special": True},
                         {"id": 1, "content": "<s>", "special": True},
                         {"id": 2, "content": "</s>", "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                          "prepend_scheme": "first", "split": False},
        "decoder": {"type": "Metaspace", "replacement": "\u2581",
                    "prepend_scheme": "first"},
        "model": m}
    out["sequence-normalizer.json"] = {
        "added_tokens": out["metaspace.json"]["added_tokens"],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "},
             "content": "\u2581"}]},
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"},
             "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "post_processor": {"type": "TemplateProcessing", "single": [
            {"SpecialToken": {"id": "<s>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}}]},
        "model": m}
    for behavior in ["Removed", "MergedWithPrevious", "MergedWithNext",
                     "Contiguous"]:
        w = json.loads(json.dumps(base))
        w["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": " "},
             "behavior": behavior, "invert": behavior == "Contiguous"},
            {"type": "ByteLevel", "add_prefix_space": True,
             "use_regex": False}]}
        out["split-%s.json" % behavior] = w
    return {k: json.dumps(v, ensure_ascii=False) for k, v in out.items()}


def varint(data, pos):
    v, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, pos


def small_sentencepiece(path, n):
    """A SentencePiece ModelProto with its first n pieces (field 1) and every
    other field (trainer, normalizer specs) as they are: protobuf's wire
    format, top level only."""
    data = read(path)
    pos, out, pieces = 0, [], 0
    while pos < len(data):
        start = pos
        key, pos = varint(data, pos)
        wire = key & 7
        if wire == 0:
            _, pos = varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = varint(data, pos)
            pos += length
        else:
            raise ValueError("unexpected wire type %d" % wire)
        if key >> 3 == 1:
            pieces += 1
            if pieces > n:
                continue
        out.append(data[start:pos])
    return b"".join(out)


def small_tiktoken(path, n):
    lines = read(path).split(b"\n")
    return b"\n".join(lines[:n]) + b"\n"


def small_llama2c_tokenizer(path, n):
    """The first n entries of a llama2.c tokenizer.bin."""
    data = read(path)
    pos = 4
    entries = []
    for _ in range(n):
        score, length = struct.unpack_from("<fi", data, pos)
        entries.append(data[pos:pos + 8 + length])
        pos += 8 + length
    return data[:4] + b"".join(entries)


def tiny_llama2c_checkpoint(shared_negative_vocab):
    """A llama2.c v0 checkpoint: dim 8, 1 layer, 2 heads, vocab 16, seq 4."""
    dim, hidden, layers, heads, kv, vocab, seq = 8, 16, 1, 2, 2, 16, 4
    head = dim // heads
    n = (vocab * dim + layers * dim + layers * dim * dim * 2 +
         layers * dim * (kv * head) * 2 + layers * dim +
         layers * hidden * dim * 3 + dim + seq * head)
    if shared_negative_vocab:
        n += vocab * dim
    header = struct.pack("<7i", dim, hidden, layers, heads, kv,
                         -vocab if shared_negative_vocab else vocab, seq)
    body = struct.pack("<%df" % n, *[((i * 37) % 101) / 101.0 - 0.5
                                     for i in range(n)])
    return header + body



# ---------------------------------------------------------------------------
# LoRA adapters (PEFT) and chat templates.

LORA_SEPARATOR = b"\n--- adapter_model.safetensors ---\n"
CHAT_SEPARATOR = b"\n--- context ---\n"


def safetensors_bytes(tensors):
    """A safetensors file of {name: (dtype, shape, raw bytes)}."""
    header, offset, blobs = {}, 0, []
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def lora_seed(rank, modules, dtype="F32", config_extra=None, dim=16):
    """adapter_config.json + separator + adapter_model.safetensors."""
    pack = {"F32": ("f", 4), "F16": ("e", 2), "F64": ("d", 8)}[dtype]
    def values(n, seed):
        return struct.pack("<%d%s" % (n, pack[0]),
                           *[((i * 37 + seed) % 19 - 9) / 64.0 for i in range(n)])
    tensors = {}
    for i, m in enumerate(modules):
        mod = "base_model.model.model.layers.0." + m
        tensors[mod + ".lora_A.weight"] = (dtype, [rank, dim], values(rank * dim, i))
        tensors[mod + ".lora_B.weight"] = (dtype, [dim, rank], values(dim * rank, i + 7))
    config = {"peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank,
              "target_modules": sorted(m.split(".")[-1] for m in modules),
              "lora_dropout": 0.0, "bias": "none", "use_rslora": False,
              "use_dora": False, "fan_in_fan_out": False,
              "task_type": "CAUSAL_LM", "rank_pattern": {}, "alpha_pattern": {},
              "modules_to_save": None}
    config.update(config_extra or {})
    return (json.dumps(config, indent=2).encode() + LORA_SEPARATOR +
            safetensors_bytes(tensors))


def chat_contexts():
    """A few render contexts (the variables transformers passes)."""
    def m(role, content):
        return {"role": role, "content": content}
    base = {"tools": None, "documents": None, "bos_token": "<s>",
            "eos_token": "</s>", "add_generation_prompt": True}
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}]
    out = {
        "system-2turns": {"messages": [m("system", "Be brief."), m("user", "Hi"),
                                       m("assistant", " Hello! "),
                                       m("user", "Who are you?")]},
        "1turn-nogen": {"messages": [m("user", "Hello")],
                        "add_generation_prompt": False},
        "tool-call": {"messages": [
            m("user", "Weather in Paris?"),
            {"role": "assistant", "content": "",
             "tool_calls": [{"id": "call12345", "type": "function",
                             "function": {"name": "get_weather",
                                          "arguments": {"city": "Paris"}}}]},
            {"role": "tool", "tool_call_id": "call12345",
             "name": "get_weather", "content": "{\"temperature\": 21}"}],
            "tools": tools, "date_string": "01 Jan 2025"},
        "thinking": {"messages": [m("user", "2+2?"),
                                  m("assistant", "<think>\nadd\n</think>\n\n4"),
                                  m("user", "and 3+3?")],
                     "enable_thinking": False},
    }
    for name, ctx in out.items():
        full = dict(base)
        full.update(ctx)
        out[name] = full
    return out

# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    S = lambda *p: os.path.join(a.shared, *p)
    T = lambda name: os.path.join(a.tools, name)
    seeds = Seeds(a.out)
    tmp = tempfile.mkdtemp(prefix="etllm-seeds-")
    try:
        # Checkpoints, generated: every architecture, GGUF and HF.
        for arch in families(T("etllm-gen-checkpoint")):
            g = os.path.join(tmp, arch + ".gguf")
            run([T("etllm-gen-checkpoint"), "--arch", arch, "--format", "gguf",
                 *SMALL, "-o", g])
            seeds.add_file("gguf", g)
            h = os.path.join(tmp, arch + "-hf")
            run([T("etllm-gen-checkpoint"), "--arch", arch, "--format", "hf",
                 *SMALL, "-o", h])
            seeds.add("safetensors", arch + "-hf",
                      read(os.path.join(h, "config.json")) + HF_SEPARATOR +
                      read(os.path.join(h, "model.safetensors")))
        # A composite model (LLaVA: text_config, vision_config, the tower's
        # and projector's tensors).
        h = os.path.join(tmp, "llava-seed-hf")
        run([T("etllm-gen-checkpoint"), "--arch", "llava", "--format", "hf",
             "--vocab", "512", "-o", h])
        seeds.add("safetensors", "llava-hf",
                  read(os.path.join(h, "config.json")) + HF_SEPARATOR +
                  read(os.path.join(h, "model.safetensors")))
        for gtype in ["f16", "bf16", "q8_0", "q4_0"]:
            g = os.path.join(tmp, "llama-%s.gguf" % gtype)
            # ggml blocks are 32 wide: rows of 32 and 64.
            run([T("etllm-gen-checkpoint"), "--arch", "llama", "--format",
                 "gguf", "--hidden", "32", "--layers", "1", "--heads", "2",
                 "--kv-heads", "1", "--head-dim", "16", "--ffn", "64",
                 "--vocab", "261", "--max-seq", "16", "--gguf-type", gtype,
                 "-o", g])
            seeds.add_file("gguf", g)
        seeds.add("safetensors", "bare.safetensors",
                  read(os.path.join(tmp, "llama-hf", "model.safetensors")))
        # (The shared checkpoints are megabytes: mutating them is slow, and
        # the generated ones have the same structure.)
        seeds.add("llama2c", "tiny-shared.bin", tiny_llama2c_checkpoint(False))
        seeds.add("llama2c", "tiny-untied.bin", tiny_llama2c_checkpoint(True))

        # Programs: every recipe on a generated model; the IR after every
        # stage as IR seeds.
        model = os.path.join(tmp, "llama.gguf")
        for recipe in RECIPES:
            pte = os.path.join(tmp, recipe + ".pte")
            dump = os.path.join(tmp, "dump-" + recipe)
            run([T("etllm-export"), "--quiet", "--model", model, "--pipeline",
                 recipe, "--dump-dir", dump, "-o", pte])
            seeds.add_file("pte", pte)
            for f in sorted(os.listdir(dump)):
                seeds.add_file("ir", os.path.join(dump, f), recipe + "-" + f)
        # LoRA hooks over packed qlinears: the cpu delegate fuses them
        # into the qlinears at init (a rewiring of the blob's values).
        pte = os.path.join(tmp, "lora-hooks.pte")
        run([T("etllm-export"), "--quiet", "--model", model, "--pipeline",
             "cpu-int4", "--set",
             "lora_runtime.targets=[q_proj,v_proj,down_proj]", "--set",
             "lora_runtime.max_rank=4", "-o", pte])
        seeds.add_file("pte", pte)
        # Static-shape programs: prefill and decode, the caches as their
        # inputs and outputs or as buffers.
        for kv in ("io", "in-place"):
            pte = os.path.join(tmp, "static-" + kv + ".pte")
            run([T("etllm-export"), "--quiet", "--model", model, "--pipeline",
                 "cpu-fp32", "--set", "model.static_prefill_chunk=4", "--set",
                 "model.static_kv_cache=" + kv, "-o", pte])
            seeds.add_file("pte", pte)
        # Ring caches with attention sinks (KvRing metadata, the
        # kv_ring_slots / kv_ring_mask calls, a masked sdpa in the cpu
        # delegate) and static activations (quantize_static calls).
        pte = os.path.join(tmp, "ring-sinks.pte")
        run([T("etllm-export"), "--quiet", "--model", model, "--pipeline",
             "cpu-fp32", "--set", "model.kv_ring_chunk=4", "--set",
             "model.attention_sinks=2", "-o", pte])
        seeds.add_file("pte", pte)
        pte = os.path.join(tmp, "static-activations.pte")
        run([T("etllm-export"), "--quiet", "--model",
             S("models/stories260K/stories260K.bin"), "--tokenizer",
             S("models/stories260K/tok512.bin"), "--pipeline", "cpu-8sa4w",
             "--set", "quantization.calibration=" +
             os.path.join(a.repo, "test/Inputs/calibration-story.txt"),
             "--set", "quantization.calibration_samples=2", "-o", pte])
        seeds.add_file("pte", pte)
        # A composite model (LLaVA): vision_encoder and text_decoder beside
        # forward, the vision keys in the metadata, portable and cpu.
        llava = os.path.join(tmp, "llava-hf")
        run([T("etllm-gen-checkpoint"), "--arch", "llava", "--format", "hf",
             "--vocab", "512", "-o", llava])
        # Its tower and projector as llama.cpp's mmproj (the gguf target
        # completes a tiny text model with each input as one).
        mmproj = os.path.join(tmp, "mmproj.gguf")
        # (The project's venv has the gguf package the writer uses.)
        venv_python = subprocess.run(
            [os.path.join(a.repo, "scripts/venv.sh"), "python"],
            capture_output=True, text=True).stdout.strip()
        if venv_python:
            run([venv_python,
                 os.path.join(a.repo, "scripts/lib/llava_mmproj.py"), llava,
                 mmproj])
            seeds.add_file("gguf", mmproj)
        # Gemma 3's (a SigLIP tower, the pooling projector, the image's
        # wrapping in the program's metadata) and SmolVLM's (the
        # pixel-shuffle connector, its image splitting in the program's
        # preprocessor, tile texts in the metadata): the HF checkpoint, its
        # mmproj, a program.
        for name, arch, preset in (("gemma3", "gemma3-vision", "gemma3-tiny"),
                                   ("smolvlm", "smolvlm", "smolvlm-tiny")):
            hf = os.path.join(tmp, name + "-hf")
            run([T("etllm-gen-checkpoint"), "--arch", arch,
                 "--vision-preset", preset, "--format", "hf", "--vocab",
                 "512", "-o", hf])
            seeds.add("safetensors", name + "-hf",
                      read(os.path.join(hf, "config.json")) + HF_SEPARATOR +
                      read(os.path.join(hf, "model.safetensors")))
            if venv_python:
                out = os.path.join(tmp, name + "-mmproj.gguf")
                run([venv_python, os.path.join(
                    a.repo, "scripts/lib/%s_mmproj.py" % name), hf, out])
                seeds.add_file("gguf", out)
            pte = os.path.join(tmp, name + ".pte")
            run([T("etllm-export"), "--quiet", "--model", hf, "--tokenizer",
                 S("models/stories260K/tok512.bin"), "-o", pte])
            seeds.add_file("pte", pte)
        for recipe in ("portable", "cpu-fp32"):
            pte = os.path.join(tmp, "llava-" + recipe + ".pte")
            run([T("etllm-export"), "--quiet", "--model", llava,
                 "--tokenizer", S("models/stories260K/tok512.bin"),
                 "--pipeline", recipe, "-o", pte])
            seeds.add_file("pte", pte)
        pte = os.path.join(tmp, "hf-tokenizer.pte")
        run([T("etllm-export"), "--quiet", "--model",
             os.path.join(tmp, "qwen2-hf"), "--tokenizer",
             S("models/stories260K/tok512.bin"), "-o", pte])
        seeds.add_file("pte", pte)
        translate_in = os.path.join(a.repo, "test/Serialize/translate.mlir")
        pte = os.path.join(tmp, "translate.pte")
        run([T("etllm-translate"), "--mlir-to-pte", translate_in, "-o", pte])
        seeds.add_file("pte", pte)

        # IR from the repository's tests and examples, one case per file.
        for root in ["test", "examples"]:
            for dirpath, _, files in os.walk(os.path.join(a.repo, root)):
                for f in sorted(files):
                    if not f.endswith(".mlir"):
                        continue
                    text = read(os.path.join(dirpath, f)).decode()
                    for i, case in enumerate(text.split("// -----")):
                        case = "\n".join(l for l in case.splitlines()
                                         if not l.startswith("// RUN"))
                        seeds.add("ir", "%s-%d.mlir" % (f[:-5], i), case)
        td = read(os.path.join(a.repo, "include/etllm/Dialect/Etllm/EtllmOps.td")).decode()
        ops = ["etllm." + m for m in re.findall(r'Etllm_Op<"([^"]+)"', td)]
        # The model config's keys, from their one declaration.
        cfg_td = read(os.path.join(a.repo, "include/etllm/Models/ModelConfig.td")).decode()
        config_keys = re.findall(r'def : \w*Field<"([a-z0-9_]+)"', cfg_td)
        seeds.dict("ir", ops + config_keys + [
                               "func.func", "func.return", "module",
                               "tensor<", "!etllm.", "#etllm.", "dense<",
                               "->", "attributes", "loc(", "f32", "f16",
                               "i64", "i32", "bf16", "{-#", "#-}"])

        # Tokenizer files.
        seeds.add_file("tokenizer-llama2c", S("models/stories260K/tok512.bin"))
        seeds.add("tokenizer-llama2c", "llama2-300.bin",
                  small_llama2c_tokenizer(S("tokenizers/llama2/tokenizer.bin"), 300))
        seeds.add("tokenizer-sentencepiece", "llama2-400.model",
                  small_sentencepiece(S("tokenizers/llama2/tokenizer.model"), 400))
        seeds.add("tokenizer-tiktoken", "llama3-2000.tiktoken",
                  small_tiktoken(S("tokenizers/llama3/tokenizer.model"), 2000))
        gpt2 = json.loads(read(S("tokenizers/gpt2/tokenizer.json")))
        for name, text in hf_variants(gpt2).items():
            seeds.add("tokenizer-hf-json", name, text)
        for name, path in [("stories260K", S("models/stories260K/stories260K.gguf")),
                           ("tiny-random", S("models/tiny-random-llama2/llama-2-tiny-random.gguf")),
                           ("generated-gpt2", os.path.join(tmp, "qwen2.gguf"))]:
            seeds.add("tokenizer-gguf-vocab", name, vocab_seed(gguf_metadata(path), 600))

        # Text to encode: the test vectors, behind the selector bytes.
        texts = []
        for f in sorted(os.listdir(S("tokenizers/test-vectors"))):
            if f.endswith(".inp"):
                texts += read(S("tokenizers/test-vectors", f)).split(
                    b"\n__ggml_vocab_test__\n")
        for i, text in enumerate(texts):
            seeds.add("tokenizer-encode", "vector-%03d" % i,
                      bytes([i % 7, i % 4]) + text)

        # export_config.yaml, with --set lines.
        seeds.add("export-config", "full.yaml", """model:
  max_seq_len: 512
  dtype: float16
  last_logits_only: false
pipeline:
  name: cpu-8da4w
quantization:
  linear: 8da4w
  group_size: 64
  symmetric: false
  scale_dtype: float16
  embedding: int8
  embedding_group_size: 32
  output_layer: int8
  exclude: ["model.layers.0.*", "*.mlp.*"]
backends: [cpu]
tokenizer: "tokenizer.model"
output:
  dump_dir: /tmp/etllm-dump
""")
        seeds.add("export-config", "with-set.yaml",
                  "pipeline: {name: cpu-int4}\n--- set\n"
                  "quantization.group_size=128\nquantization.exclude=[lm_head]\n"
                  "model.dtype=bfloat16\n")
        seeds.add("export-config", "flat.yaml", "model.max_seq_len: 64\n")
        seeds.dict("export-config", ["model", "pipeline", "quantization",
                                     "backends", "tokenizer", "output",
                                     "max_seq_len", "dtype", "name", "linear",
                                     "group_size", "exclude", "--- set\n",
                                     "true", "false", "[", "]", "{", "}",
                                     ": ", "- ", "&a", "*a", "!!str", "'",
                                     "\""])

        # Chat templates: every family's template of the conformance test
        # and the feature test, alone (the fixed conversation) and with
        # render contexts.
        chat_dirs = [os.path.join(a.repo, "test/ChatTemplate", d)
                     for d in ("Inputs", "Features")]
        contexts = chat_contexts()
        for d in chat_dirs:
            for f in sorted(os.listdir(d)):
                if not f.endswith(".jinja"):
                    continue
                src = read(os.path.join(d, f))
                seeds.add("chat-template", f, src)
                for cname, ctx in sorted(contexts.items()):
                    seeds.add("chat-template", "%s+%s" % (f[:-6], cname),
                              src + CHAT_SEPARATOR + json.dumps(ctx).encode())
        seeds.dict("chat-template", [
            "{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{{-", "-}}",
            "if", "elif", "else", "endif", "for", "in", "endfor", "set",
            "endset", "namespace", "loop.index", "loop.first", "loop.last",
            "break", "continue", "generation", "endgeneration", "not", "and",
            "or", "is", "defined", "none", "true", "false", "range",
            "raise_exception", "strftime_now", "messages", "message",
            "message['role']", "message['content']", "add_generation_prompt",
            "bos_token", "eos_token", "tools", "|trim", "|length", "|tojson",
            "|join", "|selectattr", "|map", "|default", "|upper", "|lower",
            ".strip()", ".split(", ".startswith(", ".items()", ".get(",
            "[::-1]", "~", "**", "//", "%", "(", ")", "[", "]", "'", "\""])

        # LoRA adapters: config + separator + safetensors (see the target).
        seeds.add("lora", "q-v-rank2", lora_seed(2, ["self_attn.q_proj",
                                                     "self_attn.v_proj"]))
        seeds.add("lora", "mlp-rank4-f16",
                  lora_seed(4, ["mlp.up_proj", "mlp.down_proj"], "F16"))
        seeds.add("lora", "rslora-f64",
                  lora_seed(1, ["self_attn.o_proj"], "F64",
                            {"use_rslora": True, "target_modules": None}))
        seeds.add("lora", "bare.safetensors",
                  lora_seed(2, ["self_attn.q_proj"]).split(LORA_SEPARATOR)[1])
        seeds.dict("lora", [
            "peft_type", "LORA", "lora_alpha", "\"r\"", "use_rslora",
            "use_dora", "fan_in_fan_out", "rank_pattern", "alpha_pattern",
            "bias", "none", "modules_to_save", "target_modules",
            "base_model.model.", ".lora_A.weight", ".lora_B.weight",
            "lora_embedding_A", "dtype", "shape", "data_offsets", "F32",
            "F16", "BF16", "F64", "I32", "__metadata__",
            "--- adapter_model.safetensors ---"])
        # LoRA adapter files (.etla) for the format fixture with hooks.
        for f in ["tiny-llama-lora-v1.etla", "tiny-llama-lora-v1-f16.etla"]:
            seeds.add_file("etla", os.path.join(a.repo, "runtime/test/fixtures", f))

        # Glob patterns and module paths.
        for i, (p, t) in enumerate([("model.layers.0.*", "model.layers.0.mlp.up_proj"),
                                    ("*.mlp.*", "model.layers.3.mlp.down_proj"),
                                    ("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
                                    ("lm_head", "lm_head")]):
            seeds.add("glob", "case-%d" % i, p + "\n" + t)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for t in sorted(seeds.count):
        print("seeds: %-26s %d" % (t, seeds.count[t]))


if __name__ == "__main__":
    sys.exit(main())
