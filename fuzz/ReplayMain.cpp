//===- ReplayMain.cpp - Runs fuzz inputs through a target, without libFuzzer
//-===//
//
//   etllm-fuzz-replay-<target> [--max-seconds S] FILE_OR_DIR...
//
// Calls the target's LLVMFuzzerInitialize (if any) once, then
// LLVMFuzzerTestOneInput on every file given and every regular file in the
// directories given (sorted, so runs are reproducible). A crash fails the
// run as it would under libFuzzer; an input that takes longer than S seconds
// (default 10) fails it too, since timeouts are kept as regressions as well.
// Built by the project's own compiler: the normal test suite replays the
// regression inputs with no clang in sight.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc,
                                                          char ***argv);

int main(int argc, char **argv) {
  double maxSeconds = 10;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc) {
      maxSeconds = std::atof(argv[++i]);
      continue;
    }
    std::filesystem::path p(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> inDir;
      for (const auto &e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file() && e.path().filename().string()[0] != '.')
          inDir.push_back(e.path().string());
      std::sort(inDir.begin(), inDir.end());
      files.insert(files.end(), inDir.begin(), inDir.end());
    } else if (std::filesystem::exists(p, ec)) {
      files.push_back(p.string());
    }
    // A directory that does not exist yet (no regression kept) is no input.
  }
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  int slow = 0;
  for (const std::string &f : files) {
    std::string bytes = etllm::fuzz::readFile(f);
    auto start = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (s > maxSeconds) {
      std::fprintf(stderr, "%s: took %.1f s (more than %.1f s)\n", f.c_str(), s,
                   maxSeconds);
      ++slow;
    }
  }
  std::printf("replayed %zu inputs\n", files.size());
  return slow ? 1 : 0;
}
