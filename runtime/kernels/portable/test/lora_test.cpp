//===- lora_test.cpp - The LoRA hook kernel ------------------------------===//
//
// out = base + sum of scale * (x At) Bt over the terms applied to the hook,
// checked against a double-precision reference on odd shapes (features
// that are not multiples of the kernel's chunk or of a vector), with one
// and two terms; and the kernel's own promises: the same bits with one
// thread and with two (a decode step splits both products over the pool),
// and a row of a prefill equal to the same row alone.
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

namespace etllm::rt::testing {
namespace {

struct Factors {
  int64_t rank;
  float scale;
  std::vector<float> at, bt; // [in, rank], [rank, out]
};

Factors makeFactors(int64_t in, int64_t out, int64_t rank, float scale,
                    unsigned seed) {
  Factors f{rank, scale, {}, {}};
  for (double v : randomValues(size_t(in * rank), seed))
    f.at.push_back(float(v));
  for (double v : randomValues(size_t(rank * out), seed + 1))
    f.bt.push_back(float(v));
  return f;
}

struct Hook {
  int64_t in, out;
  std::vector<Factors> factors;
  std::vector<LoraHookTerms> table;

  Hook(int64_t in, int64_t out, std::vector<Factors> fs)
      : in(in), out(out), factors(std::move(fs)) {
    LoraHookTerms h;
    h.inFeatures = in;
    h.outFeatures = out;
    for (const Factors &f : factors)
      h.terms.push_back({f.at.data(), f.bt.data(), f.rank, f.scale});
    table.push_back(std::move(h));
  }

  std::vector<double> reference(const std::vector<double> &x,
                                const std::vector<double> &base,
                                int64_t rows) const {
    std::vector<double> y = base;
    for (const Factors &f : factors)
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t k = 0; k < f.rank; ++k) {
          double t = 0;
          for (int64_t i = 0; i < in; ++i)
            t += x[size_t(m * in + i)] * f.at[size_t(i * f.rank + k)];
          for (int64_t n = 0; n < out; ++n)
            y[size_t(m * out + n)] += f.scale * t * f.bt[size_t(k * out + n)];
        }
    return y;
  }

  std::vector<double> run(const std::vector<double> &x,
                          const std::vector<double> &base, int64_t rows,
                          ExecContext &ctx) const {
    ctx.setLoraHooks(&table);
    OwnedTensor tx = makeTensor(DType::F32, {rows, in}, x);
    OwnedTensor tb = makeTensor(DType::F32, {rows, out}, base);
    OwnedTensor ty(DType::F32, {rows, out});
    Status s = testing::run(OpId::Lora, {tx.get(), tb.get()}, {ty.get()}, {0},
                            {}, &ctx);
    ctx.setLoraHooks(nullptr);
    EXPECT_TRUE(s.ok()) << s.message();
    return values(*ty);
  }
};

// Shapes: in below, at and well above the chunk of 256 rows, not a multiple
// of it; an input large enough (in * rank >= 2^16) that a decode step runs
// on the pool; out likewise.
struct Shape {
  int64_t in, out, rank;
};
const Shape kShapes[] = {
    {7, 5, 1}, {300, 13, 3}, {4103, 37, 17}, {33, 4099, 16}, {2053, 1031, 64}};

TEST(LoraKernel, MatchesTheReferenceOnOddShapes) {
  for (const Shape &s : kShapes)
    for (int64_t rows : {1, 3}) {
      Hook h(s.in, s.out,
             {makeFactors(s.in, s.out, s.rank, 0.75f, 11),
              makeFactors(s.in, s.out, (s.rank + 1) / 2, -2.0f, 23)});
      std::vector<double> x = randomValues(size_t(rows * s.in), 3);
      std::vector<double> base = randomValues(size_t(rows * s.out), 5);
      ThreadedContext two;
      std::vector<double> got = h.run(x, base, rows, two.ctx);
      std::vector<double> want = h.reference(x, base, rows);
      // f32 sums of `in` products of values in [-1, 1], then `rank` more.
      const double tol = 1e-6 * double(s.in) * double(s.rank);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tol)
            << s.in << "x" << s.out << " r" << s.rank << " rows " << rows
            << " at " << i;
    }
}

TEST(LoraKernel, SameBitsWithAnyThreadCountAndInAPrefill) {
  for (const Shape &s : kShapes) {
    Hook h(s.in, s.out, {makeFactors(s.in, s.out, s.rank, 1.5f, 31)});
    const int64_t rows = 4;
    std::vector<double> x = randomValues(size_t(rows * s.in), 7);
    std::vector<double> base = randomValues(size_t(rows * s.out), 9);
    ExecContext one;
    ThreadedContext two;
    std::vector<double> prefill = h.run(x, base, rows, two.ctx);
    for (int64_t m = 0; m < rows; ++m) {
      std::vector<double> xm(x.begin() + m * s.in, x.begin() + (m + 1) * s.in);
      std::vector<double> bm(base.begin() + m * s.out,
                             base.begin() + (m + 1) * s.out);
      std::vector<double> a = h.run(xm, bm, 1, one);
      std::vector<double> b = h.run(xm, bm, 1, two.ctx);
      EXPECT_EQ(a, b) << s.in << "x" << s.out << " row " << m;
      std::vector<double> p(prefill.begin() + m * s.out,
                            prefill.begin() + (m + 1) * s.out);
      EXPECT_EQ(a, p) << s.in << "x" << s.out << " row " << m;
    }
  }
}

TEST(LoraKernel, NothingAppliedIsTheBaseExactly) {
  Hook h(9, 6, {});
  std::vector<double> x = randomValues(9, 1), base = randomValues(6, 2);
  ExecContext ctx;
  EXPECT_EQ(h.run(x, base, 1, ctx), base);
}

} // namespace
} // namespace etllm::rt::testing
