//===- Lora.h - LoRA adapters (PEFT, GGUF) merged into float weights -*- C++
//-*-===//
//
// A LoRA adapter adds a low-rank update to some linear weights:
//   W' = W + s * scaling * B A,   A: [r, in], B: [out, r]
// with s the user's scale (`--lora PATH:SCALE`) and scaling from the adapter.
//
// Two forms are read:
// - PEFT's `save_pretrained`: a directory with adapter_config.json and
//   adapter_model.safetensors whose tensors are named
//     base_model.model.<module path>.lora_A.weight   [r, in]
//     base_model.model.<module path>.lora_B.weight   [out, r]
//   (a bare adapter_model.safetensors path is accepted when
//   adapter_config.json sits next to it); scaling = lora_alpha / r, or
//   lora_alpha / sqrt(r) with use_rslora.
// - llama.cpp's LoRA GGUF (convert_lora_to_gguf.py): general.type = adapter,
//   adapter.type = lora, adapter.lora.alpha, tensors
//   `blk.N.<weight>.lora_a` [r, in] and `.lora_b` [out, r] (PyTorch order);
//   scaling = alpha / r per tensor pair, 1 when alpha is 0 (llama.cpp's
//   rule). For families whose GGUF converter permutes q/k rows (Llama), the
//   rows of q/k's lora_b are permuted the same way; they are put back in
//   Hugging Face order with the base's head counts, so a PEFT adapter and
//   its GGUF conversion give the same merged weights.
// Features that change the math beyond the formula above (DoRA, per-module
// rank/alpha patterns, biases, fan_in_fan_out, modules to save, norm
// tensors, embeddings, stacked experts) are refused with a message naming
// the key or tensor.
//
// Nothing here depends on LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_LORA_H
#define ETLLM_FORMATS_LORA_H

#include "etllm/Formats/Checkpoint.h"
#include "etllm/runtime/lora.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace etllm::formats {

/// One `--lora PATH[:SCALE]` (or an entry of export_config.yaml's `lora:`).
struct LoraSpec {
  std::string path;
  double scale = 1.0;
};

/// Parses "PATH" or "PATH:SCALE". The scale is the text after the last ':'
/// when it is a number; it must be finite. `what` names the flag or key in
/// errors.
Result<LoraSpec> parseLoraSpec(std::string_view text, std::string_view what);

/// The largest rank accepted (the runtime's: etllm/runtime/lora.h).
inline constexpr int64_t kMaxLoraRank = rt::kMaxLoraRank;

/// An opened adapter: its A/B pairs keyed by the HF name of the weight they
/// update ("model.layers.0.self_attn.q_proj.weight").
class LoraAdapter {
public:
  struct Target {
    const TensorRef *a = nullptr; ///< lora_A.weight, [r, in]
    const TensorRef *b = nullptr; ///< lora_B.weight, [out, r]
    int64_t rank = 0;
    /// The adapter's factor for this pair (see the file comment).
    double scaling = 0;
    /// > 0: B's rows are in GGUF's interleaved q/k order for this many
    /// heads; put back in HF order before the merge.
    int64_t qkPermuteHeads = 0;
  };

  /// Opens and validates an adapter: a PEFT directory (or its .safetensors
  /// file) or a llama.cpp LoRA GGUF, told apart by the file's content.
  /// Checks config keys, every tensor paired, 2-D, rank consistent, within
  /// kMaxLoraRank, float dtype. `base` (the checkpoint it adapts) gives a
  /// GGUF adapter its q/k head counts and is checked to be of the adapter's
  /// architecture; a GGUF adapter that needs them is refused without it.
  /// Errors name the file and the tensor or key.
  static Result<std::unique_ptr<LoraAdapter>>
  open(const std::string &path, const Checkpoint *base = nullptr);

  /// What a GGUF adapter needs of the model it adapts, when that model is
  /// not at hand as a Checkpoint (a program's recorded model config).
  struct Base {
    std::string path;     ///< named in messages
    std::string ggufArch; ///< checked against the adapter's; "" unchecked
    int64_t numHeads = 0, numKvHeads = 0;
  };
  static Result<std::unique_ptr<LoraAdapter>> open(const std::string &path,
                                                   const Base &base);

  /// A [r, in] and B [out, r] of a target as float32, B's rows in Hugging
  /// Face order (a GGUF adapter's q/k rows put back); NaN or infinity is an
  /// error naming the tensor.
  Result<std::pair<std::vector<float>, std::vector<float>>>
  factors(const Target &target) const;

  const std::string &path() const { return path_; }
  /// The files the adapter was read from (adapter_config.json, then
  /// adapter_model.safetensors; or the .gguf), for provenance.
  const std::vector<std::string> &files() const { return files_; }
  /// "peft" or "gguf".
  const std::string &format() const { return format_; }
  /// The largest rank of its pairs (every pair's, for PEFT).
  int64_t rank() const { return rank_; }
  double alpha() const { return alpha_; }
  const std::map<std::string, Target, std::less<>> &targets() const {
    return targets_;
  }
  const Target *find(std::string_view weightName) const;

  /// Checks the adapter against a base checkpoint: every target weight
  /// exists, is 2-D, and its shape is [B rows, A columns].
  Status checkAgainst(const Checkpoint &base) const;

  /// W += scale * Target::scaling * B A for the weight `weightName` (row-major
  /// [rows, cols], HF row order). The product is summed in double and
  /// rounded to float once per element, so the merge equals
  /// `float32(float64(W) + scale * scaling * (float64(B) @ float64(A)))`.
  /// NaN or infinity in A or B is an error naming the tensor.
  Status mergeInto(std::string_view weightName, double scale, int64_t rows,
                   int64_t cols, float *w) const;

private:
  LoraAdapter() = default;
  static Result<std::unique_ptr<LoraAdapter>> openPeft(const std::string &path);
  static Result<std::unique_ptr<LoraAdapter>> openGguf(const std::string &path,
                                                       const Base *base);
  std::string path_;
  std::string format_;
  std::vector<std::string> files_;
  std::unique_ptr<Checkpoint> tensors_;
  std::map<std::string, Target, std::less<>> targets_;
  int64_t rank_ = 0;
  double alpha_ = 0;
};

} // namespace etllm::formats

#endif // ETLLM_FORMATS_LORA_H
