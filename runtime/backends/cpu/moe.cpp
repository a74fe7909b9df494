//===- moe.cpp - moe over block-packed expert weights ---------------------===//
//
// etllm.moe with stacked expert weights the compiler packed per expert
// (PackedQExpertsLayout: expert e's PackedQBlockLayout [N, K] on its own),
// following the portable reference (runtime/kernels/portable/moe.cpp):
//
//  1. Routing: each token's router logits (f32 dot products summed in the
//     portable kernel's order, so the logits and therefore the selection
//     are the portable kernel's bit for bit on a build without FMA
//     contraction in portable, as on x86-64) and MoeRouting::route, the
//     routing every moe kernel shares. Tokens split over the thread pool.
//  2. The (token, slot) pairs grouped by expert (the same counting sort).
//  3. The input rows prepared once per call: f32 rows padded to whole
//     blocks with their block sums (weight-only: the qdot F32 kernels
//     dequantize in registers), or x quantized once per call by the
//     quantize_dynamic kernel, per block of 32 (MoeActivations::Int8Block,
//     llama.cpp's Q8_0) or per token (Int8Token, ExecuTorch's 8da: the
//     rows padded with their zero points), and its rows gathered per
//     expert.
//  4. gate and up of every selected expert in one parallel loop over the
//     row groups of all of them (qdot.h kernels, one expert's rows at a
//     time), silu(gate) * up (the delegate's silu kernel: portable's
//     formula with a polynomial exp, a few ulp apart), prepared as in 3, and
//     down in a second parallel loop. Only the selected experts' bytes are
//     read: a decode step reads top_k experts.
//  5. Each token's outputs accumulated in ascending expert order, as in
//     portable: acc = acc + y_e * w_e.
//
// Every output element is computed by one kernel call in a fixed order, so
// results do not depend on the thread count. Against portable the experts'
// projections differ by f32 reassociation (weight-only), or by the int8
// rounding of the activations (Int8Block, as the dense qlinears of the
// same recipe); moe_test.cpp holds both to stated tolerances.
//
//===----------------------------------------------------------------------===//
#include "moe.h"

#include "etllm/runtime/moe.h"

#include <algorithm>

