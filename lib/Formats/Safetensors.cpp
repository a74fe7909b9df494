//===- Safetensors.cpp - safetensors reader/writer, HF directories --------===//

#include "etllm/Formats/Safetensors.h"
#include "Internal.h"
#include "etllm/Models/Multimodal.h"
#include "etllm/runtime/image/preprocess.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <set>

namespace etllm::formats {

using json = nlohmann::json;

namespace {

/// The safetensors spec's dtype names we accept.
struct StDType {
  const char *name;
  DType dtype;
};
constexpr StDType kStDTypes[] = {
    {"F32", DType::F32},   {"F16", DType::F16}, {"BF16", DType::BF16},
    {"F64", DType::F64},   {"I8", DType::I8},   {"I16", DType::I16},
    {"I32", DType::I32},   {"I64", DType::I64}, {"U8", DType::U8},
    {"BOOL", DType::BOOL},
};

/// A short description of a JSON value for messages; never recurses into
/// (possibly hostile, deeply nested) containers.
std::string describe(const json &j) {
  if (j.is_primitive()) {
    std::string s = j.dump();
    return s.size() > 64 ? s.substr(0, 64) + "..." : s;
  }
  return std::string("a JSON ") + j.type_name();
}

/// Largest header we parse (the reference implementation's limit is 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct ParsedFile {
  std::shared_ptr<rt::MappedFile> file;
  std::vector<TensorRef> tensors;
};

/// Parses and validates one safetensors file; tensors point into its mapping.
Result<ParsedFile> parseSafetensorsFile(const std::string &path) {
  Result<std::shared_ptr<rt::MappedFile>> mapped = rt::MappedFile::open(path);
  if (!mapped)
    return mapped.error();
  ParsedFile out;
  out.file = *mapped;
  const uint8_t *base = out.file->data();
  uint64_t size = out.file->size();
  if (size < 8)
    return Error(path + ": truncated safetensors header: file has " +
                 std::to_string(size) +
                 " bytes, fewer than the 8-byte header length");
  uint64_t headerLen = detail::loadLE<uint64_t>(base);
  if (headerLen > size - 8)
    return Error(path + ": safetensors header length " +
                 std::to_string(headerLen) + " runs past the end of the " +
                 std::to_string(size) + "-byte file");
  if (headerLen > kMaxHeaderBytes)
    return Error(path + ": safetensors header length " +
                 std::to_string(headerLen) + " exceeds the limit of " +
                 std::to_string(kMaxHeaderBytes) + " bytes");
  if (headerLen < 2 || base[8] != '{')
    return Error(path + ": safetensors header does not start with '{'");
  json header;
  try {
    header = json::parse(base + 8, base + 8 + headerLen);
  } catch (const json::exception &e) {
    return Error(path + ": invalid safetensors JSON header: " + e.what());
  }
  if (!header.is_object())
    return Error(path + ": safetensors header is not a JSON object");
  uint64_t dataStart = 8 + headerLen;
  uint64_t dataSize = size - dataStart;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const json &entry = it.value();
    std::string where = path + ": tensor '" + name + "'";
    if (name == "__metadata__") {
      if (!entry.is_object())
        return Error(path + ": __metadata__ is not a JSON object");
      for (auto m = entry.begin(); m != entry.end(); ++m)
        if (!m.value().is_string())
          return Error(path + ": __metadata__ value '" + m.key() +
                       "' is not a string");
      continue;
    }
    if (name.empty())
      return Error(path + ": tensor with an empty name");
    if (!entry.is_object())
      return Error(where + ": entry is not a JSON object");
    auto dt = entry.find("dtype");
    if (dt == entry.end() || !dt->is_string())
      return Error(where + ": field 'dtype' is missing or not a string");
    std::string dtypeName = dt->get<std::string>();
    const StDType *st = nullptr;
    for (const StDType &d : kStDTypes)
      if (dtypeName == d.name)
        st = &d;
    if (!st)
      return Error(where + ": field 'dtype': unsupported dtype '" + dtypeName +
                   "' (supported: F32, F16, BF16, F64, I8, I16, I32, I64, U8, "
                   "BOOL)");
    auto sh = entry.find("shape");
    if (sh == entry.end() || !sh->is_array())
      return Error(where + ": field 'shape' is missing or not an array");
    if (sh->size() > 8)
      return Error(where + ": field 'shape' has " + std::to_string(sh->size()) +
                   " dimensions (limit 8)");
    std::vector<int64_t> shape;
    for (const json &d : *sh) {
      if (!d.is_number_integer())
        return Error(where + ": field 'shape' has a non-integer dimension " +
                     describe(d));
      if (d.is_number_unsigned()
              ? d.get<uint64_t>() >
                    uint64_t(std::numeric_limits<int64_t>::max())
              : d.get<int64_t>() < 0)
        return Error(where + ": field 'shape' has an invalid dimension " +
                     describe(d) + " (negative or too large)");
      shape.push_back(d.get<int64_t>());
    }
    Result<uint64_t> nbytes = byteSize(st->dtype, shape);
    if (!nbytes)
      return Error(where + ": field 'shape': " + nbytes.message());
    auto off = entry.find("data_offsets");
    if (off == entry.end() || !off->is_array() || off->size() != 2 ||
        !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
      return Error(where + ": field 'data_offsets' must be two non-negative "
                           "integers");
    uint64_t begin = (*off)[0].get<uint64_t>();
    uint64_t end = (*off)[1].get<uint64_t>();
    if (begin > end)
      return Error(where + ": field 'data_offsets' [" + std::to_string(begin) +
                   ", " + std::to_string(end) + "] has begin > end");
    if (end > dataSize)
      return Error(where + ": field 'data_offsets' end " + std::to_string(end) +
                   " is past the end of the " + std::to_string(dataSize) +
                   "-byte data area");
    if (end - begin != *nbytes)
      return Error(where + ": field 'data_offsets' covers " +
                   std::to_string(end - begin) + " bytes but dtype " +
                   dtypeName + " with shape " + shapeToString(shape) +
                   " needs " + std::to_string(*nbytes));
    TensorRef t;
    t.name = name;
    t.sourceName = name;
    t.file = path;
    t.dtype = st->dtype;
    t.shape = std::move(shape);
    t.data = base + dataStart + begin;
    t.nbytes = *nbytes;
    t.fileOffset = dataStart + begin;
    out.tensors.push_back(std::move(t));
  }
  std::stable_sort(out.tensors.begin(), out.tensors.end(),
                   [](const TensorRef &a, const TensorRef &b) {
                     return a.fileOffset < b.fileOffset;
                   });
  // No two tensors share bytes (the safetensors library refuses it too):
  // in offset order, each begins at or after the end of the one before.
  for (size_t i = 1; i < out.tensors.size(); ++i) {
    const TensorRef &a = out.tensors[i - 1], &b = out.tensors[i];
    if (a.nbytes > 0 && b.nbytes > 0 && b.fileOffset < a.fileOffset + a.nbytes)
      return Error(path + ": tensors '" + a.name + "' and '" + b.name +
                   "' overlap (data_offsets [" +
                   std::to_string(a.fileOffset - dataStart) + ", " +
                   std::to_string(a.fileOffset - dataStart + a.nbytes) +
                   "] and [" + std::to_string(b.fileOffset - dataStart) + ", " +
                   std::to_string(b.fileOffset - dataStart + b.nbytes) + "])");
  }
  return out;
}

} // namespace

