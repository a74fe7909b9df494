//===- Generator.h - Synthetic checkpoints for tests and benchmarks -*- C++
//-*-===//
//
// Writes a checkpoint of a family of the registry with seeded random
// weights, either as a Hugging Face directory (config.json +
// model.safetensors) or as the GGUF file llama.cpp's convert_hf_to_gguf.py
// would produce from that directory (same tensor values, transformed as the
// family's GgufSpec says: q/k rows permuted, +1 on Gemma's norm weights,
// fused tensors kept, lm_head dropped; a synthetic tokenizer vocabulary in
// tokenizer.ggml.*). Sizes come from the family's presets
// (GeneratorSpec). Weights are generated per element
// from a counter-based hash, so the HF and GGUF files of one seed hold the
// same values and a file of any size is written streaming.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TESTING_GENERATOR_H
#define ETLLM_TESTING_GENERATOR_H

#include "etllm/Formats/Checkpoint.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace etllm::formats {

/// What to generate.
struct GeneratorOptions {
  /// A family id (models::FamilySpec::id): llama, qwen2, gemma2, ...
  std::string arch = "llama";
  /// "hf" (directory) or "gguf" (file).
  std::string format = "hf";
  /// "tiny" or one of the family's GeneratorSpec::presets.
  std::string preset = "tiny";
  std::optional<int64_t> hidden, layers, heads, kvHeads, headDim, ffn, vocab,
      maxSeq;
  /// Mixture-of-experts families: routed experts, experts per token, the
  /// expert and shared-expert intermediate sizes (default: the preset's).
  std::optional<int64_t> experts, expertsPerTok, moeFfn, sharedFfn;
  /// Overrides the preset's tie_word_embeddings.
  std::optional<bool> tied;
  /// "" (preset's), "none", "llama3" (factor 32, low 1, high 4, original
  /// 8192), "linear:<factor>" or (families with YaRN)
  /// "yarn:<factor>:<original context>:<mscale>:<mscale_all_dim>".
  std::string ropeScaling;
  /// Multi-head Latent Attention: overrides the preset's q_lora_rank (0: no
  /// q LoRA, q_proj) and kv_lora_rank.
  std::optional<int64_t> qLoraRank, kvLoraRank;
  /// GGUF form of an MLA family's kv_b_proj: "split" (attn_k_b/attn_v_b,
  /// what llama.cpp's converter writes today) or "joint" (attn_kv_b, older
  /// converters).
  std::string ggufKvB = "split";
  /// Element type of the safetensors tensors (F32, F16, BF16).
  DType dtype = DType::F32;
  /// GGUF type of 2-D weights (F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1,
  /// Q4_K, Q5_K, Q6_K; rows that are not whole super-blocks take
  /// llama.cpp's fallbacks, Q5_0, Q5_1, Q8_0); 1-D tensors are always F32,
  /// as llama.cpp's converter writes them. Unset: same as dtype.
  std::optional<DType> ggufType;
  /// A composite model's vision tower (--arch llava): "tiny" (3 layers,
  /// 32 x 32 in 8 x 8 patches), "clip-vit-b16" (CLIP ViT-B/16 at 224),
  /// "clip-vit-l14-336" (LLaVA-1.5's CLIP ViT-L/14 at 336) or "siglip-tiny" (a
  /// SigLIP tower of the tiny one's sizes, LLaVA-Interleave's kind) or
  /// "gemma3-tiny" / "smolvlm-tiny" (SigLIP, 8 x 8 patches of 4; --arch
  /// gemma3-vision, smolvlm) or "smolvlm-256m" (SmolVLM-256M's tower).
  std::string visionPreset = "tiny";
  uint64_t seed = 0;
  /// Output directory (hf) or file (gguf).
  std::string output;
};

/// The ModelConfig the options describe (validated).
Result<ModelConfig> generatorConfig(const GeneratorOptions &options);

/// Writes the checkpoint. Peak memory is a few MiB regardless of model size.
Status generateCheckpoint(const GeneratorOptions &options);

/// The value the generator assigns to element `index` (flat, HF row-major
/// order) of the HF tensor `hfName` for `seed` (before dtype rounding and
/// before any GGUF transform).
float generatorValue(uint64_t seed, const std::string &hfName, bool isNorm,
                     bool normAddsOne, uint64_t index);

/// A random LoRA adapter for an existing checkpoint (LoraGenerator.cpp).
struct LoraGeneratorOptions {
  /// The checkpoint it adapts (anything openCheckpoint reads).
  std::string base;
  /// "hf" (a PEFT directory) or "gguf" (llama.cpp's LoRA GGUF).
  std::string format = "hf";
  int64_t rank = 4;
  double alpha = 8;
  /// Module kinds to adapt (q_proj, ..., qkv_proj, gate_up_proj); empty:
  /// every linear weight of the decoder layers except routed experts.
  std::vector<std::string> targets;
  /// Standard deviation of A's and B's elements (B is random, not PEFT's
  /// zeros, so the adapter changes the model).
  double stdev = 0.05;
  /// Element type: PEFT tensors F32/F16/BF16; GGUF also Q8_0 (ggufType,
  /// default dtype).
  DType dtype = DType::F32;
  std::optional<DType> ggufType;
  uint64_t seed = 0;
  /// The PEFT directory or the .gguf file.
  std::string output;
};

/// Writes the adapter. The same options with either format hold the same
/// adapter (see LoraGenerator.cpp).
Status generateLoraAdapter(const LoraGeneratorOptions &options);

} // namespace etllm::formats

#endif // ETLLM_TESTING_GENERATOR_H
