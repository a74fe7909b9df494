//===- moe_test.cpp - The delegate's moe vs the portable kernel -----------===//
//
// The cpu moe kernel (moe.cpp) on stacked expert weights packed per
// expert (packQExperts) against the portable moe on the same weights in
// the plain QWeight layout, on odd shapes: expert counts that are not
// powers of two, F and D that are not multiples of 16 (per-channel groups,
// where the block layout allows them), one token and several tokens per
// expert, top_k 1 to 3, softmax routing and DeepSeek-V3's sigmoid + bias
// with groups (noaux_tc).
//
// Tolerances, per call, relative to the largest |portable output|:
//  * f32 activations (weight-only): both kernels compute the same routing
//    (the same logits bit for bit: see moe.cpp) and the same dequantized
//    weights; the projections reassociate f32 sums (qlinear_test.cpp's
//    1e-5 of the terms' magnitude) through gate, up, silu and down:
//    |diff| <= 1e-4 max|portable| (an expert chosen differently or a
//    wrong weight would be off by the size of the output).
//  * int8 activations per block of 32 (or per token, asymmetric): x and
//    silu(gate) * up are rounded to int8 per block (per row: up to 1/510
//    of the row's range), as the dense qlinears of the recipe do:
//    ||diff|| <= 2e-2 ||portable|| (RMS over the call) and
//    |diff| <= 6e-2 max|portable|.
//
// Every case runs on every ISA path this CPU has, without and with a
// 2-thread pool; a larger case checks that the thread count does not
// change a bit.
//
//===----------------------------------------------------------------------===//
#include "../moe.h"
#include "helpers.h"

namespace etllm::rt::cpu::test {
namespace {

/// A random stacked weight [E, N, K]: the plain QWeight (portable) and the
/// per-expert packing (the delegate's).
struct StackedWeight {
  OwnedTensor dense, packed;
  QDotExperts experts;
};

StackedWeight makeStacked(int64_t E, int64_t N, int64_t K, unsigned bits,
                          bool sym, int64_t group, DType st,
                          std::mt19937 &gen) {
  StackedWeight s;
  RandomQWeight w = makeRandomQWeight(E * N, K, bits, sym, group, st, gen);
  s.dense = std::move(w.dense);
  s.dense->rank = 3;
  s.dense->sizes[0] = E;
  s.dense->sizes[1] = N;
  s.dense->sizes[2] = K;
  Result<std::vector<uint8_t>> p =
      packQExperts(s.dense->ptr<uint8_t>(), s.dense->capacity, E, N, K, w.q);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.message());
  if (!p.ok())
    return s;
  s.packed = OwnedTensor(DType::QWeight, {E, N, K}, p->size(), w.q);
  std::memcpy(s.packed->data, p->data(), p->size());
  Result<QDotExperts> e = qdotExperts(*s.packed);
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.message());
  if (e.ok())
    s.experts = *e;
  return s;
}

struct Routing {
  int64_t topK = 2, scoring = 0, method = 0, groups = 1, topkGroup = 1;
  bool norm = true, bias = false;
  double scale = 1.0, eps = 0.0;
  std::vector<int64_t> ints() const {
    return {topK,      scoring,      method,      groups,
            topkGroup, norm ? 1 : 0, bias ? 1 : 0};
  }
  std::vector<double> floats() const { return {scale, eps}; }
};

struct Case {
  int64_t E, F, D, M;
  unsigned bits;
  bool sym;
  int64_t groupD, groupF; // groups of gate/up (along D) and down (along F)
  Routing r;
  std::string name() const {
    return "E=" + std::to_string(E) + " F=" + std::to_string(F) +
           " D=" + std::to_string(D) + " M=" + std::to_string(M) + " int" +
           std::to_string(bits) + (sym ? " sym" : " asym") +
           " top_k=" + std::to_string(r.topK) +
           (r.scoring ? " sigmoid" : " softmax") + (r.bias ? " bias" : "") +
           " method " + std::to_string(r.method);
  }
};

