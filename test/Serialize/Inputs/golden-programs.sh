#!/usr/bin/env bash
# Exports a fixed set of models with every recipe and prints one
# "sha256  name" line per program file. The lit test golden-programs.test
# compares the list with golden-programs.sha256, so a change that alters a
# program's bytes fails until the list is regenerated on purpose:
#
#   test/Serialize/Inputs/golden-programs.sh SHARED_DIR OUT_DIR \
#     > test/Serialize/Inputs/golden-programs.sha256
#
# (with build/bin on PATH). Paths are passed relative to the working
# directory so the provenance recorded in each program is the same on every
# machine.
set -euo pipefail
shared=$1
out=$2
rm -rf "$out"
mkdir -p "$out/models"
recipes=(portable cpu-fp32 cpu-int4 cpu-8da4w cpu-int8)
# stories260K from its three formats.
(
  cd "$shared/models"
  for r in "${recipes[@]}"; do
    etllm-export --quiet --model stories260K/stories260K.bin \
      --tokenizer stories260K/tok512.bin --pipeline "$r" -o "$out/bin-$r.pte"
    etllm-export --quiet --model stories260K/stories260K.gguf \
      --pipeline "$r" -o "$out/gguf-$r.pte"
    etllm-export --quiet --model stories260K-hf \
      --tokenizer stories260K/tok512.bin --pipeline "$r" -o "$out/hf-$r.pte"
  done
)
# A generated checkpoint of every architecture, in both formats.
(
  cd "$out/models"
  for a in llama qwen2 qwen3 mistral phi3 gemma gemma2; do
    for f in hf gguf; do
      name=$a-$f
      [ "$f" = gguf ] && name=$a.gguf
      etllm-gen-checkpoint --arch "$a" --format "$f" --layers 2 -o "$name" >/dev/null
      for r in portable cpu-int4 cpu-8da4w; do
        etllm-export --quiet --model "$name" --pipeline "$r" -o "$out/$a-$f-$r.pte"
      done
    done
  done
)
cd "$out"
sha256sum -- *.pte
