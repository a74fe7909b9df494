//===- nn.cpp - rms_norm, layer_norm, rope, sdpa, kv_cache_update ---------===//
//
// Level-B operators. Statistics, rotations and attention are computed in
// f32 whatever the element type; results are rounded to the output dtype.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"

#include "etllm/runtime/kv_cache_quant.h"

#include <algorithm>

namespace etllm::rt::portable {
namespace {

/// Checks that `t` is a 1-D float tensor of `n` elements (norm weights).
Status checkVector(const char *op, const char *what, const Tensor &t,
                   int64_t n) {
  if (!isFloat(t.dtype))
    return opError(op, std::string(what) + " must be float, not " +
                           dtypeName(t.dtype));
  if (t.rank != 1 || t.sizes[0] != n)
    return opError(op, std::string(what) + " " + t.shapeString() +
                           " does not match the last dimension " +
                           std::to_string(n));
  return Status();
}

/// Checks that a QAct operand `what` is an int8 KV cache of rank 4
/// (kv_cache_quant.h).
Status checkInt8KvCache(const char *op, const char *what, const Tensor &t) {
  if (!isInt8KvCacheQuant(t.quant))
    return opError(op, std::string(what) +
                           " is a quantized activation but not an int8 KV "
                           "cache (8 bits, symmetric, per token)");
  if (t.rank != 4)
    return opError(op, std::string(what) + " must be [B, Hkv, T, D], got " +
                           t.shapeString());
  return Status();
}

/// The rows of a key or value operand [B, Hkv, T, D] of sdpa as f32: row r
/// is (b * Hkv + hk) * T + j.
template <typename T> struct FloatKvRows {
  const T *p;
  int64_t D;
  float at(int64_t r, int64_t d) const { return toF32(p[r * D + d]); }
};

/// An int8 KV cache's rows dequantized as scale * q (never a division: a
/// zeroed cache, scale 0, reads as zeros). The same f32 values as a float
/// cache holding the dequantized rows, so sdpa gives the same bits.
struct Int8KvRows {
  Int8KvCacheRows c;
  float at(int64_t r, int64_t d) const {
    return c.scales[r] * float(c.q[r * c.cols + d]);
  }
};

/// The checks rms_norm and layer_norm share: float x and out, x of rank
/// >= 1 with rows of D values, a weight (if any) of D values.
Status checkNormInput(const char *op, const Tensor &x, const Tensor &out,
                      const Tensor *w, int64_t &D, int64_t &rows) {
  if (!isFloat(x.dtype) || !isFloat(out.dtype))
    return unsupportedDTypes(op, x.dtype, out.dtype);
  if (x.rank < 1)
    return opError(op, "input must have rank >= 1");
  D = x.dim(-1);
  rows = prod(x.sizes, 0, x.rank - 1);
  if (w)
    ETLLM_RETURN_IF_ERROR(checkVector(op, "weight", *w, D));
  return Status();
}

/// Resizes `out` to x, then calls row(px, py) on each of the `rows` rows of
/// D values: px a row of x, py of out, typed by their float dtypes.
template <typename Row>
Status normRows(const char *op, const Tensor &x, Tensor &out, int64_t rows,
                int64_t D, Row row) {
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(x)));
  return dispatchFloat(x.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return dispatchFloat(out.dtype, op, [&](auto outTag) -> Status {
      using O = typename decltype(outTag)::type;
      for (int64_t r = 0; r < rows; ++r)
        row(x.ptr<T>() + r * D, out.ptr<O>() + r * D);
      return Status();
    });
  });
}

/// The element type a row pointer points to.
template <typename P>
using RowType = std::remove_const_t<std::remove_pointer_t<P>>;

} // namespace

