//===- bench.cpp - Optimized (cpu) vs portable kernels --------------------===//
//
// Google Benchmark, with the recipes' parameters:
//  * LinearF32: f32 linear;
//  * QLinearInt4: int4 (symmetric, group 32, f16 scales) with f32
//    activations (weight-only);
//  * QLinearQ4Block: the same weights (Q4_0's bytes) with int8 activations
//    per block of 32 (llama.cpp's Q8_0): cpu-int4;
//  * QLinearQ8Block: int8 per-channel weights (f32 scales) with per-block
//    activations: cpu-int8;
//  * QLinearQ8_0Block: int8 weights per block of 32 with f16 scales (ggml's
//    Q8_0, kept by cpu-gguf) with per-block activations, also for
//    Gemma 3 270M's tied output layer (N x K = 262144 x 640, S = 1), which
//    is 73% of the bytes of its decode step;
//  * QLinear8da4w: int4 (group 32, f32 scales) with int8 per-token
//    asymmetric activations: cpu-8da4w;
//  * QLinearQ5_0Block, QLinearQ4_KBlock, QLinearQ6_KBlock: weights kept in
//    ggml's Q5_0, Q4_K and Q6_K blocks (random blocks) with int8
//    activations per block of 32: cpu-gguf (its Q4_0 and Q8_0 weights
//    are QLinearQ4Block's and QLinearQ8Block's kernels);
// for N x K = 2048 x 2048, 8192 x 2048 and 2048 x 8192 (a 1B Llama's
// projections), 512 x 1024, and 576 x 576, 1536 x 576, 576 x 1536 and
// 49152 x 576 (SmolLM2-135M's projections and output layer), S = 1
// (decode) and S = 128 (prefill), 1 and 2 threads.
// And the LoRA hook (Lora_*: a rank-16 adapter on those projections, its
// factors f32, half or int8, S = 1, the hook alone: out = base + s (x At)
// Bt).
// The portable kernels run on the dense weights (the decode shapes only:
// they are the reference, not a contender).
//
//   etllm_cpu_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=false
//   ETLLM_CPU_ISA=avx2 etllm_cpu_bench ...   (cap the ISA)
//
// Counters: "MAC/s" is S * N * K multiply-adds per second; "weight_B/s"
// the packed weight's bytes per second (decode: the memory bandwidth the
// kernel draws; for Lora_*, the factors' bytes). Each iteration reads the next
// of enough copies of the weight (at least 256 MiB in all) that it comes from
// memory, not from the last-level cache, as in a model's decode step.
// ETLLM_BENCH_CACHED=1 uses one copy instead (the weight stays in the caches):
// the kernel's compute throughput, for A/B comparisons that do not depend on
// the memory system. The 2048 x 2048 int4 weight (2.4 MB) then comes from
// the last-level cache; 512 x 1024 (0.3 MB) stays in a 1 MiB L2, which is
// what measures the compute alone.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/cpu/kernels.h"
#include "etllm/runtime/cpu/packing.h"
#include "etllm/runtime/half.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/testing.h"

#include <benchmark/benchmark.h>
#include <pthreadpool.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace etllm::rt;
using etllm::rt::testing::OwnedTensor;
namespace cpu = etllm::rt::cpu;

constexpr int64_t kGroup = 32;

/// A quantized weight, dense (portable) and packed (cpu).
struct QPair {
  OwnedTensor dense, packed;
};

/// The weights of one N x K problem, built once and kept.
struct Weights {
  OwnedTensor denseF32, packedF32;
  QPair q4f32, q4f16, q8, q8_0, q5_0, q4_k, q6_k;
};

