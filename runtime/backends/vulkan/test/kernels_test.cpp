//===- kernels_test.cpp - Vulkan kernels vs the portable kernels ----------===//
//
// Each kernel on odd shapes against the portable kernel of the same op, on
// whatever device the backend opens (lavapipe in CI), with validation on.
// Tolerances: f32 activations sum the same products in another order
// (|diff| <= 2e-5 * sum |x w|); f16 activations round the inputs (done to
// the reference's inputs too) and every output to f16 (2^-11 relative):
// |diff| <= 2e-3 * sum |x w|.
//
//===----------------------------------------------------------------------===//
#include "harness.h"

namespace etllm::rt::vulkan::test {
namespace {

struct MatmulCase {
  int64_t S, K, N;
  WeightFormat fmt;
  bool f16 = false;
  bool residual = false, bias = false, swiglu = false;
};

std::string caseName(const MatmulCase &c) {
  return "S=" + std::to_string(c.S) + " K=" + std::to_string(c.K) +
         " N=" + std::to_string(c.N) + " fmt=" + std::to_string(int(c.fmt)) +
         (c.f16 ? " f16" : "") + (c.residual ? " +residual" : "") +
         (c.bias ? " +bias" : "") + (c.swiglu ? " swiglu" : "");
}

/// A weight [rows, K] in `fmt` and the float values the kernel must use.
struct TestWeight {
  std::vector<uint8_t> packed;
  std::vector<float> values; // what the packed weight stands for
  OwnedTensor qweight;       // Q4: the dense QWeight (portable qlinear)
};

TestWeight makeWeight(WeightFormat fmt, int64_t rows, int64_t K,
                      uint32_t seed) {
  TestWeight w;
  std::vector<float> f = randomFloats(size_t(rows * K), seed, 0.5f);
  WeightPart p;
  p.rows = rows;
  p.cols = K;
  p.rowEnd = rows;
  if (fmt == WeightFormat::Q4) {
    QuantInfo q;
    q.bits = 4;
    q.groupSize = 32;
    q.scaleType = DType::F16;
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> qd(-8, 7);
    std::vector<int32_t> qs(size_t(rows * K));
    for (auto &v : qs)
      v = qd(rng);
    std::vector<float> scales =
        randomFloats(size_t(rows * K / 32), seed + 1, 0.1f);
    w.qweight = rt::testing::makeQWeight(rows, K, q, qs, scales);
    p.qweight = w.qweight->ptr<uint8_t>();
    p.qweightBytes = w.qweight->capacity;
    p.quant = q;
    w.values.resize(f.size());
    for (size_t i = 0; i < f.size(); ++i)
      w.values[i] = halfToFloat(floatToHalf(scales[i / 32])) * float(qs[i]);
  } else {
    p.floats = f.data();
    w.values = fmt == WeightFormat::F16 ? roundHalf(f) : f;
  }
  auto packed = packWeight(fmt, {p});
  EXPECT_TRUE(packed.ok()) << packed.message();
  if (packed.ok())
    w.packed = std::move(*packed);
  return w;
}

/// out[s, n] = sum_k x[s, k] w[n, k] with the portable linear kernel.
OwnedTensor reference(const std::vector<float> &x, const std::vector<float> &w,
                      int64_t S, int64_t K, int64_t N, double &mag) {
  OwnedTensor xt = floatTensor({1, S, K}, x);
  OwnedTensor wt = floatTensor({N, K}, w);
  OwnedTensor out(DType::F32, {1, S, N});
  EXPECT_TRUE(
      runPortable(OpId::Linear, {xt.get(), wt.get()}, {out.get()}).ok());
  mag = 0;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t n = 0; n < N; ++n) {
      double m = 0;
      for (int64_t k = 0; k < K; ++k)
        m += std::fabs(double(x[size_t(s * K + k)]) * w[size_t(n * K + k)]);
      mag = std::max(mag, m);
    }
  return out;
}

void runMatmul(const MatmulCase &c) {
  SCOPED_TRACE(caseName(c));
  const int64_t bound = 64;
  const DType dev = c.f16 ? DType::F16 : DType::F32;
  Constants consts;
  Blob b;
  b.seqBound = bound;
  b.act = dev;
  const int64_t wrows = c.swiglu ? 2 * c.N : c.N;
  TestWeight w = makeWeight(c.fmt, wrows, c.K, 7);
  auto x =
      b.input(vfb::IoRole::ACTIVATION, DType::F32, dev, {1, bound, c.K}, 1);
  auto r = c.residual ? b.input(vfb::IoRole::ACTIVATION, DType::F32, dev,
                                {1, bound, c.N}, 1)
                      : x;
  auto y = b.output(DType::F32, dev, {1, bound, c.N}, 1);
  auto wb = b.constant(consts, w.packed);
  std::vector<float> bias = randomFloats(size_t(c.N), 9);
  auto bb = c.bias ? b.floats(consts, bias) : x;
  MatmulParams p{};
  p.mS = 1;
  p.n = uint32_t(c.N);
  p.k = uint32_t(c.K);
  p.xStride = uint32_t(c.K);
  p.yStride = p.rStride = uint32_t(c.N);
  p.epilogue = (c.residual ? ETLLM_VK_EPILOGUE_RESIDUAL : 0) |
               (c.bias ? ETLLM_VK_EPILOGUE_BIAS : 0) |
               (c.swiglu ? ETLLM_VK_EPILOGUE_SWIGLU : 0);
  p.wScaleOff = uint32_t(q4ScaleWord(wrows, c.K));
  b.dispatch(KernelId::Matmul, Variant::matmul(c.f16, c.fmt, false),
             {x, wb, y, r, bb}, p);
  auto inst = instantiate(validatedBackend(), b, consts);
  ASSERT_TRUE(inst.ok()) << inst.message();

  std::vector<float> xv = randomFloats(size_t(c.S * c.K), 3);
  std::vector<float> rv = randomFloats(size_t(c.S * c.N), 4);
  if (c.f16) {
    xv = roundHalf(xv);
    rv = roundHalf(rv);
  }
  OwnedTensor xt = floatTensor({1, c.S, c.K}, xv, size_t(bound * c.K * 4));
  OwnedTensor rt_ = floatTensor({1, c.S, c.N}, rv, size_t(bound * c.N * 4));
  OwnedTensor out(DType::F32, {1, c.S, c.N}, size_t(bound * c.N * 4));
  std::vector<Tensor *> ins = {xt.get()};
  if (c.residual)
    ins.push_back(rt_.get());
  ASSERT_TRUE(run(**inst, ins, {out.get()}).ok());

  // The reference: portable linear (q4: portable qlinear) and the epilogue.
  double mag = 0;
  std::vector<float> gate(w.values.begin(), w.values.begin() + c.N * c.K);
  OwnedTensor want = reference(xv, gate, c.S, c.K, c.N, mag);
  if (c.fmt == WeightFormat::Q4 && !c.swiglu) {
    OwnedTensor q(DType::F32, {1, c.S, c.N});
    OwnedTensor xq = floatTensor({1, c.S, c.K}, xv);
    ASSERT_TRUE(
        runPortable(OpId::QLinear, {xq.get(), w.qweight.get()}, {q.get()})
            .ok());
    want = std::move(q);
  }
  if (c.swiglu) {
    std::vector<float> up(w.values.begin() + c.N * c.K, w.values.end());
    double magU = 0;
    OwnedTensor u = reference(xv, up, c.S, c.K, c.N, magU);
    OwnedTensor s(DType::F32, {1, c.S, c.N});
    ASSERT_TRUE(runPortable(OpId::Silu, {want.get()}, {s.get()}).ok());
    OwnedTensor m(DType::F32, {1, c.S, c.N});
    ASSERT_TRUE(runPortable(OpId::Mul, {s.get(), u.get()}, {m.get()}).ok());
    want = std::move(m);
    mag = mag * magU + mag + magU;
  }
  if (c.bias) {
    OwnedTensor bt = floatTensor({c.N}, bias);
    OwnedTensor s(DType::F32, {1, c.S, c.N});
    ASSERT_TRUE(runPortable(OpId::Add, {want.get(), bt.get()}, {s.get()}).ok());
    want = std::move(s);
    mag += 1;
  }
  if (c.residual) {
    OwnedTensor s(DType::F32, {1, c.S, c.N});
    ASSERT_TRUE(
        runPortable(OpId::Add, {want.get(), rt_.get()}, {s.get()}).ok());
    want = std::move(s);
    mag += 1;
  }
  EXPECT_TRUE(near(*out, *want, (c.f16 ? 2e-3 : 2e-5) * std::max(mag, 1.0), 0));
}

class Matmul : public VulkanTest {};

TEST_F(Matmul, F32OddShapesGemvAndGemm) {
  // S <= 4: the GEMV kernel; more: the tiled GEMM (tails in every dimension).
  for (int64_t S : {1, 3, 4, 5, 33})
    for (auto [K, N] : {std::pair<int64_t, int64_t>{37, 7}, {64, 1}, {96, 130}})
      runMatmul({S, K, N, WeightFormat::F32});
}

TEST_F(Matmul, F16WeightsAndActivations) {
  for (int64_t S : {1, 31})
    for (bool f16 : {false, true})
      runMatmul({S, 96, 33, WeightFormat::F16, f16});
}

TEST_F(Matmul, Q4Group32) {
  for (int64_t S : {1, 4, 33})
    for (bool f16 : {false, true})
      runMatmul({S, 128, 45, WeightFormat::Q4, f16});
}

TEST_F(Matmul, Epilogues) {
  for (int64_t S : {1, 17}) {
    runMatmul({S, 64, 33, WeightFormat::F32, false, /*residual=*/true});
    runMatmul({S, 64, 33, WeightFormat::F32, false, false, /*bias=*/true});
    runMatmul({S, 64, 33, WeightFormat::Q4, true, true});
    runMatmul({S, 64, 19, WeightFormat::F32, false, false, false, true});
    runMatmul({S, 96, 19, WeightFormat::Q4, true, false, false, true});
  }
}

TEST_F(Matmul, WeightOver128MiBSplitAcrossBindings) {
  // 8448 x 4096 f32 = 138 MB, more than lavapipe's 128 MiB per binding: two
  // row ranges, two bindings, two dispatches into one output.
  const int64_t K = 4096, N = 8448, half = N / 2, S = 1;
  ASSERT_GT(uint64_t(N * K * 4), kDefaultMaxBindingBytes);
  Constants consts;
  Blob b;
  b.seqBound = 8;
  std::vector<float> w = randomFloats(size_t(N * K), 11, 0.25f);
  std::vector<uint32_t> chunks;
  for (int64_t r0 : {int64_t(0), half}) {
    WeightPart p;
    p.floats = w.data();
    p.rows = N;
    p.cols = K;
    p.rowBegin = r0;
    p.rowEnd = r0 + half;
    auto packed = packWeight(WeightFormat::F32, {p});
    ASSERT_TRUE(packed.ok());
    ASSERT_LE(packed->size(), kDefaultMaxBindingBytes);
    chunks.push_back(uint32_t(b.buffers.size()));
    b.constant(consts, *packed);
  }
  auto x =
      b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32, {1, 8, K}, 1);
  auto y = b.output(DType::F32, DType::F32, {1, 8, N}, 1);
  for (int c = 0; c < 2; ++c) {
    MatmulParams p{};
    p.mS = 1;
    p.n = uint32_t(half);
    p.k = uint32_t(K);
    p.xStride = uint32_t(K);
    p.yStride = uint32_t(N);
    p.yOff = int(c * half); // this range's columns
    Blob::Bind wb{chunks[size_t(c)], 0, b.buffers[chunks[size_t(c)]].size};
    b.dispatch(KernelId::Matmul,
               Variant::matmul(false, WeightFormat::F32, false),
               {x, wb, y, x, x}, p);
  }
  auto inst = instantiate(validatedBackend(), b, consts);
  ASSERT_TRUE(inst.ok()) << inst.message();
  std::vector<float> xv = randomFloats(size_t(S * K), 12);
  OwnedTensor xt = floatTensor({1, S, K}, xv, size_t(8 * K * 4));
  OwnedTensor out(DType::F32, {1, S, N}, size_t(8 * N * 4));
  ASSERT_TRUE(run(**inst, {xt.get()}, {out.get()}).ok());
  double mag = 0;
  OwnedTensor want = reference(xv, w, S, K, N, mag);
  EXPECT_TRUE(near(*out, *want, 2e-5 * mag, 0));
}

