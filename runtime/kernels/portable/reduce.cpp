//===- reduce.cpp - sum, mean, amax, softmax, topk ------------------------===//
//
// Reductions take ints = [keepdim, dim...]; no dims reduces every dimension.
// Float sums and means accumulate in double; amax propagates NaN. softmax
// and topk work along one dimension.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"

#include <algorithm>

namespace etllm::rt::portable {
namespace {

struct ReducePlan {
  Shape in;
  Shape out;
  /// Strides of the output accumulator in the input's index space (0 along
  /// reduced dimensions).
  int64_t accStrides[1][kMaxRank] = {};
  int64_t outNumel = 1;
  int64_t count = 1; // elements per output
};

Status planReduce(const char *op, const Tensor &in, Span<const int64_t> ints,
                  ReducePlan &p) {
  ETLLM_RETURN_IF_ERROR(checkPlain(op, in));
  bool keepdim = ints[0] != 0;
  bool reduced[kMaxRank] = {};
  p.in = Shape::of(in);
  if (ints.size == 1) {
    for (int d = 0; d < in.rank; ++d)
      reduced[d] = true;
  }
  for (size_t i = 1; i < ints.size; ++i) {
    int d;
    // A scalar accepts dim 0 / -1 (and reduces nothing), as in PyTorch.
    ETLLM_RETURN_IF_ERROR(
        normalizeDim(op, ints[i], in.rank == 0 ? 1 : in.rank, d));
    if (in.rank == 0)
      continue;
    if (reduced[d])
      return opError(op, "dimension " + std::to_string(ints[i]) +
                             " is reduced twice");
    reduced[d] = true;
  }
  // The accumulator has the kept dimensions, row-major.
  int64_t acc = 1;
  for (int d = in.rank - 1; d >= 0; --d) {
    if (reduced[d]) {
      p.accStrides[0][d] = 0;
      p.count *= in.sizes[d];
    } else {
      p.accStrides[0][d] = acc;
      acc *= in.sizes[d];
    }
  }
  p.outNumel = acc;
  p.out.rank = 0;
  for (int d = 0; d < in.rank; ++d) {
    if (!reduced[d])
      p.out.sizes[p.out.rank++] = in.sizes[d];
    else if (keepdim)
      p.out.sizes[p.out.rank++] = 1;
  }
  return Status();
}

enum class Red { Sum, Mean, Amax };

template <Red R> Status reduceKernel(const KernelArgs &a) {
  const char *op = R == Red::Sum    ? opName(OpId::Sum)
                   : R == Red::Mean ? opName(OpId::Mean)
                                    : opName(OpId::Amax);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ReducePlan p;
  ETLLM_RETURN_IF_ERROR(planReduce(op, in, a.ints, p));
  // Output dtypes: mean: any float from a float; sum: any float from a
  // float, the same integer type from an integer; amax: the input's.
  bool ok = false;
  if (R == Red::Mean)
    ok = isFloat(in.dtype) && isFloat(out.dtype);
  else if (R == Red::Sum)
    ok = isFloat(in.dtype) ? isFloat(out.dtype)
                           : (isInteger(in.dtype) && out.dtype == in.dtype);
  else
    ok = (isFloat(in.dtype) || isInteger(in.dtype)) && out.dtype == in.dtype;
  if (!ok)
    return unsupportedDTypes(op, in.dtype, out.dtype);
  if (R == Red::Amax && p.count == 0 && p.outNumel > 0)
    return opError(op,
                   "reduction over an empty dimension of " + in.shapeString());
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(
      getScratch(op, a, size_t(p.outNumel) * sizeof(double), scratch));
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, p.out));

  return dispatchNumeric(in.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T *x = in.ptr<T>();
    if constexpr (kIsFloat<T>) {
      if constexpr (R == Red::Amax) {
        float *acc = static_cast<float *>(scratch);
        for (int64_t i = 0; i < p.outNumel; ++i)
          acc[i] = -INFINITY;
        forEachIndex<1>(p.in, p.accStrides, [&](int64_t i, const int64_t *off) {
          float v = toF32(x[i]);
          float &m = acc[off[0]];
          if (v > m || std::isnan(v))
            m = std::isnan(m) ? m : v;
        });
        T *y = out.ptr<T>();
        for (int64_t i = 0; i < p.outNumel; ++i)
          y[i] = fromF32<T>(acc[i]);
      } else {
        double *acc = static_cast<double *>(scratch);
        for (int64_t i = 0; i < p.outNumel; ++i)
          acc[i] = 0.0;
        forEachIndex<1>(p.in, p.accStrides, [&](int64_t i, const int64_t *off) {
          acc[off[0]] += double(toF32(x[i]));
        });
        double div = R == Red::Mean ? double(p.count) : 1.0;
        return dispatchFloat(out.dtype, op, [&](auto outTag) -> Status {
          using O = typename decltype(outTag)::type;
          O *y = out.ptr<O>();
          for (int64_t i = 0; i < p.outNumel; ++i)
            y[i] = fromF32<O>(float(acc[i] / div));
          return Status();
        });
      }
    } else {
      int64_t *acc = static_cast<int64_t *>(scratch);
      const int64_t init =
          R == Red::Amax ? std::numeric_limits<int64_t>::min() : 0;
      for (int64_t i = 0; i < p.outNumel; ++i)
        acc[i] = init;
      forEachIndex<1>(p.in, p.accStrides, [&](int64_t i, const int64_t *off) {
        int64_t &m = acc[off[0]];
        int64_t v = int64_t(x[i]);
        if constexpr (R == Red::Amax)
          m = v > m ? v : m;
        else
          m = int64_t(uint64_t(m) + uint64_t(v));
      });
      T *y = out.ptr<T>();
      for (int64_t i = 0; i < p.outNumel; ++i)
        y[i] = T(acc[i]);
    }
    return Status();
  });
}

} // namespace

