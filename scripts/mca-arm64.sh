#!/usr/bin/env bash
# Measures, without arm64 hardware, what docs/Performance.md ("arm64") keeps:
#
#  1. llvm-mca (llvm-19) cycles of the int4 decode and prefill inner loops for
#     -mcpu=cortex-a76 and -mcpu=neoverse-n2: etllm's NEON, dotprod and i8mm
#     kernels (runtime/backends/cpu/qdot_arm{,_panels}.inc) beside llama.cpp's
#     NEON/dotprod/i8mm Q4_0 x Q8_0 kernels (ggml-cpu/arch/arm: quants.c's
#     ggml_vec_dot_q4_0_q8_0, repack.cpp's gemv/gemm q4_0 4x4 and 4x8),
#     compiled by the same compiler (Debian's aarch64-linux-gnu-g++) with the
#     same flags (-O3 -DNDEBUG -mcpu=CPU; neoverse-n2+nosve, so that llama.cpp
#     takes its NEON paths, not SVE), each with its own per-file flags
#     (etllm's: -fno-trapping-math -ffp-contract=off -fno-schedule-insns;
#     llama.cpp's best of with and without -fno-schedule-insns);
#  2. the stripped size of what an app links on arm64: libetllm_c.so (core,
#     portable kernels, the CPU backend, tokenizers, runner) and its shared
#     libraries, beside llama.cpp's libllama + libggml* built the same way
#     (the same cross compiler and sysroot, Release, shared libraries).
#
#   scripts/mca-arm64.sh [--no-size]
#
# The loop of a kernel is cut out of its object file by scripts/lib/
# mca_loop.py (the innermost loop with the most dot products; etllm's
# kernels: the block loop, one 32-value block with its scales per
# iteration) and given to llvm-mca as a straight block
# (-iterations=200): cycles per iteration = Total Cycles / 200, divided by
# the iteration's multiply-adds (a 32-weight block of one row is 32).
#
# llama.cpp's source: the PyPI sdist of llama-cpp-python (LLAMACPP_PY_VERSION,
# default 0.3.36: vendor/llama.cpp), unpacked into ${XDG_CACHE_HOME:-~/.cache}/
# etllm/llamacpp (never into the repository); LLAMACPP_DIR names another
# folder with the source in src/ (../shared/tools/build-llamacpp.sh's DIR).
# etllm's arm64 build (the size table): the cross-build directory
# ETLLM_ARM64_BUILD (default build-arm64; built here if missing, with
# cmake/aarch64-linux-gnu.cmake).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/etllm
WORK=${MCA_WORK:-$CACHE/mca-arm64}
LLAMA=${LLAMACPP_DIR:-$CACHE/llamacpp}
V=${LLAMACPP_PY_VERSION:-0.3.36}
ARM64_BUILD=${ETLLM_ARM64_BUILD:-$ROOT/build-arm64}
CXX=aarch64-linux-gnu-g++
CC=aarch64-linux-gnu-gcc
OBJDUMP=aarch64-linux-gnu-objdump
STRIP=aarch64-linux-gnu-strip
MCA=${LLVM_MCA:-/usr/lib/llvm-19/bin/llvm-mca}
SIZE=1
[ "${1:-}" = --no-size ] && SIZE=0
for tool in "$CXX" "$OBJDUMP" "$MCA"; do
  command -v "$tool" >/dev/null || { echo "mca-arm64: $tool is missing (scripts/setup.sh)" >&2; exit 1; }
done
mkdir -p "$WORK"

if [ ! -f "$LLAMA/src/ggml/src/ggml-cpu/arch/arm/repack.cpp" ]; then
  rm -rf "$LLAMA/dl" && mkdir -p "$LLAMA/dl"
  python3 -m pip download -q --no-deps --no-binary :all: -d "$LLAMA/dl" \
    "llama-cpp-python==$V"
  tar xzf "$LLAMA"/dl/*.tar.gz -C "$LLAMA/dl"
  rm -rf "$LLAMA/src"
  mv "$LLAMA"/dl/llama_cpp_python-*/vendor/llama.cpp "$LLAMA/src"
  echo "llama-cpp-python $V sdist (PyPI), vendor/llama.cpp" > "$LLAMA/SOURCE"
  rm -rf "$LLAMA/dl"
fi
GGML=$LLAMA/src/ggml

