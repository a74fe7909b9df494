//===- elementwise_test.cpp - Unary, binary, rms_norm vs portable ---------===//
//
// Tolerances:
//  * relu, add, sub, mul: bit-identical (one IEEE operation per element).
//  * rms_norm: the f64 sum of squares is reassociated; float(ss / D) can
//    then differ by 1 ulp in rare cases, moving the result by ~1 ulp:
//    |diff| <= 2.5e-7 |ref| (2 ulp). In practice (checked below) nearly all
//    elements are bit-identical.
//  * sigmoid, silu, tanh: polynomial exp/tanh (Cephes) accurate to a few
//    ulp vs libm: |diff| <= 1e-6 |ref| (~8 ulp), plus 1e-37 absolute for
//    results in or near the subnormal range.
//  * gelu: as above, plus the cancellation in 1 + erf / 1 + tanh for
//    negative x: an absolute error e in erf or tanh becomes 0.5 |x| e in
//    the result. tanh's is a few 2^-24 (|diff| <= 1e-6 |ref| + 2e-7 |x|);
//    Eigen's rational erf is off by up to 4e-7 absolute near |x| = 3..4
//    (measured against a double erf on a 1e-4 grid of [-6, 6]), so gelu_erf
//    gets |diff| <= 1e-6 |ref| + 3e-7 |x|.
// The tests print the largest observed error relative to the bound.
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

#include <limits>

namespace etllm::rt::cpu::test {
namespace {

struct UnaryOp {
  const char *name;
  OpId id;
  std::vector<int64_t> ints;
  double rel, perX; // tolerance: rel |ref| + perX |x| + 1e-37
};

std::vector<UnaryOp> unaryOps() {
  return {{opName(OpId::Sigmoid), OpId::Sigmoid, {}, 1e-6, 0},
          {opName(OpId::Silu), OpId::Silu, {}, 1e-6, 0},
          {opName(OpId::Tanh), OpId::Tanh, {}, 1e-6, 0},
          {"gelu_erf", OpId::Gelu, {0}, 1e-6, 3e-7},
          {"gelu_tanh", OpId::Gelu, {1}, 1e-6, 2e-7},
          {opName(OpId::Relu), OpId::Relu, {}, 0, 0}};
}

std::vector<float> specialValues() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float mx = std::numeric_limits<float>::max();
  const float den = std::numeric_limits<float>::denorm_min();
  std::vector<float> v = {0.0f,   -0.0f,   inf,    -inf,    nan, den, -den,
                          1e-40f, -1e-40f, 1e-30f, -1e-30f, mx,  -mx};
  for (float a : {0.5f,    0.6249f, 0.625f, 0.6251f, 1.0f,   2.0f,  4.0f,
                  5.6568f, 5.66f,   9.0f,   10.0f,   20.0f,  44.0f, 80.0f,
                  87.3f,   88.0f,   88.5f,  88.72f,  88.73f, 89.0f, 100.0f,
                  103.9f,  104.0f,  105.0f, 150.0f,  1e10f}) {
    v.push_back(a);
    v.push_back(-a);
  }
  return v;
}

/// Runs `op` both ways on x; checks the tolerance; returns max |diff|/tol.
double checkUnary(const Config &cfg, const UnaryOp &op,
                  const std::vector<float> &xv, std::vector<int64_t> shape) {
  OwnedTensor x = f32Tensor(shape, xv);
  OwnedTensor ref = f32Output(xv.size()), got = f32Output(xv.size());
  EXPECT_OK(runPortable(op.id, {x}, {ref}, op.ints));
  Context ctx(cfg.threads);
  std::vector<Tensor *> ins = {x}, outs = {got};
  std::vector<int64_t> ints = op.ints;
  std::vector<double> floats;
  bool handled = false;
  EXPECT_OK(denseKernel(op.id)(makeArgs(ins, outs, ints, floats, ctx.get()),
                               cfg.isa, handled));
  EXPECT_TRUE(handled);
  EXPECT_EQ(rt::testing::shape(*got), shape);
  std::vector<float> g = floatsOf(*got), r = floatsOf(*ref);
  double worst = 0;
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const std::string where =
        std::string(op.name) + "(" + std::to_string(xv[i]) + ")";
    if (std::isnan(r[i]) || std::isinf(r[i]) || !std::isfinite(xv[i]) ||
        op.rel == 0) {
      if (!sameFloat(g[i], r[i]) && failures++ < 5)
        ADD_FAILURE() << where << ": got " << g[i] << ", portable " << r[i];
      continue;
    }
    const double tol =
        op.rel * std::fabs(r[i]) + op.perX * std::fabs(xv[i]) + 1e-37;
    const double diff = std::fabs(double(g[i]) - double(r[i]));
    worst = std::max(worst, diff / tol);
    if (!(diff <= tol) && failures++ < 5)
      ADD_FAILURE() << where << ": got " << g[i] << ", portable " << r[i]
                    << ", |diff| " << diff << " > " << tol;
  }
  return worst;
}