namespace etllm::rt::cpu {

Result<QDotExperts> qdotExperts(const Tensor &wt) {
  if (wt.dtype != DType::QWeight || wt.rank != 3)
    return Error("expert weights must be a qweight [E, N, K], got " +
                 wt.shapeString());
  Result<PackedQExpertsLayout> l = PackedQExpertsLayout::compute(
      wt.sizes[0], wt.sizes[1], wt.sizes[2], wt.quant);
  if (!l.ok())
    return l.error();
  if (l->totalBytes > wt.capacity || !wt.data ||
      reinterpret_cast<uintptr_t>(wt.data) % 4 != 0)
    return Error("packed expert weights " + wt.shapeString() + " need " +
                 std::to_string(l->totalBytes) + " 4-byte-aligned bytes");
  QDotExperts w;
  w.l = *l;
  w.base = wt.ptr<uint8_t>();
  return w;
}

Status checkMoeExperts(const MoeExperts &w) {
  const PackedQBlockLayout &g = w.gate.l.expert, &u = w.up.l.expert,
                           &d = w.down.l.expert;
  const int64_t E = w.gate.l.experts;
  if (w.up.l.experts != E || w.down.l.experts != E || u.n != g.n ||
      u.k != g.k || d.n != g.k || d.k != g.n)
    return Error("gate [" + std::to_string(E) + ", " + std::to_string(g.n) +
                 ", " + std::to_string(g.k) + "], up [" +
                 std::to_string(w.up.l.experts) + ", " + std::to_string(u.n) +
                 ", " + std::to_string(u.k) + "] and down [" +
                 std::to_string(w.down.l.experts) + ", " + std::to_string(d.n) +
                 ", " + std::to_string(d.k) +
                 "] are not [E, F, D], [E, F, D], [E, D, F]");
  return Status();
}

namespace {

const char *kOp = opName(OpId::Moe);

/// The QAct parameters of `acts` (int8 per block of 32, symmetric; or per
/// token, asymmetric: the recipes' quantize_dynamic).
QuantInfo actQuant(MoeActivations acts) {
  QuantInfo q;
  q.bits = 8;
  q.perToken = true;
  const bool block = acts == MoeActivations::Int8Block;
  q.symmetric = block;
  q.groupSize = block ? kQActBlock : 0;
  return q;
}

/// The QAct layout of rows x cols for `acts`.
QActLayout actLayout(MoeActivations acts, int64_t rows, int64_t cols) {
  return QActLayout::compute(rows, cols, actQuant(acts));
}

/// The scratch sections of one call (byte offsets, 64-byte aligned).
struct MoePlan {
  int64_t M = 0, K = 0, MK = 0, E = 0, D = 0, F = 0;
  int64_t KBd = 0, KBf = 0;
  size_t routeFloats = 0; // per token
  size_t route = 0, sel = 0, wsel = 0, offsets = 0, tokens = 0, tokW = 0,
         active = 0;
  // Inputs of gate/up: f32 rows + sums, or the quantized x and its gathered
  // rows, scales and sums.
  // (Per token: the gathered rows padded with their zero points, their
  // scales and zero points, and the block sums.)
  size_t xg = 0, xsum = 0, xq = 0, xdx = 0, xzp = 0;
  size_t gg = 0, ug = 0;
  // Input of down: f32 rows + sums, or its QAct (per token: and the
  // padded rows and block sums, as for x).
  size_t hg = 0, hsum = 0, hq = 0, hsx = 0, hzp = 0;
  size_t yg = 0, total = 0;

