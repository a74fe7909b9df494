//===- lora_test.cpp - The LoRA hook vs the portable kernel ---------------===//
//
// Odd shapes (features not multiples of a vector, of 32 lanes or of the
// portable kernel's 256-row chunk; ranks not multiples of 8), one and
// three rows, f32, half and int8 factors (A and B stored each way), one
// and three terms, every ISA this CPU
// runs with 1 and 2 threads.
//
// Tolerance: both kernels sum in f32, the optimized one with FMA and x At
// in two interleaved partial sums, portable in 256-row chunks; each is
// within ~(in + rank) u of the exact sum of |products| (u = 2^-24). With
// factors and inputs in [-1, 1], |optimized - portable| <= 1e-6 in rank
// (|scale| <= 2) has margin and still catches a wrong row, lane or term
// (an error of order one product).
//
// And the kernel's own promises: the same bits with 1 and 2 threads and for
// a row alone (decode) or in a prefill; the generic ISA declines. Fused
// into a packed qlinear's parallel loop (a decode step in the delegate) a
// hook gives the same bits as the qlinear followed by the lora kernel.
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

#include "../internal.h"
#include "../qdot.h"

namespace etllm::rt::cpu::test {
namespace {

enum class Store { F32, Half, Int8 };

/// One factor: its values (f32, or what the stored form represents) and
/// the stored form.
struct Matrix {
  Store store = Store::F32;
  std::vector<float> v;
  std::vector<uint16_t> h; // Store::Half
  std::vector<int8_t> q;   // Store::Int8, with
  std::vector<float> s;    // one scale per rank index