class ElementwiseTest : public ConfigTest {};

TEST_P(ElementwiseTest, UnaryMatchesPortable) {
  std::mt19937 gen(1);
  for (const UnaryOp &op : unaryOps()) {
    double worst = 0;
    worst = std::max(worst, checkUnary(GetParam(), op, specialValues(),
                                       {int64_t(specialValues().size())}));
    for (auto [lo, hi] : std::vector<std::pair<float, float>>{
             {-1e-3f, 1e-3f}, {-1, 1}, {-10, 10}, {-100, 100}}) {
      for (int64_t n : {1, 7, 8, 9, 1000}) {
        std::vector<float> xv = randomFloats(size_t(n), gen, lo, hi);
        worst = std::max(worst, checkUnary(GetParam(), op, xv, {n}));
      }
      // Large enough for several parallel tiles.
      std::vector<float> xv = randomFloats(40000, gen, lo, hi);
      worst = std::max(worst, checkUnary(GetParam(), op, xv, {4, 10000}));
    }
    std::cout << "[          ] " << op.name << " (" << isaName(GetParam().isa)
              << "): largest |diff| / tolerance = " << worst << "\n";
  }
}

TEST_P(ElementwiseTest, GeluRejectsBadApproximation) {
  OwnedTensor x = f32Tensor({4}, {1, 2, 3, 4}), y = f32Output(4);
  Context ctx(GetParam().threads);
  std::vector<Tensor *> ins = {x}, outs = {y};
  std::vector<int64_t> ints = {2};
  std::vector<double> floats;
  EXPECT_ERROR(runDense(OpId::Gelu,
                        makeArgs(ins, outs, ints, floats, ctx.get()),
                        GetParam().isa),
               "approximate");
}

/// Runs a binary op both ways; expects bit-identical results and reports
/// whether the fast path handled it.
bool checkBinary(const Config &cfg, OpId id, std::vector<int64_t> as,
                 std::vector<int64_t> bs, std::mt19937 &gen) {
  auto numel = [](const std::vector<int64_t> &s) {
    int64_t n = 1;
    for (int64_t d : s)
      n *= d;
    return n;
  };
  std::vector<float> av = randomFloats(size_t(numel(as)), gen, -3, 3);
  std::vector<float> bv = randomFloats(size_t(numel(bs)), gen, -3, 3);
  if (!av.empty())
    av[0] = std::numeric_limits<float>::quiet_NaN();
  if (bv.size() > 1)
    bv[1] = std::numeric_limits<float>::infinity();
  OwnedTensor a = f32Tensor(as, av), b = f32Tensor(bs, bv);
  const size_t cap = size_t(std::max(numel(as), numel(bs))) * 4 + 64;
  OwnedTensor ref = f32Output(cap), got = f32Output(cap);
  EXPECT_OK(runPortable(id, {a, b}, {ref}));
  Context ctx(cfg.threads);
  std::vector<Tensor *> ins = {a, b}, outs = {got};
  std::vector<int64_t> ints;
  std::vector<double> floats;
  KernelArgs args = makeArgs(ins, outs, ints, floats, ctx.get());
  bool handled = false;
  EXPECT_OK(denseKernel(id)(args, cfg.isa, handled));
  if (!handled)
    EXPECT_OK(runDense(id, args, cfg.isa));
  EXPECT_EQ(rt::testing::shape(*got), rt::testing::shape(*ref));
  std::vector<float> g = floatsOf(*got), r = floatsOf(*ref);
  for (size_t i = 0; i < r.size(); ++i)
    if (!sameFloat(g[i], r[i])) {
      ADD_FAILURE() << opInfo(id).name << " at " << i << ": " << g[i] << " vs "
                    << r[i];
      break;
    }
  return handled;
}

