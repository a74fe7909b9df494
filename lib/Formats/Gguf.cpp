//===- Gguf.cpp - GGUF reader, name mapping, config, writer ---------------===//
//
// Layout (GGUF v2/v3, little-endian):
//   "GGUF" u32:version u64:n_tensors u64:n_kv
//   n_kv x { string:key u32:type value }
//   n_tensors x { string:name u32:n_dims u64:ne[n_dims] u32:ggml_type
//                 u64:offset }
//   padding to general.alignment, then the data section; tensor offsets are
//   relative to it and aligned.
// string = u64:length bytes; array value = u32:element_type u64:count values.
//
//===----------------------------------------------------------------------===//

#include "etllm/Formats/Gguf.h"
#include "Internal.h"
#include "etllm/Models/Registry.h"

#include <cerrno>
#include <cmath>
#include <cstring>

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

//===----------------------------------------------------------------------===//
// Tensor names
//===----------------------------------------------------------------------===//

namespace {

using models::FamilySpec;

/// Splits "x.weight"/"x.bias".
bool splitKind(const std::string &name, std::string &base, std::string &kind) {
  for (const char *k : {".weight", ".bias"}) {
    size_t n = std::strlen(k);
    if (name.size() > n && name.compare(name.size() - n, n, k) == 0) {
      base = name.substr(0, name.size() - n);
      kind = k;
      return true;
    }
  }
  return false;
}

} // namespace

std::string detail::ggufNameToHf(const models::FamilySpec &family,
                                 const std::string &name) {
  const FamilySpec *f = &family;
  std::string base, kind, suffix;
  int64_t layer = -1;
  bool isLayer = detail::splitLayerName(name, "blk.", layer, suffix);
  if (!splitKind(isLayer ? suffix : name, base, kind))
    return "";
  for (const models::GgufTensorName &row : f->gguf.tensors) {
    if (isLayer != models::isLayerModule(row.hf) ||
        base != models::ggufTensorName(row.gguf))
      continue;
    if (!isLayer && kind != ".weight")
      return ""; // Model-level tensors have no bias.
    return models::hfPath(*f, row.hf, layer) + kind;
  }
  return "";
}

std::string detail::hfNameToGguf(const models::FamilySpec &family,
                                 const std::string &name) {
  const FamilySpec *f = &family;
  std::string layers =
      f->hfNames[static_cast<size_t>(models::HfModule::Layers)] +
      std::string(".");
  std::string base, kind, suffix;
  int64_t layer = -1;
  bool isLayer = detail::splitLayerName(name, layers, layer, suffix);
  if (!splitKind(isLayer ? suffix : name, base, kind))
    return "";
  for (const models::GgufTensorName &row : f->gguf.tensors) {
    if (isLayer != models::isLayerModule(row.hf) ||
        base != f->hfNames[static_cast<size_t>(row.hf)])
      continue;
    if (!isLayer && kind != ".weight")
      return "";
    std::string g = models::ggufTensorName(row.gguf) + kind;
    return isLayer ? "blk." + std::to_string(layer) + "." + g : g;
  }
  return "";
}

std::string ggufNameToHf(const std::string &arch, const std::string &name) {
  const FamilySpec *f = models::findByGgufArch(arch);
  return f ? detail::ggufNameToHf(*f, name) : "";
}

std::string hfNameToGguf(const std::string &arch, const std::string &name) {
  const FamilySpec *f = models::findByGgufArch(arch);
  return f ? detail::hfNameToGguf(*f, name) : "";
}

std::string ggufArchForModelType(const std::string &modelType) {
  const FamilySpec *f = models::findByModelType(modelType);
  return f && f->gguf.arch ? f->gguf.arch : "";
}

namespace {

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

constexpr int kMaxArrayDepth = 8;
/// Metadata arrays are decoded into GgufValues (~40 bytes per element), so
/// the total element count is capped to bound memory on hostile files. Real
/// vocabularies (tokens + merges) hold well under a million elements.
constexpr uint64_t kMaxMetadataElements = 1ull << 25;

class GgufParser {
public:
  GgufParser(const std::string &path, const uint8_t *data, uint64_t size)
      : path_(path), c_(data, size) {}

  Error fail(const std::string &what) const {
    return Error(path_ + ": " + what + " (at byte " +
                 std::to_string(c_.offset()) + ")");
  }

  Result<std::string> readString(const std::string &what) {
    uint64_t len;
    if (!c_.read(len))
      return fail("truncated file reading the length of " + what);
    if (!c_.has(len))
      return fail(what + ": string length " + std::to_string(len) +
                  " runs past the end of the file");
    const uint8_t *p;
    c_.readBytes(len, p);
    return std::string(reinterpret_cast<const char *>(p), len);
  }