/// Random blocks of a ggml scheme (every value and sub-scale byte random,
/// f16 scales of a realistic size), dense and packed.
QPair makeGgml(int64_t N, int64_t K, QScheme s, std::mt19937 &gen) {
  const QuantInfo q = ggmlQuantInfo(s);
  const int64_t bv = s == QScheme::Q5_0 ? 32 : 256;
  const int64_t bb = s == QScheme::Q5_0 ? 22 : s == QScheme::Q4_K ? 144 : 210;
  std::vector<uint8_t> blocks(size_t(N * (K / bv) * bb));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t &b : blocks)
    b = uint8_t(byte(gen));
  const uint16_t d = floatToHalf(0.001f);
  for (size_t at = 0; at < blocks.size(); at += size_t(bb)) {
    std::memcpy(&blocks[at + (s == QScheme::Q6_K ? 208 : 0)], &d, 2);
    if (s == QScheme::Q4_K)
      std::memcpy(&blocks[at + 2], &d, 2);
  }
  QPair p;
  p.dense = OwnedTensor(DType::QWeight, {N, K}, blocks.size(), q);
  std::memcpy(p.dense->data, blocks.data(), blocks.size());
  auto pq = cpu::packQBlocks(blocks.data(), blocks.size(), N, K, q);
  p.packed = OwnedTensor(DType::QWeight, {N, K}, pq->size(), q);
  std::memcpy(p.packed->data, pq->data(), pq->size());
  return p;
}

/// Copies of `t` whose bytes add up to at least 256 MiB (t itself first).
std::vector<OwnedTensor> &copiesOf(Tensor *t) {
  static std::map<Tensor *, std::vector<OwnedTensor>> cache;
  auto &c = cache[t];
  if (!c.empty())
    return c;
  const char *cached = std::getenv("ETLLM_BENCH_CACHED");
  const size_t n =
      cached && *cached == '1'
          ? 1
          : std::max<size_t>(1, (size_t(256) << 20) / t->capacity + 1);
  for (size_t i = 0; i < n; ++i) {
    OwnedTensor o(t->dtype, {t->sizes[0], t->sizes[1]}, t->capacity, t->quant);
    std::memcpy(o->data, t->data, t->capacity);
    c.push_back(std::move(o));
  }
  return c;
}

QPair makeQ(int64_t N, int64_t K, unsigned bits, int64_t group, DType st,
            std::mt19937 &gen) {
  QuantInfo q;
  q.bits = uint8_t(bits);
  q.symmetric = true;
  q.groupSize = group;
  q.scaleType = st;
  const int32_t hi = (1 << (bits - 1)) - 1;
  std::uniform_int_distribution<int32_t> qd(-hi - 1, hi);
  std::uniform_real_distribution<float> sd(0.001f, 0.01f);
  std::vector<int32_t> qv(size_t(N * K));
  for (int32_t &v : qv)
    v = qd(gen);
  std::vector<float> scales(size_t(N * (K / group)));
  for (float &s : scales)
    s = halfToFloat(floatToHalf(sd(gen)));
  QPair p;
  p.dense = etllm::rt::testing::makeQWeight(N, K, q, qv, scales);
  auto pq =
      cpu::packQBlocks(p.dense->ptr<uint8_t>(), p.dense->capacity, N, K, q);
  p.packed = OwnedTensor(DType::QWeight, {N, K}, pq->size(), q);
  std::memcpy(p.packed->data, pq->data(), pq->size());
  return p;
}

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
  std::vector<uint8_t> pf = cpu::packF32Weight(w.data(), N, K);
  slot->packedF32 = OwnedTensor(DType::F32, {N, K}, pf.size());
  std::memcpy(slot->packedF32->data, pf.data(), pf.size());

  slot->q4f32 = makeQ(N, K, 4, kGroup, DType::F32, gen);
  slot->q4f16 = makeQ(N, K, 4, kGroup, DType::F16, gen);
  slot->q8 = makeQ(N, K, 8, K, DType::F32, gen);
  slot->q8_0 = makeQ(N, K, 8, kGroup, DType::F16, gen);
  slot->q5_0 = makeGgml(N, K, QScheme::Q5_0, gen);
  if (K % 256 == 0) { // K-quants' super-blocks (not the output layer's K)
    slot->q4_k = makeGgml(N, K, QScheme::Q4_K, gen);
    slot->q6_k = makeGgml(N, K, QScheme::Q6_K, gen);
  }
  return *slot;
}

