#!/bin/sh
# An app links the installed runtime in one step: installs the standalone
# runtime build into a temporary prefix, builds examples/generate (C++) and
# examples/c-api (the C API, compiled as C) against it with a separate CMake
# project each, and the C++ example once more with pkg-config alone; then
# runs them on a stories260K program and checks that real text comes out.
#
# usage: install-and-build.sh CMAKE RUNTIME_BUILD_DIR WORK_DIR ETLLM_EXPORT SHARED_DIR SOURCE_DIR
set -eu
cmake=$1 rt_build=$2 work=$3 etllm_export=$4 shared=$5 src=$6
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
"$cmake" --install "$rt_build" --prefix "$prefix" > "$work/install.log"
echo "installed into $prefix"

"$cmake" -S "$src/examples/generate" -B "$work/generate" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > "$work/generate.log"
"$cmake" --build "$work/generate" >> "$work/generate.log"
"$cmake" -S "$src/examples/c-api" -B "$work/c-api" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > "$work/c-api.log"
"$cmake" --build "$work/c-api" >> "$work/c-api.log"
pcdir=$(dirname "$(find "$prefix" -name etllm_runtime.pc)")
PKG_CONFIG_PATH=$pcdir
export PKG_CONFIG_PATH
c++ -std=c++17 -O1 "$src/examples/generate/generate.cpp" -o "$work/generate-pc" \
  $(pkg-config --cflags --libs etllm_runtime)
echo "built the examples with find_package(etllm_runtime) and pkg-config"

"$etllm_export" --quiet --model "$shared/models/stories260K/stories260K.bin" \
  --tokenizer "$shared/models/stories260K/tok512.bin" -o "$work/stories260K.pte"
"$etllm_export" --quiet --model "$shared/models/stories260K/stories260K.bin" \
  --tokenizer "$shared/models/stories260K/tok512.bin" \
  --chat-template "$src/test/ChatTemplate/Inputs/meta-llama-Llama-2-7b-chat-hf.jinja" \
  -o "$work/chat.pte"
# A tiny random LLaVA (issue 34): the C API's images.
"$(dirname "$etllm_export")/etllm-gen-checkpoint" --arch llava --format hf \
  --vocab 512 -o "$work/llava-hf" > /dev/null
"$etllm_export" --quiet --model "$work/llava-hf" \
  --tokenizer "$shared/models/stories260K/tok512.bin" \
  --chat-template "$src/test/ChatTemplate/Inputs/meta-llama-Llama-2-7b-chat-hf.jinja" \
  -o "$work/llava.pte"
# The llama2.c reference's greedy text (portable recipe, exact).
expected="Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
for app in "$work/generate/generate" "$work/generate-pc" "$work/c-api/generate_c"; do
  chat=
  case $app in *generate_c) chat="$work/chat.pte $work/llava.pte $src/test/Inputs/image-48x64.png $src/test/Inputs/image-30x40.jpg" ;; esac
  "$app" "$work/stories260K.pte" "Once upon a time" $chat > "$work/out.txt" 2> "$work/err.txt"
  if ! grep -qF "$expected" "$work/out.txt"; then
    echo "FAIL: $app printed:"; cat "$work/out.txt" "$work/err.txt"; exit 1
  fi
  echo "$(basename "$app"): $(head -c 100 "$work/out.txt")"
done
grep -q "all checks passed" "$work/err.txt" || { cat "$work/err.txt"; exit 1; }
grep "chat: second turn reused" "$work/err.txt"
grep "^image (JPEG): " "$work/out.txt"
echo "install-and-build: PASS"
