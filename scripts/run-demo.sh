#!/usr/bin/env bash
# Installs what etllm needs (Debian packages), builds it and runs the main
# job on the bundled default: compile the example exported graph with the
# optimizer and print the result.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR"
"$BUILD_DIR"/bin/etllm-opt examples/attention_block.mlir --canonicalize --cse
