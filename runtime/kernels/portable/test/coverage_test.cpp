//===- coverage_test.cpp - Checks run over every operator -----------------===//
//
// One small valid call per ops.def entry; for each: it succeeds, a second
// call gives the same bytes, and an output one byte short of what the shape
// needs is a resize error (never a write past the capacity).
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

#include <deque>
#include <set>

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

struct Case {
  Case(OpId op, std::vector<Tensor *> ins, DType outType = DType::F32,
       std::vector<int64_t> ints = {}, std::vector<double> floats = {},
       int numOutputs = 1, std::vector<int64_t> outShape = {0})
      : op(op), ins(std::move(ins)), outType(outType), ints(std::move(ints)),
        floats(std::move(floats)), numOutputs(numOutputs),
        outShape(std::move(outShape)) {}
  OpId op;
  std::vector<Tensor *> ins;
  DType outType;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  int numOutputs;
  std::vector<int64_t> outShape; // the output's shape before the call
  QuantInfo outQuant;
  std::vector<DType> outTypes; // per output, when they differ
};

class AllOps : public ::testing::Test {
protected:
  std::deque<OwnedTensor> store;
  Tensor *t(OwnedTensor &&o) {
    store.push_back(std::move(o));
    return store.back().get();
  }

  std::vector<Case> cases() {
    Tensor *a = t(makeTensor(DType::F32, {2, 3}, {1, -2, 3, 0.5, 5, -6}));
    Tensor *a4 = t(makeTensor(DType::F32, {2, 4}, randomValues(8, 1)));
    Tensor *b = t(makeTensor(DType::F32, {3}, {1, 2, 3}));
    Tensor *pos = t(makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}));
    Tensor *m = t(makeTensor(DType::Bool, {2, 3}, {1, 0, 1, 0, 0, 1}));
    Tensor *c = t(makeTensor(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6}));
    Tensor *w = t(makeTensor(DType::F32, {4, 3}, randomValues(12, 2)));
    Tensor *table = t(makeTensor(DType::F32, {4, 3}, randomValues(12, 3)));
    Tensor *idx = t(makeTensor(DType::I64, {2}, {1, 3}));
    Tensor *idx2 = t(makeTensor(DType::I64, {2}, {1, 0}));
    Tensor *gidx = t(makeTensor(DType::I64, {2, 2}, {0, 2, 1, 1}));
    Tensor *row = t(makeTensor(DType::F32, {1, 3}, {1, 2, 3}));
    Tensor *x4 = t(makeTensor(DType::F32, {1, 1, 2, 4}, randomValues(8, 4)));
    Tensor *p2 = t(makeTensor(DType::I64, {2}, {3, 4}));
    Tensor *freq = t(makeTensor(DType::F32, {2}, {1.0, 0.1}));
    Tensor *kv = t(makeTensor(DType::F32, {1, 1, 5, 4}, randomValues(20, 5)));
    Tensor *cache =
        t(makeTensor(DType::F32, {1, 1, 3, 4}, randomValues(12, 6)));
    Tensor *p1 = t(makeTensor(DType::I64, {1}, {2}));
    Tensor *val = t(makeTensor(DType::F32, {1, 1, 1, 4}, {1, 2, 3, 4}));
    QuantInfo wq;
    wq.bits = 4;
    wq.symmetric = true;
    wq.scaleType = DType::F16;
    wq.groupSize = 4;
    Tensor *qw =
        t(makeQWeight(3, 4, wq, {1, -2, 3, -8, 7, 0, 1, 2, -1, -1, 4, 5},
                      {0.5f, 0.25f, 1.0f}));
    QuantInfo act;
    act.bits = 8;
    act.symmetric = false;

    auto unary = [&](OpId op) { return Case{op, {a}}; };
    auto binary = [&](OpId op) { return Case{op, {a, b}}; };
    auto compare = [&](OpId op) {
      Case k{op, {a, b}};
      k.outType = DType::Bool;
      return k;
    };
    std::vector<Case> cs = {
        unary(OpId::Neg),
        unary(OpId::Abs),
        Case{OpId::Rsqrt, {pos}},
        Case{OpId::Sqrt, {pos}},
        unary(OpId::Exp),
        Case{OpId::Log, {pos}},
        unary(OpId::Cos),
        unary(OpId::Sin),
        unary(OpId::Tanh),
        unary(OpId::Sigmoid),
        unary(OpId::Silu),
        unary(OpId::Relu),
        Case{OpId::Gelu, {a}, DType::F32, {1}},
        unary(OpId::Copy),
        Case{OpId::Convert, {a}, DType::I32},
        Case{OpId::LogicalNot, {m}, DType::Bool},
        binary(OpId::Add),
        binary(OpId::Sub),
        binary(OpId::Mul),
        binary(OpId::Div),
        binary(OpId::Pow),
        binary(OpId::Maximum),
        binary(OpId::Minimum),
        Case{OpId::LogicalAnd, {m, m}, DType::Bool},
        Case{OpId::LogicalOr, {m, m}, DType::Bool},
        compare(OpId::Eq),
        compare(OpId::Ne),
        compare(OpId::Lt),
        compare(OpId::Le),
        compare(OpId::Gt),
        compare(OpId::Ge),
        Case{OpId::Where, {m, a, b}},
        Case{OpId::MaskedFill, {a, m}, DType::F32, {}, {-1.0}},
        Case{OpId::Sum, {a}, DType::F32, {0, -1}},
        Case{OpId::Mean, {a}, DType::F32, {1, 0}},
        Case{OpId::Amax, {a}, DType::F32, {0, 1}},
        Case{OpId::Softmax, {a}, DType::F32, {1}},
        Case{OpId::Matmul, {a, c}},
        Case{OpId::Linear, {a, w}},
        Case{OpId::Embedding, {table, idx}},
        Case{OpId::Arange, {}, DType::I64, {0, 5, 1}},
        Case{OpId::Full, {}, DType::F32, {}, {2.0}, 1, {2, 2}},
        Case{OpId::FullLike, {a}, DType::F16, {}, {2.0}},
        Case{OpId::Triu, {a}, DType::F32, {0}},
        Case{OpId::Tril, {a}, DType::F32, {0}},
        Case{OpId::Transpose, {a}, DType::F32, {0, 1}},
        Case{OpId::Permute, {a}, DType::F32, {1, 0}},
        Case{OpId::Reshape, {a}, DType::F32, {3, -1}},
        Case{OpId::Unsqueeze, {a}, DType::F32, {0}},
        Case{OpId::Squeeze, {row}, DType::F32, {0}},
        Case{OpId::Expand, {b}, DType::F32, {2, 3}},
        Case{OpId::Slice, {a}, DType::F32, {1, 0, 2, 1}},
        Case{OpId::Cat, {a, a}, DType::F32, {0}},
        Case{OpId::Split, {a}, DType::F32, {1, 1, 2}, {}, 2},
        Case{OpId::IndexSelect, {a, idx2}, DType::F32, {0}},
        Case{OpId::Gather, {a, gidx}, DType::F32, {1}},
        Case{OpId::IndexCopy, {a, idx2, a}, DType::F32, {0}},
        Case{OpId::IndexPut, {a, idx2, a}, DType::F32, {0, 1}},
        Case{OpId::RmsNorm, {a, b}, DType::F32, {}, {1e-5, 1.0}},
        Case{OpId::LayerNorm, {a, b}, DType::F32, {1, 0}, {1e-5}},
        Case{OpId::Rope, {x4, p2, freq}, DType::F32, {0}, {1.0}},
        Case{
            OpId::Sdpa, {x4, kv, kv, p2}, DType::F32, {0, 1, 1, 0}, {0.5, 0.0}},
        Case{OpId::KvCacheUpdate, {cache, p1, val}, DType::F32, {2}},
        Case{OpId::KvRingSlots, {p2}, DType::I64, {1, 3}},
        Case{OpId::KvRingMask, {p2}, DType::F32, {1, 4, 2}},
        Case{OpId::QLinear, {a4, qw}},
        Case{OpId::Lora, {a4, a}, DType::F32, {0}},
        Case{OpId::QEmbedding, {qw, idx2}},
        Case{OpId::Dequantize, {qw}},
    };
    Case qd{OpId::QuantizeDynamic, {a4}, DType::QAct};
    qd.outQuant = act;
    cs.push_back(qd);
    Case qs{OpId::QuantizeStatic, {a4}, DType::QAct, {}, {0.05}};
    qs.outQuant = act;
    qs.outQuant.symmetric = true;
    qs.outQuant.perToken = false;
    cs.push_back(qs);
    Case topk{OpId::TopK, {a}, DType::F32, {2, -1}, {}, 2};
    topk.outTypes = {DType::F32, DType::I64};
    cs.push_back(topk);
    Tensor *router = t(makeTensor(DType::F32, {3, 4}, randomValues(12, 6)));
    Tensor *eg = t(makeTensor(DType::F32, {3, 2, 4}, randomValues(24, 7)));
    Tensor *eu = t(makeTensor(DType::F32, {3, 2, 4}, randomValues(24, 8)));
    Tensor *ed = t(makeTensor(DType::F32, {3, 4, 2}, randomValues(24, 9)));
    cs.push_back({OpId::Moe,
                  {a4, router, eg, eu, ed},
                  DType::F32,
                  {2, 0, 0, 1, 1, 1, 0},
                  {1.0, 0.0}});
    return cs;
  }
};

