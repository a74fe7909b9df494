//===- GgufWriter.cpp - Streaming GGUF v3 writer --------------------------===//
//===----------------------------------------------------------------------===//

#include "etllm/Formats/Gguf.h"

#include <cerrno>
#include <cstring>

namespace etllm::formats {

namespace {

template <typename T> void put(std::string &buf, T v) {
  buf.append(reinterpret_cast<const char *>(&v), sizeof(T));
}

void putString(std::string &buf, const std::string &s) {
  put<uint64_t>(buf, s.size());
  buf += s;
}

void putValue(std::string &buf, const GgufValue &v) {
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          putString(buf, x);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          put<uint32_t>(buf, static_cast<uint32_t>(x.elementType));
          put<uint64_t>(buf, x.values.size());
          for (const GgufValue &e : x.values)
            putValue(buf, e);
        } else if constexpr (std::is_same_v<T, bool>) {
          put<uint8_t>(buf, x ? 1 : 0);
        } else {
          put<T>(buf, x);
        }
      },
      v.storage);
}

} // namespace

GgufWriter::GgufWriter(uint64_t alignment) : alignment_(alignment) {
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0)
    alignment_ = 32;
  if (alignment_ != 32)
    set("general.alignment", GgufValue::u32(static_cast<uint32_t>(alignment_)));
}

GgufWriter::~GgufWriter() {
  if (file_)
    std::fclose(file_);
}

void GgufWriter::set(const std::string &key, GgufValue value) {
  for (auto &kv : metadata_)
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  metadata_.emplace_back(key, std::move(value));
}

Status GgufWriter::addTensor(const std::string &name, DType dtype,
                             const std::vector<int64_t> &shape) {
  if (opened_)
    return Error("GgufWriter: addTensor after open");
  Result<uint32_t> type = ggmlTypeFromDType(dtype);
  if (!type)
    return type.error();
  if (shape.empty() || shape.size() > 4)
    return Error("GgufWriter: tensor '" + name + "' must have 1 to 4 dims");
  for (const PendingTensor &t : tensors_)
    if (t.name == name)
      return Error("GgufWriter: duplicate tensor '" + name + "'");
  Result<uint64_t> n = byteSize(dtype, shape);
  if (!n)
    return Error("GgufWriter: tensor '" + name + "': " + n.message());
  std::vector<uint64_t> ne;
  for (auto it = shape.rbegin(); it != shape.rend(); ++it) {
    if (*it <= 0)
      return Error("GgufWriter: tensor '" + name + "' has a zero dimension");
    ne.push_back(static_cast<uint64_t>(*it));
  }
  uint64_t offset = dataSize_;
  if (offset % alignment_)
    offset += alignment_ - offset % alignment_;
  tensors_.push_back({name, *type, std::move(ne), *n, offset});
  dataSize_ = offset + *n;
  return Status();
}

Status GgufWriter::writeRaw(const void *data, size_t size) {
  if (size && std::fwrite(data, 1, size, file_) != size) {
    failed_ = true;
    return Error(path_ + ": write failed: " + std::strerror(errno));
  }
  position_ += size;
  return Status();
}

Status GgufWriter::padTo(uint64_t target) {
  static const char kZeros[64] = {};
  while (position_ < target) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(64, target - position_));
    ETLLM_RETURN_IF_ERROR(writeRaw(kZeros, n));
  }
  return Status();
}

Status GgufWriter::open(const std::string &path) {
  if (opened_)
    return Error("GgufWriter: already opened");
  std::string buf;
  buf += "GGUF";
  put<uint32_t>(buf, 3);
  put<uint64_t>(buf, tensors_.size());
  put<uint64_t>(buf, metadata_.size());
  for (const auto &kv : metadata_) {
    putString(buf, kv.first);
    put<uint32_t>(buf, static_cast<uint32_t>(kv.second.type()));
    putValue(buf, kv.second);
  }
  for (const PendingTensor &t : tensors_) {
    putString(buf, t.name);
    put<uint32_t>(buf, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne)
      put<uint64_t>(buf, d);
    put<uint32_t>(buf, t.ggmlType);
    put<uint64_t>(buf, t.offset);
  }
  path_ = path;
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_)
    return Error(path + ": cannot create: " + std::strerror(errno));
  opened_ = true;
  ETLLM_RETURN_IF_ERROR(writeRaw(buf.data(), buf.size()));
  uint64_t dataStart = position_;
  if (dataStart % alignment_)
    dataStart += alignment_ - dataStart % alignment_;
  ETLLM_RETURN_IF_ERROR(padTo(dataStart));
  // Tensor offsets are relative to here.
  for (PendingTensor &t : tensors_)
    t.offset += dataStart;
  return Status();
}

uint64_t GgufWriter::remainingBytes() const {
  uint64_t left = 0;
  for (size_t i = currentTensor_; i < tensors_.size(); ++i)
    left += tensors_[i].nbytes;
  return left - currentWritten_;
}

Status GgufWriter::write(const void *data, size_t size) {
  if (!opened_ || !file_ || failed_)
    return Error("GgufWriter: write without a successful open");
  const uint8_t *p = static_cast<const uint8_t *>(data);
  while (size > 0) {
    if (currentTensor_ >= tensors_.size())
      return Error(path_ + ": more tensor bytes written than declared");
    PendingTensor &t = tensors_[currentTensor_];
    if (currentWritten_ == 0)
      ETLLM_RETURN_IF_ERROR(padTo(t.offset));
    size_t n = static_cast<size_t>(
        std::min<uint64_t>(size, t.nbytes - currentWritten_));
    ETLLM_RETURN_IF_ERROR(writeRaw(p, n));
    p += n;
    size -= n;
    currentWritten_ += n;
    if (currentWritten_ == t.nbytes) {
      ++currentTensor_;
      currentWritten_ = 0;
    }
  }
  return Status();
}

Status GgufWriter::finish() {
  if (!opened_ || !file_)
    return Error("GgufWriter: finish without open");
  Status pad = Status();
  if (currentTensor_ == tensors_.size() && !failed_) {
    uint64_t end = position_;
    if (end % alignment_)
      end += alignment_ - end % alignment_;
    pad = padTo(end);
  }
  std::FILE *f = file_;
  file_ = nullptr;
  bool closeFailed = std::fclose(f) != 0;
  if (failed_ || closeFailed || !pad.ok())
    return Error(path_ + ": write failed");
  if (currentTensor_ != tensors_.size())
    return Error(path_ + ": tensor '" + tensors_[currentTensor_].name +
                 "' and later ones were not fully written");
  return Status();
}

} // namespace etllm::formats
