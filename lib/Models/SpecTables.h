//===- SpecTables.h - Editing a family spec's tables ------------*- C++ -*-===//
//
// Private to lib/Models: how a spec says "that family's table, but ...":
// TextModel's GGUF metadata, a GGUF tensor table with a run of entries
// replaced, a generator preset of a real model's sizes.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_MODELS_SPECTABLES_H
#define ETLLM_LIB_MODELS_SPECTABLES_H

#include "etllm/Models/Family.h"

#include <algorithm>
#include <cassert>
#include <initializer_list>
#include <vector>

namespace etllm::models {

/// The metadata convert_hf_to_gguf.py's TextModel.set_gguf_parameters
/// writes for a model with these keys, in its order (a family's converter
/// class adds its own after them).
inline std::vector<GgufKey> textModelMetadata() {
  return {
      GgufKey::BlockCount,        GgufKey::ContextLength,
      GgufKey::EmbeddingLength,   GgufKey::FeedForwardLength,
      GgufKey::HeadCount,         GgufKey::HeadCountKv,
      GgufKey::RopeScalingLinear, GgufKey::RopeFreqBase,
      GgufKey::RmsEpsilon,        GgufKey::KeyLength,
      GgufKey::ValueLength,       GgufKey::FileType,
  };
}

/// Replaces the entries from `first` through `last` of a tensor table (in
/// its order: llama.cpp's converter writes the tensors in it) with `with`.
inline void replaceTensors(std::vector<GgufTensorName> &table, GgufTensor first,
                           GgufTensor last,
                           std::initializer_list<GgufTensorName> with) {
  auto named = [](GgufTensor t) {
    return [t](const GgufTensorName &n) { return n.gguf == t; };
  };
  auto begin = std::find_if(table.begin(), table.end(), named(first));
  auto end = std::find_if(begin, table.end(), named(last));
  assert(end != table.end() && "a spec replaces entries its base has");
  table.insert(table.erase(begin, end + 1), with);
}

/// A real model's sizes for etllm-gen-checkpoint --preset (from its
/// config.json); the caller sets what else differs from the tiny defaults.
inline GeneratorPreset sizedPreset(const char *name, int64_t hidden,
                                   int64_t layers, int64_t heads,
                                   int64_t kvHeads, int64_t headDim,
                                   int64_t ffn, int64_t vocabSize,
                                   int64_t maxSeq) {
  // GeneratorPreset's first members, in their order; the rest keep their
  // defaults.
  return GeneratorPreset{name,    hidden, layers,    heads, kvHeads,
                         headDim, ffn,    vocabSize, maxSeq};
}

} // namespace etllm::models

#endif // ETLLM_LIB_MODELS_SPECTABLES_H
