#!/usr/bin/env bash
# The arm64 (aarch64-linux-gnu) libraries the runtime's cross-build links,
# unpacked from Debian's arm64 packages into a folder outside the clone:
#
#   scripts/lib/arm64-sysroot.sh [DIR]
#
# DIR defaults to $ETLLM_ARM64_SYSROOT, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/etllm/sysroot-arm64. Idempotent: a package
# whose candidate version is already unpacked is not fetched again. Called by
# scripts/setup.sh.
#
# The packages are fetched with `apt-get download PKG:arm64` and unpacked with
# `dpkg-deb -x`, never installed: installing libpthreadpool-dev:arm64 (or
# libsentencepiece-dev:arm64) would remove the amd64 package of the same name,
# which the host build needs. The C library and libstdc++ come with Debian's
# cross compiler (g++-aarch64-linux-gnu, under /usr/aarch64-linux-gnu);
# cmake/aarch64-linux-gnu.cmake finds both.
set -euo pipefail

DIR=${1:-${ETLLM_ARM64_SYSROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/etllm/sysroot-arm64}}

# What the runtime and its tests link (with the shared libraries those
# need); nlohmann-json and flatbuffers' headers too, so that the cross build
# finds every dependency in one place. ":all" marks architecture-independent
# packages.
PKGS=(
  libpthreadpool-dev libpthreadpool0
  libsentencepiece-dev libsentencepiece0
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
  libgtest-dev libgmock-dev
  libflatbuffers-dev libflatbuffers2 flatbuffers-compiler-dev
  nlohmann-json3-dev:all
  # runtime/image: PNG (with zlib) and JPEG
  libpng-dev libpng16-16 zlib1g-dev zlib1g libjpeg62-turbo-dev libjpeg62-turbo
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "arm64-sysroot: adding the arm64 architecture to dpkg (package lists only)"
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
fi

# Every package's candidate version, from one apt-cache call (each call
# reads the package lists: seconds on a busy machine).
sels=()
for spec in "${PKGS[@]}"; do
  name=${spec%:all}
  if [ "$name" != "$spec" ]; then sels+=("$name"); else sels+=("$name:arm64"); fi
done
versions() {
  apt-cache policy "${sels[@]}" 2>/dev/null |
    awk '/^[^ ].*:$/ {p = substr($0, 1, length($0) - 1)}
         /^ *Candidate:/ {print p, $2}'
}
table=$(versions)
if echo "$table" | grep -q '(none)' || [ "$(echo "$table" | wc -l)" -ne ${#sels[@]} ]; then
  $SUDO apt-get update -qq
  table=$(versions)
fi
# As root, apt cannot hand the download to its sandbox user in a private
# folder: say so once here rather than per file.
APT_OPTS=()
if [ "$(id -u)" -eq 0 ]; then APT_OPTS=(-o APT::Sandbox::User=root); fi

mkdir -p "$DIR/debs"
fetched=0
for sel in "${sels[@]}"; do
  name=${sel%:arm64}
  ver=$(echo "$table" | awk -v p="$sel" '$1 == p || $1 == p ":amd64" {print $2}' | head -1)
  if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
    echo "arm64-sysroot: error: Debian has no candidate for $sel" >&2
    exit 1
  fi
  stamp="$DIR/debs/$name.unpacked"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$ver" ]; then
    continue
  fi
  rm -f "$DIR/debs/${name}_"*.deb
  (cd "$DIR/debs" && apt-get download -qq "${APT_OPTS[@]}" "$sel=$ver")
  dpkg-deb -x "$DIR/debs/${name}_"*.deb "$DIR"
  echo "$ver" > "$stamp"
  fetched=$((fetched + 1))
done

# A few -dev packages link their .so to an absolute path: point such links
# inside DIR (once: a link already inside DIR is left alone).
find "$DIR/usr/lib" -type l -lname '/*' | while read -r link; do
  target=$(readlink "$link")
  case $target in "$DIR"/*) continue ;; esac
  ln -sfn "$DIR$target" "$link"
done
# Debian 12 merges /lib into /usr/lib: the shared libraries some packages
# put in lib/ (zlib's libz.so.1) are linked into usr/lib/TRIPLE, where the
# build tree's RUNPATH looks for them at run time.
if [ -d "$DIR/lib/aarch64-linux-gnu" ]; then
  for f in "$DIR"/lib/aarch64-linux-gnu/*; do
    dest="$DIR/usr/lib/aarch64-linux-gnu/$(basename "$f")"
    [ -e "$dest" ] || ln -s "$f" "$dest"
  done
fi
echo "arm64-sysroot: $DIR ($fetched package(s) fetched)"