TEST_F(AllOps, SucceedRepeatablyAndRefuseAShortOutput) {
  std::set<OpId> covered;
  ExecContext ctx;
  for (const Case &k : cases()) {
    const char *name = opInfo(k.op).name;
    SCOPED_TRACE(name);
    covered.insert(k.op);
    std::vector<OwnedTensor> outs;
    std::vector<Tensor *> outPtrs;
    auto typeOf = [&](size_t i) {
      return i < k.outTypes.size() ? k.outTypes[i] : k.outType;
    };
    for (int i = 0; i < k.numOutputs; ++i)
      outs.emplace_back(typeOf(i), k.outShape, 4096, k.outQuant);
    for (OwnedTensor &o : outs)
      outPtrs.push_back(o.get());
    ASSERT_OK(callKernel(portableKernels().get(k.op), ctx, k.ins, outPtrs,
                         k.ints, k.floats));
    // Same call again: same shape and bytes.
    std::vector<std::vector<uint8_t>> first;
    for (OwnedTensor &o : outs)
      first.emplace_back(o->ptr<uint8_t>(), o->ptr<uint8_t>() + o->nbytes());
    ASSERT_OK(callKernel(portableKernels().get(k.op), ctx, k.ins, outPtrs,
                         k.ints, k.floats));
    for (size_t i = 0; i < outs.size(); ++i)
      EXPECT_EQ(
          std::vector<uint8_t>(outs[i]->ptr<uint8_t>(),
                               outs[i]->ptr<uint8_t>() + outs[i]->nbytes()),
          first[i]);
    // One byte short: a resize error naming the operator.
    for (size_t i = 0; i < outs.size(); ++i) {
      size_t need = outs[i]->nbytes();
      ASSERT_GT(need, 0u);
      std::vector<OwnedTensor> shortOuts;
      std::vector<Tensor *> shortPtrs;
      for (size_t j = 0; j < outs.size(); ++j)
        shortOuts.emplace_back(typeOf(j), k.outShape, j == i ? need - 1 : 4096,
                               k.outQuant);
      for (OwnedTensor &o : shortOuts)
        shortPtrs.push_back(o.get());
      Status s = callKernel(portableKernels().get(k.op), ctx, k.ins, shortPtrs,
                            k.ints, k.floats);
      EXPECT_FALSE(s.ok());
      EXPECT_NE(s.message().find(std::string(name) + ":"), std::string::npos)
          << s.message();
      EXPECT_NE(s.message().find("planned"), std::string::npos) << s.message();
    }
  }
  EXPECT_EQ(covered.size(), size_t(OpId::NumOps));
}