  const void *data() const {
    return store == Store::F32    ? static_cast<const void *>(v.data())
           : store == Store::Half ? static_cast<const void *>(h.data())
                                  : static_cast<const void *>(q.data());
  }
  DType dtype() const {
    return store == Store::F32    ? DType::F32
           : store == Store::Half ? DType::F16
                                  : DType::I8;
  }
  const float *scales() const {
    return store == Store::Int8 ? s.data() : nullptr;
  }
};

/// A random [rows, cols] factor stored as `store`; int8 symmetric per rank
/// index (the column of At [in, r] when `rankIsColumn`, else Bt's row).
Matrix makeMatrix(int64_t rows, int64_t cols, bool rankIsColumn, Store store,
                  std::mt19937 &gen) {
  Matrix m;
  m.store = store;
  m.v = randomFloats(size_t(rows * cols), gen);
  if (store == Store::Half) {
    for (float &x : m.v) {
      m.h.push_back(floatToHalf(x));
      x = halfToFloat(m.h.back());
    }
  } else if (store == Store::Int8) {
    m.q.resize(m.v.size());
    const int64_t rank = rankIsColumn ? cols : rows;
    const int64_t n = rankIsColumn ? rows : cols;
    for (int64_t k = 0; k < rank; ++k) {
      auto idx = [&](int64_t j) {
        return size_t(rankIsColumn ? j * cols + k : k * cols + j);
      };
      float amax = 0;
      for (int64_t j = 0; j < n; ++j)
        amax = std::max(amax, std::fabs(m.v[idx(j)]));
      const float sc = amax / 127;
      m.s.push_back(sc);
      for (int64_t j = 0; j < n; ++j) {
        m.q[idx(j)] = int8_t(std::lround(m.v[idx(j)] / sc));
        m.v[idx(j)] = float(m.q[idx(j)]) * sc;
      }
    }
  }
  return m;
}

struct Factors {
  int64_t rank;
  float scale;
  Matrix at, bt; // [in, rank], [rank, out]
};

Factors makeFactors(int64_t in, int64_t out, int64_t rank, float scale,
                    Store storeA, Store storeB, std::mt19937 &gen) {
  return {rank, scale, makeMatrix(in, rank, true, storeA, gen),
          makeMatrix(rank, out, false, storeB, gen)};
}

std::vector<LoraHookTerms> hookTable(int64_t in, int64_t out,
                                     const std::vector<Factors> &fs) {
  LoraHookTerms h;
  h.inFeatures = in;
  h.outFeatures = out;
  for (const Factors &f : fs)
    h.terms.push_back({f.at.data(), f.bt.data(), f.rank, f.scale, f.at.dtype(),
                       f.bt.dtype(), f.at.scales(), f.bt.scales()});
  return {h};
}

/// The optimized kernel's output (handled must be true) or portable's
/// (Isa::Generic with `portable`).
std::vector<float> runLora(const std::vector<LoraHookTerms> &table,
                           const std::vector<float> &x,
                           const std::vector<float> &base, int64_t rows,
                           int64_t in, int64_t out, ExecContext &ctx, Isa isa,
                           bool portable, bool *handledOut = nullptr) {
  OwnedTensor tx = f32Tensor({rows, in}, x);
  OwnedTensor tb = f32Tensor({rows, out}, base);
  OwnedTensor ty = f32Tensor({rows, out}, {}, size_t(rows * out));
  std::vector<Tensor *> ins = {tx, tb}, outs = {ty};
  std::vector<int64_t> ints = {0};
  std::vector<double> floats;
  ctx.setLoraHooks(&table);
  KernelArgs a = makeArgs(ins, outs, ints, floats, &ctx);
  bool handled = false;
  Status st = portable ? portableKernels().get(OpId::Lora)(a)
                       : loraKernel(a, isa, handled);
  ctx.setLoraHooks(nullptr);
  EXPECT_OK(st);
  if (handledOut) {
    *handledOut = handled;
  } else if (!portable) {
    EXPECT_TRUE(handled);
  }
  return floatsOf(*ty);
}

struct Shape {
  int64_t in, out, rank;
};
// Ranks 1, 3 (lanes only), 8, 17 (2 vectors and a lane), 40 (a 32-lane
// block and a vector), 64; features below, at and above portable's chunk
// and parallel threshold (4099 x 16 f32) and this kernel's (out x rank x
// bytes >= 1 MiB: 8209 x 64, f32 and half).
const Shape kShapes[] = {{7, 5, 1},        {300, 13, 3},   {257, 33, 8},
                         {4103, 37, 17},   {33, 4099, 16}, {1025, 2051, 40},
                         {2053, 1031, 64}, {65, 8209, 64}};

class LoraTest : public ConfigTest {};

TEST_P(LoraTest, MatchesPortableOnOddShapes) {
  const Config cfg = GetParam();
  std::mt19937 gen(17);
  // A and B stored each way (f32, half, int8: nine pairs); then three
  // terms, f32, half and int8.
  const Store kStores[] = {Store::F32, Store::Half, Store::Int8};
  for (const Shape &s : kShapes)
    for (int64_t rows : {1, 3})
      for (int variant = 0; variant < 10; ++variant) {
        std::vector<Factors> fs;
        if (variant < 9) {
          fs.push_back(makeFactors(s.in, s.out, s.rank, 0.75f,
                                   kStores[variant / 3], kStores[variant % 3],
                                   gen));
        } else {
          for (Store st : kStores)
            fs.push_back(
                makeFactors(s.in, s.out, (s.rank + 1) / 2, -2.0f, st, st, gen));
        }
        std::vector<LoraHookTerms> table = hookTable(s.in, s.out, fs);
        std::vector<float> x = randomFloats(size_t(rows * s.in), gen);
        std::vector<float> base = randomFloats(size_t(rows * s.out), gen);
        Context ctx(cfg.threads);
        ExecContext ref;
        std::vector<float> got =
            runLora(table, x, base, rows, s.in, s.out, *ctx, cfg.isa, false);
        std::vector<float> want =
            runLora(table, x, base, rows, s.in, s.out, ref, Isa::Generic, true);
        ASSERT_EQ(got.size(), want.size());
        const double tol = 1e-6 * double(s.in) * double(s.rank);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], tol)
              << s.in << "x" << s.out << " r" << s.rank << " rows " << rows
              << " variant " << variant << " at " << i;
        // A missing term moves the result by far more than the tolerance.
        double effect = 0;
        for (size_t i = 0; i < want.size(); ++i)
          effect = std::max(effect, std::abs(double(want[i]) - base[i]));
        EXPECT_GT(effect, 10 * tol) << s.in << "x" << s.out;
      }
}

