//===- attention_test.cpp - RoPE, the KV caches and SDPA vs portable ------===//
//
// The attention block as the compiler schedules it: one ROPE dispatch
// rotates the query heads, writes the rotated key heads into the key cache
// and the value heads into the value cache (device memory), then SDPA reads
// the caches (split-KV partials and SDPA_COMBINE when decoding, direct when
// prefilling). Calls run in sequence - a prefill, then decode steps - and
// every call's output is compared with the portable rope, kv_cache_update
// and sdpa on a host copy of the caches, at contexts 1, 31, 32, 33 and the
// cache's length, for several GQA ratios.
//
//===----------------------------------------------------------------------===//
#include "harness.h"

namespace etllm::rt::vulkan::test {
namespace {

std::vector<float> invFreq(int64_t R, double theta = 10000.0, int64_t D = 0) {
  std::vector<float> f(static_cast<size_t>(R));
  const double dim = double(D ? D : 2 * R);
  for (int64_t i = 0; i < R; ++i)
    f[size_t(i)] = float(1.0 / std::pow(theta, double(2 * i) / dim));
  return f;
}

/// [1, S, H, D] <-> [1, H, S, D] (portable transpose).
OwnedTensor transposed(const Tensor &t) {
  OwnedTensor out(t.dtype, {t.sizes[0], t.sizes[2], t.sizes[1], t.sizes[3]});
  EXPECT_TRUE(runPortable(OpId::Transpose, {const_cast<Tensor *>(&t)},
                          {out.get()}, {1, 2})
                  .ok());
  return out;
}

class Rope : public VulkanTest {};

TEST_F(Rope, ConventionsPartialRotaryAndPositions) {
  const int64_t H = 3, bound = 31;
  for (int64_t conv : {0, 1, 2})
    for (auto [D, R] : {std::pair<int64_t, int64_t>{8, 4}, {64, 32}, {12, 4}})
      for (int64_t S : {1, 5, 31}) {
        SCOPED_TRACE("convention " + std::to_string(conv) +
                     " D=" + std::to_string(D) + " R=" + std::to_string(R) +
                     " S=" + std::to_string(S));
        Constants consts;
        Blob b;
        b.seqBound = bound;
        auto x = b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32,
                         {1, bound, H, D}, 1);
        auto pos = b.input(vfb::IoRole::POSITIONS, DType::I64, DType::I32,
                           {bound}, 0, 64);
        auto y = b.output(DType::F32, DType::F32, {1, bound, H, D}, 1);
        const std::vector<float> freq = invFreq(R, 10000.0, D);
        auto table = b.ropeTable(consts, freq, 64, 0.75f);
        RopeParams p{};
        p.jobs = 1;
        p.r = uint32_t(R);
        p.convention = uint32_t(conv);
        p.tableRows = 64;
        p.job0 = {uint32_t(H),
                  uint32_t(D),
                  1,
                  0,
                  0,
                  0,
                  uint32_t(D),
                  uint32_t(H * D),
                  0,
                  uint32_t(D),
                  uint32_t(H * D),
                  0};
        b.dispatch(KernelId::Rope, Variant::rope(false, 1), {pos, table, x, y},
                   p);
        auto inst = instantiate(validatedBackend(), b, consts);
        ASSERT_TRUE(inst.ok()) << inst.message();
        std::vector<int64_t> positions;
        for (int64_t s = 0; s < S; ++s)
          positions.push_back(3 + 2 * s);
        OwnedTensor xt =
            floatTensor({1, S, H, D}, randomFloats(size_t(S * H * D), 2),
                        size_t(bound * H * D * 4));
        OwnedTensor pt = rt::testing::makeI64({S}, positions);
        OwnedTensor out(DType::F32, {1, S, H, D}, size_t(bound * H * D * 4));
        ASSERT_TRUE(run(**inst, {xt.get(), pt.get()}, {out.get()}).ok());
        OwnedTensor xh = transposed(*xt);
        OwnedTensor ft = floatTensor({R}, freq);
        OwnedTensor rh(DType::F32, {1, H, S, D});
        ASSERT_TRUE(runPortable(OpId::Rope, {xh.get(), pt.get(), ft.get()},
                                {rh.get()}, {conv}, {0.75})
                        .ok());
        OwnedTensor want = transposed(*rh);
        EXPECT_TRUE(near(*out, *want, 1e-6, 1e-6));
        // A position beyond the table is an error, not a read.
        OwnedTensor far = rt::testing::makeI64({1}, {64});
        OwnedTensor one =
            floatTensor({1, 1, H, D}, randomFloats(size_t(H * D), 4),
                        size_t(bound * H * D * 4));
        EXPECT_FALSE(run(**inst, {one.get(), far.get()}, {out.get()}).ok());
      }
}

struct AttentionCase {
  int64_t H, Hkv, D, Dv, T;
  bool f16 = false;
};

/// The attention block over device caches, called with a prefill of
/// `prefill` tokens and then decode steps up to the cache's end.
void runAttention(const AttentionCase &c, int64_t prefill) {
  SCOPED_TRACE("H=" + std::to_string(c.H) + " Hkv=" + std::to_string(c.Hkv) +
               " D=" + std::to_string(c.D) + " Dv=" + std::to_string(c.Dv) +
               " T=" + std::to_string(c.T) + (c.f16 ? " f16" : "") +
               " prefill " + std::to_string(prefill));
  const int64_t H = c.H, Hkv = c.Hkv, D = c.D, Dv = c.Dv, T = c.T, R = D / 2;
  const DType dev = c.f16 ? DType::F16 : DType::F32;
  const uint32_t es = uint32_t(elementSize(dev));
  const uint32_t chunk = 8, splits = sdpaSplits(uint64_t(T), chunk);
  const float scale = 1.0f / std::sqrt(float(D));
  Constants consts;
  Blob b;
  b.seqBound = T;
  b.act = dev;
  b.numLayers = 1;
  auto q = b.input(vfb::IoRole::ACTIVATION, DType::F32, dev, {1, T, H, D}, 1);
  auto k = b.input(vfb::IoRole::ACTIVATION, DType::F32, dev, {1, T, Hkv, D}, 1);
  auto v =
      b.input(vfb::IoRole::ACTIVATION, DType::F32, dev, {1, T, Hkv, Dv}, 1);
  auto pos = b.input(vfb::IoRole::POSITIONS, DType::I64, DType::I32, {T}, 0, T);
  auto o = b.output(DType::F32, dev, {1, T, H, Dv}, 1);
  auto qr = b.slot(uint64_t(T * H * D) * es);
  auto part = b.slot(uint64_t(H) * splits * uint64_t(Dv + 2) * 4);
  auto kc = b.cache(uint64_t(Hkv * T * D) * es);
  auto vc = b.cache(uint64_t(Hkv * T * Dv) * es);
  const std::vector<float> freq = invFreq(R);
  auto table = b.ropeTable(consts, freq, T);
  RopeParams rp{};
  rp.jobs = 3;
  rp.r = uint32_t(R);
  rp.tableRows = uint32_t(T);
  rp.job0 = {
      uint32_t(H), uint32_t(D),     1, 0, 0, 0, uint32_t(D), uint32_t(H * D), 0,
      uint32_t(D), uint32_t(H * D), 0};
  rp.job1 = {uint32_t(Hkv),
             uint32_t(D),
             1,
             1,
             0,
             0,
             uint32_t(D),
             uint32_t(Hkv * D),
             0,
             uint32_t(T * D),
             uint32_t(D),
             uint32_t(T)};
  rp.job2 = {uint32_t(Hkv),
             uint32_t(Dv),
             0,
             1,
             0,
             0,
             uint32_t(Dv),
             uint32_t(Hkv * Dv),
             0,
             uint32_t(T * Dv),
             uint32_t(Dv),
             uint32_t(T)};
  b.dispatch(KernelId::Rope, Variant::rope(c.f16, 3),
             {pos, table, q, qr, k, kc, v, vc}, rp, true, 0);
  SdpaParams sp{};
  sp.heads = uint32_t(H);
  sp.kvHeads = uint32_t(Hkv);
  sp.d = uint32_t(D);
  sp.dv = uint32_t(Dv);
  sp.qStrideH = uint32_t(D);
  sp.qStrideS = uint32_t(H * D);
  sp.oStrideH = uint32_t(Dv);
  sp.oStrideS = uint32_t(H * Dv);
  sp.kStrideH = uint32_t(T * D);
  sp.kStrideT = uint32_t(D);
  sp.vStrideH = uint32_t(T * Dv);
  sp.vStrideT = uint32_t(Dv);
  sp.t = uint32_t(T);
  sp.causal = 1;
  sp.hasPositions = 1;
  sp.scale = scale;
  sp.splits = splits;
  sp.chunk = chunk;
  sp.maxSplitRows = uint32_t(H);
  b.dispatch(KernelId::Sdpa, c.f16 ? Variant::kActF16 : 0u,
             {pos, qr, kc, vc, o, part}, sp, true, 0);
  SdpaCombineParams cp{};
  cp.heads = uint32_t(H);
  cp.dv = uint32_t(Dv);
  cp.splits = splits;
  cp.oStrideH = uint32_t(Dv);
  cp.oStrideS = uint32_t(H * Dv);
  b.dispatch(KernelId::SdpaCombine, c.f16 ? Variant::kActF16 : 0u, {part, o},
             cp, true, 0);
  auto inst = instantiate(validatedBackend(), b, consts);
  ASSERT_TRUE(inst.ok()) << inst.message();

  // The reference's caches ([1, Hkv, T, D], f32).
  OwnedTensor kcache(DType::F32, {1, Hkv, T, D}),
      vcache(DType::F32, {1, Hkv, T, Dv});
  OwnedTensor ft = floatTensor({R}, freq);
  int64_t done = 0, call = 0;
  while (done < T) {
    const int64_t S = call == 0 ? prefill : 1;
    std::vector<int64_t> positions;
    for (int64_t s = 0; s < S; ++s)
      positions.push_back(done + s);
    auto inputs = [&](int64_t n, int64_t heads, int64_t d, uint32_t seed) {
      std::vector<float> vals = randomFloats(size_t(n * heads * d), seed, 2.0f);
      if (c.f16)
        vals = roundHalf(vals);
      return floatTensor({1, n, heads, d}, vals, size_t(T * heads * d * 4));
    };
    OwnedTensor qt = inputs(S, H, D, uint32_t(100 + call));
    OwnedTensor kt = inputs(S, Hkv, D, uint32_t(200 + call));
    OwnedTensor vt = inputs(S, Hkv, Dv, uint32_t(300 + call));
    OwnedTensor pt = rt::testing::makeI64({S}, positions);
    OwnedTensor out(DType::F32, {1, S, H, Dv}, size_t(T * H * Dv * 4));
    ASSERT_TRUE(
        run(**inst, {qt.get(), kt.get(), vt.get(), pt.get()}, {out.get()})
            .ok());
    // Portable: rope q and k, update the caches, attend.
    OwnedTensor qh = transposed(*qt), kh = transposed(*kt),
                vh = transposed(*vt);
    OwnedTensor qrot(DType::F32, {1, H, S, D}),
        krot(DType::F32, {1, Hkv, S, D});
    ASSERT_TRUE(runPortable(OpId::Rope, {qh.get(), pt.get(), ft.get()},
                            {qrot.get()}, {0}, {1.0})
                    .ok());
    ASSERT_TRUE(runPortable(OpId::Rope, {kh.get(), pt.get(), ft.get()},
                            {krot.get()}, {0}, {1.0})
                    .ok());
    if (c.f16) // the device caches hold f16
      for (Tensor *t : {krot.get(), vh.get()})
        for (int64_t i = 0; i < t->numel(); ++i)
          t->ptr<float>()[i] = halfToFloat(floatToHalf(t->ptr<float>()[i]));
    ASSERT_TRUE(runPortable(OpId::KvCacheUpdate,
                            {kcache.get(), pt.get(), krot.get()},
                            {kcache.get()}, {2})
                    .ok());
    ASSERT_TRUE(runPortable(OpId::KvCacheUpdate,
                            {vcache.get(), pt.get(), vh.get()}, {vcache.get()},
                            {2})
                    .ok());
    OwnedTensor att(DType::F32, {1, H, S, Dv});
    ASSERT_TRUE(runPortable(OpId::Sdpa,
                            {qrot.get(), kcache.get(), vcache.get(), pt.get()},
                            {att.get()}, {0, 1, 1, 0}, {double(scale), 0.0})
                    .ok());
    OwnedTensor want = transposed(*att);
    EXPECT_TRUE(near(*out, *want, c.f16 ? 2e-2 : 2e-5, c.f16 ? 1e-2 : 1e-5))
        << "context " << done + S << " (call " << call << ", S " << S << ")";
    done += S;
    ++call;
  }
  const InstanceStats *st = instanceStats(**inst);
  ASSERT_NE(st, nullptr);
  // Recorded once per bucket used: the prefill's and the decode's.
  EXPECT_EQ(st->recordings, prefill == 1 ? 1u : 2u);
  EXPECT_EQ(st->dispatchesLastCall, 3u); // rope, split-KV sdpa, combine
  EXPECT_EQ(st->barriersLastCall, 2u);
}

class Attention : public VulkanTest {};

TEST_F(Attention, ContextsAndGqaRatiosF32) {
  // T = 40 with chunks of 8: contexts 1, 31, 32, 33 and 40 (the cache's end)
  // all run, across split boundaries.
  for (auto [H, Hkv] : {std::pair<int64_t, int64_t>{4, 4}, {4, 2}, {8, 2}}) {
    runAttention({H, Hkv, 16, 16, 40}, 1);  // every context from 1
    runAttention({H, Hkv, 16, 16, 40}, 31); // a prefill to 31, then 32, 33...
  }
}

TEST_F(Attention, HeadSizesAndF16) {
  runAttention({2, 1, 64, 64, 33}, 5);
  runAttention({4, 2, 8, 24, 33}, 32); // the value head differs
  runAttention({4, 1, 64, 64, 40, true}, 31);
  runAttention({4, 2, 16, 16, 40, true}, 1);
}

TEST_F(Attention, WindowSoftcapNoPositionsNotCausal) {
  // K and V as plain inputs; q token-major, as the linear writes it.
  const int64_t H = 4, Hkv = 2, D = 16, T = 24, bound = 8;
  struct Mode {
    bool causal, positions;
    int64_t window;
    double softcap;
  };
  for (Mode m : {Mode{false, false, 0, 0.0}, Mode{true, false, 0, 0.0},
                 Mode{true, true, 5, 0.0}, Mode{true, true, 0, 30.0}})
    for (int64_t S : {1, 7}) {
      SCOPED_TRACE("causal " + std::to_string(m.causal) + " positions " +
                   std::to_string(m.positions) + " window " +
                   std::to_string(m.window) + " softcap " +
                   std::to_string(m.softcap) + " S " + std::to_string(S));
      const uint32_t chunk = 8, splits = sdpaSplits(T, chunk);
      Constants consts;
      Blob b;
      b.seqBound = bound;
      auto q = b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32,
                       {1, bound, H, D}, 1);
      auto k = b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32,
                       {1, Hkv, T, D}, -1);
      auto v = b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32,
                       {1, Hkv, T, D}, -1);
      auto pos = m.positions ? b.input(vfb::IoRole::POSITIONS, DType::I64,
                                       DType::I32, {bound}, 0, T)
                             : q;
      auto o = b.output(DType::F32, DType::F32, {1, bound, H, D}, 1);
      auto part = b.slot(uint64_t(H) * splits * (D + 2) * 4);
      SdpaParams sp{};
      sp.heads = uint32_t(H);
      sp.kvHeads = uint32_t(Hkv);
      sp.d = sp.dv = uint32_t(D);
      sp.qStrideH = sp.oStrideH = uint32_t(D);
      sp.qStrideS = sp.oStrideS = uint32_t(H * D);
      sp.kStrideH = sp.vStrideH = uint32_t(T * D);
      sp.kStrideT = sp.vStrideT = uint32_t(D);
      sp.t = uint32_t(T);
      sp.causal = m.causal;
      sp.hasPositions = m.positions;
      sp.window = uint32_t(m.window);
      sp.scale = 0.3f;
      sp.softcap = float(m.softcap);
      sp.splits = splits;
      sp.chunk = chunk;
      sp.maxSplitRows = uint32_t(H);
      b.dispatch(KernelId::Sdpa, 0u, {pos, q, k, v, o, part}, sp);
      SdpaCombineParams cp{uint32_t(H), uint32_t(D), splits,         0, 0,
                           0,           uint32_t(D), uint32_t(H * D)};
      b.dispatch(KernelId::SdpaCombine, 0u, {part, o}, cp);
      auto inst = instantiate(validatedBackend(), b, consts);
      ASSERT_TRUE(inst.ok()) << inst.message();
      OwnedTensor qt =
          floatTensor({1, S, H, D}, randomFloats(size_t(S * H * D), 1),
                      size_t(bound * H * D * 4));
      OwnedTensor kt =
          floatTensor({1, Hkv, T, D}, randomFloats(size_t(Hkv * T * D), 2));
      OwnedTensor vt =
          floatTensor({1, Hkv, T, D}, randomFloats(size_t(Hkv * T * D), 3));
      std::vector<int64_t> positions;
      for (int64_t s = 0; s < S; ++s)
        positions.push_back(10 + 2 * s);
      OwnedTensor pt = rt::testing::makeI64({S}, positions);
      OwnedTensor out(DType::F32, {1, S, H, D}, size_t(bound * H * D * 4));
      std::vector<Tensor *> ins = {qt.get(), kt.get(), vt.get()};
      if (m.positions)
        ins.push_back(pt.get());
      ASSERT_TRUE(run(**inst, ins, {out.get()}).ok());
      OwnedTensor qh = transposed(*qt);
      OwnedTensor att(DType::F32, {1, H, S, D});
      std::vector<Tensor *> pin = {qh.get(), kt.get(), vt.get()};
      if (m.positions)
        pin.push_back(pt.get());
      ASSERT_TRUE(runPortable(OpId::Sdpa, pin, {att.get()},
                              {0, m.positions, m.causal, m.window},
                              {0.3, m.softcap})
                      .ok());
      OwnedTensor want = transposed(*att);
      EXPECT_TRUE(near(*out, *want, 2e-6, 2e-5));
    }
}

} // namespace
} // namespace etllm::rt::vulkan::test
