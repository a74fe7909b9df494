//===- elementwise.cpp - Unary, binary, select and fill kernels -----------===//
//
// Float math is done in f32 and rounded to the element type (f16/bf16 with
// round-to-nearest-even). Integer arithmetic wraps (two's complement).
// Binary operators broadcast NumPy-style. An output may alias an input of
// the same shape (in-place): every element is read before it is written.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"

namespace etllm::rt::portable {
namespace {

//===----------------------------------------------------------------------===//
// Unary float math
//===----------------------------------------------------------------------===//

template <typename F>
Status unaryFloat(const KernelArgs &a, const char *op, F f) {
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  if (out.dtype != in.dtype)
    return unsupportedDTypes(op, in.dtype, out.dtype);
  Shape s = Shape::of(in);
  return dispatchFloat(in.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
    const T *x = in.ptr<T>();
    T *y = out.ptr<T>();
    int64_t n = s.numel();
    for (int64_t i = 0; i < n; ++i)
      y[i] = fromF32<T>(f(toF32(x[i])));
    return Status();
  });
}

float sigmoidF(float x) { return 1.0f / (1.0f + std::exp(-x)); }

//===----------------------------------------------------------------------===//
// Binary arithmetic
//===----------------------------------------------------------------------===//

enum class Bin { Add, Sub, Mul, Div, Pow, Max, Min };

constexpr const char *binName(Bin op) {
  switch (op) {
  case Bin::Add:
    return opName(OpId::Add);
  case Bin::Sub:
    return opName(OpId::Sub);
  case Bin::Mul:
    return opName(OpId::Mul);
  case Bin::Div:
    return opName(OpId::Div);
  case Bin::Pow:
    return opName(OpId::Pow);
  case Bin::Max:
    return opName(OpId::Maximum);
  case Bin::Min:
    return opName(OpId::Minimum);
  }
  return "?";
}

template <Bin Op> float applyF(float x, float y) {
  if constexpr (Op == Bin::Add)
    return x + y;
  else if constexpr (Op == Bin::Sub)
    return x - y;
  else if constexpr (Op == Bin::Mul)
    return x * y;
  else if constexpr (Op == Bin::Div)
    return x / y;
  else if constexpr (Op == Bin::Pow)
    return std::pow(x, y);
  else if constexpr (Op == Bin::Max)
    return std::isnan(x) || std::isnan(y) ? NAN : (x > y ? x : y);
  else
    return std::isnan(x) || std::isnan(y) ? NAN : (x < y ? x : y);
}

template <Bin Op, typename T> T applyI(T x, T y) {
  using U = std::make_unsigned_t<T>;
  if constexpr (Op == Bin::Add)
    return T(U(U(x) + U(y)));
  else if constexpr (Op == Bin::Sub)
    return T(U(U(x) - U(y)));
  else if constexpr (Op == Bin::Mul)
    return T(U(U(x) * U(y)));
  else if constexpr (Op == Bin::Max)
    return x > y ? x : y;
  else
    return x < y ? x : y;
}

template <Bin Op> Status binaryKernel(const KernelArgs &a) {
  constexpr const char *op = binName(Op);
  constexpr bool floatOnly = Op == Bin::Div || Op == Bin::Pow;
  const Tensor &x = *a.inputs[0], &y = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  if (x.dtype != y.dtype || out.dtype != x.dtype)
    return unsupportedDTypes(op, x.dtype, y.dtype, out.dtype);
  Shape s;
  int64_t strides[2][kMaxRank];
  ETLLM_RETURN_IF_ERROR(broadcastPair(op, x, y, s, strides));
  auto body = [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
    const T *px = x.ptr<T>(), *py = y.ptr<T>();
    T *po = out.ptr<T>();
    forEachIndex<2>(s, strides, [&](int64_t o, const int64_t *off) {
      if constexpr (kIsFloat<T>)
        po[o] = fromF32<T>(applyF<Op>(toF32(px[off[0]]), toF32(py[off[1]])));
      else
        po[o] = applyI<Op, T>(px[off[0]], py[off[1]]);
    });
    return Status();
  };
  if constexpr (floatOnly)
    return dispatchFloat(x.dtype, op, body);
  else
    return dispatchNumeric(x.dtype, op, body);
}

//===----------------------------------------------------------------------===//
// Comparisons and logical operators
//===----------------------------------------------------------------------===//

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge, And, Or };

