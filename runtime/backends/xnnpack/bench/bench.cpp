//===- bench.cpp - Optimized (xnnpack) vs portable kernels ----------------===//
//
// Google Benchmark: linear f32, qlinear int4 with f32 activations
// (weight-only) and 8da4w (int8 per-token activations x int4 weights), with
// the recipes' parameters (symmetric int4, group 32, f32 scales;
// asymmetric per-token activations), for N x K = 2048 x 2048 and
// 8192 x 2048, S = 1 (decode) and S = 64 (prefill), 1 and 2 threads.
//
//   etllm_xnnpack_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=false
//
// The "MAC/s" counter is S * N * K multiply-adds per second.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/testing.h"
#include "etllm/runtime/xnnpack/kernels.h"
#include "etllm/runtime/xnnpack/packing.h"

#include <benchmark/benchmark.h>
#include <pthreadpool.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace etllm::rt;
using etllm::rt::testing::OwnedTensor;
namespace xnn = etllm::rt::xnnpack;

constexpr int64_t kGroup = 32;

/// The weights of one N x K problem, built once and kept.
struct Weights {
  OwnedTensor denseF32, packedF32, denseQ4, packedQ4;
};

Weights &weights(int64_t N, int64_t K) {
  static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Weights>> cache;
  auto &slot = cache[{N, K}];
  if (slot)
    return *slot;
  slot = std::make_unique<Weights>();
  std::mt19937 gen(unsigned(N * 31 + K));
  std::uniform_real_distribution<float> fd(-0.05f, 0.05f);
  std::vector<float> w(size_t(N * K));
  for (float &v : w)
    v = fd(gen);
  slot->denseF32 = OwnedTensor(DType::F32, {N, K});
  std::memcpy(slot->denseF32->data, w.data(), w.size() * 4);
  std::vector<uint8_t> pf = xnn::packF32Weight(w.data(), N, K);
  slot->packedF32 = OwnedTensor(DType::F32, {N, K}, pf.size());
  std::memcpy(slot->packedF32->data, pf.data(), pf.size());

  QuantInfo q;
  q.bits = 4;
  q.symmetric = true;
  q.groupSize = kGroup;
  q.scaleType = DType::F32;
  std::uniform_int_distribution<int32_t> qd(-8, 7);
  std::uniform_real_distribution<float> sd(0.001f, 0.01f);
  std::vector<int32_t> qv(size_t(N * K));
  for (int32_t &v : qv)
    v = qd(gen);
  std::vector<float> scales(size_t(N * K / kGroup));
  for (float &s : scales)
    s = sd(gen);
  slot->denseQ4 = etllm::rt::testing::makeQWeight(N, K, q, qv, scales);
  auto pq = xnn::packQWeight(slot->denseQ4->ptr<uint8_t>(),
                             slot->denseQ4->capacity, N, K, q);
  slot->packedQ4 = OwnedTensor(DType::QWeight, {N, K}, pq->size(), q);
  std::memcpy(slot->packedQ4->data, pq->data(), pq->size());
  return *slot;
}

enum class Impl { Portable, Xnnpack };
enum class Problem { LinearF32, QLinearInt4, QLinear8da4w };

void run(benchmark::State &state, Problem problem, Impl impl) {
  const int64_t N = state.range(0), K = state.range(1), S = state.range(2);
  const int threads = int(state.range(3));
  Weights &w = weights(N, K);
  pthreadpool_t pool =
      threads > 1 ? pthreadpool_create(size_t(threads)) : nullptr;
  ExecContext ctx(pool);

  std::mt19937 gen(7);
  std::uniform_real_distribution<float> xd(-1.0f, 1.0f);
  OwnedTensor x(DType::F32, {1, S, K});
  for (int64_t i = 0; i < S * K; ++i)
    x->ptr<float>()[i] = xd(gen);
  QuantInfo aq;
  aq.bits = 8;
  aq.symmetric = false;
  OwnedTensor qa(DType::QAct, {1, S, K}, 0, aq);
  if (problem == Problem::QLinear8da4w) {
    std::vector<Tensor *> ins = {x}, outs = {qa};
    etllm::rt::testing::callKernel(portableKernels().get(OpId::QuantizeDynamic),
                                   ctx, ins, outs)
        .ok();
  }
  OwnedTensor y(DType::F32, {1, S, N});
  Tensor *input = problem == Problem::QLinear8da4w ? qa.get() : x.get();
  Tensor *weight;
  if (problem == Problem::LinearF32)
    weight = impl == Impl::Xnnpack ? w.packedF32.get() : w.denseF32.get();
  else
    weight = impl == Impl::Xnnpack ? w.packedQ4.get() : w.denseQ4.get();
  std::vector<Tensor *> ins = {input, weight}, outs = {y};
  KernelArgs a;
  a.inputs = {ins.data(), ins.size()};
  a.outputs = {outs.data(), outs.size()};
  a.ctx = &ctx;
  const OpId op = problem == Problem::LinearF32 ? OpId::Linear : OpId::QLinear;
  const xnn::Isa isa = xnn::detectIsa();
  for (auto _ : state) {
    Status st = impl == Impl::Portable ? portableKernels().get(op)(a)
                : op == OpId::Linear   ? xnn::linearPacked(a, isa)
                                       : xnn::qlinearPacked(a, isa);
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
    benchmark::DoNotOptimize(y->data);
    benchmark::ClobberMemory();
  }
  state.counters["MAC/s"] = benchmark::Counter(
      double(S * N * K), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(impl == Impl::Xnnpack ? xnn::isaName(isa) : "portable");
  if (pool)
    pthreadpool_destroy(pool);
}

void shapes(benchmark::internal::Benchmark *b) {
  b->ArgNames({"N", "K", "S", "threads"});
  for (int64_t N : {2048, 8192})
    for (int64_t S : {1, 64})
      for (int64_t t : {1, 2})
        b->Args({N, 2048, S, t});
  b->Unit(benchmark::kMillisecond);
  b->UseRealTime();
}

#define ETLLM_BENCH(Name, P, I)                                                \
  void Name(benchmark::State &s) { run(s, P, I); }                             \
  BENCHMARK(Name)->Apply(shapes)

ETLLM_BENCH(LinearF32_Portable, Problem::LinearF32, Impl::Portable);
ETLLM_BENCH(LinearF32_Xnnpack, Problem::LinearF32, Impl::Xnnpack);
ETLLM_BENCH(QLinearInt4_Portable, Problem::QLinearInt4, Impl::Portable);
ETLLM_BENCH(QLinearInt4_Xnnpack, Problem::QLinearInt4, Impl::Xnnpack);
ETLLM_BENCH(QLinear8da4w_Portable, Problem::QLinear8da4w, Impl::Portable);
ETLLM_BENCH(QLinear8da4w_Xnnpack, Problem::QLinear8da4w, Impl::Xnnpack);

} // namespace

BENCHMARK_MAIN();