enum class Impl { Portable, Cpu };
enum class Problem {
  LinearF32,
  QLinearInt4,
  QLinearQ4Block,
  QLinearQ8Block,
  QLinearQ8_0Block,
  QLinear8da4w,
  QLinearQ5_0Block,
  QLinearQ4_KBlock,
  QLinearQ6_KBlock
};

/// After one kernel call: false (the benchmark stops with the error) when
/// it failed; else keeps its output from being optimized away.
bool called(benchmark::State &state, const Status &st, const Tensor &y) {
  if (!st.ok()) {
    state.SkipWithError(st.message().c_str());
    return false;
  }
  benchmark::DoNotOptimize(y.data);
  benchmark::ClobberMemory();
  return true;
}

/// The counters every case reports (per iteration: `macs` multiply-adds,
/// `bytes` of weight or factors read), its label, and the pool released.
void finish(benchmark::State &state, double macs, double bytes, Impl impl,
            pthreadpool_t pool) {
  state.counters["MAC/s"] =
      benchmark::Counter(macs, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_B/s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(impl == Impl::Cpu ? cpu::isaName(cpu::detectIsa())
                                   : "portable");
  if (pool)
    pthreadpool_destroy(pool);
}

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
  const bool quantAct = problem != Problem::LinearF32 &&
                        problem != Problem::QLinearInt4;
  QuantInfo aq;
  aq.bits = 8;
  aq.symmetric = problem != Problem::QLinear8da4w;
  aq.groupSize = problem == Problem::QLinear8da4w ? 0 : kQActBlock;
  OwnedTensor qa(DType::QAct, {1, S, K}, 0, aq);
  if (quantAct) {
    std::vector<Tensor *> ins = {x}, outs = {qa};
    etllm::rt::testing::callKernel(portableKernels().get(OpId::QuantizeDynamic),
                                   ctx, ins, outs)
        .ok();
  }
  OwnedTensor y(DType::F32, {1, S, N});
  Tensor *input = quantAct ? qa.get() : x.get();
  Tensor *weight;
  const bool packed = impl == Impl::Cpu;
  switch (problem) {
  case Problem::LinearF32:
    weight = packed ? w.packedF32.get() : w.denseF32.get();
    break;
  case Problem::QLinearInt4:
  case Problem::QLinearQ4Block:
    weight = packed ? w.q4f16.packed.get() : w.q4f16.dense.get();
    break;
  case Problem::QLinearQ8Block:
    weight = packed ? w.q8.packed.get() : w.q8.dense.get();
    break;
  case Problem::QLinearQ8_0Block:
    weight = packed ? w.q8_0.packed.get() : w.q8_0.dense.get();
    break;
  case Problem::QLinear8da4w:
    weight = packed ? w.q4f32.packed.get() : w.q4f32.dense.get();
    break;
  case Problem::QLinearQ5_0Block:
    weight = packed ? w.q5_0.packed.get() : w.q5_0.dense.get();
    break;
  case Problem::QLinearQ4_KBlock:
    weight = packed ? w.q4_k.packed.get() : w.q4_k.dense.get();
    break;
  case Problem::QLinearQ6_KBlock:
    weight = packed ? w.q6_k.packed.get() : w.q6_k.dense.get();
    break;
  }
  std::vector<OwnedTensor> &copies = copiesOf(weight);
  size_t next = 0;
  std::vector<Tensor *> ins = {input, weight}, outs = {y};
  KernelArgs a;
  a.inputs = {ins.data(), ins.size()};
  a.outputs = {outs.data(), outs.size()};
  a.ctx = &ctx;
  const OpId op = problem == Problem::LinearF32 ? OpId::Linear : OpId::QLinear;
  const cpu::Isa isa = cpu::detectIsa();
  for (auto _ : state) {
    ins[1] = copies[next].get();
    next = (next + 1) % copies.size();
    Status st = impl == Impl::Portable ? portableKernels().get(op)(a)
                : op == OpId::Linear   ? cpu::linearPacked(a, isa)
                                       : cpu::qlinearPacked(a, isa);
    if (!called(state, st, *y))
      break;
  }
  finish(state, double(S * N * K), double(weight->capacity), impl, pool);
}

