#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang-19 into their own build
# directory, makes their seed corpora, runs each for a given time, and keeps
# every crash, timeout and out-of-memory input it finds, minimized, as a
# regression input in fuzz/regressions/<target>/ (replayed by the normal
# test suite: ctest -R fuzz-regressions).
#
#   scripts/fuzz.sh [--seconds N] [--build-only] [--no-build] [TARGET...]
#
#   --seconds N   time per target (default 60)
#   --build-only  configure and build, make the seeds, run nothing
#   --no-build    run the targets already built (e.g. a second lane while
#                 the first one's run goes on); the seeds must exist
#   TARGET        names as in fuzz/targets/ (default: all of them)
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), BUILD_DIR (the normal
# build whose tools make the seeds; default build, built if missing),
# ETLLM_SHARED_DIR (test data; default ../shared or /work/shared),
# FUZZ_LOG_DIR (the logs; default FUZZ_BUILD_DIR/logs), TMPDIR (where
# libFuzzer's fork mode keeps its per-job files and the targets write each
# input's scratch files; default a fresh directory in /dev/shm when it is
# writable, removed at exit: on a disk-backed /tmp the llama2c target spent
# about 45% of its wall time waiting for the disk, 1,880 executions/s
# against 4,460 on tmpfs. A target run by hand without TMPDIR prefers
# /dev/shm for its scratch files itself: fuzz/FuzzSupport.h).
# Per target the summary gives libFuzzer's last status line (executions,
# cov: edges, ft: features, corp: corpus size, exec/s, oom/timeout/crash
# counts) and the CPU time its processes got (user + system, of the wall
# time: on a shared machine the difference went to other work).
# The machine may be shared: each target runs as one process at a time
# (libFuzzer's fork mode with one job), which keeps going after a crash.
# Exit status: 1 when any new crash was kept, else 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

seconds=60
buildOnly=0
noBuild=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --build-only) buildOnly=1; shift ;;
    --no-build) noBuild=1; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  TMPDIR=$(mktemp -d /dev/shm/etllm-fuzz.XXXXXX)
  export TMPDIR
  trap 'rm -rf "$TMPDIR"' EXIT
fi

FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
BUILD_DIR=${BUILD_DIR:-build}
# shellcheck source=lib/shared-dir.sh
. scripts/lib/shared-dir.sh
[ -n "$SHARED" ] || { echo "fuzz.sh: no shared test data (set ETLLM_SHARED_DIR)" >&2; exit 1; }

./scripts/setup.sh >/dev/null

