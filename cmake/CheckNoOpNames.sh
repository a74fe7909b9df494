#!/bin/sh
# Fails when a source file under the given directories spells an op's name
# (a runtime operator of ops.def, or an etllm op mnemonic, with or without
# the "etllm." prefix) as a string literal: code asks the op's interfaces
# and contract instead of comparing names.
# Usage: CheckNoOpNames.sh <source root> <dir>...
root=$1
shift
cd "$root" || exit 2
names=$( (sed -n 's/^ETLLM_OP([A-Za-z0-9]*, "\([a-z0-9_]*\)".*/\1/p' \
            runtime/include/etllm/runtime/ops.def
          sed -n 's/^### `etllm\.\([a-z0-9_.]*\)`.*/\1/p' \
            docs/generated/EtllmDialect.md) | sort -u)
[ -n "$names" ] || { echo "no op names found"; exit 2; }
status=0
for n in $names; do
  if grep -rnF -e "\"$n\"" -e "\"etllm.$n\"" "$@"; then
    echo "error: op name \"$n\" spelled as a string literal (ask the op's interface or contract)"
    status=1
  fi
done
exit $status
