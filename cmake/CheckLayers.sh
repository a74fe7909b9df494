#!/bin/sh
# Fails when a compiler library includes a header of a layer above its own
# (docs/Architecture.md, "Layers"): the arrows between lib/ folders run one
# way. Each line of the table below is a folder (its lib/<X>/ sources and
# include/etllm/<X>/ headers) and the etllm/<Y>/ header folders it may
# include; the runtime's (etllm/runtime/, etllm/schema/) are below every
# layer. The MLIR-free layers (marked "nomlir") also include no mlir/ or
# llvm/ header.
#
# Usage: CheckLayers.sh <source root>
root=$1
cd "$root" || exit 2

# folder        nomlir  may include
table='
Support         nomlir  Support
Models          nomlir  Models Formats
Formats         nomlir  Formats Models
Testing         nomlir  Testing Formats Models
Dialect         mlir    Dialect
Target          mlir    Target Dialect
Lowering        mlir    Lowering Target Dialect Formats Models Support
Transforms      mlir    Transforms Lowering Target Dialect Formats Models Support
Import          mlir    Import Dialect Formats Models Support
Serialize       mlir    Serialize Lowering Target Dialect Formats Models Support
Backends        mlir    Backends Lowering Target Dialect Formats Models Support
Config          nomlir  Config Transforms Formats Models Support
'

found=$(printf '%s\n' "$table" | while read -r folder kind allowed; do
  [ -n "$folder" ] || continue
  for dir in "lib/$folder" "include/etllm/$folder"; do
    [ -d "$dir" ] || continue
    find "$dir" -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.inc' \) |
      sort | while read -r f; do
        grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$f" |
          while IFS= read -r line; do
            inc=$(printf '%s' "$line" | sed -E 's/^[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]*)[">].*/\1/')
            case $inc in
            etllm/runtime/* | etllm/schema/*) ;;
            etllm/*/*)
              sub=${inc#etllm/}
              sub=${sub%%/*}
              case " $allowed " in
              *" $sub "*) ;;
              *) echo "$f:${line%%:*}: $folder includes $inc (layer $sub is not below it)" ;;
              esac
              ;;
            mlir/* | llvm/*)
              [ "$kind" = nomlir ] &&
                echo "$f:${line%%:*}: $folder is MLIR-free but includes $inc"
              ;;
            esac
          done
      done
  done
done)

if [ -n "$found" ]; then
  printf '%s\n' "$found"
  echo "CheckLayers: an include runs against the layers (docs/Architecture.md)" >&2
  exit 1
fi
echo "CheckLayers: every include of lib/ and include/etllm/ follows the layers"