# The fuzz build: clang-19, libFuzzer coverage, AddressSanitizer and
# UndefinedBehaviorSanitizer on etllm's own code (libMLIR/libLLVM and the
# Debian libraries stay uninstrumented), assertions on.
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ "$noBuild" = 0 ] && [ ! -f "$FUZZ_BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$FUZZ_BUILD_DIR" -G Ninja \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_C_FLAGS="$SAN -fsanitize=fuzzer-no-link" \
    -DCMAKE_CXX_FLAGS="$SAN -fsanitize=fuzzer-no-link" \
    -DCMAKE_EXE_LINKER_FLAGS="$SAN" \
    -DETLLM_FUZZ=ON -DETLLM_SHARED_DIR="$SHARED" >/dev/null
fi
[ "$noBuild" = 1 ] || cmake --build "$FUZZ_BUILD_DIR" --target etllm-fuzzers -j "${FUZZ_JOBS:-2}"
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < "$FUZZ_BUILD_DIR/fuzz-targets.txt"
fi

# Seeds come from the shared data and from files the normal build's tools
# make (fuzz/make_seeds.py); they are never committed.
SEEDS=$FUZZ_BUILD_DIR/seeds
if [ ! -f "$SEEDS/.done" ] && [ "$noBuild" = 1 ]; then
  echo "fuzz.sh: --no-build: no seeds in $SEEDS (run --build-only first)" >&2
  exit 2
fi
if [ ! -f "$SEEDS/.done" ]; then
  if [ ! -x "$BUILD_DIR/bin/etllm-export" ]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DETLLM_SHARED_DIR="$SHARED" >/dev/null
    cmake --build "$BUILD_DIR" --target etllm-export etllm-gen-checkpoint etllm-translate
  fi
  rm -rf "$SEEDS"
  /usr/bin/python3 fuzz/make_seeds.py --shared "$SHARED" --tools "$BUILD_DIR/bin" \
    --repo "$ROOT" --out "$SEEDS"
  touch "$SEEDS/.done"
fi
[ "$buildOnly" = 1 ] && exit 0

# allow_user_poisoning=0, as in scripts/sanitize.sh: LLVM's allocator
# headers, instrumented in etllm's code, poison slabs that the uninstrumented
# libMLIR then uses, so every IR parse reported a use-after-poison in
# MLIR's own allocations (the ir target's "crashes" before this).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ETLLM_SHARED_DIR=$SHARED
newCrashes=0
summary=()
for t in "${targets[@]}"; do
  bin=$FUZZ_BUILD_DIR/bin/etllm-fuzz-$t
  [ -x "$bin" ] || { echo "fuzz.sh: no target '$t'" >&2; exit 2; }
  corpus=$FUZZ_BUILD_DIR/corpus/$t
  artifacts=$FUZZ_BUILD_DIR/artifacts/$t
  log=${FUZZ_LOG_DIR:-$FUZZ_BUILD_DIR/logs}/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")" "fuzz/regressions/$t"
  dict=()
  [ -f "$SEEDS/$t.dict" ] && dict=(-dict="$SEEDS/$t.dict")
  inputs=("$corpus")
  for d in "$SEEDS/$t" "fuzz/seeds/$t" "fuzz/regressions/$t"; do
    [ -d "$d" ] && inputs+=("$d")
  done
  echo "fuzz.sh: $t for ${seconds}s"
  # Budgets: 10 s per input, 2 GiB resident (AddressSanitizer's own
  # overhead included), no single allocation over 512 MiB.
  # The CPU time of the fuzzer and its fork-mode children (bash's `time`
  # counts the children it waited for): real, user, system seconds.
  cpu=$( { TIMEFORMAT='%R %U %S'; time "$bin" -fork=1 -ignore_crashes=1 \
    -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -artifact_prefix="$artifacts/" "${dict[@]}" \
    "${inputs[@]}" > "$log" 2>&1 || true; } 2>&1 )
  read -r real user sys <<< "$cpu"
  cpuText=$(awk -v r="$real" -v u="$user" -v s="$sys" \
    'BEGIN { printf "cpu %.0f s of %.0f s (%.0f%%)", u + s, r, (r > 0 ? 100 * (u + s) / r : 0) }')
  echo "fuzz.sh: $t: $cpuText" >> "$log"
  stats=$(grep -E '^#[0-9]+: cov: ' "$log" | tail -1 | sed -E 's/ dft_time: [0-9]+//' || true)
  # Keep every new crash, minimized (timeouts and out-of-memory inputs are
  # kept as found: minimizing them takes as long as they do). Inputs that
  # fail the same way (the same sanitizer summary or failed property) are
  # one bug: the first is kept, the others set aside in $artifacts/kept/.
  kept=0
  declare -A seen=()
  mkdir -p "$artifacts/kept"
  for f in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* \
           "$artifacts"/oom-* "$artifacts"/slow-unit-*; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    kind=${name%%-*}
    sig=$("$bin" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 "$f" 2>&1 |
          grep -aE 'SUMMARY: |fuzz property failed|ERROR: libFuzzer: ' |
          head -1 | sed -E 's/0x[0-9a-f]+//g; s/ in [^ ]+$//' || true)
    sig="$kind:${sig:-unknown}"
    if [ -n "${seen[$sig]:-}" ]; then
      mv "$f" "$artifacts/kept/"
      continue
    fi
    seen[$sig]=1
    echo "fuzz.sh: $t: $sig"
    out=fuzz/regressions/$t/$name
    if [ "$kind" = crash ] || [ "$kind" = leak ]; then
      "$bin" -minimize_crash=1 -max_total_time=60 -timeout=10 \
        -exact_artifact_path="$artifacts/min-$name" "$f" >> "$log" 2>&1 || true
      if [ -s "$artifacts/min-$name" ]; then
        mv "$artifacts/min-$name" "$out"
      else
        cp "$f" "$out"
      fi
    else
      cp "$f" "$out"
    fi
    mv "$f" "$artifacts/kept/"
    echo "fuzz.sh: $t: kept $out"
    kept=$((kept + 1))
  done
  newCrashes=$((newCrashes + kept))
  summary+=("$(printf '%-24s %s  %s  new regressions: %d' "$t" "${stats:-no stats (see $log)}" "$cpuText" "$kept")")
done
printf '%s\n' "${summary[@]}"
[ "$newCrashes" -eq 0 ]