TEST_P(LoraTest, SameBitsWithAnyThreadCountAndInAPrefill) {
  const Config cfg = GetParam();
  std::mt19937 gen(29);
  for (const Shape &s : kShapes)
    for (Store st : {Store::F32, Store::Half, Store::Int8}) {
      std::vector<Factors> fs = {
          makeFactors(s.in, s.out, s.rank, 1.5f, st, st, gen)};
      std::vector<LoraHookTerms> table = hookTable(s.in, s.out, fs);
      const int64_t rows = 4;
      std::vector<float> x = randomFloats(size_t(rows * s.in), gen);
      std::vector<float> base = randomFloats(size_t(rows * s.out), gen);
      Context ctx(cfg.threads), one(1);
      std::vector<float> prefill =
          runLora(table, x, base, rows, s.in, s.out, *ctx, cfg.isa, false);
      for (int64_t m = 0; m < rows; ++m) {
        std::vector<float> xm(x.begin() + m * s.in, x.begin() + (m + 1) * s.in);
        std::vector<float> bm(base.begin() + m * s.out,
                              base.begin() + (m + 1) * s.out);
        std::vector<float> a =
            runLora(table, xm, bm, 1, s.in, s.out, *one, cfg.isa, false);
        std::vector<float> b =
            runLora(table, xm, bm, 1, s.in, s.out, *ctx, cfg.isa, false);
        std::vector<float> p(prefill.begin() + m * s.out,
                             prefill.begin() + (m + 1) * s.out);
        for (int64_t n = 0; n < s.out; ++n) {
          ASSERT_TRUE(sameFloat(a[size_t(n)], b[size_t(n)]))
              << s.in << "x" << s.out << " row " << m << " at " << n;
          ASSERT_TRUE(sameFloat(a[size_t(n)], p[size_t(n)]))
              << s.in << "x" << s.out << " row " << m << " at " << n;
        }
      }
    }
}

/// One qlinear of a group in the fused test: its weight, output and hook.
struct FusedPart {
  RandomQWeight w;
  QDotWeight qw;
  std::vector<Factors> fs;          // the hook's adapters
  std::vector<LoraHookTerms> table; // fs as one hook; none: not fused
  std::vector<float> x;             // the hook's input row
};

/// A group of packed qlinears over one input `qx` (f32 or QAct), each
/// followed by its LoRA hook: run as the delegate's unfused nodes (the
/// group, then the lora kernel in place) and fused; returns whether every
/// output has the same bits.
void expectFusedSameBits(const Config &cfg, Tensor &qx,
                         std::vector<FusedPart> &parts,
                         const std::string &what) {
  const size_t n = parts.size();
  const int64_t K = parts[0].w.k;
  std::vector<OwnedTensor> ref, got, xs;
  std::vector<std::vector<Tensor *>> ins(n), outsRef(n), outsGot(n);
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<KernelArgs> argsRef, argsGot;
  std::vector<const QDotWeight *> ws;
  Context ctx(cfg.threads);
  ref.reserve(n); // the tensors are pointed to: no reallocation
  got.reserve(n);
  xs.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t N = parts[i].w.n;
    parts[i].qw = qdotWeight(*parts[i].w.packed).value();
    ws.push_back(&parts[i].qw);
    ref.push_back(f32Output(size_t(N)));
    got.push_back(f32Output(size_t(N)));
    xs.push_back(f32Tensor({1, K}, parts[i].x));
    ins[i] = {&qx, parts[i].w.packed};
    outsRef[i] = {ref.back()};
    outsGot[i] = {got.back()};
  }
  for (size_t i = 0; i < n; ++i) {
    argsRef.push_back(makeArgs(ins[i], outsRef[i], ints, floats, ctx.get()));
    argsGot.push_back(makeArgs(ins[i], outsGot[i], ints, floats, ctx.get()));
  }
  // Unfused: the group, then each hook's lora kernel over its output.
  ASSERT_OK(qlinearGroupRun(argsRef.data(), ws.data(), n, cfg.isa));
  for (size_t i = 0; i < n; ++i) {
    if (parts[i].table[0].terms.empty())
      continue;
    std::vector<Tensor *> lin = {xs[i], ref[i]}, lout = {ref[i]};
    std::vector<int64_t> hook = {0};
    ctx.get()->setLoraHooks(&parts[i].table);
    bool handled = false;
    ASSERT_OK(loraKernel(makeArgs(lin, lout, hook, floats, ctx.get()), cfg.isa,
                         handled));
    ASSERT_TRUE(handled) << what;
  }
  // Fused: each hook prepared (one coefficient buffer, as the delegate),
  // then the group adds them.
  std::vector<float> coefficients(4096);
  std::vector<LoraFused> fused(n); // (not moved: atomics)
  std::vector<LoraFused *> fusedOf(n, nullptr);
  size_t used = 0;
  for (size_t i = 0; i < n; ++i) {
    if (parts[i].table[0].terms.empty())
      continue;
    ctx.get()->setLoraHooks(&parts[i].table);
    ASSERT_TRUE(loraFusedPrepare(cfg.isa, *ctx, *xs[i], parts[i].w.n, 0,
                                 coefficients.data() + used,
                                 coefficients.size() - used, fused[i]))
        << what;
    ASSERT_NE(fused[i].hook, nullptr) << what;
    fusedOf[i] = &fused[i];
    for (const LoraTerm &t : parts[i].table[0].terms)
      used += size_t(t.rank);
  }
  ctx.get()->setLoraHooks(nullptr);
  ASSERT_OK(
      qlinearGroupRun(argsGot.data(), ws.data(), n, cfg.isa, fusedOf.data()));
  for (size_t i = 0; i < n; ++i) {
    std::vector<float> a = floatsOf(*ref[i]), b = floatsOf(*got[i]);
    for (size_t j = 0; j < a.size(); ++j)
      ASSERT_TRUE(sameFloat(a[j], b[j]))
          << what << ": part " << i << " column " << j << ": " << a[j]
          << " unfused, " << b[j] << " fused";
  }
}