  static uint64_t minElementBytes(uint32_t type) {
    switch (static_cast<GgufType>(type)) {
    case GgufType::UInt8:
    case GgufType::Int8:
    case GgufType::Bool:
      return 1;
    case GgufType::UInt16:
    case GgufType::Int16:
      return 2;
    case GgufType::UInt32:
    case GgufType::Int32:
    case GgufType::Float32:
      return 4;
    case GgufType::String:
    case GgufType::UInt64:
    case GgufType::Int64:
    case GgufType::Float64:
      return 8;
    case GgufType::Array:
      return 12;
    }
    return 1;
  }

  template <typename T> Result<GgufValue> readScalar(const std::string &what) {
    T v;
    if (!c_.read(v))
      return fail("truncated file reading " + what);
    return GgufValue(GgufValue::Storage(std::in_place_type<T>, v));
  }

  Result<GgufValue> readValue(uint32_t type, const std::string &what,
                              int depth) {
    switch (type) {
    case 0:
      return readScalar<uint8_t>(what);
    case 1:
      return readScalar<int8_t>(what);
    case 2:
      return readScalar<uint16_t>(what);
    case 3:
      return readScalar<int16_t>(what);
    case 4:
      return readScalar<uint32_t>(what);
    case 5:
      return readScalar<int32_t>(what);
    case 6:
      return readScalar<float>(what);
    case 7: {
      uint8_t b;
      if (!c_.read(b))
        return fail("truncated file reading " + what);
      if (b > 1)
        return fail(what + ": invalid bool value " + std::to_string(b));
      return GgufValue::boolean(b != 0);
    }
    case 8: {
      Result<std::string> s = readString(what);
      if (!s)
        return s.error();
      return GgufValue::str(std::move(*s));
    }
    case 9: {
      if (depth >= kMaxArrayDepth)
        return fail(what + ": arrays nested deeper than " +
                    std::to_string(kMaxArrayDepth));
      uint32_t elemType;
      uint64_t count;
      if (!c_.read(elemType) || !c_.read(count))
        return fail("truncated file reading the array header of " + what);
      if (elemType > 12)
        return fail(what + ": unknown array element type " +
                    std::to_string(elemType));
      uint64_t minBytes = minElementBytes(elemType);
      if (count > c_.remaining() / minBytes)
        return fail(what + ": array count " + std::to_string(count) + " of " +
                    ggufTypeName(static_cast<GgufType>(elemType)) +
                    " cannot fit in the remaining " +
                    std::to_string(c_.remaining()) + " bytes");
      elements_ += count;
      if (elements_ > kMaxMetadataElements)
        return fail(what + ": metadata arrays hold more than " +
                    std::to_string(kMaxMetadataElements) +
                    " elements in total (refusing to decode)");
      GgufArray arr;
      arr.elementType = static_cast<GgufType>(elemType);
      arr.values.reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) {
        Result<GgufValue> v = readValue(elemType, what, depth + 1);
        if (!v)
          return v.error();
        arr.values.push_back(std::move(*v));
      }
      return GgufValue::array(std::move(arr));
    }
    case 10:
      return readScalar<uint64_t>(what);
    case 11:
      return readScalar<int64_t>(what);
    case 12:
      return readScalar<double>(what);
    default:
      return fail(what + ": unknown metadata value type " +
                  std::to_string(type));
    }
  }

  detail::Cursor &cursor() { return c_; }

private:
  const std::string &path_;
  detail::Cursor c_;
  uint64_t elements_ = 0;
};

/// Typed metadata lookups with messages naming the file and key.
class MetaReader {
public:
  MetaReader(const Checkpoint &ckpt) : ckpt_(ckpt) {}
  const std::string &path() const { return ckpt_.path(); }

  Error error(const std::string &key, const std::string &what) const {
    return Error(path() + ": metadata key '" + key + "': " + what);
  }

  Result<std::optional<uint64_t>> optUInt(const std::string &key) const {
    const GgufValue *v = ckpt_.metadata(key);
    if (!v)
      return std::optional<uint64_t>();
    std::optional<uint64_t> u = v->toUInt();
    if (!u)
      return error(key, std::string("expected a non-negative integer, got ") +
                            ggufTypeName(v->type()));
    return std::optional<uint64_t>(*u);
  }

  Result<int64_t> dim(const std::string &key,
                      std::optional<int64_t> dflt) const {
    Result<std::optional<uint64_t>> v = optUInt(key);
    if (!v)
      return v.error();
    if (!*v) {
      if (dflt)
        return *dflt;
      return error(key, "required key is missing");
    }
    if (**v == 0 || **v > static_cast<uint64_t>(detail::kMaxConfigDim))
      return error(key, "value " + std::to_string(**v) + " is outside [1, " +
                            std::to_string(detail::kMaxConfigDim) + "]");
    return static_cast<int64_t>(**v);
  }

  Result<std::optional<double>> optFloat(const std::string &key) const {
    const GgufValue *v = ckpt_.metadata(key);
    if (!v)
      return std::optional<double>();
    std::optional<double> f = v->toFloat();
    if (!f || !std::isfinite(*f))
      return error(key, std::string("expected a finite number, got ") +
                            ggufTypeName(v->type()));
    return std::optional<double>(*f);
  }