/// y = round_to_x_dtype(x * rsqrt(mean(x^2) + eps)) * (w + weight_offset).
/// Without a weight, y = x * rsqrt(mean(x^2) + eps) (weight_offset unused).
Status kernelRmsNorm(const KernelArgs &a) {
  const char *op = opName(OpId::RmsNorm);
  const Tensor &x = *a.inputs[0];
  const Tensor *w = a.inputs.size > 1 ? a.inputs[1] : nullptr;
  Tensor &out = *a.outputs[0];
  int64_t D, rows;
  ETLLM_RETURN_IF_ERROR(checkNormInput(op, x, out, w, D, rows));
  const float eps = float(a.floats[0]), offset = float(a.floats[1]);
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(
      getScratch(op, a, size_t(w ? D : 0) * sizeof(float), scratch));
  float *wf = static_cast<float *>(scratch);
  if (w) {
    loadFloats(*w, wf);
    for (int64_t i = 0; i < D; ++i)
      wf[i] += offset;
  }
  return normRows(op, x, out, rows, D, [&](const auto *px, auto *py) {
    using T = RowType<decltype(px)>;
    using O = RowType<decltype(py)>;
    double ss = 0.0;
    for (int64_t i = 0; i < D; ++i) {
      double v = toF32(px[i]);
      ss += v * v;
    }
    const float ms = float(ss / double(D));
    const float inv = 1.0f / std::sqrt(ms + eps);
    for (int64_t i = 0; i < D; ++i) {
      // Normalized value rounded to x's dtype (HF LlamaRMSNorm order).
      float h = toF32(fromF32<T>(toF32(px[i]) * inv));
      py[i] = fromF32<O>(w ? h * wf[i] : h);
    }
  });
}

/// y = (x - mean) * rsqrt(var + eps) [* w] [+ b], biased variance, in f32.
Status kernelLayerNorm(const KernelArgs &a) {
  const char *op = opName(OpId::LayerNorm);
  const Tensor &x = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  const bool hasW = a.ints[0] != 0, hasB = a.ints[1] != 0;
  if (a.inputs.size != size_t(1 + hasW + hasB))
    return opError(op, "has_weight/has_bias do not match the " +
                           std::to_string(a.inputs.size) + " inputs");
  const Tensor *w = hasW ? a.inputs[1] : nullptr;
  const Tensor *b = hasB ? a.inputs[hasW ? 2 : 1] : nullptr;
  int64_t D, rows;
  ETLLM_RETURN_IF_ERROR(checkNormInput(op, x, out, w, D, rows));
  if (b)
    ETLLM_RETURN_IF_ERROR(checkVector(op, "bias", *b, D));
  const float eps = float(a.floats[0]);
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(
      getScratch(op, a, size_t(2 * D) * sizeof(float), scratch));
  float *wf = static_cast<float *>(scratch), *bf = wf + D;
  for (int64_t i = 0; i < D; ++i) {
    wf[i] = 1.0f;
    bf[i] = 0.0f;
  }
  if (w)
    loadFloats(*w, wf);
  if (b)
    loadFloats(*b, bf);
  return normRows(op, x, out, rows, D, [&](const auto *px, auto *py) {
    using O = RowType<decltype(py)>;
    double sum = 0.0;
    for (int64_t i = 0; i < D; ++i)
      sum += toF32(px[i]);
    const double meanD = sum / double(D);
    double var = 0.0;
    for (int64_t i = 0; i < D; ++i) {
      double c = toF32(px[i]) - meanD;
      var += c * c;
    }
    const float mean = float(meanD);
    const float inv = 1.0f / std::sqrt(float(var / double(D)) + eps);
    for (int64_t i = 0; i < D; ++i)
      py[i] = fromF32<O>((toF32(px[i]) - mean) * inv * wf[i] + bf[i]);
  });
}