TEST_P(LoraTest, FusedIntoAPackedQLinearGivesTheSameBits) {
  const Config cfg = GetParam();
  std::mt19937 gen(41);
  // Groups as a decoder layer has them (q, k, v: one without a hook; gate,
  // up; a lone projection), odd output counts (tiles end inside a row group
  // and a vector), 4-bit and 8-bit weights, f32, half and int8 factors, two
  // adapters on one hook; int8 activations per block (cpu-int4), per
  // token (8da4w) and f32 ones (weight-only).
  struct Case {
    int64_t k;
    std::vector<int64_t> outs;
    unsigned bits;
    int64_t rank;
  };
  // The last: x At (2 MiB of f32 factors) takes far longer than the
  // qlinear's few row groups, so with a pool the other thread's tiles find
  // the hook not ready and leave it to the calling thread.
  const Case cases[] = {{96, {37, 13, 0}, 4, 5},
                        {256, {1031, 257}, 4, 16},
                        {2048, {2051}, 8, 17},
                        {64, {4099, 33, 70}, 4, 8},
                        {8192, {49}, 4, 64}};
  const Store kStores[] = {Store::F32, Store::Half, Store::Int8};
  int variant = 0;
  for (const Case &c : cases)
    for (int act = 0; act < 3; ++act, ++variant) {
      std::vector<FusedPart> parts;
      for (size_t i = 0; i < c.outs.size(); ++i) {
        const int64_t N = c.outs[i] ? c.outs[i] : 29; // 0: no hook
        FusedPart p;
        p.w = makeRandomQWeight(N, c.k, c.bits, true, 32, DType::F16, gen);
        const Store st = kStores[(variant + i) % 3];
        if (c.outs[i]) {
          p.fs.push_back(makeFactors(c.k, N, c.rank, 0.5f, st, st, gen));
          if (i == 0)
            p.fs.push_back(makeFactors(c.k, N, 3, -1.5f,
                                       kStores[(variant + 1) % 3], st, gen));
        }
        // (the table points into p.fs's buffers, which the move keeps)
        p.table = hookTable(c.k, N, p.fs);
        p.x = randomFloats(size_t(c.k), gen);
        parts.push_back(std::move(p));
      }
      const std::string what = "K " + std::to_string(c.k) + " act " +
                               std::to_string(act) + " " + isaName(cfg.isa);
      if (act == 2) {
        OwnedTensor x = f32Tensor({1, c.k}, randomFloats(size_t(c.k), gen));
        expectFusedSameBits(cfg, *x, parts, what);
      } else {
        QuantInfo q;
        q.bits = 8;
        q.symmetric = true;
        q.perToken = true;
        q.groupSize = act == 0 ? kQActBlock : 0;
        OwnedTensor x = f32Tensor({1, c.k}, randomFloats(size_t(c.k), gen));
        OwnedTensor qa(DType::QAct, {1, c.k}, 0, q);
        ASSERT_OK(runPortable(OpId::QuantizeDynamic, {x}, {qa}));
        expectFusedSameBits(cfg, *qa, parts, what);
      }
    }
}