TEST_F(Matmul, OneBindingOverTheDeviceRangeIsRejected) {
  const uint64_t bytes = kDefaultMaxBindingBytes + 4096;
  Constants consts;
  Blob b;
  std::vector<uint8_t> zeros(bytes, 0);
  auto wb = b.constant(consts, zeros);
  zeros = {};
  const uint32_t K = 1024, N = uint32_t(bytes / 4 / K);
  auto x =
      b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32, {1, 1, K}, -1);
  auto y = b.output(DType::F32, DType::F32, {1, 1, N}, -1);
  MatmulParams p{};
  p.m0 = 1;
  p.n = N;
  p.k = K;
  p.xStride = K;
  p.yStride = N;
  b.dispatch(KernelId::Matmul, Variant::matmul(false, WeightFormat::F32, false),
             {x, wb, y, x, x}, p);
  auto inst = instantiate(validatedBackend(), b, consts);
  ASSERT_FALSE(inst.ok());
  EXPECT_NE(inst.message().find("maxStorageBufferRange"), std::string::npos)
      << inst.message();
}

class RowKernels : public VulkanTest {};

TEST_F(RowKernels, RmsNorm) {
  for (bool f16 : {false, true})
    for (int64_t D : {1, 64, 255, 2048})
      for (int64_t S : {1, 31, 33}) {
        SCOPED_TRACE("D=" + std::to_string(D) + " S=" + std::to_string(S) +
                     (f16 ? " f16" : ""));
        const DType dev = f16 ? DType::F16 : DType::F32;
        Constants consts;
        Blob b;
        b.seqBound = 33;
        b.act = dev;
        std::vector<float> w = randomFloats(size_t(D), 5);
        auto x =
            b.input(vfb::IoRole::ACTIVATION, DType::F32, dev, {1, 33, D}, 1);
        auto y = b.output(DType::F32, dev, {1, 33, D}, 1);
        auto wb = b.floats(consts, w);
        RmsNormParams p{};
        p.mS = 1;
        p.d = uint32_t(D);
        p.hasWeight = 1;
        p.xStride = p.yStride = uint32_t(D);
        p.eps = 1e-5f;
        b.dispatch(KernelId::RmsNorm, f16 ? Variant::kActF16 : 0u, {x, wb, y},
                   p);
        auto inst = instantiate(validatedBackend(), b, consts);
        ASSERT_TRUE(inst.ok()) << inst.message();
        std::vector<float> xv = randomFloats(size_t(S * D), 6, 3.0f);
        if (f16)
          xv = roundHalf(xv);
        OwnedTensor xt = floatTensor({1, S, D}, xv, size_t(33 * D * 4));
        OwnedTensor out(DType::F32, {1, S, D}, size_t(33 * D * 4));
        ASSERT_TRUE(run(**inst, {xt.get()}, {out.get()}).ok());
        OwnedTensor wt = floatTensor({D}, w);
        OwnedTensor want(DType::F32, {1, S, D});
        ASSERT_TRUE(runPortable(OpId::RmsNorm, {xt.get(), wt.get()},
                                {want.get()}, {}, {1e-5, 0.0})
                        .ok());
        EXPECT_TRUE(near(*out, *want, f16 ? 4e-3 : 1e-5, f16 ? 2e-3 : 1e-5));
      }
}