  MoePlan(int64_t m, int64_t k, const MoeExperts &w) {
    M = m;
    K = k;
    MK = M * K;
    E = w.gate.l.experts;
    D = w.gate.l.expert.k;
    F = w.gate.l.expert.n;
    KBd = (D + kQBlock - 1) / kQBlock;
    KBf = (F + kQBlock - 1) / kQBlock;
    // Logits and MoeRouting::scratchFloats (3 E + groups <= 4 E).
    routeFloats = size_t(5 * E);
    size_t at = 0;
    auto take = [&](size_t bytes) {
      const size_t o = at;
      at = alignUp(at + bytes, 64);
      return o;
    };
    const size_t mk = size_t(MK);
    route = take(size_t(M) * routeFloats * 4);
    sel = take(mk * 4);
    wsel = take(mk * 4);
    offsets = take(size_t(E + 1) * 4);
    tokens = take(mk * 4);
    tokW = take(mk * 4);
    active = take(size_t(E) * 4);
    if (w.acts == MoeActivations::Int8Block) {
      xq = take(actLayout(w.acts, M, D).totalBytes);
      xg = take(mk * size_t(KBd * kQBlock));
      xdx = take(mk * size_t(KBd) * 4);
      xsum = take(mk * size_t(KBd) * 4);
      hq = take(actLayout(w.acts, MK, F).totalBytes);
    } else if (w.acts == MoeActivations::Int8Token) {
      xq = take(actLayout(w.acts, M, D).totalBytes);
      xg = take(mk * size_t(KBd * kQBlock));
      xdx = take(mk * 4);
      xzp = take(mk * 4);
      xsum = take(mk * size_t(KBd) * 4);
      hq = take(actLayout(w.acts, MK, F).totalBytes);
      hg = take(mk * size_t(KBf * kQBlock));
      hsx = take(mk * 4);
      hzp = take(mk * 4);
      hsum = take(mk * size_t(KBf) * 4);
    } else {
      xg = take(mk * size_t(KBd * kQBlock) * 4);
      xsum = take(mk * size_t(KBd) * 4);
      hg = take(mk * size_t(KBf * kQBlock) * 4);
      hsum = take(mk * size_t(KBf) * 4);
    }
    gg = take(mk * size_t(F) * 4);
    ug = take(mk * size_t(F) * 4);
    yg = take(mk * size_t(D) * 4);
    total = at;
  }
};

/// The f32 dot products in portable's order (dotF32: s += a[i] * b[i]
/// from 0), four rows at a time (independent sums: the same results, four
/// times the throughput of one dependency chain).
void routerLogitsGeneric(const float *x, const float *router, int64_t E,
                         int64_t D, float *logits) {
  int64_t e = 0;
  for (; e + 4 <= E; e += 4) {
    const float *r0 = router + e * D, *r1 = r0 + D, *r2 = r1 + D, *r3 = r2 + D;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (int64_t i = 0; i < D; ++i) {
      const float v = x[i];
      s0 += v * r0[i];
      s1 += v * r1[i];
      s2 += v * r2[i];
      s3 += v * r3[i];
    }
    logits[e] = s0;
    logits[e + 1] = s1;
    logits[e + 2] = s2;
    logits[e + 3] = s3;
  }
  for (; e < E; ++e) {
    const float *r = router + e * D;
    float s = 0.0f;
    for (int64_t i = 0; i < D; ++i)
      s += x[i] * r[i];
    logits[e] = s;
  }
}

#if ETLLM_CPU_X86
/// The same sums with one expert per lane, 16 experts at a time: 8 x 8
/// tiles of the router transposed in registers, then per column
/// acc = acc + x[i] * r[., i] (a multiply and an add, no FMA: each lane
/// adds the same rounded products in the same order as dotF32).
ETLLM_CPU_AVX2 void routerLogitsAvx2(const float *x, const float *router,
                                     int64_t E, int64_t D, float *logits) {
  int64_t e = 0;
  for (; e + 16 <= E; e += 16) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= D; i += 8) {
      __m256 a[8], b[8];
      for (int j = 0; j < 8; ++j) {
        a[j] = _mm256_loadu_ps(router + (e + j) * D + i);
        b[j] = _mm256_loadu_ps(router + (e + 8 + j) * D + i);
      }
      avx2::transpose8(a);
      avx2::transpose8(b);
      for (int j = 0; j < 8; ++j) {
        const __m256 v = _mm256_set1_ps(x[i + j]);
        acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(v, a[j]));
        acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(v, b[j]));
      }
    }
    _mm256_storeu_ps(logits + e, acc0);
    _mm256_storeu_ps(logits + e + 8, acc1);
    for (; i < D; ++i)
      for (int j = 0; j < 16; ++j)
        logits[e + j] += x[i] * router[(e + j) * D + i];
  }
  if (e < E)
    routerLogitsGeneric(x, router + e * D, E - e, D, logits + e);
}
#endif

