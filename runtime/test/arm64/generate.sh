#!/bin/sh
# One program file for every CPU: stories260K exported once on x86 with every
# recipe, generated greedily by the x86 etllm-run and by the cross-built
# arm64 etllm-run under qemu-user for each CPU model (Armv8.0 NEON, a
# dotprod CPU, an i8mm CPU), the arm64 output byte for byte the x86 one; the
# fp32 recipes' output is llama2.c's. On the i8mm CPU, ETLLM_CPU_ISA
# also forces the lower arm64 paths. Then a tiny LLaVA and a tiny Gemma 3
# (etllm-gen-checkpoint beside ETLLM_EXPORT) with a JPEG: the arm64 image
# decoding, preprocessing, vision encoder and text byte for byte the x86
# ones.
#
# usage: generate.sh ETLLM_EXPORT X86_ETLLM_RUN ARM64_ETLLM_RUN QEMU
#                    GUEST_ROOT SHARED_DIR WORK_DIR
set -eu
export_tool=$1 run_x86=$2 run_arm=$3 qemu=$4 root=$5 shared=$6 work=$7
model=$shared/models/stories260K
rm -rf "$work"
mkdir -p "$work"
gen() { "$@" --prompt "Once upon a time" -n 60 --temperature 0 2>/dev/null; }
fail=0
# same X86_OUT ARM64_OUT WHAT: the arm64 text must be the x86 one's bytes.
same() {
  if cmp -s "$1" "$2"; then
    echo "generate: same bytes: $3"
  else
    echo "generate: FAIL: $3 differs from x86" >&2
    fail=1
  fi
}
for recipe in portable cpu-fp32 cpu-int4 cpu-8da4w cpu-int8; do
  pte=$work/$recipe.pte
  "$export_tool" --quiet --model "$model/stories260K.bin" \
    --tokenizer "$model/tok512.bin" --pipeline "$recipe" -o "$pte"
  gen "$run_x86" "$pte" >"$work/x86-$recipe.txt"
  case $recipe in
  portable | cpu-fp32)
    if ! cmp -s "$work/x86-$recipe.txt" "$model/greedy_once_upon_a_time_n64.txt"; then
      echo "generate: FAIL: x86 $recipe differs from llama2.c" >&2
      fail=1
    fi ;;
  esac
  for run in cortex-a53: cortex-a76: max: max:neon max:dotprod; do
    cpu=${run%%:*} isa=${run#*:}
    case $recipe:$isa in portable:?*) continue ;; esac
    out=$work/arm64-$cpu-${isa:-auto}-$recipe.txt
    if [ -n "$isa" ]; then
      ETLLM_CPU_ISA=$isa gen "$qemu" -L "$root" -cpu "$cpu" "$run_arm" "$pte" >"$out"
    else
      gen "$qemu" -L "$root" -cpu "$cpu" "$run_arm" "$pte" >"$out"
    fi
    same "$work/x86-$recipe.txt" "$out" \
      "$recipe on -cpu $cpu${isa:+ (ETLLM_CPU_ISA=$isa)}"
  done
done
gencp=$(dirname "$export_tool")/etllm-gen-checkpoint
image=$(cd "$(dirname "$0")/../../.." && pwd)/test/Inputs/image-30x40.jpg
if [ -x "$gencp" ] && [ -f "$image" ]; then
  "$gencp" --arch llava --format hf --vocab 512 -o "$work/llava-hf" >/dev/null
  # Gemma 3's kind: the pooled projector, the image wrapped in its tokens,
  # the image-bidirectional text_decoder.
  "$gencp" --arch gemma3-vision --vision-preset gemma3-tiny --layers 6 \
    --format hf --vocab 512 -o "$work/gemma3-hf" >/dev/null
  imggen() {
    "$@" --image "$image" --prompt "Once upon a<image> time" -n 16 \
      --temperature 0 2>/dev/null
  }
  for kind in llava:portable llava:cpu-fp32 llava:cpu-8da4w \
    gemma3:portable gemma3:cpu-8da4w; do
    name=${kind%%:*} recipe=${kind#*:}
    pte=$work/$name-$recipe.pte
    "$export_tool" --quiet --model "$work/$name-hf" \
      --tokenizer "$model/tok512.bin" --pipeline "$recipe" -o "$pte"
    imggen "$run_x86" "$pte" >"$work/x86-$name-$recipe.txt"
    for cpu in cortex-a53 max; do
      out=$work/arm64-$cpu-$name-$recipe.txt
      imggen "$qemu" -L "$root" -cpu "$cpu" "$run_arm" "$pte" >"$out"
      same "$work/x86-$name-$recipe.txt" "$out" \
        "$name $recipe with an image on -cpu $cpu"
    done
  done
else
  echo "generate: FAIL: no $gencp or $image" >&2
  fail=1
fi
[ "$fail" -eq 0 ] && echo "generate: PASS"
exit "$fail"
