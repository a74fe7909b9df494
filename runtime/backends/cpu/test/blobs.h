//===- blobs.h - Hand-built cpu blobs for the tests -------------*- C++ -*-===//
//
// The cpu blob builder (flatbuffers + a ConstantTable), the MLP and MoE
// blobs the end-to-end tests run (backend_test.cpp) and the hostile-blob
// tests mutate (hostile_blob_test.cpp), and the portable reference they are
// compared with.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_CPU_TEST_BLOBS_H
#define ETLLM_CPU_TEST_BLOBS_H

#include "helpers.h"

#include "etllm/runtime/backend.h"
#include "etllm/runtime/cpu/backend.h"
#include "etllm/runtime/testing_constants.h"
#include "etllm/schema/cpu_generated.h"

#include <flatbuffers/flatbuffers.h>

namespace etllm::rt::cpu::test {

namespace xfb = ::etllm::cpu;

/// Program constants for the tests: 64-byte-aligned copies.
using rt::testing::TestConstants;

/// Builds an EXN1 blob.
class BlobBuilder {
public:
  struct ValueDesc {
    DType dtype = DType::F32;
    std::vector<int64_t> sizes;
    std::vector<uint8_t> dynamic;
    xfb::ValueKind kind = xfb::ValueKind::INTERNAL;
    uint32_t index = 0;
    xfb::Packing packing = xfb::Packing::DENSE;
    QuantInfo q;
  };
  struct NodeDesc {
    std::string op;
    std::vector<uint32_t> inputs, outputs;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    uint8_t moeActivations = 0;
  };

  uint32_t value(ValueDesc v) {
    values.push_back(std::move(v));
    return uint32_t(values.size() - 1);
  }
  /// An internal 8-bit QAct value of `sizes` (per token, or per block of
  /// `groupSize`), the dimensions marked in `dynamic` dynamic.
  static ValueDesc qactDesc(std::vector<int64_t> sizes,
                            std::vector<uint8_t> dynamic, bool symmetric,
                            int64_t groupSize = 0) {
    ValueDesc v;
    v.dtype = DType::QAct;
    v.sizes = std::move(sizes);
    v.dynamic = std::move(dynamic);
    v.q.bits = 8;
    v.q.symmetric = symmetric;
    v.q.groupSize = groupSize;
    return v;
  }
  uint32_t f32(std::vector<int64_t> sizes,
               xfb::ValueKind kind = xfb::ValueKind::INTERNAL,
               uint32_t index = 0, std::vector<uint8_t> dynamic = {}) {
    ValueDesc v;
    v.sizes = std::move(sizes);
    v.kind = kind;
    v.index = index;
    v.dynamic = std::move(dynamic);
    return value(v);
  }
  void node(std::string op, std::vector<uint32_t> ins,
            std::vector<uint32_t> outs, std::vector<int64_t> ints = {},
            std::vector<double> floats = {}) {
    nodes.push_back({std::move(op), std::move(ins), std::move(outs),
                     std::move(ints), std::move(floats)});
  }

  std::vector<uint8_t> finish() const {
    flatbuffers::FlatBufferBuilder fb;
    std::vector<flatbuffers::Offset<xfb::Value>> vs;
    for (const ValueDesc &v : values) {
      std::vector<uint8_t> dyn = v.dynamic;
      if (dyn.empty())
        dyn.assign(v.sizes.size(), 0);
      auto sv = fb.CreateVector(v.sizes);
      auto dv = fb.CreateVector(dyn);
      xfb::ValueBuilder vb(fb);
      vb.add_dtype(uint8_t(v.dtype));
      vb.add_sizes(sv);
      vb.add_dynamic_dims(dv);
      vb.add_kind(v.kind);
      vb.add_index(v.index);
      vb.add_packing(v.packing);
      vb.add_bits(v.q.bits);
      vb.add_group_size(v.q.groupSize);
      vb.add_symmetric(v.q.symmetric);
      vb.add_scale_dtype(uint8_t(v.q.scaleType));
      vb.add_per_token(v.q.perToken);
      vs.push_back(vb.Finish());
    }
    std::vector<flatbuffers::Offset<xfb::Node>> ns;
    for (const NodeDesc &n : nodes)
      ns.push_back(
          xfb::CreateNode(fb, fb.CreateString(n.op), fb.CreateVector(n.inputs),
                          fb.CreateVector(n.outputs), fb.CreateVector(n.ints),
                          fb.CreateVector(n.floats), n.moeActivations));
    auto g = xfb::CreateGraph(fb, fb.CreateVector(vs), fb.CreateVector(ns));
    xfb::FinishGraphBuffer(fb, g);
    return std::vector<uint8_t>(fb.GetBufferPointer(),
                                fb.GetBufferPointer() + fb.GetSize());
  }

