#!/usr/bin/env bash
# Host instructions per decoded token of a program with a Vulkan delegate:
# what the CPU executes inside the delegate's calls (copying the inputs into
# the arena, the globals, vkQueueSubmit, waiting on the fence, the outputs),
# counted by callgrind - not the device's work. On lavapipe the device is
# the CPU too, but its shaders run on its own threads; the toggle collects
# only the calling thread inside VulkanInstance::execute.
#
#   scripts/vulkan-host-instructions.sh MODEL.pte [SHORT LONG]
#
# Runs etllm-bench's generation test twice under callgrind, SHORT and LONG
# tokens (default 4 and 12, after one warm-up token that records the decode
# command buffer), and prints (Ir(LONG) - Ir(SHORT)) / (LONG - SHORT): the
# steady per-token cost, without what the first calls pay once.
# ETLLM_BENCH names the etllm-bench binary (default build/bin/etllm-bench).
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
PROGRAM=$1
SHORT=${2:-4}
LONG=${3:-12}
BENCH=${ETLLM_BENCH:-build/bin/etllm-bench}
command -v valgrind >/dev/null || { echo "vulkan-host-instructions: valgrind is not installed (scripts/setup.sh)" >&2; exit 1; }
[ -x "$BENCH" ] || { echo "vulkan-host-instructions: no $BENCH (build it, or set ETLLM_BENCH)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$TMP}

# Instructions collected inside the delegate's calls for a run of N tokens.
measure() {
  local n=$1
  valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$n" \
    --toggle-collect='etllm::rt::vulkan::VulkanInstance::execute(*' \
    "$BENCH" -m "$PROGRAM" -p 0 -n "$n" -r 1 -t 1 -o jsonl \
    >"$TMP/out.$n" 2>"$TMP/log.$n" || { cat "$TMP/log.$n" >&2; exit 1; }
  awk '/^(summary|totals):/ { print $2; exit }' "$TMP/cg.$n"
}
short=$(measure "$SHORT")
long=$(measure "$LONG")
calls=$((LONG - SHORT))
echo "vulkan-host-instructions: $PROGRAM: $short instructions in $((SHORT + 1)) calls, $long in $((LONG + 1))"
echo "vulkan-host-instructions: $(( (long - short) / calls )) host instructions per decoded token (steady decode, $calls tokens)"