/// Runs portable and the delegate's kernel; returns both outputs.
void runBoth(const Config &cfg, const Case &c, MoeActivations acts,
             unsigned seed, std::vector<float> &ref, std::vector<float> &got) {
  std::mt19937 gen(seed);
  const DType st = seed % 2 ? DType::F16 : DType::F32;
  StackedWeight gate =
      makeStacked(c.E, c.F, c.D, c.bits, c.sym, c.groupD, st, gen);
  StackedWeight up =
      makeStacked(c.E, c.F, c.D, c.bits, c.sym, c.groupD, st, gen);
  StackedWeight down =
      makeStacked(c.E, c.D, c.F, c.bits, c.sym, c.groupF, st, gen);
  // Inputs large enough that silu is not linear and the experts' outputs
  // are O(1).
  OwnedTensor x =
      f32Tensor({c.M, c.D}, randomFloats(size_t(c.M * c.D), gen, -3.0f, 3.0f));
  OwnedTensor router =
      f32Tensor({c.E, c.D}, randomFloats(size_t(c.E * c.D), gen));
  OwnedTensor bias =
      f32Tensor({c.E}, randomFloats(size_t(c.E), gen, -0.2f, 0.2f));
  OwnedTensor pout = f32Output(size_t(c.M * c.D));
  OwnedTensor xout = f32Output(size_t(c.M * c.D));
  std::vector<Tensor *> pin = {x, router, gate.dense, up.dense, down.dense};
  std::vector<Tensor *> xin = {x, router, gate.packed, up.packed, down.packed};
  if (c.r.bias) {
    pin.push_back(bias);
    xin.push_back(bias);
  }
  ASSERT_OK(runPortable(OpId::Moe, pin, {pout}, c.r.ints(), c.r.floats()));
  MoeExperts w;
  w.gate = gate.experts;
  w.up = up.experts;
  w.down = down.experts;
  w.acts = acts;
  ASSERT_OK(checkMoeExperts(w));
  Context ctx(cfg.threads);
  std::vector<Tensor *> outs = {xout};
  std::vector<int64_t> ints = c.r.ints();
  std::vector<double> floats = c.r.floats();
  ASSERT_OK(moeRun(makeArgs(xin, outs, ints, floats, ctx.get()), cfg.isa, w));
  EXPECT_EQ(rt::testing::shape(*xout), rt::testing::shape(*pout));
  ref = floatsOf(*pout);
  got = floatsOf(*xout);
}

double gWorstF32 = 0, gWorstRms = 0, gWorstMax = 0;

/// Prints and resets the int8 activations' largest ratios.
void reportWorstInt8(const char *what) {
  std::cout << "[          ] " << what
            << ": largest RMS / tolerance = " << gWorstRms
            << ", largest |diff| / tolerance = " << gWorstMax << "\n";
  gWorstRms = gWorstMax = 0;
}