#if ETLLM_CPU_ARM64
/// routerLogitsAvx2 with 4 experts per vector, 8 at a time: 4 x 4 tiles
/// transposed in registers, then acc = acc + x[i] * r[., i] (no FMA), the
/// same sums in the same order as dotF32.
void routerLogitsNeon(const float *x, const float *router, int64_t E, int64_t D,
                      float *logits) {
  int64_t e = 0;
  for (; e + 8 <= E; e += 8) {
    float32x4_t acc[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    int64_t i = 0;
    for (; i + 4 <= D; i += 4) {
      const float32x4_t xv = vld1q_f32(x + i);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const float *r = router + (e + 4 * h) * D + i;
        const float32x4_t r0 = vld1q_f32(r), r1 = vld1q_f32(r + D),
                          r2 = vld1q_f32(r + 2 * D), r3 = vld1q_f32(r + 3 * D);
        // Columns: c[j] = (r0[j], r1[j], r2[j], r3[j]).
        const float32x4_t t01l = vzip1q_f32(r0, r1), t01h = vzip2q_f32(r0, r1);
        const float32x4_t t23l = vzip1q_f32(r2, r3), t23h = vzip2q_f32(r2, r3);
        const float32x4_t c[4] = {
            vreinterpretq_f32_f64(vzip1q_f64(vreinterpretq_f64_f32(t01l),
                                             vreinterpretq_f64_f32(t23l))),
            vreinterpretq_f32_f64(vzip2q_f64(vreinterpretq_f64_f32(t01l),
                                             vreinterpretq_f64_f32(t23l))),
            vreinterpretq_f32_f64(vzip1q_f64(vreinterpretq_f64_f32(t01h),
                                             vreinterpretq_f64_f32(t23h))),
            vreinterpretq_f32_f64(vzip2q_f64(vreinterpretq_f64_f32(t01h),
                                             vreinterpretq_f64_f32(t23h)))};
        acc[h] = vaddq_f32(acc[h], vmulq_laneq_f32(c[0], xv, 0));
        acc[h] = vaddq_f32(acc[h], vmulq_laneq_f32(c[1], xv, 1));
        acc[h] = vaddq_f32(acc[h], vmulq_laneq_f32(c[2], xv, 2));
        acc[h] = vaddq_f32(acc[h], vmulq_laneq_f32(c[3], xv, 3));
      }
    }
    vst1q_f32(logits + e, acc[0]);
    vst1q_f32(logits + e + 4, acc[1]);
    for (; i < D; ++i)
      for (int j = 0; j < 8; ++j)
        logits[e + j] += x[i] * router[(e + j) * D + i];
  }
  if (e < E)
    routerLogitsGeneric(x, router + e * D, E - e, D, logits + e);
}
#endif

/// f32 rows for the weight-only kernels: row i of `src` (cols values) at
/// dst + i * KB * 32, zero-padded, and its block sums.
void padRow(const float *src, int64_t cols, int64_t KB, float *dst,
            float *sums) {
  std::memcpy(dst, src, size_t(cols) * 4);
  std::fill(dst + cols, dst + KB * kQBlock, 0.0f);
  for (int64_t b = 0; b < KB; ++b) {
    float s = 0.0f;
    for (int64_t k = 0; k < kQBlock; ++k)
      s += dst[b * kQBlock + k];
    sums[b] = s;
  }
}

/// An f32 [rows, cols] tensor over `data`.
Tensor f32View(float *data, int64_t rows, int64_t cols) {
  Tensor t;
  t.dtype = DType::F32;
  t.rank = 2;
  t.sizes[0] = rows;
  t.sizes[1] = cols;
  t.data = data;
  t.capacity = size_t(rows * cols) * 4;
  return t;
}

/// Quantizes `rows` x `cols` floats into the QAct of `acts` at `dst`
/// (actLayout(acts, rows, cols)) with the quantize_dynamic kernel.
Status quantizeRows(const KernelArgs &a, Isa isa, MoeActivations acts,
                    const float *src, int64_t rows, int64_t cols,
                    uint8_t *dst) {
  Tensor x = f32View(const_cast<float *>(src), rows, cols);
  Tensor q;
  q.dtype = DType::QAct;
  q.rank = 2;
  q.sizes[0] = rows;
  q.sizes[1] = cols;
  q.quant = actQuant(acts);
  q.data = dst;
  q.capacity = actLayout(acts, rows, cols).totalBytes;
  Tensor *ins[] = {&x}, *outs[] = {&q};
  KernelArgs qa;
  qa.inputs = {ins, 1};
  qa.outputs = {outs, 1};
  qa.ctx = a.ctx;
  bool handled = false;
  ETLLM_RETURN_IF_ERROR(quantizeDynamicKernel(qa, isa, handled));
  if (!handled)
    return kernelError(kOp, "cannot quantize the expert inputs");
  return Status();
}

/// The prepared input rows of one projection, in grouped order.
struct Rows {
  // Weight-only.
  const float *x = nullptr, *xsum = nullptr;
  // Int8: per block (dx) or per token (sx, zp).
  const int8_t *q = nullptr;
  const float *dx = nullptr, *sx = nullptr;
  const int32_t *qsum = nullptr, *zp = nullptr;
  int64_t stride = 0, blocks = 0;
};

