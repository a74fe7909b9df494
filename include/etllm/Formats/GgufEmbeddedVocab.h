//===- GgufEmbeddedVocab.h - A GGUF vocabulary as the runtime sees it -*- C++
//-*-===//
//
// The runtime's view (rt::EmbeddedVocab) of a GGUF file's tokenizer.ggml.*
// metadata, as a program carries it: what etllm-export checks with the
// runtime's own tokenizer before embedding it, and what the fuzz targets
// build tokenizers from. Header-only: include it only where
// etllm_tokenizers is linked (etllm_formats itself does not link it).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_GGUFEMBEDDEDVOCAB_H
#define ETLLM_FORMATS_GGUFEMBEDDEDVOCAB_H

#include "etllm/Formats/GgufMetadata.h"
#include "etllm/runtime/tokenizer.h"

#include <cstdint>

namespace etllm::formats {

/// Ids outside int32 become -2 (out of range), so the vocabulary check
/// sees them.
inline rt::EmbeddedVocab embeddedVocab(const GgufTokenizerInfo &g) {
  rt::EmbeddedVocab v;
  v.model = g.model;
  v.pre = g.pre;
  v.tokens = g.tokens;
  v.scores = g.scores;
  v.types = g.tokenTypes;
  v.merges = g.merges;
  auto id32 = [](int64_t id) {
    return id >= -1 && id <= INT32_MAX ? static_cast<int32_t>(id) : -2;
  };
  v.bos = id32(g.bosTokenId);
  v.eos = id32(g.eosTokenId);
  v.unk = id32(g.unknownTokenId);
  v.pad = id32(g.paddingTokenId);
  v.eot = id32(g.eotTokenId);
  v.addBos = g.addBosToken.value_or(true);
  v.addSpacePrefix = g.addSpacePrefix.value_or(true);
  return v;
}

} // namespace etllm::formats

#endif // ETLLM_FORMATS_GGUFEMBEDDEDVOCAB_H
