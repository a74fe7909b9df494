//===- instance.h - A cpu delegate instance ---------------------*- C++ -*-===//
//
// Internal to runtime/backends/cpu: what init (init.cpp) learns from a
// blob and execute (backend.cpp) runs: the values' descriptions, the nodes
// with the kind of kernel each runs and what init prepared for it, the
// planned arena.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_BACKENDS_CPU_INSTANCE_H
#define ETLLM_BACKENDS_CPU_INSTANCE_H

#include "internal.h"
#include "moe.h"
#include "qdot.h"

#include "etllm/runtime/backend.h"
#include "etllm/schema/cpu_generated.h"

#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace etllm::rt::cpu {

namespace xfb = ::etllm::cpu;

/// The kernel a node runs (chosen by init).
enum class Kind {
  Dense,
  PackedLinear,
  PackedQLinear,
  PackedQEmbedding,
  PackedMoe, // gate, up and down packed per expert (moe.cpp)
  Rope       // with a table built at init (else Dense)
};

/// What init learned about one blob value.
struct ValueInfo {
  xfb::ValueKind kind = xfb::ValueKind::INTERNAL;
  xfb::Packing packing = xfb::Packing::DENSE;
  uint32_t index = 0;
  Tensor proto; // dtype, upper-bound shape, quant
  bool dynamic[kMaxRank] = {};
  size_t capacity = 0; // bytes of the upper-bound shape
  int producer = -1;   // node index
  int lastUse = -1;    // node index
};

struct Node {
  OpId op = OpId::NumOps;
  Kind kind = Kind::Dense;
  QDotWeight qweight;              // PackedQLinear: the weight, checked at init
  const RopeTable *rope = nullptr; // Rope: the table built at init
  std::shared_ptr<MoeExperts> moe; // PackedMoe: the experts, checked at init
  /// PackedQLinear: this node and the next group - 1 ones read the same
  /// input and run as one (qlinearGroupRun); the others are skipped.
  int group = 1;
  bool inGroup = false;
  /// PackedQLinear: the lora node fused into this one (-1: none); it
  /// writes that node's output, which the lora node then reads in place.
  int lora = -1;
  /// A lora node fused into its qlinear: whether this execution's qlinear
  /// added the hook (else the node runs, in place).
  bool loraDone = false;
  std::vector<uint32_t> values; // inputs, then outputs
  size_t numInputs = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<Tensor *> args; // refreshed by execute
};

class CpuInstance final : public DelegateInstance {
public:
  Status execute(Span<Tensor *const> inputs, Span<Tensor *const> outputs,
                 ExecContext &ctx) override;

  Isa isa = Isa::Generic;
  std::vector<ValueInfo> info;
  std::vector<Tensor> tensors; // own tensors (internal, constant)
  std::vector<Tensor *> bound; // per value: the tensor nodes use
  std::vector<uint32_t> inputValues, outputValues; // by call position
  std::vector<Node> nodes;
  /// Weights converted at init (legacy QWEIGHT_NR8 constants).
  std::vector<std::vector<uint8_t>> converted;
  /// RoPE tables, one per (inv_freq constant, scaling, bound).
  std::vector<std::unique_ptr<RopeTable>> ropeTables;
  std::vector<std::tuple<uint32_t, double, int64_t>> ropeKeys;
  std::unique_ptr<uint8_t[]> arena;
  size_t arenaBytes = 0;
  /// The coefficients of the fused LoRA hooks of one qlinear group.
  std::vector<float> loraCoefficients;
};

/// Floats of coefficients the fused LoRA hooks of one qlinear group may
/// take (the sum of their adapters' ranks; beyond it the lora nodes run on
/// their own).
constexpr size_t kLoraFusedFloats = 8192;

/// "value V" and "node N (op)", as errors name them.
std::string valueName(uint32_t v);
std::string nodeName(uint32_t n, const char *op);

/// Verifies blob `blob` (EXN1) against the program's `constants` and
/// prepares an instance running `isa`'s kernels (init.cpp): see
/// Backend::init.
Result<std::unique_ptr<CpuInstance>> initInstance(
    Isa isa, const uint8_t *blob, size_t size,
    const std::vector<std::pair<std::string, std::string>> &compileSpecs,
    const ConstantTable &constants, ExecContext &ctx, MemoryBudget &budget);

} // namespace etllm::rt::cpu

#endif // ETLLM_BACKENDS_CPU_INSTANCE_H
