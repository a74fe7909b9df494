//===- moe.cpp - moe: router, routing and only the selected experts -------===//
//
// The reference of etllm.moe. For the tokens of a call it routes every
// token (MoeRouting::route, shared with the optimized kernels), groups the
// tokens by expert, and runs each selected expert once over its group:
// gate and up over the group's rows, silu(gate) * up, down, each weight row
// produced once and used for every token of the group (linearRows, the
// shared core of linear and qlinear). A decode step (one token) therefore
// reads only its top_k experts' weights. The outputs are accumulated per
// token in ascending expert order from 0, in f32:
//   acc = acc + (y_e * w_e)
// which is the level-A masked loop over every expert (an unselected
// expert's term is y_e * 0) with the same f32 operations in the same order
// (moe_test.cpp holds the two to the same bits).
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"
#include "qweight.h"

#include "etllm/runtime/moe.h"

#include <algorithm>

namespace etllm::rt {

Result<MoeRouting> MoeRouting::parse(const KernelArgs &a, int64_t experts,
                                     const Tensor *bias) {
  const char *op = opName(OpId::Moe);
  if (bias &&
      (bias->dtype != DType::F32 || bias->rank != 1 || bias->dim(0) != experts))
    return portable::opError(op, "score_bias must be f32 [" +
                                     std::to_string(experts) + "], got " +
                                     bias->shapeString());
  MoeRouting r;
  r.experts = experts;
  r.topK = a.ints[0];
  r.numGroups = a.ints[3];
  r.topkGroup = a.ints[4];
  r.normTopkProb = a.ints[5] != 0;
  r.scale = float(a.floats[0]);
  r.normEps = float(a.floats[1]);
  if (a.ints[1] < 0 || a.ints[1] > 1)
    return portable::opError(op, "scoring " + std::to_string(a.ints[1]) +
                                     " is not softmax (0) or sigmoid (1)");
  if (a.ints[2] < 0 || a.ints[2] > 2)
    return portable::opError(op, "topk_method " + std::to_string(a.ints[2]) +
                                     " is not 0, 1 or 2");
  r.scoring = Scoring(a.ints[1]);
  r.method = Method(a.ints[2]);
  if (experts < 1)
    return portable::opError(op, "no experts");
  if (r.topK < 1 || r.topK > experts)
    return portable::opError(op, "top_k " + std::to_string(r.topK) +
                                     " is out of range for " +
                                     std::to_string(experts) + " experts");
  if (r.numGroups < 1 || experts % r.numGroups != 0 || r.topkGroup < 1 ||
      r.topkGroup > r.numGroups)
    return portable::opError(
        op, "n_group " + std::to_string(r.numGroups) + " and topk_group " +
                std::to_string(r.topkGroup) + " do not split " +
                std::to_string(experts) + " experts");
  const int64_t per = experts / r.numGroups;
  if (r.method == Method::Greedy && r.numGroups != 1)
    return portable::opError(op, "greedy routing has no groups");
  if (r.method != Method::Greedy && r.topK > r.topkGroup * per)
    return portable::opError(op, "top_k is more than the experts of the "
                                 "topk_group groups");
  if (r.method == Method::NoauxTc && per < 2)
    return portable::opError(op, "noaux_tc needs 2 experts per group");
  if (!(r.scale > 0.0f) || !(r.normEps >= 0.0f))
    return portable::opError(op, "routed_scaling_factor must be > 0 and "
                                 "norm_eps >= 0");
  return r;
}

namespace {
/// Whether entry p comes before entry q in etllm.topk's order: larger
/// first, NaN first, the lower index first among equals.
struct TopkOrder {
  const float *v;
  bool operator()(int32_t p, int32_t q) const {
    float a = v[p], b = v[q];
    if (std::isnan(a) || std::isnan(b))
      return std::isnan(a) && (!std::isnan(b) || p < q);
    return a > b || (a == b && p < q);
  }
};
} // namespace

void MoeRouting::route(const float *logits, const float *bias, float *scratch,
                       int32_t *selected, float *weights) const {
  const int64_t E = experts;
  float *scores = scratch, *choice = scores + E, *groupScore = choice + 2 * E;
  // The index buffer shares the `choice + E` floats (E int32).
  int32_t *order = reinterpret_cast<int32_t *>(choice + E);
  if (scoring == Scoring::Softmax) {
    // As the softmax kernel.
    portable::softmaxF32(logits, scores, E);
  } else {
    for (int64_t e = 0; e < E; ++e)
      scores[e] = 1.0f / (1.0f + std::exp(-logits[e]));
  }
  for (int64_t e = 0; e < E; ++e)
    choice[e] = bias ? scores[e] + bias[e] : scores[e];
  if (method != Method::Greedy) {
    // Rank the groups, keep topkGroup of them, the others' choices are 0
    // (the modeling code's masked_fill(~mask, 0.0)).
    const int64_t G = numGroups, per = E / G;
    for (int64_t g = 0; g < G; ++g) {
      const float *c = choice + g * per;
      for (int64_t j = 0; j < per; ++j)
        order[j] = int32_t(j);
      if (method == Method::GroupLimitedGreedy) {
        std::partial_sort(order, order + 1, order + per, TopkOrder{c});
        groupScore[g] = c[order[0]];
      } else {
        std::partial_sort(order, order + 2, order + per, TopkOrder{c});
        groupScore[g] = 0.0f + c[order[0]] + c[order[1]];
      }
    }
    for (int64_t g = 0; g < G; ++g)
      order[g] = int32_t(g);
    std::partial_sort(order, order + topkGroup, order + G,
                      TopkOrder{groupScore});
    for (int64_t g = 0; g < G; ++g) {
      bool kept =
          std::find(order, order + topkGroup, int32_t(g)) != order + topkGroup;
      if (!kept)
        for (int64_t j = 0; j < per; ++j)
          choice[g * per + j] = 0.0f;
    }
  }
  for (int64_t e = 0; e < E; ++e)
    order[e] = int32_t(e);
  std::partial_sort(order, order + topK, order + E, TopkOrder{choice});
  float sum = 0.0f;
  for (int64_t j = 0; j < topK; ++j) {
    selected[j] = order[j];
    // Greedy without a bias: the top-k values themselves; otherwise the
    // unbiased scores gathered at the selection (DeepSeek-V3's
    // scores.gather(1, topk_idx); V2's masked scores are the scores).
    weights[j] = scores[order[j]];
    sum += weights[j];
  }
  if (normTopkProb) {
    if (normEps > 0.0f)
      sum = sum + normEps;
    for (int64_t j = 0; j < topK; ++j)
      weights[j] = weights[j] / sum;
  }
  if (scale != 1.0f)
    for (int64_t j = 0; j < topK; ++j)
      weights[j] = weights[j] * scale;
}

void MoeRouting::groupByExpert(const int32_t *selected, const float *weights,
                               int64_t tokens, int32_t *offsets,
                               int32_t *tokenOf, float *weightOf) const {
  const int64_t E = experts, k = topK;
  std::fill(offsets, offsets + E + 1, 0);
  for (int64_t i = 0; i < tokens * k; ++i)
    ++offsets[selected[i] + 1];
  for (int64_t e = 0; e < E; ++e)
    offsets[e + 1] += offsets[e];
  for (int64_t m = 0; m < tokens; ++m)
    for (int64_t j = 0; j < k; ++j) {
      // Within a token the k experts are distinct, so slots fill in order.
      const int32_t e = selected[m * k + j];
      const int32_t at = offsets[e]++;
      tokenOf[at] = int32_t(m);
      weightOf[at] = weights[m * k + j];
    }
  for (int64_t e = E; e > 0; --e)
    offsets[e] = offsets[e - 1];
  offsets[0] = 0;
}

} // namespace etllm::rt