  Result<std::optional<std::string>> optString(const std::string &key) const {
    const GgufValue *v = ckpt_.metadata(key);
    if (!v)
      return std::optional<std::string>();
    if (const std::string *s = v->toString())
      return std::optional<std::string>(*s);
    return error(key, std::string("expected a string, got ") +
                          ggufTypeName(v->type()));
  }

private:
  const Checkpoint &ckpt_;
};

/// Recovers llama3 rope-scaling parameters from llama.cpp's rope_freqs
/// factors when they match its formula; false otherwise.
bool fitLlama3(ModelConfig &c, const std::vector<float> &ff) {
  if (ff.empty())
    return false;
  float factor = 0;
  for (float f : ff)
    factor = std::max(factor, f);
  if (!(factor > 1.0f))
    return false;
  auto matches = [&](double low, double high, int64_t orig) {
    ModelConfig t = c;
    t.ropeScaling.type = "llama3";
    t.ropeScaling.factor = factor;
    t.ropeScaling.lowFreqFactor = low;
    t.ropeScaling.highFreqFactor = high;
    t.ropeScaling.originalMaxPositionEmbeddings = orig;
    std::vector<float> want = llama3RopeFreqFactors(t, orig);
    if (want.size() != ff.size())
      return false;
    for (size_t i = 0; i < ff.size(); ++i)
      if (std::fabs(want[i] - ff[i]) > 1e-4f * std::max(1.0f, ff[i]))
        return false;
    c = t;
    return true;
  };
  // llama.cpp's converter takes the original context from the top-level
  // hparams, 8192 when absent (as for every Llama 3.x config).
  constexpr int64_t kOrig = 8192;
  if (matches(1.0, 4.0, kOrig))
    return true;
  // Solve low/high from two intermediate points: smooth is linear in
  // orig / wavelen.
  std::vector<std::pair<double, double>> pts;
  int64_t dim = c.headDim;
  for (size_t i = 0; i < ff.size(); ++i) {
    double r = ff[i];
    if (r <= 1.0 + 1e-6 || r >= factor - 1e-6)
      continue;
    double freq = 1.0 / std::pow(c.ropeTheta, (2.0 * i) / dim);
    double x = kOrig / (2 * M_PI / freq);
    double s = (1.0 / r - 1.0 / factor) / (1.0 - 1.0 / factor);
    pts.push_back({x, s});
  }
  if (pts.size() >= 2) {
    auto [x0, s0] = pts.front();
    auto [x1, s1] = pts.back();
    if (std::fabs(s1 - s0) > 1e-9 && std::fabs(x1 - x0) > 1e-9) {
      double slope = (s1 - s0) / (x1 - x0); // 1 / (high - low)
      double low = x0 - s0 / slope;
      double high = low + 1.0 / slope;
      if (low > 0 && high > low && matches(low, high, kOrig))
        return true;
    }
  }
  return false;
}

std::unique_ptr<GgufTokenizerInfo> noTokenizer() { return nullptr; }

