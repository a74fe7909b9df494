//===- lora_test.cpp - LoRA adapter files and hooks at run time -----------===//
//
// A program with one LoRA hook is built with the flatbuffers API (as
// program_test.cpp does), and adapter files for it with the adapter schema:
// the kernel adds s * scaling * B (A x), adapters add up, rescaling and
// removing work (removing gives the base bit for bit), and every malformed
// adapter file is one error naming the file and the target, after which the
// module still runs.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/half.h"
#include "etllm/runtime/lora.h"
#include "etllm/runtime/mutation_testing.h"
#include "etllm/runtime/program.h"
#include "etllm/runtime/testing_program.h"
#include "etllm/schema/lora_generated.h"
#include "etllm/schema/program_generated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

using namespace etllm::rt;
namespace fbs = etllm::schema;
namespace lfb = etllm::lora;
using etllm::rt::testing::offsetIn;
using etllm::rt::testing::scalarAt;
using etllm::rt::testing::with;

namespace {

constexpr int64_t kRows = 2, kIn = 4, kOut = 3;
const char *kHook = "model.layers.0.self_attn.q_proj";

struct ProgramSpec {
  uint32_t maxRank = 2;
  int64_t hookIndex = 0;
  uint64_t hashSize = 32;
  bool hooks = true;
};

/// forward(x: f32 [2, 4]) -> lora(x, c) with c a constant [2, 3]; hook 0 is
/// kHook [3, 4]; segment 1 holds the content hash (bytes 0xab...).
std::vector<uint8_t> buildProgram(const ProgramSpec &s = {}) {
  flatbuffers::FlatBufferBuilder fb;
  auto tensor = [&](std::vector<int64_t> sizes, fbs::StorageKind kind,
                    uint64_t offset, uint64_t capacity) {
    std::vector<uint8_t> dyn(sizes.size(), 0);
    return fbs::CreateTensor(fb, fbs::DType::F32, fb.CreateVector(sizes),
                             fb.CreateVector(dyn), kind, 0, offset, capacity, 0,
                             0, 0, 0, fb.CreateString("t"));
  };
  std::vector<flatbuffers::Offset<fbs::Tensor>> values = {
      tensor({kRows, kIn}, fbs::StorageKind::PLANNED, 0, 32),
      tensor({kRows, kOut}, fbs::StorageKind::CONSTANT, 0, 24),
      tensor({kRows, kOut}, fbs::StorageKind::PLANNED, 64, 24)};
  std::vector<uint32_t> ins = {0, 1}, outs = {2};
  std::vector<int64_t> ints = {s.hookIndex};
  auto kc = fbs::CreateKernelCall(fb, fb.CreateString(opName(OpId::Lora)),
                                  fb.CreateVector(ins), fb.CreateVector(outs),
                                  fb.CreateVector(ints));
  std::vector<flatbuffers::Offset<fbs::InstructionEntry>> instrs = {
      fbs::CreateInstructionEntry(fb, fbs::Instruction::KernelCall,
                                  kc.Union())};
  std::vector<uint32_t> mIn = {0}, mOut = {2};
  std::vector<uint64_t> arenas = {128};
  auto method =
      fbs::CreateMethod(fb, fb.CreateString("forward"), fb.CreateVector(values),
                        fb.CreateVector(mIn), fb.CreateVector(mOut),
                        fb.CreateVector(instrs), fb.CreateVector(arenas));
  std::vector<flatbuffers::Offset<fbs::Constant>> consts = {
      fbs::CreateConstant(fb, fb.CreateString("c"), 0, 0, 24)};
  std::vector<flatbuffers::Offset<fbs::Segment>> segs = {
      fbs::CreateSegment(fb, 0, 64), fbs::CreateSegment(fb, 64, s.hashSize)};
  std::vector<flatbuffers::Offset<fbs::Method>> methods = {method};
  flatbuffers::Offset<fbs::LoraHooks> lora = 0;
  if (s.hooks) {
    std::vector<flatbuffers::Offset<fbs::LoraHook>> hooks = {
        fbs::CreateLoraHook(fb, fb.CreateString(kHook), kIn, kOut)};
    lora = fbs::CreateLoraHooks(fb, s.maxRank, fb.CreateVector(hooks), 1);
  }
  auto prog = fbs::CreateProgram(fb, 1, fb.CreateVector(methods), 0,
                                 fb.CreateVector(consts), fb.CreateVector(segs),
                                 0, 0, lora);
  fbs::FinishProgramBuffer(fb, prog);
  std::vector<uint8_t> file = etllm::rt::testing::programFile(fb, 1, 128);
  const uint64_t base = etllm::rt::testing::segmentBaseOf(file);
  float c[kRows * kOut] = {1, 2, 3, 4, 5, 6};
  std::memcpy(file.data() + base, c, sizeof c);
  std::memset(file.data() + base + 64, 0xab, 32);
  return file;
}

const std::string kHash(64, 'a'); // hex of 32 bytes 0xab: "abab..."
std::string hashOfProgram() {
  std::string s;
  for (int i = 0; i < 32; ++i)
    s += "ab";
  return s;
}

/// Knobs that break an adapter file.
struct AdapterSpec {
  uint32_t version = kLoraFormatVersion;
  std::string baseHash = hashOfProgram();
  uint32_t rank = 2;
  double alpha = 4; // scaling 2
  double scaling = 2;
  std::string target = kHook;
  int64_t in = kIn, out = kOut;
  int64_t aCount = -1, bCount = -1; // -1: the right count
  float poisonA = 0, poisonB = 0;   // non-zero: written into element 0
  int seed = 1;
  bool twice = false;
  // How A and B are stored: "f32", "f16", "i8", "both" (f32 and f16: an
  // error) or "none".
  std::string storeA = "f32", storeB = "f32";
  // int8 storage: the values times 8 (exact: they are multiples of 1/8)
  // with scales 1/8; scaleCount -1: one per rank index; poisonScale
  // non-zero: written into scale 0 of both matrices; scalesAlone: scales
  // without int8 values (an error).
  int64_t scaleCount = -1;
  float poisonScale = 0;
  bool scalesAlone = false;
};

std::vector<float> values(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float((int(i) * 7 + seed * 13) % 11 - 5) / 8.0f;
  return v;
}

std::vector<uint8_t> buildAdapter(const AdapterSpec &s = {}) {
  flatbuffers::FlatBufferBuilder fb;
  auto at =
      values(s.aCount >= 0 ? size_t(s.aCount) : size_t(kIn * s.rank), s.seed);
  auto bt = values(s.bCount >= 0 ? size_t(s.bCount) : size_t(s.rank * kOut),
                   s.seed + 1);
  if (s.poisonA != 0)
    at[0] = s.poisonA;
  if (s.poisonB != 0)
    bt[0] = s.poisonB;
  std::vector<flatbuffers::Offset<lfb::LoraTarget>> targets;
  auto halves = [](const std::vector<float> &v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      h[i] = floatToHalf(v[i]);
    return h;
  };
  auto f32 = [&](const std::string &how, const std::vector<float> &v) {
    return how == "f32" || how == "both"
               ? fb.CreateVector(v)
               : flatbuffers::Offset<flatbuffers::Vector<float>>();
  };
  auto f16 = [&](const std::string &how, const std::vector<float> &v) {
    return how == "f16" || how == "both"
               ? fb.CreateVector(halves(v))
               : flatbuffers::Offset<flatbuffers::Vector<uint16_t>>();
  };
  auto i8 = [&](const std::string &how, const std::vector<float> &v) {
    std::vector<int8_t> q(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      q[i] = int8_t(std::lround(v[i] * 8));
    return how == "i8" ? fb.CreateVector(q)
                       : flatbuffers::Offset<flatbuffers::Vector<int8_t>>();
  };
  auto scales = [&](const std::string &how) {
    std::vector<float> sc(
        s.scaleCount >= 0 ? size_t(s.scaleCount) : size_t(s.rank), 0.125f);
    if (s.poisonScale != 0 && !sc.empty())
      sc[0] = s.poisonScale;
    return how == "i8" || s.scalesAlone
               ? fb.CreateVector(sc)
               : flatbuffers::Offset<flatbuffers::Vector<float>>();
  };
  for (int k = 0; k < (s.twice ? 2 : 1); ++k) {
    auto name = fb.CreateString(s.target);
    auto a32 = f32(s.storeA, at), b32 = f32(s.storeB, bt);
    auto a16 = f16(s.storeA, at), b16 = f16(s.storeB, bt);
    auto a8 = i8(s.storeA, at), b8 = i8(s.storeB, bt);
    auto as = scales(s.storeA), bs = scales(s.storeB);
    targets.push_back(lfb::CreateLoraTarget(fb, name, s.in, s.out, a32, b32,
                                            a16, b16, a8, as, b8, bs));
  }
  auto root =
      lfb::CreateAdapter(fb, s.version, fb.CreateString(s.baseHash), s.rank,
                         s.alpha, s.scaling, fb.CreateVector(targets));
  lfb::FinishAdapterBuffer(fb, root);
  return {fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize()};
}

struct Fixture {
  std::shared_ptr<Program> program;
  std::unique_ptr<Module> module;
  Method *forward = nullptr;
  float x[kRows * kIn] = {0.5f, -1, 2, 0.25f, 1, 1.5f, -0.5f, 3};

  explicit Fixture(const ProgramSpec &s = {}) {
    auto p = Program::loadFromBuffer(buildProgram(s).data(),
                                     buildProgram(s).size(), "base.pte");
    EXPECT_TRUE(p.ok()) << p.message();
    program = *p;
    auto m = Module::create(program);
    EXPECT_TRUE(m.ok()) << m.message();
    module = std::move(m.value());
    forward = module->method("forward").value();
  }
  std::vector<float> run() {
    int64_t sizes[2] = {kRows, kIn};
    EXPECT_TRUE(forward->setInput(0, DType::F32, sizes, 2, x).ok());
    Status st = forward->execute();
    EXPECT_TRUE(st.ok()) << st.message();
    const float *y = forward->output(0).ptr<float>();
    return {y, y + kRows * kOut};
  }
  Result<std::shared_ptr<const LoraAdapter>>
  load(const std::vector<uint8_t> &bytes, const std::string &name = "a.etla") {
    return LoraAdapter::loadFromBuffer(bytes.data(), bytes.size(), name,
                                       *program);
  }
};

/// c + s * scaling * (x A^T) B^T in double, for A^T `at` [kIn, rank] and
/// B^T `bt` [rank, kOut].
std::vector<double> expectedOf(const Fixture &f, const std::vector<float> &at,
                               const std::vector<float> &bt, uint32_t rank,
                               double scaling, double s) {
  std::vector<double> y = {1, 2, 3, 4, 5, 6};
  for (int64_t m = 0; m < kRows; ++m)
    for (int64_t o = 0; o < kOut; ++o) {
      double acc = 0;
      for (uint32_t k = 0; k < rank; ++k) {
        double t = 0;
        for (int64_t i = 0; i < kIn; ++i)
          t += double(f.x[m * kIn + i]) * at[size_t(i * rank + k)];
        acc += t * bt[size_t(k * kOut + o)];
      }
      y[size_t(m * kOut + o)] += s * scaling * acc;
    }
  return y;
}

/// expectedOf for the adapter `a` builds.
std::vector<double> expected(const Fixture &f, const AdapterSpec &a, double s) {
  return expectedOf(f, values(size_t(kIn * a.rank), a.seed),
                    values(size_t(a.rank * kOut), a.seed + 1), a.rank,
                    a.scaling, s);
}

TEST(Lora, ProgramHooksAreRead) {
  Fixture f;
  ASSERT_EQ(f.program->loraHooks().size(), 1u);
  EXPECT_EQ(f.program->loraHooks()[0].name, kHook);
  EXPECT_EQ(f.program->loraHooks()[0].inFeatures, kIn);
  EXPECT_EQ(f.program->loraMaxRank(), 2);
  EXPECT_EQ(f.program->contentHash(), hashOfProgram());
}

TEST(Lora, ApplyRescaleRemoveAndSum) {
  Fixture f;
  const std::vector<float> base = f.run();
  EXPECT_EQ(base, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  AdapterSpec sa, sb;
  sb.seed = 5;
  sb.rank = 1;
  sb.alpha = 3;
  sb.scaling = 3;
  auto a = f.load(buildAdapter(sa));
  ASSERT_TRUE(a.ok()) << a.message();
  auto b = f.load(buildAdapter(sb));
  ASSERT_TRUE(b.ok()) << b.message();
  ASSERT_TRUE(f.module->applyLora(*a, 0.5).ok());
  std::vector<float> y = f.run();
  std::vector<double> want = expected(f, sa, 0.5);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  EXPECT_NE(y, base);
  // Rescaled.
  ASSERT_TRUE(f.module->setLoraScale(**a, -1.25).ok());
  y = f.run();
  want = expected(f, sa, -1.25);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  // Two at once: the sum of their updates.
  ASSERT_TRUE(f.module->applyLora(*b, 2.0).ok());
  y = f.run();
  std::vector<double> wb = expected(f, sb, 2.0);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], want[i] + wb[i] - base[i], 1e-5) << i;
  // Applying one twice is an error and changes nothing.
  EXPECT_FALSE(f.module->applyLora(*a, 1.0).ok());
  EXPECT_FALSE(f.module->applyLora(*a, NAN).ok());
  EXPECT_EQ(f.module->appliedLoras().size(), 2u);
  // Removing both: the base, bit for bit.
  ASSERT_TRUE(f.module->removeLora(**a).ok());
  ASSERT_TRUE(f.module->removeLora(**b).ok());
  EXPECT_EQ(f.run(), base);
  EXPECT_FALSE(f.module->removeLora(**a).ok());
  EXPECT_FALSE(f.module->setLoraScale(**a, 1).ok());
}

void expectRejected(Fixture &f, const std::vector<uint8_t> &bytes,
                    const std::vector<std::string> &needles) {
  auto a = f.load(bytes, "bad.etla");
  ASSERT_FALSE(a.ok()) << "accepted, expected: " << needles[0];
  EXPECT_EQ(a.message().rfind("bad.etla: ", 0), 0u) << a.message();
  for (const std::string &n : needles)
    EXPECT_NE(a.message().find(n), std::string::npos) << a.message();
  // The program keeps working.
  EXPECT_EQ(f.run(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(Lora, MalformedAdapterFiles) {
  Fixture f;
  auto with = [](std::function<void(AdapterSpec &)> edit) {
    AdapterSpec s;
    edit(s);
    return buildAdapter(s);
  };
  expectRejected(f, with([](AdapterSpec &s) { s.baseHash = kHash; }),
                 {"made for another program", kHash});
  expectRejected(f, with([](AdapterSpec &s) {
                   s.target = "model.layers.0.self_attn.zz_proj";
                 }),
                 {"target 'model.layers.0.self_attn.zz_proj'", "no LoRA hook"});
  expectRejected(f, with([](AdapterSpec &s) { s.in = 5; }),
                 {std::string("target '") + kHook + "'", "shape [3, 5]"});
  expectRejected(f, with([](AdapterSpec &s) { s.rank = 3; }),
                 {"rank 3", "lora_runtime.max_rank"});
  expectRejected(f, with([](AdapterSpec &s) { s.rank = 0; }), {"rank 0"});
  expectRejected(f, with([](AdapterSpec &s) { s.aCount = 7; }),
                 {kHook, "A holds 7 values"});
  expectRejected(f, with([](AdapterSpec &s) { s.bCount = 0; }),
                 {kHook, "B holds 0 values"});
  expectRejected(f, with([](AdapterSpec &s) { s.poisonA = INFINITY; }),
                 {kHook, "A holds NaN or infinity"});
  expectRejected(f, with([](AdapterSpec &s) { s.poisonB = NAN; }),
                 {kHook, "B holds NaN or infinity"});
  expectRejected(f, with([](AdapterSpec &s) { s.scaling = NAN; }),
                 {"not a finite"});
  expectRejected(f, with([](AdapterSpec &s) { s.twice = true; }),
                 {"appears twice"});
  expectRejected(f, with([](AdapterSpec &s) { s.version = 2; }),
                 {"format version 2"});
  // Matrices stored as f16: each once, finite, with the right count.
  expectRejected(f, with([](AdapterSpec &s) { s.storeA = "both"; }),
                 {kHook, "A is stored more than one way"});
  expectRejected(f, with([](AdapterSpec &s) { s.storeB = "none"; }),
                 {kHook, "B is missing"});
  expectRejected(f, with([](AdapterSpec &s) {
                   s.storeA = "f16";
                   s.poisonA = INFINITY;
                 }),
                 {kHook, "A holds NaN or infinity"});
  expectRejected(f, with([](AdapterSpec &s) {
                   s.storeB = "f16";
                   s.poisonB = NAN;
                 }),
                 {kHook, "B holds NaN or infinity"});
  expectRejected(f, with([](AdapterSpec &s) {
                   s.storeA = "f16";
                   s.aCount = 3;
                 }),
                 {kHook, "A holds 3 values"});
  // Stored as int8: the values' count, one finite scale >= 0 per rank
  // index, no scales without values.
  expectRejected(f, with([](AdapterSpec &s) {
                   s.storeA = "i8";
                   s.aCount = 5;
                 }),
                 {kHook, "A holds 5 values"});
  expectRejected(f, with([](AdapterSpec &s) {
                   s.storeB = "i8";
                   s.scaleCount = 1;
                 }),
                 {kHook, "B is int8 with 1 scales", "rank 2"});
  expectRejected(f, with([](AdapterSpec &s) {
                   s.storeA = "i8";
                   s.poisonScale = NAN;
                 }),
                 {kHook, "A has the int8 scale nan"});
  expectRejected(f, with([](AdapterSpec &s) {
                   s.storeB = "i8";
                   s.poisonScale = -1;
                 }),
                 {kHook, "B has the int8 scale -1"});
  expectRejected(f, with([](AdapterSpec &s) { s.scalesAlone = true; }),
                 {kHook, "A has int8 scales but no int8 values"});
  std::vector<uint8_t> good = buildAdapter();
  std::vector<uint8_t> bad = good;
  bad[4] = 'X';
  expectRejected(f, bad, {"ETLA"});
  // Every truncation: an error, never a crash or a read past the end.
  for (size_t n = 0; n < good.size(); ++n) {
    auto a = f.load({good.begin(), good.begin() + long(n)}, "cut.etla");
    EXPECT_FALSE(a.ok()) << n;
    if (!a.ok()) {
      EXPECT_EQ(a.message().rfind("cut.etla: ", 0), 0u) << a.message();
    }
  }
  EXPECT_TRUE(f.load(good).ok());
}

TEST(Lora, HalfAndInt8StoredMatricesGiveTheSameOutput) {
  // The test values (multiples of 1/8) are exact in half precision and as
  // int8 values with scale 1/8 (a power of two: applied to the sums, it
  // rounds nothing): an adapter stored as f16 or int8, or A and B stored
  // differently, gives the f32 adapter's output bit for bit.
  Fixture f;
  AdapterSpec s32, s16, mixed, s8, mixed8;
  s16.storeA = s16.storeB = "f16";
  mixed.storeB = "f16";
  s8.storeA = s8.storeB = "i8";
  mixed8.storeA = "i8";
  mixed8.storeB = "f16";
  std::vector<std::vector<float>> outputs;
  std::vector<size_t> sizes;
  for (const AdapterSpec &s : {s32, s16, mixed, s8, mixed8}) {
    std::vector<uint8_t> bytes = buildAdapter(s);
    sizes.push_back(bytes.size());
    auto a = f.load(bytes);
    ASSERT_TRUE(a.ok()) << a.message();
    ASSERT_TRUE(f.module->applyLora(*a, 0.75).ok());
    outputs.push_back(f.run());
    ASSERT_TRUE(f.module->removeLora(**a).ok());
  }
  for (size_t i = 1; i < outputs.size(); ++i)
    EXPECT_EQ(outputs[i], outputs[0]) << i;
  EXPECT_NE(outputs[0], (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_LT(sizes[1], sizes[0]); // (int8's scales outweigh its bytes at
                                 // this size: test_lora_runtime.py checks)
}

/// The adapter loader's verdicts on mutated files. What must be accepted:
/// the adapter, and mutations of bytes no check may depend on (the
/// mantissas of A's and B's values, of alpha and of the scaling, which
/// change the output as computed). What must be refused: a mutation of
/// each of the fields below, with the error naming it. Then random byte
/// flips: refused, or applied and run, never a crash.
TEST(Lora, RandomByteFlipsNeverCrash) {
  Fixture f;
  const std::vector<uint8_t> good = buildAdapter();
  const lfb::Adapter &fa = *lfb::GetAdapter(good.data());
  const lfb::LoraTarget &t = *fa.targets()->Get(0);
  const std::vector<float> at(t.a_t()->begin(), t.a_t()->end()),
      bt(t.b_t()->begin(), t.b_t()->end());
  ASSERT_EQ(at.size(), size_t(kIn * 2));
  ASSERT_EQ(bt.size(), size_t(2 * kOut));

  // Accepted, with the output the (mutated) values give.
  auto expectRuns = [&](const std::vector<uint8_t> &bytes,
                        const std::vector<float> &a,
                        const std::vector<float> &b, double scaling,
                        const std::string &what) {
    auto ad = f.load(bytes, "ok.etla");
    ASSERT_TRUE(ad.ok()) << what << ": " << ad.message();
    ASSERT_TRUE(f.module->applyLora(*ad, 1.0).ok()) << what;
    const std::vector<float> y = f.run();
    const std::vector<double> want = expectedOf(f, a, b, 2, scaling, 1.0);
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
          << what << ", output " << i;
    ASSERT_TRUE(f.module->removeLora(**ad).ok());
  };
  expectRuns(good, at, bt, 2.0, "the adapter");
  // The low 16 bits of each float's mantissa: still finite.
  for (size_t k = 0; k < at.size() + bt.size(); ++k)
    for (size_t byte = 0; byte < 2; ++byte) {
      const bool inA = k < at.size();
      const float *v =
          inA ? t.a_t()->data() + k : t.b_t()->data() + (k - at.size());
      std::vector<uint8_t> bytes = good;
      bytes[offsetIn(good, v) + byte] ^= 0xa5;
      std::vector<float> a = at, b = bt;
      float &changed = inA ? a[k] : b[k - at.size()];
      std::memcpy(&changed, bytes.data() + offsetIn(good, v), 4);
      ASSERT_NE(changed, *v);
      expectRuns(bytes, a, b, 2.0,
                 std::string(inA ? "A" : "B") + " value " + std::to_string(k) +
                     " byte " + std::to_string(byte));
    }
  // The mantissas of alpha (informative) and of the scaling (used).
  const size_t alphaAt = scalarAt(good, &fa, lfb::Adapter::VT_ALPHA);
  const size_t scalingAt = scalarAt(good, &fa, lfb::Adapter::VT_SCALING);
  for (size_t byte = 0; byte < 6; ++byte) {
    std::vector<uint8_t> bytes = good;
    bytes[alphaAt + byte] ^= 0xff;
    expectRuns(bytes, at, bt, 2.0, "alpha byte " + std::to_string(byte));
    bytes = good;
    bytes[scalingAt + byte] ^= 0xff;
    double scaling;
    std::memcpy(&scaling, bytes.data() + scalingAt, 8);
    ASSERT_NE(scaling, 2.0);
    expectRuns(bytes, at, bt, scaling, "scaling byte " + std::to_string(byte));
  }

  // Refused, naming the field.
  std::vector<uint8_t> bad = good;
  bad[4] ^= 0xff;
  expectRejected(f, bad, {"no 'ETLA' file identifier"});
  expectRejected(f,
                 with(good,
                      scalarAt(good, &fa, lfb::Adapter::VT_FORMAT_VERSION),
                      uint32_t(2)),
                 {"format version 2"});
  bad = good;
  bad[offsetIn(good, fa.base_hash()->c_str())] = 'z';
  expectRejected(f, bad, {"made for another program (base hash zb"});
  expectRejected(
      f, with(good, scalarAt(good, &fa, lfb::Adapter::VT_RANK), uint32_t(3)),
      {"rank 3 is outside 1..2"});
  expectRejected(f, with(good, scalingAt, double(INFINITY)),
                 {"alpha or scaling is not a finite number"});
  expectRejected(f, with(good, alphaAt, double(NAN)),
                 {"alpha or scaling is not a finite number"});
  bad = good;
  bad[offsetIn(good, t.name()->c_str())] = 'Z';
  expectRejected(f, bad,
                 {"target 'Zodel.layers.0.self_attn.q_proj'", "no LoRA hook"});
  expectRejected(f,
                 with(good, scalarAt(good, &t, lfb::LoraTarget::VT_IN_FEATURES),
                      int64_t(5)),
                 {std::string("target '") + kHook + "'", "shape [3, 5]"});
  expectRejected(f, with(good, offsetIn(good, t.a_t()->data()), float(NAN)),
                 {kHook, "A holds NaN or infinity"});
  expectRejected(f,
                 with(good, offsetIn(good, t.b_t()->data() + bt.size() - 1),
                      float(INFINITY)),
                 {kHook, "B holds NaN or infinity"});
  expectRejected(f,
                 with(good, offsetIn(good, t.a_t()->data()) - 4, uint32_t(7)),
                 {kHook, "A holds 7 values"});

  // Random flips.
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1103515245u + 12345u;
    return seed >> 8;
  };
  int accepted = 0;
  for (int k = 0; k < 3000; ++k) {
    bad = good;
    for (int n = 1 + int(next() % 3); n > 0; --n)
      bad[next() % bad.size()] ^= uint8_t(1 + next() % 255);
    auto a = f.load(bad, "flip.etla");
    if (!a.ok()) {
      EXPECT_EQ(a.message().rfind("flip.etla: ", 0), 0u) << a.message();
      continue;
    }
    // Accepted (a flip in the values or the scaling): it runs, or a
    // scaling that overflows f32 is refused when applied.
    ++accepted;
    if (!f.module->applyLora(*a, 1.0).ok())
      continue;
    f.run();
    ASSERT_TRUE(f.module->removeLora(**a).ok());
  }
  EXPECT_EQ(f.run(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_LT(accepted, 3000);
}

TEST(Lora, ALoraCallNeedsTheHookTable) {
  // Without hooks the lora call's hook index has nothing to refer to.
  auto p = Program::loadFromBuffer(buildProgram({2, 0, 32, false}).data(),
                                   buildProgram({2, 0, 32, false}).size(),
                                   "nohooks.pte");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.message().find("hook 0 of 0"), std::string::npos) << p.message();
}

TEST(Lora, ProgramHookTablesAreVerified) {
  auto rejected = [](const ProgramSpec &s, const std::string &what) {
    auto bytes = buildProgram(s);
    auto p = Program::loadFromBuffer(bytes.data(), bytes.size(), "p.pte");
    ASSERT_FALSE(p.ok()) << what;
    EXPECT_NE(p.message().find(what), std::string::npos) << p.message();
  };
  rejected({2, 1, 32, true}, "hook 1 of 1");
  rejected({2, 0, 31, true}, "hash segment");
  rejected({0, 0, 32, true}, "max_rank 0");
  rejected({5000, 0, 32, true}, "max_rank 5000");
}

} // namespace
