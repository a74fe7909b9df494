//===- common.h - Helpers shared by the portable kernels --------*- C++ -*-===//
//
// Internal to runtime/kernels/portable: element types as C++ types, dtype
// dispatch, error helpers, shapes, broadcasting and strided iteration.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_KERNELS_PORTABLE_COMMON_H
#define ETLLM_KERNELS_PORTABLE_COMMON_H

#include "etllm/runtime/half.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace etllm::rt::portable {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// Storage of one IEEE binary16 element.
struct F16 {
  uint16_t bits;
};
/// Storage of one bfloat16 element.
struct BF16 {
  uint16_t bits;
};
/// Storage of one Bool element (one byte, 0 or 1).
struct Bool8 {
  uint8_t v;
};

inline float toF32(float v) { return v; }
inline float toF32(F16 v) { return halfToFloat(v.bits); }
inline float toF32(BF16 v) { return bf16ToFloat(v.bits); }

template <typename T> T fromF32(float v);
template <> inline float fromF32<float>(float v) { return v; }
template <> inline F16 fromF32<F16>(float v) { return F16{floatToHalf(v)}; }
template <> inline BF16 fromF32<BF16>(float v) { return BF16{floatToBf16(v)}; }

template <typename T>
inline constexpr bool kIsFloat =
    std::is_same_v<T, float> || std::is_same_v<T, F16> ||
    std::is_same_v<T, BF16>;
template <typename T>
inline constexpr bool kIsInt =
    std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>;
template <typename T> inline constexpr bool kIsBool = std::is_same_v<T, Bool8>;

/// Whether an element is "true" (non-zero; NaN is true).
inline bool isNonZero(float v) { return v != 0.0f; }
inline bool isNonZero(F16 v) { return (v.bits & 0x7fff) != 0; }
inline bool isNonZero(BF16 v) { return (v.bits & 0x7fff) != 0; }
inline bool isNonZero(Bool8 v) { return v.v != 0; }
template <typename T> inline std::enable_if_t<kIsInt<T>, bool> isNonZero(T v) {
  return v != 0;
}

/// 0 or 1 in any element type.
template <typename T> inline T fromBool(bool b) {
  if constexpr (kIsFloat<T>)
    return fromF32<T>(b ? 1.0f : 0.0f);
  else if constexpr (kIsBool<T>)
    return Bool8{uint8_t(b)};
  else
    return T(b);
}

/// Float to integer: truncation toward zero, saturating; NaN gives 0.
template <typename T> inline T saturatingFromFloat(double v) {
  if (std::isnan(v))
    return T(0);
  constexpr double lo = double(std::numeric_limits<T>::min());
  // 2^63 and friends are exact in double; anything >= the bound saturates.
  constexpr double hiExcl = double(std::numeric_limits<T>::max()) + 1.0;
  if (v <= lo)
    return std::numeric_limits<T>::min();
  if (v >= hiExcl)
    return std::numeric_limits<T>::max();
  return T(v);
}

/// Converts one element between any two non-quantized element types
/// (convert semantics).
template <typename To, typename From> inline To convertElement(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsBool<To>) {
    return Bool8{uint8_t(isNonZero(v))};
  } else if constexpr (kIsBool<From>) {
    return fromBool<To>(v.v != 0);
  } else if constexpr (kIsFloat<From>) {
    float f = toF32(v);
    if constexpr (kIsFloat<To>)
      return fromF32<To>(f);
    else
      return saturatingFromFloat<To>(double(f));
  } else { // From is an integer.
    if constexpr (kIsFloat<To>)
      return fromF32<To>(float(v));
    else
      return To(v); // integer to integer wraps (two's complement)
  }
}

template <typename T> struct Tag { using type = T; };

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// An error prefixed with the operator name.
inline Error opError(const char *op, const std::string &msg) {
  return Error(std::string(op) + ": " + msg);
}
inline Error unsupportedDType(const char *op, DType t) {
  return opError(op, std::string("unsupported dtype ") + dtypeName(t));
}
inline Error unsupportedDTypes(const char *op, DType a, DType b) {
  return opError(op, std::string("unsupported dtype combination ") +
                         dtypeName(a) + " -> " + dtypeName(b));
}
inline Error unsupportedDTypes(const char *op, DType a, DType b, DType c) {
  return opError(op, std::string("unsupported dtype combination ") +
                         dtypeName(a) + ", " + dtypeName(b) + " -> " +
                         dtypeName(c));
}