constexpr const char *cmpName(Cmp op) {
  switch (op) {
  case Cmp::Eq:
    return opName(OpId::Eq);
  case Cmp::Ne:
    return opName(OpId::Ne);
  case Cmp::Lt:
    return opName(OpId::Lt);
  case Cmp::Le:
    return opName(OpId::Le);
  case Cmp::Gt:
    return opName(OpId::Gt);
  case Cmp::Ge:
    return opName(OpId::Ge);
  case Cmp::And:
    return opName(OpId::LogicalAnd);
  case Cmp::Or:
    return opName(OpId::LogicalOr);
  }
  return "?";
}

/// x op y, the comparison chosen per element: comparisons build masks,
/// never a model's hot path, and one kernel per comparison (every dtype,
/// the broadcast loops) cost ~40 KB of code each on arm64.
template <typename V> bool compare(Cmp op, V x, V y) {
  switch (op) {
  case Cmp::Eq:
    return x == y;
  case Cmp::Ne:
    return x != y;
  case Cmp::Lt:
    return x < y;
  case Cmp::Le:
    return x <= y;
  case Cmp::Gt:
    return x > y;
  case Cmp::Ge:
    return x >= y;
  case Cmp::And:
  case Cmp::Or:
    break;
  }
  return false;
}

template <typename T> bool applyCmp(Cmp op, T x, T y) {
  if (op == Cmp::And)
    return isNonZero(x) && isNonZero(y);
  if (op == Cmp::Or)
    return isNonZero(x) || isNonZero(y);
  if constexpr (kIsFloat<T>)
    return compare(op, toF32(x), toF32(y));
  else if constexpr (kIsBool<T>)
    return compare(op, x.v, y.v);
  else
    return compare(op, x, y);
}

/// Comparisons: out is Bool. logical_and/or: out is Bool or the input dtype
/// (holding 0/1).
Status compareKernel(const KernelArgs &a, Cmp cmp) {
  const char *op = cmpName(cmp);
  const bool logical = cmp == Cmp::And || cmp == Cmp::Or;
  const Tensor &x = *a.inputs[0], &y = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  if (x.dtype != y.dtype ||
      (out.dtype != DType::Bool && (!logical || out.dtype != x.dtype)))
    return unsupportedDTypes(op, x.dtype, y.dtype, out.dtype);
  Shape s;
  int64_t strides[2][kMaxRank];
  ETLLM_RETURN_IF_ERROR(broadcastPair(op, x, y, s, strides));
  return dispatchAll(x.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
    const T *px = x.ptr<T>(), *py = y.ptr<T>();
    if (out.dtype == DType::Bool) {
      uint8_t *po = out.ptr<uint8_t>();
      forEachIndex<2>(s, strides, [&](int64_t o, const int64_t *off) {
        po[o] = uint8_t(applyCmp<T>(cmp, px[off[0]], py[off[1]]));
      });
    } else {
      T *po = out.ptr<T>();
      forEachIndex<2>(s, strides, [&](int64_t o, const int64_t *off) {
        po[o] = fromBool<T>(applyCmp<T>(cmp, px[off[0]], py[off[1]]));
      });
    }
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// Fill values
//===----------------------------------------------------------------------===//

/// The attribute `v` as an element of type T (full, full_like, masked_fill).
template <typename T> Status fillValue(const char *op, double v, T &result) {
  if constexpr (kIsFloat<T>) {
    result = fromF32<T>(float(v));
  } else if constexpr (kIsBool<T>) {
    result = Bool8{uint8_t(v != 0)};
  } else {
    if (!std::isfinite(v))
      return opError(op, "value " + std::to_string(v) +
                             " cannot be stored in an integer tensor");
    result = saturatingFromFloat<T>(v);
  }
  return Status();
}

Status fill(const char *op, Tensor &out, double value) {
  return dispatchAll(out.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T v;
    ETLLM_RETURN_IF_ERROR(fillValue(op, value, v));
    T *po = out.ptr<T>();
    int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i)
      po[i] = v;
    return Status();
  });
}

