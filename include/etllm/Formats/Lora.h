//===- Lora.h - LoRA adapters (PEFT) merged into float weights --*- C++ -*-===//
//
// A LoRA adapter adds a low-rank update to some linear weights:
//   W' = W + s * scaling * B A,   A: [r, in], B: [out, r]
// with scaling = lora_alpha / r (lora_alpha / sqrt(r) with use_rslora) from
// the adapter and s the user's scale (`--lora PATH:SCALE`).
//
// The format read here is the one PEFT's `save_pretrained` writes: a
// directory with adapter_config.json and adapter_model.safetensors whose
// tensors are named
//   base_model.model.<module path>.lora_A.weight   [r, in]
//   base_model.model.<module path>.lora_B.weight   [out, r]
// (a bare adapter_model.safetensors path is accepted when adapter_config.json
// sits next to it). Features that change the math beyond the formula above
// (DoRA, per-module rank/alpha patterns, biases, fan_in_fan_out, modules to
// save) are refused with a message naming the key.
//
// Nothing here depends on LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_LORA_H
#define ETLLM_FORMATS_LORA_H

#include "etllm/Formats/Checkpoint.h"

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

/// The largest rank accepted (real adapters use 4..256).
inline constexpr int64_t kMaxLoraRank = 1024;

/// An opened adapter: its A/B pairs keyed by the HF name of the weight they
/// update ("model.layers.0.self_attn.q_proj.weight").
class LoraAdapter {
public:
  struct Target {
    const TensorRef *a = nullptr; ///< lora_A.weight, [r, in]
    const TensorRef *b = nullptr; ///< lora_B.weight, [out, r]
    int64_t rank = 0;
  };

  /// Opens and validates an adapter directory (or its .safetensors file):
  /// config keys, every tensor paired, 2-D, rank consistent, within
  /// kMaxLoraRank, float dtype. Errors name the file and the tensor or key.
  static Result<std::unique_ptr<LoraAdapter>> open(const std::string &path);

  const std::string &path() const { return path_; }
  /// The files the adapter was read from (adapter_config.json, then
  /// adapter_model.safetensors), for provenance.
  const std::vector<std::string> &files() const { return files_; }
  int64_t rank() const { return rank_; }
  double alpha() const { return alpha_; }
  /// lora_alpha / r, or lora_alpha / sqrt(r) for rsLoRA.
  double scaling() const { return scaling_; }
  const std::map<std::string, Target, std::less<>> &targets() const {
    return targets_;
  }
  const Target *find(std::string_view weightName) const;

  /// Checks the adapter against a base checkpoint: every target weight
  /// exists, is 2-D, and its shape is [B rows, A columns].
  Status checkAgainst(const Checkpoint &base) const;

  /// W += scale * scaling() * B A for the weight `weightName` (row-major
  /// [rows, cols], HF row order). The product is summed in double and
  /// rounded to float once per element, so the merge equals
  /// `float32(float64(W) + scale * scaling * (float64(B) @ float64(A)))`.
  /// NaN or infinity in A or B is an error naming the tensor.
  Status mergeInto(std::string_view weightName, double scale, int64_t rows,
                   int64_t cols, float *w) const;

private:
  LoraAdapter() = default;
  std::string path_;
  std::vector<std::string> files_;
  std::unique_ptr<Checkpoint> tensors_;
  std::map<std::string, Target, std::less<>> targets_;
  int64_t rank_ = 0;
  double alpha_ = 0;
  double scaling_ = 0;
};

} // namespace etllm::formats

#endif // ETLLM_FORMATS_LORA_H