/// Rotary embedding of x [B, H, S, D] by angles positions[s] * inv_freq[i]
/// (f32), cos/sin multiplied by attention_scaling. Positions must be >= 0.
Status kernelRope(const KernelArgs &a) {
  const char *op = opName(OpId::Rope);
  const Tensor &x = *a.inputs[0], &pos = *a.inputs[1], &freq = *a.inputs[2];
  Tensor &out = *a.outputs[0];
  if (!isFloat(x.dtype) || out.dtype != x.dtype)
    return unsupportedDTypes(op, x.dtype, out.dtype);
  if (x.rank != 4)
    return opError(op, "input must be [B, H, S, D], got " + x.shapeString());
  const int64_t B = x.sizes[0], H = x.sizes[1], S = x.sizes[2], D = x.sizes[3];
  if (pos.rank != 1 || pos.sizes[0] != S)
    return opError(op, "positions " + pos.shapeString() +
                           " do not match the sequence length " +
                           std::to_string(S));
  if (!isFloat(freq.dtype) || freq.rank != 1)
    return opError(op, "inv_freq must be a 1-D float tensor, got " +
                           freq.shapeString());
  const int64_t R = freq.sizes[0];
  if (2 * R > D)
    return opError(op, "inv_freq has " + std::to_string(R) +
                           " entries, more than half the head size " +
                           std::to_string(D));
  const int64_t conv = a.ints[0];
  if (conv < 0 || conv > 2)
    return opError(op, "convention must be 0 (rotate_half), 1 "
                       "(interleaved) or 2 (deinterleave_rotate_half), got " +
                           std::to_string(conv));
  if (pos.dtype != DType::I64 && pos.dtype != DType::I32)
    return opError(op, std::string("positions must be i64 or i32, not ") +
                           dtypeName(pos.dtype));
  for (int64_t s = 0; s < S; ++s)
    if (loadIndex(pos, s) < 0)
      return opError(op,
                     "negative position " + std::to_string(loadIndex(pos, s)));
  const float scaling = float(a.floats[0]);
  void *scratch = nullptr;
  // deinterleave_rotate_half reads pairs (2i, 2i + 1) and writes (i, i + R):
  // one row of 2R rotated values is staged, so that the output may be the
  // input (in place).
  ETLLM_RETURN_IF_ERROR(getScratch(
      op, a, size_t(R + 2 * S * R + (conv == 2 ? 2 * R : 0)) * sizeof(float),
      scratch));
  float *fr = static_cast<float *>(scratch);
  float *cosT = fr + R, *sinT = cosT + S * R, *row = sinT + S * R;
  loadFloats(freq, fr);
  for (int64_t s = 0; s < S; ++s) {
    const float p = float(loadIndex(pos, s));
    for (int64_t i = 0; i < R; ++i) {
      const float angle = p * fr[i];
      cosT[s * R + i] = std::cos(angle) * scaling;
      sinT[s * R + i] = std::sin(angle) * scaling;
    }
  }
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(x)));
  return dispatchFloat(x.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (int64_t bh = 0; bh < B * H; ++bh) {
      for (int64_t s = 0; s < S; ++s) {
        const T *px = x.ptr<T>() + (bh * S + s) * D;
        T *py = out.ptr<T>() + (bh * S + s) * D;
        const float *c = cosT + s * R, *sn = sinT + s * R;
        if (conv == 2) {
          for (int64_t i = 0; i < R; ++i) {
            const float x1 = toF32(px[2 * i]), x2 = toF32(px[2 * i + 1]);
            row[i] = x1 * c[i] - x2 * sn[i];
            row[i + R] = x2 * c[i] + x1 * sn[i];
          }
          for (int64_t i = 0; i < 2 * R; ++i)
            py[i] = fromF32<T>(row[i]);
        } else
          for (int64_t i = 0; i < R; ++i) {
            const int64_t i1 = conv == 0 ? i : 2 * i;
            const int64_t i2 = conv == 0 ? i + R : 2 * i + 1;
            const float x1 = toF32(px[i1]), x2 = toF32(px[i2]);
            py[i1] = fromF32<T>(x1 * c[i] - x2 * sn[i]);
            py[i2] = fromF32<T>(x2 * c[i] + x1 * sn[i]);
          }
        if (px != py)
          for (int64_t i = 2 * R; i < D; ++i)
            py[i] = px[i];
      }
    }
    return Status();
  });
}

