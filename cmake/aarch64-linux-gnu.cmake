# Cross-building the runtime for arm64 Linux (aarch64-linux-gnu) on an x86-64
# Debian machine (docs/Runtime.md, "arm64"):
#
#   scripts/setup.sh    # g++-aarch64-linux-gnu, qemu-user, the arm64 sysroot
#   cmake -S runtime -B build-arm64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   cmake --build build-arm64
#   ctest --test-dir build-arm64          # under qemu-aarch64
#
# The compiler is Debian's g++-aarch64-linux-gnu, whose C library and
# libstdc++ live in /usr/aarch64-linux-gnu. The runtime's other dependencies
# (pthreadpool, sentencepiece, PCRE2, GoogleTest, the flatbuffers and
# nlohmann-json headers) come from Debian's arm64 packages, unpacked by
# scripts/lib/arm64-sysroot.sh into ETLLM_ARM64_SYSROOT (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/etllm/sysroot-arm64), outside the clone and
# never installed (their amd64 twins would be removed). flatc runs on the
# host. Test executables run under qemu-aarch64; its CPU model comes from the
# environment variable QEMU_CPU (default: qemu's `max`, every extension).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(ETLLM_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${ETLLM_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${ETLLM_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${ETLLM_CROSS_TRIPLE})

if(NOT ETLLM_ARM64_SYSROOT)
  if(DEFINED ENV{ETLLM_ARM64_SYSROOT})
    set(ETLLM_ARM64_SYSROOT "$ENV{ETLLM_ARM64_SYSROOT}")
  elseif(DEFINED ENV{XDG_CACHE_HOME})
    set(ETLLM_ARM64_SYSROOT "$ENV{XDG_CACHE_HOME}/etllm/sysroot-arm64")
  else()
    set(ETLLM_ARM64_SYSROOT "$ENV{HOME}/.cache/etllm/sysroot-arm64")
  endif()
endif()
set(ETLLM_ARM64_SYSROOT "${ETLLM_ARM64_SYSROOT}" CACHE PATH
    "Debian's arm64 runtime dependencies, unpacked (scripts/lib/arm64-sysroot.sh)")
if(NOT EXISTS "${ETLLM_ARM64_SYSROOT}/usr/include/pthreadpool.h")
  message(FATAL_ERROR "no arm64 dependencies in ${ETLLM_ARM64_SYSROOT}: run "
          "scripts/setup.sh (or scripts/lib/arm64-sysroot.sh DIR and "
          "-DETLLM_ARM64_SYSROOT=DIR)")
endif()
# try_compile projects get the same sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ETLLM_ARM64_SYSROOT)

# Libraries, headers and packages from the unpacked packages and the cross
# C library only; programs (flatc, pkg-config) from the host.
set(CMAKE_FIND_ROOT_PATH "${ETLLM_ARM64_SYSROOT}" /usr/${ETLLM_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads the arm64 .pc files and prefixes their paths.
set(ENV{PKG_CONFIG_LIBDIR}
    "${ETLLM_ARM64_SYSROOT}/usr/lib/${ETLLM_CROSS_TRIPLE}/pkgconfig:${ETLLM_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${ETLLM_ARM64_SYSROOT}")
unset(ENV{PKG_CONFIG_PATH})

# The shared libraries' own dependencies resolve in the unpacked tree.
# Debian's multiarch headers (libjpeg's jconfig.h) live under the triple.
set(CMAKE_C_STANDARD_INCLUDE_DIRECTORIES
    "${ETLLM_ARM64_SYSROOT}/usr/include/${ETLLM_CROSS_TRIPLE}")
set(CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES
    "${ETLLM_ARM64_SYSROOT}/usr/include/${ETLLM_CROSS_TRIPLE}")

set(CMAKE_EXE_LINKER_FLAGS_INIT
    "-Wl,-rpath-link,${ETLLM_ARM64_SYSROOT}/usr/lib/${ETLLM_CROSS_TRIPLE}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${CMAKE_EXE_LINKER_FLAGS_INIT}")

# Tests (and gtest_discover_tests) run under qemu-user: the cross C library
# as the guest's root for the loader, the unpacked libraries through the
# build tree's RPATH and, for their own dependencies (libpng's libz, which no
# RUNPATH of ours names), the guest's LD_LIBRARY_PATH. QEMU_CPU in the
# environment picks the CPU model.
set(ETLLM_ARM64_GUEST_ROOT /usr/${ETLLM_CROSS_TRIPLE})
find_program(ETLLM_QEMU_AARCH64 qemu-aarch64)
if(ETLLM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR
      "${ETLLM_QEMU_AARCH64};-L;${ETLLM_ARM64_GUEST_ROOT};-E;LD_LIBRARY_PATH=${ETLLM_ARM64_SYSROOT}/usr/lib/${ETLLM_CROSS_TRIPLE}")
endif()
