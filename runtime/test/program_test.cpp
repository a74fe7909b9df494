//===- program_test.cpp - Loading, verifying and running programs ---------===//
//
// Programs are built here with the flatbuffers API directly (the runtime
// owns the schema; no compiler involved), then broken in every way the
// verifier must catch.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/backend.h"
#include "etllm/runtime/flags.h"
#include "etllm/runtime/kv_cache_quant.h"
#include "etllm/runtime/mutation_testing.h"
#include "etllm/runtime/parallel.h"
#include "etllm/runtime/profile.h"
#include "etllm/runtime/program.h"
#include "etllm/runtime/testing_program.h"
#include "etllm/schema/program_generated.h"

#include <gtest/gtest.h>

#include <iostream>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <tuple>

using namespace etllm::rt;
namespace fbs = etllm::schema;
using etllm::rt::testing::offsetIn;
using etllm::rt::testing::scalarAt;
using etllm::rt::testing::with;

namespace {

/// Knobs a test can turn to make the program invalid.
struct Spec {
  uint32_t inputIndex = 0;
  uint64_t plannedOffset = 64;
  uint64_t arenaSize = 256;
  uint32_t constantIndex = 0;
  uint64_t constantSize = 16;
  std::string op = opName(OpId::Add);
  bool outputIntoConstant = false;
  int numInputs = 2;
  fbs::DType dtype = fbs::DType::F32;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  int numOutputs = 1;
  uint32_t version = kProgramFormatVersion;
  bool perBlockQAct = false; // x becomes an int8 QAct per block of 32
  /// Non-empty: the instruction is a call of delegate 0 of this backend
  /// (its blob: segment 0), not the kernel call.
  std::string delegateBackend;
  /// The mutable buffer 'cache' and its quantization parameters (none: no
  /// QuantParams table).
  fbs::DType bufferDType = fbs::DType::F32;
  std::vector<int64_t> bufferSizes = {2, 2};
  uint64_t bufferBytes = 16;
  std::optional<QuantInfo> bufferQuant;
  /// Set: a fourth value, unused, stored in the buffer (its dtype, sizes and
  /// bytes) with these quantization parameters.
  std::optional<QuantInfo> bufferValueQuant;
  /// Set: metadata with this max_seq_len and KvRing {chunk, sinks}.
  std::optional<std::array<int64_t, 3>> kvRing;
};

flatbuffers::Offset<fbs::QuantParams>
quantParams(flatbuffers::FlatBufferBuilder &fb,
            const std::optional<QuantInfo> &q) {
  if (!q)
    return 0;
  return fbs::CreateQuantParams(
      fb, q->bits, q->symmetric, static_cast<fbs::DType>(q->scaleType),
      q->groupSize, q->perToken, static_cast<fbs::QScheme>(q->scheme));
}

/// forward(x: f32[?<=4]) -> x + c, c a constant [4]; plus a zeroed buffer.
std::vector<uint8_t> buildProgram(const Spec &s = {}) {
  flatbuffers::FlatBufferBuilder fb;
  auto tensor = [&](fbs::StorageKind kind, uint64_t offset, uint32_t constant,
                    bool dynamic) {
    std::vector<int64_t> sizes = {4};
    std::vector<uint8_t> dyn = {uint8_t(dynamic)};
    return fbs::CreateTensor(fb, s.dtype, fb.CreateVector(sizes),
                             fb.CreateVector(dyn), kind, 0, offset, 16,
                             constant, 0, 0, 0, fb.CreateString("t"));
  };
  auto qact = [&]() {
    std::vector<int64_t> sizes = {4};
    std::vector<uint8_t> dyn = {1};
    auto q = fbs::CreateQuantParams(fb, 8, true, fbs::DType::F32, 32, true);
    return fbs::CreateTensor(fb, fbs::DType::QACT, fb.CreateVector(sizes),
                             fb.CreateVector(dyn), fbs::StorageKind::PLANNED, 0,
                             0, 256, 0, 0, 0, q, fb.CreateString("x"));
  };
  std::vector<flatbuffers::Offset<fbs::Tensor>> values = {
      s.perBlockQAct ? qact()
                     : tensor(fbs::StorageKind::PLANNED, 0, 0, true), // x
      tensor(fbs::StorageKind::CONSTANT, 0, s.constantIndex, false),  // c
      tensor(s.outputIntoConstant ? fbs::StorageKind::CONSTANT
                                  : fbs::StorageKind::PLANNED,
             s.plannedOffset, 0, true)}; // y
  if (s.bufferValueQuant) {
    std::vector<uint8_t> dyn(s.bufferSizes.size(), 0);
    values.push_back(fbs::CreateTensor(
        fb, s.bufferDType, fb.CreateVector(s.bufferSizes), fb.CreateVector(dyn),
        fbs::StorageKind::BUFFER, 0, 0, s.bufferBytes, 0, 0, 0,
        quantParams(fb, s.bufferValueQuant), fb.CreateString("cache")));
  }
  std::vector<uint32_t> ins = {s.inputIndex, 1}, outs = {2};
  ins.resize(s.numInputs, 1);
  outs.resize(s.numOutputs, 2);
  auto kc = fbs::CreateKernelCall(
      fb, fb.CreateString(s.op), fb.CreateVector(ins), fb.CreateVector(outs),
      s.ints.empty() ? 0 : fb.CreateVector(s.ints),
      s.floats.empty() ? 0 : fb.CreateVector(s.floats));
  std::vector<flatbuffers::Offset<fbs::InstructionEntry>> instrs = {
      s.delegateBackend.empty()
          ? fbs::CreateInstructionEntry(fb, fbs::Instruction::KernelCall,
                                        kc.Union())
          : fbs::CreateInstructionEntry(
                fb, fbs::Instruction::DelegateCall,
                fbs::CreateDelegateCall(fb, 0, fb.CreateVector(ins),
                                        fb.CreateVector(outs))
                    .Union())};
  std::vector<uint32_t> mIn = {0}, mOut = {2};
  std::vector<uint64_t> arenas = {s.arenaSize};
  auto method =
      fbs::CreateMethod(fb, fb.CreateString("forward"), fb.CreateVector(values),
                        fb.CreateVector(mIn), fb.CreateVector(mOut),
                        fb.CreateVector(instrs), fb.CreateVector(arenas));
  std::vector<flatbuffers::Offset<fbs::Constant>> consts = {
      fbs::CreateConstant(fb, fb.CreateString("c"), 0, 0, s.constantSize)};
  std::vector<flatbuffers::Offset<fbs::Segment>> segs = {
      fbs::CreateSegment(fb, 0, 64)};
  std::vector<flatbuffers::Offset<fbs::Buffer>> buffers = {
      fbs::CreateBuffer(fb, fb.CreateString("cache"), s.bufferDType,
                        fb.CreateVector(s.bufferSizes), s.bufferBytes,
                        quantParams(fb, s.bufferQuant))};
  std::vector<flatbuffers::Offset<fbs::Method>> methods = {method};
  std::vector<flatbuffers::Offset<fbs::Delegate>> delegates;
  if (!s.delegateBackend.empty())
    delegates.push_back(
        fbs::CreateDelegate(fb, fb.CreateString(s.delegateBackend), 0));
  flatbuffers::Offset<fbs::Metadata> metadata = 0;
  if (s.kvRing) {
    auto [ctx, chunk, sinks] = *s.kvRing;
    metadata = fbs::CreateMetadata(fb, 0, 0, ctx, -1, 0, 0, 0, 0,
                                   fbs::CreateKvRing(fb, chunk, sinks));
  }
  auto prog = fbs::CreateProgram(
      fb, 1, fb.CreateVector(methods), fb.CreateVector(buffers),
      fb.CreateVector(consts), fb.CreateVector(segs),
      delegates.empty() ? 0 : fb.CreateVector(delegates), metadata);
  fbs::FinishProgramBuffer(fb, prog);
  std::vector<uint8_t> file =
      etllm::rt::testing::programFile(fb, s.version, 64);
  float c[4] = {1, 2, 3, 4};
  std::memcpy(file.data() + etllm::rt::testing::segmentBaseOf(file), c,
              sizeof c);
  return file;
}

Result<std::shared_ptr<Program>> load(const std::vector<uint8_t> &bytes) {
  return Program::loadFromBuffer(bytes.data(), bytes.size(), "test.pte");
}

void expectRejected(const std::vector<uint8_t> &bytes,
                    const std::string &what) {
  auto p = load(bytes);
  ASSERT_FALSE(p.ok()) << "accepted: " << what;
  EXPECT_NE(p.message().find("test.pte: invalid program file"),
            std::string::npos)
      << p.message();
  EXPECT_NE(p.message().find(what), std::string::npos) << p.message();
}

const float kAddInput[4] = {10, 20, 30, 40};

/// A module of the default test program (y = x + 1 over 4 floats) and its
/// `forward`, with kAddInput as the input.
void addModule(std::unique_ptr<Module> &m, Method *&f) {
  auto p = load(buildProgram());
  ASSERT_TRUE(p.ok()) << p.message();
  auto mod = Module::create(*p);
  ASSERT_TRUE(mod.ok()) << mod.message();
  m = std::move(*mod);
  auto forward = m->method("forward");
  ASSERT_TRUE(forward.ok());
  f = *forward;
  int64_t n = 4;
  ASSERT_TRUE(f->setInput(0, DType::F32, &n, 1, kAddInput).ok());
}

TEST(Program, LoadsAndRuns) {
  std::unique_ptr<Module> m;
  Method *f = nullptr;
  ASSERT_NO_FATAL_FAILURE(addModule(m, f));
  Status st = f->execute();
  ASSERT_TRUE(st.ok()) << st.message();
  const Tensor &y = f->output(0);
  ASSERT_EQ(y.numel(), 4);
  EXPECT_EQ(y.ptr<float>()[0], 11);
  EXPECT_EQ(y.ptr<float>()[3], 44);
  // A shape the kernel cannot broadcast is an error naming the instruction.
  int64_t n = 3;
  ASSERT_TRUE(f->setInput(0, DType::F32, &n, 1, kAddInput).ok());
  st = f->execute();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("test.pte: method 'forward', instruction 0 "
                               "(add): ",
                               0),
            0u)
      << st.message();
  EXPECT_EQ(m->bufferBytes(), 16u);
  EXPECT_FALSE(m->method("decode").ok());
}

