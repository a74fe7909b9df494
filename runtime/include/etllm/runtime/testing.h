//===- testing.h - Helpers for kernel tests (test-only) ---------*- C++ -*-===//
//
// Header-only helpers for unit tests of kernels: tensors that own their
// storage (with a chosen capacity), conversions between tensors and plain
// vectors, quantized-weight packing and a one-line kernel call. Not for use
// in the runtime itself (it allocates freely).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_TESTING_H
#define ETLLM_RUNTIME_TESTING_H

#include "etllm/runtime/half.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/tensor.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace etllm::rt::testing {

/// A tensor with its own zero-initialized, 64-byte-aligned storage.
class OwnedTensor {
public:
  OwnedTensor() = default;
  /// A tensor of `shape`; capacityBytes == 0 means exactly the bytes the
  /// shape needs. For quantized dtypes pass `quant`.
  OwnedTensor(DType dtype, std::vector<int64_t> shape, size_t capacityBytes = 0,
              QuantInfo quant = QuantInfo()) {
    t_.dtype = dtype;
    t_.quant = quant;
    t_.rank = int32_t(shape.size());
    for (size_t i = 0; i < shape.size() && i < size_t(kMaxRank); ++i)
      t_.sizes[i] = shape[i];
    Result<size_t> need = storageBytes(dtype, t_.sizes, t_.rank, quant);
    size_t bytes = need.ok() ? *need : 0;
    if (capacityBytes == 0)
      capacityBytes = bytes;
    storage_.reset(new uint8_t[capacityBytes + 64]());
    uintptr_t p = reinterpret_cast<uintptr_t>(storage_.get());
    t_.data = reinterpret_cast<void *>((p + 63) & ~uintptr_t(63));
    t_.capacity = capacityBytes;
  }
  OwnedTensor(OwnedTensor &&) = default;
  OwnedTensor &operator=(OwnedTensor &&) = default;

  Tensor *get() { return &t_; }
  const Tensor *get() const { return &t_; }
  Tensor *operator->() { return &t_; }
  const Tensor *operator->() const { return &t_; }
  Tensor &operator*() { return t_; }
  const Tensor &operator*() const { return t_; }
  operator Tensor *() { return &t_; }

private:
  Tensor t_;
  std::unique_ptr<uint8_t[]> storage_;
};

/// Element i of a non-quantized tensor as double.
inline double getElement(const Tensor &t, int64_t i) {
  switch (t.dtype) {
  case DType::F32:
    return t.ptr<float>()[i];
  case DType::F16:
    return halfToFloat(t.ptr<uint16_t>()[i]);
  case DType::BF16:
    return bf16ToFloat(t.ptr<uint16_t>()[i]);
  case DType::I64:
    return double(t.ptr<int64_t>()[i]);
  case DType::I32:
    return t.ptr<int32_t>()[i];
  case DType::I8:
    return t.ptr<int8_t>()[i];
  case DType::U8:
  case DType::Bool:
    return t.ptr<uint8_t>()[i];
  default:
    return NAN;
  }
}

/// Stores `v` as element i (floats rounded to nearest even, integers
/// truncated, Bool != 0).
inline void setElement(Tensor &t, int64_t i, double v) {
  switch (t.dtype) {
  case DType::F32:
    t.ptr<float>()[i] = float(v);
    break;
  case DType::F16:
    t.ptr<uint16_t>()[i] = floatToHalf(float(v));
    break;
  case DType::BF16:
    t.ptr<uint16_t>()[i] = floatToBf16(float(v));
    break;
  case DType::I64:
    t.ptr<int64_t>()[i] = int64_t(v);
    break;
  case DType::I32:
    t.ptr<int32_t>()[i] = int32_t(v);
    break;
  case DType::I8:
    t.ptr<int8_t>()[i] = int8_t(v);
    break;
  case DType::U8:
    t.ptr<uint8_t>()[i] = uint8_t(v);
    break;
  case DType::Bool:
    t.ptr<uint8_t>()[i] = v != 0;
    break;
  default:
    break;
  }
}

/// A tensor of `shape` holding `values` (converted to dtype).
inline OwnedTensor makeTensor(DType dtype, std::vector<int64_t> shape,
                              const std::vector<double> &values,
                              size_t capacityBytes = 0) {
  OwnedTensor t(dtype, std::move(shape), capacityBytes);
  for (size_t i = 0; i < values.size() && int64_t(i) < t->numel(); ++i)
    setElement(*t, int64_t(i), values[i]);
  return t;
}

