#!/usr/bin/env bash
# One image's encode time, etllm against llama.cpp's mtmd on the same
# GGUF + mmproj files, the same machine, one run (issue 34): a random
# composite model (MODEL=llava: a CLIP-ViT-B/16-shape tower,
# etllm-gen-checkpoint --arch llava --vision-preset clip-vit-b16; or
# MODEL=smolvlm: SmolVLM-256M's tower at 512 x 512, --vision-preset
# smolvlm-256m, its processor's longest edge set to one tile so that both
# sides encode one image) written as llama.cpp's mmproj GGUF
# (scripts/lib/<model>_mmproj.py: f32 and f16) beside its tiny text GGUF;
# etllm-export makes a program of the text GGUF and the f32 mmproj
# (model.mmproj) with each RECIPE. Rounds interleave
# `llama-mtmd-cli ... --image` (its "mtmd batch encoding done in N ms": the
# encoder on the preprocessed image) and `etllm-bench --image-encode` (the
# program's vision_encoder on pixels of the same size), per thread count.
#
#   LLAMA_CPP_DIR=/path/to/llama.cpp/build scripts/bench-image-encode-vs-mtmd.sh
#
# Settings [defaults]: ETLLM_BUILD_DIR [<repo>/build], WORK_DIR
# [/tmp/etllm-image-encode], MODEL [llava], VISION_PRESET [clip-vit-b16 for
# llava, smolvlm-256m for smolvlm], RECIPES
# ["cpu-fp32 cpu-int8 cpu-8da4w"], THREADS [1,2], ROUNDS [3], REPS [3]
# (etllm-bench -r per round; mtmd-cli runs once per round: one image).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
me=bench-image-encode-vs-mtmd
die() { echo "$me: error: $*" >&2; exit 1; }
: "${LLAMA_CPP_DIR:?set LLAMA_CPP_DIR to a llama.cpp build directory}"
B="${ETLLM_BUILD_DIR:-$repo/build}/bin"
L="$LLAMA_CPP_DIR"
[ -x "$L/llama-mtmd-cli" ] || L="$LLAMA_CPP_DIR/bin"
W="${WORK_DIR:-/tmp/etllm-image-encode}"
case "$W" in "$repo"|"$repo"/*) die "WORK_DIR must be outside the repository";; esac
MODEL="${MODEL:-llava}"
case "$MODEL" in
llava) PRESET="${VISION_PRESET:-clip-vit-b16}" TEMPLATE=vicuna ;;
smolvlm) PRESET="${VISION_PRESET:-smolvlm-256m}" TEMPLATE=chatml ;;
*) die "MODEL must be llava or smolvlm, not '$MODEL'" ;;
esac
RECIPES="${RECIPES:-cpu-fp32 cpu-int8 cpu-8da4w}"
THREADS="${THREADS:-1,2}" ROUNDS="${ROUNDS:-3}" REPS="${REPS:-3}"
for v in ROUNDS REPS; do
  [[ "${!v}" =~ ^[1-9][0-9]{0,3}$ ]] || die "$v must be a positive integer, not '${!v}'"
done
[[ "$THREADS" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "THREADS must be a comma list, not '$THREADS'"
for t in "$L/llama-mtmd-cli" "$B/etllm-bench" "$B/etllm-export" "$B/etllm-gen-checkpoint"; do
  [ -x "$t" ] || die "no $t (llama.cpp: cmake --build BUILD --target llama-mtmd-cli)"
done
PY="$("$repo/scripts/venv.sh" python 2>/dev/null || command -v python3)"
mkdir -p "$W"
echo "$me: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, etllm $(git -C "$repo" rev-parse --short HEAD)"

rm -rf "$W/hf"
"$B/etllm-gen-checkpoint" --arch "$MODEL" --format hf --vision-preset "$PRESET" \
  --vocab 512 --max-seq 1024 -o "$W/hf" > /dev/null
"$B/etllm-gen-checkpoint" --arch "$MODEL" --format gguf --vision-preset "$PRESET" \
  --vocab 512 --max-seq 1024 -o "$W/text.gguf" > /dev/null
if [ "$MODEL" = smolvlm ]; then
  # One tile: the longest edge to the tower's side (no splitting on either
  # side: llama.cpp reads it as clip.vision.preproc_image_size).
  "$PY" - "$W/hf/preprocessor_config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["size"] = {"longest_edge": c["max_image_size"]["longest_edge"]}
json.dump(c, open(p, "w"), indent=2)
PY
fi
for prec in f32 f16; do
  "$PY" "$repo/scripts/lib/${MODEL}_mmproj.py" "$W/hf" "$W/mmproj-$prec.gguf" \
    $([ $prec = f16 ] && echo --f16)
done
programs=()
for r in $RECIPES; do
  "$B/etllm-export" --quiet --model "$W/text.gguf" \
    --set model.mmproj="$W/mmproj-f32.gguf" --pipeline "$r" -o "$W/$r.pte"
  programs+=("$W/$r.pte")
done
size=$(sed -n 's/.*"image_size": \([0-9]*\).*/\1/p' "$W/hf/config.json" | head -1)
"$PY" -c "
import numpy as np, sys
from PIL import Image
Image.fromarray(np.random.default_rng(0).integers(0, 256, ($size, $size, 3), dtype=np.uint8)).save(sys.argv[1])
" "$W/image.png"
ls -l "$W"/*.gguf "$W"/*.pte | awk '{print "  " $5 " bytes  " $9}'

for round in $(seq "$ROUNDS"); do
  for t in ${THREADS//,/ }; do
    for prec in f32 f16; do
      # Its exit status is not looked at: with the random tiny SmolVLM
      # vocabulary mtmd-cli aborts decoding the text after the image
      # (GGML_ASSERT in mtmd-helper.cpp), after printing the encode time.
      log=$("$L/llama-mtmd-cli" -m "$W/text.gguf" --mmproj "$W/mmproj-$prec.gguf" \
              --image "$W/image.png" -p "Hi" -n 1 -t "$t" \
              --chat-template "$TEMPLATE" 2>&1 || true)
      ms=$(sed -n 's/.*mtmd batch encoding done in \([0-9]*\) ms.*/\1/p' <<<"$log" | head -1)
      [ -n "$ms" ] || die "llama-mtmd-cli printed no encode time (mmproj $prec)"
      echo "round $round  threads $t  llama.cpp mtmd mmproj-$prec  $ms ms"
    done
    "$B/etllm-bench" --image-encode -m "$(IFS=,; echo "${programs[*]}")" \
      -t "$t" -r "$REPS" -o jsonl |
      "$PY" -c "
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    ms = ' '.join('%.0f' % x for x in j['samples_ms'])
    print('round $round  threads %d  etllm %s  %s ms' % (j['n_threads'], j['model_filename'].rsplit('/', 1)[-1], ms))
"
  done
done
