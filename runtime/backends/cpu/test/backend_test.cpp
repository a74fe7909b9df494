//===- backend_test.cpp - The cpu delegate end to end ---------------------===//
//
// Blobs built by hand (blobs.h), run through Backend::init /
// DelegateInstance::execute and compared with the portable kernels run one
// by one on the dense weights. Hostile blobs: hostile_blob_test.cpp.
//
//===----------------------------------------------------------------------===//
#include "blobs.h"

namespace etllm::rt::cpu::test {
namespace {

class BackendTest : public ConfigTest {};

/// Inits `mlp`'s blob for `cfg` and runs it on random inputs of each length
/// in `lengths` (`reps` times each), against portableMlp.
void expectMlpMatchesPortable(const Mlp &mlp, const Config &cfg,
                              std::mt19937 &gen,
                              const std::vector<int64_t> &lengths, int reps) {
  auto inst = initBlob(mlp.blob, mlp.constants, cfg.isa);
  ASSERT_TRUE(inst.ok()) << inst.message();
  Context ctx(cfg.threads);
  for (int64_t S : lengths) {
    OwnedTensor x = f32Tensor({1, S, kD}, randomFloats(size_t(S * kD), gen),
                              size_t(kMaxS * kD));
    // Caller outputs with the upper-bound capacity, any current shape.
    OwnedTensor out0(DType::F32, {1, kMaxS, kD}),
        out1(DType::F32, {1, kMaxS, kD});
    OwnedTensor ref0 = f32Output(size_t(S * kD)),
                ref1 = f32Output(size_t(S * kD));
    portableMlp(mlp, *x, *ref0, *ref1);
    for (int rep = 0; rep < reps; ++rep) {
      ASSERT_OK(execute(**inst, {x}, {out0, out1}, *ctx));
      EXPECT_EQ(rt::testing::shape(*out0), (std::vector<int64_t>{1, S, kD}));
      expectOutputsClose(*out0, *ref0);
      expectOutputsClose(*out1, *ref1);
    }
  }
}

TEST_P(BackendTest, MlpBlockMatchesPortable) {
  std::unique_ptr<Mlp> mlp = makeMlp(42);
  std::mt19937 gen(7);
  // Re-running gives the same result.
  expectMlpMatchesPortable(*mlp, GetParam(), gen, {1, 3, kMaxS, 1}, 2);
}

TEST_P(BackendTest, LegacyPackedWeightsStillRun) {
  // A blob of a program written before QWEIGHT_R16: init converts its
  // weights (one to the block layout, one, with groups of 16, to a dense
  // QWeight for the portable kernel) and the block computes the same.
  std::unique_ptr<Mlp> mlp = makeMlp(46, /*legacy=*/true);
  std::mt19937 gen(17);
  expectMlpMatchesPortable(*mlp, GetParam(), gen, {1, kMaxS}, 1);
}

TEST_P(BackendTest, QLinearsOfOneInputRunAsAGroup) {
  // x -> quantize_dynamic (per block) -> three qlinears of that input, with
  // weights of different widths and layouts (run as one group), then two of
  // the float x (a second group: register-dequantizing for a few rows, the
  // dequantizing GEMM for more): each matches portable.
  std::mt19937 gen(51);
  // Shapes large enough that the 2-thread configurations split the groups'
  // row groups over the pool; an odd number of blocks of 32.
  const int64_t K = 416;
  constexpr int kW = 5;
  RandomQWeight w[kW] = {
      makeRandomQWeight(72, K, 4, true, 32, DType::F16, gen),
      makeRandomQWeight(16, K, 4, false, 32, DType::F32, gen),
      makeRandomQWeight(61, K, 8, true, K, DType::F32, gen),
      makeRandomQWeight(88, K, 4, true, 32, DType::F16, gen),
      makeRandomQWeight(101, K, 8, false, 32, DType::F32, gen)};
  TestConstants c;
  using K_ = xfb::ValueKind;
  BlobBuilder b;
  const std::vector<uint8_t> dyn = {0, 1, 0};
  const uint32_t x = b.f32({1, kMaxS, K}, K_::INPUT, 0, dyn);
  const BlobBuilder::ValueDesc qa =
      BlobBuilder::qactDesc({1, kMaxS, K}, dyn, /*symmetric=*/true, kQActBlock);
  const uint32_t vq = b.value(qa);
  uint32_t vw[kW], vy[kW];
  for (int i = 0; i < kW; ++i) {
    BlobBuilder::ValueDesc wd;
    wd.dtype = DType::QWeight;
    wd.sizes = {w[i].n, K};
    wd.kind = K_::CONSTANT;
    wd.index = c.add(w[i].packed->data, w[i].packed->capacity);
    wd.packing = xfb::Packing::QWEIGHT_R16;
    wd.q = w[i].q;
    vw[i] = b.value(wd);
    vy[i] = b.f32({1, kMaxS, w[i].n}, K_::OUTPUT, uint32_t(i), dyn);
  }
  b.node(opName(OpId::QuantizeDynamic), {x}, {vq});
  for (int i = 0; i < 3; ++i)
    b.node(opName(OpId::QLinear), {vq, vw[i]}, {vy[i]});
  b.node(opName(OpId::QLinear), {x, vw[3]}, {vy[3]});
  b.node(opName(OpId::QLinear), {x, vw[4]}, {vy[4]});
  auto inst = initBlob(b.finish(), c, GetParam().isa);
  ASSERT_TRUE(inst.ok()) << inst.message();
  Context ctx(GetParam().threads);
  for (int64_t S : std::vector<int64_t>{1, 3, 4, 5, kMaxS}) {
    OwnedTensor xt = f32Tensor({1, S, K}, randomFloats(size_t(S * K), gen),
                               size_t(kMaxS * K));
    OwnedTensor outs[kW];
    std::vector<Tensor *> outPtrs;
    for (int i = 0; i < kW; ++i) {
      outs[i] = OwnedTensor(DType::F32, {1, kMaxS, w[i].n});
      outPtrs.push_back(outs[i]);
    }
    ASSERT_OK(execute(**inst, {xt}, outPtrs, *ctx));
    OwnedTensor ref(DType::QAct, {1, S, K}, 0, qa.q);
    ASSERT_OK(runPortable(OpId::QuantizeDynamic, {xt}, {ref}));
    for (int i = 0; i < kW; ++i) {
      OwnedTensor r = f32Output(size_t(S * w[i].n));
      ASSERT_OK(runPortable(OpId::QLinear,
                            {i < 3 ? ref.get() : xt.get(), w[i].dense}, {r}));
      expectOutputsClose(*outs[i], *r);
    }
  }
}

TEST_P(BackendTest, ExecuteChecksBindings) {
  std::unique_ptr<Mlp> mlp = makeMlp(43);
  auto inst = initBlob(mlp->blob, mlp->constants, GetParam().isa);
  ASSERT_TRUE(inst.ok()) << inst.message();
  Context ctx(GetParam().threads);
  std::mt19937 gen(8);
  OwnedTensor x = f32Tensor({1, 2, kD}, randomFloats(2 * kD, gen));
  OwnedTensor out0(DType::F32, {1, kMaxS, kD}),
      out1(DType::F32, {1, kMaxS, kD});
  EXPECT_ERROR(execute(**inst, {x}, {out0}, *ctx), "2 outputs, got 1 and 1");
  EXPECT_ERROR(execute(**inst, {}, {out0, out1}, *ctx), "takes 1 inputs");
  OwnedTensor xi(DType::I32, {1, 2, kD});
  EXPECT_ERROR(execute(**inst, {xi}, {out0, out1}, *ctx), "is i32");
  OwnedTensor x2 = f32Tensor({2, kD}, randomFloats(2 * kD, gen));
  EXPECT_ERROR(execute(**inst, {x2}, {out0, out1}, *ctx), "rank");
  OwnedTensor xBig = f32Tensor({1, kMaxS + 1, kD},
                               randomFloats(size_t((kMaxS + 1) * kD), gen));
  EXPECT_ERROR(execute(**inst, {xBig}, {out0, out1}, *ctx), "upper bounds");
  OwnedTensor xWide =
      f32Tensor({1, 2, kD + 1}, randomFloats(2 * (kD + 1), gen));
  EXPECT_ERROR(execute(**inst, {xWide}, {out0, out1}, *ctx), "does not fit");
  EXPECT_ERROR(execute(**inst, {nullptr}, {out0, out1}, *ctx), "null");
  OwnedTensor small(DType::F32, {1, 1, kD});
  EXPECT_ERROR(execute(**inst, {x}, {small, out1}, *ctx), "node 8 (add)");
  // And it still works afterwards.
  EXPECT_OK(execute(**inst, {x}, {out0, out1}, *ctx));
}

INSTANTIATE_TEST_SUITE_P(Configs, BackendTest,
                         ::testing::ValuesIn(allConfigs()), configName);

TEST_P(BackendTest, ExecuteDoesNotGrowScratch) {
  // init reserves the optimized kernels' scratch at the upper-bound shapes
  // in the context it is given (the Module's, also passed to execute).
  std::unique_ptr<Mlp> mlp = makeMlp(45);
  Context ctx(GetParam().threads);
  auto inst = initBlob(mlp->blob, mlp->constants, GetParam().isa,
                       {{"format", "EXN1"}}, ctx.get());
  ASSERT_TRUE(inst.ok()) << inst.message();
  void *before = (*ctx).scratch(1);
  std::mt19937 gen(9);
  for (int64_t S : std::vector<int64_t>{kMaxS, 1, 5}) {
    OwnedTensor x = f32Tensor({1, S, kD}, randomFloats(size_t(S * kD), gen));
    OwnedTensor out0(DType::F32, {1, kMaxS, kD}),
        out1(DType::F32, {1, kMaxS, kD});
    ASSERT_OK(execute(**inst, {x}, {out0, out1}, *ctx));
  }
  EXPECT_EQ((*ctx).scratch(1), before);
}

TEST(BackendTest, RegistersOnceAsCpu) {
  registerBuiltinBackends();
  Backend *first = findBackend("cpu");
  ASSERT_NE(first, nullptr);
  EXPECT_STREQ(first->id(), "cpu");
  registerBuiltinBackends();
  EXPECT_EQ(findBackend("cpu"), first);
}

TEST(BackendTest, PlansMemoryByLifetime) {
  // A chain of 6 silu: 5 internal values of 4000 bytes, at most 2 alive at
  // once, so the plan needs 2 slots (64-byte aligned), not 5.
  BlobBuilder b;
  using K = xfb::ValueKind;
  uint32_t prev = b.f32({1000}, K::INPUT, 0);
  for (int i = 0; i < 6; ++i) {
    uint32_t next = b.f32({1000}, i == 5 ? K::OUTPUT : K::INTERNAL, 0);
    b.node(opName(OpId::Silu), {prev}, {next});
    prev = next;
  }
  TestConstants c;
  auto inst = initBlob(b.finish(), c);
  ASSERT_TRUE(inst.ok()) << inst.message();
  EXPECT_EQ(plannedBytes(**inst), 2 * alignUp(4000, 64));
  std::mt19937 gen(1);
  std::vector<float> xv = randomFloats(1000, gen);
  OwnedTensor x = f32Tensor({1000}, xv), y(DType::F32, {1000});
  ExecContext ctx;
  ASSERT_OK(execute(**inst, {x}, {y}, ctx));
  for (int i = 0; i < 6; ++i)
    for (float &v : xv)
      v = v / (1.0f + std::exp(-v));
  std::vector<float> g = floatsOf(*y);
  for (size_t i = 0; i < xv.size(); ++i)
    EXPECT_NEAR(g[i], xv[i], 1e-5f);
}

TEST(BackendTest, DenseLinearAndOtherOpsRunPortable) {
  // A dense (unpacked) linear weight and an op without an optimized kernel
  // (softmax) run on the portable kernels.
  std::mt19937 gen(2);
  std::vector<float> w = randomFloats(5 * 6, gen);
  TestConstants c;
  const uint32_t cw = c.add(w);
  BlobBuilder b;
  using K = xfb::ValueKind;
  const uint32_t x = b.f32({2, 6}, K::INPUT, 0);
  const uint32_t vw = b.f32({5, 6}, K::CONSTANT, cw);
  const uint32_t t = b.f32({2, 5});
  const uint32_t y = b.f32({2, 5}, K::OUTPUT, 0);
  b.node(opName(OpId::Linear), {x, vw}, {t});
  b.node(opName(OpId::Softmax), {t}, {y}, {-1});
  auto inst = initBlob(b.finish(), c);
  ASSERT_TRUE(inst.ok()) << inst.message();
  OwnedTensor xt = f32Tensor({2, 6}, randomFloats(12, gen));
  OwnedTensor yt(DType::F32, {2, 5}), tr = f32Output(10), yr = f32Output(10);
  OwnedTensor wt = f32Tensor({5, 6}, w);
  ExecContext ctx;
  ASSERT_OK(execute(**inst, {xt}, {yt}, ctx));
  ASSERT_OK(runPortable(OpId::Linear, {xt, wt}, {tr}));
  ASSERT_OK(runPortable(OpId::Softmax, {tr}, {yr}, {-1}));
  std::vector<float> g = floatsOf(*yt), r = floatsOf(*yr);
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_TRUE(sameFloat(g[i], r[i])) << i;
}

//===----------------------------------------------------------------------===//
// Hostile blobs
//===----------------------------------------------------------------------===//

/// A small valid graph: y = linear(x, packed W) + silu; plus its constants.
TEST_P(BackendTest, MoeOnPackedExpertsMatchesPortable) {
  for (uint8_t acts : {0, 1, 2}) {
    auto m = makeMoe(acts);
    auto inst = initBlob(m->b.finish(), m->constants, GetParam().isa);
    ASSERT_TRUE(inst.ok()) << inst.message();
    std::mt19937 gen(22);
    OwnedTensor x = f32Tensor({3, 64}, randomFloats(3 * 64, gen, -3, 3));
    OwnedTensor y(DType::F32, {4, 64}), ref(DType::F32, {4, 64});
    Context ctx(GetParam().threads);
    ASSERT_OK(execute(**inst, {x}, {y}, *ctx));
    ASSERT_OK(runPortable(OpId::Moe, {x, m->router, m->gate, m->up, m->down},
                          {ref}, {2, 0, 0, 1, 1, 1, 0}, {1.0, 0.0}));
    ASSERT_EQ(rt::testing::shape(*y), rt::testing::shape(*ref));
    // moe_test.cpp's tolerances (relative to the largest output).
    const std::vector<float> a = floatsOf(*y), r = floatsOf(*ref);
    double mx = 0, dmax = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      mx = std::max(mx, std::fabs(double(r[i])));
      dmax = std::max(dmax, std::fabs(double(a[i]) - double(r[i])));
    }
    EXPECT_GT(mx, 0.0);
    EXPECT_LE(dmax, (acts ? 6e-2 : 1e-4) * mx) << "moe_activations " << +acts;
  }
}

} // namespace
} // namespace etllm::rt::cpu::test
