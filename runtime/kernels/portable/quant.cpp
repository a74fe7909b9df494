//===- quant.cpp - quantize_dynamic, qlinear, qembedding, dequantize ------===//
//
// Quantized weights follow QWeightLayout, quantized activations QActLayout
// (tensor.h) to the letter. The reference semantics are the dequantized
// ones: qlinear computes y[n] = sum_k xhat[k] * what[n, k] + b[n] in f32 with
// the weight rows dequantized exactly as `dequantize` does, so qlinear and
// dequantize + linear agree bit for bit on f32.
//
// quantize_dynamic, per tensor: the one scale and zero point are stored in
// the slot of every row (so a consumer may read row 0's or its own row's).
// Per block (llama.cpp's Q8_0 activations): symmetric, scale = amax / 127
// of each block of 32 values of a row, q in [-127, 127], and the block's
// sum of q stored beside it (the optimized kernels' correction terms).
// Rounding is to nearest, ties to even (std::nearbyint, as torch.round).
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"
#include "qweight.h"

#include "etllm/runtime/qact_params.h"

#include <algorithm>

namespace etllm::rt::portable {
namespace {

Status checkQActBits(const char *op, const Tensor &t) {
  if (t.quant.bits != 0 && t.quant.bits != 8)
    return opError(op, "quantized activations are 8-bit, not " +
                           std::to_string(t.quant.bits) + "-bit");
  if (t.quant.groupSize != 0 &&
      (t.quant.groupSize != kQActBlock || !t.quant.symmetric))
    return opError(op, "quantized activations are per token, per tensor or "
                       "symmetric per block of " +
                           std::to_string(kQActBlock) + ", not groups of " +
                           std::to_string(t.quant.groupSize));
  return Status();
}

/// Scale and zero point of the values x[0, n) (f32).
template <typename T>
void chooseQParams(const T *x, int64_t n, bool symmetric, float &scale,
                   int32_t &zp) {
  float mn = 0.0f, mx = 0.0f, amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    float v = toF32(x[i]);
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    amax = std::max(amax, std::fabs(v));
  }
  qactParamsFromRange(symmetric, mn, mx, amax, scale, zp);
}

/// What quantize_dynamic and quantize_static check first: a float input
/// and an 8-bit QAct result.
Status checkQuantizeTypes(const char *op, const Tensor &x, const Tensor &out) {
  if (!isFloat(x.dtype) || out.dtype != DType::QAct)
    return unsupportedDTypes(op, x.dtype, out.dtype);
  return checkQActBits(op, out);
}

/// The result resized to the input's shape (rank >= 1) and its layout of R
/// rows of K values; `empty` when there is nothing to write.
Status resizeQAct(const char *op, const Tensor &x, Tensor &out, int64_t &R,
                  int64_t &K, QActLayout &l, bool &empty) {
  if (x.rank < 1)
    return opError(op, "input must have rank >= 1");
  K = x.dim(-1);
  R = prod(x.sizes, 0, x.rank - 1);
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(x)));
  empty = K == 0 || R == 0;
  if (!empty)
    l = QActLayout::compute(R, K, out.quant);
  return Status();
}

} // namespace

Status kernelQuantizeDynamic(const KernelArgs &a) {
  const char *op = opName(OpId::QuantizeDynamic);
  const Tensor &x = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkQuantizeTypes(op, x, out));
  const bool sym = out.quant.symmetric, perToken = out.quant.perToken;
  int64_t R, K;
  QActLayout l;
  bool empty;
  ETLLM_RETURN_IF_ERROR(resizeQAct(op, x, out, R, K, l, empty));
  if (empty)
    return Status();
  uint8_t *base = out.ptr<uint8_t>();
  int8_t *qs = reinterpret_cast<int8_t *>(base);
  float *scales = reinterpret_cast<float *>(base + l.scalesOff);
  return dispatchFloat(x.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T *px = x.ptr<T>();
    if (l.perBlock) {
      // Symmetric, one scale per block of kQActBlock values of a row (the
      // last block of a row may be shorter; the row's padding is 0).
      int32_t *sums = reinterpret_cast<int32_t *>(base + l.sumsOff);
      for (int64_t r = 0; r < R; ++r) {
        int8_t *qr = qs + r * l.rowStride;
        for (int64_t b = 0; b < l.blocks; ++b) {
          const int64_t k0 = b * kQActBlock;
          const int64_t n = std::min<int64_t>(kQActBlock, K - k0);
          float scale;
          int32_t zp;
          chooseQParams(px + r * K + k0, n, /*symmetric=*/true, scale, zp);
          int32_t sum = 0;
          for (int64_t k = 0; k < n; ++k) {
            const int32_t q =
                roundClamp(toF32(px[r * K + k0 + k]) / scale, -127, 127);
            qr[k0 + k] = int8_t(q);
            sum += q;
          }
          for (int64_t k = n; k < kQActBlock; ++k)
            qr[k0 + k] = 0;
          scales[r * l.blocks + b] = scale;
          sums[r * l.blocks + b] = sum;
        }
      }
      return Status();
    }
    int32_t *zps = reinterpret_cast<int32_t *>(base + l.zpOff);
    float tScale = 1.0f;
    int32_t tZp = 0;
    if (!perToken)
      chooseQParams(px, R * K, sym, tScale, tZp);
    for (int64_t r = 0; r < R; ++r) {
      float scale = tScale;
      int32_t zp = tZp;
      if (perToken)
        chooseQParams(px + r * K, K, sym, scale, zp);
      scales[r] = scale;
      zps[r] = zp;
      const int32_t lo = sym ? -127 : -128, hi = 127;
      for (int64_t k = 0; k < K; ++k) {
        float v = toF32(px[r * K + k]) / scale;
        // Asymmetric: clamp(round(x / scale) + zp); |zp| <= 128, so the
        // wide pre-clamp cannot overflow.
        int32_t q =
            sym ? roundClamp(v, lo, hi)
                : std::clamp(roundClamp(v, -(1 << 30), 1 << 30) + zp, lo, hi);
        qs[r * K + k] = int8_t(q);
      }
    }
    return Status();
  });
}

