#!/usr/bin/env bash
# The mixture-of-experts benchmark of docs/Performance.md ("Mixture of
# experts: the Qwen3-30B-A3B shape"): a Qwen3-MoE of the Qwen3-30B-A3B layer
# shape (hidden 2048, 32/4 heads of 128, 128 experts of 768, 8 per token)
# with LAYERS layers, and a dense Qwen3 with the same active parameters
# (ffn 8 x 768 = 6144), both with vocabulary VOCAB, made by
# etllm-gen-checkpoint as F16 GGUFs, turned into Q4_0 by llama-quantize
# --pure and into cpu-int4 programs by etllm-export from the Q4_0 files;
# then ROUNDS interleaved rounds of llama-bench (MoE GGUF), etllm-bench (both
# programs) and llama-bench (dense GGUF).
#
#   LLAMA_CPP_DIR=/path/to/llama.cpp/build scripts/bench-moe-vs-llamacpp.sh
#
# Settings (environment, defaults in brackets): ETLLM_BUILD_DIR
# [<repo>/build], WORK_DIR [/tmp/etllm-moe-bench; about 8 GB while
# converting], LAYERS [4], VOCAB [32000], ROUNDS [2], and the bench flags
# PROMPT GEN THREADS REPS [128 64 1,2 3]. SKIP_CONVERT=1 reuses the files.
# THP: keep [default] or always (transparent huge pages for the run; needs
# root; scripts/lib/thp.sh says why it matters for llama.cpp).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/thp.sh
. "$repo/scripts/lib/thp.sh"
thp_apply bench-moe-vs-llamacpp
: "${LLAMA_CPP_DIR:?set LLAMA_CPP_DIR to a llama.cpp build directory}"
B="${ETLLM_BUILD_DIR:-$repo/build}/bin"
L="$LLAMA_CPP_DIR"
[ -x "$L/llama-bench" ] || L="$LLAMA_CPP_DIR/bin"
W="${WORK_DIR:-/tmp/etllm-moe-bench}"
LAYERS="${LAYERS:-4}" VOCAB="${VOCAB:-32000}" ROUNDS="${ROUNDS:-2}"
PROMPT="${PROMPT:-128}" GEN="${GEN:-64}" THREADS="${THREADS:-1,2}" REPS="${REPS:-3}"
for t in "$L/llama-bench" "$L/llama-quantize" "$B/etllm-bench" "$B/etllm-export" \
         "$B/etllm-gen-checkpoint"; do
  [ -x "$t" ] || { echo "bench-moe-vs-llamacpp: no $t" >&2; exit 1; }
done
mkdir -p "$W"
cd "$W"
if [ "${SKIP_CONVERT:-0}" != 1 ]; then
  "$B/etllm-gen-checkpoint" --arch qwen3moe --preset qwen3-30b-a3b --layers "$LAYERS" \
    --vocab "$VOCAB" --format gguf --dtype f16 -o moe-f16.gguf > /dev/null
  "$B/etllm-gen-checkpoint" --arch qwen3 --format gguf --dtype f16 --hidden 2048 \
    --layers "$LAYERS" --heads 32 --kv-heads 4 --head-dim 128 --ffn 6144 \
    --vocab "$VOCAB" --max-seq 40960 --untied -o dense-f16.gguf > /dev/null
  for m in moe dense; do
    "$L/llama-quantize" --pure "$m-f16.gguf" "$m-q4_0.gguf" Q4_0 > "$m-quantize.log" 2>&1
    "$B/etllm-export" --quiet --model "$m-q4_0.gguf" --pipeline cpu-int4 \
      --set model.max_seq_len=512 -o "$m-int4.pte"
    rm -f "$m-f16.gguf"
  done
fi
flags=(-p "$PROMPT" -n "$GEN" -t "$THREADS" -r "$REPS")
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r/$ROUNDS ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg), transparent huge pages: $(thp_mode))"
  "$L/llama-bench" -m moe-q4_0.gguf "${flags[@]}" 2>&1 | grep -E '^\| (model|.*(pp|tg)[0-9])'
  "$B/etllm-bench" -m moe-int4.pte,dense-int4.pte "${flags[@]}" 2>&1 |
    grep -E '^\| (model|.*(pp|tg)[0-9])|bandwidth|reads'
  "$L/llama-bench" -m dense-q4_0.gguf "${flags[@]}" 2>&1 | grep -E '^\| .*(pp|tg)[0-9]'
done
