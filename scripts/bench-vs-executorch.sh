#!/usr/bin/env bash
# etllm against ExecuTorch on the same weights (issue 31): SmolLM2-135M-
# Instruct from its Q4_1 GGUF (scripts/fetch-real-models.py smollm2), the
# same machine, one run.
#
#   scripts/bench-vs-executorch.sh
#
# 1. makes sure ExecuTorch's own virtual environment exists (ET_VENV; made
#    with pip when missing, never the project's) and prints its versions;
# 2. ExecuTorch's side: the float Hugging Face form of the GGUF
#    (transformers' GGUF loader), the Meta-format checkpoint and params its
#    llama export reads, the 128-token prompt, then ExecuTorch's export_llm:
#    XNNPACK, 8da4w (int4 weights in groups of GROUP_SIZE, int8 dynamic
#    activations), int8 per-row embedding, KV cache, custom SDPA with KV
#    cache, fp32 (ET_EXPORT_ARGS below is the exact configuration), timed
#    (wall seconds, peak RSS), and the .pte's size;
# 3. etllm-export of the same GGUF with ETLLM_PIPELINE, timed the same way;
# 4. ROUNDS interleaved rounds; in each, for every thread count: ExecuTorch's
#    TextLLMRunner (its C++ runner through its Python bindings, the XNNPACK
#    threadpool set to the thread count) then etllm-run, both greedy on the
#    same prompt (PROMPT tokens, GEN new ones, a warm-up then REPS timed
#    generations for the runner); then etllm-bench -p PROMPT -n GEN -t
#    THREADS, which also probes the memory read bandwidth;
# 5. greedy-text agreement: AGREE greedy tokens of the float model
#    (transformers, float32; the reference), of ExecuTorch's program and of
#    etllm's, side by side, with the number of leading tokens equal to the
#    reference's;
# 6. a summary table: medians over the rounds and their ranges, ratios
#    etllm / ExecuTorch.
# Everything is printed as it comes and kept under WORK_DIR. Settings
# (defaults in brackets):
#   ETLLM_BUILD_DIR etllm build directory [<repo>/build]
#   ET_VENV         ExecuTorch's virtual environment
#                   [~/.cache/etllm/executorch-venv]
#   ET_PYTHON       Python 3.10-3.12 that makes ET_VENV when it is missing
#                   [python3.11]
#   ET_VERSION TORCH_VERSION   installed into a new ET_VENV [1.5.1 2.13.0]:
#                   ExecuTorch 1.5 is built against torch 2.13 (its
#                   torch_pin.py); its wheel does not require torch itself
#   GGUF            the model [smollm2 from fetch-real-models.py --offline]
#   WORK_DIR        models, programs and logs, outside the repository
#                   [/tmp/etllm-vs-executorch]
#   ETLLM_PIPELINE  etllm's recipe [cpu-8da4w]
#   GROUP_SIZE      ExecuTorch's 8da4w group size [32, etllm's]
#   PROMPT GEN THREADS REPS ROUNDS AGREE   [128 64 1,2 3 3 32]
#   TEXT            where the prompt comes from: its first PROMPT tokens
#                   [/usr/share/common-licenses/GPL-3]
#   SKIP_CONVERT=1  reuse the models and programs in WORK_DIR
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
me=bench-vs-executorch
die() { echo "$me: error: $*" >&2; exit 1; }
B="${ETLLM_BUILD_DIR:-$repo/build}/bin"
ET_VENV="${ET_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/etllm/executorch-venv}"
ET_PYTHON="${ET_PYTHON:-python3.11}"
ET_VERSION="${ET_VERSION:-1.5.1}" TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
W="${WORK_DIR:-/tmp/etllm-vs-executorch}"
case "$W" in "$repo"|"$repo"/*) die "WORK_DIR must be outside the repository";; esac
ETLLM_PIPELINE="${ETLLM_PIPELINE:-cpu-8da4w}"
GROUP_SIZE="${GROUP_SIZE:-32}"
PROMPT="${PROMPT:-128}" GEN="${GEN:-64}" THREADS="${THREADS:-1,2}"
REPS="${REPS:-3}" ROUNDS="${ROUNDS:-3}" AGREE="${AGREE:-32}"
TEXT="${TEXT:-/usr/share/common-licenses/GPL-3}"
for v in PROMPT GEN REPS ROUNDS AGREE GROUP_SIZE; do
  [[ "${!v}" =~ ^[1-9][0-9]{0,6}$ ]] || die "$v must be a positive integer, not '${!v}'"
done
[[ "$THREADS" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "THREADS must be a comma list, not '$THREADS'"
(( AGREE <= GEN )) || die "AGREE ($AGREE) must not exceed GEN ($GEN)"
for t in etllm-export etllm-run etllm-bench; do
  [ -x "$B/$t" ] || die "no $B/$t (build it, or set ETLLM_BUILD_DIR)"
done
[ -f "$TEXT" ] || die "no prompt text $TEXT"
if [ -z "${GGUF:-}" ]; then
  PY="$("$repo/scripts/venv.sh" python 2>/dev/null || command -v python3)"
  GGUF="$("$PY" "$repo/scripts/fetch-real-models.py" --offline --path smollm2)" ||
    die "smollm2 is not in the cache: run scripts/fetch-real-models.py smollm2"
fi
[ -f "$GGUF" ] || die "no model $GGUF"
HELPER="$repo/scripts/bench-vs-executorch.py"
CONTEXT=$(( PROMPT + GEN ))
# shellcheck source=lib/thp.sh
. "$repo/scripts/lib/thp.sh"
thp_apply "$me"
mkdir -p "$W"
say() { echo "== $* ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"; }
say "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, transparent huge pages: $(thp_mode)"
TIMEFMT="%e s wall, %U+%S s CPU, %M KB peak RSS"
# No progress bars, no Python warnings in the logs.
export TQDM_DISABLE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 PYTHONWARNINGS=ignore
EP="$ET_VENV/bin/python"
helper() { "$EP" "$HELPER" "$@"; }
# The RESULT line of a helper's log, or die naming the log.
result_of() { grep -m1 '^RESULT ' "$1" | cut -c8- || die "no result in $1 (see it)"; }

# 1. ExecuTorch's environment.
et_ok() {
  [ -x "$EP" ] && "$EP" -c 'import executorch.extension.llm.runner, torch, transformers, gguf, accelerate' 2>/dev/null
}
if ! et_ok; then
  say "making ExecuTorch's environment in $ET_VENV (executorch==$ET_VERSION, torch==$TORCH_VERSION)"
  command -v "$ET_PYTHON" > /dev/null || die "no $ET_PYTHON to make $ET_VENV with (set ET_PYTHON)"
  [ -x "$EP" ] || "$ET_PYTHON" -m venv "$ET_VENV"
  # transformers' GGUF loader needs gguf and accelerate.
  "$EP" -m pip install --quiet "executorch==$ET_VERSION" "torch==$TORCH_VERSION" \
    transformers gguf accelerate safetensors || die "pip install into $ET_VENV failed"
  et_ok || die "$ET_VENV still lacks a package (see the pip output above)"
fi
helper versions > "$W/versions.log" 2>&1 || die "versions failed (see $W/versions.log)"
echo "ExecuTorch environment $ET_VENV: $(result_of "$W/versions.log")"

# 2. ExecuTorch's side of the weights, and its export.
HF="$W/hf" CKPT="$W/smollm2.meta.pth" PARAMS="$W/smollm2.params.json"
PROMPT_FILE="$W/prompt.txt" ET_PTE="$W/smollm2.executorch-8da4w.pte"
ETLLM_PTE="$W/smollm2.etllm-$ETLLM_PIPELINE.pte"
ET_METADATA="{\"get_bos_id\":1,\"get_eos_ids\":[2]}"
# ExecuTorch's export configuration (export_llm's Hydra keys). The program
# takes at most max_seq_length - 1 tokens per call (the builder's dynamic
# dimension) while the runner prefills in chunks of max_seq_length: with
# max_seq_length = PROMPT the prompt would not fit one call; both lengths are
# PROMPT + GEN, as etllm's model.max_seq_len.
ET_EXPORT_ARGS=(
  base.model_class=smollm2 "base.checkpoint=$CKPT" "base.params=$PARAMS"
  "base.metadata='$ET_METADATA'"
  model.use_kv_cache=True model.use_sdpa_with_kv_cache=True
  model.dtype_override=fp32
  "export.max_seq_length=$CONTEXT" "export.max_context_length=$CONTEXT"
  "export.output_dir=$W" "export.output_name=$(basename "$ET_PTE")"
  quantization.qmode=8da4w "quantization.group_size=$GROUP_SIZE"
  "quantization.embedding_quantize='8,0'"
  backend.xnnpack.enabled=True backend.xnnpack.extended_ops=True
)
if [ "${SKIP_CONVERT:-0}" != 1 ]; then
  cat "$GGUF" > /dev/null  # every reader starts from a warm page cache
  say "float Hugging Face model from $GGUF (transformers' GGUF loader)"
  /usr/bin/time -f "$TIMEFMT" -o "$W/hf.time" "$EP" "$HELPER" hf-from-gguf "$GGUF" "$HF" > "$W/hf.log" 2>&1 ||
    die "hf-from-gguf failed (see $W/hf.log)"
  echo "  $(result_of "$W/hf.log"); $(cat "$W/hf.time")"
  say "Meta-format checkpoint and params for ExecuTorch's llama export"
  /usr/bin/time -f "$TIMEFMT" -o "$W/meta.time" "$EP" "$HELPER" meta-checkpoint "$HF" "$CKPT" "$PARAMS" > "$W/meta.log" 2>&1 ||
    die "meta-checkpoint failed (see $W/meta.log)"
  echo "  $(result_of "$W/meta.log"); $(cat "$W/meta.time")"
  helper prompt "$HF" "$TEXT" "$PROMPT" "$PROMPT_FILE" > "$W/prompt.log" 2>&1 ||
    die "prompt failed (see $W/prompt.log)"
  echo "  prompt: $(result_of "$W/prompt.log")"
  say "ExecuTorch export_llm: ${ET_EXPORT_ARGS[*]}"
  rm -f "$ET_PTE"
  # In WORK_DIR: export_llm writes the program to export.output_name
  # relative to the working directory (not export.output_dir), and Hydra
  # its outputs/ folder there.
  (cd "$W" && /usr/bin/time -f "$TIMEFMT" -o "$W/executorch-export.time" \
    "$EP" -m executorch.extension.llm.export.export_llm "${ET_EXPORT_ARGS[@]}" \
    > "$W/executorch-export.log" 2>&1) || die "export_llm failed (see $W/executorch-export.log)"
  [ -f "$ET_PTE" ] || die "export_llm wrote no $ET_PTE (see $W/executorch-export.log)"
  say "etllm-export --pipeline $ETLLM_PIPELINE"
  /usr/bin/time -f "$TIMEFMT" -o "$W/etllm-export.time" \
    "$B/etllm-export" --quiet --model "$GGUF" --pipeline "$ETLLM_PIPELINE" \
    --set "model.max_seq_len=$CONTEXT" -o "$ETLLM_PTE" > "$W/etllm-export.log" 2>&1 ||
    die "etllm-export failed (see $W/etllm-export.log)"
fi
for f in "$ET_PTE" "$ETLLM_PTE" "$PROMPT_FILE" "$HF/tokenizer.json"; do
  [ -f "$f" ] || die "$f is missing (run without SKIP_CONVERT=1)"
done
for s in executorch etllm; do
  pte="$ET_PTE"; [ $s = etllm ] && pte="$ETLLM_PTE"
  echo "export $s: $(cat "$W/$s-export.time" 2>/dev/null || echo 'not timed (SKIP_CONVERT)'); $(stat -c %s "$pte") bytes ($(basename "$pte")); the GGUF: $(stat -c %s "$GGUF") bytes"
done

# 4. Interleaved rounds. Each run's figures go to $W/runs.jsonl.
RUNS="$W/runs.jsonl"
: > "$RUNS"
prompt_text="$(cat "$PROMPT_FILE")"
for r in $(seq 1 "$ROUNDS"); do
  for t in ${THREADS//,/ }; do
    say "round $r/$ROUNDS, $t thread(s): ExecuTorch TextLLMRunner"
    log="$W/executorch-run.$r.t$t.log"
    helper run "$ET_PTE" "$HF/tokenizer.json" "$PROMPT_FILE" --threads "$t" --gen "$GEN" \
      --reps "$REPS" > "$log" 2>&1 || die "the ExecuTorch runner failed (see $log)"
    res="$(result_of "$log")"
    echo "{\"system\":\"executorch\",\"round\":$r,\"threads\":$t,\"run\":$res}" >> "$RUNS"
    "$EP" -c 'import json,sys; d=json.loads(sys.argv[1]); print("  prefill %s tok/s, decode %s tok/s, TTFT %s ms, prompt %s tokens, generated %s, threadpool %s, peak RSS %d KB (%d KB before the model)" % (d["pp_tok_s"], d["tg_tok_s"], d["ttft_ms"], d["prompt_tokens"], d["generated"], d["threadpool_after"], d["peak_rss_kb"], d["rss_before_load_kb"]))' "$res"
    say "round $r/$ROUNDS, $t thread(s): etllm-run"
    for k in $(seq 1 "$REPS"); do
      log="$W/etllm-run.$r.t$t.$k"
      "$B/etllm-run" "$ETLLM_PTE" --prompt "$prompt_text" -n "$GEN" --temperature 0 --no-bos \
        --no-context-shift --threads "$t" --stats-json > "$log.out" 2> "$log.err" ||
        die "etllm-run failed (see $log.err)"
      res="$(grep -m1 '^{' "$log.err")" || die "no statistics in $log.err"
      echo "{\"system\":\"etllm\",\"round\":$r,\"threads\":$t,\"rep\":$k,\"run\":$res}" >> "$RUNS"
      echo "  $res"
    done
  done
  say "round $r/$ROUNDS: etllm-bench"
  "$B/etllm-bench" -m "$ETLLM_PTE" -p "$PROMPT" -n "$GEN" -t "$THREADS" -r "$REPS" -oe jsonl \
    2> "$W/etllm-bench.$r.log" | tee "$W/etllm-bench.$r.md"
  grep -E 'bandwidth|reads' "$W/etllm-bench.$r.log" || true
  grep '^{' "$W/etllm-bench.$r.log" | sed "s/^/{\"system\":\"etllm-bench\",\"round\":$r,\"run\":/; s/\$/}/" >> "$RUNS"
done

# 5. Greedy-text agreement.
say "greedy text, $AGREE tokens: the float model (transformers)"
helper reference "$HF" "$PROMPT_FILE" "$AGREE" > "$W/reference.log" 2>&1 ||
  die "the float reference failed (see $W/reference.log)"
"$B/etllm-run" "$ETLLM_PTE" --prompt "$prompt_text" -n "$AGREE" --temperature 0 --no-bos \
  --no-context-shift --threads "${THREADS%%,*}" > "$W/etllm-agree.out" 2> "$W/etllm-agree.err" ||
  die "etllm-run failed (see $W/etllm-agree.err)"
helper agreement "$HF" "$PROMPT_FILE" "$AGREE" "$W/reference.log" \
  "$W/executorch-run.1.t${THREADS%%,*}.log" "$W/etllm-agree.out"

# 6. The summary.
helper summary "$RUNS" "$W" "$PROMPT" "$GEN"
say "done; raw outputs in $W"