/// Copies `in` into `out` (same dtype), giving `out` in's shape.
Status copyInto(const char *op, const Tensor &in, Tensor &out) {
  ETLLM_RETURN_IF_ERROR(checkPlain(op, in));
  if (out.dtype != in.dtype)
    return unsupportedDTypes(op, in.dtype, out.dtype);
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(in)));
  size_t bytes = in.nbytes();
  if (bytes && out.data != in.data)
    std::memmove(out.data, in.data, bytes);
  return Status();
}

/// triu (Upper = true) / tril on the last two dimensions.
Status triangle(const KernelArgs &a, bool upper) {
  const char *op = upper ? opName(OpId::Triu) : opName(OpId::Tril);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkPlain(op, in));
  if (out.dtype != in.dtype)
    return unsupportedDTypes(op, in.dtype, out.dtype);
  if (in.rank < 2)
    return opError(op, "expects rank >= 2, got " + in.shapeString());
  Shape s = Shape::of(in);
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
  const int64_t rows = s.sizes[s.rank - 2], cols = s.sizes[s.rank - 1];
  const int64_t batch = prod(s.sizes, 0, s.rank - 2);
  // Clamping keeps r + diag from overflowing without changing the result.
  int64_t diag = a.ints[0];
  diag = std::max<int64_t>(-rows - 1, std::min<int64_t>(diag, cols + 1));
  const size_t es = elementSize(in.dtype);
  const uint8_t *src = in.ptr<uint8_t>();
  uint8_t *dst = out.ptr<uint8_t>();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      size_t rowOff = size_t((b * rows + r) * cols) * es;
      // Kept columns: [keepBegin, keepEnd).
      int64_t keepBegin = 0, keepEnd = cols;
      if (upper)
        keepBegin = std::max<int64_t>(0, std::min<int64_t>(r + diag, cols));
      else
        keepEnd = std::max<int64_t>(0, std::min<int64_t>(r + diag + 1, cols));
      if (keepEnd < keepBegin)
        keepEnd = keepBegin;
      std::memset(dst + rowOff, 0, size_t(keepBegin) * es);
      if (src != dst)
        std::memmove(dst + rowOff + size_t(keepBegin) * es,
                     src + rowOff + size_t(keepBegin) * es,
                     size_t(keepEnd - keepBegin) * es);
      std::memset(dst + rowOff + size_t(keepEnd) * es, 0,
                  size_t(cols - keepEnd) * es);
    }
  }
  return Status();
}

} // namespace

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

Status kernelRsqrt(const KernelArgs &a) {
  return unaryFloat(a, opName(OpId::Rsqrt),
                    [](float x) { return 1.0f / std::sqrt(x); });
}
Status kernelSqrt(const KernelArgs &a) {
  return unaryFloat(a, opName(OpId::Sqrt),
                    [](float x) { return std::sqrt(x); });
}
Status kernelExp(const KernelArgs &a) {
  return unaryFloat(a, opName(OpId::Exp), [](float x) { return std::exp(x); });
}
Status kernelLog(const KernelArgs &a) {
  return unaryFloat(a, opName(OpId::Log), [](float x) { return std::log(x); });
}
Status kernelCos(const KernelArgs &a) {
  return unaryFloat(a, opName(OpId::Cos), [](float x) { return std::cos(x); });
}
Status kernelSin(const KernelArgs &a) {
  return unaryFloat(a, opName(OpId::Sin), [](float x) { return std::sin(x); });
}
Status kernelTanh(const KernelArgs &a) {
  return unaryFloat(a, opName(OpId::Tanh),
                    [](float x) { return std::tanh(x); });
}
Status kernelSigmoid(const KernelArgs &a) {
  return unaryFloat(a, opName(OpId::Sigmoid), sigmoidF);
}
Status kernelSilu(const KernelArgs &a) {
  return unaryFloat(a, opName(OpId::Silu),
                    [](float x) { return x * sigmoidF(x); });
}
Status kernelRelu(const KernelArgs &a) {
  // NaN stays NaN.
  return unaryFloat(a, opName(OpId::Relu),
                    [](float x) { return x < 0.0f ? 0.0f : x; });
}