// With a profile attached every instruction is recorded under its op and
// every execute counted; detached, nothing more is recorded.
TEST(Program, ProfileRecordsEachInstructionWhileAttached) {
  std::unique_ptr<Module> m;
  Method *f = nullptr;
  ASSERT_NO_FATAL_FAILURE(addModule(m, f));
  ASSERT_TRUE(f->execute().ok()); // not profiled
  OpProfile profile;
  m->context().setProfile(&profile);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(f->execute().ok());
  m->context().setProfile(nullptr);
  ASSERT_TRUE(f->execute().ok()); // not profiled
  EXPECT_EQ(profile.executions(), 3u);
  EXPECT_EQ(profile.delegateCalls(), 0u);
  std::vector<OpProfile::Row> rows = profile.rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].where, OpProfile::Where::Portable);
  EXPECT_EQ(std::string(opInfo(rows[0].op).name), opName(OpId::Add));
  EXPECT_EQ(rows[0].calls, 3u);
  EXPECT_EQ(rows[0].nodes, 3u);
  EXPECT_GE(rows[0].ns, 0);
  EXPECT_LE(rows[0].ns, profile.executeNs());
  const std::string table = profile.table();
  EXPECT_NE(table.find("| add                   | portable |        1.0 |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("(between ops)"), std::string::npos) << table;
  EXPECT_EQ(table.find("(in delegates, other)"), std::string::npos) << table;
}

TEST(OpProfile, SortsByTimeAndCountsFusedNodes) {
  OpProfile p;
  const OpInfo *qlinear = findOp(opName(OpId::QLinear), 7),
               *add = findOp(opName(OpId::Add), 3);
  ASSERT_TRUE(qlinear && add);
  p.add(OpProfile::Where::Delegate, add->id, 100);
  p.add(OpProfile::Where::Delegate, qlinear->id, 700, 3);
  p.add(OpProfile::Where::Delegate, qlinear->id, 300, 2);
  p.add(OpProfile::Where::Portable, add->id, 160);
  p.addDelegateCall(1500);
  p.addExecute(2000);
  p.addExecute(2000);
  std::vector<OpProfile::Row> rows = p.rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].op, qlinear->id);
  EXPECT_EQ(rows[0].calls, 2u);
  EXPECT_EQ(rows[0].nodes, 5u);
  EXPECT_EQ(rows[0].ns, 1000);
  EXPECT_EQ(rows[1].where, OpProfile::Where::Portable);
  EXPECT_EQ(rows[2].where, OpProfile::Where::Delegate);
  // Per execution (2): qlinear 1 call, 2.5 nodes, 0.5 us, 1000 / 4000 of
  // execute's time; the delegate call's 1500 - 1100 ns not charged to an
  // op; 4000 - 160 - 1500 ns between ops.
  const std::string t = p.table();
  EXPECT_NE(t.find("| qlinear               | delegate |        1.0 |        "
                   "2.5 |        0.5 |  25.0% |"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("| (in delegates, other) | delegate |        0.5 |         "
                   "   |        0.2 |  10.0% |"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("| (between ops)         |          |            |         "
                   "   |        1.2 |  58.5% |"),
            std::string::npos)
      << t;
  p.reset();
  EXPECT_TRUE(p.rows().empty());
  EXPECT_EQ(p.executions(), 0u);
}

TEST(Program, DynamicInputBeyondItsBoundIsAnError) {
  auto p = load(buildProgram());
  auto m = Module::create(*p);
  auto f = (*m)->method("forward");
  float x[5] = {};
  int64_t n = 5;
  Status st = (*f)->setInput(0, DType::F32, &n, 1, x);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE((*f)->setInput(0, DType::I64, &n, 1, x).ok());
}

TEST(Program, DistinctModulesOnDistinctThreads) {
  auto p = load(buildProgram());
  ASSERT_TRUE(p.ok());
  auto work = [&](float base, float *out) {
    auto m = Module::create(*p);
    auto f = (*m)->method("forward");
    for (int i = 0; i < 1000; ++i) {
      float x[4] = {base, base, base, base};
      int64_t n = 4;
      ASSERT_TRUE((*f)->setInput(0, DType::F32, &n, 1, x).ok());
      ASSERT_TRUE((*f)->execute().ok());
    }
    *out = (*f)->output(0).ptr<float>()[3];
  };
  float a = 0, b = 0;
  std::thread t1(work, 100.0f, &a), t2(work, 200.0f, &b);
  t1.join();
  t2.join();
  EXPECT_EQ(a, 104);
  EXPECT_EQ(b, 204);
}

TEST(Program, RejectsBrokenHeaders) {
  std::vector<uint8_t> good = buildProgram();
  expectRejected({good.begin(), good.begin() + 10},
                 "smaller than the 64-byte header");
  auto bad = good;
  bad[0] = 'X';
  expectRejected(bad, "bad magic");
  bad = good;
  bad[8] = 99; // version
  expectRejected(bad, "format version 99");
  bad = good;
  uint64_t huge = ~uint64_t(0) - 10;
  std::memcpy(bad.data() + 24, &huge, 8); // flatbuffer size
  expectRejected(bad, "outside the file");
  bad = good;
  std::memcpy(bad.data() + 40, &huge, 8); // segment data size
  expectRejected(bad, "segment data range");
  bad = {good.begin(), good.end() - 32}; // truncated segment data
  expectRejected(bad, "segment data range");
}

TEST(Program, ReadsEveryFormatVersion) {
  // Version 1 (files written before per-block activations) and 2 load.
  for (uint32_t v = kMinProgramFormatVersion; v <= kProgramFormatVersion; ++v) {
    Spec s;
    s.version = v;
    auto p = load(buildProgram(s));
    ASSERT_TRUE(p.ok()) << "version " << v << ": " << p.message();
  }
  Spec s;
  s.version = 0;
  expectRejected(buildProgram(s), "format version 0 is not supported");
  // A per-block QAct means something else to a version-1 reader: a file
  // that says version 1 cannot hold one.
  s.version = 1;
  s.perBlockQAct = true;
  s.arenaSize = 512;
  expectRejected(buildProgram(s), "needs format version 2");
  // Version 2 may hold one: the format check passes. (The load still
  // refuses this tiny program, whose `add` takes the QAct: the per-op
  // verification checks operand types before anything runs.)
  s.version = 2;
  auto p = load(buildProgram(s));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.message().find("format version"), std::string::npos)
      << p.message();
  EXPECT_NE(p.message().find("lhs (input 0) has element type qact"),
            std::string::npos)
      << p.message();
}