CPU_SRC=$ROOT/runtime/backends/cpu
# etllm's per-file flags (runtime/backends/cpu/CMakeLists.txt), and
# -fno-inline-functions-called-once: the one-row decode tile and the smaller
# panel tiles, each called from one place, stay functions of their own
# (their loops are the same; inlined, they cannot be told apart in run()).
ETLLM_FLAGS="-fno-trapping-math -ffp-contract=off -fno-schedule-insns -fno-inline-functions-called-once -std=gnu++17 -I$ROOT/runtime/include"
GGML_INC="-I$GGML/include -I$GGML/src -I$GGML/src/ggml-cpu"

# The kernels: label | object | symbol | loop (inner/enclosing) | MACs per
# iteration (auto: 16 per SDOT, 32 per SMMLA, 8 per SMULL/SMLAL).
decode_kernels() {
  local cpu=$1
  echo "etllm NEON (Q4_0 x Q8_0)|etllm-neon|Kernel<4u, true, true, false>::tile<1, 4, false>|inner|512"
  echo "etllm dotprod (Q4_0 x Q8_0)|etllm-dotprod|Kernel<4u, true, true, false>::tile<1, 4, false>|inner|512"
  echo "etllm dotprod (8da4w)|etllm-dotprod|Kernel<4u, true, false, true>::tile<1, 4, true>|inner|512"
  echo "llama.cpp ggml_vec_dot_q4_0_q8_0|ll-quants|ggml_vec_dot_q4_0_q8_0|sdot|auto"
  echo "llama.cpp ggml_gemv_q4_0_4x4_q8_0|ll-repack|ggml_gemv_q4_0_4x4_q8_0|inner|auto"
  echo "llama.cpp ggml_gemv_q4_0_4x8_q8_0|ll-repack|ggml_gemv_q4_0_4x8_q8_0|inner|auto"
}
# etllm's 4-bit prefill tiles are 16 activation rows (two panels) against 4
# weight rows (dotprod) or one weight pair (i8mm); per token (8da4w) they
# fold the zero point into the chains (a tile with a row whose -zp is not a
# byte takes the row tiles). The MACs are the tile's own (16 x 4 x 32,
# 16 x 2 x 32), not the dot products' (the fold's products add none).
prefill_kernels() {
  local cpu=$1
  echo "etllm dotprod (Q4_0 x Q8_0), 16 rows x 4 weight rows|etllm-dotprod|Kernel<4u, true, true, false>::tallTile<2>|inner|2048"
  echo "etllm dotprod (8da4w), 16 x 4|etllm-dotprod|Kernel<4u, true, false, true>::tallTile<2>|inner|2048"
  if [ "$cpu" != cortex-a76 ]; then
    echo "etllm i8mm (Q4_0 x Q8_0), 16 rows x 2 weight rows|etllm-i8mm|Kernel<4u, true, true, false>::mmlaTall<0, 2>|inner|1024"
    echo "etllm i8mm (8da4w), 16 x 2|etllm-i8mm|Kernel<4u, true, false, true>::mmlaTall<0, 2>|inner|1024"
    echo "llama.cpp ggml_vec_dot_q4_0_q8_0 (nrc 2, i8mm)|ll-quants|ggml_vec_dot_q4_0_q8_0|smmla|auto"
    echo "llama.cpp ggml_gemm_q4_0_4x8_q8_0 (i8mm)|ll-repack|ggml_gemm_q4_0_4x8_q8_0|inner|auto"
  fi
  echo "llama.cpp ggml_gemm_q4_0_4x4_q8_0 (dotprod)|ll-repack|ggml_gemm_q4_0_4x4_q8_0|inner|auto"
}

# Whether object $1 is newer than every file given (a rerun recompiles only
# the kernels whose sources changed: each object takes minutes; after a
# change of the flags here, remove $WORK).
fresh() {
  local obj=$1; shift
  [ -f "$obj" ] || return 1
  local f
  for f in "$@"; do [ "$obj" -nt "$f" ] || return 1; done
}