//===----------------------------------------------------------------------===//
// Dtype dispatch: calls fn(Tag<T>()) with the element type of `t`.
//===----------------------------------------------------------------------===//

template <typename Fn> Status dispatchFloat(DType t, const char *op, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(Tag<float>());
  case DType::F16:
    return fn(Tag<F16>());
  case DType::BF16:
    return fn(Tag<BF16>());
  default:
    return unsupportedDType(op, t);
  }
}

/// Floats and integers (not Bool).
template <typename Fn>
Status dispatchNumeric(DType t, const char *op, Fn &&fn) {
  switch (t) {
  case DType::I64:
    return fn(Tag<int64_t>());
  case DType::I32:
    return fn(Tag<int32_t>());
  case DType::I8:
    return fn(Tag<int8_t>());
  case DType::U8:
    return fn(Tag<uint8_t>());
  default:
    return dispatchFloat(t, op, fn);
  }
}

/// Every non-quantized type.
template <typename Fn> Status dispatchAll(DType t, const char *op, Fn &&fn) {
  if (t == DType::Bool)
    return fn(Tag<Bool8>());
  return dispatchNumeric(t, op, fn);
}

/// Index tensors: I64 or I32.
template <typename Fn> Status dispatchIndex(DType t, const char *op, Fn &&fn) {
  switch (t) {
  case DType::I64:
    return fn(Tag<int64_t>());
  case DType::I32:
    return fn(Tag<int32_t>());
  default:
    return opError(op, std::string("indices must be i64 or i32, not ") +
                           dtypeName(t));
  }
}

/// Byte movers: an unsigned integer type of the element's size, for every
/// non-quantized dtype.
template <typename Fn> Status dispatchBytes(DType t, const char *op, Fn &&fn) {
  switch (elementSize(t)) {
  case 1:
    return fn(Tag<uint8_t>());
  case 2:
    return fn(Tag<uint16_t>());
  case 4:
    return fn(Tag<uint32_t>());
  case 8:
    return fn(Tag<uint64_t>());
  default:
    return unsupportedDType(op, t);
  }
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

/// A shape held by value.
struct Shape {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};

  static Shape of(const Tensor &t) {
    Shape s;
    s.rank = t.rank;
    for (int i = 0; i < t.rank; ++i)
      s.sizes[i] = t.sizes[i];
    return s;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= sizes[i];
    return n;
  }
  bool operator==(const Shape &o) const {
    if (rank != o.rank)
      return false;
    for (int i = 0; i < rank; ++i)
      if (sizes[i] != o.sizes[i])
        return false;
    return true;
  }
  std::string str() const;
};

std::string shapeStr(const Tensor &t);

/// Resizes `out` to `s` with an error naming the operator.
Status resizeTo(const char *op, Tensor &out, const Shape &s);

/// Normalizes a dimension index in [-rank, rank).
Status normalizeDim(const char *op, int64_t dim, int rank, int &result);

/// Row-major element strides of a shape.
void contiguousStrides(const int64_t *sizes, int rank, int64_t *strides);

/// The NumPy broadcast of `n` shapes (right-aligned).
Status broadcastShapes(const char *op, const Tensor *const *ts, int n,
                       Shape &out);

/// Element strides of `t` seen in the index space of the broadcast shape
/// `out` (0 along broadcast dimensions). `t` must broadcast to `out`.
void broadcastStrides(const Tensor &t, const Shape &out, int64_t *strides);

/// The broadcast shape of `x` and `y` (broadcastShapes) and the strides of
/// each in it (broadcastStrides): strides[0] of x, strides[1] of y.
Status broadcastPair(const char *op, const Tensor &x, const Tensor &y,
                     Shape &out, int64_t (&strides)[2][kMaxRank]);

/// Softmax of the n floats at `x` into `y` (which may be x): the max,
/// exp(x - max), their sum in order, then each divided by the sum.
inline void softmaxF32(const float *x, float *y, int64_t n) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    mx = std::max(mx, x[j]);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    y[j] = std::exp(x[j] - mx);
    sum += y[j];
  }
  for (int64_t j = 0; j < n; ++j)
    y[j] = y[j] / sum;
}