TEST_P(ElementwiseTest, BinaryBitIdentical) {
  std::mt19937 gen(2);
  for (OpId id : {OpId::Add, OpId::Sub, OpId::Mul}) {
    // Fast paths.
    EXPECT_TRUE(checkBinary(GetParam(), id, {3, 37}, {3, 37}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {1, 13}, {1, 13}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {4, 5, 19}, {19}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {19}, {4, 5, 19}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {6, 19}, {1, 19}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {1, 1, 8}, {2, 3, 8}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {2, 9}, {1}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {1}, {2, 9}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {}, {2, 9}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {70001}, {70001}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {300, 100}, {100}, gen));
    EXPECT_TRUE(checkBinary(GetParam(), id, {0, 5}, {5}, gen));
    // General broadcasts decline to portable.
    EXPECT_FALSE(checkBinary(GetParam(), id, {3, 1, 5}, {1, 4, 5}, gen));
    EXPECT_FALSE(checkBinary(GetParam(), id, {3, 4}, {3, 1}, gen));
    EXPECT_FALSE(checkBinary(GetParam(), id, {2, 1}, {3}, gen));
    // Row broadcasts whose small operand has the higher rank.
    EXPECT_TRUE(checkBinary(GetParam(), id, {4}, {1, 1, 4}, gen));
  }
}

TEST_P(ElementwiseTest, BinaryOtherDtypesDecline) {
  OwnedTensor a(DType::I32, {4}), b(DType::I32, {4}), y(DType::I32, {4});
  for (int i = 0; i < 4; ++i) {
    a->ptr<int32_t>()[i] = i;
    b->ptr<int32_t>()[i] = 10 * i;
  }
  Context ctx(GetParam().threads);
  std::vector<Tensor *> ins = {a, b}, outs = {y};
  std::vector<int64_t> ints;
  std::vector<double> floats;
  KernelArgs args = makeArgs(ins, outs, ints, floats, ctx.get());
  bool handled = true;
  EXPECT_OK(denseKernel(OpId::Add)(args, GetParam().isa, handled));
  EXPECT_FALSE(handled);
  EXPECT_OK(runDense(OpId::Add, args, GetParam().isa));
  EXPECT_EQ(y->ptr<int32_t>()[3], 33);
}