Status kernelSum(const KernelArgs &a) { return reduceKernel<Red::Sum>(a); }
Status kernelMean(const KernelArgs &a) { return reduceKernel<Red::Mean>(a); }
Status kernelAmax(const KernelArgs &a) { return reduceKernel<Red::Amax>(a); }

Status kernelSoftmax(const KernelArgs &a) {
  const char *op = opName(OpId::Softmax);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  if (!isFloat(in.dtype) || !isFloat(out.dtype))
    return unsupportedDTypes(op, in.dtype, out.dtype);
  Shape s = Shape::of(in);
  int dim = 0;
  ETLLM_RETURN_IF_ERROR(
      normalizeDim(op, a.ints[0], s.rank == 0 ? 1 : s.rank, dim));
  const int64_t len = s.rank == 0 ? 1 : s.sizes[dim];
  const int64_t outer = s.rank == 0 ? 1 : prod(s.sizes, 0, dim);
  const int64_t inner = s.rank == 0 ? 1 : prod(s.sizes, dim + 1, s.rank);
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(
      getScratch(op, a, size_t(len) * sizeof(float), scratch));
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
  float *e = static_cast<float *>(scratch);
  return dispatchFloat(in.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return dispatchFloat(out.dtype, op, [&](auto outTag) -> Status {
      using O = typename decltype(outTag)::type;
      const T *x = in.ptr<T>();
      O *y = out.ptr<O>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t base = o * len * inner + i;
          for (int64_t j = 0; j < len; ++j)
            e[j] = toF32(x[base + j * inner]);
          softmaxF32(e, e, len);
          for (int64_t j = 0; j < len; ++j)
            y[base + j * inner] = fromF32<O>(e[j]);
        }
      }
      return Status();
    });
  });
}

// ints = [k, dim]. Outputs: the k largest entries along dim (largest first;
// equal entries in index order, NaN the largest) and their i64 indices.
Status kernelTopK(const KernelArgs &a) {
  const char *op = opName(OpId::TopK);
  const Tensor &in = *a.inputs[0];
  Tensor &values = *a.outputs[0];
  Tensor &indices = *a.outputs[1];
  ETLLM_RETURN_IF_ERROR(checkPlain(op, in));
  if (values.dtype != in.dtype || indices.dtype != DType::I64)
    return unsupportedDTypes(op, in.dtype, values.dtype, indices.dtype);
  if (in.rank < 1)
    return opError(op, "the input must have rank >= 1");
  int dim = 0;
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, a.ints[1], in.rank, dim));
  const int64_t k = a.ints[0], len = in.sizes[dim];
  if (k < 1 || k > len)
    return opError(op, "k = " + std::to_string(k) +
                           " is out of range for a dimension of size " +
                           std::to_string(len) + " of " + in.shapeString());
  Shape s = Shape::of(in);
  s.sizes[dim] = k;
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(
      getScratch(op, a, size_t(len) * sizeof(int64_t), scratch));
  ETLLM_RETURN_IF_ERROR(resizeTo(op, values, s));
  ETLLM_RETURN_IF_ERROR(resizeTo(op, indices, s));
  const int64_t outer = prod(in.sizes, 0, dim);
  const int64_t inner = prod(in.sizes, dim + 1, in.rank);
  int64_t *order = static_cast<int64_t *>(scratch);
  return dispatchNumeric(in.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T *x = in.ptr<T>();
    T *y = values.ptr<T>();
    int64_t *idx = indices.ptr<int64_t>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T *row = x + o * len * inner + i;
        // Whether entry p comes before entry q.
        auto before = [&](int64_t p, int64_t q) {
          if constexpr (kIsFloat<T>) {
            float vp = toF32(row[p * inner]), vq = toF32(row[q * inner]);
            if (std::isnan(vp) || std::isnan(vq))
              return std::isnan(vp) && (!std::isnan(vq) || p < q);
            return vp > vq || (vp == vq && p < q);
          } else {
            return row[p * inner] > row[q * inner] ||
                   (row[p * inner] == row[q * inner] && p < q);
          }
        };
        for (int64_t j = 0; j < len; ++j)
          order[j] = j;
        std::partial_sort(order, order + k, order + len, before);
        const int64_t base = o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          y[base + j * inner] = row[order[j] * inner];
          idx[base + j * inner] = order[j];
        }
      }
    }
    return Status();
  });
}

} // namespace etllm::rt::portable