Status kernelGelu(const KernelArgs &a) {
  int64_t approx = a.ints[0];
  if (approx == 0)
    return unaryFloat(a, opName(OpId::Gelu), [](float x) {
      const float kSqrtHalf = 0.70710678118654752440f;
      return 0.5f * x * (1.0f + std::erf(x * kSqrtHalf));
    });
  if (approx == 1)
    return unaryFloat(a, opName(OpId::Gelu), [](float x) {
      const float k = 0.79788456080286535588f; // sqrt(2 / pi)
      return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
    });
  return opError(opName(OpId::Gelu),
                 "approximate must be 0 (erf) or 1 (tanh), got " +
                     std::to_string(approx));
}

static Status negAbs(const KernelArgs &a, bool isNeg) {
  const char *op = isNeg ? opName(OpId::Neg) : opName(OpId::Abs);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  if (out.dtype != in.dtype)
    return unsupportedDTypes(op, in.dtype, out.dtype);
  Shape s = Shape::of(in);
  return dispatchNumeric(in.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
    const T *x = in.ptr<T>();
    T *y = out.ptr<T>();
    int64_t n = s.numel();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (kIsFloat<T>) {
        float v = toF32(x[i]);
        y[i] = fromF32<T>(isNeg ? -v : std::fabs(v));
      } else {
        using U = std::make_unsigned_t<T>;
        T neg = T(U(U(0) - U(x[i])));
        y[i] = isNeg || x[i] < 0 ? neg : x[i];
      }
    }
    return Status();
  });
}

Status kernelNeg(const KernelArgs &a) { return negAbs(a, true); }
Status kernelAbs(const KernelArgs &a) { return negAbs(a, false); }

Status kernelLogicalNot(const KernelArgs &a) {
  const char *op = opName(OpId::LogicalNot);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  if (out.dtype != DType::Bool && out.dtype != in.dtype)
    return unsupportedDTypes(op, in.dtype, out.dtype);
  Shape s = Shape::of(in);
  return dispatchAll(in.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
    const T *x = in.ptr<T>();
    int64_t n = s.numel();
    if (out.dtype == DType::Bool) {
      uint8_t *y = out.ptr<uint8_t>();
      for (int64_t i = 0; i < n; ++i)
        y[i] = uint8_t(!isNonZero(x[i]));
    } else {
      T *y = out.ptr<T>();
      for (int64_t i = 0; i < n; ++i)
        y[i] = fromBool<T>(!isNonZero(x[i]));
    }
    return Status();
  });
}

Status kernelCopy(const KernelArgs &a) {
  return copyInto(opName(OpId::Copy), *a.inputs[0], *a.outputs[0]);
}