/// Scaled dot-product attention, see ops.def / EtllmDialect.md. With causal,
/// query i (position p) only visits keys max(0, p - window + 1) <= j <=
/// min(p, T - 1), so decoding costs O(position), not O(T). A query that
/// sees no key (all excluded or masked with -inf) gives zeros.
/// sliding_window is only used together with causal. Key and value may
/// both be int8 KV caches (kv_cache_quant.h), read as scale * q.
Status kernelSdpa(const KernelArgs &a) {
  const char *op = opName(OpId::Sdpa);
  const Tensor &q = *a.inputs[0], &k = *a.inputs[1], &v = *a.inputs[2];
  Tensor &out = *a.outputs[0];
  const bool hasMask = a.ints[0] != 0, hasPos = a.ints[1] != 0;
  const bool causal = a.ints[2] != 0;
  const int64_t window = a.ints[3];
  if (a.inputs.size != size_t(3 + hasMask + hasPos))
    return opError(op, "has_mask/has_positions do not match the " +
                           std::to_string(a.inputs.size) + " inputs");
  const Tensor *mask = hasMask ? a.inputs[3] : nullptr;
  const Tensor *pos = hasPos ? a.inputs[hasMask ? 4 : 3] : nullptr;
  const bool quantKv = k.dtype == DType::QAct;
  if (quantKv != (v.dtype == DType::QAct))
    return opError(op, std::string("key and value must both be quantized or "
                                   "neither, got ") +
                           dtypeName(k.dtype) + " and " + dtypeName(v.dtype));
  if (!isFloat(q.dtype) || !isFloat(out.dtype) ||
      (!quantKv && (k.dtype != q.dtype || v.dtype != q.dtype)))
    return unsupportedDTypes(op, q.dtype, k.dtype, out.dtype);
  if (quantKv) {
    ETLLM_RETURN_IF_ERROR(checkInt8KvCache(op, "key", k));
    ETLLM_RETURN_IF_ERROR(checkInt8KvCache(op, "value", v));
  }
  if (q.rank != 4 || k.rank != 4 || v.rank != 4)
    return opError(op, "q, k, v must have rank 4, got " + q.shapeString() +
                           ", " + k.shapeString() + ", " + v.shapeString());
  const int64_t B = q.sizes[0], H = q.sizes[1], S = q.sizes[2], D = q.sizes[3];
  const int64_t Hkv = k.sizes[1], T = k.sizes[2], Dv = v.sizes[3];
  if (k.sizes[0] != B || k.sizes[3] != D || v.sizes[0] != B ||
      v.sizes[1] != Hkv || v.sizes[2] != T)
    return opError(op, "shapes do not match: q " + q.shapeString() + ", k " +
                           k.shapeString() + ", v " + v.shapeString());
  if (Hkv <= 0 ? H != 0 : H % Hkv != 0)
    return opError(op, std::to_string(H) +
                           " query heads are not a multiple of " +
                           std::to_string(Hkv) + " kv heads");
  if (window < 0)
    return opError(op, "negative sliding window");
  int64_t maskStrides[kMaxRank] = {};
  Shape full;
  full.rank = 4;
  full.sizes[0] = B;
  full.sizes[1] = H;
  full.sizes[2] = S;
  full.sizes[3] = T;
  if (mask) {
    if (!isFloat(mask->dtype))
      return opError(op, std::string("mask must be float, not ") +
                             dtypeName(mask->dtype));
    bool ok = mask->rank <= 4;
    for (int d = 0; ok && d < mask->rank; ++d) {
      int64_t m = mask->sizes[d], f = full.sizes[4 - mask->rank + d];
      ok = m == 1 || m == f;
    }
    if (!ok)
      return opError(op, "mask " + mask->shapeString() +
                             " does not broadcast to " + full.str());
    broadcastStrides(*mask, full, maskStrides);
  }
  if (pos && (pos->rank != 1 || pos->sizes[0] != S ||
              (pos->dtype != DType::I64 && pos->dtype != DType::I32)))
    return opError(op, "positions must be i64/i32 [" + std::to_string(S) +
                           "], got " + pos->shapeString());
  const float scale = float(a.floats[0]), softcap = float(a.floats[1]);
  const size_t rows = size_t(B * H * S);
  const size_t tile = defaultTile(a.ctx, rows, size_t(T) * size_t(D + Dv));
  const size_t perTile = size_t(D + T + Dv);
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(getScratch(
      op, a, numTiles(rows, tile) * perTile * sizeof(float), scratch));
  Shape os = Shape::of(q);
  os.sizes[3] = Dv;
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
  const int64_t group = Hkv > 0 ? H / Hkv : 1;

  // The attention of query type T_ over key and value rows K and V.
  auto attend = [&](auto tag, const auto &K, const auto &V) -> Status {
    using T_ = typename decltype(tag)::type;
    return dispatchFloat(out.dtype, op, [&](auto outTag) -> Status {
      using O = typename decltype(outTag)::type;
      float *scratchAll = static_cast<float *>(scratch);
      parallelForTiles(a.ctx, rows, tile, [&](size_t begin, size_t end) {
        float *qf = scratchAll + (begin / tile) * perTile;
        float *scores = qf + D, *acc = scores + T;
        for (size_t r = begin; r < end; ++r) {
          const int64_t s = int64_t(r) % S, bh = int64_t(r) / S;
          const int64_t b = bh / H, h = bh % H, hk = h / group;
          O *po = out.ptr<O>() + int64_t(r) * Dv;
          // The visible key range [j0, j1).
          int64_t j0 = 0, j1 = T;
          if (causal) {
            const int64_t p = pos ? loadIndex(*pos, s) : s;
            if (p < 0) {
              j1 = 0;
            } else {
              j1 = p >= T ? T : p + 1;
              if (window > 0 && p - window + 1 > 0)
                j0 = p - window + 1;
            }
          }
          toF32Row(q.ptr<T_>() + int64_t(r) * D, qf, D);
          const int64_t row0 = (b * Hkv + hk) * T; // key/value row of j = 0
          float mx = -INFINITY;
          for (int64_t j = j0; j < j1; ++j) {
            float dot = 0.0f;
            for (int64_t d = 0; d < D; ++d)
              dot += qf[d] * K.at(row0 + j, d);
            float sc = scale * dot;
            if (softcap > 0.0f)
              sc = softcap * std::tanh(sc / softcap);
            if (mask) {
              int64_t off = b * maskStrides[0] + h * maskStrides[1] +
                            s * maskStrides[2] + j * maskStrides[3];
              if (mask->dtype == DType::F32)
                sc += mask->ptr<float>()[off];
              else if (mask->dtype == DType::F16)
                sc += toF32(mask->ptr<F16>()[off]);
              else
                sc += toF32(mask->ptr<BF16>()[off]);
            }
            scores[j] = sc;
            mx = std::max(mx, sc);
          }
          for (int64_t d = 0; d < Dv; ++d)
            acc[d] = 0.0f;
          if (mx == -INFINITY) { // No visible key.
            for (int64_t d = 0; d < Dv; ++d)
              po[d] = fromF32<O>(0.0f);
            continue;
          }
          float sum = 0.0f;
          for (int64_t j = j0; j < j1; ++j) {
            const float pj = std::exp(scores[j] - mx);
            sum += pj;
            for (int64_t d = 0; d < Dv; ++d)
              acc[d] += pj * V.at(row0 + j, d);
          }
          for (int64_t d = 0; d < Dv; ++d)
            po[d] = fromF32<O>(acc[d] / sum);
        }
      });
      return Status();
    });
  };
  return dispatchFloat(q.dtype, op, [&](auto tag) -> Status {
    using T_ = typename decltype(tag)::type;
    if (quantKv)
      return attend(tag, Int8KvRows{Int8KvCacheRows::of(k)},
                    Int8KvRows{Int8KvCacheRows::of(v)});
    return attend(tag, FloatKvRows<T_>{k.ptr<T_>(), D},
                  FloatKvRows<T_>{v.ptr<T_>(), Dv});
  });
}