TEST_F(RowKernels, Softmax) {
  for (int64_t D : {1, 7, 512})
    for (int64_t S : {1, 33}) {
      Constants consts;
      Blob b;
      b.seqBound = 33;
      auto x = b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32,
                       {1, 33, D}, 1);
      auto y = b.output(DType::F32, DType::F32, {1, 33, D}, 1);
      SoftmaxParams p{};
      p.mS = 1;
      p.d = uint32_t(D);
      p.xStride = p.yStride = uint32_t(D);
      b.dispatch(KernelId::Softmax, 0u, {x, y}, p);
      auto inst = instantiate(validatedBackend(), b, consts);
      ASSERT_TRUE(inst.ok()) << inst.message();
      OwnedTensor xt = floatTensor({1, S, D}, randomFloats(size_t(S * D), 8, 5),
                                   size_t(33 * D * 4));
      OwnedTensor out(DType::F32, {1, S, D}, size_t(33 * D * 4));
      ASSERT_TRUE(run(**inst, {xt.get()}, {out.get()}).ok());
      OwnedTensor want(DType::F32, {1, S, D});
      ASSERT_TRUE(
          runPortable(OpId::Softmax, {xt.get()}, {want.get()}, {-1}).ok());
      EXPECT_TRUE(near(*out, *want, 1e-6, 1e-5));
    }
}