Status kernelConvert(const KernelArgs &a) {
  const char *op = opName(OpId::Convert);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  if (in.dtype == out.dtype)
    return copyInto(op, in, out);
  ETLLM_RETURN_IF_ERROR(checkPlain(op, in));
  if (out.dtype == DType::QWeight || out.dtype == DType::QAct)
    return unsupportedDTypes(op, in.dtype, out.dtype);
  Shape s = Shape::of(in);
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
  return dispatchAll(in.dtype, op, [&](auto inTag) -> Status {
    using From = typename decltype(inTag)::type;
    return dispatchAll(out.dtype, op, [&](auto outTag) -> Status {
      using To = typename decltype(outTag)::type;
      const From *x = in.ptr<From>();
      To *y = out.ptr<To>();
      int64_t n = s.numel();
      for (int64_t i = 0; i < n; ++i)
        y[i] = convertElement<To, From>(x[i]);
      return Status();
    });
  });
}

Status kernelAdd(const KernelArgs &a) { return binaryKernel<Bin::Add>(a); }
Status kernelSub(const KernelArgs &a) { return binaryKernel<Bin::Sub>(a); }
Status kernelMul(const KernelArgs &a) { return binaryKernel<Bin::Mul>(a); }
Status kernelDiv(const KernelArgs &a) { return binaryKernel<Bin::Div>(a); }
Status kernelPow(const KernelArgs &a) { return binaryKernel<Bin::Pow>(a); }
Status kernelMaximum(const KernelArgs &a) { return binaryKernel<Bin::Max>(a); }
Status kernelMinimum(const KernelArgs &a) { return binaryKernel<Bin::Min>(a); }
Status kernelLogicalAnd(const KernelArgs &a) {
  return compareKernel(a, Cmp::And);
}
Status kernelLogicalOr(const KernelArgs &a) {
  return compareKernel(a, Cmp::Or);
}
Status kernelEq(const KernelArgs &a) { return compareKernel(a, Cmp::Eq); }
Status kernelNe(const KernelArgs &a) { return compareKernel(a, Cmp::Ne); }
Status kernelLt(const KernelArgs &a) { return compareKernel(a, Cmp::Lt); }
Status kernelLe(const KernelArgs &a) { return compareKernel(a, Cmp::Le); }
Status kernelGt(const KernelArgs &a) { return compareKernel(a, Cmp::Gt); }
Status kernelGe(const KernelArgs &a) { return compareKernel(a, Cmp::Ge); }

Status kernelWhere(const KernelArgs &a) {
  const char *op = opName(OpId::Where);
  const Tensor &c = *a.inputs[0], &x = *a.inputs[1], &y = *a.inputs[2];
  Tensor &out = *a.outputs[0];
  if (c.dtype != DType::Bool)
    return opError(op, std::string("condition must be bool, not ") +
                           dtypeName(c.dtype));
  if (x.dtype != y.dtype || out.dtype != x.dtype)
    return unsupportedDTypes(op, x.dtype, y.dtype, out.dtype);
  const Tensor *ts[3] = {&c, &x, &y};
  Shape s;
  ETLLM_RETURN_IF_ERROR(broadcastShapes(op, ts, 3, s));
  int64_t strides[3][kMaxRank];
  for (int k = 0; k < 3; ++k)
    broadcastStrides(*ts[k], s, strides[k]);
  return dispatchBytes(x.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
    const uint8_t *pc = c.ptr<uint8_t>();
    const T *px = x.ptr<T>(), *py = y.ptr<T>();
    T *po = out.ptr<T>();
    forEachIndex<3>(s, strides, [&](int64_t o, const int64_t *off) {
      po[o] = pc[off[0]] ? px[off[1]] : py[off[2]];
    });
    return Status();
  });
}

Status kernelMaskedFill(const KernelArgs &a) {
  const char *op = opName(OpId::MaskedFill);
  const Tensor &x = *a.inputs[0], &m = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  if (m.dtype != DType::Bool)
    return opError(op,
                   std::string("mask must be bool, not ") + dtypeName(m.dtype));
  if (out.dtype != x.dtype)
    return unsupportedDTypes(op, x.dtype, out.dtype);
  Shape s;
  int64_t strides[2][kMaxRank];
  ETLLM_RETURN_IF_ERROR(broadcastPair(op, x, m, s, strides));
  if (!(s == Shape::of(x)))
    return opError(op, "mask " + m.shapeString() +
                           " does not broadcast to the input " +
                           x.shapeString());
  return dispatchAll(x.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T value;
    ETLLM_RETURN_IF_ERROR(fillValue(op, a.floats[0], value));
    ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
    const T *px = x.ptr<T>();
    const uint8_t *pm = m.ptr<uint8_t>();
    T *po = out.ptr<T>();
    forEachIndex<2>(s, strides, [&](int64_t o, const int64_t *off) {
      po[o] = pm[off[1]] ? value : px[off[0]];
    });
    return Status();
  });
}

