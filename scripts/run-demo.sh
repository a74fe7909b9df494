#!/usr/bin/env bash
# Installs what etllm needs (Debian packages), finds the bundled default
# model (stories260K, a real tiny Llama: in ETLLM_SHARED_DIR or ../shared
# when there, else downloaded once into ~/.cache/etllm by
# scripts/fetch-model.py, checksums verified), builds the two tools, exports
# the model with the optimized int4 recipe and generates text with it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
PIPELINE=${PIPELINE:-cpu-8da4w}
PROMPT=${PROMPT:-Once upon a time}
# The model first: offline with no copy, this is the one message to read.
MODEL_DIR=$(/usr/bin/python3 scripts/fetch-model.py)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" --target etllm-export etllm-run
"$BUILD_DIR"/bin/etllm-export --model "$MODEL_DIR/stories260K.bin" \
  --tokenizer "$MODEL_DIR/tok512.bin" \
  --pipeline "$PIPELINE" -o "$BUILD_DIR/stories260K.pte"
"$BUILD_DIR"/bin/etllm-run "$BUILD_DIR/stories260K.pte" --prompt "$PROMPT" \
  -n 100 --temperature 0.8 --seed 42