/// Per-token rows for the integer kernels: row i of the QAct `qa` (layout
/// l, K values) at index[i] (or i), padded with its zero point to KB * 32
/// values, its scale and zero point, and its block sums (as qlinear
/// prepares per-token rows).
void tokenRows(const uint8_t *qa, const QActLayout &l, int64_t K, int64_t KB,
               const int32_t *index, int64_t rows, int8_t *q, float *sx,
               int32_t *zp, int32_t *sums) {
  const int64_t Kp = KB * kQBlock;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t r = index ? int64_t(index[i]) : i;
    int32_t z;
    std::memcpy(&sx[i], qa + l.scalesOff + size_t(r) * 4, 4);
    std::memcpy(&z, qa + l.zpOff + size_t(r) * 4, 4);
    zp[i] = z;
    int8_t *dst = q + i * Kp;
    std::memcpy(dst, qa + r * K, size_t(K));
    std::memset(dst + K, int(int8_t(z)), size_t(Kp - K));
    for (int64_t b = 0; b < KB; ++b) {
      int32_t sum = 0;
      for (int64_t k = 0; k < kQBlock; ++k)
        sum += dst[b * kQBlock + k];
      sums[i * KB + b] = sum;
    }
  }
}

/// Runs rows [b, b + n) of `in` through row groups [rg0, rg1) of expert
/// weight `w` into y (row stride ldy).
void project(MoeActivations acts, Isa isa, const QDotWeight &w, const Rows &in,
             int64_t b, int64_t n, int64_t rg0, int64_t rg1, float *y,
             int64_t ldy) {
  if (acts != MoeActivations::F32) {
    QDotAct act;
    act.q = in.q + b * in.stride;
    act.stride = in.stride;
    act.xsum = in.qsum + b * in.blocks;
    act.blocks = in.blocks;
    const bool perToken = acts == MoeActivations::Int8Token;
    if (perToken) {
      act.sx = in.sx + b;
      act.zp = in.zp + b;
    } else {
      act.dx = in.dx + b * in.blocks;
    }
    qdotKernel(isa, w.l, perToken)(w, act, n, rg0, rg1, nullptr, y, ldy);
    return;
  }
  QDotF32Fn fn = qdotF32Kernel(isa, w.l);
  if (!fn)
    fn = &qdotF32Generic;
  for (int64_t m = 0; m < n; m += kQDotF32MaxRows) {
    QDotF32Act act;
    act.x = in.x + (b + m) * in.stride;
    act.stride = in.stride;
    act.xsum = in.xsum + (b + m) * in.blocks;
    act.blocks = in.blocks;
    fn(w, act, std::min<int64_t>(kQDotF32MaxRows, n - m), rg0, rg1, nullptr,
       y + m * ldy, ldy);
  }
}

} // namespace

void moeRouterLogits(Isa isa, const float *x, const float *router, int64_t E,
                     int64_t D, float *logits) {
#if ETLLM_CPU_X86
  if (hasAvx2(isa))
    return routerLogitsAvx2(x, router, E, D, logits);
#endif
#if ETLLM_CPU_ARM64
  if (hasNeon(isa))
    return routerLogitsNeon(x, router, E, D, logits);
#endif
  (void)isa;
  routerLogitsGeneric(x, router, E, D, logits);
}

size_t moeScratchBytes(const ExecContext *ctx, int64_t M, int64_t topK,
                       const MoeExperts &w) {
  (void)ctx;
  if (M <= 0 || topK <= 0)
    return 0;
  // A bound from the blob beyond any real call (the caller reserves only
  // sane sizes; moeRun sizes its scratch from the bound tensors).
  if (M > (int64_t(1) << 32))
    return SIZE_MAX;
  return MoePlan(M, std::min(topK, w.gate.l.experts), w).total;
}

