//===- GgufReader.cpp - The GGUF container --------------------------------===//
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
// Every count, string length, array size, dimension, type, offset and
// alignment is checked against the file; tensors get their Hugging Face
// names (GgufNames.cpp), the vocabulary and the config are read
// (GgufVocab.cpp, GgufConfig.cpp).
//
//===----------------------------------------------------------------------===//

#include "GgufInternal.h"
#include "etllm/Models/Registry.h"

#include <cstring>

namespace etllm::formats {

using models::FamilySpec;

namespace {

constexpr int kMaxArrayDepth = 8;
/// Metadata arrays are decoded into GgufValues (~40 bytes per element), so
/// the total element count is capped to bound memory on hostile files: 2^22
/// elements are at most ~170 MiB. Real vocabularies (tokens, scores, types
/// and merges of a 262,144-token vocabulary) hold about a million. (2^25
/// let a 35 MB file take 1.4 GiB and 6 s to import.)
constexpr uint64_t kMaxMetadataElements = 1ull << 22;

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

/// The split MLA form (DeepseekV2Model's attn_k_b / attn_v_b): each layer's
/// kv_b_proj becomes a tensor assembled from the two (TensorRef::parts),
/// read only when a consumer asks for its values.
Status assembleSplitKvB(detail::CheckpointBuilder &b, const FamilySpec &f,
                        const ModelConfig &c, const std::string &path) {
  const std::string kb = models::ggufTensorName(models::GgufTensor::AttnKB);
  const std::string vb = models::ggufTensorName(models::GgufTensor::AttnVB);
  const int64_t heads = c.numHeads, kvl = c.kvLoraRank, nope = c.qkNopeHeadDim,
                v = c.vHeadDim;
  std::vector<TensorRef> assembled;
  for (int64_t i = 0; i < c.numLayers; ++i) {
    std::string blk = "blk." + std::to_string(i) + ".";
    const TensorRef *k = b.get().find(blk + kb + ".weight");
    const TensorRef *val = b.get().find(blk + vb + ".weight");
    if (!k && !val)
      continue; // the joint form (attn_kv_b), or a missing tensor
    if (!k || !val)
      return Error(path + ": tensor '" + blk + (k ? vb : kb) +
                   ".weight' is missing (the split MLA form needs both " + kb +
                   " and " + vb + ")");
    const std::vector<int64_t> kWant = {heads, kvl, nope},
                               vWant = {heads, v, kvl};
    if (k->shape != kWant)
      return Error(path + ": tensor '" + k->sourceName + "' has shape " +
                   shapeToString(k->shape) + ", expected " +
                   shapeToString(kWant) + " from the metadata");
    if (val->shape != vWant)
      return Error(path + ": tensor '" + val->sourceName + "' has shape " +
                   shapeToString(val->shape) + ", expected " +
                   shapeToString(vWant) + " from the metadata");
    TensorRef t;
    t.name = models::hfPath(f, models::HfModule::KvBProj, i) + ".weight";
    t.sourceName = k->sourceName + "+" + val->sourceName;
    t.file = path;
    t.dtype = DType::F32;
    t.shape = {heads * (nope + v), kvl};
    t.fileOffset = k->fileOffset;
    t.parts = {*k, *val};
    assembled.push_back(std::move(t));
  }
  for (TensorRef &t : assembled)
    ETLLM_RETURN_IF_ERROR(b.addTensor(std::move(t)));
  b.sortTensors([](const TensorRef &x, const TensorRef &y) {
    return x.fileOffset < y.fileOffset;
  });
  return Status();
}

} // namespace

namespace {

/// The tensors of a llama.cpp LoRA adapter (general.type = adapter):
/// `<gguf weight name>.lora_a` / `.lora_b` become
/// `<HF weight name>.lora_a` / `.lora_b`, in the file's row order.
Status addAdapterTensor(detail::CheckpointBuilder &b, const FamilySpec &family,
                        const std::string &path, const std::string &name,
                        std::vector<int64_t> shape, DType dtype,
                        uint64_t fileOffset, const uint8_t *data,
                        uint64_t nbytes) {
  std::string where = path + ": tensor '" + name + "'";
  auto endsWith = [&](std::string_view s) {
    return name.size() > s.size() &&
           name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  std::string suffix = endsWith(".lora_a")   ? ".lora_a"
                       : endsWith(".lora_b") ? ".lora_b"
                                             : "";
  if (suffix.empty())
    return Error(where + ": not a LoRA tensor (expected '<weight>.lora_a' or "
                         "'<weight>.lora_b'; norm and other full tensors in "
                         "adapters are not supported)");
  std::string weight = name.substr(0, name.size() - suffix.size());
  if (!detail::ggufNameToHf(family, weight, 0).empty())
    return Error(where + ": LoRA on stacked expert tensors is not supported");
  std::string hf = detail::ggufNameToHf(family, weight);
  if (hf.empty())
    return Error(where + ": '" + weight + "' is not a weight of a '" +
                 family.id + "' model");
  TensorRef t;
  t.sourceName = name;
  t.name = hf + suffix;
  t.file = path;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.fileOffset = fileOffset;
  t.data = data;
  t.nbytes = nbytes;
  return b.addTensor(std::move(t));
}

enum class GgufRole { Model, Adapter, Mmproj };

Result<std::unique_ptr<Checkpoint>> openGgufFile(const std::string &path,
                                                 GgufRole role) {
  const bool adapter = role == GgufRole::Adapter;
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
  if (role == GgufRole::Mmproj && *arch != "clip")
    return Error(path + ": metadata key 'general.architecture': '" + *arch +
                 "': not a llama.cpp mmproj file (expected 'clip')");
  const FamilySpec *family = role == GgufRole::Mmproj
                                 ? &models::llama2cFamily()
                                 : detail::ggufFamily(b.get(), *arch);
  if (!family)
    return Error(path +
                 ": metadata key 'general.architecture': unsupported "
                 "architecture '" +
                 *arch + "' (supported: " + models::supportedGgufArchs() + ")");
  // A model or a LoRA adapter (llama.cpp's convert_lora_to_gguf.py writes
  // general.type = adapter, adapter.type = lora).
  std::string type = "model";
  if (const GgufValue *t = b.get().metadata("general.type")) {
    if (!t->toString())
      return Error(path +
                   ": metadata key 'general.type': expected a string, "
                   "got " +
                   std::string(ggufTypeName(t->type())));
    type = *t->toString();
  }
  if (!adapter && type == "adapter")
    return Error(path + ": a LoRA adapter (general.type = adapter), not a "
                        "model: pass it with --lora");
  if (adapter) {
    if (type != "adapter")
      return Error(path + ": metadata key 'general.type': '" + type +
                   "': not a LoRA adapter (expected 'adapter')");
    const GgufValue *at = b.get().metadata("adapter.type");
    if (!at || !at->toString() || *at->toString() != "lora")
      return Error(
          path + ": metadata key 'adapter.type': " +
          std::string(at && at->toString()
                          ? "'" + *at->toString() + "'"
                          : std::string(at ? "not a string" : "missing")) +
          " (only 'lora' adapters are supported)");
  }

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
  // Each count remembers the key it came from, for the errors below (the
  // KV heads default to the heads when their key is absent).
  const std::string headCountKey =
      *arch + "." + models::ggufKeyName(models::GgufKey::HeadCount);
  const std::string kvHeadCountKey =
      *arch + "." + models::ggufKeyName(models::GgufKey::HeadCountKv);
  int64_t numHeads = 0, numKvHeads = 0;
  if (const GgufValue *v = b.get().metadata(headCountKey))
    numHeads = v->toInt().value_or(0);
  numKvHeads = numHeads;
  std::string kvHeadsFrom = headCountKey;
  if (const GgufValue *v = b.get().metadata(kvHeadCountKey)) {
    numKvHeads = v->toInt().value_or(0);
    kvHeadsFrom = kvHeadCountKey;
  }
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
    if (adapter) {
      uint64_t at = dataStart + info.offset;
      ETLLM_RETURN_IF_ERROR(
          addAdapterTensor(b, *family, path, info.name, std::move(info.shape),
                           info.dtype, at, file->data() + at, info.nbytes));
      continue;
    }
    if (role == GgufRole::Model &&
        !detail::ggufNameToHf(*family, info.name, 0).empty()) {
      // A stacked expert tensor [E, rows, cols]: one HF tensor per expert,
      // each a slice of the bytes (whole rows, so any ggml type).
      if (info.shape.size() != 3)
        return Error(where +
                     ": a stacked expert tensor must have 3 "
                     "dimensions, got " +
                     shapeToString(info.shape));
      const int64_t experts = info.shape[0];
      // Every expert becomes a tensor of its own: bound the count (a
      // zero-sized slice would otherwise let a tiny file ask for billions).
      constexpr int64_t kMaxExperts = 1 << 16;
      if (experts < 1 || experts > kMaxExperts)
        return Error(where + ": " + std::to_string(experts) +
                     " experts is outside [1, " + std::to_string(kMaxExperts) +
                     "]");
      std::vector<int64_t> slice(info.shape.begin() + 1, info.shape.end());
      Result<uint64_t> sliceBytes = byteSize(info.dtype, slice);
      if (!sliceBytes)
        return Error(where + ": " + sliceBytes.message());
      for (int64_t j = 0; j < experts; ++j) {
        TensorRef t;
        t.sourceName = info.name + "[" + std::to_string(j) + "]";
        t.name = detail::ggufNameToHf(*family, info.name, j);
        t.file = path;
        t.dtype = info.dtype;
        t.shape = slice;
        t.fileOffset = dataStart + info.offset + uint64_t(j) * *sliceBytes;
        t.data = file->data() + t.fileOffset;
        t.nbytes = *sliceBytes;
        ETLLM_RETURN_IF_ERROR(b.addTensor(std::move(t)));
      }
      continue;
    }
    // (An mmproj's tensors keep their GGUF names: GgufMmproj.cpp maps them.)
    TensorRef t;
    t.sourceName = info.name;
    if (role == GgufRole::Model)
      t.name = detail::ggufNameToHf(*family, info.name);
    if (t.name.empty())
      t.name = info.name;
    t.file = path;
    t.dtype = info.dtype;
    t.shape = std::move(info.shape);
    t.fileOffset = dataStart + info.offset;
    t.data = file->data() + t.fileOffset;
    t.nbytes = info.nbytes;
    if (role == GgufRole::Model && family->gguf.permutesQk) {
      auto endsWith = [&](const std::string &s) {
        return t.name.size() >= s.size() &&
               t.name.compare(t.name.size() - s.size(), s.size(), s) == 0;
      };
      const bool isQ = endsWith(qName + ".weight") || endsWith(qName + ".bias");
      const bool isK = endsWith(kName + ".weight") || endsWith(kName + ".bias");
      const std::string &countKey = isK ? kvHeadsFrom : headCountKey;
      if (isQ)
        t.qkPermuteHeads = numHeads;
      else if (isK)
        t.qkPermuteHeads = numKvHeads;
      if (t.qkPermuteHeads > 0) {
        if (t.shape[0] % t.qkPermuteHeads != 0 ||
            (t.shape[0] / t.qkPermuteHeads) % 2 != 0)
          return Error(where + ": " + std::to_string(t.shape[0]) +
                       " rows cannot be split into " +
                       std::to_string(t.qkPermuteHeads) +
                       " heads of even size (metadata key '" + countKey +
                       "')");
      } else if (isQ || isK) {
        return Error(path + ": metadata key '" + countKey +
                     "': missing or invalid (needed for the q/k row order)");
      }
    }
    ETLLM_RETURN_IF_ERROR(b.addTensor(std::move(t)));
  }
  b.sortTensors([](const TensorRef &x, const TensorRef &y) {
    return x.fileOffset < y.fileOffset;
  });
  if (role != GgufRole::Model)
    return b.finish();

  Result<std::unique_ptr<GgufTokenizerInfo>> tok =
      detail::readTokenizer(b.get());
  if (!tok)
    return tok.error();
  b.setTokenizer(std::move(*tok));
  b.setNormWeightsIncludeOne(family->gguf.normWeightsIncludeOne);
  Result<ModelConfig> config = configFromGguf(b.get());
  if (!config)
    return config.error();
  if (family->gguf.splitsKvB && config->isMla())
    ETLLM_RETURN_IF_ERROR(assembleSplitKvB(b, *family, *config, path));
  b.setConfig(std::move(*config));
  return b.finish();
}

} // namespace

Result<std::unique_ptr<Checkpoint>> openGguf(const std::string &path) {
  return openGgufFile(path, GgufRole::Model);
}

Result<std::unique_ptr<Checkpoint>>
openGgufLoraAdapter(const std::string &path) {
  return openGgufFile(path, GgufRole::Adapter);
}

Result<std::unique_ptr<Checkpoint>> openGgufMmproj(const std::string &path) {
  return openGgufFile(path, GgufRole::Mmproj);
}

} // namespace etllm::formats