compile() { # cpu mcpu
  local cpu=$1 mcpu=$2 d=$WORK/$1
  mkdir -p "$d"
  local base="-O3 -DNDEBUG -mcpu=$mcpu"
  local deps=("$CPU_SRC"/qdot_arm.inc "$CPU_SRC"/qdot_arm_panels.inc
              "$CPU_SRC"/qdot_arm_f32.inc "$CPU_SRC"/qdot.h
              "$CPU_SRC"/qdot_target.h "$CPU_SRC"/internal.h
              "$ROOT"/runtime/include/etllm/runtime/cpu/{kernels,packing}.h)
  for f in neon dotprod i8mm; do
    fresh "$d/etllm-$f.o" "$CPU_SRC/qdot_$f.cpp" "${deps[@]}" ||
      $CXX $base $ETLLM_FLAGS -c "$CPU_SRC/qdot_$f.cpp" -o "$d/etllm-$f.o"
  done
  local q=$GGML/src/ggml-cpu/arch/arm/quants.c r=$GGML/src/ggml-cpu/arch/arm/repack.cpp
  for v in "" "-fno-schedule-insns"; do
    local tag=${v:+-ns}
    fresh "$d/ll-quants$tag.o" "$q" ||
      $CC $base $v -std=c11 $GGML_INC -c "$q" -o "$d/ll-quants$tag.o"
    fresh "$d/ll-repack$tag.o" "$r" ||
      $CXX $base $v -std=c++17 $GGML_INC -c "$r" -o "$d/ll-repack$tag.o"
  done
}

# cycles per iteration and MACs per iteration of one kernel: "CYCLES MACS"
measure() { # cpu object symbol loop macs
  local cpu=$1 obj=$WORK/$1/$2.o sym=$3 loop=$4 macs=$5 s=$WORK/$1/loop.s
  local opt=()
  case $loop in
    enclosing) opt=(--enclosing) ;;
    sdot|smmla) opt=(--dot "$loop") ;;
  esac
  python3 "$ROOT/scripts/lib/mca_loop.py" "${opt[@]}" "$OBJDUMP" "$obj" "$sym" > "$s" 2>/dev/null || { echo "- -"; return; }
  if [ "$macs" = auto ]; then
    macs=$(awk '$1 ~ /^(sdot|udot)$/ {m += 16} $1 ~ /^(smmla|ummla)$/ {m += 32}
                $1 ~ /^(smull2?|smlal2?)$/ && $0 ~ /\.8h/ {m += 8} END {print m + 0}' "$s")
  fi
  local cycles
  cycles=$("$MCA" -mtriple=aarch64 -mcpu="$cpu" -mattr=+dotprod,+i8mm,+fullfp16 \
             -iterations=200 "$s" 2>/dev/null | awk '/^Total Cycles:/ {print $3 / 200}')
  echo "$cycles $macs"
}

# The best (fewest cycles per multiply-add) of llama.cpp's two flag sets.
best() { # cpu obj sym loop macs
  local a b
  a=$(measure "$1" "$2" "$3" "$4" "$5")
  case $2 in
    ll-*) b=$(measure "$1" "$2-ns" "$3" "$4" "$5")
          echo "$a"$'\n'"$b" | awk '$1 != "-" {r = $1 / $2; if (!n++ || r < best) {best = r; line = $0}} END {print (n ? line : "- -")}' ;;
    *) echo "$a" ;;
  esac
}

CPUS=(cortex-a76 neoverse-n2)
declare -A MCPU=([cortex-a76]=cortex-a76 [neoverse-n2]=neoverse-n2+nosve)
for cpu in "${CPUS[@]}"; do
  compile "$cpu" "${MCPU[$cpu]}"
done

table() { # decode|prefill
  local kind=$1
  if [ "$kind" = decode ]; then
    echo "| decode kernel (one row) | cortex-a76: cycles / 32-weight block | neoverse-n2: cycles / 32-weight block |"
  else
    echo "| prefill kernel | cortex-a76: cycles / multiply-add (per 32) | neoverse-n2: cycles / multiply-add (per 32) |"
  fi
  echo "|---|---|---|"
  local lines
  lines=$( { ${kind}_kernels cortex-a76; ${kind}_kernels neoverse-n2; } | awk '!seen[$0]++')
  while IFS='|' read -r label obj sym loop macs; do
    local row="| $label"
    for cpu in "${CPUS[@]}"; do
      if ! ${kind}_kernels "$cpu" | grep -F "$label|" >/dev/null; then
        row="$row | n/a (no i8mm)"
        continue
      fi
      read -r cyc m < <(best "$cpu" "$obj" "$sym" "$loop" "$macs")
      if [ "$cyc" = - ] || [ "$m" = 0 ]; then
        row="$row | not found"
      elif [ "$kind" = decode ]; then
        row="$row | $(awk -v c="$cyc" -v m="$m" 'BEGIN {printf "%.2f (%.1f per iteration of %d MACs)", c * 32 / m, c, m}')"
      else
        row="$row | $(awk -v c="$cyc" -v m="$m" 'BEGIN {printf "%.4f (%.2f) (%.1f per %d MACs)", c / m, c * 32 / m, c, m}')"
      fi
    done
    echo "$row |"
  done <<< "$lines"
}

