//===- OpInference.h - Shape helpers of the ops' inference ----*- C++ -*-===//
//
// What the type inference and the verifiers of every level share
// (EtllmOps.cpp: levels A and D, EtllmFusedOps.cpp: level B,
// EtllmQuantOps.cpp: level C). Private to lib/Dialect/Etllm/.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_DIALECTS_OPINFERENCE_H
#define ETLLM_DIALECTS_OPINFERENCE_H

#include "etllm/Dialect/Etllm/EtllmOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

#include <string>

namespace mlir::etllm::detail {

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

inline constexpr int64_t kDyn = ShapedType::kDynamic;

inline RankedTensorType tensorOf(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// Resolves a possibly negative dimension index; fails for out-of-range.
inline FailureOr<int64_t> normalizeDim(int64_t dim, int64_t rank) {
  int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank)
    return failure();
  return d;
}

/// Emits an error at `loc` (when known) and fails.
template <typename... Args>
inline LogicalResult fail(std::optional<Location> loc, Args &&...args);

/// normalizeDim, with the diagnostic every op gives for a bad dimension.
inline FailureOr<int64_t> checkedDim(std::optional<Location> loc, int64_t dim,
                                     int64_t rank) {
  FailureOr<int64_t> d = normalizeDim(dim, rank);
  if (failed(d))
    (void)fail(loc, "dimension ", dim, " is out of range for rank ", rank);
  return d;
}

/// Merges two sizes that must agree; dynamic gives way to static.
inline FailureOr<int64_t> mergeDim(int64_t a, int64_t b) {
  if (ShapedType::isDynamic(a))
    return b;
  if (ShapedType::isDynamic(b) || a == b)
    return a;
  return failure();
}

/// NumPy broadcasting of two shapes (right-aligned).
inline FailureOr<SmallVector<int64_t>> broadcast(ArrayRef<int64_t> a,
                                                 ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == 1)
      out[i] = db;
    else if (db == 1)
      out[i] = da;
    else if (ShapedType::isDynamic(da))
      out[i] = db;
    else if (ShapedType::isDynamic(db) || da == db)
      out[i] = da;
    else
      return failure();
  }
  return out;
}

/// The logical shape of a float tensor or a quantized weight.
inline ArrayRef<int64_t> weightShape(Type t) {
  if (auto q = dyn_cast<QWeightType>(t))
    return q.getShape();
  return cast<RankedTensorType>(t).getShape();
}

inline std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << '?';
    else
      os << d;
  });
  os << ']';
  return s;
}

/// Two tensor types are compatible when element types and ranks agree and
/// every dimension agrees or one side is dynamic: a printed result type may
/// be more precise than the inferred one.
inline bool compatibleTypes(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [l, r] : llvm::zip(lhs, rhs)) {
    if (l == r)
      continue;
    auto lt = dyn_cast<RankedTensorType>(l);
    auto rt = dyn_cast<RankedTensorType>(r);
    if (!lt || !rt || lt.getElementType() != rt.getElementType() ||
        lt.getRank() != rt.getRank())
      return false;
    for (auto [a, b] : llvm::zip(lt.getShape(), rt.getShape()))
      if (failed(mergeDim(a, b)))
        return false;
  }
  return true;
}

#define ETLLM_COMPATIBLE_RETURN_TYPES(OP)                                      \
  bool OP::isCompatibleReturnTypes(TypeRange l, TypeRange r) {                 \
    return compatibleTypes(l, r);                                              \
  }

/// Emits an error at `loc` (when known) and fails.
template <typename... Args>
inline LogicalResult fail(std::optional<Location> loc, Args &&...args) {
  if (loc) {
    InFlightDiagnostic diag = mlir::emitError(*loc);
    (diag << ... << std::forward<Args>(args));
  }
  return failure();
}

/// A quantized KV cache (a buffer, an sdpa operand, a kv_cache.update) must
/// have the KV-cache layout; `op` reports why not.
inline LogicalResult verifyKvCacheLayout(Operation *op, QActType cache) {
  std::string why;
  if (!cache.isKvCacheLayout(&why))
    return op->emitOpError(why) << ", got " << cache;
  return success();
}

/// Shared by index_copy, index_put and kv_cache.update: `source` is `input`
/// with dimension `dim` replaced by the index length.
LogicalResult inferIndexWrite(std::optional<Location> loc, RankedTensorType in,
                              RankedTensorType idx, RankedTensorType src,
                              int64_t dim, SmallVectorImpl<Type> &inferred);

} // namespace mlir::etllm::detail

#endif // ETLLM_DIALECTS_OPINFERENCE_H