/// quantize_static: q = clamp(round_half_even(x / scale), -127, 127) with
/// the scale fixed at export; every row of the per-tensor symmetric layout
/// stores it, with zero point 0.
Status kernelQuantizeStatic(const KernelArgs &a) {
  const char *op = opName(OpId::QuantizeStatic);
  const Tensor &x = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkQuantizeTypes(op, x, out));
  if (out.quant.perToken || !out.quant.symmetric || out.quant.groupSize != 0)
    return opError(op, "the result must be a per-tensor symmetric activation");
  const float scale = float(a.floats[0]);
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return opError(op, "scale " + std::to_string(a.floats[0]) +
                           " is not positive and finite");
  int64_t R, K;
  QActLayout l;
  bool empty;
  ETLLM_RETURN_IF_ERROR(resizeQAct(op, x, out, R, K, l, empty));
  if (empty)
    return Status();
  uint8_t *base = out.ptr<uint8_t>();
  int8_t *qs = reinterpret_cast<int8_t *>(base);
  float *scales = reinterpret_cast<float *>(base + l.scalesOff);
  int32_t *zps = reinterpret_cast<int32_t *>(base + l.zpOff);
  return dispatchFloat(x.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T *px = x.ptr<T>();
    for (int64_t r = 0; r < R; ++r) {
      scales[r] = scale;
      zps[r] = 0;
      for (int64_t k = 0; k < K; ++k)
        qs[r * K + k] =
            int8_t(roundClamp(toF32(px[r * K + k]) / scale, -127, 127));
    }
    return Status();
  });
}