/// The LoRA hook on one decode row: factors At [K, r], Bt [r, N] of
/// `dtype` (F32 or F16), in copies adding up to at least 256 MiB (as the
/// weights above; ETLLM_BENCH_CACHED=1: one copy).
void runLora(benchmark::State &state, DType dtype, Impl impl) {
  const int64_t N = state.range(0), K = state.range(1), r = state.range(2);
  const int threads = int(state.range(3));
  pthreadpool_t pool =
      threads > 1 ? pthreadpool_create(size_t(threads)) : nullptr;
  ExecContext ctx(pool);
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const size_t elem = dtype == DType::F16 ? 2 : dtype == DType::I8 ? 1 : 4;
  const size_t bytes = size_t((K + N) * r) * elem;
  const char *cached = std::getenv("ETLLM_BENCH_CACHED");
  const size_t n = cached && *cached == '1'
                       ? 1
                       : std::max<size_t>(1, (size_t(256) << 20) / bytes + 1);
  std::vector<uint8_t> factors(n * bytes);
  for (size_t i = 0; i < factors.size() / elem; ++i) {
    const float v = d(gen) * 0.05f;
    if (dtype == DType::I8) {
      factors[i] = uint8_t(int8_t(std::lround(d(gen) * 127)));
    } else if (dtype == DType::F16) {
      const uint16_t h = floatToHalf(v);
      std::memcpy(&factors[i * 2], &h, 2);
    } else {
      std::memcpy(&factors[i * 4], &v, 4);
    }
  }
  std::vector<LoraHookTerms> hooks(1);
  hooks[0].inFeatures = K;
  hooks[0].outFeatures = N;
  const std::vector<float> scales(size_t(r), 0.05f / 127); // int8 only
  const float *sc = dtype == DType::I8 ? scales.data() : nullptr;
  hooks[0].terms.push_back({nullptr, nullptr, r, 2.0f, dtype, dtype, sc, sc});
  ctx.setLoraHooks(&hooks);
  OwnedTensor x(DType::F32, {1, K}), base(DType::F32, {1, N}),
      y(DType::F32, {1, N});
  for (int64_t i = 0; i < K; ++i)
    x->ptr<float>()[i] = d(gen);
  for (int64_t i = 0; i < N; ++i)
    base->ptr<float>()[i] = d(gen);
  std::vector<Tensor *> ins = {x, base}, outs = {y};
  std::vector<int64_t> ints = {0};
  KernelArgs a;
  a.inputs = {ins.data(), ins.size()};
  a.outputs = {outs.data(), outs.size()};
  a.ints = {ints.data(), ints.size()};
  a.ctx = &ctx;
  const cpu::Isa isa = cpu::detectIsa();
  size_t next = 0;
  for (auto _ : state) {
    const uint8_t *f = factors.data() + next * bytes;
    hooks[0].terms[0].at = f;
    hooks[0].terms[0].bt = f + size_t(K * r) * elem;
    next = (next + 1) % n;
    Status st = impl == Impl::Portable ? portableKernels().get(OpId::Lora)(a)
                                       : cpu::runDense(OpId::Lora, a, isa);
    if (!called(state, st, *y))
      break;
  }
  finish(state, double((K + N) * r), double(bytes), impl, pool);
}

void loraShapes(benchmark::internal::Benchmark *b) {
  b->ArgNames({"N", "K", "r", "threads"});
  for (auto [N, K] : std::vector<std::pair<int64_t, int64_t>>{
           {2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}})
    for (int64_t t : {1, 2})
      b->Args({N, K, 16, t});
  b->Unit(benchmark::kMicrosecond);
  b->UseRealTime();
}

