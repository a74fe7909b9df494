//===- verify_ops.h - Load-time checks of kernel calls ----------*- C++ -*-===//
//
// The contract of each operator of ops.def beyond its operand and attribute
// counts: what Program::load checks for every KernelCall (see
// runtime/core/verify_ops.cpp and docs/Security.md). The rules are generated
// into ops.def from the ops' ODS (ETLLM_OP_VALUE, ETLLM_OP_RULE,
// ETLLM_OP_CHECK); this header exposes them for tests.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VERIFY_OPS_H
#define ETLLM_RUNTIME_VERIFY_OPS_H

#include "etllm/runtime/dtype.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/result.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace etllm::rt {

/// What the program file declares of a value: its element type and rank
/// (fixed; only the sizes of dynamic dimensions change at run time).
struct ValueDesc {
  DType dtype;
  int rank;
};

/// How many values an operand or result of an operator stands for.
enum class ValueArity : uint8_t {
  One,      ///< exactly one
  Optional, ///< zero or one (see OpValueInfo::flag)
  Variadic, ///< one or more
};

/// One operand or result of an operator (ops.def ETLLM_OP_VALUE), in order:
/// the inputs, then the outputs.
struct OpValueInfo {
  const char *name; ///< the ODS operand or result ("@buf": a write-back's)
  bool output;
  ValueArity arity;
  /// An Optional input: the integer attribute (an Input flag) saying whether
  /// it is present, or -1: present when the call has more inputs than the
  /// required ones.
  int flag;
};

/// The kinds of ETLLM_OP_RULE (see ops.def for each one's meaning).
enum class RuleKind : uint8_t {
  ElementTypes,
  SameElementType,
  Rank,
  MinRank,
  RankOf,
  MinRankOf,
  IntMin,
  IntNonZero,
  Axis,
  LengthIsRank,
  LengthIsCount,
  FloatNotNaN,
  FloatFinite,
  FloatNonNegative,
};

/// One load-time rule of an operator (ops.def ETLLM_OP_RULE): on value slots
/// or attribute indices `a` and `b`, with parameter `n` (a rank, a minimum,
/// a set of DTypes as bits 1 << DType).
struct OpRule {
  RuleKind kind;
  int a, b;
  int64_t n;
};

/// A kernel call as the load-time checks see it.
struct KernelCallDesc {
  const OpInfo &op;
  const std::vector<ValueDesc> &inputs;
  const std::vector<ValueDesc> &outputs;
  Span<const int64_t> ints;
  Span<const double> floats;
};

/// A check the rules cannot express (ops.def ETLLM_OP_CHECK): a function of
/// runtime/core/verify_ops.cpp.
struct OpCheckInfo {
  const char *name;
  Status (*fn)(const KernelCallDesc &call);
};

/// The operands and results of `id`, inputs first.
Span<const OpValueInfo> opValues(OpId id);
/// The load-time rules of `id`, in the order they are checked.
Span<const OpRule> opRules(OpId id);
/// The named checks of `id`, checked after the rules.
Span<const OpCheckInfo> opChecks(OpId id);

/// Checks one call of `op` whose operand and attribute counts match ops.def
/// (the caller checks those, and checkIntAttrs): the rules of ops.def
/// (element types, ranks, axes against the operands' ranks, ranges of the
/// integer and float attributes) and the op's named checks. The error names
/// the operand or attribute at fault, without the instruction (the caller
/// adds it).
Status verifyKernelCall(const OpInfo &op, const std::vector<ValueDesc> &inputs,
                        const std::vector<ValueDesc> &outputs,
                        const int64_t *ints, size_t numInts,
                        const double *floats, size_t numFloats);

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_VERIFY_OPS_H