TEST(Program, RejectsACorruptFlatbuffer) {
  std::vector<uint8_t> bad = buildProgram();
  bad[68] ^= 0xff; // the identifier "ETLM" at flatbuffer offset 4
  expectRejected(bad, "ETLM");
  bad = buildProgram();
  uint32_t root = 0xfffffff0;
  std::memcpy(bad.data() + 64, &root, 4); // root table offset
  expectRejected(bad, "failed verification");
}

TEST(Program, RejectsSemanticErrors) {
  Spec s;
  s.inputIndex = 7;
  expectRejected(buildProgram(s), "refers to value 7");
  s = {};
  s.plannedOffset = 250;
  expectRejected(buildProgram(s), "outside arena 0");
  s = {};
  s.arenaSize = uint64_t(1) << 50;
  expectRejected(buildProgram(s), "larger than 1 TiB");
  s = {};
  s.constantIndex = 3;
  expectRejected(buildProgram(s), "constant index out of range");
  s = {};
  s.constantSize = 100;
  expectRejected(buildProgram(s), "points outside its segment");
  s = {};
  s.constantSize = 8;
  expectRejected(buildProgram(s), "needs 16");
  s = {};
  s.op = "frobnicate";
  expectRejected(buildProgram(s), "unknown operator 'frobnicate'");
  s = {};
  s.numInputs = 3;
  expectRejected(buildProgram(s), "3 inputs");
  s = {};
  s.outputIntoConstant = true;
  expectRejected(buildProgram(s), "read-only");
  s = {};
  s.dtype = static_cast<fbs::DType>(77);
  expectRejected(buildProgram(s), "invalid dtype 77");
}

