//===- hostile_blob_test.cpp - Malformed cpu blobs ------------------------===//
//
// Blobs from the internet: every malformed one (truncated, out-of-range
// indices, wrong sizes, attributes outside the contract, values used before
// they are produced, byte mutations of valid blobs) must be rejected by
// Backend::init with an error naming the fault, never crash.
//
//===----------------------------------------------------------------------===//
#include "blobs.h"

#include "etllm/runtime/mutation_testing.h"

namespace etllm::rt::cpu::test {
namespace {

using rt::testing::offsetIn;
using rt::testing::scalarAt;
using rt::testing::with;

struct Small {
  TestConstants constants;
  BlobBuilder b;
  uint32_t x, w, t, y;
};

std::unique_ptr<Small> makeSmall() {
  auto s = std::make_unique<Small>();
  std::mt19937 gen(3);
  std::vector<float> w = randomFloats(9 * 16, gen);
  const uint32_t cw = s->constants.add(packF32Weight(w.data(), 9, 16));
  using K = xfb::ValueKind;
  s->x = s->b.f32({2, 16}, K::INPUT, 0);
  BlobBuilder::ValueDesc wd;
  wd.sizes = {9, 16};
  wd.kind = K::CONSTANT;
  wd.index = cw;
  wd.packing = xfb::Packing::F32_NR8;
  s->w = s->b.value(wd);
  s->t = s->b.f32({2, 9});
  s->y = s->b.f32({2, 9}, K::OUTPUT, 0);
  s->b.node(opName(OpId::Linear), {s->x, s->w}, {s->t});
  s->b.node(opName(OpId::Silu), {s->t}, {s->y});
  return s;
}

std::string initError(const std::vector<uint8_t> &blob, const ConstantTable &c,
                      std::vector<std::pair<std::string, std::string>> specs = {
                          {"format", "EXN1"}}) {
  auto r = initBlob(blob, c, detectIsa(), std::move(specs));
  return r.ok() ? std::string("<accepted>") : r.message();
}

#define EXPECT_REJECTED(s, blob, substr)                                       \
  do {                                                                         \
    std::string m_ = initError((blob), (s)->constants);                        \
    EXPECT_NE(m_.find(substr), std::string::npos) << m_;                       \
  } while (0)

TEST(HostileBlobTest, ValidSmallGraphRuns) {
  auto s = makeSmall();
  auto inst = initBlob(s->b.finish(), s->constants);
  ASSERT_TRUE(inst.ok()) << inst.message();
  std::mt19937 gen(4);
  OwnedTensor x = f32Tensor({2, 16}, randomFloats(32, gen));
  OwnedTensor y(DType::F32, {2, 9});
  ExecContext ctx;
  EXPECT_OK(execute(**inst, {x}, {y}, ctx));
}

// The arena the blob's internal values need comes out of the Module's
// memory budget, before it is allocated: a small blob cannot make init
// allocate 512 GiB.
TEST(HostileBlobTest, ArenaComesOutOfTheMemoryBudget) {
  auto s = makeSmall();
  using K = xfb::ValueKind;
  BlobBuilder b;
  const uint32_t x = b.f32({2, 16}, K::INPUT, 0);
  const uint32_t t = b.f32({int64_t(1) << 20, int64_t(1) << 17}); // 512 GiB
  const uint32_t y = b.f32({2, 16}, K::OUTPUT, 0);
  b.node(opName(OpId::Silu), {x}, {t});
  b.node(opName(OpId::Silu), {t}, {y});
  const uint64_t arena = (uint64_t(1) << 39) + 64;
  MemoryBudget budget(64 << 20, 1000);
  ExecContext ctx;
  auto r = initBlob(b.finish(), s->constants, detectIsa(), {{"format", "EXN1"}},
                    &ctx, &budget);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("the internal values' arena needs " +
                             std::to_string(arena) + " bytes"),
            std::string::npos)
      << r.message();
  EXPECT_NE(r.message().find("more than the " +
                             std::to_string((64 << 20) - 1000) +
                             " bytes (64.0 MiB) left of the memory limit of " +
                             std::to_string(64 << 20) + " bytes"),
            std::string::npos)
      << r.message();
  EXPECT_EQ(budget.used(), 1000u); // nothing taken
}

TEST(HostileBlobTest, ReservationsAreCountedAndExact) {
  auto s = makeSmall();
  // The small graph's one internal value: 2 x 9 f32 = 72 bytes, planned in
  // 64-byte units (128), plus the 64 bytes of alignment slack.
  MemoryBudget exact(1000 + 128 + 64, 1000);
  ExecContext ctx;
  auto r = initBlob(s->b.finish(), s->constants, detectIsa(),
                    {{"format", "EXN1"}}, &ctx, &exact);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(exact.remaining(), 0u);
  MemoryBudget short1(1000 + 128 + 63, 1000);
  r = initBlob(s->b.finish(), s->constants, detectIsa(), {{"format", "EXN1"}},
               &ctx, &short1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("arena needs 192 bytes"), std::string::npos)
      << r.message();
}

TEST(HostileBlobTest, Truncated) {
  auto s = makeSmall();
  std::vector<uint8_t> blob = s->b.finish();
  for (size_t n :
       {size_t(0), size_t(4), size_t(8), blob.size() / 2, blob.size() - 1}) {
    std::vector<uint8_t> cut(blob.begin(), blob.begin() + long(n));
    std::string m = initError(cut, s->constants);
    EXPECT_TRUE(m.find("identifier") != std::string::npos ||
                m.find("malformed or truncated") != std::string::npos)
        << n << ": " << m;
  }
}

TEST(HostileBlobTest, BadIdentifier) {
  auto s = makeSmall();
  std::vector<uint8_t> blob = s->b.finish();
  blob[4] = 'X';
  EXPECT_REJECTED(s, blob, "not an EXN1 blob");
}

TEST(HostileBlobTest, BadFormatSpec) {
  auto s = makeSmall();
  std::string m = initError(s->b.finish(), s->constants, {{"format", "EXN2"}});
  EXPECT_NE(m.find("unsupported format 'EXN2'"), std::string::npos) << m;
}

TEST(HostileBlobTest, OutOfRangeIndex) {
  auto s = makeSmall();
  s->b.nodes[1].inputs[0] = 99;
  EXPECT_REJECTED(s, s->b.finish(),
                  "node 1 (silu): input 0 refers to value 99");
}

TEST(HostileBlobTest, OutOfRangeOutputIndex) {
  auto s = makeSmall();
  s->b.nodes[1].outputs[0] = 4;
  EXPECT_REJECTED(s, s->b.finish(), "output 0 refers to value 4");
}

TEST(HostileBlobTest, WrongConstantSize) {
  auto s = makeSmall();
  std::mt19937 gen(5);
  std::vector<float> w = randomFloats(9 * 16, gen);
  s->b.values[s->w].index = s->constants.add(w); // dense bytes, not packed
  EXPECT_REJECTED(s, s->b.finish(), "holds 576 bytes, the packing needs 1024");
}

TEST(HostileBlobTest, WrongDenseConstantSize) {
  auto s = makeSmall();
  const uint32_t c = s->constants.add(std::vector<float>(8, 1.0f));
  const uint32_t bias = s->b.f32({9}, xfb::ValueKind::CONSTANT, c);
  s->b.nodes[0].inputs.push_back(bias);
  EXPECT_REJECTED(s, s->b.finish(), "holds 32 bytes, the shape needs 36");
}

TEST(HostileBlobTest, ConstantIndexOutOfRange) {
  auto s = makeSmall();
  s->b.values[s->w].index = 1000;
  EXPECT_REJECTED(s, s->b.finish(), "constant index 1000 is out of range");
}

TEST(HostileBlobTest, UnknownOp) {
  auto s = makeSmall();
  s->b.nodes[1].op = "frobnicate";
  EXPECT_REJECTED(s, s->b.finish(), "unknown operator 'frobnicate'");
}

TEST(HostileBlobTest, TooFewOutputs) {
  auto s = makeSmall();
  s->b.nodes[0].outputs.clear();
  EXPECT_REJECTED(s, s->b.finish(), "node 0 (linear): 0 outputs");
}

TEST(HostileBlobTest, WrongAttributeCounts) {
  auto s = makeSmall();
  s->b.nodes[1].ints = {1};
  EXPECT_REJECTED(s, s->b.finish(), "1 integer attributes, expected 0");
  auto s2 = makeSmall();
  s2->b.nodes[1].floats = {1.0};
  EXPECT_REJECTED(s2, s2->b.finish(), "1 float attributes, expected 0");
  auto s3 = makeSmall();
  s3->b.nodes[1].inputs.push_back(s3->x);
  EXPECT_REJECTED(s3, s3->b.finish(), "2 inputs");
}

// The integer attributes' contract of ops.def is checked at init, as for
// the program's own kernel calls: a bad enum or flag is refused when the
// program loads (naming the node and the attribute), not when it runs.
TEST(HostileBlobTest, AttributesOutsideTheContract) {
  auto s = makeSmall();
  const uint32_t g = s->b.f32({2, 9});
  s->b.nodes[1].outputs = {g};
  s->b.node(opName(OpId::Gelu), {g}, {s->y}, {1});
  EXPECT_TRUE(initBlob(s->b.finish(), s->constants).ok());
  s->b.nodes[2].ints = {5};
  EXPECT_REJECTED(s, s->b.finish(),
                  "cpu blob: node 2 (gelu): gelu: integer attribute 0 "
                  "(approximate) is 5, outside [0, 1]");
  s->b.nodes[2].ints = {-1};
  EXPECT_REJECTED(s, s->b.finish(), "node 2 (gelu): gelu: integer attribute 0");
}

TEST(HostileBlobTest, ValueUsedBeforeProduced) {
  auto s = makeSmall();
  std::swap(s->b.nodes[0], s->b.nodes[1]);
  EXPECT_REJECTED(s, s->b.finish(),
                  "node 0 (silu): input 0 (value 2) is used before it is "
                  "produced");
}

TEST(HostileBlobTest, ValueProducedTwice) {
  auto s = makeSmall();
  s->b.node(opName(OpId::Relu), {s->x}, {s->t});
  EXPECT_REJECTED(s, s->b.finish(), "already produced by node 0");
}

TEST(HostileBlobTest, NodeWritesAnInputOrConstant) {
  auto s = makeSmall();
  s->b.node(opName(OpId::Relu), {s->t}, {s->x});
  EXPECT_REJECTED(s, s->b.finish(), "writes value 0, an input");
  auto s2 = makeSmall();
  s2->b.node(opName(OpId::Relu), {s2->t}, {s2->w});
  EXPECT_REJECTED(s2, s2->b.finish(), "writes value 1, an constant");
}

TEST(HostileBlobTest, OutputNeverProduced) {
  auto s = makeSmall();
  s->b.f32({2, 9}, xfb::ValueKind::OUTPUT, 1);
  EXPECT_REJECTED(s, s->b.finish(), "output 1 (value 4) is never produced");
}

TEST(HostileBlobTest, DuplicateOrOutOfRangeIoIndices) {
  auto s = makeSmall();
  s->b.f32({2, 16}, xfb::ValueKind::INPUT, 5);
  EXPECT_REJECTED(s, s->b.finish(), "input index 5 is out of range (2 inputs)");
  auto s2 = makeSmall();
  s2->b.f32({2, 16}, xfb::ValueKind::INPUT, 1);
  s2->b.values[s2->x].index = 1;
  EXPECT_REJECTED(s2, s2->b.finish(), "input index 1 is also used by value 0");
}

TEST(HostileBlobTest, PackedConstantWhereNoKernelReadsIt) {
  auto s = makeSmall();
  const uint32_t z = s->b.f32({9, 16});
  s->b.node(opName(OpId::Add), {s->w, s->w}, {z});
  EXPECT_REJECTED(s, s->b.finish(),
                  "node 2 (add): input 0 (value 1) is a packed constant");
  auto s2 = makeSmall();
  s2->b.nodes[0].op = opName(OpId::QLinear); // F32_NR8 is linear's packing only
  EXPECT_REJECTED(s2, s2->b.finish(), "packed constant");
  auto s3 = makeSmall();
  s3->b.values[s3->x].packing = xfb::Packing::F32_NR8;
  EXPECT_REJECTED(s3, s3->b.finish(), "only constants can be packed");
}

TEST(HostileBlobTest, BadValueDescriptions) {
  {
    auto s = makeSmall();
    s->b.values[s->t].dtype = static_cast<DType>(42);
    EXPECT_REJECTED(s, s->b.finish(), "value 2: invalid dtype 42");
  }
  {
    auto s = makeSmall();
    s->b.values[s->t].sizes = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    EXPECT_REJECTED(s, s->b.finish(), "value 2: rank 9 > 8");
  }
  {
    auto s = makeSmall();
    s->b.values[s->t].sizes = {2, -9};
    EXPECT_REJECTED(s, s->b.finish(), "value 2: negative size -9");
  }
  {
    auto s = makeSmall();
    s->b.values[s->t].sizes = {int64_t(1) << 40, int64_t(1) << 40};
    EXPECT_REJECTED(s, s->b.finish(), "too large");
  }
  {
    auto s = makeSmall();
    s->b.values[s->t].dynamic = {0, 1, 1};
    EXPECT_REJECTED(s, s->b.finish(), "dynamic_dims has 3 entries for rank 2");
  }
  {
    auto s = makeSmall();
    s->b.values[s->w].dynamic = {1, 0};
    EXPECT_REJECTED(s, s->b.finish(), "constants cannot have dynamic");
  }
  {
    auto s = makeSmall();
    s->b.values[s->t].kind = static_cast<xfb::ValueKind>(9);
    EXPECT_REJECTED(s, s->b.finish(), "invalid kind 9");
  }
  {
    auto s = makeSmall();
    s->b.values[s->w].sizes = {9, 17}; // K no longer matches x
    EXPECT_REJECTED(s, s->b.finish(), "holds");
  }
}

TEST(HostileBlobTest, BadQuantizedValues) {
  std::mt19937 gen(6);
  RandomQWeight w = makeRandomQWeight(8, 64, 4, true, 32, DType::F32, gen);
  auto build = [&](auto mutate) {
    auto s = std::make_unique<Small>();
    const uint32_t c = s->constants.add(w.packed->data, w.packed->capacity);
    using K = xfb::ValueKind;
    const uint32_t x = s->b.f32({1, 64}, K::INPUT, 0);
    BlobBuilder::ValueDesc wd;
    wd.dtype = DType::QWeight;
    wd.sizes = {8, 64};
    wd.kind = K::CONSTANT;
    wd.index = c;
    wd.packing = xfb::Packing::QWEIGHT_R16;
    wd.q = w.q;
    BlobBuilder::ValueDesc qa =
        BlobBuilder::qactDesc({1, 64}, {}, /*symmetric=*/false);
    mutate(wd, qa);
    const uint32_t vw = s->b.value(wd);
    const uint32_t vq = s->b.value(qa);
    const uint32_t y = s->b.f32({1, 8}, K::OUTPUT, 0);
    s->b.node(opName(OpId::QuantizeDynamic), {x}, {vq});
    s->b.node(opName(OpId::QLinear), {vq, vw}, {y});
    return s;
  };
  using VD = BlobBuilder::ValueDesc;
  {
    auto s = build([](VD &, VD &) {});
    auto inst = initBlob(s->b.finish(), s->constants);
    ASSERT_TRUE(inst.ok()) << inst.message();
  }
  {
    auto s = build([](VD &wd, VD &) { wd.q.bits = 3; });
    EXPECT_REJECTED(s, s->b.finish(), "3 bits");
  }
  {
    auto s = build([](VD &wd, VD &) { wd.q.groupSize = 0; });
    EXPECT_REJECTED(s, s->b.finish(), "group size 0");
  }
  {
    auto s = build([](VD &wd, VD &) { wd.q.groupSize = 64; }); // other layout
    EXPECT_REJECTED(s, s->b.finish(), "the packing needs");
  }
  {
    auto s = build([](VD &wd, VD &) { wd.q.groupSize = 16; });
    EXPECT_REJECTED(s, s->b.finish(), "block layout");
  }
  {
    auto s = build([](VD &wd, VD &) { wd.q.scaleType = DType::F16; });
    EXPECT_REJECTED(s, s->b.finish(), "the packing needs"); // f32 bytes
  }
  {
    auto s = build([](VD &, VD &qa) {
      qa.q.groupSize = 32; // per block: symmetric only
    });
    EXPECT_REJECTED(s, s->b.finish(), "symmetric per block");
  }
  {
    auto s = build([](VD &wd, VD &) { wd.q.scaleType = DType::I8; });
    EXPECT_REJECTED(s, s->b.finish(), "scales must be f32 or f16");
  }
  {
    auto s = build([](VD &, VD &qa) { qa.q.bits = 4; });
    EXPECT_REJECTED(s, s->b.finish(), "must be 8-bit");
  }
  {
    auto s = build([](VD &wd, VD &) { wd.packing = xfb::Packing::F32_NR8; });
    EXPECT_REJECTED(s, s->b.finish(), "F32_NR8 packing needs a 2-D f32");
  }
}

/// Initializes `count` mutations of `good` (1 to 4 bytes set to random
/// values, drawn from `gen`; with `truncate`, every tenth also cut at a
/// random length) and executes each that init accepts (any status, never a
/// crash). Returns how many init accepted.
int mutateAndRun(const std::vector<uint8_t> &good,
                 const ConstantTable &constants, std::mt19937 &gen, int count,
                 bool truncate, std::vector<Tensor *> ins,
                 std::vector<Tensor *> outs, ExecContext &ctx) {
  std::uniform_int_distribution<size_t> pos(0, good.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  int accepted = 0;
  for (int i = 0; i < count; ++i) {
    std::vector<uint8_t> blob = good;
    const int flips = 1 + i % 4;
    for (int f = 0; f < flips; ++f)
      blob[pos(gen)] = uint8_t(byte(gen));
    if (truncate && i % 10 == 0)
      blob.resize(pos(gen));
    auto inst = initBlob(blob, constants);
    if (!inst.ok())
      continue;
    ++accepted;
    (void)execute(**inst, ins, outs, ctx);
  }
  return accepted;
}

/// Init's verdicts on mutated MLP blobs (makeMlp: values x = 0, norm, w1,
/// w3, w2, b2, shift, h, hq = 8, a0, a1, bq, m0, m1, o, out0 = 15, out1;
/// nodes rms_norm, quantize_dynamic, qlinear, silu, qlinear, mul, sub,
/// linear, add, gelu). What must be accepted: the blob; mutations nothing
/// may depend on for validity (the mantissa of rms_norm's epsilon; the
/// float values of the b2 and shift constants, which must then show in the
/// output as portable computes it). What must be refused: a mutation of
/// each of the fields below, with the error naming it. Then random byte
/// flips and truncations: refused, or initialized and executed (any
/// status), never a crash.
TEST(HostileBlobTest, MutationsNeverCrash) {
  std::unique_ptr<Mlp> mlp = makeMlp(44);
  const std::vector<uint8_t> good = mlp->blob;
  const xfb::Graph &g = *xfb::GetGraph(good.data());
  std::mt19937 gen(9);
  OwnedTensor x = f32Tensor({1, 2, kD}, randomFloats(2 * kD, gen));
  OwnedTensor out0(DType::F32, {1, kMaxS, kD}),
      out1(DType::F32, {1, kMaxS, kD});
  ExecContext ctx;

  // Accepted.
  auto runs = [&](const std::vector<uint8_t> &blob, const std::string &what) {
    auto inst = initBlob(blob, mlp->constants);
    ASSERT_TRUE(inst.ok()) << what << ": " << inst.message();
    ASSERT_OK(execute(**inst, {x}, {out0, out1}, ctx));
  };
  ASSERT_NO_FATAL_FAILURE(runs(good, "the blob"));
  const double *eps = g.nodes()->Get(0)->floats()->data();
  for (size_t byte = 0; byte < 6; ++byte) {
    std::vector<uint8_t> blob = good;
    blob[offsetIn(good, eps) + byte] ^= 0xff;
    ASSERT_NO_FATAL_FAILURE(
        runs(blob, "rms_norm epsilon byte " + std::to_string(byte)));
  }
  {
    // New weight values in the b2 and shift constants (indices 4 and 5).
    std::unique_ptr<Mlp> m = makeMlp(44);
    std::mt19937 wgen(5);
    m->b2 = randomFloats(kD, wgen, -3, 3);
    m->shift = randomFloats(kH, wgen, -3, 3);
    std::memcpy(m->constants.mutableData(4), m->b2.data(), kD * 4);
    std::memcpy(m->constants.mutableData(5), m->shift.data(), kH * 4);
    auto inst = initBlob(m->blob, m->constants);
    ASSERT_TRUE(inst.ok()) << inst.message();
    OwnedTensor ref0 = f32Output(2 * kD), ref1 = f32Output(2 * kD),
                before = f32Output(2 * kD);
    portableMlp(*mlp, *x, *before, *ref1);
    portableMlp(*m, *x, *ref0, *ref1);
    ASSERT_OK(execute(**inst, {x}, {out0, out1}, ctx));
    expectOutputsClose(*out0, *ref0);
    expectOutputsClose(*out1, *ref1);
    EXPECT_NE(floatsOf(*out0), floatsOf(*before));
  }

  // Refused, naming the field.
  auto refused = [&](const std::vector<uint8_t> &blob,
                     const std::string &substr) {
    std::string m = initError(blob, mlp->constants);
    EXPECT_NE(m.find(substr), std::string::npos) << m;
  };
  const xfb::Value &w1 = *g.values()->Get(2), &hq = *g.values()->Get(8),
                   &out1v = *g.values()->Get(16);
  const xfb::Node &qlin = *g.nodes()->Get(2), &silu = *g.nodes()->Get(3),
                  &gelu = *g.nodes()->Get(9);
  std::vector<uint8_t> bad = good;
  bad[4] ^= 0xff;
  refused(bad, "not an EXN1 blob");
  bad = good;
  bad[offsetIn(good, g.nodes()->Get(0)->op()->c_str())] = 'x';
  refused(bad, "node 0: unknown operator 'xms_norm'");
  refused(with(good, offsetIn(good, qlin.inputs()->data() + 1), uint32_t(99)),
          "node 2 (qlinear): input 1 refers to value 99 of 17");
  refused(with(good, offsetIn(good, silu.inputs()->data()), uint32_t(14)),
          "node 3 (silu): input 0 (value 14) is used before it is produced");
  refused(with(good, offsetIn(good, gelu.outputs()->data()), uint32_t(0)),
          "node 9 (gelu): output 0 writes value 0, an input");
  refused(with(good, offsetIn(good, gelu.ints()->data()) - 4, uint32_t(0)),
          "node 9 (gelu): 0 integer attributes, expected 1");
  refused(with(good, scalarAt(good, &hq, xfb::Value::VT_DTYPE), uint8_t(77)),
          "value 8: invalid dtype 77");
  refused(with(good, scalarAt(good, &hq, xfb::Value::VT_BITS), uint8_t(4)),
          "value 8: quantized activations must be 8-bit, not 4");
  refused(with(good, scalarAt(good, &w1, xfb::Value::VT_PACKING),
               uint8_t(xfb::Packing::F32_NR8)),
          "value 2 (constant 1): F32_NR8 packing needs a 2-D f32 tensor");
  refused(with(good, scalarAt(good, &w1, xfb::Value::VT_INDEX), uint32_t(99)),
          "value 2 (constant 99): constant index 99 is out of range");
  refused(with(good, offsetIn(good, w1.sizes()->data() + 1), int64_t(32)),
          "value 2 (constant 1) [96, 32] qweight: holds 3840 bytes, the "
          "packing needs 1920");
  refused(with(good, scalarAt(good, &out1v, xfb::Value::VT_INDEX), uint32_t(0)),
          "value 16: output index 0 is also used by value 15");

  // Random flips and truncations.
  const int accepted = mutateAndRun(good, mlp->constants, gen, 3000,
                                    /*truncate=*/true, {x}, {out0, out1}, ctx);
  std::cout << "[          ] " << accepted
            << " of 3000 mutated blobs were accepted (and executed)\n";
}

//===----------------------------------------------------------------------===//
// moe over experts packed per expert
//===----------------------------------------------------------------------===//

/// A moe node (E = 5 experts of F = 32, D = 64, top 2 of a softmax) over
/// packed stacks, and the same weights dense for portable.
TEST(HostileBlobTest, BadMoeNodes) {
  auto m = makeMoe(0);
  EXPECT_TRUE(initBlob(m->b.finish(), m->constants).ok());
  auto m1 = makeMoe(7);
  EXPECT_REJECTED(m1, m1->b.finish(), "invalid moe_activations 7");
  // Only some experts packed.
  auto m2 = makeMoe(0);
  m2->b.values[m2->vu].packing = xfb::Packing::DENSE;
  EXPECT_REJECTED(m2, m2->b.finish(), "gate, up and down must all be packed");
  // gate where down belongs: [E, F, D] is not [E, D, F].
  auto m3 = makeMoe(0);
  m3->b.nodes[0].inputs[4] = m3->vg;
  EXPECT_REJECTED(m3, m3->b.finish(),
                  "are not [E, F, D], [E, F, D], [E, D, F]");
  // A stacked packing read as the router, or by a qlinear.
  auto m4 = makeMoe(0);
  m4->b.nodes[0].inputs[1] = m4->vg;
  EXPECT_REJECTED(m4, m4->b.finish(), "packed constant");
  auto m5 = makeMoe(0);
  const uint32_t t = m5->b.f32({4, 32});
  m5->b.node(opName(OpId::QLinear), {m5->x, m5->vg}, {t});
  EXPECT_REJECTED(m5, m5->b.finish(), "packed constant");
  // A stack whose bytes do not match its layout.
  auto m6 = makeMoe(0);
  m6->b.values[m6->vd].sizes = {5, 64, 64};
  EXPECT_REJECTED(m6, m6->b.finish(), "holds");
}

/// Init's verdicts on mutated moe blobs (makeMoe: values x, router, gate,
/// up, down, y; one moe node). What must be accepted: each blob; new
/// router weights (a float constant), which must then show in the output
/// as portable computes it. What must be refused: a mutation of each of the
/// fields below, with the error naming it. Then random byte flips:
/// refused, or initialized and executed (any status), never a crash.
TEST(HostileBlobTest, MoeMutationsNeverCrash) {
  for (uint8_t acts : {0, 1, 2}) {
    SCOPED_TRACE("moe_activations " + std::to_string(acts));
    auto m = makeMoe(acts);
    const std::vector<uint8_t> good = m->b.finish();
    const xfb::Graph &g = *xfb::GetGraph(good.data());
    const xfb::Node &moe = *g.nodes()->Get(0);
    std::mt19937 gen(10 + acts);
    OwnedTensor x = f32Tensor({3, 64}, randomFloats(3 * 64, gen, -3, 3));
    OwnedTensor y(DType::F32, {4, 64}), ref(DType::F32, {4, 64});
    ExecContext ctx;

    // Accepted: the blob, then with new router weights (constant 0).
    auto inst = initBlob(good, m->constants);
    ASSERT_TRUE(inst.ok()) << inst.message();
    ASSERT_OK(execute(**inst, {x}, {y}, ctx));
    const std::vector<float> before = floatsOf(*y);
    std::vector<float> router = randomFloats(5 * 64, gen);
    std::memcpy(m->constants.mutableData(0), router.data(), router.size() * 4);
    std::memcpy(m->router->data, router.data(), router.size() * 4);
    inst = initBlob(good, m->constants);
    ASSERT_TRUE(inst.ok()) << inst.message();
    ASSERT_OK(execute(**inst, {x}, {y}, ctx));
    ASSERT_OK(runPortable(OpId::Moe, {x, m->router, m->gate, m->up, m->down},
                          {ref}, {2, 0, 0, 1, 1, 1, 0}, {1.0, 0.0}));
    const std::vector<float> got = floatsOf(*y), want = floatsOf(*ref);
    double mx = 0, dmax = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      mx = std::max(mx, std::fabs(double(want[i])));
      dmax = std::max(dmax, std::fabs(double(got[i]) - double(want[i])));
    }
    EXPECT_LE(dmax, (acts ? 6e-2 : 1e-4) * mx); // as in MoeOnPackedExperts
    EXPECT_NE(got, before);

    // Refused, naming the field.
    auto refused = [&](const std::vector<uint8_t> &blob,
                       const std::string &substr) {
      std::string msg = initError(blob, m->constants);
      EXPECT_NE(msg.find(substr), std::string::npos) << msg;
    };
    const size_t inputs = offsetIn(good, moe.inputs()->data());
    refused(with(good, inputs + 4 * 4, uint32_t(m->vg)),
            "are not [E, F, D], [E, F, D], [E, D, F]");
    refused(with(good, inputs + 1 * 4, uint32_t(m->vg)),
            "node 0 (moe): input 1 (value 2) is a packed constant");
    refused(with(good, offsetIn(good, moe.ints()->data()) - 4, uint32_t(6)),
            "node 0 (moe): 6 integer attributes, expected 7");
    const xfb::Value &up = *g.values()->Get(m->vu),
                     &down = *g.values()->Get(m->vd);
    refused(with(good, scalarAt(good, &up, xfb::Value::VT_PACKING),
                 uint8_t(xfb::Packing::DENSE)),
            "node 0 (moe): gate, up and down must all be packed");
    refused(with(good, offsetIn(good, down.sizes()->data() + 2), int64_t(64)),
            "value 4 (constant 3) [5, 64, 64] qweight: holds 5760 bytes, "
            "the packing needs 11520");
    if (acts)
      refused(with(good, scalarAt(good, &moe, xfb::Node::VT_MOE_ACTIVATIONS),
                   uint8_t(7)),
              "node 0 (moe): invalid moe_activations 7");

    // Random flips.
    const int accepted = mutateAndRun(good, m->constants, gen, 1500,
                                      /*truncate=*/false, {x}, {y}, ctx);
    std::cout << "[          ] moe_activations " << int(acts) << ": "
              << accepted
              << " of 1500 mutated blobs were accepted (and executed)\n";
  }
}

} // namespace
} // namespace etllm::rt::cpu::test