void checkRmsNorm(const Config &cfg, std::vector<int64_t> shape, bool weight,
                  double eps, double offset, std::mt19937 &gen, int &identical,
                  int &total) {
  const int64_t D = shape.back();
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  std::vector<float> xv = randomFloats(size_t(n), gen, -5, 5);
  if (n >= D) // a zero row: mean square 0, inv = 1 / sqrt(eps)
    for (int64_t i = 0; i < D; ++i)
      xv[size_t(i)] = 0.0f;
  OwnedTensor x = f32Tensor(shape, xv);
  OwnedTensor w = f32Tensor({D}, randomFloats(size_t(D), gen, -1, 1));
  OwnedTensor ref = f32Output(size_t(n)), got = f32Output(size_t(n));
  std::vector<Tensor *> ins = {x};
  if (weight)
    ins.push_back(w);
  std::vector<Tensor *> outs = {got};
  std::vector<int64_t> ints;
  std::vector<double> floats = {eps, offset};
  ASSERT_OK(runPortable(OpId::RmsNorm, ins, {ref}, {}, floats));
  Context ctx(cfg.threads);
  bool handled = false;
  ASSERT_OK(denseKernel(OpId::RmsNorm)(
      makeArgs(ins, outs, ints, floats, ctx.get()), cfg.isa, handled));
  ASSERT_TRUE(handled);
  EXPECT_EQ(rt::testing::shape(*got), shape);
  std::vector<float> g = floatsOf(*got), r = floatsOf(*ref);
  for (size_t i = 0; i < g.size(); ++i) {
    ++total;
    identical += sameFloat(g[i], r[i]);
    EXPECT_LE(std::fabs(double(g[i]) - r[i]), 2.5e-7 * std::fabs(r[i]))
        << "at " << i;
  }
}

TEST_P(ElementwiseTest, RmsNormMatchesPortable) {
  std::mt19937 gen(3);
  int identical = 0, total = 0;
  for (auto shape : std::vector<std::vector<int64_t>>{
           {1, 64}, {3, 5, 100}, {7, 1}, {2, 4096}, {33, 37}, {9}, {0, 8}})
    for (bool weight : {false, true})
      for (double eps : {1e-5, 1e-6})
        for (double offset : {0.0, 1.0})
          checkRmsNorm(GetParam(), shape, weight, eps, offset, gen, identical,
                       total);
  std::cout << "[          ] rms_norm: " << identical << " of " << total
            << " elements bit-identical\n";
  EXPECT_GE(identical, total * 99 / 100);
}

TEST_P(ElementwiseTest, RmsNormDeclinesAndErrors) {
  Context ctx(GetParam().threads);
  OwnedTensor xh(DType::F16, {2, 8}), yh(DType::F16, {2, 8});
  std::vector<Tensor *> ins = {xh}, outs = {yh};
  std::vector<int64_t> ints;
  std::vector<double> floats = {1e-5, 0.0};
  bool handled = true;
  KernelArgs args = makeArgs(ins, outs, ints, floats, ctx.get());
  EXPECT_OK(denseKernel(OpId::RmsNorm)(args, GetParam().isa, handled));
  EXPECT_FALSE(handled);
  EXPECT_OK(runDense(OpId::RmsNorm, args, GetParam().isa));
  // A weight of the wrong size: portable reports it.
  OwnedTensor x = f32Tensor({2, 8}, std::vector<float>(16, 1.0f));
  OwnedTensor w = f32Tensor({7}, std::vector<float>(7, 1.0f));
  OwnedTensor y = f32Output(16);
  std::vector<Tensor *> ins2 = {x, w}, outs2 = {y};
  EXPECT_ERROR(runDense(OpId::RmsNorm,
                        makeArgs(ins2, outs2, ints, floats, ctx.get()),
                        GetParam().isa),
               "weight");
}

TEST(ElementwiseTest, OutputTooSmallIsAnError) {
  OwnedTensor x = f32Tensor({16}, std::vector<float>(16, 1.0f));
  OwnedTensor y = f32Output(8);
  std::vector<Tensor *> ins = {x}, outs = {y};
  std::vector<int64_t> ints;
  std::vector<double> floats;
  ExecContext ctx;
  EXPECT_ERROR(runDense(OpId::Silu, makeArgs(ins, outs, ints, floats, &ctx),
                        detectIsa()),
               "output");
}

INSTANTIATE_TEST_SUITE_P(Configs, ElementwiseTest,
                         ::testing::ValuesIn(allConfigs()), configName);

} // namespace
} // namespace etllm::rt::cpu::test