TEST(DTypes, FloatOnlyUnaryOpsRejectIntegers) {
  auto x = makeTensor(DType::I32, {2}, {1, 2});
  OwnedTensor y(DType::I32, {2});
  for (OpId op :
       {OpId::Rsqrt, OpId::Sqrt, OpId::Exp, OpId::Log, OpId::Cos, OpId::Sin,
        OpId::Tanh, OpId::Sigmoid, OpId::Silu, OpId::Relu}) {
    SCOPED_TRACE(opInfo(op).name);
    EXPECT_ERROR(run(op, {x}, {y}),
                 std::string(opInfo(op).name) + ": unsupported dtype i32");
  }
  EXPECT_ERROR(run(OpId::Gelu, {x}, {y}, {0}), "gelu: unsupported dtype i32");
}

TEST(DTypes, ByteMoversNeedTheInputDType) {
  auto x = makeTensor(DType::F32, {2, 2}, {1, 2, 3, 4});
  auto i = makeTensor(DType::I64, {1}, {0});
  OwnedTensor y(DType::I32, {0}, 64);
  struct C {
    OpId op;
    std::vector<Tensor *> ins;
    std::vector<int64_t> ints;
  };
  for (const C &c : std::vector<C>{{OpId::Transpose, {x}, {0, 1}},
                                   {OpId::Permute, {x}, {0, 1}},
                                   {OpId::Reshape, {x}, {4}},
                                   {OpId::Unsqueeze, {x}, {0}},
                                   {OpId::Squeeze, {x}, {0}},
                                   {OpId::Expand, {x}, {2, 2}},
                                   {OpId::Slice, {x}, {0, 0, 1, 1}},
                                   {OpId::Cat, {x}, {0}},
                                   {OpId::IndexSelect, {x, i}, {0}},
                                   {OpId::Triu, {x}, {0}},
                                   {OpId::Tril, {x}, {0}},
                                   {OpId::Copy, {x}, {}}}) {
    SCOPED_TRACE(opInfo(c.op).name);
    EXPECT_ERROR(run(c.op, c.ins, {y}, c.ints), "f32 -> i32");
  }
}

TEST(DTypes, NormsAndAttentionRejectIntegers) {
  auto xi = makeTensor(DType::I32, {1, 1, 1, 2}, {});
  OwnedTensor y(DType::F32, {0}, 64);
  EXPECT_ERROR(run(OpId::LayerNorm, {xi}, {y}, {0, 0}, {1e-5}),
               "layer_norm: unsupported dtype combination i32 -> f32");
  EXPECT_ERROR(run(OpId::Sdpa, {xi, xi, xi}, {y}, {0, 0, 0, 0}, {1.0, 0.0}),
               "sdpa: unsupported dtype combination i32, i32 -> f32");
  EXPECT_ERROR(run(OpId::Rope, {xi, xi, xi}, {y}, {0}, {1.0}),
               "rope: unsupported");
  auto table = makeTensor(DType::I64, {2, 2}, {});
  auto idx = makeTensor(DType::I64, {1}, {0});
  OwnedTensor yi(DType::I64, {0}, 64);
  EXPECT_ERROR(run(OpId::Embedding, {table, idx}, {yi}),
               "embedding: unsupported");
}

} // namespace
