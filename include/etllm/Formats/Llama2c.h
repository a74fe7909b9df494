//===- Llama2c.h - llama2.c (karpathy) v0 checkpoints -----------*- C++ -*-===//
//
// The legacy ("version 0") llama2.c checkpoint: a header of 7 little-endian
// int32 {dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len}
// (a negative vocab_size means the classifier is not shared with the
// embedding), then float32 arrays in run.c's memory_map_weights order:
// token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final,
// freq_cis_real and freq_cis_imag (seq_len * head_size / 2 each; skipped),
// and wcls when unshared. The file size must match exactly.
//
// Tensors are exposed under HF Llama names (w1 = gate_proj, w3 = up_proj,
// w2 = down_proj); wq/wk rows are in interleaved-pair RoPE order
// (qkPermuteHeads set).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_LLAMA2C_H
#define ETLLM_FORMATS_LLAMA2C_H

#include "etllm/Formats/Checkpoint.h"

#include <cstdint>
#include <memory>
#include <string>

namespace etllm::formats {

/// The llama2.c v0 header.
struct Llama2cHeader {
  int32_t dim = 0;
  int32_t hiddenDim = 0;
  int32_t numLayers = 0;
  int32_t numHeads = 0;
  int32_t numKvHeads = 0;
  /// Negative: untied classifier (wcls present).
  int32_t vocabSize = 0;
  int32_t seqLen = 0;
};

/// Checks plausibility of a header (positive sizes, divisibility, even head
/// size) and returns the exact file size it implies. `path` is for messages.
Result<uint64_t> llama2cExpectedFileSize(const Llama2cHeader &header,
                                         const std::string &path);

/// Opens a llama2.c v0 checkpoint.
Result<std::unique_ptr<Checkpoint>> openLlama2c(const std::string &path);

/// The ModelConfig of a llama2.c header: the llama2c family of the registry
/// (LlamaForCausalLM), rms eps 1e-5,
/// rope theta 10000, silu, bos 1, eos 2, float32 (run.c's constants).
Result<ModelConfig> configFromLlama2c(const Llama2cHeader &header);

} // namespace etllm::formats

#endif // ETLLM_FORMATS_LLAMA2C_H