Result<std::unique_ptr<GgufTokenizerInfo>>
readTokenizer(const Checkpoint &ckpt) {
  bool any = false;
  for (const auto &kv : ckpt.metadataEntries())
    if (kv.first.rfind("tokenizer.", 0) == 0)
      any = true;
  if (!any)
    return noTokenizer();
  MetaReader m(ckpt);
  auto info = std::make_unique<GgufTokenizerInfo>();
  std::optional<std::string> s;
  ETLLM_ASSIGN_OR_RETURN(s, m.optString("tokenizer.ggml.model"));
  info->model = s.value_or("");
  ETLLM_ASSIGN_OR_RETURN(s, m.optString("tokenizer.ggml.pre"));
  info->pre = s.value_or("");
  ETLLM_ASSIGN_OR_RETURN(s, m.optString("tokenizer.chat_template"));
  info->chatTemplate = s.value_or("");

  auto array = [&](const char *key, GgufType want,
                   const GgufArray *&out) -> Status {
    out = nullptr;
    const GgufValue *v = ckpt.metadata(key);
    if (!v)
      return Status();
    const GgufArray *a = v->toArray();
    bool ok =
        a &&
        (a->elementType == want ||
         (want == GgufType::Int32 && a->elementType != GgufType::String &&
          a->elementType != GgufType::Array &&
          a->elementType != GgufType::Float32 &&
          a->elementType != GgufType::Float64 &&
          a->elementType != GgufType::Bool) ||
         (want == GgufType::Float32 && a->elementType == GgufType::Float64));
    if (!ok)
      return m.error(key,
                     std::string("expected an array of ") + ggufTypeName(want));
    out = a;
    return Status();
  };
  const GgufArray *a;
  ETLLM_RETURN_IF_ERROR(array("tokenizer.ggml.tokens", GgufType::String, a));
  if (a) {
    info->tokens.reserve(a->values.size());
    for (const GgufValue &v : a->values)
      info->tokens.push_back(*v.toString());
  }
  size_t n = info->tokens.size();
  ETLLM_RETURN_IF_ERROR(array("tokenizer.ggml.scores", GgufType::Float32, a));
  if (a) {
    if (a->values.size() != n)
      return m.error("tokenizer.ggml.scores",
                     std::to_string(a->values.size()) + " scores for " +
                         std::to_string(n) + " tokens");
    info->scores.reserve(n);
    for (const GgufValue &v : a->values)
      info->scores.push_back(static_cast<float>(*v.toFloat()));
  }
  ETLLM_RETURN_IF_ERROR(array("tokenizer.ggml.token_type", GgufType::Int32, a));
  if (a) {
    if (a->values.size() != n)
      return m.error("tokenizer.ggml.token_type",
                     std::to_string(a->values.size()) + " token types for " +
                         std::to_string(n) + " tokens");
    info->tokenTypes.reserve(n);
    for (const GgufValue &v : a->values) {
      std::optional<int64_t> t = v.toInt();
      if (!t || *t < 0 || *t > 255)
        return m.error("tokenizer.ggml.token_type", "invalid token type");
      info->tokenTypes.push_back(static_cast<int32_t>(*t));
    }
  }
  ETLLM_RETURN_IF_ERROR(array("tokenizer.ggml.merges", GgufType::String, a));
  if (a) {
    info->merges.reserve(a->values.size());
    for (const GgufValue &v : a->values)
      info->merges.push_back(*v.toString());
  }
  auto id = [&](const char *key, int64_t &out) -> Status {
    const GgufValue *v = ckpt.metadata(key);
    if (!v)
      return Status();
    std::optional<int64_t> i = v->toInt();
    if (!i)
      return m.error(key, std::string("expected an integer token id, got ") +
                              ggufTypeName(v->type()));
    if (*i == 0xFFFFFFFFll || *i == -1) {
      out = -1;
      return Status();
    }
    if (*i < 0 || (n > 0 && static_cast<uint64_t>(*i) >= n))
      return m.error(key, "token id " + std::to_string(*i) +
                              " is outside the vocabulary of " +
                              std::to_string(n) + " tokens");
    out = *i;
    return Status();
  };
  ETLLM_RETURN_IF_ERROR(id("tokenizer.ggml.bos_token_id", info->bosTokenId));
  ETLLM_RETURN_IF_ERROR(id("tokenizer.ggml.eos_token_id", info->eosTokenId));
  ETLLM_RETURN_IF_ERROR(
      id("tokenizer.ggml.unknown_token_id", info->unknownTokenId));
  ETLLM_RETURN_IF_ERROR(
      id("tokenizer.ggml.padding_token_id", info->paddingTokenId));
  ETLLM_RETURN_IF_ERROR(
      id("tokenizer.ggml.seperator_token_id", info->separatorTokenId));
  ETLLM_RETURN_IF_ERROR(id("tokenizer.ggml.eot_token_id", info->eotTokenId));
  auto flag = [&](const char *key, std::optional<bool> &out) -> Status {
    const GgufValue *v = ckpt.metadata(key);
    if (!v)
      return Status();
    if (!v->toBool())
      return m.error(key, std::string("expected a bool, got ") +
                              ggufTypeName(v->type()));
    out = *v->toBool();
    return Status();
  };
  ETLLM_RETURN_IF_ERROR(
      flag("tokenizer.ggml.add_bos_token", info->addBosToken));
  ETLLM_RETURN_IF_ERROR(
      flag("tokenizer.ggml.add_eos_token", info->addEosToken));
  ETLLM_RETURN_IF_ERROR(
      flag("tokenizer.ggml.add_space_prefix", info->addSpacePrefix));
  return info;
}

} // namespace