TEST_F(RowKernels, Elementwise) {
  struct Op {
    uint32_t code;
    OpId portableOp;
  };
  for (Op op : {Op{ETLLM_VK_ELEMENTWISE_ADD, OpId::Add},
                Op{ETLLM_VK_ELEMENTWISE_MUL, OpId::Mul},
                Op{ETLLM_VK_ELEMENTWISE_SUB, OpId::Sub},
                Op{ETLLM_VK_ELEMENTWISE_SILU, OpId::Silu},
                Op{ETLLM_VK_ELEMENTWISE_SWIGLU, OpId::NumOps}})
    for (int64_t S : {1, 31}) {
      const int64_t D = 300;
      Constants consts;
      Blob b;
      b.seqBound = 31;
      auto a = b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32,
                       {1, 31, D}, 1);
      auto bb = b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32,
                        {1, 31, D}, 1);
      auto y = b.output(DType::F32, DType::F32, {1, 31, D}, 1);
      ElementwiseParams p{};
      p.nS = uint32_t(D);
      p.op = op.code;
      b.dispatch(KernelId::Elementwise, 0u, {a, bb, y}, p);
      auto inst = instantiate(validatedBackend(), b, consts);
      ASSERT_TRUE(inst.ok()) << inst.message();
      OwnedTensor at = floatTensor({1, S, D}, randomFloats(size_t(S * D), 1, 4),
                                   size_t(31 * D * 4));
      OwnedTensor bt = floatTensor({1, S, D}, randomFloats(size_t(S * D), 2, 4),
                                   size_t(31 * D * 4));
      OwnedTensor out(DType::F32, {1, S, D}, size_t(31 * D * 4));
      ASSERT_TRUE(run(**inst, {at.get(), bt.get()}, {out.get()}).ok());
      OwnedTensor want(DType::F32, {1, S, D});
      if (op.portableOp == OpId::Silu) {
        ASSERT_TRUE(runPortable(OpId::Silu, {at.get()}, {want.get()}).ok());
      } else if (op.portableOp == OpId::NumOps) {
        OwnedTensor s(DType::F32, {1, S, D});
        ASSERT_TRUE(runPortable(OpId::Silu, {at.get()}, {s.get()}).ok());
        ASSERT_TRUE(
            runPortable(OpId::Mul, {s.get(), bt.get()}, {want.get()}).ok());
      } else {
        ASSERT_TRUE(
            runPortable(op.portableOp, {at.get(), bt.get()}, {want.get()})
                .ok());
      }
      EXPECT_TRUE(near(*out, *want, 1e-6, 1e-5)) << "op " << op.code;
    }
}

