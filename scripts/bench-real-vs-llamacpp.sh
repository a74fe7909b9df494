#!/usr/bin/env bash
# etllm against llama.cpp on real GGUF models (issue 31), the same machine,
# one run: the models scripts/fetch-real-models.py caches (SmolLM2-135M-
# Instruct Q4_1, Gemma 3 270M Q4_K_M), or the GGUFs given in MODELS.
#
#   LLAMA_CPP_DIR=/path/to/llama.cpp/build scripts/bench-real-vs-llamacpp.sh
#
# For each model:
# 1. exports it with etllm-export, timed (wall seconds, peak RSS): the
#    keeping recipe cpu-gguf (the GGUF's own blocks, bit for bit) and
#    cpu-8da4w (re-quantized), and prints each file's size against the
#    GGUF's;
# 2. runs llama-bench on the GGUF and etllm-bench on both programs,
#    interleaved (A B A B ...; the same -p/-n/-t/-r); etllm-bench also
#    probes the memory read bandwidth in every run;
# 3. computes the perplexity of TEXT with llama-perplexity and etllm-bench -f
#    (same context, same chunks, the same thread count).
# Everything is printed as it comes (llama-bench's and etllm-bench's own
# markdown tables), and kept under WORK_DIR. Settings (defaults in brackets):
#   LLAMA_CPP_DIR   llama.cpp build directory (bin/ inside it, or bin itself)
#   ETLLM_BUILD_DIR etllm build directory [<repo>/build]
#   MODELS          GGUF files, space-separated [smollm2 and gemma3 from
#                   fetch-real-models.py --offline --path]
#   WORK_DIR        programs and logs, outside the repository
#                   [/tmp/etllm-real-vs-llamacpp]
#   PROMPT GEN THREADS REPS ROUNDS   [128 64 1,2 3 3]
#   TEXT PPL_CTX PPL_CHUNKS   perplexity text, window and windows
#                   [/usr/share/common-licenses/GPL-3 256 4]: the GNU GPL v3,
#                   which Debian's base-files package puts on every machine
#                   of this kind (real English prose, fixed bytes)
#   SKIP_CONVERT=1  reuse the programs in WORK_DIR
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
me=bench-real-vs-llamacpp
die() { echo "$me: error: $*" >&2; exit 1; }
: "${LLAMA_CPP_DIR:?set LLAMA_CPP_DIR to a llama.cpp build directory}"
B="${ETLLM_BUILD_DIR:-$repo/build}/bin"
L="$LLAMA_CPP_DIR"
[ -x "$L/llama-bench" ] || L="$LLAMA_CPP_DIR/bin"
W="${WORK_DIR:-/tmp/etllm-real-vs-llamacpp}"
case "$W" in "$repo"|"$repo"/*) die "WORK_DIR must be outside the repository";; esac
PROMPT="${PROMPT:-128}" GEN="${GEN:-64}" THREADS="${THREADS:-1,2}"
REPS="${REPS:-3}" ROUNDS="${ROUNDS:-3}"
TEXT="${TEXT:-/usr/share/common-licenses/GPL-3}"
PPL_CTX="${PPL_CTX:-256}" PPL_CHUNKS="${PPL_CHUNKS:-4}"
for v in PROMPT GEN REPS ROUNDS PPL_CTX PPL_CHUNKS; do
  [[ "${!v}" =~ ^[1-9][0-9]{0,6}$ ]] || die "$v must be a positive integer, not '${!v}'"
done
[[ "$THREADS" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "THREADS must be a comma list, not '$THREADS'"
for t in "$L/llama-bench" "$L/llama-perplexity" "$B/etllm-bench" "$B/etllm-export"; do
  [ -x "$t" ] || die "no $t"
done
[ -f "$TEXT" ] || die "no perplexity text $TEXT"
if [ -z "${MODELS:-}" ]; then
  PY="$("$repo/scripts/venv.sh" python 2>/dev/null || command -v python3)"
  MODELS=""
  for m in smollm2 gemma3; do
    p="$("$PY" "$repo/scripts/fetch-real-models.py" --offline --path "$m")" ||
      die "$m is not in the cache: run scripts/fetch-real-models.py $m"
    MODELS="$MODELS $p"
  done
fi
# shellcheck source=lib/thp.sh
. "$repo/scripts/lib/thp.sh"
thp_apply "$me"
mkdir -p "$W"
say() { echo "== $* ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"; }
say "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, transparent huge pages: $(thp_mode)"

programs=()
for gguf in $MODELS; do
  [ -f "$gguf" ] || die "no model $gguf"
  name="$(basename "$gguf" .gguf)"
  for recipe in cpu-gguf cpu-8da4w; do
    pte="$W/$name.$recipe.pte"
    programs+=("$pte")
    if [ "${SKIP_CONVERT:-0}" != 1 ]; then
      cat "$gguf" > /dev/null  # both tools read a warm page cache
      /usr/bin/time -f "%e s wall, %U+%S s CPU, %M KB peak RSS" -o "$W/$name.$recipe.time" \
        "$B/etllm-export" --quiet --model "$gguf" --pipeline "$recipe" \
        --set model.max_seq_len=$(( PPL_CTX > PROMPT + GEN ? PPL_CTX : PROMPT + GEN )) \
        -o "$pte" || die "etllm-export $recipe failed on $gguf"
    fi
    [ -f "$pte" ] || die "$pte is missing (run without SKIP_CONVERT=1)"
    echo "export $name $recipe: $(cat "$W/$name.$recipe.time" 2>/dev/null || echo 'not timed (SKIP_CONVERT)');" \
      "$(stat -c %s "$pte") bytes = $(python3 -c "import sys; print('%.4f' % (int(sys.argv[1]) / int(sys.argv[2])))" \
         "$(stat -c %s "$pte")" "$(stat -c %s "$gguf")")x the GGUF ($(stat -c %s "$gguf") bytes)"
  done
done

flags=(-p "$PROMPT" -n "$GEN" -t "$THREADS" -r "$REPS")
ggufs="$(echo $MODELS | tr ' ' ',')"
ptes="$(IFS=,; echo "${programs[*]}")"
for r in $(seq 1 "$ROUNDS"); do
  say "round $r/$ROUNDS: llama-bench"
  "$L/llama-bench" -m "$ggufs" "${flags[@]}" 2> "$W/llama-bench.$r.log" | tee "$W/llama-bench.$r.md"
  say "round $r/$ROUNDS: etllm-bench"
  "$B/etllm-bench" -m "$ptes" "${flags[@]}" 2> "$W/etllm-bench.$r.log" | tee "$W/etllm-bench.$r.md"
  grep -E 'bandwidth|reads' "$W/etllm-bench.$r.log" || true
done

say "perplexity of $TEXT (context $PPL_CTX, $PPL_CHUNKS chunks, ${THREADS##*,} threads)"
for gguf in $MODELS; do
  name="$(basename "$gguf" .gguf)"
  v=""
  # llama.cpp logs from a thread: at exit its last line is sometimes lost
  # when the output is a file; run again then.
  for try in 1 2 3; do
    "$L/llama-perplexity" -m "$gguf" -f "$TEXT" -c "$PPL_CTX" --chunks "$PPL_CHUNKS" \
      -t "${THREADS##*,}" > "$W/$name.llama-perplexity.log" 2>&1 ||
      die "llama-perplexity failed on $gguf (see $W/$name.llama-perplexity.log)"
    v=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\).*/\1 +\/- \2/p' "$W/$name.llama-perplexity.log")
    [ -n "$v" ] && break
  done
  echo "perplexity $name llama.cpp: ${v:-none (see $W/$name.llama-perplexity.log)}"
  for recipe in cpu-gguf cpu-8da4w; do
    log="$W/$name.$recipe.perplexity.log"
    "$B/etllm-bench" -m "$W/$name.$recipe.pte" -f "$TEXT" -c "$PPL_CTX" --chunks "$PPL_CHUNKS" \
      -t "${THREADS##*,}" > "$log" 2>&1 || die "etllm-bench -f failed (see $log)"
    echo "perplexity $name etllm $recipe: $(sed -n 's/^Final estimate: PPL = //p' "$log")"
  done
done
say "done; raw outputs in $W"