// Ring KV caches: a chunk in 1..max_seq_len, sinks in 0..max_seq_len - 1;
// with sinks the context has no end.
TEST(Program, KvRingMetadata) {
  Spec s;
  s.kvRing = {{64, 8, 4}};
  auto p = load(buildProgram(s));
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ((*p)->metadata().ringChunk, 8);
  EXPECT_EQ((*p)->metadata().ringSinks, 4);
  EXPECT_EQ((*p)->metadata().contextLimit(),
            ProgramMetadata::kUnboundedContext);
  s.kvRing = {{64, 8, 0}};
  p = load(buildProgram(s));
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ((*p)->metadata().contextLimit(), 64);
  for (std::array<int64_t, 3> bad : {std::array<int64_t, 3>{64, 0, 0},
                                     {64, 65, 0},
                                     {64, 8, -1},
                                     {64, 8, 64},
                                     {0, 1, 0}}) {
    s.kvRing = bad;
    expectRejected(buildProgram(s), "the ring KV caches' chunk");
  }
}

// A QACT buffer is an int8 KV cache: exactly its quantization, rank 4,
// positive sizes and the bytes of its QActLayout; any other is one error
// naming the buffer and the problem.
TEST(Program, Int8KvCacheBuffers) {
  const QuantInfo kv = int8KvCacheQuant();
  Spec good;
  good.bufferDType = fbs::DType::QACT;
  good.bufferSizes = {1, 2, 3, 5};
  good.bufferBytes = QActLayout::compute(6, 5).totalBytes;
  good.bufferQuant = kv;
  good.bufferValueQuant = kv;
  {
    auto p = load(buildProgram(good));
    ASSERT_TRUE(p.ok()) << p.message();
    auto mod = Module::create(*p);
    ASSERT_TRUE(mod.ok()) << mod.message();
    EXPECT_EQ((*mod)->bufferBytes(), good.bufferBytes);
    auto f = (*mod)->method("forward");
    ASSERT_TRUE(f.ok());
    int64_t n = 4;
    ASSERT_TRUE((*f)->setInput(0, DType::F32, &n, 1, kAddInput).ok());
    EXPECT_TRUE((*f)->execute().ok());
  }

  Spec s = good;
  s.bufferQuant.reset();
  expectRejected(buildProgram(s), "buffer 'cache': a QACT buffer needs "
                                  "quantization parameters");
  auto withQuant = [&](auto change) {
    Spec t = good;
    change(*t.bufferQuant);
    return buildProgram(t);
  };
  const std::string notKv = "buffer 'cache': a QACT buffer must be an int8 KV "
                            "cache";
  expectRejected(withQuant([](QuantInfo &q) { q.bits = 4; }), notKv);
  expectRejected(withQuant([](QuantInfo &q) { q.symmetric = false; }), notKv);
  expectRejected(withQuant([](QuantInfo &q) { q.scaleType = DType::F16; }),
                 notKv);
  expectRejected(withQuant([](QuantInfo &q) { q.groupSize = kQActBlock; }),
                 notKv);
  expectRejected(withQuant([](QuantInfo &q) { q.perToken = false; }), notKv);
  expectRejected(withQuant([](QuantInfo &q) { q.scheme = QScheme::Q5_0; }),
                 notKv);
  s = good;
  s.bufferSizes = {2, 3, 5};
  s.bufferValueQuant.reset();
  expectRejected(buildProgram(s), "buffer 'cache': a QACT buffer must have "
                                  "rank 4 [B, Hkv, T, D], not 3");
  s = good;
  s.bufferSizes = {1, 2, 0, 5};
  s.bufferValueQuant.reset();
  expectRejected(buildProgram(s), "buffer 'cache': a QACT buffer has a size 0");
  s.bufferSizes = {1, -2, 3, 5};
  expectRejected(buildProgram(s), "has a size -2 <= 0");
  s = good;
  s.bufferBytes += 1;
  s.bufferValueQuant.reset();
  expectRejected(buildProgram(s), "buffer 'cache' has an inconsistent size");
  s.bufferSizes = {int64_t(1) << 20, int64_t(1) << 20, int64_t(1) << 20, 8};
  expectRejected(buildProgram(s), "buffer 'cache' has an inconsistent size");
  // Parameters on another buffer; a value in the buffer that states other
  // ones.
  s = {};
  s.bufferQuant = kv;
  expectRejected(buildProgram(s), "buffer 'cache': quantization parameters "
                                  "on a f32 buffer");
  s = good;
  s.bufferValueQuant->symmetric = false;
  expectRejected(buildProgram(s),
                 "its quantization differs from buffer 'cache'");
}