  std::vector<ValueDesc> values;
  std::vector<NodeDesc> nodes;
};

inline Result<std::unique_ptr<DelegateInstance>>
initBlob(const std::vector<uint8_t> &blob, const ConstantTable &constants,
         Isa isa = detectIsa(),
         std::vector<std::pair<std::string, std::string>> specs = {{"format",
                                                                    "EXN1"}},
         ExecContext *ctx = nullptr, MemoryBudget *budget = nullptr) {
  ExecContext own;
  MemoryBudget unlimited(UINT64_MAX, 0);
  return makeCpuBackend(isa)->init(blob.data(), blob.size(), specs, constants,
                                   ctx ? *ctx : own,
                                   budget ? *budget : unlimited);
}

inline Status execute(DelegateInstance &inst, std::vector<Tensor *> ins,
                      std::vector<Tensor *> outs, ExecContext &ctx) {
  return inst.execute({ins.data(), ins.size()}, {outs.data(), outs.size()},
                      ctx);
}

//===----------------------------------------------------------------------===//
// End to end: an MLP block
//===----------------------------------------------------------------------===//

inline constexpr int64_t kD = 64, kH = 96, kMaxS = 8;

/// The weights of the MLP block, dense (for portable) and in the blob.
struct Mlp {
  std::vector<float> norm, w2, b2, shift;
  RandomQWeight w1, w3;
  TestConstants constants;
  std::vector<uint8_t> blob;
};

/// x [1, S, 64] ->
///   h = rms_norm(x, norm); hq = quantize_dynamic(h)
///   a = silu(qlinear(hq, w1: int4 sym G32, 8da))
///   b = qlinear(h, w3: int8 asym G64 f16 scales, weight-only)
///   m = a * b - shift        (row broadcast)
///   o = linear(m, w2, b2)   (F32_NR8)
///   out0 = o + x; out1 = gelu_tanh(out0)   (out0 is also read inside)
///
/// With `legacy`, the quantized weights are in the layout of programs
/// written before QWEIGHT_R16 (QWEIGHT_NR8) and w3 has groups of 16, which
/// the block layout cannot hold (init converts w1 to QWEIGHT_R16 and w3 to
/// a dense QWeight).
inline std::unique_ptr<Mlp> makeMlp(unsigned seed, bool legacy = false) {
  auto mlp = std::make_unique<Mlp>();
  std::mt19937 gen(seed);
  mlp->norm = randomFloats(kD, gen, 0.5f, 1.5f);
  mlp->w2 = randomFloats(size_t(kD * kH), gen, -0.2f, 0.2f);
  mlp->b2 = randomFloats(kD, gen);
  mlp->shift = randomFloats(kH, gen);
  mlp->w1 = makeRandomQWeight(kH, kD, 4, true, 32, DType::F32, gen);
  mlp->w3 =
      makeRandomQWeight(kH, kD, 8, false, legacy ? 16 : 64, DType::F16, gen);
  TestConstants &c = mlp->constants;
  const uint32_t cNorm = c.add(mlp->norm);
  auto addWeight = [&](const RandomQWeight &w) {
    if (!legacy)
      return c.add(w.packed->data, w.packed->capacity);
    auto bytes = packLegacyQWeight(w.dense->ptr<uint8_t>(), w.dense->capacity,
                                   w.n, w.k, w.q);
    EXPECT_TRUE(bytes.ok());
    return c.add(*bytes);
  };
  const uint32_t cW1 = addWeight(mlp->w1);
  const uint32_t cW3 = addWeight(mlp->w3);
  const uint32_t cW2 = c.add(packF32Weight(mlp->w2.data(), kD, kH));
  const uint32_t cB2 = c.add(mlp->b2);
  const uint32_t cShift = c.add(mlp->shift);

  using K = xfb::ValueKind;
  BlobBuilder b;
  const std::vector<uint8_t> dyn = {0, 1, 0};
  const uint32_t x = b.f32({1, kMaxS, kD}, K::INPUT, 0, dyn);
  const uint32_t norm = b.f32({kD}, K::CONSTANT, cNorm);
  BlobBuilder::ValueDesc w1;
  w1.dtype = DType::QWeight;
  w1.sizes = {kH, kD};
  w1.kind = K::CONSTANT;
  w1.index = cW1;
  w1.packing = legacy ? xfb::Packing::QWEIGHT_NR8 : xfb::Packing::QWEIGHT_R16;
  w1.q = mlp->w1.q;
  const uint32_t vW1 = b.value(w1);
  BlobBuilder::ValueDesc w3 = w1;
  w3.index = cW3;
  w3.q = mlp->w3.q;
  const uint32_t vW3 = b.value(w3);
  BlobBuilder::ValueDesc w2;
  w2.sizes = {kD, kH};
  w2.kind = K::CONSTANT;
  w2.index = cW2;
  w2.packing = xfb::Packing::F32_NR8;
  const uint32_t vW2 = b.value(w2);
  const uint32_t b2 = b.f32({kD}, K::CONSTANT, cB2);
  const uint32_t shift = b.f32({kH}, K::CONSTANT, cShift);
  const uint32_t h = b.f32({1, kMaxS, kD}, K::INTERNAL, 0, dyn);
  const uint32_t vHq =
      b.value(BlobBuilder::qactDesc({1, kMaxS, kD}, dyn, /*symmetric=*/false));
  const uint32_t a0 = b.f32({1, kMaxS, kH}, K::INTERNAL, 0, dyn);
  const uint32_t a1 = b.f32({1, kMaxS, kH}, K::INTERNAL, 0, dyn);
  const uint32_t bq = b.f32({1, kMaxS, kH}, K::INTERNAL, 0, dyn);
  const uint32_t m0 = b.f32({1, kMaxS, kH}, K::INTERNAL, 0, dyn);
  const uint32_t m1 = b.f32({1, kMaxS, kH}, K::INTERNAL, 0, dyn);
  const uint32_t o = b.f32({1, kMaxS, kD}, K::INTERNAL, 0, dyn);
  const uint32_t out0 = b.f32({1, kMaxS, kD}, K::OUTPUT, 0, dyn);
  const uint32_t out1 = b.f32({1, kMaxS, kD}, K::OUTPUT, 1, dyn);
  b.node(opName(OpId::RmsNorm), {x, norm}, {h}, {}, {1e-5, 0.0});
  b.node(opName(OpId::QuantizeDynamic), {h}, {vHq});
  b.node(opName(OpId::QLinear), {vHq, vW1}, {a0});
  b.node(opName(OpId::Silu), {a0}, {a1});
  b.node(opName(OpId::QLinear), {h, vW3}, {bq});
  b.node(opName(OpId::Mul), {a1, bq}, {m0});
  b.node(opName(OpId::Sub), {m0, shift}, {m1});
  b.node(opName(OpId::Linear), {m1, vW2, b2}, {o});
  b.node(opName(OpId::Add), {o, x}, {out0});
  b.node(opName(OpId::Gelu), {out0}, {out1}, {1});
  mlp->blob = b.finish();
  return mlp;
}

/// The block with the portable kernels on the dense weights.
inline void portableMlp(const Mlp &mlp, Tensor &x, Tensor &out0, Tensor &out1) {
  const int64_t S = x.sizes[1];
  OwnedTensor norm = f32Tensor({kD}, mlp.norm);
  OwnedTensor w2 = f32Tensor({kD, kH}, mlp.w2);
  OwnedTensor b2 = f32Tensor({kD}, mlp.b2);
  OwnedTensor shift = f32Tensor({kH}, mlp.shift);
  OwnedTensor h = f32Output(size_t(S * kD)), a0 = f32Output(size_t(S * kH)),
              a1 = f32Output(size_t(S * kH)), bq = f32Output(size_t(S * kH)),
              m0 = f32Output(size_t(S * kH)), m1 = f32Output(size_t(S * kH)),
              o = f32Output(size_t(S * kD));
  QuantInfo q;
  q.bits = 8;
  q.symmetric = false;
  OwnedTensor hq(DType::QAct, {1, S, kD}, 0, q);
  ASSERT_OK(runPortable(OpId::RmsNorm, {&x, norm}, {h}, {}, {1e-5, 0.0}));
  ASSERT_OK(runPortable(OpId::QuantizeDynamic, {h}, {hq}));
  ASSERT_OK(runPortable(OpId::QLinear,
                        {hq, const_cast<Tensor *>(mlp.w1.dense.get())}, {a0}));
  ASSERT_OK(runPortable(OpId::Silu, {a0}, {a1}));
  ASSERT_OK(runPortable(OpId::QLinear,
                        {h, const_cast<Tensor *>(mlp.w3.dense.get())}, {bq}));
  ASSERT_OK(runPortable(OpId::Mul, {a1, bq}, {m0}));
  ASSERT_OK(runPortable(OpId::Sub, {m0, shift}, {m1}));
  ASSERT_OK(runPortable(OpId::Linear, {m1, w2, b2}, {o}));
  ASSERT_OK(runPortable(OpId::Add, {o, &x}, {&out0}));
  ASSERT_OK(runPortable(OpId::Gelu, {&out0}, {&out1}, {1}));
}

/// Expects outputs close to portable's. The two runs can diverge by one
/// quantization step where rms_norm's output differs by an ulp and an
/// activation sits on a rounding boundary (plus the kernels' documented
/// reassociation), i.e. by ~1e-4 of the output scale: the bound is 2e-3 of
/// the largest |output|, far below what a mis-wired graph produces.
inline void expectOutputsClose(const Tensor &got, const Tensor &ref) {
  ASSERT_EQ(rt::testing::shape(got), rt::testing::shape(ref));
  std::vector<float> g = floatsOf(got), r = floatsOf(ref);
  double scale = 0;
  for (float v : r)
    scale = std::max(scale, double(std::fabs(v)));
  ASSERT_GT(scale, 0.1);
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], r[i], 2e-3 * scale) << "at " << i;
}

