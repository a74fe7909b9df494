//===- GgufInternal.h - Shared by the GGUF reader's files -------*- C++ -*-===//
//
// Private to lib/Formats: typed metadata lookups with messages naming the
// file and key (the config and the vocabulary are read with them), and the
// vocabulary reader the container reader calls.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_FORMATS_GGUFINTERNAL_H
#define ETLLM_LIB_FORMATS_GGUFINTERNAL_H

#include "Internal.h"
#include "etllm/Formats/Gguf.h"

#include <cmath>
#include <memory>
#include <optional>
#include <string>

namespace etllm::formats::detail {

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

  Result<std::optional<bool>> optBool(const std::string &key) const {
    const GgufValue *v = ckpt_.metadata(key);
    if (!v)
      return std::optional<bool>();
    if (std::optional<bool> b = v->toBool())
      return b;
    return error(key, std::string("expected a bool, got ") +
                          ggufTypeName(v->type()));
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

/// The family a GGUF file of `arch` opens as, given its metadata (a family
/// may need a key to read back: "llama" with expert_count is Mixtral), or
/// null (GgufConfig.cpp).
const models::FamilySpec *ggufFamily(const Checkpoint &checkpoint,
                                     const std::string &arch);

/// The tokenizer.ggml.* metadata of an opened GGUF file, validated; null
/// when the file has none (GgufVocab.cpp).
Result<std::unique_ptr<GgufTokenizerInfo>>
readTokenizer(const Checkpoint &checkpoint);

} // namespace etllm::formats::detail

#endif // ETLLM_LIB_FORMATS_GGUFINTERNAL_H
