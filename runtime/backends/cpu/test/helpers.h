//===- helpers.h - Shared helpers of the cpu tests --------------*- C++ -*-===//
#ifndef ETLLM_BACKENDS_CPU_TEST_HELPERS_H
#define ETLLM_BACKENDS_CPU_TEST_HELPERS_H

#include "etllm/runtime/cpu/kernels.h"
#include "etllm/runtime/cpu/packing.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/status_matchers.h"
#include "etllm/runtime/testing.h"

#include <gtest/gtest.h>
#include <pthreadpool.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#if defined(__aarch64__)
#define ETLLM_TEST_ARM64 1
#else
#define ETLLM_TEST_ARM64 0
#endif

namespace etllm::rt::cpu::test {

using rt::testing::OwnedTensor;

/// A kernel configuration under test: an ISA path and a thread count.
struct Config {
  Isa isa;
  int threads;
};

/// How GoogleTest prints a Config (instead of its raw bytes).
inline void PrintTo(const Config &c, std::ostream *os) {
  *os << isaName(c.isa) << ", " << c.threads << " thread(s)";
}

inline std::string configName(const ::testing::TestParamInfo<Config> &info) {
  return std::string(isaName(info.param.isa)) + "_" +
         std::to_string(info.param.threads) + "t";
}

/// Every ISA this CPU runs (loops inside a test run these).
inline std::vector<Isa> allIsas() {
  std::vector<Isa> v;
  for (int i = 0; i < kNumIsas; ++i)
    if (isaSupported(Isa(i)))
      v.push_back(Isa(i));
  return v;
}

/// The paths of the architecture the tests were built for (generic, and
/// the x86 or arm64 ones), whether or not this CPU runs them.
inline std::vector<Isa> archIsas() {
  const IsaArch arch = ETLLM_TEST_ARM64 ? IsaArch::Arm64 : IsaArch::X86;
  std::vector<Isa> v;
  for (int i = 0; i < kNumIsas; ++i)
    if (isaArch(Isa(i)) == IsaArch::Any || isaArch(Isa(i)) == arch)
      v.push_back(Isa(i));
  return v;
}

/// Every path of the architecture, without and with a 2-thread pool; the
/// cases of a path this CPU lacks are skipped with the reason (ConfigTest).
inline std::vector<Config> allConfigs() {
  std::vector<Config> c;
  for (Isa isa : archIsas())
    for (int t : {1, 2})
      c.push_back({isa, t});
  return c;
}

/// The fixture of the tests parameterized by a Config: a case whose ISA
/// this CPU cannot run is skipped, saying what it needs.
class ConfigTest : public ::testing::TestWithParam<Config> {
protected:
  void SetUp() override {
    const Isa isa = GetParam().isa;
    if (!isaSupported(isa))
      GTEST_SKIP() << "this CPU cannot run the " << isaName(isa)
                   << " kernels (they need " << isaRequirement(isa) << ")";
  }
};

/// An execution context with an optional thread pool. The pools are
/// created once per thread count and shared by every context of the test
/// process (a new pool's workers spin before their first job: creating one
/// per case would cost more than the cases).
class Context {
public:
  explicit Context(int threads) {
    ctx_ = std::make_unique<ExecContext>(threads > 1 ? pool(threads) : nullptr);
  }
  ExecContext &operator*() { return *ctx_; }
  ExecContext *get() { return ctx_.get(); }

private:
  static pthreadpool_t pool(int threads) {
    struct Pools {
      std::vector<std::pair<int, pthreadpool_t>> list;
      ~Pools() {
        for (auto &p : list)
          pthreadpool_destroy(p.second);
      }
    };
    static Pools pools;
    for (auto &p : pools.list)
      if (p.first == threads)
        return p.second;
    pools.list.push_back({threads, pthreadpool_create(size_t(threads))});
    return pools.list.back().second;
  }
  std::unique_ptr<ExecContext> ctx_;
};

/// Kernel arguments over vectors the caller keeps alive.
inline KernelArgs makeArgs(std::vector<Tensor *> &ins,
                           std::vector<Tensor *> &outs,
                           std::vector<int64_t> &ints,
                           std::vector<double> &floats, ExecContext *ctx) {
  KernelArgs a;
  a.inputs = {ins.data(), ins.size()};
  a.outputs = {outs.data(), outs.size()};
  a.ints = {ints.data(), ints.size()};
  a.floats = {floats.data(), floats.size()};
  a.ctx = ctx;
  return a;
}

using rt::testing::randomFloats;
using rt::testing::runPortable;

/// An f32 tensor holding `v` (capacity: `capacityElems` floats if larger).
inline OwnedTensor f32Tensor(std::vector<int64_t> shape,
                             const std::vector<float> &v,
                             size_t capacityElems = 0) {
  OwnedTensor t(DType::F32, std::move(shape),
                std::max(capacityElems, v.size()) * 4);
  if (!v.empty())
    std::memcpy(t->data, v.data(), v.size() * 4);
  return t;
}

/// An f32 output tensor of capacity `elems` floats (shape [elems]).
inline OwnedTensor f32Output(size_t elems) {
  return OwnedTensor(DType::F32, {int64_t(elems)},
                     std::max<size_t>(elems, 1) * 4);
}

/// A tensor [rows, cols] of `dtype` holding `bytes` (a packed weight).
inline OwnedTensor bytesTensor(DType dtype, int64_t rows, int64_t cols,
                               const std::vector<uint8_t> &bytes,
                               QuantInfo quant = QuantInfo()) {
  OwnedTensor t(dtype, {rows, cols}, std::max<size_t>(bytes.size(), 1), quant);
  if (!bytes.empty())
    std::memcpy(t->data, bytes.data(), bytes.size());
  return t;
}

inline std::vector<float> floatsOf(const Tensor &t) {
  std::vector<float> v(size_t(t.numel()));
  if (!v.empty())
    std::memcpy(v.data(), t.data, v.size() * 4);
  return v;
}

/// Bit pattern equality (distinguishes -0 and NaN payloads are ignored).
inline bool sameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

/// A random block-quantized weight [N, K] and its parameters, in the plain
/// QWeightLayout (for portable) and packed (for the optimized kernels).
struct RandomQWeight {
  QuantInfo q;
  int64_t n = 0, k = 0;
  std::vector<int32_t> values;
  std::vector<float> scales, offsets;
  OwnedTensor dense, packed;

