#!/usr/bin/env bash
# etllm against llama.cpp on the same weights, the same machine, in one run
# (docs/Performance.md explains every step and figure).
#
#   LLAMA_CPP_DIR=/path/to/llama.cpp/build scripts/bench-vs-llamacpp.sh
#
# 1. makes the benchmark model with etllm-gen-checkpoint: a Llama of the
#    1B shape (hidden 2048, 16 layers, 32/8 heads, head_dim 64, ffn 8192,
#    vocab 32000, tied embeddings, random weights) in one F16 GGUF;
# 2. converts it with both tools, timed (wall seconds and peak RSS):
#    llama-quantize --pure to Q4_0; etllm-export cpu-int4 from the Q4_0
#    GGUF (an exact repack of its blocks) and cpu-8da4w and cpu-int4
#    from the F16 GGUF;
# 3. runs llama-bench and etllm-bench interleaved (A B A B ..., the same
#    -p/-n/-t/-r), etllm-bench also measuring the memory read bandwidth and
#    the decode roofline in the same run;
# 4. computes the perplexity of test/Inputs/perplexity-story.txt with
#    llama-perplexity and etllm-bench -f, on stories260K (a trained model)
#    and on the benchmark model;
# 5. prints the ratios (tok/s, file size, convert time) and writes every raw
#    output under WORK_DIR.
#
# Needs only the two build directories, bash and python3 (standard library).
# llama.cpp is never a dependency of etllm: it is what etllm is measured
# against. Settings (environment variables, defaults in brackets):
#   LLAMA_CPP_DIR   llama.cpp build directory (bin/ inside it, or bin itself)
#   ETLLM_BUILD_DIR etllm build directory [<repo>/build]
#   WORK_DIR        models and results, outside the repository
#                   [/tmp/etllm-vs-llamacpp]; about 6 GB for SHAPE=1b
#   SHARED_DIR      etllm's test data, for stories260K [the build's
#                   ETLLM_SHARED_DIR, else <repo>/../shared]
#   PROMPT GEN      prefill and decode tokens per test [128 64]
#   THREADS         thread counts [1,2]
#   REPS            repetitions per test in each run [3]
#   ROUNDS          interleaved rounds of both benches [3]
#   SHAPE           1b or small [1b]; HIDDEN LAYERS HEADS KV_HEADS HEAD_DIM
#                   FFN VOCAB override one dimension of it
#   PPL_CTX PPL_CHUNKS  perplexity window and windows on the benchmark
#                   model [128 4]
#   SKIP_CONVERT=1  reuse the converted files in WORK_DIR
#   SKIP_BENCH=1    reuse the bench results of a previous run in WORK_DIR
#   THP             keep (the system's transparent huge pages) or always
#                   (set for the run, then restored; needs root) [keep]:
#                   scripts/lib/thp.sh says why it matters for llama.cpp
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${LLAMA_CPP_DIR:?set LLAMA_CPP_DIR to a llama.cpp build directory}"
ETLLM_BUILD_DIR="${ETLLM_BUILD_DIR:-$repo/build}"
WORK_DIR="${WORK_DIR:-/tmp/etllm-vs-llamacpp}"
# The test data the build was configured with, else ../shared.
if [ -z "${SHARED_DIR:-}" ] && [ -f "$ETLLM_BUILD_DIR/CMakeCache.txt" ]; then
  SHARED_DIR="$(sed -n 's/^ETLLM_SHARED_DIR:[A-Z]*=//p' "$ETLLM_BUILD_DIR/CMakeCache.txt")"
fi
SHARED_DIR="${SHARED_DIR:-$repo/../shared}"
PROMPT="${PROMPT:-128}"
GEN="${GEN:-64}"
THREADS="${THREADS:-1,2}"
REPS="${REPS:-3}"
ROUNDS="${ROUNDS:-3}"
PPL_CTX="${PPL_CTX:-128}"
PPL_CHUNKS="${PPL_CHUNKS:-4}"
TEXT="$repo/test/Inputs/perplexity-story.txt"
# The benchmark model's shape: SHAPE=1b (issue 9: a Llama of the 1B shape,
# tied embeddings) or SHAPE=small (2 layers of hidden 256: a quick check of
# the script itself; its speed figures say little). HIDDEN, LAYERS, HEADS,
# KV_HEADS, HEAD_DIM, FFN and VOCAB override single dimensions.
SHAPE="${SHAPE:-1b}"
case "$SHAPE" in
  1b) d=(2048 16 32 8 64 8192 32000) ;;
  small) d=(256 2 4 2 64 768 32000) ;;
  *) echo "bench-vs-llamacpp: error: SHAPE must be 1b or small, not '$SHAPE'" >&2; exit 1 ;;