void compare(const Config &cfg, const Case &c, MoeActivations acts,
             unsigned seed) {
  std::vector<float> ref, got;
  runBoth(cfg, c, acts, seed, ref, got);
  ASSERT_EQ(ref.size(), got.size());
  double mx = 0, ss = 0, ds = 0, dmax = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    mx = std::max(mx, std::fabs(double(ref[i])));
    ss += double(ref[i]) * ref[i];
    const double d = std::fabs(double(got[i]) - double(ref[i]));
    ds += d * d;
    dmax = std::max(dmax, d);
  }
  ASSERT_GT(mx, 0.0) << c.name();
  const std::string what =
      c.name() + (acts == MoeActivations::F32 ? " f32 acts" : " int8 acts");
  if (acts == MoeActivations::F32) {
    gWorstF32 = std::max(gWorstF32, dmax / (1e-4 * mx));
    EXPECT_LE(dmax, 1e-4 * mx) << what;
  } else {
    const double rms = std::sqrt(ds / ss);
    gWorstRms = std::max(gWorstRms, rms / 2e-2);
    gWorstMax = std::max(gWorstMax, dmax / (6e-2 * mx));
    EXPECT_LE(rms, 2e-2) << what;
    EXPECT_LE(dmax, 6e-2 * mx) << what;
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  Routing softmax2;
  Routing softmax1;
  softmax1.topK = 1;
  softmax1.norm = false;
  Routing softmax3;
  softmax3.topK = 3;
  softmax3.scale = 1.5;
  // DeepSeek-V3: sigmoid scores, a bias for the selection, 2 groups of 3
  // experts, the best group kept, 2 of its experts, renormalized, scaled.
  Routing v3;
  v3.topK = 2;
  v3.scoring = 1;
  v3.method = 2;
  v3.groups = 2;
  v3.topkGroup = 1;
  v3.bias = true;
  v3.scale = 2.5;
  v3.eps = 1e-20;
  for (int64_t M : {1, 3, 9, 20}) {
    // int4 group 32 (cpu-int4): D, F multiples of 32.
    v.push_back({5, 64, 96, M, 4, true, 32, 32, softmax2});
    v.push_back({7, 32, 64, M, 4, true, 32, 32, softmax3});
    v.push_back({6, 96, 32, M, 4, true, 32, 32, v3});
    // Per-channel groups: F and D not multiples of 16 (nor of 32).
    v.push_back({5, 24, 40, M, 4, true, 40, 24, softmax1});
    v.push_back({6, 40, 24, M, 8, true, 24, 40, v3});
    // int8 per channel (cpu-int8), asymmetric int4 with groups of 64.
    v.push_back({3, 48, 80, M, 8, true, 80, 48, softmax2});
    v.push_back({5, 64, 128, M, 4, false, 64, 64, softmax2});
  }
  return v;
}

class MoeTest : public ConfigTest {};

TEST_P(MoeTest, F32ActivationsMatchPortable) {
  unsigned seed = 10;
  for (const Case &c : cases())
    compare(GetParam(), c, MoeActivations::F32, seed++);
  std::cout << "[          ] f32 activations: largest |diff| / tolerance = "
            << gWorstF32 << "\n";
  gWorstF32 = 0;
}

TEST_P(MoeTest, Int8BlockActivationsMatchPortable) {
  unsigned seed = 200;
  for (const Case &c : cases())
    compare(GetParam(), c, MoeActivations::Int8Block, seed++);
  reportWorstInt8("int8 per block");
}

TEST_P(MoeTest, Int8TokenActivationsMatchPortable) {
  unsigned seed = 400;
  for (const Case &c : cases())
    compare(GetParam(), c, MoeActivations::Int8Token, seed++);
  reportWorstInt8("int8 per token");
}

INSTANTIATE_TEST_SUITE_P(Paths, MoeTest, ::testing::ValuesIn(allConfigs()),
                         configName);

TEST(MoeTest, ThreadCountDoesNotChangeResults) {
  // Above the parallel threshold: routing over 24 tokens, 6 active experts
  // of 7 with several tokens each.
  Case c{7, 96, 256, 24, 4, true, 32, 32, Routing()};
  for (Isa isa : allIsas())
    for (MoeActivations acts : {MoeActivations::F32, MoeActivations::Int8Block,
                                MoeActivations::Int8Token}) {
      std::vector<float> ref1, got1, ref2, got2;
      runBoth({isa, 1}, c, acts, 77, ref1, got1);
      runBoth({isa, 2}, c, acts, 77, ref2, got2);
      ASSERT_EQ(got1.size(), got2.size());
      size_t diffs = 0;
      for (size_t i = 0; i < got1.size(); ++i)
        diffs += !sameFloat(got1[i], got2[i]);
      EXPECT_EQ(diffs, 0u) << isaName(isa);
    }
}

