//===- moe_test.cpp - moe against the level-A masked loop
//------------------===//
//
// The reference below is the level-A graph of lib/Import/Blocks/Moe.cpp
// written out in scalar code: the router linear, softmax or sigmoid, the
// modeling code's top-k (with DeepSeek's groups), and *every* expert for
// every token, weighted by sum(where(selected == e, weights, 0)) and added
// in expert order. The kernel computes only the selected experts; on f32
// the two agree bit for bit (the same dot-product order), and each shape
// below is odd on purpose (odd expert counts, top_k = 1 and top_k = E,
// token counts that divide nothing).
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

#include <algorithm>
#include <numeric>

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

struct Case {
  int64_t M, D, F, E, k;
  int64_t scoring = 0, method = 0, groups = 1, topkGroup = 1;
  bool norm = false, bias = false;
  double scale = 1.0, eps = 0.0;
};

float dot(const float *a, const float *b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

/// torch.topk's indices (largest first, lower index first among equals).
std::vector<int64_t> topk(const std::vector<float> &v, int64_t k) {
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  idx.resize(size_t(k));
  return idx;
}

/// The level-A masked loop.
std::vector<float> reference(const Case &c, const std::vector<float> &x,
                             const std::vector<float> &router,
                             const std::vector<float> &gate,
                             const std::vector<float> &up,
                             const std::vector<float> &down,
                             const std::vector<float> &bias) {
  const int64_t D = c.D, F = c.F, E = c.E;
  std::vector<float> out(size_t(c.M * D), 0.0f);
  for (int64_t m = 0; m < c.M; ++m) {
    const float *xm = x.data() + m * D;
    std::vector<float> s(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e)
      s[e] = dot(xm, router.data() + e * D, D);
    if (c.scoring == 0) {
      float mx = *std::max_element(s.begin(), s.end()), sum = 0.0f;
      for (float &v : s) {
        v = std::exp(v - mx);
        sum += v;
      }
      for (float &v : s)
        v = v / sum;
    } else {
      for (float &v : s)
        v = 1.0f / (1.0f + std::exp(-v));
    }
    std::vector<float> choice = s;
    if (c.bias)
      for (int64_t e = 0; e < E; ++e)
        choice[e] = s[e] + bias[e];
    if (c.method != 0) {
      const int64_t per = E / c.groups;
      std::vector<float> gs(static_cast<size_t>(c.groups));
      for (int64_t g = 0; g < c.groups; ++g) {
        std::vector<float> grp(choice.begin() + g * per,
                               choice.begin() + (g + 1) * per);
        std::vector<int64_t> t = topk(grp, c.method == 1 ? 1 : 2);
        gs[g] = c.method == 1 ? grp[t[0]] : 0.0f + grp[t[0]] + grp[t[1]];
      }
      std::vector<int64_t> kept = topk(gs, c.topkGroup);
      for (int64_t g = 0; g < c.groups; ++g)
        if (std::find(kept.begin(), kept.end(), g) == kept.end())
          for (int64_t j = 0; j < per; ++j)
            choice[g * per + j] = 0.0f;
    }
    std::vector<int64_t> sel = topk(choice, c.k);
    std::vector<float> w(static_cast<size_t>(c.k));
    float sum = 0.0f;
    for (int64_t j = 0; j < c.k; ++j) {
      w[j] = s[sel[j]];
      sum += w[j];
    }
    if (c.norm) {
      if (c.eps > 0)
        sum = sum + float(c.eps);
      for (float &v : w)
        v = v / sum;
    }
    if (c.scale != 1.0)
      for (float &v : w)
        v = v * float(c.scale);
    float *o = out.data() + m * D;
    for (int64_t e = 0; e < E; ++e) {
      float we = 0.0f;
      for (int64_t j = 0; j < c.k; ++j)
        we = we + (sel[j] == e ? w[j] : 0.0f);
      std::vector<float> h(static_cast<size_t>(F));
      for (int64_t f = 0; f < F; ++f) {
        float g = dot(xm, gate.data() + (e * F + f) * D, D);
        float u = dot(xm, up.data() + (e * F + f) * D, D);
        h[f] = g * (1.0f / (1.0f + std::exp(-g))) * u;
      }
      for (int64_t d = 0; d < D; ++d) {
        float y = dot(h.data(), down.data() + (e * D + d) * F, F);
        o[d] = o[d] + y * we;
      }
    }
  }
  return out;
}

std::vector<float> asFloats(const std::vector<double> &v) {
  return std::vector<float>(v.begin(), v.end());
}

std::vector<int64_t> ints(const Case &c) {
  return {c.k, c.scoring, c.method, c.groups, c.topkGroup, c.norm, c.bias};
}

void checkAgainstReference(const Case &c, unsigned seed,
                           ExecContext *ctx = nullptr) {
  SCOPED_TRACE("M=" + std::to_string(c.M) + " E=" + std::to_string(c.E) +
               " k=" + std::to_string(c.k));
  auto xv = randomValues(size_t(c.M * c.D), seed);
  auto rv = randomValues(size_t(c.E * c.D), seed + 1, -2, 2);
  auto gv = randomValues(size_t(c.E * c.F * c.D), seed + 2);
  auto uv = randomValues(size_t(c.E * c.F * c.D), seed + 3);
  auto dv = randomValues(size_t(c.E * c.D * c.F), seed + 4);
  auto bv = randomValues(size_t(c.E), seed + 5, -0.3, 0.3);
  auto x = makeTensor(DType::F32, {1, c.M, c.D}, xv);
  auto router = makeTensor(DType::F32, {c.E, c.D}, rv);
  auto gate = makeTensor(DType::F32, {c.E, c.F, c.D}, gv);
  auto up = makeTensor(DType::F32, {c.E, c.F, c.D}, uv);
  auto down = makeTensor(DType::F32, {c.E, c.D, c.F}, dv);
  auto bias = makeTensor(DType::F32, {c.E}, bv);
  OwnedTensor y(DType::F32, {1, c.M, c.D});
  std::vector<Tensor *> ins = {x, router, gate, up, down};
  if (c.bias)
    ins.push_back(bias);
  ASSERT_OK(run(OpId::Moe, ins, {y}, ints(c), {c.scale, c.eps}, ctx));
  EXPECT_SHAPE(*y, 1, c.M, c.D);
  std::vector<float> want =
      reference(c, asFloats(xv), asFloats(rv), asFloats(gv), asFloats(uv),
                asFloats(dv), asFloats(bv));
  // Bit for bit: the same products summed in the same order.
  EXPECT_VALUES(*y, std::vector<double>(want.begin(), want.end()), 0);
}

TEST(Moe, SoftmaxTopKMatchesTheMaskedLoop) {
  checkAgainstReference({7, 6, 5, 5, 2, 0, 0, 1, 1, true}, 1);
  checkAgainstReference({7, 6, 5, 5, 2, 0, 0, 1, 1, false}, 2);
  checkAgainstReference({1, 8, 3, 3, 1}, 3); // decode, top_k = 1
  checkAgainstReference({9, 4, 7, 4, 4, 0, 0, 1, 1, true}, 4); // top_k = E
  checkAgainstReference({3, 5, 2, 1, 1}, 5);                   // one expert
  checkAgainstReference({13, 6, 5, 7, 3, 0, 0, 1, 1, true}, 6);
}

TEST(Moe, ThreadedEqualsSerial) {
  ThreadedContext t;
  checkAgainstReference({11, 12, 9, 5, 2, 0, 0, 1, 1, true}, 7, &t.ctx);
}

TEST(Moe, SigmoidBiasGroupsScale) {
  // DeepSeek-V3: sigmoid, biased choice, groups by their two best, the
  // unbiased weights renormalized with eps and scaled.
  Case v3{5, 6, 3, 8, 3, 1, 2, 4, 2, true, true, 2.5, 1e-20};
  checkAgainstReference(v3, 11);
  // DeepSeek-V2: softmax, groups by their best, not renormalized, scaled.
  Case v2{6, 4, 3, 6, 2, 0, 1, 3, 2, false, false, 16.0};
  checkAgainstReference(v2, 12);
  // A bias with greedy selection (no groups).
  Case b{4, 4, 3, 5, 2, 1, 0, 1, 1, true, true};
  checkAgainstReference(b, 13);
}

TEST(Moe, QuantizedExpertsMatchDequantizedOnes) {
  // int4 group 4 experts: the kernel reads each selected expert's rows as
  // `dequantize` does, so it equals the float kernel on the dequantized
  // weights.
  const int64_t M = 5, D = 8, F = 4, E = 3, k = 2;
  QuantInfo q;
  q.bits = 4;
  q.groupSize = 4;
  q.symmetric = true;
  q.scaleType = DType::F16;
  auto qw = [&](int64_t rows, int64_t cols, unsigned seed) {
    std::mt19937 gen(seed);
    std::vector<int32_t> vals(size_t(rows * cols));
    for (int32_t &v : vals)
      v = int32_t(gen() % 16) - 8;
    std::vector<float> scales(size_t(rows * cols / 4));
    for (size_t i = 0; i < scales.size(); ++i)
      scales[i] = 0.125f * float(1 + i % 5);
    OwnedTensor t = makeQWeight(rows, cols, q, vals, scales);
    t->rank = 3;
    t->sizes[0] = E;
    t->sizes[1] = rows / E;
    t->sizes[2] = cols;
    return t;
  };
  auto gq = qw(E * F, D, 1), uq = qw(E * F, D, 2), dq = qw(E * D, F, 3);
  auto deq = [&](OwnedTensor &w, int64_t n, int64_t kk) {
    OwnedTensor f(DType::F32, {E, n, kk});
    EXPECT_OK(run(OpId::Dequantize, {w}, {f}));
    return f;
  };
  auto gf = deq(gq, F, D), uf = deq(uq, F, D), df = deq(dq, D, F);
  auto x = makeTensor(DType::F32, {M, D}, randomValues(size_t(M * D), 9));
  auto router =
      makeTensor(DType::F32, {E, D}, randomValues(size_t(E * D), 10, -2, 2));
  OwnedTensor yq(DType::F32, {M, D}), yf(DType::F32, {M, D});
  std::vector<int64_t> attrs = {k, 0, 0, 1, 1, 1, 0};
  ASSERT_OK(run(OpId::Moe, {x, router, gq, uq, dq}, {yq}, attrs, {1.0, 0.0}));
  ASSERT_OK(run(OpId::Moe, {x, router, gf, uf, df}, {yf}, attrs, {1.0, 0.0}));
  EXPECT_VALUES(*yq, values(*yf), 0);
}

TEST(Moe, HalfInputRoundsLikeTheGraph) {
  // bf16 activations and weights: the result is the f32 accumulation
  // rounded once to bf16; finite and of the input's shape and type.
  const int64_t M = 3, D = 4, F = 2, E = 3;
  auto x = makeTensor(DType::BF16, {M, D}, randomValues(size_t(M * D), 1));
  auto r = makeTensor(DType::BF16, {E, D}, randomValues(size_t(E * D), 2));
  auto g =
      makeTensor(DType::BF16, {E, F, D}, randomValues(size_t(E * F * D), 3));
  auto u =
      makeTensor(DType::BF16, {E, F, D}, randomValues(size_t(E * F * D), 4));
  auto d =
      makeTensor(DType::BF16, {E, D, F}, randomValues(size_t(E * D * F), 5));
  OwnedTensor y(DType::BF16, {M, D});
  ASSERT_OK(
      run(OpId::Moe, {x, r, g, u, d}, {y}, {2, 0, 0, 1, 1, 1, 0}, {1.0, 0.0}));
  for (double v : values(*y))
    EXPECT_TRUE(std::isfinite(v));
}

TEST(Moe, Errors) {
  const int64_t M = 2, D = 4, F = 2, E = 3;
  auto x = makeTensor(DType::F32, {M, D}, {});
  auto r = makeTensor(DType::F32, {E, D}, {});
  auto g = makeTensor(DType::F32, {E, F, D}, {});
  auto u = makeTensor(DType::F32, {E, F, D}, {});
  auto d = makeTensor(DType::F32, {E, D, F}, {});
  auto bad = makeTensor(DType::F32, {E, D, D}, {});
  auto b = makeTensor(DType::F32, {E + 1}, {});
  OwnedTensor y(DType::F32, {M, D});
  OwnedTensor shortY(DType::F32, {M, D}, size_t(M * D * 4 - 1));
  const std::vector<double> fl = {1.0, 0.0};
  EXPECT_ERROR(run(OpId::Moe, {x, r, g, u, d}, {y}, {0, 0, 0, 1, 1, 0, 0}, fl),
               "top_k 0 is out of range");
  EXPECT_ERROR(run(OpId::Moe, {x, r, g, u, d}, {y}, {4, 0, 0, 1, 1, 0, 0}, fl),
               "top_k 4 is out of range");
  EXPECT_ERROR(run(OpId::Moe, {x, r, g, u, d}, {y}, {1, 2, 0, 1, 1, 0, 0}, fl),
               "scoring 2");
  EXPECT_ERROR(run(OpId::Moe, {x, r, g, u, d}, {y}, {1, 0, 3, 1, 1, 0, 0}, fl),
               "topk_method");
  EXPECT_ERROR(run(OpId::Moe, {x, r, g, u, d}, {y}, {1, 0, 1, 2, 1, 0, 0}, fl),
               "do not split 3 experts");
  EXPECT_ERROR(
      run(OpId::Moe, {x, r, g, u, bad}, {y}, {1, 0, 0, 1, 1, 0, 0}, fl),
      "down must be [3, 4, 2]");
  EXPECT_ERROR(run(OpId::Moe, {x, r, g, u, d}, {y}, {1, 0, 0, 1, 1, 0, 1}, fl),
               "has_score_bias does not match");
  EXPECT_ERROR(
      run(OpId::Moe, {x, r, g, u, d, b}, {y}, {1, 0, 0, 1, 1, 0, 1}, fl),
      "score_bias must be f32 [3]");
  EXPECT_ERROR(
      run(OpId::Moe, {x, r, g, u, d}, {y}, {1, 0, 0, 1, 1, 0, 0}, {0.0, 0.0}),
      "routed_scaling_factor");
  EXPECT_ERROR(
      run(OpId::Moe, {x, r, g, u, d}, {shortY}, {1, 0, 0, 1, 1, 0, 0}, fl),
      opName(OpId::Moe));
}

} // namespace
