//===- FuzzSupport.cpp - Helpers shared by the fuzz targets ---------------===//
#include "FuzzSupport.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace etllm::fuzz {

const std::string &scratchDir() {
  static const std::string dir = [] {
    // TMPDIR, else a writable /dev/shm (FuzzSupport.h), else /tmp.
    const char *tmp = std::getenv("TMPDIR");
    std::filesystem::path p = "/tmp";
    if (tmp && *tmp)
      p = tmp;
    else if (std::filesystem::is_directory("/dev/shm") &&
             ::access("/dev/shm", W_OK | X_OK) == 0)
      p = "/dev/shm";
    p /= "etllm-fuzz-" + std::to_string(::getpid());
    std::filesystem::create_directories(p);
    return p.string();
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

std::string writeScratch(const std::string &name, std::string_view data) {
  std::filesystem::path p = std::filesystem::path(scratchDir()) / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return p.string();
}

std::string sharedDir() {
  if (const char *env = std::getenv("ETLLM_SHARED_DIR"); env && *env)
    return env;
  return ETLLM_FUZZ_SHARED_DIR;
}

bool verbose() {
  static const bool v = std::getenv("ETLLM_FUZZ_VERBOSE") != nullptr;
  return v;
}

void note(const std::string &message) {
  if (verbose())
    std::fprintf(stderr, "fuzz: %s\n", message.c_str());
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string_view>
split(std::string_view input, std::string_view separator, size_t maxParts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < maxParts) {
    size_t at = input.find(separator);
    if (at == std::string_view::npos)
      break;
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + separator.size());
  }
  parts.push_back(input);
  return parts;
}

} // namespace etllm::fuzz