TEST(MoeTest, RouterLogitsArePortablesBitForBit) {
  // dotF32's sums (s += x[i] * r[i] from 0) on every path: E and D with
  // and without tails of the 16-expert, 8-value tiles.
  std::mt19937 gen(31);
  for (int64_t E : {1, 5, 16, 37, 128})
    for (int64_t D : {1, 8, 29, 64, 200}) {
      std::vector<float> x = randomFloats(size_t(D), gen, -3, 3);
      std::vector<float> r = randomFloats(size_t(E * D), gen);
      std::vector<float> ref(static_cast<size_t>(E));
      for (int64_t e = 0; e < E; ++e) {
        volatile float s = 0.0f; // one rounded product, one rounded add
        for (int64_t i = 0; i < D; ++i) {
          volatile float p = x[size_t(i)] * r[size_t(e * D + i)];
          s = s + p;
        }
        ref[size_t(e)] = s;
      }
      for (Isa isa : allIsas()) {
        std::vector<float> got(static_cast<size_t>(E), -1.0f);
        moeRouterLogits(isa, x.data(), r.data(), E, D, got.data());
        for (int64_t e = 0; e < E; ++e)
          EXPECT_TRUE(sameFloat(got[size_t(e)], ref[size_t(e)]))
              << isaName(isa) << " E=" << E << " D=" << D << " e=" << e;
      }
    }
}

TEST(MoeTest, RejectsBadOperands) {
  std::mt19937 gen(5);
  StackedWeight gate = makeStacked(4, 32, 64, 4, true, 32, DType::F16, gen);
  StackedWeight up = makeStacked(4, 32, 64, 4, true, 32, DType::F16, gen);
  StackedWeight down = makeStacked(4, 64, 32, 4, true, 32, DType::F16, gen);
  MoeExperts w{gate.experts, up.experts, down.experts, MoeActivations::F32};
  ASSERT_OK(checkMoeExperts(w));
  MoeExperts swapped{gate.experts, up.experts, gate.experts,
                     MoeActivations::F32};
  EXPECT_FALSE(checkMoeExperts(swapped).ok());
  OwnedTensor x = f32Tensor({2, 64}, randomFloats(128, gen));
  OwnedTensor router = f32Tensor({4, 64}, randomFloats(256, gen));
  OwnedTensor badRouter = f32Tensor({3, 64}, randomFloats(192, gen));
  OwnedTensor out = f32Output(128);
  Context ctx(1);
  auto run = [&](Tensor *xt, Tensor *rt, std::vector<int64_t> ints) {
    std::vector<Tensor *> ins = {xt, rt, gate.packed, up.packed, down.packed};
    std::vector<Tensor *> outs = {out};
    std::vector<double> floats = {1.0, 0.0};
    return moeRun(makeArgs(ins, outs, ints, floats, ctx.get()), Isa::Generic,
                  w);
  };
  EXPECT_OK(run(x, router, {2, 0, 0, 1, 1, 1, 0}));
  Status st = run(x, badRouter, {2, 0, 0, 1, 1, 1, 0});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("router must be f32 [4, 64]"), std::string::npos)
      << st.message();
  st = run(x, router, {5, 0, 0, 1, 1, 1, 0});
  EXPECT_FALSE(st.ok()); // top_k > experts
  EXPECT_NE(st.message().find("top_k 5"), std::string::npos) << st.message();
  st = run(x, router, {2, 0, 0, 1, 1, 1, 1}); // a bias without the input
  EXPECT_FALSE(st.ok());
  OwnedTensor wrongX = f32Tensor({2, 32}, randomFloats(64, gen));
  EXPECT_FALSE(run(wrongX, router, {2, 0, 0, 1, 1, 1, 0}).ok());
  // A packed weight shorter than its layout.
  OwnedTensor shortW(DType::QWeight, {4, 32, 64}, 64, gate.packed->quant);
  EXPECT_FALSE(qdotExperts(*shortW).ok());
}

} // namespace
} // namespace etllm::rt::cpu::test
