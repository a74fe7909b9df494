//===- lora_test.cpp - The LoRA hook kernel ------------------------------===//
//
// out = base + sum of scale * (x At) Bt over the terms applied to the hook,
// checked against a double-precision reference on odd shapes (features
// that are not multiples of the kernel's chunk or of a vector), with one
// and three terms, f32, half and int8; and the kernel's own promises: the same
// bits with one thread and with two (a decode step splits both products over
// the pool), and a row of a prefill equal to the same row alone.
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

namespace etllm::rt::testing {
namespace {

enum class Store { F32, Half, Int8 };

struct Factors {
  int64_t rank;
  float scale;
  Store store;
  std::vector<float> at, bt;        // [in, rank], [rank, out]: the values
  std::vector<uint16_t> at16, bt16; // as half bits (Store::Half)
  std::vector<int8_t> at8, bt8;     // as int8 (Store::Int8), with
  std::vector<float> as, bs;        // one scale per rank index
};

/// Random factors stored as `store`; `at` / `bt` hold the values the term
/// represents (rounded to half, or the int8 values times their scales).
Factors makeFactors(int64_t in, int64_t out, int64_t rank, float scale,
                    unsigned seed, Store store = Store::F32) {
  Factors f{rank, scale, store, {}, {}, {}, {}, {}, {}, {}, {}};
  for (double d : randomValues(size_t(in * rank), seed))
    f.at.push_back(float(d));
  for (double d : randomValues(size_t(rank * out), seed + 1))
    f.bt.push_back(float(d));
  if (store == Store::Half) {
    for (float &v : f.at) {
      f.at16.push_back(floatToHalf(v));
      v = halfToFloat(f.at16.back());
    }
    for (float &v : f.bt) {
      f.bt16.push_back(floatToHalf(v));
      v = halfToFloat(f.bt16.back());
    }
  } else if (store == Store::Int8) {
    // Symmetric per rank index k: At's column k, Bt's row k.
    auto quantize = [&](std::vector<float> &v, std::vector<int8_t> &q,
                        std::vector<float> &sc, int64_t cols, bool column) {
      q.resize(v.size());
      const int64_t n = int64_t(v.size()) / (column ? cols : rank);
      for (int64_t k = 0; k < rank; ++k) {
        auto idx = [&](int64_t j) {
          return size_t(column ? j * cols + k : k * cols + j);
        };
        float amax = 0;
        for (int64_t j = 0; j < n; ++j)
          amax = std::max(amax, std::fabs(v[idx(j)]));
        const float s = amax / 127;
        sc.push_back(s);
        for (int64_t j = 0; j < n; ++j) {
          q[idx(j)] = int8_t(std::lround(v[idx(j)] / s));
          v[idx(j)] = float(q[idx(j)]) * s;
        }
      }
    };
    quantize(f.at, f.at8, f.as, rank, true);
    quantize(f.bt, f.bt8, f.bs, out, false);
  }
  return f;
}

/// The same values read as f32.
Factors asF32(Factors f) {
  f.store = Store::F32;
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
      if (f.store == Store::F32)
        h.terms.push_back({f.at.data(), f.bt.data(), f.rank, f.scale});
      else if (f.store == Store::Half)
        h.terms.push_back({f.at16.data(), f.bt16.data(), f.rank, f.scale,
                           DType::F16, DType::F16});
      else
        h.terms.push_back({f.at8.data(), f.bt8.data(), f.rank, f.scale,
                           DType::I8, DType::I8, f.as.data(), f.bs.data()});
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
      // An f32 term, a half one and an int8 one (the reference reads the
      // values they represent).
      Hook h(
          s.in, s.out,
          {makeFactors(s.in, s.out, s.rank, 0.75f, 11),
           makeFactors(s.in, s.out, (s.rank + 1) / 2, -2.0f, 23, Store::Half),
           makeFactors(s.in, s.out, s.rank, 1.25f, 37, Store::Int8)});
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
  for (const Shape &s : kShapes)
    for (Store store : {Store::F32, Store::Int8}) {
      Hook h(s.in, s.out, {makeFactors(s.in, s.out, s.rank, 1.5f, 31, store)});
      const int64_t rows = 4;
      std::vector<double> x = randomValues(size_t(rows * s.in), 7);
      std::vector<double> base = randomValues(size_t(rows * s.out), 9);
      ExecContext one;
      ThreadedContext two;
      std::vector<double> prefill = h.run(x, base, rows, two.ctx);
      for (int64_t m = 0; m < rows; ++m) {
        std::vector<double> xm(x.begin() + m * s.in,
                               x.begin() + (m + 1) * s.in);
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

// Half factors are converted exactly: the bits of the same values as f32,
// in a decode step (on the pool) and in a prefill.
TEST(LoraKernel, HalfFactorsGiveTheBitsOfTheirF32Values) {
  for (const Shape &s : kShapes)
    for (int64_t rows : {1, 3}) {
      Factors f = makeFactors(s.in, s.out, s.rank, 0.5f, 41, Store::Half);
      Hook half(s.in, s.out, {f}), f32(s.in, s.out, {asF32(f)});
      std::vector<double> x = randomValues(size_t(rows * s.in), 13);
      std::vector<double> base = randomValues(size_t(rows * s.out), 15);
      ThreadedContext two;
      EXPECT_EQ(half.run(x, base, rows, two.ctx),
                f32.run(x, base, rows, two.ctx))
          << s.in << "x" << s.out << " rows " << rows;
    }
}

TEST(LoraKernel, RefusesFactorsOfAnotherType) {
  Factors f = makeFactors(9, 6, 2, 1.0f, 3);
  Hook h(9, 6, {f});
  h.table[0].terms[0].btType = DType::BF16;
  ExecContext ctx;
  ctx.setLoraHooks(&h.table);
  OwnedTensor tx = makeTensor(DType::F32, {1, 9}, randomValues(9, 1));
  OwnedTensor tb = makeTensor(DType::F32, {1, 6}, randomValues(6, 2));
  OwnedTensor ty(DType::F32, {1, 6});
  Status st =
      testing::run(OpId::Lora, {tx.get(), tb.get()}, {ty.get()}, {0}, {}, &ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("factors of type bf16"), std::string::npos)
      << st.message();
  // An int8 factor without its scales.
  Factors q = makeFactors(9, 6, 2, 1.0f, 3, Store::Int8);
  Hook hq(9, 6, {q});
  hq.table[0].terms[0].btScale = nullptr;
  ctx.setLoraHooks(&hq.table);
  st =
      testing::run(OpId::Lora, {tx.get(), tb.get()}, {ty.get()}, {0}, {}, &ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("needs its scales"), std::string::npos)
      << st.message();
}

TEST(LoraKernel, NothingAppliedIsTheBaseExactly) {
  Hook h(9, 6, {});
  std::vector<double> x = randomValues(9, 1), base = randomValues(6, 2);
  ExecContext ctx;
  EXPECT_EQ(h.run(x, base, 1, ctx), base);
}

} // namespace
} // namespace etllm::rt::testing
