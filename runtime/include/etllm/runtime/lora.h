//===- lora.h - LoRA adapters applied at run time ---------------*- C++ -*-===//
//
// A program exported with `lora_runtime.targets` has hooks: after each
// targeted linear layer, the `lora` operator adds
//     sum over the applied adapters of  s * scaling * B (A x)
// to the layer's output, reading the adapters' matrices where they were
// loaded; the base weights are never touched or copied (docs/LoRA.md).
//
//   auto adapter = etllm::rt::LoraAdapter::load("chat.etla", program);
//   module->applyLora(*adapter, 0.5);   // several at once, each its scale
//   module->setLoraScale(**adapter, 1.0);
//   module->removeLora(**adapter);      // the base output, bit for bit
//
// Applying, rescaling and removing only rebuild the per-hook lists the
// kernel reads (no allocation of the size of a weight, no re-packing); none
// may run while the module executes.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LORA_H
#define ETLLM_RUNTIME_LORA_H

#include "etllm/runtime/result.h"
#include "etllm/runtime/tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace etllm::rt {

class Program;

/// A hook of a program (schema LoraHook).
struct LoraHookInfo {
  std::string name; ///< module path, "model.layers.3.self_attn.q_proj"
  int64_t inFeatures = 0, outFeatures = 0;
};

/// The largest LoRA rank anything in etllm accepts (a program's max_rank,
/// an adapter's rank; real adapters use 4..256).
inline constexpr int64_t kMaxLoraRank = 1024;

/// The current adapter file format (lora.fbs `format_version`).
inline constexpr uint32_t kLoraFormatVersion = 1;

/// An adapter file (.etla), verified against the program it is for.
class LoraAdapter {
public:
  struct Target {
    uint32_t hook = 0;         ///< index in Program::loraHooks()
    const void *at = nullptr;  ///< A^T [in, rank]
    const void *bt = nullptr;  ///< B^T [rank, out]
    DType atType = DType::F32; ///< F32, F16 (IEEE half bits) or I8
    DType btType = DType::F32;
    /// An I8 matrix's scales, one per rank index (LoraTerm).
    const float *atScale = nullptr, *btScale = nullptr;
  };

  /// Reads `path` and checks it completely against `program`: the file
  /// identifier and version, every size and count, the base hash (the
  /// program's content hash), every target a hook of the program with its
  /// shape, the rank within the program's maximum, every value finite.
  /// Errors name the file and the target (tensor).
  static Result<std::shared_ptr<const LoraAdapter>>
  load(const std::string &path, const Program &program);
  /// The same for a file held in memory (copied; `name` is used in errors).
  static Result<std::shared_ptr<const LoraAdapter>>
  loadFromBuffer(const uint8_t *data, size_t size, const std::string &name,
                 const Program &program);

  const std::string &name() const { return name_; }
  int64_t rank() const { return rank_; }
  double alpha() const { return alpha_; }
  /// alpha / rank (or alpha / sqrt(rank) for rsLoRA): a user scale s gives
  /// the update s * scaling() * B A.
  double scaling() const { return scaling_; }
  const std::string &baseHash() const { return baseHash_; }
  const std::vector<Target> &targets() const { return targets_; }
  /// Bytes held: the file's (the kernel reads the matrices in place).
  size_t sizeBytes() const { return bytes_.size() * sizeof(uint64_t); }

private:
  LoraAdapter() = default;
  std::string name_, baseHash_;
  std::vector<uint64_t> bytes_; // the file, 8-byte aligned
  int64_t rank_ = 0;
  double alpha_ = 0, scaling_ = 0;
  std::vector<Target> targets_;
};

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_LORA_H