Status kernelFull(const KernelArgs &a) {
  Tensor &out = *a.outputs[0];
  // The shape is static: the output's own. Re-check it against the capacity.
  ETLLM_RETURN_IF_ERROR(checkPlain(opName(OpId::Full), out));
  ETLLM_RETURN_IF_ERROR(resizeTo(opName(OpId::Full), out, Shape::of(out)));
  return fill(opName(OpId::Full), out, a.floats[0]);
}

Status kernelFullLike(const KernelArgs &a) {
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkPlain(opName(OpId::FullLike), out));
  ETLLM_RETURN_IF_ERROR(checkPlain(opName(OpId::FullLike), *a.inputs[0]));
  // Validate the value before touching the output.
  Status valid =
      dispatchAll(out.dtype, opName(OpId::FullLike), [&](auto tag) -> Status {
        typename decltype(tag)::type v;
        return fillValue(opName(OpId::FullLike), a.floats[0], v);
      });
  ETLLM_RETURN_IF_ERROR(valid);
  ETLLM_RETURN_IF_ERROR(
      resizeTo(opName(OpId::FullLike), out, Shape::of(*a.inputs[0])));
  return fill(opName(OpId::FullLike), out, a.floats[0]);
}

Status kernelArange(const KernelArgs &a) {
  const char *op = opName(OpId::Arange);
  Tensor &out = *a.outputs[0];
  const int64_t start = a.ints[0], end = a.ints[1], step = a.ints[2];
  if (step == 0)
    return opError(op, "step must not be 0");
  // The count in unsigned arithmetic (no overflow for any int64 inputs).
  uint64_t n64 = 0;
  if ((step > 0 && end > start) || (step < 0 && end < start)) {
    const uint64_t span = step > 0 ? uint64_t(end) - uint64_t(start)
                                   : uint64_t(start) - uint64_t(end);
    const uint64_t mag = step > 0 ? uint64_t(step) : uint64_t(-(step + 1)) + 1;
    n64 = (span - 1) / mag + 1;
  }
  if (n64 > (uint64_t(1) << 50))
    return opError(op, "too many elements");
  const int64_t n = int64_t(n64);
  // start + i * step, exact whenever the true value fits in int64 (it does
  // for every i < n).
  auto valueAt = [&](int64_t i) {
    return int64_t(uint64_t(start) + uint64_t(i) * uint64_t(step));
  };
  if (out.dtype == DType::I32 && n > 0) {
    const int64_t last = valueAt(n - 1);
    if (start < INT32_MIN || start > INT32_MAX || last < INT32_MIN ||
        last > INT32_MAX)
      return opError(op, "values do not fit in i32");
  }
  Shape s;
  s.rank = 1;
  s.sizes[0] = n;
  switch (out.dtype) {
  case DType::I64:
  case DType::I32:
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    break;
  default:
    return unsupportedDType(op, out.dtype);
  }
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
  return dispatchNumeric(out.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T *po = out.ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = valueAt(i);
      if constexpr (kIsFloat<T>)
        po[i] = fromF32<T>(float(v));
      else
        po[i] = T(v);
    }
    return Status();
  });
}

Status kernelTriu(const KernelArgs &a) { return triangle(a, true); }
Status kernelTril(const KernelArgs &a) { return triangle(a, false); }

} // namespace etllm::rt::portable