Result<ModelConfig> configFromGguf(const Checkpoint &ckpt) {
  MetaReader m(ckpt);
  std::optional<std::string> archOpt;
  ETLLM_ASSIGN_OR_RETURN(archOpt, m.optString("general.architecture"));
  if (!archOpt)
    return m.error("general.architecture", "required key is missing");
  const std::string arch = *archOpt;
  const FamilySpec *family = models::findByGgufArch(arch);
  if (!family)
    return m.error("general.architecture",
                   "unsupported architecture '" + arch +
                       "' (supported: " + models::supportedGgufArchs() + ")");
  const FamilySpec &f = *family;
  ModelConfig c;
  c.architecture = f.hfArchitecture;
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(c));
  auto key = [&](models::GgufKey k) {
    return models::ggufKeyHasArchPrefix(k)
               ? arch + "." + models::ggufKeyName(k)
               : std::string(models::ggufKeyName(k));
  };
  using models::GgufKey;

  ETLLM_ASSIGN_OR_RETURN(c.hiddenSize,
                         m.dim(key(GgufKey::EmbeddingLength), std::nullopt));
  ETLLM_ASSIGN_OR_RETURN(c.intermediateSize,
                         m.dim(key(GgufKey::FeedForwardLength), std::nullopt));
  ETLLM_ASSIGN_OR_RETURN(c.numLayers,
                         m.dim(key(GgufKey::BlockCount), std::nullopt));
  ETLLM_ASSIGN_OR_RETURN(c.numHeads,
                         m.dim(key(GgufKey::HeadCount), std::nullopt));
  ETLLM_ASSIGN_OR_RETURN(c.numKvHeads,
                         m.dim(key(GgufKey::HeadCountKv), c.numHeads));
  if (c.numHeads % c.numKvHeads != 0)
    return m.error(key(GgufKey::HeadCountKv),
                   std::to_string(c.numKvHeads) +
                       " does not divide the head count " +
                       std::to_string(c.numHeads));
  std::optional<uint64_t> keyLength, valueLength;
  ETLLM_ASSIGN_OR_RETURN(keyLength, m.optUInt(key(GgufKey::KeyLength)));
  ETLLM_ASSIGN_OR_RETURN(valueLength, m.optUInt(key(GgufKey::ValueLength)));
  if (keyLength) {
    ETLLM_ASSIGN_OR_RETURN(c.headDim,
                           m.dim(key(GgufKey::KeyLength), std::nullopt));
  } else {
    if (c.hiddenSize % c.numHeads != 0)
      return m.error(key(GgufKey::HeadCount),
                     std::to_string(c.numHeads) +
                         " does not divide the embedding length " +
                         std::to_string(c.hiddenSize));
    c.headDim = c.hiddenSize / c.numHeads;
  }
  if (valueLength && static_cast<int64_t>(*valueLength) != c.headDim)
    return m.error(key(GgufKey::ValueLength),
                   "value head size " + std::to_string(*valueLength) +
                       " differs from the key head size " +
                       std::to_string(c.headDim) + " (unsupported)");

  std::string embedName =
      models::hfPath(f, models::HfModule::Embed) + ".weight";
  const TensorRef *embed = ckpt.find(embedName);
  std::optional<uint64_t> vocabKey;
  ETLLM_ASSIGN_OR_RETURN(vocabKey, m.optUInt(key(GgufKey::VocabSize)));
  if (vocabKey) {
    ETLLM_ASSIGN_OR_RETURN(c.vocabSize,
                           m.dim(key(GgufKey::VocabSize), std::nullopt));
  } else if (embed && embed->shape.size() == 2) {
    c.vocabSize = embed->shape[0];
  } else if (ckpt.ggufTokenizer() && !ckpt.ggufTokenizer()->tokens.empty()) {
    c.vocabSize = static_cast<int64_t>(ckpt.ggufTokenizer()->tokens.size());
  } else {
    return Error(ckpt.path() + ": cannot determine the vocabulary size (no " +
                 key(GgufKey::VocabSize) + ", " +
                 models::ggufTensorName(models::GgufTensor::TokenEmbd) +
                 ".weight or tokenizer tokens)");
  }
  ETLLM_ASSIGN_OR_RETURN(c.maxPositionEmbeddings,
                         m.dim(key(GgufKey::ContextLength), std::nullopt));
  std::optional<double> fv;
  ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RmsEpsilon)));
  if (!fv)
    return m.error(key(GgufKey::RmsEpsilon), "required key is missing");
  if (!(*fv > 0 && *fv < 1))
    return m.error(key(GgufKey::RmsEpsilon), "must be in (0, 1)");
  c.rmsNormEps = *fv;
  ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RopeFreqBase)));
  c.ropeTheta = fv.value_or(10000.0);
  if (!(c.ropeTheta > 0))
    return m.error(key(GgufKey::RopeFreqBase), "must be positive");
  std::optional<uint64_t> ropeDims;
  ETLLM_ASSIGN_OR_RETURN(ropeDims, m.optUInt(key(GgufKey::RopeDimensionCount)));
  if (ropeDims) {
    if (*ropeDims < 2 || static_cast<int64_t>(*ropeDims) > c.headDim ||
        *ropeDims % 2 != 0)
      return m.error(key(GgufKey::RopeDimensionCount),
                     std::to_string(*ropeDims) +
                         " must be even and within the head size " +
                         std::to_string(c.headDim));
    c.partialRotaryFactor =
        static_cast<double>(*ropeDims) / static_cast<double>(c.headDim);
  }
  std::optional<std::string> scalingType;
  ETLLM_ASSIGN_OR_RETURN(scalingType,
                         m.optString(key(GgufKey::RopeScalingLinear)));
  if (scalingType && *scalingType != "none") {
    if (*scalingType != "linear")
      return m.error(key(GgufKey::RopeScalingLinear),
                     "unsupported rope scaling '" + *scalingType +
                         "' (supported: none, linear)");
    ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RopeScalingFactor)));
    if (!fv || !(*fv > 0))
      return m.error(key(GgufKey::RopeScalingFactor),
                     "missing or not positive for linear scaling");
    c.ropeScaling.type = "linear";
    c.ropeScaling.factor = *fv;
  } else if (!scalingType) {
    ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RopeScaleLinear)));
    if (fv && *fv != 1.0) {
      if (!(*fv > 0))
        return m.error(key(GgufKey::RopeScaleLinear), "must be positive");
      c.ropeScaling.type = "linear";
      c.ropeScaling.factor = *fv;
    }
  }
  std::string ropeFreqsName =
      std::string(models::ggufTensorName(models::GgufTensor::RopeFreqs)) +
      ".weight";
  if (const TensorRef *rf = ckpt.find(ropeFreqsName)) {
    if (rf->dtype != DType::F32 || rf->shape.size() != 1 ||
        rf->shape[0] != c.rotaryDim() / 2)
      return Error(rf->file + ": tensor '" + ropeFreqsName + "' must be F32 [" +
                   std::to_string(c.rotaryDim() / 2) + "], got " +
                   dtypeName(rf->dtype) + " " + shapeToString(rf->shape));
    std::vector<float> ff(static_cast<size_t>(rf->shape[0]));
    std::memcpy(ff.data(), rf->data, ff.size() * 4);
    for (float v : ff)
      if (!(v > 0) || !std::isfinite(v))
        return Error(rf->file + ": tensor '" + ropeFreqsName +
                     "' has a non-positive factor");
    if (!c.ropeScaling.type.empty())
      return Error(ckpt.path() + ": both " + ropeFreqsName + " and " +
                   key(GgufKey::RopeScalingLinear) + " are present");
    fitLlama3(c, ff);
    c.ropeScaling.freqFactors = std::move(ff);
  }

  c.layerUsesSlidingWindow.assign(static_cast<size_t>(c.numLayers), false);
  std::optional<uint64_t> window;
  ETLLM_ASSIGN_OR_RETURN(window, m.optUInt(key(GgufKey::SlidingWindow)));
  if (window && *window > static_cast<uint64_t>(detail::kMaxConfigDim))
    return m.error(key(GgufKey::SlidingWindow), "absurdly large");
  auto declares = [&](GgufKey k) {
    for (GgufKey d : f.gguf.metadata)
      if (d == k)
        return true;
    return false;
  };
  if (window && *window > 0 && declares(GgufKey::SlidingWindow)) {
    c.slidingWindow = static_cast<int64_t>(*window);
    detail::applySlidingPattern(c, f.hf.slidingWindow ==
                                           models::SlidingWindowRule::EvenLayers
                                       ? models::SlidingWindowRule::EvenLayers
                                       : models::SlidingWindowRule::AllLayers);
  }
  // The family's own keys: from their GGUF key, else what GGUF implies.
  for (const models::ConfigKey &k : f.hf.keys) {
    double v = 0;
    if (k.gguf != GgufKey::None) {
      std::string name = key(k.gguf);
      std::optional<double> got;
      if (k.range == models::KeyRange::Dim) {
        std::optional<uint64_t> u;
        ETLLM_ASSIGN_OR_RETURN(u, m.optUInt(name));
        if (u)
          got = static_cast<double>(*u);
      } else {
        ETLLM_ASSIGN_OR_RETURN(got, m.optFloat(name));
      }
      v = got.value_or(k.ggufDefault);
      if (!got && v == 0)
        v = detail::fallbackValue(c, k.fallback);
      ETLLM_RETURN_IF_ERROR(detail::checkKeyRange(
          k, v, [&](const std::string &what) { return m.error(name, what); }));
    } else {
      v = detail::fallbackValue(c, k.fallback);
    }
    detail::setField(c, k.field, v);
  }
  c.hiddenAct = f.hf.hiddenAct;
  c.tieWordEmbeddings = ckpt.find(models::hfPath(f, models::HfModule::LmHead) +
                                  ".weight") == nullptr;
  auto has = [&](models::HfModule module, const char *kind) {
    return ckpt.find(models::hfPath(f, module, 0) + kind) != nullptr;
  };
  if (f.hf.bias == models::BiasRule::QkvOnly) {
    c.attentionBias = true;
  } else {
    c.attentionBias =
        has(c.fusedQkv ? models::HfModule::QkvProj : models::HfModule::QProj,
            ".bias");
    c.oProjBias = has(models::HfModule::OProj, ".bias");
  }
  c.mlpBias = has(models::HfModule::UpProj, ".bias");

  if (const GgufTokenizerInfo *t = ckpt.ggufTokenizer()) {
    c.bosTokenId = t->bosTokenId < c.vocabSize ? t->bosTokenId : -1;
    if (t->eosTokenId >= 0 && t->eosTokenId < c.vocabSize)
      c.eosTokenIds.push_back(t->eosTokenId);
    c.padTokenId = t->paddingTokenId < c.vocabSize ? t->paddingTokenId : -1;
  }
  std::optional<uint64_t> fileType;
  ETLLM_ASSIGN_OR_RETURN(fileType, m.optUInt(key(GgufKey::FileType)));
  if (fileType)
    c.torchDtype = *fileType == 0    ? "float32"
                   : *fileType == 1  ? "float16"
                   : *fileType == 32 ? "bfloat16"
                                     : "";
  Status s = validate(c);
  if (!s.ok())
    return Error(ckpt.path() + ": " + s.message());
  return c;
}