/// Calls fn(outIndex, offsets) for every index of `shape` in row-major order,
/// where offsets[k] = sum_d index[d] * strides[k][d].
template <int N, typename Fn>
void forEachIndex(const Shape &shape, const int64_t (&strides)[N][kMaxRank],
                  Fn &&fn) {
  int64_t off[N] = {};
  int64_t numel = shape.numel();
  if (numel == 0)
    return;
  if (shape.rank == 0) {
    fn(int64_t(0), static_cast<const int64_t *>(off));
    return;
  }
  const int last = shape.rank - 1;
  const int64_t inner = shape.sizes[last];
  int64_t innerStride[N];
  for (int k = 0; k < N; ++k)
    innerStride[k] = strides[k][last];
  int64_t idx[kMaxRank] = {};
  int64_t base[N] = {};
  for (int64_t o = 0; o < numel; o += inner) {
    for (int k = 0; k < N; ++k)
      off[k] = base[k];
    for (int64_t i = 0; i < inner; ++i) {
      fn(o + i, static_cast<const int64_t *>(off));
      for (int k = 0; k < N; ++k)
        off[k] += innerStride[k];
    }
    // Odometer over the outer dimensions.
    for (int d = last - 1; d >= 0; --d) {
      if (++idx[d] < shape.sizes[d]) {
        for (int k = 0; k < N; ++k)
          base[k] += strides[k][d];
        break;
      }
      for (int k = 0; k < N; ++k)
        base[k] -= strides[k][d] * (shape.sizes[d] - 1);
      idx[d] = 0;
    }
  }
}

/// Scratch memory from the context (an error without one).
Status getScratch(const char *op, const KernelArgs &args, size_t bytes,
                  void *&result);

/// Reads element i of an index tensor (I64 or I32) as int64.
inline int64_t loadIndex(const Tensor &t, int64_t i) {
  return t.dtype == DType::I64 ? t.ptr<int64_t>()[i]
                               : int64_t(t.ptr<int32_t>()[i]);
}

/// Checks that every element of an index tensor is in [0, limit) (or, with
/// `allowNegative`, in [-limit, limit)).
Status checkIndices(const char *op, const Tensor &idx, int64_t limit,
                    bool allowNegative = false);

/// out = in with out.select(dim, idx[i]) = src.select(dim, i) for a 1-D
/// index with every entry in [0, in.size(dim)) (validated before anything
/// is written). When out.data == in.data the update is in place; otherwise
/// `in` is copied into `out` first. Shared by index_copy and
/// kv_cache_update (shape.cpp).
Status scatterSlices(const char *op, const Tensor &in, const Tensor &idx,
                     const Tensor &src, Tensor &out, int64_t dim);

/// Checks that a tensor holds a non-quantized element type.
Status checkPlain(const char *op, const Tensor &t);

/// Sum of a[i] * b[i] in f32, in index order (the accumulation every
/// linear-style kernel uses, so that they agree bit for bit).
inline float dotF32(const float *a, const float *b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

/// Converts n elements to f32.
template <typename T> void toF32Row(const T *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = toF32(src[i]);
}

/// Converts a float tensor (f32, f16 or bf16; checked by the caller) to f32.
inline void loadFloats(const Tensor &t, float *dst) {
  int64_t n = t.numel();
  if (t.dtype == DType::F32)
    toF32Row(t.ptr<float>(), dst, n);
  else if (t.dtype == DType::F16)
    toF32Row(t.ptr<F16>(), dst, n);
  else
    toF32Row(t.ptr<BF16>(), dst, n);
}

/// The shared core of linear and qlinear: y[m, n] = dot(x[m], w_n) + bias[n]
/// for m < M, n < N (x: M rows of K f32; bias: N f32 or null). The weight
/// row w_n (K floats) comes from rowFn(n, buffer), which may fill `buffer`
/// (K floats of per-tile scratch) and return it, or return a pointer to
/// weights already in f32. Parallel over tiles of n; each weight row is
/// produced once and used for every m.
template <typename O, typename RowFn>
void linearRows(const ExecContext *ctx, const float *x, int64_t M, int64_t K,
                int64_t N, const float *bias, O *y, float *rowScratch,
                size_t tile, const RowFn &rowFn) {
  parallelForTiles(ctx, size_t(N), tile, [&](size_t begin, size_t end) {
    float *buf = rowScratch + (begin / tile) * size_t(K);
    for (size_t n = begin; n < end; ++n) {
      const float *w = rowFn(int64_t(n), buf);
      const float b = bias ? bias[n] : 0.0f;
      for (int64_t m = 0; m < M; ++m)
        y[m * N + int64_t(n)] = fromF32<O>(dotF32(x + m * K, w, K) + b);
    }
  });
}

/// The product of sizes[begin, end).
inline int64_t prod(const int64_t *sizes, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i)
    n *= sizes[i];
  return n;
}

} // namespace etllm::rt::portable

#endif // ETLLM_KERNELS_PORTABLE_COMMON_H