Status moeRun(const KernelArgs &a, Isa isa, const MoeExperts &w) {
  if (a.ints.size != 7 || a.floats.size != 2 || a.outputs.size != 1 ||
      !a.outputs[0])
    return kernelError(kOp, "expects 7 ints, 2 floats and 1 output");
  const bool hasBias = a.ints[6] != 0;
  if (a.inputs.size != size_t(5 + hasBias))
    return kernelError(kOp, "has_score_bias does not match the " +
                                std::to_string(a.inputs.size) + " inputs");
  for (size_t i = 0; i < a.inputs.size; ++i)
    if (!a.inputs[i])
      return kernelError(kOp, "input " + std::to_string(i) + " is null");
  const Tensor &x = *a.inputs[0], &router = *a.inputs[1];
  const Tensor *bias = hasBias ? a.inputs[5] : nullptr;
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkStorage(kOp, "input", x));
  ETLLM_RETURN_IF_ERROR(checkStorage(kOp, "router", router));
  const int64_t E = w.gate.l.experts, D = w.gate.l.expert.k,
                F = w.gate.l.expert.n;
  if (x.dtype != DType::F32 || x.rank < 1 || x.sizes[x.rank - 1] != D)
    return kernelError(kOp, "input must be f32 [..., " + std::to_string(D) +
                                "], got " + x.shapeString());
  if (out.dtype != DType::F32)
    return kernelError(kOp, std::string("output must be f32, not ") +
                                dtypeName(out.dtype));
  if (router.dtype != DType::F32 || router.rank != 2 || router.sizes[0] != E ||
      router.sizes[1] != D)
    return kernelError(kOp, "router must be f32 [" + std::to_string(E) + ", " +
                                std::to_string(D) + "], got " +
                                router.shapeString());
  if (bias)
    ETLLM_RETURN_IF_ERROR(checkStorage(kOp, "score_bias", *bias));
  Result<MoeRouting> routing = MoeRouting::parse(a, E, bias);
  if (!routing.ok())
    return routing.error();
  const MoeRouting &r = *routing;
  const int64_t M = prodSizes(x.sizes, 0, x.rank - 1), k = r.topK;
  ETLLM_RETURN_IF_ERROR(resizeLike(kOp, out, x, D));
  if (M == 0)
    return Status();
  if (!a.ctx)
    return kernelError(kOp, "needs an execution context (scratch)");
  const MoePlan p(M, k, w);
  const int64_t MK = p.MK;
  uint8_t *s = static_cast<uint8_t *>(a.ctx->scratch(p.total));
  auto f32At = [&](size_t off) { return reinterpret_cast<float *>(s + off); };
  auto i32At = [&](size_t off) { return reinterpret_cast<int32_t *>(s + off); };
  int32_t *sel = i32At(p.sel), *offsets = i32At(p.offsets);
  int32_t *tokens = i32At(p.tokens), *active = i32At(p.active);
  float *wsel = f32At(p.wsel), *tokW = f32At(p.tokW);
  const float *px = x.ptr<float>(), *pr = router.ptr<float>();
  const float *pb = bias ? bias->ptr<float>() : nullptr;

  // 1. Routing, token by token (f32 activations: the weights need no
  // rounding to the activations' type).
  {
    float *route = f32At(p.route);
    const ExecContext *pctx =
        parallelContext(a.ctx, uint64_t(M) * uint64_t(E) * uint64_t(D));
    parallelForTiles(
        pctx, size_t(M), defaultTile(pctx, size_t(M)), [&](size_t b, size_t e) {
          for (size_t m = b; m < e; ++m) {
            float *logits = route + m * p.routeFloats;
            moeRouterLogits(isa, px + int64_t(m) * D, pr, E, D, logits);
            r.route(logits, pb, logits + E, sel + int64_t(m) * k,
                    wsel + int64_t(m) * k);
          }
        });
  }
  // 2. Group the (token, slot) pairs by expert, tokens in order: expert
  // e's pairs are [offsets[e], offsets[e + 1]).
  r.groupByExpert(sel, wsel, M, offsets, tokens, tokW);
  int64_t numActive = 0;
  uint64_t work = 0;
  for (int64_t e = 0; e < E; ++e)
    if (offsets[e + 1] > offsets[e]) {
      active[numActive++] = int32_t(e);
      work += uint64_t(offsets[e + 1] - offsets[e]);
    }
  work *= 3 * uint64_t(F) * uint64_t(D);
  const ExecContext *pctx = parallelContext(a.ctx, work);

  // 3. The inputs of gate and up, in grouped order.
  Rows xin;
  const int64_t Dp = p.KBd * kQBlock, Fp = p.KBf * kQBlock;
  xin.stride = Dp;
  xin.blocks = p.KBd;
  if (w.acts == MoeActivations::Int8Block) {
    ETLLM_RETURN_IF_ERROR(quantizeRows(a, isa, w.acts, px, M, D, s + p.xq));
    const QActLayout ql = actLayout(w.acts, M, D);
    const uint8_t *qx = s + p.xq;
    int8_t *q = reinterpret_cast<int8_t *>(s + p.xg);
    float *dx = f32At(p.xdx);
    int32_t *qsum = i32At(p.xsum);
    for (int64_t i = 0; i < MK; ++i) {
      const int64_t t = tokens[i];
      std::memcpy(q + i * Dp, qx + t * ql.rowStride, size_t(Dp));
      std::memcpy(dx + i * p.KBd, qx + ql.scalesOff + size_t(t * p.KBd) * 4,
                  size_t(p.KBd) * 4);
      std::memcpy(qsum + i * p.KBd, qx + ql.sumsOff + size_t(t * p.KBd) * 4,
                  size_t(p.KBd) * 4);
    }
    xin.q = q;
    xin.dx = dx;
    xin.qsum = qsum;
  } else if (w.acts == MoeActivations::Int8Token) {
    ETLLM_RETURN_IF_ERROR(quantizeRows(a, isa, w.acts, px, M, D, s + p.xq));
    int8_t *q = reinterpret_cast<int8_t *>(s + p.xg);
    float *sx = f32At(p.xdx);
    int32_t *zp = i32At(p.xzp), *qsum = i32At(p.xsum);
    tokenRows(s + p.xq, actLayout(w.acts, M, D), D, p.KBd, tokens, MK, q, sx,
              zp, qsum);
    xin.q = q;
    xin.sx = sx;
    xin.zp = zp;
    xin.qsum = qsum;
  } else {
    float *xg = f32At(p.xg), *xsum = f32At(p.xsum);
    for (int64_t i = 0; i < MK; ++i)
      padRow(px + int64_t(tokens[i]) * D, D, p.KBd, xg + i * Dp,
             xsum + i * p.KBd);
    xin.x = xg;
    xin.xsum = xsum;
  }

  // 4. gate and up of every selected expert: one loop over all their row
  // groups (part 2 j + 0 is active expert j's gate, 2 j + 1 its up).
  float *gg = f32At(p.gg), *ug = f32At(p.ug), *yg = f32At(p.yg);
  {
    const int64_t RG = w.gate.l.expert.rowGroups;
    const size_t total = size_t(2 * numActive * RG);
    parallelForTiles(
        pctx, total, defaultTile(pctx, total), [&](size_t b, size_t e) {
          for (size_t i = b; i < e;) {
            const int64_t part = int64_t(i) / RG, rg0 = int64_t(i) % RG;
            const int64_t rg1 = std::min<int64_t>(RG, rg0 + int64_t(e - i));
            const int64_t ex = active[part / 2];
            const int64_t gb = offsets[ex], n = offsets[ex + 1] - gb;
            const bool isUp = part % 2 != 0;
            const QDotWeight wt = (isUp ? w.up : w.gate).expert(ex);
            project(w.acts, isa, wt, xin, gb, n, rg0, rg1,
                    (isUp ? ug : gg) + gb * F, F);
            i += size_t(rg1 - rg0);
          }
        });
  }
  // silu(gate) * up (the delegate's silu kernel, in place), then the
  // inputs of down.
  {
    Tensor g = f32View(gg, MK, F);
    Tensor *io[] = {&g};
    KernelArgs sa;
    sa.inputs = {io, 1};
    sa.outputs = {io, 1};
    sa.ctx = a.ctx;
    bool handled = false;
    ETLLM_RETURN_IF_ERROR(siluKernel(sa, isa, handled));
    if (!handled)
      return kernelError(kOp, "cannot run silu on the experts' gates");
    for (int64_t i = 0; i < MK * F; ++i)
      gg[i] = gg[i] * ug[i];
  }
  Rows hin;
  hin.blocks = p.KBf;
  if (w.acts == MoeActivations::Int8Block) {
    ETLLM_RETURN_IF_ERROR(quantizeRows(a, isa, w.acts, gg, MK, F, s + p.hq));
    const QActLayout hl = actLayout(w.acts, MK, F);
    hin.q = reinterpret_cast<const int8_t *>(s + p.hq);
    hin.stride = hl.rowStride;
    hin.dx = reinterpret_cast<const float *>(s + p.hq + hl.scalesOff);
    hin.qsum = reinterpret_cast<const int32_t *>(s + p.hq + hl.sumsOff);
  } else if (w.acts == MoeActivations::Int8Token) {
    ETLLM_RETURN_IF_ERROR(quantizeRows(a, isa, w.acts, gg, MK, F, s + p.hq));
    int8_t *q = reinterpret_cast<int8_t *>(s + p.hg);
    float *sx = f32At(p.hsx);
    int32_t *zp = i32At(p.hzp), *qsum = i32At(p.hsum);
    tokenRows(s + p.hq, actLayout(w.acts, MK, F), F, p.KBf, nullptr, MK, q, sx,
              zp, qsum);
    hin.q = q;
    hin.stride = Fp;
    hin.sx = sx;
    hin.zp = zp;
    hin.qsum = qsum;
  } else {
    float *hg = f32At(p.hg), *hsum = f32At(p.hsum);
    for (int64_t i = 0; i < MK; ++i)
      padRow(gg + i * F, F, p.KBf, hg + i * Fp, hsum + i * p.KBf);
    hin.x = hg;
    hin.xsum = hsum;
    hin.stride = Fp;
  }
  {
    const int64_t RG = w.down.l.expert.rowGroups;
    const size_t total = size_t(numActive * RG);
    parallelForTiles(
        pctx, total, defaultTile(pctx, total), [&](size_t b, size_t e) {
          for (size_t i = b; i < e;) {
            const int64_t part = int64_t(i) / RG, rg0 = int64_t(i) % RG;
            const int64_t rg1 = std::min<int64_t>(RG, rg0 + int64_t(e - i));
            const int64_t ex = active[part];
            const int64_t gb = offsets[ex], n = offsets[ex + 1] - gb;
            project(w.acts, isa, w.down.expert(ex), hin, gb, n, rg0, rg1,
                    yg + gb * D, D);
            i += size_t(rg1 - rg0);
          }
        });
  }
  // 5. Each token's terms in ascending expert order (the pairs are grouped
  // by ascending expert), as portable: acc = acc + (y_e * w_e).
  float *po = out.ptr<float>();
  std::fill(po, po + M * D, 0.0f);
  for (int64_t i = 0; i < MK; ++i) {
    float *dst = po + int64_t(tokens[i]) * D;
    const float *y = yg + i * D;
    const float wt = tokW[i];
    for (int64_t d = 0; d < D; ++d) {
      const float term = y[d] * wt;
      dst[d] = dst[d] + term;
    }
  }
  return Status();
}

} // namespace etllm::rt::cpu
