//===- FuzzSupport.h - Helpers shared by the fuzz targets -------*- C++ -*-===//
//
// The fuzz targets (fuzz/targets/*.cpp) call only public APIs. Each defines
// LLVMFuzzerTestOneInput (and maybe LLVMFuzzerInitialize) and is built twice:
// with clang and libFuzzer into build-fuzz (scripts/fuzz.sh), and with the
// project's compiler into a replay driver (ReplayMain.cpp) that the normal
// test suite runs over fuzz/regressions/<target>/ and fuzz/seeds/<target>/.
// So nothing here may need clang (no FuzzedDataProvider).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FUZZ_FUZZSUPPORT_H
#define ETLLM_FUZZ_FUZZSUPPORT_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace etllm::fuzz {

/// A directory private to this process (created on first use, removed at
/// exit) for the files a target must hand to a path-based reader: under
/// TMPDIR when it is set, else under /dev/shm when that is a writable
/// directory (a tmpfs: on a disk-backed /tmp the llama2c target spent about
/// 45% of its wall time waiting for the disk), else under /tmp.
const std::string &scratchDir();

/// Writes `data` to scratchDir()/`name` (parent directories created) and
/// returns the path.
std::string writeScratch(const std::string &name, std::string_view data);

/// The shared test-data directory: $ETLLM_SHARED_DIR, else the one the build
/// was configured with.
std::string sharedDir();

/// Reads a whole file; empty when it cannot.
std::string readFile(const std::string &path);

/// Splits `input` at each `separator`, into at most `maxParts` parts (the
/// last keeps the rest).
std::vector<std::string_view>
split(std::string_view input, std::string_view separator, size_t maxParts);

/// True when $ETLLM_FUZZ_VERBOSE is set: targets then say on stderr how far
/// each input got (to check that seeds reach the interesting code).
bool verbose();

/// Prints `message` when verbose().
void note(const std::string &message);

/// A property the target checks does not hold: print and abort, which
/// libFuzzer reports as a crash (and the replay test as a failure).
[[noreturn]] inline void propertyFailed(const char *what) {
  std::fprintf(stderr, "etllm fuzz property failed: %s\n", what);
  std::abort();
}

} // namespace etllm::fuzz

#define ETLLM_FUZZ_CHECK(cond)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      ::etllm::fuzz::propertyFailed(#cond " (" __FILE__ ")");                  \
  } while (0)

#endif // ETLLM_FUZZ_FUZZSUPPORT_H