  float scale(int64_t row, int64_t g) const {
    return scales[size_t(row * (k / q.groupSize) + g)];
  }
  float offset(int64_t row, int64_t g) const {
    return q.symmetric ? 0.0f : offsets[size_t(row * (k / q.groupSize) + g)];
  }
};

inline RandomQWeight makeRandomQWeight(int64_t n, int64_t k, unsigned bits,
                                       bool sym, int64_t group, DType scaleType,
                                       std::mt19937 &gen) {
  RandomQWeight w;
  w.q.bits = uint8_t(bits);
  w.q.symmetric = sym;
  w.q.groupSize = group;
  w.q.scaleType = scaleType;
  w.n = n;
  w.k = k;
  const int32_t lo = sym ? -(1 << (bits - 1)) : 0;
  const int32_t hi = sym ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
  std::uniform_int_distribution<int32_t> qd(lo, hi);
  std::uniform_real_distribution<float> sd(0.001f, 0.05f), od(-0.5f, 0.1f);
  w.values.resize(size_t(n * k));
  for (int32_t &v : w.values)
    v = qd(gen);
  const size_t ng = size_t(n * (k / group));
  w.scales.resize(ng);
  for (float &s : w.scales) {
    s = sd(gen);
    if (scaleType == DType::F16) // store what the f16 scale really holds
      s = halfToFloat(floatToHalf(s));
  }
  if (!sym) {
    w.offsets.resize(ng);
    for (float &o : w.offsets) {
      o = od(gen);
      if (scaleType == DType::F16)
        o = halfToFloat(floatToHalf(o));
    }
  }
  w.dense = rt::testing::makeQWeight(n, k, w.q, w.values, w.scales, w.offsets);
  if (PackedQBlockLayout::supports(k, w.q)) {
    Result<std::vector<uint8_t>> p =
        packQBlocks(w.dense->ptr<uint8_t>(), w.dense->capacity, n, k, w.q);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.message());
    if (p.ok())
      w.packed = bytesTensor(DType::QWeight, n, k, *p, w.q);
  }
  return w;
}

