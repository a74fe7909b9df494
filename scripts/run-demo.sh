#!/usr/bin/env bash
# Installs what etllm needs (Debian packages), builds it, exports the
# bundled default model (stories260K from ../shared, a real tiny Llama) with
# the optimized int4 recipe, and generates text with it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
SHARED=${ETLLM_SHARED_DIR:-../shared}
PIPELINE=${PIPELINE:-xnnpack-8da4w}
PROMPT=${PROMPT:-Once upon a time}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR"
MODEL="$SHARED/models/stories260K/stories260K.bin"
TOKENIZER="$SHARED/models/stories260K/tok512.bin"
if [ ! -f "$MODEL" ]; then
  echo "run-demo: $MODEL not found (see README.md: Test data)" >&2
  exit 1
fi
"$BUILD_DIR"/bin/etllm-export --model "$MODEL" --tokenizer "$TOKENIZER" \
  --pipeline "$PIPELINE" -o "$BUILD_DIR/stories260K.pte"
"$BUILD_DIR"/bin/etllm-run "$BUILD_DIR/stories260K.pte" --prompt "$PROMPT" \
  -n 100 --temperature 0.8 --seed 42