TEST_F(RowKernels, EmbeddingEveryFormatAndASplitTable) {
  const int64_t V = 100, D = 64;
  for (WeightFormat fmt :
       {WeightFormat::F32, WeightFormat::F16, WeightFormat::Q4})
    for (int parts : {1, 2}) {
      SCOPED_TRACE("fmt " + std::to_string(int(fmt)) + ", parts " +
                   std::to_string(parts));
      TestWeight w = makeWeight(fmt, V, D, 21);
      Constants consts;
      Blob b;
      b.seqBound = 16;
      auto idx =
          b.input(vfb::IoRole::INDICES, DType::I64, DType::I32, {1, 16}, 1, V);
      auto y = b.output(DType::F32, DType::F32, {1, 16, D}, 1);
      const int64_t per = V / parts;
      for (int c = 0; c < parts; ++c) {
        WeightPart p;
        p.rows = V;
        p.cols = D;
        p.rowBegin = c * per;
        p.rowEnd = c + 1 == parts ? V : (c + 1) * per;
        std::vector<float> f = w.values; // F32/F16: the values themselves
        p.floats = f.data();
        if (fmt == WeightFormat::Q4) {
          p.qweight = w.qweight->ptr<uint8_t>();
          p.qweightBytes = w.qweight->capacity;
          p.quant = w.qweight->quant;
        }
        auto packed = packWeight(fmt, {p});
        ASSERT_TRUE(packed.ok()) << packed.message();
        auto tb = b.constant(consts, *packed);
        EmbeddingParams ep{};
        ep.mS = 1;
        ep.d = uint32_t(D);
        ep.rowBegin = uint32_t(p.rowBegin);
        ep.rows = uint32_t(p.rowEnd - p.rowBegin);
        ep.wScaleOff = uint32_t(q4ScaleWord(ep.rows, D));
        ep.yStride = uint32_t(D);
        b.dispatch(KernelId::Embedding, Variant::embedding(false, fmt),
                   {idx, tb, y}, ep);
      }
      auto inst = instantiate(validatedBackend(), b, consts);
      ASSERT_TRUE(inst.ok()) << inst.message();
      std::vector<int64_t> tokens = {0, 99, 50, 49, 7, 7, 98};
      OwnedTensor it =
          rt::testing::makeI64({1, int64_t(tokens.size())}, tokens);
      OwnedTensor out(DType::F32, {1, int64_t(tokens.size()), D}, 16 * D * 4);
      ASSERT_TRUE(run(**inst, {it.get()}, {out.get()}).ok());
      OwnedTensor table = floatTensor({V, D}, w.values);
      OwnedTensor want(DType::F32, {1, int64_t(tokens.size()), D});
      ASSERT_TRUE(
          runPortable(OpId::Embedding, {table.get(), it.get()}, {want.get()})
              .ok());
      EXPECT_TRUE(near(*out, *want, 0, 0));
      // An index outside the table is an error, not a read.
      OwnedTensor badIdx = rt::testing::makeI64({1, 2}, {3, V});
      Status st = run(**inst, {badIdx.get()}, {out.get()});
      EXPECT_FALSE(st.ok());
      EXPECT_NE(st.message().find("outside [0, 100)"), std::string::npos)
          << st.message();
    }
}

