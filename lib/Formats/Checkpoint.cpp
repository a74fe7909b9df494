//===- Checkpoint.cpp - Checkpoint, format detection, validation ----------===//

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/Formats/Llama2c.h"
#include "etllm/Formats/Safetensors.h"
#include "Internal.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace etllm::formats {

Checkpoint::Checkpoint() = default;
Checkpoint::~Checkpoint() = default;

const TensorRef *Checkpoint::find(std::string_view hfName) const {
  auto it = index_.find(hfName);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue *Checkpoint::metadata(std::string_view key) const {
  auto it = metadataIndex_.find(key);
  return it == metadataIndex_.end() ? nullptr : &metadata_[it->second].second;
}

namespace detail {

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool pathExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty() || dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

} // namespace detail

Result<std::string> readTextFile(const std::string &path, uint64_t maxBytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error(path + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    ::close(fd);
    return Error(path + ": file is too large (" + std::to_string(st.st_size) +
                 " bytes, limit " + std::to_string(maxBytes) + ")");
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, &out[done], out.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::string msg = path + ": read failed: " +
                        (n < 0 ? std::strerror(errno) : "unexpected EOF");
      ::close(fd);
      return Error(msg);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return out;
}

namespace detail {

bool splitLayerName(const std::string &name, const std::string &prefix,
                    int64_t &layer, std::string &suffix) {
  if (name.compare(0, prefix.size(), prefix) != 0)
    return false;
  size_t i = prefix.size();
  size_t start = i;
  int64_t v = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') {
    if (i - start >= 9)
      return false;
    v = v * 10 + (name[i] - '0');
    ++i;
  }
  if (i == start || i >= name.size() || name[i] != '.')
    return false;
  if (i - start > 1 && name[start] == '0')
    return false; // No leading zeros: "blk.01" is not layer 1.
  layer = v;
  suffix = name.substr(i + 1);
  return true;
}

} // namespace detail

namespace {

/// Reads up to `n` leading bytes of a file.
std::string peekFile(const std::string &path, size_t n, uint64_t &fileSize,
                     std::string &err) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    err = std::strerror(errno);
    return {};
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    err = "not a regular file";
    return {};
  }
  fileSize = static_cast<uint64_t>(st.st_size);
  std::string buf(n, '\0');
  ssize_t got = ::pread(fd, &buf[0], n, 0);
  ::close(fd);
  if (got < 0) {
    err = std::strerror(errno);
    return {};
  }
  buf.resize(static_cast<size_t>(got));
  return buf;
}

} // namespace

Result<std::unique_ptr<Checkpoint>> openCheckpoint(const std::string &path,
                                                   const OpenOptions &options) {
  Result<std::unique_ptr<Checkpoint>> result =
      Error(path + ": no checkpoint reader ran");
  if (detail::isDirectory(path)) {
    if (!detail::pathExists(detail::joinPath(path, "config.json")))
      return Error(path + ": directory has no config.json (checked for a "
                          "Hugging Face model directory)");
    result = openHfDirectory(path);
  } else {
    uint64_t size = 0;
    std::string err;
    std::string head = peekFile(path, 64, size, err);
    if (!err.empty())
      return Error(path + ": cannot open: " + err);
    bool isGguf = head.size() >= 4 && std::memcmp(head.data(), "GGUF", 4) == 0;
    bool braceAt8 = head.size() >= 9 && head[8] == '{';
    bool safetensorsLength = false;
    if (braceAt8) {
      uint64_t n = detail::loadLE<uint64_t>(
          reinterpret_cast<const uint8_t *>(head.data()));
      safetensorsLength = n <= size - 8;
    }
    std::string llama2cProblem;
    bool llama2c = false;
    if (head.size() >= 28) {
      Llama2cHeader h;
      std::memcpy(&h, head.data(), sizeof(h));
      Result<uint64_t> expected = llama2cExpectedFileSize(h, path);
      if (expected)
        llama2c = true;
      else
        llama2cProblem = expected.message();
    } else {
      llama2cProblem = "shorter than the 28-byte llama2.c header";
    }
    if (isGguf)
      result = openGguf(path);
    else if (braceAt8 && safetensorsLength)
      result = openSafetensors(path);
    else if (llama2c)
      result = openLlama2c(path);
    else if (braceAt8)
      result = openSafetensors(path); // Reports the bad header length.
    else
      return Error(path + ": unrecognized checkpoint format (" +
                   std::to_string(size) +
                   " bytes): not a directory with config.json, no \"GGUF\" "
                   "magic, no safetensors JSON header, and not a llama2.c v0 "
                   "checkpoint: " +
                   llama2cProblem);
  }
  if (!result)
    return result;
  if (!options.mmproj.empty()) {
    if ((*result)->format() != "gguf" || !(*result)->hasConfig() ||
        (*result)->config().hasVision())
      return Error(options.mmproj + ": an mmproj file completes a GGUF text "
                                    "model; " +
                   path + " is not one");
    result = detail::attachMmproj(std::move(*result), options.mmproj);
    if (!result)
      return result;
  }
  if (!options.visionWeights.empty()) {
    result = detail::attachVisionWeights(std::move(*result),
                                         options.visionWeights);
    if (!result)
      return result;
  }
  if (options.validateTensors && (*result)->hasConfig()) {
    Status s = validateAgainstConfig(**result, (*result)->config());
    if (!s.ok())
      return Error(s.message());
  }
  return result;
}

Status validateAgainstConfig(const Checkpoint &checkpoint,
                             const ModelConfig &config) {
  Result<std::vector<ExpectedTensor>> expected = expectedTensors(config);
  if (!expected)
    return Error(checkpoint.path() + ": invalid config: " + expected.message());
  for (const ExpectedTensor &e : *expected) {
    const TensorRef *t = checkpoint.find(e.name);
    if (!t && e.optional)
      continue;
    if (!t)
      return Error(checkpoint.path() + ": missing tensor '" + e.name +
                   "' required by " + config.architecture + " (expected " +
                   shapeToString(e.shape) + ")");
    if (t->shape != e.shape)
      return Error(t->file + ": tensor '" + e.name + "'" +
                   (t->sourceName != t->name ? " ('" + t->sourceName + "')"
                                             : std::string()) +
                   " has shape " + shapeToString(t->shape) +
                   " but the config "
                   "implies " +
                   shapeToString(e.shape));
  }
  return Status();
}

} // namespace etllm::formats
