//===- Matchers.h - Small value matchers the passes share -------*- C++ -*-===//
//
// Helpers private to lib/Transforms/: the splat value of a constant, conversions
// and unit-dimension reshapes looked through. One definition each, for
// etllm-fuse-sdpa, etllm-swap-source's swaps and the others.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_PASSES_MATCHERS_H
#define ETLLM_PASSES_MATCHERS_H

#include "etllm/Dialect/Etllm/EtllmOps.h"

#include <optional>

namespace etllm::matchers {

/// The splat value of an integer or float constant, if `v` is one.
std::optional<double> splat(mlir::Value v);
/// The splat value of a float constant, if `v` is one (integer constants:
/// none).
std::optional<double> floatSplat(mlir::Value v);
/// The rank of a ranked tensor value.
int64_t rankOf(mlir::Value v);
/// `v` with one element-type conversion looked through (the fp32 round trip
/// around softmax).
mlir::Value skipConvert(mlir::Value v);
/// `v` with every element-type conversion looked through.
mlir::Value throughConverts(mlir::Value v);
/// `v` with unsqueezes, broadcasts (expand) and reshapes that only add,
/// drop or broadcast unit dimensions looked through: the rank-1 (or
/// rank-0) tensor a mask's index operand was made from.
mlir::Value throughUnitDims(mlir::Value v);

} // namespace etllm::matchers

#endif // ETLLM_PASSES_MATCHERS_H