struct MoeBlob {
  TestConstants constants;
  BlobBuilder b;
  OwnedTensor router, gate, up, down; // dense (portable)
  uint32_t x, vr, vg, vu, vd, y;
};

inline std::unique_ptr<MoeBlob> makeMoe(uint8_t acts) {
  constexpr int64_t E = 5, F = 32, D = 64;
  auto m = std::make_unique<MoeBlob>();
  std::mt19937 gen(21);
  using K = xfb::ValueKind;
  std::vector<float> rv = randomFloats(size_t(E * D), gen);
  m->router = f32Tensor({E, D}, rv);
  m->x = m->b.f32({4, D}, K::INPUT, 0, {1, 0});
  BlobBuilder::ValueDesc rd;
  rd.sizes = {E, D};
  rd.kind = K::CONSTANT;
  rd.index = m->constants.add(rv);
  m->vr = m->b.value(rd);
  auto stacked = [&](int64_t n, int64_t k, OwnedTensor &dense) {
    RandomQWeight w = makeRandomQWeight(E * n, k, 4, true, 32, DType::F16, gen);
    auto p =
        packQExperts(w.dense->ptr<uint8_t>(), w.dense->capacity, E, n, k, w.q);
    EXPECT_TRUE(p.ok());
    dense = std::move(w.dense);
    dense->rank = 3;
    dense->sizes[0] = E;
    dense->sizes[1] = n;
    dense->sizes[2] = k;
    BlobBuilder::ValueDesc wd;
    wd.dtype = DType::QWeight;
    wd.sizes = {E, n, k};
    wd.kind = K::CONSTANT;
    wd.index = m->constants.add(*p);
    wd.packing = xfb::Packing::QWEIGHT_R16;
    wd.q = w.q;
    return m->b.value(wd);
  };
  m->vg = stacked(F, D, m->gate);
  m->vu = stacked(F, D, m->up);
  m->vd = stacked(D, F, m->down);
  m->y = m->b.f32({4, D}, K::OUTPUT, 0, {1, 0});
  m->b.node(opName(OpId::Moe), {m->x, m->vr, m->vg, m->vu, m->vd}, {m->y},
            {2, 0, 0, 1, 1, 1, 0}, {1.0, 0.0});
  m->b.nodes.back().moeActivations = acts;
  return m;
}

} // namespace etllm::rt::cpu::test

#endif // ETLLM_CPU_TEST_BLOBS_H