namespace etllm::rt::portable {
namespace {

/// Row access to one stacked expert weight [E, N, K] (float or QWeight).
struct ExpertWeight {
  const Tensor *t = nullptr;
  QWeightView q;
  int64_t N = 0, K = 0;

  Status init(const char *op, const char *name, const Tensor &w, int64_t E,
              int64_t n, int64_t k) {
    t = &w;
    N = n;
    K = k;
    if (w.rank != 3 || w.dim(0) != E || w.dim(1) != n || w.dim(2) != k)
      return opError(op, std::string(name) + " must be [" + std::to_string(E) +
                             ", " + std::to_string(n) + ", " +
                             std::to_string(k) + "], got " + w.shapeString());
    if (w.dtype == DType::QWeight)
      return makeQWeightView(op, w, q);
    if (!isFloat(w.dtype))
      return unsupportedDType(op, w.dtype);
    return Status();
  }

  /// Row n of expert e as f32 (in `buf`, K floats, unless already f32).
  const float *row(int64_t e, int64_t n, float *buf) const {
    const int64_t r = e * N + n;
    switch (t->dtype) {
    case DType::F32:
      return t->ptr<float>() + r * K;
    case DType::F16:
      toF32Row(t->ptr<F16>() + r * K, buf, K);
      return buf;
    case DType::BF16:
      toF32Row(t->ptr<BF16>() + r * K, buf, K);
      return buf;
    default:
      q.dequantRow(r, buf);
      return buf;
    }
  }
};

} // namespace

Status kernelMoe(const KernelArgs &a) {
  const char *op = opName(OpId::Moe);
  const bool hasBias = a.ints[6] != 0;
  if (a.inputs.size != size_t(5 + hasBias))
    return opError(op, "has_score_bias does not match the " +
                           std::to_string(a.inputs.size) + " inputs");
  const Tensor &x = *a.inputs[0], &router = *a.inputs[1];
  const Tensor *bias = hasBias ? a.inputs[5] : nullptr;
  Tensor &out = *a.outputs[0];
  if (!isFloat(x.dtype) || out.dtype != x.dtype || !isFloat(router.dtype))
    return unsupportedDTypes(op, x.dtype, router.dtype, out.dtype);
  if (x.rank < 1)
    return opError(op, "input must have rank >= 1");
  const int64_t D = x.dim(-1), M = prod(x.sizes, 0, x.rank - 1);
  if (router.rank != 2 || router.dim(1) != D || router.dim(0) < 1)
    return opError(op, "router must be [experts, " + std::to_string(D) +
                           "], got " + router.shapeString());
  const int64_t E = router.dim(0);
  const Tensor &gt = *a.inputs[2];
  if (gt.rank != 3)
    return opError(op, "gate must be [E, F, D], got " + gt.shapeString());
  const int64_t F = gt.dim(1);
  ExpertWeight gate, up, down;
  ETLLM_RETURN_IF_ERROR(gate.init(op, "gate", gt, E, F, D));
  ETLLM_RETURN_IF_ERROR(up.init(op, "up", *a.inputs[3], E, F, D));
  ETLLM_RETURN_IF_ERROR(down.init(op, "down", *a.inputs[4], E, D, F));
  Result<MoeRouting> routing = MoeRouting::parse(a, E, bias);
  if (!routing.ok())
    return routing.status();
  const MoeRouting &r = *routing;
  const int64_t k = r.topK, MK = M * k;

  // Scratch, in floats: the input and the accumulator [M, D], the router
  // in f32 [E, D], the logits [E] and routing scratch, the selection and
  // weights [M, k] (and, as int32, the token lists), one group's rows
  // [MK, D] in and out, gate and up [MK, F], and a weight row per tile.
  // At most as many tiles as defaultTile makes without a work estimate.
  auto maxRowFloats = [&](int64_t N, int64_t K) {
    return numTiles(size_t(N), defaultTile(a.ctx, size_t(N))) * size_t(K);
  };
  const size_t rowFloats = std::max(maxRowFloats(F, D), maxRowFloats(D, F));
  const size_t sizes[] = {size_t(M * D),
                          size_t(M * D),
                          size_t(E * D),
                          size_t(E),
                          size_t(r.scratchFloats()),
                          size_t(MK),
                          size_t(MK), // selected (i32), w
                          size_t(E + 1),
                          size_t(MK), // offsets, tokens
                          size_t(MK),
                          size_t(MK * D),
                          size_t(MK * D),
                          size_t(MK * F),
                          size_t(MK * F),
                          rowFloats};
  size_t total = 0;
  for (size_t s : sizes)
    total += s;
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(getScratch(op, a, total * sizeof(float), scratch));
  float *p = static_cast<float *>(scratch);
  auto take = [&](size_t n) {
    float *q = p;
    p += n;
    return q;
  };
  float *xf = take(sizes[0]), *acc = take(sizes[1]), *rf = take(sizes[2]);
  float *logits = take(sizes[3]), *rs = take(sizes[4]);
  int32_t *sel = reinterpret_cast<int32_t *>(take(sizes[5]));
  float *wsel = take(sizes[6]);
  int32_t *offsets = reinterpret_cast<int32_t *>(take(sizes[7]));
  int32_t *tokens = reinterpret_cast<int32_t *>(take(sizes[8]));
  float *tokW = take(sizes[9]);
  float *xg = take(sizes[10]), *yg = take(sizes[11]);
  float *gg = take(sizes[12]), *ug = take(sizes[13]), *rows = take(sizes[14]);

  loadFloats(x, xf);
  loadFloats(router, rf);
  const float *bf = bias ? bias->ptr<float>() : nullptr;
  // The weights are rounded to the activations' type, as the level-A
  // graph's routing_weights.to(hidden_states.dtype).
  auto roundToX = [&](float v) -> float {
    if (x.dtype == DType::F16)
      return toF32(fromF32<F16>(v));
    if (x.dtype == DType::BF16)
      return toF32(fromF32<BF16>(v));
    return v;
  };
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t e = 0; e < E; ++e)
      logits[e] = dotF32(xf + m * D, rf + e * D, D);
    r.route(logits, bf, rs, sel + m * k, wsel + m * k);
    for (int64_t j = 0; j < k; ++j)
      wsel[m * k + j] = roundToX(wsel[m * k + j]);
  }
  r.groupByExpert(sel, wsel, M, offsets, tokens, tokW);

  std::fill(acc, acc + M * D, 0.0f);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t b = offsets[e], n = offsets[e + 1] - b;
    if (n == 0)
      continue; // never read: this expert's weights stay untouched
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(xg + i * D, xf + int64_t(tokens[b + i]) * D,
                  size_t(D) * sizeof(float));
    auto proj = [&](const ExpertWeight &w, const float *in, float *res) {
      const size_t t = defaultTile(a.ctx, size_t(w.N), size_t(n * w.K));
      linearRows(a.ctx, in, n, w.K, w.N, nullptr, res, rows, t,
                 [&](int64_t row, float *buf) { return w.row(e, row, buf); });
    };
    proj(gate, xg, gg);
    proj(up, xg, ug);
    for (int64_t i = 0; i < n * F; ++i) {
      const float g = gg[i];
      const float s = g * (1.0f / (1.0f + std::exp(-g))); // silu kernel's
      gg[i] = s * ug[i];
    }
    proj(down, gg, yg);
    for (int64_t i = 0; i < n; ++i) {
      float *dst = acc + int64_t(tokens[b + i]) * D;
      const float *y = yg + i * D;
      const float w = tokW[b + i];
      for (int64_t d = 0; d < D; ++d) {
        const float term = y[d] * w;
        dst[d] = dst[d] + term;
      }
    }
  }
  // Experts go in ascending order, so each token's terms were added in
  // ascending expert order, as in the level-A loop.
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(x)));
  return dispatchFloat(out.dtype, op, [&](auto tag) -> Status {
    using O = typename decltype(tag)::type;
    O *dst = out.ptr<O>();
    for (int64_t i = 0; i < M * D; ++i)
      dst[i] = fromF32<O>(acc[i]);
    return Status();
  });
}

} // namespace etllm::rt::portable