// The attribute contract of ops.def (generated from the ops' ODS): enums
// and flags in range, optional inputs as the has_* flags say.
TEST(Program, RejectsAttributesOutsideTheContract) {
  Spec s;
  s.op = opName(OpId::Gelu);
  s.numInputs = 1;
  s.ints = {1};
  ASSERT_TRUE(load(buildProgram(s)).ok());
  s.ints = {2};
  expectRejected(
      buildProgram(s),
      "gelu: integer attribute 0 (approximate) is 2, outside [0, 1]");
  s.ints = {-1};
  expectRejected(buildProgram(s), "is -1, outside [0, 1]");
  s = {};
  s.op = opName(OpId::LayerNorm);
  s.ints = {1, 0}; // x and c: the weight is present, the bias is not
  s.floats = {1e-5};
  ASSERT_TRUE(load(buildProgram(s)).ok());
  s.ints = {0, 0};
  expectRejected(buildProgram(s),
                 "layer_norm: 2 inputs, but its has_* attributes say 1");
  s.ints = {1, 2};
  expectRejected(buildProgram(s), "(has_bias) is 2");
}

// Every attribute is checked when the program loads (the table's enums and
// flags, then the generated rules verify_ops.cpp interprets), not when the
// instruction runs. The values are f32 of rank 1.
TEST(Program, RejectsBadAttributesAtLoad) {
  auto call = [](const std::string &op, int inputs, std::vector<int64_t> ints,
                 std::vector<double> floats = {}, int outputs = 1) {
    Spec s;
    s.op = op;
    s.numInputs = inputs;
    s.ints = std::move(ints);
    s.floats = std::move(floats);
    s.numOutputs = outputs;
    return buildProgram(s);
  };
  expectRejected(call(opName(OpId::Softmax), 1, {5}),
                 "instruction 0 (softmax): dim (integer attribute 0) 5 is "
                 "out of range for rank 1");
  expectRejected(call(opName(OpId::Softmax), 1, {-2}),
                 "-2 is out of range for rank 1");
  expectRejected(call(opName(OpId::Gelu), 1, {2}),
                 "integer attribute 0 (approximate) is 2, outside [0, 1]");
  expectRejected(call(opName(OpId::Transpose), 1, {0, 1}),
                 "dim1 (integer attribute 1) 1 is out of range for rank 1");
  expectRejected(call(opName(OpId::Sum), 1, {0, 0, -1}),
                 "dims[1] (integer attribute 2): dimension -1 appears twice");
  expectRejected(call(opName(OpId::Sum), 1, {3, 0}),
                 "integer attribute 0 (keepdim) is 3, outside [0, 1]");
  expectRejected(call(opName(OpId::Sum), 1, {}),
                 "0 integer attributes, expected at least 1");
  expectRejected(call(opName(OpId::Arange), 0, {0, 4, 0}),
                 "step (integer attribute 2)");
  expectRejected(call(opName(OpId::Split), 1, {0, 2, 2}),
                 "sizes has 2 entries, expected 1 (one per value of results)");
  expectRejected(call(opName(OpId::Split), 1, {0, -1}, {}, 1),
                 "sizes[0] (integer attribute 1) must be at least 0");
  expectRejected(call(opName(OpId::Slice), 1, {0, 0, 4, 0}),
                 "step (integer attribute 3) must be at least 1, got 0");
  expectRejected(
      call(opName(OpId::Permute), 1, {0, 0}),
      "dims has 2 entries, expected 1 (the rank of input (input 0))");
  expectRejected(call(opName(OpId::RmsNorm), 1, {}, {std::nan(""), 0}),
                 "eps (float attribute 0) nan is not finite");
  expectRejected(call(opName(OpId::FullLike), 1, {}, {std::nan("")}),
                 "value (float attribute 0) nan is not finite");
  expectRejected(call(opName(OpId::Eq), 2, {}),
                 "result (output 0) has element type f32, expected bool");
  expectRejected(call(opName(OpId::Embedding), 2, {}),
                 "indices (input 1) has element type f32, expected i64 or i32");
  expectRejected(call(opName(OpId::QLinear), 2, {}),
                 "weight (input 1) has element type f32, expected qweight");
  expectRejected(call(opName(OpId::LayerNorm), 1, {1, 0}, {1e-5}),
                 "layer_norm: 1 inputs, but its has_* attributes say 2");
  expectRejected(call(opName(OpId::Sdpa), 3, {0, 0, 0, 0}, {1, 0}),
                 "query (input 0) has rank 1, expected 4");
}

