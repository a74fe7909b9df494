#!/usr/bin/env bash
# Builds etllm with AddressSanitizer and UndefinedBehaviorSanitizer (the
# project's own compiler, g++) in its own build directory and runs the unit
# and lit tests there: every test, including the malformed-input suite, the
# determinism tests, the replay of every kept fuzz regression and the Python
# package's pytest suite (python/*: the extension under ASan, the interpreter
# with the ASan runtime preloaded).
#
#   scripts/sanitize.sh [ctest arguments...]     e.g. -R tokenizers
#
# Environment: SANITIZE_BUILD_DIR (default build-asan), ETLLM_SHARED_DIR.
# A UBSan report fails the test that triggers it (-fno-sanitize-recover).
# Leak checking is off: libLLVM/libMLIR keep their registries to exit.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
BUILD_DIR=${SANITIZE_BUILD_DIR:-build-asan}
# shellcheck source=lib/shared-dir.sh
. scripts/lib/shared-dir.sh
[ -n "$SHARED" ] || { echo "sanitize.sh: no shared test data (set ETLLM_SHARED_DIR)" >&2; exit 1; }
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# The Python package is built with the sanitizers too, for the project's
# environment (scripts/venv.sh: torch, numpy, pytest). The interpreter is not
# instrumented: its tests run with g++'s AddressSanitizer runtime preloaded
# (it must be the first library loaded; the UndefinedBehaviorSanitizer
# runtime comes in as the extension's dependency). Leak checking stays off
# (ASAN_OPTIONS below): the interpreter keeps its objects to exit.
PYTHON=${SANITIZE_PYTHON:-$(./scripts/venv.sh python)}
ASAN_RUNTIME=$(g++ -print-file-name=libasan.so)
[ -f "$ASAN_RUNTIME" ] || { echo "sanitize.sh: no libasan.so for g++ ($ASAN_RUNTIME)" >&2; exit 1; }
ASAN_RUNTIME=$(readlink -f "$ASAN_RUNTIME")
# libstdc++ right after it: the interpreter does not link it, and ASan's
# __cxa_throw interceptor must find the real one when it starts ("CHECK
# failed: ... real___cxa_throw" aborts the first exception the extension
# throws otherwise).
STDCXX=$(readlink -f "$(g++ -print-file-name=libstdc++.so.6)")
[ -f "$STDCXX" ] || { echo "sanitize.sh: no libstdc++.so.6 for g++ ($STDCXX)" >&2; exit 1; }
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPython3_EXECUTABLE="$PYTHON" -DETLLM_PYTHON_PRELOAD="$ASAN_RUNTIME $STDCXX" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" \
  -DCMAKE_EXE_LINKER_FLAGS="$SAN" -DCMAKE_SHARED_LINKER_FLAGS="$SAN" \
  -DETLLM_SHARED_DIR="$SHARED" -DETLLM_REQUIRE_SHARED_DATA=ON >/dev/null
cmake --build "$BUILD_DIR" -j "${SANITIZE_JOBS:-$(nproc)}"
# allow_user_poisoning=0: Debian's libLLVM/libMLIR are not instrumented, but
# LLVM's allocator headers poison and unpoison their slabs when the code
# including them is (BumpPtrAllocator under __SANITIZE_ADDRESS__). The same
# slabs are then used by the uninstrumented library (MLIRContext's string
# and attribute storage), which never unpoisons them: every StringAttr::get
# after such an allocation reports a use-after-poison. Manual poisoning is
# off; heap, stack and use-after-free checks are not affected.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The malformed-input suite bounds memory by resident size only (the
# sanitizers reserve terabytes of address space) and allows 5x the time.
export ETLLM_SANITIZED=1 ETLLM_TIME_SCALE=${ETLLM_TIME_SCALE:-5}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