Result<std::unique_ptr<Checkpoint>> openGguf(const std::string &path) {
  Result<std::shared_ptr<rt::MappedFile>> mapped = rt::MappedFile::open(path);
  if (!mapped)
    return mapped.error();
  std::shared_ptr<rt::MappedFile> file = *mapped;
  GgufParser parser(path, file->data(), file->size());
  detail::Cursor &c = parser.cursor();

  const uint8_t *magic;
  if (!c.readBytes(4, magic) || std::memcmp(magic, "GGUF", 4) != 0)
    return Error(path + ": not a GGUF file (missing \"GGUF\" magic)");
  uint32_t version;
  uint64_t tensorCount, kvCount;
  if (!c.read(version))
    return parser.fail("truncated GGUF header (version)");
  if (version == 1)
    return parser.fail("GGUF version 1 is not supported (only 2 and 3)");
  if (version != 2 && version != 3) {
    if (version != 0 && (version & 0xFFFF) == 0)
      return parser.fail("GGUF version " + std::to_string(version) +
                         " looks byte-swapped: big-endian GGUF files are "
                         "not supported");
    return parser.fail("unsupported GGUF version " + std::to_string(version) +
                       " (only 2 and 3)");
  }
  if (!c.read(tensorCount) || !c.read(kvCount))
    return parser.fail("truncated GGUF header (tensor/metadata counts)");
  if (kvCount > c.remaining() / 13)
    return parser.fail("metadata count " + std::to_string(kvCount) +
                       " cannot fit in the file");
  if (tensorCount > c.remaining() / 32)
    return parser.fail("tensor count " + std::to_string(tensorCount) +
                       " cannot fit in the file");

  detail::CheckpointBuilder b("gguf", path);
  b.addFile(file);
  for (uint64_t i = 0; i < kvCount; ++i) {
    Result<std::string> key =
        parser.readString("metadata key #" + std::to_string(i));
    if (!key)
      return key.error();
    uint32_t type;
    if (!c.read(type))
      return parser.fail("truncated file reading the type of metadata key '" +
                         *key + "'");
    Result<GgufValue> value =
        parser.readValue(type, "metadata key '" + *key + "'", 0);
    if (!value)
      return value.error();
    if (!b.addMetadata(*key, std::move(*value)))
      return parser.fail("duplicate metadata key '" + *key + "'");
  }

  uint64_t alignment = 32;
  if (const GgufValue *a = b.get().metadata("general.alignment")) {
    std::optional<uint64_t> v = a->toUInt();
    if (!v)
      return Error(path +
                   ": metadata key 'general.alignment': expected an "
                   "unsigned integer, got " +
                   ggufTypeName(a->type()));
    if (*v == 0 || (*v & (*v - 1)) != 0 || *v > (1u << 30))
      return Error(path + ": metadata key 'general.alignment': " +
                   std::to_string(*v) + " is not a power of two (up to 2^30)");
    alignment = *v;
  }
  b.setGgufInfo(version, alignment);

  std::optional<std::string> arch;
  if (const GgufValue *a = b.get().metadata("general.architecture")) {
    if (!a->toString())
      return Error(path +
                   ": metadata key 'general.architecture': expected a "
                   "string, got " +
                   std::string(ggufTypeName(a->type())));
    arch = *a->toString();
  } else {
    return Error(path + ": metadata key 'general.architecture': required key "
                        "is missing");
  }
  const FamilySpec *family = models::findByGgufArch(*arch);
  if (!family)
    return Error(path +
                 ": metadata key 'general.architecture': unsupported "
                 "architecture '" +
                 *arch + "' (supported: " + models::supportedGgufArchs() + ")");

  struct Info {
    std::string name;
    std::vector<int64_t> shape;
    DType dtype;
    uint64_t offset, nbytes;
  };
  std::vector<Info> infos;
  infos.reserve(static_cast<size_t>(tensorCount));
  for (uint64_t i = 0; i < tensorCount; ++i) {
    Result<std::string> name =
        parser.readString("tensor info #" + std::to_string(i) + " name");
    if (!name)
      return name.error();
    std::string where = "tensor '" + *name + "'";
    if (name->empty())
      return parser.fail("tensor info #" + std::to_string(i) +
                         " has an empty name");
    uint32_t nDims;
    if (!c.read(nDims))
      return parser.fail("truncated file reading " + where);
    if (nDims < 1 || nDims > 4)
      return parser.fail(where + ": n_dims " + std::to_string(nDims) +
                         " is outside [1, 4]");
    std::vector<int64_t> shape(nDims);
    for (uint32_t d = 0; d < nDims; ++d) {
      uint64_t ne;
      if (!c.read(ne))
        return parser.fail("truncated file reading " + where);
      if (ne == 0 ||
          ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return parser.fail(where + ": dimension ne[" + std::to_string(d) +
                           "] = " + std::to_string(ne) +
                           " must be in [1, 2^63)");
      shape[nDims - 1 - d] = static_cast<int64_t>(ne); // ggml ne -> PyTorch.
    }
    uint32_t type;
    uint64_t offset;
    if (!c.read(type) || !c.read(offset))
      return parser.fail("truncated file reading " + where);
    Result<DType> dtype = dtypeFromGgmlType(type);
    if (!dtype)
      return parser.fail(where + ": " + dtype.message());
    Result<uint64_t> nbytes = byteSize(*dtype, shape);
    if (!nbytes)
      return parser.fail(where + ": " + nbytes.message());
    if (offset % alignment != 0)
      return parser.fail(where + ": data offset " + std::to_string(offset) +
                         " is not a multiple of the alignment " +
                         std::to_string(alignment));
    infos.push_back(
        {std::move(*name), std::move(shape), *dtype, offset, *nbytes});
  }
  uint64_t dataStart = c.offset();
  if (dataStart % alignment != 0)
    dataStart += alignment - dataStart % alignment;
  if (dataStart > file->size()) {
    if (!infos.empty())
      return Error(path + ": data section would start at byte " +
                   std::to_string(dataStart) + ", past the end of the " +
                   std::to_string(file->size()) + "-byte file");
    dataStart = file->size();
  }
  uint64_t dataSize = file->size() - dataStart;

  // Head counts for the q/k permutation of families whose converter
  // permutes (LlamaModel.permute).
  const std::string headCountKey =
      *arch + "." + models::ggufKeyName(models::GgufKey::HeadCount);
  int64_t numHeads = 0, numKvHeads = 0;
  if (const GgufValue *v = b.get().metadata(headCountKey))
    numHeads = v->toInt().value_or(0);
  numKvHeads = numHeads;
  if (const GgufValue *v = b.get().metadata(
          *arch + "." + models::ggufKeyName(models::GgufKey::HeadCountKv)))
    numKvHeads = v->toInt().value_or(0);
  const std::string qName =
      family->hfNames[static_cast<size_t>(models::HfModule::QProj)];
  const std::string kName =
      family->hfNames[static_cast<size_t>(models::HfModule::KProj)];

  for (Info &info : infos) {
    std::string where = path + ": tensor '" + info.name + "'";
    if (info.offset > dataSize || info.nbytes > dataSize - info.offset)
      return Error(where + ": data [" + std::to_string(info.offset) + ", +" +
                   std::to_string(info.nbytes) + ") runs past the end of the " +
                   std::to_string(dataSize) + "-byte data section");
    TensorRef t;
    t.sourceName = info.name;
    t.name = detail::ggufNameToHf(*family, info.name);
    if (t.name.empty())
      t.name = info.name;
    t.file = path;
    t.dtype = info.dtype;
    t.shape = std::move(info.shape);
    t.fileOffset = dataStart + info.offset;
    t.data = file->data() + t.fileOffset;
    t.nbytes = info.nbytes;
    if (family->gguf.permutesQk) {
      auto endsWith = [&](const std::string &s) {
        return t.name.size() >= s.size() &&
               t.name.compare(t.name.size() - s.size(), s.size(), s) == 0;
      };
      if (endsWith(qName + ".weight") || endsWith(qName + ".bias"))
        t.qkPermuteHeads = numHeads;
      else if (endsWith(kName + ".weight") || endsWith(kName + ".bias"))
        t.qkPermuteHeads = numKvHeads;
      if (t.qkPermuteHeads > 0) {
        if (t.shape[0] % t.qkPermuteHeads != 0 ||
            (t.shape[0] / t.qkPermuteHeads) % 2 != 0)
          return Error(where + ": " + std::to_string(t.shape[0]) +
                       " rows cannot be split into " +
                       std::to_string(t.qkPermuteHeads) +
                       " heads of even size");
      } else if (endsWith(qName + ".weight") || endsWith(kName + ".weight")) {
        return Error(path + ": metadata key '" + headCountKey +
                     "': missing or invalid (needed for the q/k row order)");
      }
    }
    ETLLM_RETURN_IF_ERROR(b.addTensor(std::move(t)));
  }
  b.sortTensors([](const TensorRef &x, const TensorRef &y) {
    return x.fileOffset < y.fileOffset;
  });

  Result<std::unique_ptr<GgufTokenizerInfo>> tok = readTokenizer(b.get());
  if (!tok)
    return tok.error();
  b.setTokenizer(std::move(*tok));
  b.setNormWeightsIncludeOne(family->gguf.normWeightsIncludeOne);
  Result<ModelConfig> config = configFromGguf(b.get());
  if (!config)
    return config.error();
  b.setConfig(std::move(*config));
  return b.finish();
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

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