/// The largest |got - ref| / tolerance seen by expectClose since the last
/// reportWorst() (printed by the tests to show the margin).
inline double gWorstRatio = 0;

inline void reportWorst(const char *what) {
  std::cout << "[          ] " << what
            << ": largest |diff| / tolerance = " << gWorstRatio << "\n";
  gWorstRatio = 0;
}

/// Expects |got - ref| <= rel * mag (+ a tiny absolute floor) element-wise.
inline void expectClose(const std::vector<float> &got,
                        const std::vector<float> &ref,
                        const std::vector<double> &mag, double rel,
                        const std::string &what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rel * mag[i] + 1e-30;
    const double diff = std::fabs(double(got[i]) - double(ref[i]));
    gWorstRatio = std::max(gWorstRatio, diff / tol);
    if (!(diff <= tol) && failures++ < 5)
      ADD_FAILURE() << what << " at " << i << ": got " << got[i]
                    << ", portable " << ref[i] << ", |diff| " << diff << " > "
                    << tol << " (magnitude " << mag[i] << ")";
  }
}

/// Compares packed qlinear (cfg) on input `x` (f32 or QAct; xh its values,
/// [M, K]) and weight `packed` with portable's on `dense` (both [N, K]), a
/// random bias from `gen` added when withBias: within rel * mag, where
/// mag[m N + n] = |bias[n]| + sum over k of |xh[m K + k]| * term(n, k), and
/// term(n, k) bounds the magnitude of weight element (n, k).
template <typename Term>
void compareQLinearPacked(const Config &cfg, Tensor &x,
                          const std::vector<double> &xh, Tensor *dense,
                          Tensor *packed, int64_t N, int64_t K, bool withBias,
                          std::mt19937 &gen, Term term, double rel,
                          const std::string &what) {
  const int64_t M = x.numel() / K;
  std::vector<float> bv = randomFloats(size_t(N), gen);
  OwnedTensor b = f32Tensor({N}, bv);
  OwnedTensor ref = f32Output(size_t(M * N)), got = f32Output(size_t(M * N));
  std::vector<Tensor *> pin = {&x, dense};
  if (withBias)
    pin.push_back(b);
  ASSERT_OK(runPortable(OpId::QLinear, pin, {ref}));
  Context ctx(cfg.threads);
  std::vector<Tensor *> ins = {&x, packed}, outs = {got};
  if (withBias)
    ins.push_back(b);
  std::vector<int64_t> ints;
  std::vector<double> floats;
  ASSERT_OK(
      qlinearPacked(makeArgs(ins, outs, ints, floats, ctx.get()), cfg.isa));
  EXPECT_EQ(rt::testing::shape(*got), rt::testing::shape(*ref)) << what;
  std::vector<double> mag(size_t(M * N)), terms(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k)
      terms[size_t(k)] = term(n, k);
    for (int64_t m = 0; m < M; ++m) {
      double s = withBias ? std::fabs(bv[size_t(n)]) : 0.0;
      for (int64_t k = 0; k < K; ++k)
        s += std::fabs(xh[size_t(m * K + k)]) * terms[size_t(k)];
      mag[size_t(m * N + n)] = s;
    }
  }
  expectClose(floatsOf(*got), floatsOf(*ref), mag, rel, what);
}

} // namespace etllm::rt::cpu::test

#endif // ETLLM_BACKENDS_CPU_TEST_HELPERS_H