Result<std::unique_ptr<Checkpoint>> openSafetensors(const std::string &path) {
  Result<ParsedFile> parsed = parseSafetensorsFile(path);
  if (!parsed)
    return parsed.error();
  detail::CheckpointBuilder b("safetensors", path);
  b.addFile(parsed->file);
  for (TensorRef &t : parsed->tensors)
    ETLLM_RETURN_IF_ERROR(b.addTensor(std::move(t)));
  return b.finish();
}

Result<std::unique_ptr<Checkpoint>> openHfDirectory(const std::string &dir) {
  std::string configPath = detail::joinPath(dir, "config.json");
  Result<ModelConfig> config = parseHfConfig(configPath);
  if (!config)
    return config.error();
  // A composite model (LLaVA): its processor's configuration goes into the
  // program, and its tensors get the decoder family's names.
  const models::MultimodalSpec *multimodal = nullptr;
  if (config->hasVision()) {
    multimodal = models::findMultimodalByModelType(config->multimodalType);
    std::string pre = detail::joinPath(dir, "preprocessor_config.json");
    Result<std::string> text = detail::readTextFile(pre);
    if (!text)
      return Error(text.message() + " (a " + config->multimodalType +
                   " model needs its image processor's configuration)");
    rt::image::PreprocessConfig parsed;
    if (rt::Status st = rt::image::parsePreprocessorConfig(*text, pre, parsed);
        !st.ok())
      return Error(st.message());
    config->imagePreprocessor = *text;
  }
  detail::CheckpointBuilder b("safetensors", dir);
  b.setConfig(*config);
  auto add = [&](TensorRef t) {
    if (multimodal)
      t.name = models::canonicalTensorName(*multimodal, t.name);
    return b.addTensor(std::move(t));
  };

  std::string single = detail::joinPath(dir, "model.safetensors");
  std::string indexPath = detail::joinPath(dir, "model.safetensors.index.json");
  if (detail::pathExists(single)) {
    Result<ParsedFile> parsed = parseSafetensorsFile(single);
    if (!parsed)
      return parsed.error();
    b.addFile(parsed->file);
    for (TensorRef &t : parsed->tensors)
      ETLLM_RETURN_IF_ERROR(add(std::move(t)));
    return b.finish();
  }
  if (!detail::pathExists(indexPath)) {
    std::string hint;
    if (detail::pathExists(detail::joinPath(dir, "pytorch_model.bin")) ||
        detail::pathExists(
            detail::joinPath(dir, "pytorch_model.bin.index.json")))
      hint = " (only PyTorch .bin weights found; convert them to "
             "safetensors)";
    return Error(dir +
                 ": no model.safetensors or "
                 "model.safetensors.index.json" +
                 hint);
  }
  Result<std::string> text = detail::readTextFile(indexPath);
  if (!text)
    return text.error();
  json index;
  try {
    index = json::parse(*text);
  } catch (const json::exception &e) {
    return Error(indexPath + ": invalid JSON: " + e.what());
  }
  if (!index.is_object())
    return Error(indexPath + ": not a JSON object");
  auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object())
    return Error(indexPath + ": key 'weight_map' is missing or not an object");
  // Shard file -> tensors it must hold, in first-mention order.
  std::vector<std::string> shards;
  std::map<std::string, std::set<std::string>> wanted;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it.value().is_string())
      return Error(indexPath + ": weight_map entry '" + it.key() +
                   "' is not a string");
    std::string shard = it.value().get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." ||
        shard == "..")
      return Error(indexPath + ": weight_map entry '" + it.key() +
                   "' names an invalid shard file '" + shard + "'");
    if (!wanted.count(shard))
      shards.push_back(shard);
    wanted[shard].insert(it.key());
  }
  if (shards.empty())
    return Error(indexPath + ": weight_map is empty");
  std::sort(shards.begin(), shards.end());
  for (const std::string &shard : shards) {
    std::string shardPath = detail::joinPath(dir, shard);
    Result<ParsedFile> parsed = parseSafetensorsFile(shardPath);
    if (!parsed)
      return parsed.error();
    b.addFile(parsed->file);
    std::set<std::string> &need = wanted[shard];
    for (TensorRef &t : parsed->tensors) {
      need.erase(t.name);
      ETLLM_RETURN_IF_ERROR(add(std::move(t)));
    }
    if (!need.empty())
      return Error(shardPath + ": tensor '" + *need.begin() +
                   "' is listed in " + indexPath +
                   " but missing from this shard");
  }
  return b.finish();
}