Status kernelQLinear(const KernelArgs &a) {
  const char *op = opName(OpId::QLinear);
  const Tensor &x = *a.inputs[0], &w = *a.inputs[1];
  const Tensor *bias = a.inputs.size > 2 ? a.inputs[2] : nullptr;
  Tensor &out = *a.outputs[0];
  if ((!isFloat(x.dtype) && x.dtype != DType::QAct) || !isFloat(out.dtype))
    return unsupportedDTypes(op, x.dtype, w.dtype, out.dtype);
  QWeightView wv;
  ETLLM_RETURN_IF_ERROR(makeQWeightView(op, w, wv));
  if (w.rank != 2)
    return opError(op, "weight must be [N, K], got " + w.shapeString());
  if (x.rank < 1)
    return opError(op, "input must have rank >= 1");
  const int64_t K = x.dim(-1), N = w.dim(0), M = prod(x.sizes, 0, x.rank - 1);
  if (w.dim(1) != K)
    return opError(op, "weight " + w.shapeString() +
                           " does not match the input " + x.shapeString());
  if (bias && (!isFloat(bias->dtype) || bias->rank != 1 || bias->dim(0) != N))
    return opError(op, "bias " + bias->shapeString() + " does not match " +
                           std::to_string(N) + " output features");
  if (x.dtype == DType::QAct)
    ETLLM_RETURN_IF_ERROR(checkQActBits(op, x));
  Shape os = Shape::of(x);
  os.sizes[os.rank - 1] = N;
  const size_t tile = defaultTile(a.ctx, size_t(N), size_t(M) * size_t(K));
  const size_t xFloats = size_t(M * K), biasFloats = bias ? size_t(N) : 0;
  const size_t rowFloats = numTiles(size_t(N), tile) * size_t(K);
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(getScratch(
      op, a, (xFloats + biasFloats + rowFloats) * sizeof(float), scratch));
  float *xf = static_cast<float *>(scratch);
  float *bf = xf + xFloats;
  float *rows = bf + biasFloats;
  // x-hat: the float input, scale * (q - zp), or per block scale * q.
  if (x.dtype == DType::QAct) {
    if (M > 0 && K > 0) {
      const QActLayout l = QActLayout::compute(M, K, x.quant);
      const uint8_t *base = x.ptr<uint8_t>();
      const int8_t *qs = reinterpret_cast<const int8_t *>(base);
      if (l.perBlock) {
        const float *sc = reinterpret_cast<const float *>(base + l.scalesOff);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t k = 0; k < K; ++k)
            xf[m * K + k] = sc[m * l.blocks + k / kQActBlock] *
                            float(qs[m * l.rowStride + k]);
      }
      for (int64_t m = 0; m < M && !l.perBlock; ++m) {
        const int64_t slot = x.quant.perToken ? m : 0;
        float scale;
        int32_t zp;
        std::memcpy(&scale, base + l.scalesOff + size_t(slot) * 4, 4);
        std::memcpy(&zp, base + l.zpOff + size_t(slot) * 4, 4);
        for (int64_t k = 0; k < K; ++k)
          xf[m * K + k] = scale * float(int32_t(qs[m * K + k]) - zp);
      }
    }
  } else {
    loadFloats(x, xf);
  }
  if (bias)
    loadFloats(*bias, bf);
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
  return dispatchFloat(out.dtype, op, [&](auto tag) -> Status {
    using O = typename decltype(tag)::type;
    linearRows(a.ctx, xf, M, K, N, bias ? bf : nullptr, out.ptr<O>(), rows,
               tile, [&](int64_t n, float *buf) -> const float * {
                 wv.dequantRow(n, buf);
                 return buf;
               });
    return Status();
  });
}

Status kernelQEmbedding(const KernelArgs &a) {
  const char *op = opName(OpId::QEmbedding);
  const Tensor &w = *a.inputs[0], &idx = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  if (!isFloat(out.dtype))
    return unsupportedDTypes(op, w.dtype, out.dtype);
  QWeightView wv;
  ETLLM_RETURN_IF_ERROR(makeQWeightView(op, w, wv));
  if (w.rank != 2)
    return opError(op, "table must be [V, D], got " + w.shapeString());
  if (idx.rank + 1 > kMaxRank)
    return opError(op, "indices have too high a rank");
  const int64_t V = w.dim(0), D = w.dim(1);
  ETLLM_RETURN_IF_ERROR(checkIndices(op, idx, V));
  const size_t n = size_t(idx.numel());
  const size_t tile = defaultTile(a.ctx, n, size_t(D));
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(getScratch(
      op, a, numTiles(n, tile) * size_t(D) * sizeof(float), scratch));
  Shape os = Shape::of(idx);
  os.sizes[os.rank++] = D;
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
  return dispatchFloat(out.dtype, op, [&](auto tag) -> Status {
    using O = typename decltype(tag)::type;
    float *all = static_cast<float *>(scratch);
    parallelForTiles(a.ctx, n, tile, [&](size_t begin, size_t end) {
      float *buf = all + (begin / tile) * size_t(D);
      for (size_t i = begin; i < end; ++i) {
        wv.dequantRow(loadIndex(idx, int64_t(i)), buf);
        O *dst = out.ptr<O>() + int64_t(i) * D;
        for (int64_t d = 0; d < D; ++d)
          dst[d] = fromF32<O>(buf[d]);
      }
    });
    return Status();
  });
}

Status kernelDequantize(const KernelArgs &a) {
  const char *op = opName(OpId::Dequantize);
  const Tensor &w = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  if (!isFloat(out.dtype))
    return unsupportedDTypes(op, w.dtype, out.dtype);
  QWeightView wv;
  ETLLM_RETURN_IF_ERROR(makeQWeightView(op, w, wv));
  const int64_t K = wv.l.cols;
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(getScratch(op, a, size_t(K) * sizeof(float), scratch));
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(w)));
  float *buf = static_cast<float *>(scratch);
  return dispatchFloat(out.dtype, op, [&](auto tag) -> Status {
    using O = typename decltype(tag)::type;
    for (int64_t r = 0; r < wv.l.rows; ++r) {
      wv.dequantRow(r, buf);
      O *dst = out.ptr<O>() + r * K;
      for (int64_t k = 0; k < K; ++k)
        dst[k] = fromF32<O>(buf[k]);
    }
    return Status();
  });
}

} // namespace etllm::rt::portable