esac
HIDDEN="${HIDDEN:-${d[0]}}" LAYERS="${LAYERS:-${d[1]}}" HEADS="${HEADS:-${d[2]}}"
KV_HEADS="${KV_HEADS:-${d[3]}}" HEAD_DIM="${HEAD_DIM:-${d[4]}}" FFN="${FFN:-${d[5]}}"
VOCAB="${VOCAB:-${d[6]}}"
for v in HIDDEN LAYERS HEADS KV_HEADS HEAD_DIM FFN VOCAB PROMPT GEN REPS ROUNDS PPL_CTX PPL_CHUNKS; do
  [[ "${!v}" =~ ^[1-9][0-9]{0,6}$ ]] ||
    { echo "bench-vs-llamacpp: error: $v must be a positive integer, not '${!v}'" >&2; exit 1; }
done
[[ "$THREADS" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
  { echo "bench-vs-llamacpp: error: THREADS must be a comma list of thread counts, not '$THREADS'" >&2; exit 1; }
# Files are named after the shape, so that shapes do not overwrite each other.
TAG="llama-h${HIDDEN}-l${LAYERS}-ffn${FFN}-v${VOCAB}"

die() { echo "bench-vs-llamacpp: error: $*" >&2; exit 1; }
say() { echo "[bench-vs-llamacpp $(date +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)] $*" >&2; }

find_bin() { # DIR NAME
  for d in "$1/bin" "$1"; do
    if [ -x "$d/$2" ]; then echo "$d/$2"; return 0; fi
  done
  die "$2 not found in $1 or $1/bin"
}
PY="$(command -v python3)" || die "python3 is needed"
LLAMA_BENCH="$(find_bin "$LLAMA_CPP_DIR" llama-bench)"
LLAMA_QUANTIZE="$(find_bin "$LLAMA_CPP_DIR" llama-quantize)"
LLAMA_PERPLEXITY="$(find_bin "$LLAMA_CPP_DIR" llama-perplexity)"
GEN_CKPT="$(find_bin "$ETLLM_BUILD_DIR" etllm-gen-checkpoint)"
EXPORT="$(find_bin "$ETLLM_BUILD_DIR" etllm-export)"
BENCH="$(find_bin "$ETLLM_BUILD_DIR" etllm-bench)"
[ -f "$TEXT" ] || die "$TEXT is missing"
case "$WORK_DIR" in "$repo"|"$repo"/*) die "WORK_DIR must be outside the repository";; esac
mkdir -p "$WORK_DIR/results"
W="$WORK_DIR"
R="$W/results"

# timed NAME CMD...: runs CMD (its output in $R/convert.N.log), appends
# "NAME|wall seconds|CPU seconds|peak RSS KB|load" to $R/convert.txt (CPU
# time and peak RSS of the child, from getrusage: the CPU seconds do not
# depend on how busy the machine is, the wall seconds do).
timed() {
  local name="$1"; shift
  "$PY" - "$name" "$R/convert.txt" "$@" <<'EOF'
import os, resource, subprocess, sys, time
name, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
n = sum(1 for _ in open(out)) if os.path.exists(out) else 0
log = os.path.join(os.path.dirname(out), f"convert.{n + 1}.log")
load = open("/proc/loadavg").read().split()[0]
t = time.monotonic()
with open(log, "w") as f:
    rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
s = time.monotonic() - t
if rc:
    sys.exit(f"bench-vs-llamacpp: error: {name} failed ({rc}), see {log}")
u = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = u.ru_utime + u.ru_stime
with open(out, "a") as f:
    f.write(f"{name}|{s:.2f}|{cpu:.2f}|{u.ru_maxrss}|{load}\n")
print(f"  {name}: {s:.2f} s wall, {cpu:.2f} s CPU, {u.ru_maxrss} KB peak RSS"
      f" (load {load})", file=sys.stderr)
EOF
}

# shellcheck source=lib/thp.sh
. "$repo/scripts/lib/thp.sh"
thp_apply bench-vs-llamacpp
say "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, transparent huge pages: $(thp_mode)"
say "llama.cpp: $LLAMA_BENCH; etllm: $BENCH; work: $W"

# 1-2. Models and conversions.
F16="$W/$TAG-f16.gguf"
Q4="$W/$TAG-q4_0.gguf"
INT4="$W/$TAG-int4-from-q4_0.pte"
INT4F16="$W/$TAG-int4-from-f16.pte"
DA4W="$W/$TAG-8da4w-from-f16.pte"
SEQ=$(( PROMPT > PPL_CTX ? PROMPT : PPL_CTX ))
SEQ=$(( SEQ > GEN ? SEQ : GEN ))
SEQ=$(( SEQ < 512 ? 512 : SEQ ))
if [ "${SKIP_CONVERT:-0}" != 1 ]; then
  : > "$R/convert.txt"
  say "generating the F16 GGUF ($TAG: hidden $HIDDEN, $LAYERS layers, $HEADS/$KV_HEADS heads of $HEAD_DIM, ffn $FFN, vocab $VOCAB)"
  "$GEN_CKPT" --arch llama --format gguf --hidden $HIDDEN --layers $LAYERS \
    --heads $HEADS --kv-heads $KV_HEADS --head-dim $HEAD_DIM --ffn $FFN \
    --vocab $VOCAB --max-seq 2048 --tied --dtype f16 -o "$F16" >&2
  # Conversions, each from a warm page cache (the F16 file was just written
  # or read) so that both tools read it from memory.
  cat "$F16" > /dev/null
  say "converting"
  timed "llama-quantize --pure F16 -> Q4_0" "$LLAMA_QUANTIZE" --pure "$F16" "$Q4" Q4_0
  timed "etllm-export F16 -> cpu-8da4w" "$EXPORT" --quiet --model "$F16" \
    --pipeline cpu-8da4w --set model.max_seq_len=$SEQ -o "$DA4W"
  timed "etllm-export F16 -> cpu-int4" "$EXPORT" --quiet --model "$F16" \
    --pipeline cpu-int4 --set model.max_seq_len=$SEQ -o "$INT4F16"
  timed "etllm-export Q4_0 -> cpu-int4" "$EXPORT" --quiet --model "$Q4" \
    --pipeline cpu-int4 --set model.max_seq_len=$SEQ -o "$INT4"
fi
for f in "$F16" "$Q4" "$INT4" "$DA4W" "$INT4F16"; do
  [ -f "$f" ] || die "$f is missing (run without SKIP_CONVERT=1)"
done

# benched PREFIX CMD...: runs a bench (stdout to PREFIX.json, stderr to
# PREFIX.log) and writes to PREFIX.load the CPU seconds that *other*
# processes used while it ran (all CPUs' busy time from /proc/stat minus the
# bench's own, from getrusage), its wall seconds and the 1-minute load. The
# load average alone cannot tell: on a 2-CPU machine the bench's own threads
# raise it past half the CPUs.
benched() {
  local prefix="$1"; shift
  "$PY" - "$prefix" "$@" <<'EOF'
import os, resource, subprocess, sys, time
prefix, cmd = sys.argv[1], sys.argv[2:]
hz = os.sysconf("SC_CLK_TCK")
def busy():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / hz  # all but idle and iowait
b0, t0 = busy(), time.monotonic()
with open(prefix + ".json", "w") as out, open(prefix + ".log", "w") as err:
    rc = subprocess.call(cmd, stdout=out, stderr=err)
wall, b1 = time.monotonic() - t0, busy()
if rc:
    sys.exit(f"bench-vs-llamacpp: error: {cmd[0]} failed ({rc}), see {prefix}.log")
u = resource.getrusage(resource.RUSAGE_CHILDREN)
other = max(0.0, (b1 - b0) - (u.ru_utime + u.ru_stime))
load = open("/proc/loadavg").read().split()[0]
with open(prefix + ".load", "w") as f:
    f.write(f"{other:.2f} {wall:.2f} {load}\n")
EOF
}

# 3. Benches, interleaved (SKIP_BENCH=1: keep the results of a previous run).
for round in $(seq 1 "$ROUNDS"); do
  [ "${SKIP_BENCH:-0}" = 1 ] && [ -f "$R/etllm-bench.$round.json" ] && continue
  say "round $round/$ROUNDS: llama-bench"
  benched "$R/llama-bench.$round" "$LLAMA_BENCH" -m "$Q4" -p "$PROMPT" -n "$GEN" \
    -t "$THREADS" -r "$REPS" -o json
  say "round $round/$ROUNDS: etllm-bench"
  benched "$R/etllm-bench.$round" "$BENCH" -m "$INT4,$DA4W" -p "$PROMPT" -n "$GEN" \
    -t "$THREADS" -r "$REPS" -o json
done

# 4. Perplexity on the same text.
say "perplexity"
ST_GGUF="$SHARED_DIR/models/stories260K/stories260K.gguf"
: > "$R/perplexity.txt"
llama_ppl() { # NAME MODEL CTX [CHUNKS]
  local extra=()
  [ -n "${4:-}" ] && extra=(--chunks "$4")
  local v="" try log="$R/perplexity.$(echo "$1" | tr -c 'A-Za-z0-9_\n' '_').log"
  # llama.cpp logs from a thread: at exit its last line ("Final estimate")
  # is sometimes lost when the output is a file; run again then.
  for try in 1 2 3; do
    "$LLAMA_PERPLEXITY" -m "$2" -f "$TEXT" -c "$3" -t "${THREADS##*,}" "${extra[@]}" \
      > "$log" 2>&1 || die "llama-perplexity failed on $2 (see $log)"
    v=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\).*/\1 \2/p' "$log")
    [ -n "$v" ] && break
  done
  [ -n "$v" ] || die "llama-perplexity gave no estimate for $2 (see $log)"
  echo "$1 $v" >> "$R/perplexity.txt"
}
etllm_ppl() { # NAME PROGRAM CTX [CHUNKS]
  local extra=()
  [ -n "${4:-}" ] && extra=(--chunks "$4")
  local v log="$R/perplexity.$(echo "$1" | tr -c 'A-Za-z0-9_\n' '_').log"
  "$BENCH" -m "$2" -f "$TEXT" -c "$3" -t "${THREADS##*,}" "${extra[@]}" \
    > "$log" 2>&1 || die "etllm-bench -f failed on $2 (see $log)"
  v=$(sed -n 's/^Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\)$/\1 \2/p' "$log")
  [ -n "$v" ] || die "etllm-bench gave no estimate for $2 (see $log)"
  echo "$1 $v" >> "$R/perplexity.txt"
}
if [ -f "$ST_GGUF" ]; then
  for recipe in portable cpu-fp32 cpu-int8 cpu-int4 cpu-8da4w; do
    "$EXPORT" --quiet --model "$ST_GGUF" --pipeline "$recipe" \
      --set model.max_seq_len=128 -o "$W/stories260K-$recipe.pte"
    etllm_ppl "stories260K etllm $recipe" "$W/stories260K-$recipe.pte" 128
  done
  llama_ppl "stories260K llama.cpp F32" "$ST_GGUF" 128
  # (llama-quantize falls back to F16 for ffn_down, whose 172
  # columns are no multiple of 32.)
  for q in Q8_0 Q4_0; do
    "$LLAMA_QUANTIZE" --pure "$ST_GGUF" "$W/stories260K-$q.gguf" $q > /dev/null 2>&1 ||
      die "llama-quantize $q failed on $ST_GGUF"
    llama_ppl "stories260K llama.cpp $q" "$W/stories260K-$q.gguf" 128
  done
else
  say "no $ST_GGUF: skipping the stories260K perplexity"
fi
llama_ppl "$SHAPE model llama.cpp F16" "$F16" "$PPL_CTX" "$PPL_CHUNKS"
llama_ppl "$SHAPE model llama.cpp Q4_0" "$Q4" "$PPL_CTX" "$PPL_CHUNKS"
etllm_ppl "$SHAPE model etllm cpu-int4 (from Q4_0)" "$INT4" "$PPL_CTX" "$PPL_CHUNKS"
etllm_ppl "$SHAPE model etllm cpu-8da4w (from F16)" "$DA4W" "$PPL_CTX" "$PPL_CHUNKS"

# 5. The report.
say "summary"
"$PY" - "$R" "$ROUNDS" "$Q4" "$INT4" "$DA4W" "$INT4F16" "$LAYERS" "$KV_HEADS" "$HEAD_DIM" "$(thp_mode)" <<'EOF'
import json, os, statistics, sys
R, rounds, q4, int4, da4w, int4f16 = sys.argv[1], int(sys.argv[2]), *sys.argv[3:7]
layers, kv_heads, head_dim = map(int, sys.argv[7:10])
thp = sys.argv[10]
def load(kind):
    out = []
    for r in range(1, rounds + 1):
        out += json.load(open(f"{R}/{kind}.{r}.json"))
    return out
def test(t):
    return ("pp%d" % t["n_prompt"]) if t["n_prompt"] else ("tg%d" % t["n_gen"])
lb, eb = load("llama-bench"), load("etllm-bench")
series = {}
for t in lb:
    series.setdefault(("llama.cpp Q4_0", test(t), t["n_threads"]), []).append(t)
names = {int4: "etllm cpu-int4 (from Q4_0)", da4w: "etllm cpu-8da4w (from F16)"}
bw = {}
for t in eb:
    series.setdefault((names[t["model_filename"]], test(t), t["n_threads"]), []).append(t)
    bw.setdefault(t["n_threads"], []).append(t["bandwidth_bytes_per_s"])
def rng(v, fmt="%.1f"):
    return (fmt % min(v)) if min(v) == max(v) else (fmt + "-" + fmt) % (min(v), max(v))
tests = sorted({(k[1], k[2]) for k in series}, key=lambda x: (x[1], x[0][:2] != "pp", x[0]))
rows = []
print("\n## Speed (tok/s: range of the per-run means over %d interleaved runs)\n" % rounds)
print("| test | threads | llama.cpp Q4_0 | etllm int4 (from Q4_0) | ratio | etllm 8da4w (from F16) | ratio | roofline int4 / 8da4w / llama.cpp |")
print("|---|---|---|---|---|---|---|---|")
for name, th in tests:
    l = [t["avg_ts"] for t in series.get(("llama.cpp Q4_0", name, th), [])]
    a = series.get((names[int4], name, th), [])
    b = series.get((names[da4w], name, th), [])
    ta, tb = [t["avg_ts"] for t in a], [t["avg_ts"] for t in b]
    ml = statistics.median(l)
    roof = ""
    if name.startswith("tg") and a and b:
        bwt = max(bw[th])
        # llama.cpp's bytes per token: its weights (model_size) + its f16 KV
        # cache (2 x layers x kv_heads x head_dim x 2 bytes per position).
        kv = 2 * layers * kv_heads * head_dim * 2
        lbytes = series[("llama.cpp Q4_0", name, th)][0]["model_size"] + kv * (a[0]["n_gen"] + 1) / 2
        lr = ml * lbytes / bwt
        roof = "%.0f%% / %.0f%% / %.0f%%" % (100 * statistics.median(t["roofline"] for t in a),
                                           100 * statistics.median(t["roofline"] for t in b), 100 * lr)
    print(f"| {name} | {th} | {rng(l)} | {rng(ta)} | {statistics.median(ta) / ml:.2f}x | "
          f"{rng(tb)} | {statistics.median(tb) / ml:.2f}x | {roof} |")
print("\nMemory read bandwidth (etllm-bench's probe, best per run, GB/s): " +
      "; ".join(f"{th} thread(s) {rng([x / 1e9 for x in v], '%.2f')}" for th, v in sorted(bw.items())))
print(f"Transparent huge pages: {thp}" + ("" if thp == "always" else
      " (llama.cpp's repacked weights in 4 KiB pages; THP=always gives both tools huge pages)"))
# Each .load: other processes' CPU seconds, wall seconds, 1-minute load.
runs = {k: [open(f"{R}/{k}.{r}.load").read().split() for r in range(1, rounds + 1)]
        for k in ("llama-bench", "etllm-bench")}
print("CPU time other processes used during each run (of its wall time): " + "; ".join(
    k + " " + ", ".join(f"{float(o):.1f} s of {float(w):.0f} s" for o, w, *_ in v)
    for k, v in runs.items()))
share = max(float(o) / float(w) for v in runs.values() for o, w, *_ in v)
if share > 0.05:
    print(f"\n**Other processes used up to {100 * share:.0f}% of a CPU during a run: "
          "these timings are not reliable.**")
print("\n## Files\n")
print("| file | bytes | MiB | vs the Q4_0 GGUF |")
print("|---|---|---|---|")
q4s = os.path.getsize(q4)
for f in (q4, int4, da4w, int4f16):
    s = os.path.getsize(f)
    print(f"| {os.path.basename(f)} | {s} | {s / 2**20:.1f} | {s / q4s:.3f}x |")
print("\n## Conversion (wall and CPU seconds, peak RSS)\n")
conv = [l.rstrip("\n").split("|") for l in open(f"{R}/convert.txt") if l.strip()]
base = next(c for c in conv if c[0].startswith("llama-quantize"))
print("| conversion | wall s | vs llama-quantize | CPU s | vs llama-quantize | peak RSS MiB | load |")
print("|---|---|---|---|---|---|---|")
for name, s, cpu, kb, load in conv:
    print(f"| {name} | {float(s):.2f} | {float(s) / float(base[1]):.2f}x | {float(cpu):.2f} | "
          f"{float(cpu) / float(base[2]):.2f}x | {int(kb) / 1024:.0f} | {load} |")
print("\n## Perplexity of test/Inputs/perplexity-story.txt\n")
print("| model | PPL | +/- |")
print("|---|---|---|")
for l in open(f"{R}/perplexity.txt"):
    name, p, u = l.rstrip("\n").rsplit(" ", 2)
    print(f"| {name} | {float(p):.4f} | {float(u):.4f} |")
EOF
say "raw outputs are in $R"
