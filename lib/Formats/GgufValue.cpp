//===- GgufValue.cpp - GGUF metadata values and ggml tensor types ---------===//
//
// The value types of the container: typed metadata (GgufValue) and the ggml
// tensor type ids GGUF stores, with their DTypes.
//
//===----------------------------------------------------------------------===//

#include "etllm/Formats/Gguf.h"

#include <limits>

namespace etllm::formats {

//===----------------------------------------------------------------------===//
// GgufValue
//===----------------------------------------------------------------------===//

const char *ggufTypeName(GgufType type) {
  static const char *kNames[] = {
      "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
      "bool",  "string", "array",  "uint64", "int64",  "float64"};
  uint32_t t = static_cast<uint32_t>(type);
  return t < 13 ? kNames[t] : "unknown";
}

GgufValue GgufValue::strings(const std::vector<std::string> &v) {
  GgufArray a;
  a.elementType = GgufType::String;
  a.values.reserve(v.size());
  for (const std::string &s : v)
    a.values.push_back(str(s));
  return array(std::move(a));
}

GgufValue GgufValue::floats(const std::vector<float> &v) {
  GgufArray a;
  a.elementType = GgufType::Float32;
  a.values.reserve(v.size());
  for (float f : v)
    a.values.push_back(f32(f));
  return array(std::move(a));
}

GgufValue GgufValue::int32s(const std::vector<int32_t> &v) {
  GgufArray a;
  a.elementType = GgufType::Int32;
  a.values.reserve(v.size());
  for (int32_t i : v)
    a.values.push_back(i32(i));
  return array(std::move(a));
}

std::optional<int64_t> GgufValue::toInt() const {
  switch (type()) {
  case GgufType::UInt8:
    return std::get<0>(storage);
  case GgufType::Int8:
    return std::get<1>(storage);
  case GgufType::UInt16:
    return std::get<2>(storage);
  case GgufType::Int16:
    return std::get<3>(storage);
  case GgufType::UInt32:
    return std::get<4>(storage);
  case GgufType::Int32:
    return std::get<5>(storage);
  case GgufType::UInt64: {
    uint64_t v = std::get<10>(storage);
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return std::nullopt;
    return static_cast<int64_t>(v);
  }
  case GgufType::Int64:
    return std::get<11>(storage);
  default:
    return std::nullopt;
  }
}

std::optional<uint64_t> GgufValue::toUInt() const {
  if (type() == GgufType::UInt64)
    return std::get<10>(storage);
  std::optional<int64_t> v = toInt();
  if (!v || *v < 0)
    return std::nullopt;
  return static_cast<uint64_t>(*v);
}

std::optional<double> GgufValue::toFloat() const {
  if (type() == GgufType::Float32)
    return std::get<6>(storage);
  if (type() == GgufType::Float64)
    return std::get<12>(storage);
  if (std::optional<int64_t> v = toInt())
    return static_cast<double>(*v);
  return std::nullopt;
}

std::optional<bool> GgufValue::toBool() const {
  if (type() == GgufType::Bool)
    return std::get<7>(storage);
  return std::nullopt;
}

const std::string *GgufValue::toString() const {
  return std::get_if<std::string>(&storage);
}

const GgufArray *GgufValue::toArray() const {
  return std::get_if<GgufArray>(&storage);
}

//===----------------------------------------------------------------------===//
// ggml types
//===----------------------------------------------------------------------===//

std::string ggmlTypeName(uint32_t type) {
  static const char *kNames[] = {
      "F32",        "F16",        "Q4_0",       "Q4_1",     "Q4_2",    "Q4_3",
      "Q5_0",       "Q5_1",       "Q8_0",       "Q8_1",     "Q2_K",    "Q3_K",
      "Q4_K",       "Q5_K",       "Q6_K",       "Q8_K",     "IQ2_XXS", "IQ2_XS",
      "IQ3_XXS",    "IQ1_S",      "IQ4_NL",     "IQ3_S",    "IQ2_S",   "IQ4_XS",
      "I8",         "I16",        "I32",        "I64",      "F64",     "IQ1_M",
      "BF16",       "Q4_0_4_4",   "Q4_0_4_8",   "Q4_0_8_8", "TQ1_0",   "TQ2_0",
      "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};
  if (type < sizeof(kNames) / sizeof(kNames[0]))
    return std::string(kNames[type]) + " (type " + std::to_string(type) + ")";
  return "type " + std::to_string(type);
}

namespace {
struct GgmlDType {
  GgmlType ggml;
  DType dtype;
};
constexpr GgmlDType kGgmlTypes[] = {
    {GgmlType::F32, DType::F32},   {GgmlType::F16, DType::F16},
    {GgmlType::BF16, DType::BF16}, {GgmlType::F64, DType::F64},
    {GgmlType::I8, DType::I8},     {GgmlType::I16, DType::I16},
    {GgmlType::I32, DType::I32},   {GgmlType::I64, DType::I64},
    {GgmlType::Q8_0, DType::Q8_0}, {GgmlType::Q4_0, DType::Q4_0},
    {GgmlType::Q4_1, DType::Q4_1}, {GgmlType::Q5_0, DType::Q5_0},
    {GgmlType::Q5_1, DType::Q5_1}, {GgmlType::Q4_K, DType::Q4_K},
    {GgmlType::Q5_K, DType::Q5_K}, {GgmlType::Q6_K, DType::Q6_K},
};
} // namespace

Result<DType> dtypeFromGgmlType(uint32_t type) {
  for (const GgmlDType &g : kGgmlTypes)
    if (static_cast<uint32_t>(g.ggml) == type)
      return g.dtype;
  return Error("unsupported ggml tensor type " + ggmlTypeName(type) +
               " (supported: F32, F16, BF16, F64, I8, I16, I32, I64, Q8_0, "
               "Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
}

Result<uint32_t> ggmlTypeFromDType(DType dtype) {
  for (const GgmlDType &g : kGgmlTypes)
    if (g.dtype == dtype)
      return static_cast<uint32_t>(g.ggml);
  return Error(std::string("GGUF has no tensor type for ") + dtypeName(dtype));
}

} // namespace etllm::formats
