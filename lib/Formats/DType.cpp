//===- DType.cpp - Element types and tensor byte sizes --------------------===//

#include "etllm/Formats/Checkpoint.h"

#include <cctype>
#include <limits>

namespace etllm::formats {

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  int64_t blockSize;
  int64_t blockBytes;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "F32", 1, 4},       {DType::F16, "F16", 1, 2},
    {DType::BF16, "BF16", 1, 2},     {DType::F64, "F64", 1, 8},
    {DType::I8, "I8", 1, 1},         {DType::I16, "I16", 1, 2},
    {DType::I32, "I32", 1, 4},       {DType::I64, "I64", 1, 8},
    {DType::U8, "U8", 1, 1},         {DType::BOOL, "BOOL", 1, 1},
    {DType::Q8_0, "Q8_0", 32, 34},   {DType::Q4_0, "Q4_0", 32, 18},
    {DType::Q4_1, "Q4_1", 32, 20},   {DType::Q5_0, "Q5_0", 32, 22},
    {DType::Q5_1, "Q5_1", 32, 24},   {DType::Q4_K, "Q4_K", 256, 144},
    {DType::Q5_K, "Q5_K", 256, 176}, {DType::Q6_K, "Q6_K", 256, 210},
};

const DTypeInfo &info(DType dtype) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == dtype)
      return i;
  return kDTypes[0]; // Unreachable for valid enumerators.
}
} // namespace

const char *dtypeName(DType dtype) { return info(dtype).name; }

Result<DType> parseDType(std::string_view name) {
  std::string upper;
  for (char c : name)
    upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const DTypeInfo &i : kDTypes)
    if (upper == i.name)
      return i.dtype;
  return Error("unknown dtype '" + std::string(name) + "'");
}

bool isBlockQuantized(DType dtype) { return info(dtype).blockSize > 1; }
int64_t dtypeBlockSize(DType dtype) { return info(dtype).blockSize; }
int64_t dtypeBlockBytes(DType dtype) { return info(dtype).blockBytes; }

std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Result<uint64_t> numElements(const std::vector<int64_t> &shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return Error("negative dimension in shape " + shapeToString(shape));
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n))
      return Error("element count of shape " + shapeToString(shape) +
                   " overflows 64 bits");
  }
  if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return Error("element count of shape " + shapeToString(shape) +
                 " overflows int64");
  return n;
}

Result<uint64_t> byteSize(DType dtype, const std::vector<int64_t> &shape) {
  Result<uint64_t> n = numElements(shape);
  if (!n)
    return n.error();
  const DTypeInfo &i = info(dtype);
  if (i.blockSize > 1) {
    if (shape.empty())
      return Error(std::string("a scalar cannot have block type ") + i.name);
    int64_t inner = shape.back();
    if (inner % i.blockSize != 0)
      return Error("innermost dimension " + std::to_string(inner) +
                   " of shape " + shapeToString(shape) +
                   " is not a multiple of the " + i.name + " block size " +
                   std::to_string(i.blockSize));
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(*n / i.blockSize,
                             static_cast<uint64_t>(i.blockBytes), &bytes))
    return Error("byte size of " + std::string(i.name) + " tensor of shape " +
                 shapeToString(shape) + " overflows 64 bits");
  return bytes;
}

} // namespace etllm::formats