/// Exact 64-bit integers (makeTensor goes through double).
inline OwnedTensor makeI64(std::vector<int64_t> shape,
                           const std::vector<int64_t> &values) {
  OwnedTensor t(DType::I64, std::move(shape));
  for (size_t i = 0; i < values.size() && int64_t(i) < t->numel(); ++i)
    t->ptr<int64_t>()[i] = values[i];
  return t;
}

/// The elements of a non-quantized tensor as doubles.
inline std::vector<double> values(const Tensor &t) {
  std::vector<double> v(size_t(t.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = getElement(t, int64_t(i));
  return v;
}

/// The shape of a tensor.
inline std::vector<int64_t> shape(const Tensor &t) {
  return std::vector<int64_t>(t.sizes, t.sizes + t.rank);
}

/// Packs a QWeight [rows, cols] following QWeightLayout: `q` holds the
/// integer values (signed for symmetric: [-8, 7] / [-128, 127]; unsigned for
/// asymmetric: [0, 15] / [0, 255]); `scales` and `offsets` (asymmetric) hold
/// rows * cols / groupSize values, stored as quant.scaleType.
inline OwnedTensor makeQWeight(int64_t rows, int64_t cols,
                               const QuantInfo &quant,
                               const std::vector<int32_t> &q,
                               const std::vector<float> &scales,
                               const std::vector<float> &offsets = {}) {
  OwnedTensor t(DType::QWeight, {rows, cols}, 0, quant);
  Result<QWeightLayout> l = QWeightLayout::compute(rows, cols, quant);
  if (!l.ok())
    return t;
  uint8_t *base = t->ptr<uint8_t>();
  for (int64_t i = 0; i < rows * cols && size_t(i) < q.size(); ++i) {
    if (quant.bits == 8) {
      base[i] = uint8_t(quant.symmetric ? uint8_t(int8_t(q[size_t(i)]))
                                        : uint8_t(q[size_t(i)]));
    } else {
      uint8_t u =
          uint8_t((quant.symmetric ? q[size_t(i)] + 8 : q[size_t(i)]) & 0xf);
      base[i / 2] = uint8_t(i % 2 ? (base[i / 2] & 0x0f) | (u << 4)
                                  : (base[i / 2] & 0xf0) | u);
    }
  }
  auto put = [&](size_t off, const std::vector<float> &v) {
    for (size_t i = 0; i < size_t(rows * l->groups) && i < v.size(); ++i) {
      if (quant.scaleType == DType::F16) {
        uint16_t h = floatToHalf(v[i]);
        std::memcpy(base + off + i * 2, &h, 2);
      } else {
        std::memcpy(base + off + i * 4, &v[i], 4);
      }
    }
  };
  put(l->scalesOff, scales);
  if (!quant.symmetric)
    put(l->offsetsOff, offsets);
  return t;
}

/// Calls a kernel with the given tensors and attributes.
inline Status callKernel(KernelFn fn, ExecContext &ctx,
                         std::vector<Tensor *> inputs,
                         std::vector<Tensor *> outputs,
                         std::vector<int64_t> ints = {},
                         std::vector<double> floats = {}) {
  KernelArgs args;
  args.inputs = {inputs.data(), inputs.size()};
  args.outputs = {outputs.data(), outputs.size()};
  args.ints = {ints.data(), ints.size()};
  args.floats = {floats.data(), floats.size()};
  args.ctx = &ctx;
  return fn(args);
}

/// Runs the portable kernel of `op` with a fresh ExecContext.
inline Status runPortable(OpId op, std::vector<Tensor *> ins,
                          std::vector<Tensor *> outs,
                          std::vector<int64_t> ints = {},
                          std::vector<double> floats = {}) {
  ExecContext ctx;
  return callKernel(portableKernels().get(op), ctx, std::move(ins),
                    std::move(outs), std::move(ints), std::move(floats));
}

/// `n` random floats, uniform in [lo, hi), drawn from `gen`.
inline std::vector<float> randomFloats(size_t n, std::mt19937 &gen,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

} // namespace etllm::rt::testing

#endif // ETLLM_RUNTIME_TESTING_H