Result<std::string> safetensorsDTypeName(DType dtype) {
  for (const StDType &d : kStDTypes)
    if (d.dtype == dtype)
      return std::string(d.name);
  return Error(std::string("safetensors cannot store ") + dtypeName(dtype));
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

SafetensorsWriter::SafetensorsWriter() = default;

SafetensorsWriter::~SafetensorsWriter() {
  if (file_)
    std::fclose(file_);
}

void SafetensorsWriter::setMetadata(const std::string &key,
                                    const std::string &value) {
  metadata_[key] = value;
}

Status SafetensorsWriter::addTensor(const std::string &name, DType dtype,
                                    const std::vector<int64_t> &shape) {
  if (opened_)
    return Error("SafetensorsWriter: addTensor after open");
  Result<std::string> dn = safetensorsDTypeName(dtype);
  if (!dn)
    return dn.error();
  if (name.empty() || name == "__metadata__")
    return Error("SafetensorsWriter: invalid tensor name '" + name + "'");
  for (const PendingTensor &t : tensors_)
    if (t.name == name)
      return Error("SafetensorsWriter: duplicate tensor '" + name + "'");
  Result<uint64_t> n = byteSize(dtype, shape);
  if (!n)
    return Error("SafetensorsWriter: tensor '" + name + "': " + n.message());
  tensors_.push_back({name, dtype, shape, dataSize_, dataSize_ + *n});
  dataSize_ += *n;
  return Status();
}

Status SafetensorsWriter::open(const std::string &path) {
  if (opened_)
    return Error("SafetensorsWriter: already opened");
  json header = json::object();
  if (!metadata_.empty())
    header["__metadata__"] = metadata_;
  for (const PendingTensor &t : tensors_) {
    json entry;
    entry["dtype"] = safetensorsDTypeName(t.dtype).value();
    entry["shape"] = t.shape;
    entry["data_offsets"] = {t.begin, t.end};
    header[t.name] = entry;
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0)
    text += ' ';
  path_ = path;
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_)
    return Error(path + ": cannot create: " + std::strerror(errno));
  opened_ = true;
  uint64_t len = text.size();
  if (std::fwrite(&len, 8, 1, file_) != 1 ||
      std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
    failed_ = true;
    return Error(path + ": write failed: " + std::strerror(errno));
  }
  return Status();
}

Status SafetensorsWriter::write(const void *data, size_t size) {
  if (!opened_ || !file_ || failed_)
    return Error("SafetensorsWriter: write without a successful open");
  if (size > dataSize_ - written_)
    return Error(path_ + ": more tensor bytes written than declared");
  if (size && std::fwrite(data, 1, size, file_) != size) {
    failed_ = true;
    return Error(path_ + ": write failed: " + std::strerror(errno));
  }
  written_ += size;
  return Status();
}

Status SafetensorsWriter::finish() {
  if (!opened_ || !file_)
    return Error("SafetensorsWriter: finish without open");
  std::FILE *f = file_;
  file_ = nullptr;
  bool closeFailed = std::fclose(f) != 0;
  if (failed_ || closeFailed)
    return Error(path_ + ": write failed");
  if (written_ != dataSize_)
    return Error(path_ + ": " + std::to_string(written_) + " of " +
                 std::to_string(dataSize_) + " tensor bytes written");
  return Status();
}

} // namespace etllm::formats
