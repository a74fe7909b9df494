#!/bin/sh
# Runs an arm64 GoogleTest executable under qemu-user with one CPU model and
# passes when the run passes and its output holds every --expect text (the
# ISA line of IsaTest, a skip reason), so that a CPU model that silently ran
# other kernels than intended fails.
#
# usage: qemu-gtest.sh QEMU GUEST_ROOT CPU TEST_EXE [--expect TEXT]...
#                      [-- GTEST_ARGS...]
# GUEST_ROOT holds the cross C library's loader (/usr/aarch64-linux-gnu);
# the environment (ETLLM_CPU_ISA) passes through to the guest.
set -eu
qemu=$1 root=$2 cpu=$3 exe=$4
shift 4
expects_file=$(mktemp)
out=$(mktemp)
trap 'rm -f "$expects_file" "$out"' EXIT
while [ $# -gt 0 ]; do
  case $1 in
  --expect) printf '%s\n' "$2" >>"$expects_file"; shift 2 ;;
  --) shift; break ;;
  *) echo "qemu-gtest: unknown argument $1" >&2; exit 2 ;;
  esac
done
echo "qemu-gtest: ETLLM_CPU_ISA=${ETLLM_CPU_ISA:-} $qemu -L $root -cpu $cpu $exe $*"
status=0
"$qemu" -L "$root" -cpu "$cpu" "$exe" "$@" >"$out" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  # Everything but the repeated skip lines.
  grep -v 'Skipped$' "$out" | awk '!seen[$0]++'
  echo "qemu-gtest: FAIL: exit status $status under -cpu $cpu" >&2
  exit 1
fi
# A short log (CTest keeps only the first KiB of a passing test's output):
# the ISA line, each skip reason once, the counts.
grep -E '^\[ ISAs|^this CPU cannot run|^\[(==========|  PASSED  |  SKIPPED )\] [0-9]' "$out" |
  awk '!seen[$0]++'

while IFS= read -r text; do
  if ! grep -qF -- "$text" "$out"; then
    echo "qemu-gtest: FAIL: no \"$text\" in the output under -cpu $cpu" >&2
    exit 1
  fi
done <"$expects_file"
echo "qemu-gtest: PASS (-cpu $cpu)"
