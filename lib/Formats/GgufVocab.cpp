//===- GgufVocab.cpp - The tokenizer.ggml.* metadata of a GGUF file -------===//
//
// Tokens, scores, token types, merges and special ids, checked against
// each other (lengths, ids inside the vocabulary).
//
//===----------------------------------------------------------------------===//

#include "GgufInternal.h"

namespace etllm::formats {

using detail::MetaReader;

namespace {

std::unique_ptr<GgufTokenizerInfo> noTokenizer() { return nullptr; }

} // namespace

Result<std::unique_ptr<GgufTokenizerInfo>>
detail::readTokenizer(const Checkpoint &ckpt) {
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

} // namespace etllm::formats