echo "## llvm-mca ($("$MCA" --version | sed -n 's/.*LLVM version //p' | head -1)), $($CXX --version | head -1)"
echo "llama.cpp: $(cat "$LLAMA/SOURCE" 2>/dev/null || echo "$LLAMA/src")"
echo
table decode
echo
table prefill

[ "$SIZE" = 1 ] || exit 0

#===----------------------------------------------------------------------===#
# Sizes
#===----------------------------------------------------------------------===#
SYSROOT=${ETLLM_ARM64_SYSROOT:-$CACHE/sysroot-arm64}
TOOLCHAIN=$ROOT/cmake/aarch64-linux-gnu.cmake
if [ ! -f "$ARM64_BUILD/build.ninja" ]; then
  cmake -S "$ROOT/runtime" -B "$ARM64_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" >/dev/null
fi
cmake --build "$ARM64_BUILD" --target etllm_c etllm-run >/dev/null
LLB=$WORK/llama-build
if [ ! -f "$LLB/bin/libllama.so" ]; then
  # llama.cpp's defaults (OpenMP on), its CPU backend compiled for the
  # newest of the three CPU models (Armv8.2 + dotprod + i8mm: its best
  # NEON kernels; one variant, which favours llama.cpp: etllm's one library
  # carries NEON, dotprod and i8mm kernels chosen at run time).
  cmake -S "$LLAMA/src" -B "$LLB" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DETLLM_ARM64_SYSROOT="$SYSROOT" \
    -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
    -DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+i8mm -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
  cmake --build "$LLB" --target llama >/dev/null
fi

stripped() { $STRIP -o "$WORK/stripped.tmp" "$1" && stat -c %s "$WORK/stripped.tmp"; }
# A library's shared dependencies outside the C/C++ runtime (libc, libm,
# libstdc++, libgcc_s, the loader): found in DIRS, followed transitively.
deps() { # lib dirs...
  local lib=$1; shift
  local queue=("$lib") seen=" "
  while [ ${#queue[@]} -gt 0 ]; do
    local cur=${queue[0]}; queue=("${queue[@]:1}")
    for n in $(aarch64-linux-gnu-readelf -d "$cur" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
      case $n in libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*) continue ;; esac
      case $seen in *" $n "*) continue ;; esac
      seen="$seen$n "
      for d in "$@"; do
        if [ -e "$d/$n" ]; then queue+=("$(readlink -f "$d/$n")"); echo "$(readlink -f "$d/$n")"; break; fi
      done
    done
  done
}
size_rows() { # label files...
  local label=$1; shift
  local total=0
  for f in "$@"; do
    local s
    s=$(stripped "$f")
    total=$((total + s))
    echo "| $label | $(basename "$f") | $s |"
  done
  echo "| $label | **total** | **$total** |"
  eval "TOTAL_$(echo "$label" | tr -c 'a-zA-Z0-9\n' _)=$total"
}
LIBDIRS=("$SYSROOT/usr/lib/aarch64-linux-gnu" "/usr/aarch64-linux-gnu/lib" "$LLB/bin")
echo
echo "| arm64, stripped | file | bytes |"
echo "|---|---|---|"
mapfile -t ED < <(deps "$ARM64_BUILD/libetllm_c.so" "${LIBDIRS[@]}")
size_rows etllm "$(readlink -f "$ARM64_BUILD/libetllm_c.so")" "${ED[@]}"
mapfile -t LD < <(deps "$LLB/bin/libllama.so" "${LIBDIRS[@]}")
size_rows llama.cpp "$(readlink -f "$LLB/bin/libllama.so")" "${LD[@]}"
awk -v e="$TOTAL_etllm" -v l="$TOTAL_llama_cpp" \
  'BEGIN {printf "\netllm / llama.cpp: %.3f (%.1f%% smaller)\n", e / l, 100 * (1 - e / l)}'