namespace {

/// kv_cache_update of an int8 KV cache [B, Hkv, T, D] by float values
/// [B, Hkv, S, D] along dim 2: each written row (one token of one head) is
/// quantized on its own (quantizeInt8KvRow). Everything is checked before
/// anything is written.
Status int8KvCacheUpdate(const char *op, const Tensor &cache, const Tensor &pos,
                         const Tensor &value, Tensor &out, int64_t dimAttr) {
  ETLLM_RETURN_IF_ERROR(checkInt8KvCache(op, "cache", cache));
  if (out.dtype != DType::QAct || !isInt8KvCacheQuant(out.quant))
    return opError(op, "the result of an int8 KV cache update must be the "
                       "cache's type, not " +
                           std::string(dtypeName(out.dtype)));
  int dim;
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, dimAttr, cache.rank, dim));
  if (dim != 2)
    return opError(op, "an int8 KV cache is updated along dimension 2 (its "
                       "tokens), not " +
                           std::to_string(dimAttr));
  if (!isFloat(value.dtype))
    return opError(op, std::string("the values written into an int8 KV cache "
                                   "must be float, not ") +
                           dtypeName(value.dtype));
  const int64_t B = cache.sizes[0], H = cache.sizes[1], T = cache.sizes[2],
                D = cache.sizes[3];
  if (pos.rank != 1)
    return opError(op, "index must be 1-D, got " + pos.shapeString());
  const int64_t S = pos.sizes[0];
  if (value.rank != 4 || value.sizes[0] != B || value.sizes[1] != H ||
      value.sizes[2] != S || value.sizes[3] != D)
    return opError(op, "source " + value.shapeString() +
                           " does not match the destination " +
                           cache.shapeString() + " with " + std::to_string(S) +
                           " indices along dimension 2");
  ETLLM_RETURN_IF_ERROR(checkIndices(op, pos, T));
  // Copy the cache first unless updating in place (as the float path).
  const void *inData = cache.data;
  const size_t inBytes = cache.nbytes();
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(cache)));
  if (inBytes && out.data != inData)
    std::memmove(out.data, inData, inBytes);
  const Int8KvCacheRows c = Int8KvCacheRows::of(out);
  return dispatchFloat(value.dtype, op, [&](auto tag) -> Status {
    using T_ = typename decltype(tag)::type;
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t s = 0; s < S; ++s) {
        const T_ *src = value.ptr<T_>() + (bh * S + s) * D;
        const int64_t r = bh * T + loadIndex(pos, s);
        c.scales[r] = quantizeInt8KvRow(
            [src](int64_t i) { return toF32(src[i]); }, D, c.q + r * D);
        c.zps[r] = 0;
      }
    return Status();
  });
}

} // namespace

/// kv_cache_update: a float (or integer) cache takes the value's rows as
/// they are (the same element type); an int8 KV cache quantizes them.
Status kernelKvCacheUpdate(const KernelArgs &a) {
  const char *op = opName(OpId::KvCacheUpdate);
  const Tensor &cache = *a.inputs[0], &pos = *a.inputs[1],
               &value = *a.inputs[2];
  if (cache.dtype == DType::QAct)
    return int8KvCacheUpdate(op, cache, pos, value, *a.outputs[0], a.ints[0]);
  // (scatterSlices requires value, cache and result of one element type.)
  return scatterSlices(op, cache, pos, value, *a.outputs[0], a.ints[0]);
}

} // namespace etllm::rt::portable
