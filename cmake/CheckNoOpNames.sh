#!/bin/sh
# Fails when a source file under the given directories spells an op's name
# as a string literal: code asks the op's interfaces and contract instead
# of comparing names, and the runtime takes an operator's name from its
# table (opName(OpId::X), generated from ops.def).
#
# The names are the runtime operators of ops.def and, unless --runtime is
# given, the etllm op mnemonics (with or without the "etllm." prefix) of the
# generated op reference. The runtime never sees mnemonics (its "constant"
# and "buffer" are kinds of value storage), so its check uses --runtime.
# --except PATH leaves out a directory or file (a path under the source
# root, matched as a prefix) whose vocabulary is not ops' (Jinja's filters
# "abs" and "sum", a tokenizer's "split", the Vulkan backend's own kernel
# and shader names).
#
# Usage: CheckNoOpNames.sh <source root> [--runtime] [--except PATH]... DIR...
root=$1
shift
cd "$root" || exit 2
mnemonics=1
excludes=
while [ $# -gt 0 ]; do
  case $1 in
  --runtime) mnemonics=0 ;;
  --except)
    shift
    excludes="$excludes $1"
    ;;
  *) break ;;
  esac
  shift
done
[ $# -gt 0 ] || { echo "no directories to check"; exit 2; }
names=$( (sed -n 's/^ETLLM_OP([A-Za-z0-9]*, "\([a-z0-9_]*\)".*/\1/p' \
            runtime/include/etllm/runtime/ops.def
          [ $mnemonics = 1 ] &&
            sed -n 's/^### `etllm\.\([a-z0-9_.]*\)`.*/\1/p' \
              docs/generated/EtllmDialect.md) | sort -u)
[ -n "$names" ] || { echo "no op names found"; exit 2; }
status=0
for n in $names; do
  # ops.def declares the names; everything else refers to them.
  hits=$(grep -rnF --exclude=ops.def -e "\"$n\"" -e "\"etllm.$n\"" "$@")
  for e in $excludes; do
    re=$(printf '%s' "$e" | sed 's/[.]/\\./g')
    hits=$(printf '%s\n' "$hits" | grep -v -e "^$re/" -e "^$re:")
  done
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits"
    echo "error: op name \"$n\" spelled as a string literal (ask the op's interface or contract; in the runtime, opName(OpId::...))"
    status=1
  fi
done
exit $status