TEST(Program, AcceptsGoodAttributes) {
  for (auto [op, inputs, ints, floats] :
       std::vector<std::tuple<std::string, int, std::vector<int64_t>,
                              std::vector<double>>>{
           {opName(OpId::Softmax), 1, {0}, {}},
           {opName(OpId::Softmax), 1, {-1}, {}},
           {opName(OpId::Neg), 1, {}, {}},
           {opName(OpId::Gelu), 1, {1}, {}},
           {opName(OpId::Sum), 1, {1, 0}, {}},
           {opName(OpId::FullLike), 1, {}, {-INFINITY}},
           {opName(OpId::RmsNorm), 1, {}, {1e-6, 1}},
           {opName(OpId::Reshape), 1, {-1}, {}},
           {opName(OpId::Transpose), 1, {0, -1}, {}}}) {
    Spec s;
    s.op = op;
    s.numInputs = inputs;
    s.ints = ints;
    s.floats = floats;
    auto p = load(buildProgram(s));
    EXPECT_TRUE(p.ok()) << op << ": " << p.message();
  }
}

TEST(Program, MemoryBudgetIsCheckedBeforeAllocating) {
  auto p = load(buildProgram());
  ASSERT_TRUE(p.ok()) << p.message();
  const Program::PlannedMemory &plan = (*p)->plannedMemory();
  EXPECT_EQ(plan.arenas, 256u);
  EXPECT_EQ(plan.buffers, 16u);
  EXPECT_GT(plan.constants, 0u); // loaded from a buffer: copied
  ModuleOptions mo;
  mo.maxMemory = plan.total() - 1;
  auto m = Module::create(*p, mo);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("test.pte: the program plans " +
                             std::to_string(plan.total()) + " bytes"),
            std::string::npos)
      << m.message();
  EXPECT_NE(m.message().find("more than the memory limit of " +
                             std::to_string(plan.total() - 1) + " bytes"),
            std::string::npos)
      << m.message();
  mo.maxMemory = plan.total();
  EXPECT_TRUE(Module::create(*p, mo).ok());
}

TEST(Program, ThreadCountIsBoundedByTheMachine) {
  auto p = load(buildProgram());
  ASSERT_TRUE(p.ok()) << p.message();
  ModuleOptions mo;
  mo.numThreads = hardwareThreads() + 1;
  auto m = Module::create(*p, mo);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("hardware threads"), std::string::npos)
      << m.message();
  mo.numThreads = 0;
  EXPECT_FALSE(Module::create(*p, mo).ok());
  mo.numThreads = hardwareThreads();
  EXPECT_TRUE(Module::create(*p, mo).ok());
}

TEST(Program, EveryTruncationIsRejectedCleanly) {
  std::vector<uint8_t> good = buildProgram();
  for (size_t n = 0; n < good.size(); n += 7) {
    auto p = load({good.begin(), good.begin() + n});
    EXPECT_FALSE(p.ok()) << n;
  }
}