TEST(LoraFused, DeclinesWhereTheLoraNodeMustRun) {
  std::mt19937 gen(7);
  std::vector<Factors> fs = {
      makeFactors(64, 9, 4, 1.0f, Store::Half, Store::F32, gen)};
  std::vector<LoraHookTerms> table = hookTable(64, 9, fs);
  OwnedTensor x1 = f32Tensor({1, 64}, randomFloats(64, gen));
  OwnedTensor x3 = f32Tensor({3, 64}, randomFloats(192, gen));
  std::vector<float> buf(64);
  ExecContext ctx;
  LoraFused f;
  const Isa isa = detectIsa();
  if (!hasAvx2(isa))
    GTEST_SKIP() << "no AVX2 on this CPU";
  // No adapter table: nothing to add, the qlinear's output is the hook's.
  EXPECT_TRUE(loraFusedPrepare(isa, ctx, *x1, 9, 0, buf.data(), 64, f));
  EXPECT_EQ(f.hook, nullptr);
  ctx.setLoraHooks(&table);
  EXPECT_TRUE(loraFusedPrepare(isa, ctx, *x1, 9, 0, buf.data(), 64, f));
  EXPECT_NE(f.hook, nullptr);
  // The generic ISA, several rows, another shape, a bad index, too small a
  // buffer, a factor type the kernels refuse: the lora node runs (and
  // reports what is wrong).
  EXPECT_FALSE(loraFusedPrepare(Isa::Generic, ctx, *x1, 9, 0, buf.data(), 64, f));
  EXPECT_FALSE(loraFusedPrepare(isa, ctx, *x3, 9, 0, buf.data(), 64, f));
  EXPECT_FALSE(loraFusedPrepare(isa, ctx, *x1, 10, 0, buf.data(), 64, f));
  EXPECT_FALSE(loraFusedPrepare(isa, ctx, *x1, 9, 1, buf.data(), 64, f));
  EXPECT_FALSE(loraFusedPrepare(isa, ctx, *x1, 9, -1, buf.data(), 64, f));
  EXPECT_FALSE(loraFusedPrepare(isa, ctx, *x1, 9, 0, buf.data(), 3, f));
  table[0].terms[0].btType = DType::BF16;
  EXPECT_FALSE(loraFusedPrepare(isa, ctx, *x1, 9, 0, buf.data(), 64, f));
  // A fused hook needs the qlinear's single row.
  table[0].terms[0].btType = DType::F32;
  ASSERT_TRUE(loraFusedPrepare(isa, ctx, *x1, 9, 0, buf.data(), 64, f));
  RandomQWeight w = makeRandomQWeight(9, 64, 4, true, 32, DType::F16, gen);
  const QDotWeight qw = qdotWeight(*w.packed).value();
  OwnedTensor y = f32Output(27);
  std::vector<Tensor *> ins = {x3, w.packed}, outs = {y};
  std::vector<int64_t> ints;
  std::vector<double> floats;
  KernelArgs a = makeArgs(ins, outs, ints, floats, &ctx);
  const QDotWeight *pw = &qw;
  LoraFused *pf = &f;
  Status st = qlinearGroupRun(&a, &pw, 1, isa, &pf);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("single row"), std::string::npos) << st.message();
}

/// The configurations with a fast path (the generic ISA declines: the test
/// below).
std::vector<Config> fastConfigs() {
  std::vector<Config> c;
  for (const Config &cfg : allConfigs())
    if (hasAvx2(cfg.isa))
      c.push_back(cfg);
  return c;
}

INSTANTIATE_TEST_SUITE_P(Isas, LoraTest, ::testing::ValuesIn(fastConfigs()),
                         configName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LoraTest); // a non-x86 host

TEST(LoraKernel, DeclinesOnTheGenericIsaAndWithoutAdapters) {
  std::mt19937 gen(5);
  std::vector<Factors> fs = {
      makeFactors(9, 6, 2, 1.0f, Store::F32, Store::F32, gen)};
  std::vector<LoraHookTerms> table = hookTable(9, 6, fs);
  std::vector<float> x = randomFloats(9, gen), base = randomFloats(6, gen);
  ExecContext ctx;
  bool handled = true;
  (void)runLora(table, x, base, 1, 9, 6, ctx, Isa::Generic, false, &handled);
  EXPECT_FALSE(handled);
  // A factor type the portable kernel refuses: it reports the error.
  table[0].terms[0].atType = DType::BF16;
  handled = true;
  (void)runLora(table, x, base, 1, 9, 6, ctx, detectIsa(), false, &handled);
  EXPECT_FALSE(handled);
  // An int8 factor without its scales.
  table[0].terms[0].atType = DType::I8;
  handled = true;
  (void)runLora(table, x, base, 1, 9, 6, ctx, detectIsa(), false, &handled);
  EXPECT_FALSE(handled);
  // No adapter table at all (the program runs without the LoRA API).
  OwnedTensor tx = f32Tensor({1, 9}, x), tb = f32Tensor({1, 6}, base);
  OwnedTensor ty = f32Tensor({1, 6}, {}, 6);
  std::vector<Tensor *> ins = {tx, tb}, outs = {ty};
  std::vector<int64_t> ints = {0};
  std::vector<double> floats;
  handled = true;
  EXPECT_OK(loraKernel(makeArgs(ins, outs, ints, floats, &ctx), detectIsa(),
                       handled));
  EXPECT_FALSE(handled);
}

} // namespace
} // namespace etllm::rt::cpu::test
