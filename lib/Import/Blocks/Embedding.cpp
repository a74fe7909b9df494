//===- Embedding.cpp - The token embedding --------------------------------===//
//
// embed_tokens(input_ids); Gemma multiplies by sqrt(hidden_size) in the
// hidden dtype (the `normalizer` of GemmaModel), a config's
// embedding_multiplier scales it too (GraniteModel).
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

#include <cmath>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::import {

Value buildEmbedding(GraphEmitter &e, Value tokens) {
  const formats::ModelConfig &c = e.config;
  const int64_t D = c.hiddenSize, V = c.vocabSize;
  std::string path = e.path(models::HfModule::Embed);
  Value h;
  {
    GraphEmitter::Scope s(e, path, "Embedding");
    h = e.val<EmbeddingOp>(e.param(path + ".weight", {V, D}), tokens);
  }
  if (e.family.traits.scaleEmbeddings)
    // Gemma: hidden * normalizer, the normalizer in the hidden dtype.
    h = e.val<MulOp>(h, e.scalar(std::sqrt(double(D)), e.dtype));
  else if (c.embeddingMultiplier != 1.0)
    // Granite: inputs_embeds * embedding_multiplier.
    h = e.val<MulOp>(h, e.scalar(c.embeddingMultiplier, e.dtype));
  return h;
}

} // namespace etllm::import