/// A backend whose instances fail every call as a delegate's node does.
class FailingNodeBackend final : public Backend {
public:
  const char *id() const override { return "test-failing-node"; }
  Result<std::unique_ptr<DelegateInstance>>
  init(const uint8_t *, size_t,
       const std::vector<std::pair<std::string, std::string>> &,
       const ConstantTable &, ExecContext &, MemoryBudget &) override {
    return std::unique_ptr<DelegateInstance>(new Instance());
  }

private:
  struct Instance final : DelegateInstance {
    Status execute(Span<Tensor *const>, Span<Tensor *const>,
                   ExecContext &) override {
      return Error("node 3 (silu): the input does not fit");
    }
  };
};

// An instruction that fails when it runs (a kernel's or a delegate node's
// check) is reported with the program file, the method, the instruction
// and its op (issue 35: a delegate's node error named node and op only).
TEST(Program, ExecuteErrorsNameTheFileAndTheInstruction) {
  registerBackend(std::make_shared<FailingNodeBackend>());
  Spec s;
  s.delegateBackend = "test-failing-node";
  auto p = load(buildProgram(s));
  ASSERT_TRUE(p.ok()) << p.message();
  auto m = Module::create(*p);
  ASSERT_TRUE(m.ok()) << m.message();
  Method *f = (*m)->method("forward").value();
  int64_t n = 4;
  ASSERT_TRUE(f->setInput(0, DType::F32, &n, 1, kAddInput).ok());
  Status st = f->execute();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "test.pte: method 'forward', instruction 0 "
                          "(delegate): node 3 (silu): the input does not fit");
}

/// Runs `bytes` (the default test program, maybe mutated) on kAddInput:
/// the output, or the first error.
Result<std::vector<float>> runAdd(const std::vector<uint8_t> &bytes) {
  auto p = load(bytes);
  if (!p.ok())
    return p.error();
  auto m = Module::create(*p);
  if (!m.ok())
    return m.error();
  auto f = (*m)->method("forward");
  if (!f.ok())
    return f.error();
  int64_t n = 4;
  ETLLM_RETURN_IF_ERROR((*f)->setInput(0, DType::F32, &n, 1, kAddInput));
  ETLLM_RETURN_IF_ERROR((*f)->execute());
  const Tensor &y = (*f)->output(0);
  return std::vector<float>(y.ptr<float>(), y.ptr<float>() + y.numel());
}