void shapes(benchmark::internal::Benchmark *b, bool prefill) {
  b->ArgNames({"N", "K", "S", "threads"});
  for (auto [N, K] : std::vector<std::pair<int64_t, int64_t>>{
           {2048, 2048}, {8192, 2048}, {2048, 8192}, {512, 1024}, {576, 576},
           {1536, 576}, {576, 1536}, {49152, 576}})
    for (int64_t S :
         prefill ? std::vector<int64_t>{1, 128} : std::vector<int64_t>{1})
      for (int64_t t : {1, 2})
        b->Args({N, K, S, t});
  b->Unit(benchmark::kMillisecond);
  b->UseRealTime();
}
void allShapes(benchmark::internal::Benchmark *b) { shapes(b, true); }
/// Gemma 3 270M's tied output layer, decode.
void outputLayerShapes(benchmark::internal::Benchmark *b) {
  b->ArgNames({"N", "K", "S", "threads"});
  for (int64_t t : {1, 2})
    b->Args({262144, 640, 1, t});
  b->Unit(benchmark::kMillisecond);
  b->UseRealTime();
}
void decodeShapes(benchmark::internal::Benchmark *b) { shapes(b, false); }

#define ETLLM_BENCH(Name, P, I, Shapes)                                        \
  void Name(benchmark::State &s) { run(s, P, I); }                             \
  BENCHMARK(Name)->Apply(Shapes)

ETLLM_BENCH(LinearF32_Portable, Problem::LinearF32, Impl::Portable,
            decodeShapes);
ETLLM_BENCH(LinearF32_Cpu, Problem::LinearF32, Impl::Cpu, allShapes);
ETLLM_BENCH(QLinearInt4_Portable, Problem::QLinearInt4, Impl::Portable,
            decodeShapes);
ETLLM_BENCH(QLinearInt4_Cpu, Problem::QLinearInt4, Impl::Cpu, allShapes);
ETLLM_BENCH(QLinearQ4Block_Portable, Problem::QLinearQ4Block, Impl::Portable,
            decodeShapes);
ETLLM_BENCH(QLinearQ4Block_Cpu, Problem::QLinearQ4Block, Impl::Cpu, allShapes);
ETLLM_BENCH(QLinearQ8Block_Cpu, Problem::QLinearQ8Block, Impl::Cpu, allShapes);
ETLLM_BENCH(QLinearQ8_0Block_Cpu, Problem::QLinearQ8_0Block, Impl::Cpu,
            allShapes);
ETLLM_BENCH(QLinearQ8_0Block_OutputLayer_Portable, Problem::QLinearQ8_0Block,
            Impl::Portable, outputLayerShapes);
ETLLM_BENCH(QLinearQ8_0Block_OutputLayer_Cpu, Problem::QLinearQ8_0Block,
            Impl::Cpu, outputLayerShapes);
ETLLM_BENCH(QLinear8da4w_Portable, Problem::QLinear8da4w, Impl::Portable,
            decodeShapes);
ETLLM_BENCH(QLinear8da4w_Cpu, Problem::QLinear8da4w, Impl::Cpu, allShapes);
ETLLM_BENCH(QLinearQ5_0Block_Cpu, Problem::QLinearQ5_0Block, Impl::Cpu,
            allShapes);
ETLLM_BENCH(QLinearQ4_KBlock_Cpu, Problem::QLinearQ4_KBlock, Impl::Cpu,
            allShapes);
ETLLM_BENCH(QLinearQ6_KBlock_Cpu, Problem::QLinearQ6_KBlock, Impl::Cpu,
            allShapes);

#define ETLLM_LORA_BENCH(Name, D, I)                                           \
  void Name(benchmark::State &s) { runLora(s, D, I); }                         \
  BENCHMARK(Name)->Apply(loraShapes)

ETLLM_LORA_BENCH(LoraF32_Portable, DType::F32, Impl::Portable);
ETLLM_LORA_BENCH(LoraF32_Cpu, DType::F32, Impl::Cpu);
ETLLM_LORA_BENCH(LoraF16_Portable, DType::F16, Impl::Portable);
ETLLM_LORA_BENCH(LoraF16_Cpu, DType::F16, Impl::Cpu);
ETLLM_LORA_BENCH(LoraI8_Portable, DType::I8, Impl::Portable);
ETLLM_LORA_BENCH(LoraI8_Cpu, DType::I8, Impl::Cpu);

} // namespace

BENCHMARK_MAIN();