TEST_F(RowKernels, CopyTransposesAndConverts) {
  // [1, S, H, D] -> [1, H, S, D] in f16 (the attention's transpose, the
  // sequence at its bound's stride) and back to [1, S, H, D] in f32.
  const int64_t H = 3, D = 5, bound = 9;
  for (int64_t S : {1, 4, 9}) {
    Constants consts;
    Blob b;
    b.seqBound = bound;
    auto x = b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32,
                     {1, bound, H, D}, 1);
    auto mid = b.slot(uint64_t(H * bound * D * 2));
    auto y = b.output(DType::F32, DType::F32, {1, bound, H, D}, 1);
    // And mid itself as an output [1, H, S, D]: the host copies the rows of
    // each head out of the bound-strided arena.
    auto yh = b.output(DType::F32, DType::F16, {1, H, bound, D}, 2);
    CopyParams p{}; // mid[h, s, d] = x[s, h, d]
    p.n0 = uint32_t(H);
    p.n1 = 1;
    p.n2 = uint32_t(D);
    p.n3 = 1;
    p.dyn = 1;
    p.ss0 = uint32_t(D);
    p.ss1 = uint32_t(H * D);
    p.ss2 = 1;
    p.ds0 = uint32_t(bound * D);
    p.ds1 = uint32_t(D);
    p.ds2 = 1;
    b.dispatch(KernelId::Copy, Variant::copy(false, true), {x, mid}, p);
    CopyParams q = p; // y[s, h, d] = mid[h, s, d]
    std::swap(q.ss0, q.ds0);
    std::swap(q.ss1, q.ds1);
    b.dispatch(KernelId::Copy, Variant::copy(true, false), {mid, y}, q);
    CopyParams f{}; // the arena's layout is the same: a flat copy
    f.n0 = uint32_t(H * bound * D);
    f.n1 = f.n2 = f.n3 = 1;
    f.dyn = 4;
    f.ss0 = f.ds0 = 1;
    b.dispatch(KernelId::Copy, Variant::copy(true, true), {mid, yh}, f, false);
    auto inst = instantiate(validatedBackend(), b, consts);
    ASSERT_TRUE(inst.ok()) << inst.message();
    std::vector<float> xv = roundHalf(randomFloats(size_t(S * H * D), 3));
    OwnedTensor xt = floatTensor({1, S, H, D}, xv, size_t(bound * H * D * 4));
    OwnedTensor out(DType::F32, {1, S, H, D}, size_t(bound * H * D * 4));
    OwnedTensor heads(DType::F32, {1, H, S, D}, size_t(bound * H * D * 4));
    ASSERT_TRUE(run(**inst, {xt.get()}, {out.get(), heads.get()}).ok());
    EXPECT_TRUE(near(*out, *xt, 0, 0));
    OwnedTensor want(DType::F32, {1, H, S, D});
    ASSERT_TRUE(
        runPortable(OpId::Transpose, {xt.get()}, {want.get()}, {1, 2}).ok());
    EXPECT_TRUE(near(*heads, *want, 0, 0));
  }
}

} // namespace
} // namespace etllm::rt::vulkan::test