/// The loader's verdicts on mutated programs. What must be accepted: the
/// program, and mutations of bytes no check may depend on (the padding
/// after the flatbuffer, the segment bytes outside the constant, the
/// values' names, the constant's values, which then show in the output).
/// What must be refused: a mutation of each of the fields below, with the
/// error naming it. Then random byte flips: refused or run, never a crash.
TEST(Program, RandomByteFlipsNeverCrash) {
  const std::vector<uint8_t> good = buildProgram();
  FileHeader h;
  std::memcpy(&h, good.data(), sizeof h);
  const uint8_t *fb = good.data() + h.flatbufferOffset;
  const fbs::Program &prog = *fbs::GetProgram(fb);
  const fbs::Method &m = *prog.methods()->Get(0);
  const fbs::KernelCall &kc =
      *m.instructions()->Get(0)->instruction_as_KernelCall();

  // Accepted.
  Result<std::vector<float>> ran = runAdd(good);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(*ran, (std::vector<float>{11, 22, 33, 44}));
  std::vector<size_t> dontCare;
  for (size_t i = h.flatbufferOffset + h.flatbufferSize; i < h.segmentBase; ++i)
    dontCare.push_back(i); // padding before the segment data
  for (size_t i = h.segmentBase + 16; i < h.segmentBase + 64; ++i)
    dontCare.push_back(i); // segment 0 beyond constant 'c' (16 bytes)
  for (const fbs::Tensor *t : *m.values())
    for (size_t i = 0; i < t->name()->size(); ++i)
      dontCare.push_back(offsetIn(good, t->name()->c_str() + i));
  ASSERT_GE(dontCare.size(), 48u + 3u);
  for (size_t at : dontCare)
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bad = good;
      bad[at] ^= mask;
      Result<std::vector<float>> r = runAdd(bad);
      ASSERT_TRUE(r.ok()) << "byte " << at << " ^ " << int(mask) << ": "
                          << r.message();
      EXPECT_EQ(*r, (std::vector<float>{11, 22, 33, 44})) << "byte " << at;
    }
  const float weirdC[4] = {-0.0f, 1e30f, std::nanf(""), -2.5f};
  for (int i = 0; i < 4; ++i) {
    Result<std::vector<float>> r =
        runAdd(with(good, h.segmentBase + 4 * size_t(i), weirdC[i]));
    ASSERT_TRUE(r.ok()) << r.message();
    const float want = kAddInput[i] + weirdC[i];
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan((*r)[size_t(i)]));
    else
      EXPECT_EQ((*r)[size_t(i)], want) << i;
  }

  // Refused, naming the field.
  const fbs::Tensor &c = *m.values()->Get(1), &y = *m.values()->Get(2);
  const fbs::Constant &cc = *prog.constants()->Get(0);
  const fbs::Segment &seg = *prog.segments()->Get(0);
  const fbs::Buffer &buf = *prog.buffers()->Get(0);
  std::vector<uint8_t> bad = good;
  bad[0] ^= 0xff;
  expectRejected(bad, "bad magic");
  expectRejected(with(good, 8, uint32_t(99)), "format version 99");
  expectRejected(with(good, 12, uint32_t(65)), "header size 65");
  expectRejected(with(good, 16, uint64_t(68)), "flatbuffer range [68,");
  expectRejected(with(good, 48, uint32_t(3)), "alignment 3 is invalid");
  bad = good;
  bad[h.flatbufferOffset + 4] ^= 0xff;
  expectRejected(bad, "missing the ETLM file identifier");
  bad = good;
  bad[offsetIn(good, kc.op()->c_str())] = 'x';
  expectRejected(bad, "instruction 0: unknown operator 'xdd'");
  expectRejected(with(good, offsetIn(good, kc.inputs()->data()), uint32_t(7)),
                 "instruction 0 (add) refers to value 7 of 3");
  expectRejected(with(good, offsetIn(good, kc.outputs()->data()), uint32_t(1)),
                 "instruction 0 (add) writes value 1, which is read-only");
  expectRejected(with(good, offsetIn(good, m.inputs()->data()), uint32_t(9)),
                 "an input refers to value 9 of 3");
  expectRejected(
      with(good, offsetIn(good, m.arena_sizes()->data()), uint64_t(1) << 50),
      "arena 0 is larger than 1 TiB");
  expectRejected(
      with(good, offsetIn(good, m.arena_sizes()->data()), uint64_t(16)),
      "is outside arena 0");
  expectRejected(with(good, offsetIn(good, c.sizes()->data()), int64_t(5)),
                 "value 1 (t): capacity 16 is smaller than its 20 bytes");
  expectRejected(
      with(good, scalarAt(good, &y, fbs::Tensor::VT_CAPACITY), uint64_t(8)),
      "value 2 (t): capacity 8 is smaller than its 16 bytes");
  expectRejected(
      with(good, scalarAt(good, &cc, fbs::Constant::VT_SIZE), uint64_t(100)),
      "constant 'c' points outside its segment");
  expectRejected(
      with(good, scalarAt(good, &seg, fbs::Segment::VT_SIZE), uint64_t(128)),
      "segment 0 lies outside the segment data");
  expectRejected(with(good, offsetIn(good, buf.sizes()->data()), int64_t(3)),
                 "buffer 'cache' has an inconsistent size");

  // Random flips: refused, or loaded and run (any status).
  uint32_t seed = 12345;
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    bad = good;
    for (int k = 0; k < 3; ++k) {
      seed = seed * 1664525u + 1013904223u;
      bad[seed % bad.size()] ^= uint8_t(seed >> 24);
    }
    auto p = load(bad);
    if (!p.ok())
      continue;
    ++accepted;
    // Loaded: then it must also run (or fail) without crashing.
    auto mod = Module::create(*p);
    if (!mod.ok())
      continue;
    auto f = (*mod)->method("forward");
    if (!f.ok())
      continue;
    float x[4] = {1, 2, 3, 4};
    int64_t n = 4;
    if ((*f)->setInput(0, DType::F32, &n, 1, x).ok())
      (void)(*f)->execute();
  }
  std::cout << "[          ] " << accepted
            << " of 3000 randomly flipped programs were accepted\n";
}

} // namespace

namespace {

TEST(ThreadPool, LateWorkersSendTheLoopsInlineForAWhile) {
  pthreadpool_t pool = pthreadpool_create(2);
  ExecContext ctx(pool);
  ASSERT_EQ(detail::poolFor(&ctx), pool);
  // A job whose workers kept the caller waiting 1 ms (its own share took
  // 10 us), then one on time: the count starts over.
  detail::noteJob(&ctx, 1000000, 10000);
  detail::noteJob(&ctx, 20000, 10000);
  detail::noteJob(&ctx, 1000000, 10000);
  EXPECT_EQ(detail::poolFor(&ctx), pool);
  // Two late jobs in a row: the loops run on the calling thread...
  detail::noteJob(&ctx, 1000000, 10000);
  EXPECT_EQ(detail::poolFor(&ctx), nullptr);
  std::vector<int> seen(64, 0);
  parallelForTiles(&ctx, seen.size(), 4, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i)
      seen[i] += 1;
  });
  for (int s : seen)
    EXPECT_EQ(s, 1);
  // ... until the pause is over.
  ctx.poolHealth().inlineUntilNs = detail::nowNs() - 1;
  EXPECT_EQ(detail::poolFor(&ctx), pool);
  // Waiting no longer than the caller's own work is not late.
  detail::noteJob(&ctx, 900000, 500000);
  detail::noteJob(&ctx, 900000, 500000);
  EXPECT_EQ(detail::poolFor(&ctx), pool);
  parallelFor(&ctx, seen.size(), [&](size_t i) { seen[i] += 1; });
  for (int s : seen)
    EXPECT_EQ(s, 2);
  pthreadpool_destroy(pool);
}

} // namespace
