//===- verify_ops_test.cpp - The generated load-time rules ----------------===//
//
// The rules of ops.def (generated from the ops' ODS, interpreted by
// verify_ops.cpp) on calls built here as element types and ranks: the table
// is consistent, and every check the hand-written verifier of earlier
// versions made is still made, each error naming the operand or attribute
// at fault. That the rules accept every call the compiler emits is checked
// on the compiler's side (serialize.KernelContracts, over the lit tests'
// IR).
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/verify_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

using namespace etllm::rt;

namespace {

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

bool isListAttr(OpId id, int a) {
  Span<const IntAttrInfo> attrs = intAttrs(id);
  return size_t(a) < attrs.size && attrs[a].kind == IntAttrKind::List;
}

TEST(OpRules, TheTableIsConsistent) {
  for (size_t i = 0; i < size_t(OpId::NumOps); ++i) {
    OpId id = OpId(i);
    const OpInfo &op = opInfo(id);
    SCOPED_TRACE(op.name);
    EXPECT_STREQ(opName(id), op.name);
    // The slots: inputs, then outputs, as many as the counts say.
    Span<const OpValueInfo> values = opValues(id);
    int one[2] = {0, 0}, optional[2] = {0, 0}, variadic[2] = {0, 0};
    bool outputs = false;
    for (const OpValueInfo &v : values) {
      EXPECT_FALSE(!v.output && outputs)
          << v.name << ": an input after outputs";
      outputs |= v.output;
      (v.arity == ValueArity::One        ? one
       : v.arity == ValueArity::Optional ? optional
                                         : variadic)[v.output]++;
      if (v.arity == ValueArity::Optional && v.flag >= 0) {
        ASSERT_LT(size_t(v.flag), intAttrs(id).size);
        EXPECT_EQ(intAttrs(id)[v.flag].kind, IntAttrKind::Input);
      }
    }
    EXPECT_EQ(one[0] + variadic[0], op.minInputs);
    EXPECT_EQ(variadic[0] ? -1 : one[0] + optional[0], op.maxInputs);
    EXPECT_EQ(variadic[1] ? -1 : one[1], op.outputs);
    // Every rule refers to slots and attributes of the right kind.
    auto slot = [&](int s) { return s >= 0 && size_t(s) < values.size; };
    auto intAttr = [&](int a) {
      Span<const IntAttrInfo> attrs = intAttrs(id);
      return a >= 0 && size_t(a) < attrs.size &&
             (attrs[a].kind == IntAttrKind::Value ||
              attrs[a].kind == IntAttrKind::List);
    };
    for (const OpRule &r : opRules(id)) {
      SCOPED_TRACE("rule kind " + std::to_string(int(r.kind)));
      switch (r.kind) {
      case RuleKind::ElementTypes:
        EXPECT_TRUE(slot(r.a));
        EXPECT_NE(r.n, 0);
        EXPECT_EQ(r.n >> kNumDTypes, 0);
        break;
      case RuleKind::SameElementType:
      case RuleKind::RankOf:
      case RuleKind::MinRankOf:
        EXPECT_TRUE(slot(r.a) && slot(r.b));
        break;
      case RuleKind::Rank:
      case RuleKind::MinRank:
        EXPECT_TRUE(slot(r.a));
        EXPECT_GE(r.n, 0);
        break;
      case RuleKind::IntMin:
      case RuleKind::IntNonZero:
        EXPECT_TRUE(intAttr(r.a));
        break;
      case RuleKind::Axis:
        EXPECT_TRUE(intAttr(r.a) && slot(r.b));
        break;
      case RuleKind::LengthIsRank:
      case RuleKind::LengthIsCount:
        EXPECT_TRUE(isListAttr(id, r.a) && slot(r.b));
        if (r.kind == RuleKind::LengthIsCount) {
          EXPECT_EQ(values[r.b].arity, ValueArity::Variadic);
        }
        break;
      case RuleKind::FloatNotNaN:
      case RuleKind::FloatFinite:
      case RuleKind::FloatNonNegative:
        EXPECT_TRUE(r.a >= 0 && r.a < op.numFloats);
        break;
      }
    }
    for (const OpCheckInfo &c : opChecks(id))
      EXPECT_NE(c.fn, nullptr) << c.name;
  }
  // Spot checks of what the ODS says.
  Span<const OpValueInfo> sdpa = opValues(OpId::Sdpa);
  ASSERT_EQ(sdpa.size, 6u);
  EXPECT_STREQ(sdpa[3].name, "mask");
  EXPECT_EQ(sdpa[3].arity, ValueArity::Optional);
  EXPECT_EQ(sdpa[3].flag, 0);
  EXPECT_STREQ(opValues(OpId::Copy)[1].name, "@name");
  ASSERT_EQ(opChecks(OpId::Reshape).size, 1u);
  EXPECT_STREQ(opChecks(OpId::Reshape)[0].name, "OneInferredSize");
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

constexpr DType F32 = DType::F32, F16 = DType::F16, I64 = DType::I64,
                I32 = DType::I32, I8 = DType::I8, Bool = DType::Bool,
                QW = DType::QWeight, QA = DType::QAct;

struct Call {
  const char *op;
  std::vector<ValueDesc> in, out;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

Status verify(const Call &c) {
  const OpInfo *op = findOp(c.op, std::strlen(c.op));
  if (!op)
    return Error(std::string("no operator ") + c.op);
  return verifyKernelCall(*op, c.in, c.out, c.ints.data(), c.ints.size(),
                          c.floats.data(), c.floats.size());
}

/// One thing wrong with a valid call, and the error it must produce.
struct Break {
  std::function<void(Call &)> apply;
  std::string error;
};

/// `good` is accepted; each break of it is refused with its error.
void expectRules(const Call &good, const std::vector<Break> &breaks) {
  SCOPED_TRACE(good.op);
  Status ok = verify(good);
  EXPECT_TRUE(ok.ok()) << ok.message();
  for (size_t i = 0; i < breaks.size(); ++i) {
    Call c = good;
    breaks[i].apply(c);
    Status st = verify(c);
    ASSERT_FALSE(st.ok()) << "break " << i << " (" << breaks[i].error
                          << ") was accepted";
    EXPECT_NE(st.message().find(breaks[i].error), std::string::npos)
        << "break " << i << ": " << st.message();
  }
}

ValueDesc v(DType d, int rank) { return {d, rank}; }

// What the hand-written verifier refused, op by op: element-wise ops.
TEST(OpRules, ElementWise) {
  for (const char *op : {opName(OpId::Neg), opName(OpId::Exp),
                         opName(OpId::Silu), opName(OpId::Copy)})
    expectRules({op, {v(F32, 2)}, {v(F32, 2)}, {}, {}},
                {{[](Call &c) { c.out[0].dtype = F16; }, " is f16 but "}});
  expectRules({opName(OpId::Gelu), {v(F32, 2)}, {v(F32, 2)}, {1}, {}},
              {{[](Call &c) { c.out[0].dtype = F16; },
                "result (output 0) is f16 but input (input 0) is f32"}});
  expectRules({opName(OpId::LogicalNot), {v(Bool, 1)}, {v(Bool, 1)}, {}, {}},
              {{[](Call &c) { c.out[0].dtype = F32; },
                "result (output 0) has element type f32, expected bool"}});
  expectRules(
      {opName(OpId::Convert), {v(F32, 2)}, {v(I8, 2)}, {}, {}},
      {{[](Call &c) { c.out[0].dtype = QW; },
        "result (output 0) has element type qweight"},
       {[](Call &c) { c.out[0].dtype = QA; }, "has element type qact"}});
  for (const char *op :
       {opName(OpId::Add), opName(OpId::Mul), opName(OpId::Maximum)})
    expectRules({op, {v(F32, 3), v(F32, 1)}, {v(F32, 3)}, {}, {}},
                {{[](Call &c) { c.in[1].dtype = F16; },
                  "rhs (input 1) is f16 but lhs (input 0) is f32"},
                 {[](Call &c) { c.out[0].dtype = I64; },
                  "result (output 0) is i64 but lhs (input 0) is f32"},
                 {[](Call &c) { c.in[0].dtype = QA; },
                  "lhs (input 0) has element type qact"}});
  expectRules({opName(OpId::LogicalAnd),
               {v(Bool, 2), v(Bool, 2)},
               {v(Bool, 2)},
               {},
               {}},
              {{[](Call &c) { c.in[1].dtype = I64; },
                "rhs (input 1) has element type i64, expected bool"},
               {[](Call &c) { c.out[0].dtype = F32; },
                "result (output 0) has element type f32, expected bool"}});
  expectRules({opName(OpId::Eq), {v(I64, 1), v(I64, 2)}, {v(Bool, 2)}, {}, {}},
              {{[](Call &c) { c.in[1].dtype = I32; },
                "rhs (input 1) is i32 but lhs (input 0) is i64"},
               {[](Call &c) { c.out[0].dtype = F32; },
                "result (output 0) has element type f32, expected bool"}});
  expectRules({opName(OpId::Where),
               {v(Bool, 2), v(F32, 0), v(F32, 0)},
               {v(F32, 2)},
               {},
               {}},
              {{[](Call &c) { c.in[0].dtype = F32; },
                "condition (input 0) has element type f32, expected bool"},
               {[](Call &c) { c.in[2].dtype = F16; },
                "on_false (input 2) is f16 but on_true (input 1) is f32"},
               {[](Call &c) { c.out[0].dtype = F16; },
                "result (output 0) is f16 but on_true (input 1) is f32"}});
  expectRules({opName(OpId::MaskedFill),
               {v(F32, 4), v(Bool, 2)},
               {v(F32, 4)},
               {},
               {-1e38}},
              {{[](Call &c) { c.in[1].dtype = F32; },
                "mask (input 1) has element type f32, expected bool"},
               {[](Call &c) { c.floats[0] = std::nan(""); },
                "value (float attribute 0) nan is not finite"},
               {[](Call &c) { c.out[0].dtype = F16; },
                "result (output 0) is f16 but input (input 0) is f32"}});
  Status inf = verify({opName(OpId::MaskedFill),
                       {v(F32, 4), v(Bool, 2)},
                       {v(F32, 4)},
                       {},
                       {-INFINITY}});
  EXPECT_TRUE(inf.ok()) << inf.message();
}

TEST(OpRules, ReductionsAndCreation) {
  expectRules({opName(OpId::Sum), {v(F32, 3)}, {v(F32, 3)}, {1, 0, -1}, {}},
              {{[](Call &c) { c.ints[2] = 3; },
                "dims[1] (integer attribute 2) 3 is out of range for rank 3"},
               {[](Call &c) { c.ints[2] = -3; },
                "dims[1] (integer attribute 2): dimension -3 appears twice"},
               {[](Call &c) { c.ints.clear(); },
                "0 integer attributes, expected at least 1"}});
  // A scalar counts as a vector of one.
  EXPECT_TRUE(
      verify({opName(OpId::Sum), {v(F32, 0)}, {v(F32, 0)}, {0, -1}, {}}).ok());
  expectRules({opName(OpId::Softmax), {v(F32, 4)}, {v(F32, 4)}, {-1}, {}},
              {{[](Call &c) { c.ints[0] = 4; },
                "dim (integer attribute 0) 4 is out of range for rank 4"},
               {[](Call &c) { c.ints[0] = -5; }, "-5 is out of range"}});
  expectRules({opName(OpId::Arange), {}, {v(I64, 1)}, {0, 8, 2}, {}},
              {{[](Call &c) { c.ints[2] = 0; },
                "step (integer attribute 2) must not be 0"},
               {[](Call &c) { c.out[0].dtype = Bool; },
                "result (output 0) has element type bool"}});
  expectRules({opName(OpId::Full), {}, {v(F32, 2)}, {}, {0.5}},
              {{[](Call &c) { c.floats[0] = std::nan(""); },
                "value (float attribute 0) nan is not finite"}});
  expectRules({opName(OpId::FullLike), {v(I64, 2)}, {v(F32, 2)}, {}, {1}},
              {{[](Call &c) { c.floats[0] = std::nan(""); },
                "value (float attribute 0) nan is not finite"}});
  expectRules(
      {opName(OpId::TopK), {v(F32, 3)}, {v(F32, 3), v(I64, 3)}, {2, -1}, {}},
      {{[](Call &c) { c.ints[0] = 0; },
        "k (integer attribute 0) must be at least 1, got 0"},
       {[](Call &c) {
          c.in[0].rank = 0;
          c.ints[1] = 0;
        },
        "input (input 0) has rank 0, expected at least 1"},
       {[](Call &c) { c.ints[1] = 3; }, "3 is out of range for rank 3"},
       {[](Call &c) { c.out[0].dtype = F16; },
        "values (output 0) is f16 but input (input 0) is f32"},
       {[](Call &c) { c.out[1].dtype = I32; },
        "indices (output 1) has element type i32, expected i64"}});
}

TEST(OpRules, LookupsAndShapes) {
  expectRules(
      {opName(OpId::Embedding), {v(F32, 2), v(I64, 2)}, {v(F32, 3)}, {}, {}},
      {{[](Call &c) { c.in[1].dtype = F32; },
        "indices (input 1) has element type f32, expected i64 or i32"}});
  expectRules({opName(OpId::Transpose), {v(F32, 4)}, {v(F32, 4)}, {1, 2}, {}},
              {{[](Call &c) { c.ints[0] = 4; },
                "dim0 (integer attribute 0) 4 is out of range for rank 4"},
               {[](Call &c) { c.ints[1] = -5; },
                "dim1 (integer attribute 1) -5 is out of range for rank 4"}});
  expectRules({opName(OpId::Permute), {v(F32, 3)}, {v(F32, 3)}, {0, 2, 1}, {}},
              {{[](Call &c) { c.ints.push_back(3); },
                "dims has 4 entries, expected 3 (the rank of input (input 0))"},
               {[](Call &c) { c.ints[1] = 3; },
                "dims[1] (integer attribute 1) 3 is out of range for rank 3"},
               {[](Call &c) { c.ints[2] = -3; },
                "dims[2] (integer attribute 2): dimension -3 appears twice"},
               {[](Call &c) { c.out[0].rank = 2; },
                "result (output 0) has rank 2, expected 3"}});
  // Ranks beyond 32 (the old bit set's width) are checked too.
  Call wide{opName(OpId::Permute), {v(F32, 40)}, {v(F32, 40)}, {}, {}};
  for (int64_t d = 0; d < 40; ++d)
    wide.ints.push_back(39 - d);
  EXPECT_TRUE(verify(wide).ok());
  wide.ints[5] = 39;
  EXPECT_FALSE(verify(wide).ok());
  expectRules(
      {opName(OpId::Reshape), {v(F32, 3)}, {v(F32, 4)}, {1, -1, 8, 8}, {}},
      {{[](Call &c) { c.ints.pop_back(); },
        "shape has 3 entries, expected 4 (the rank of result"},
       {[](Call &c) { c.ints[0] = -2; },
        "shape[0] (integer attribute 0) must be at least -1, got -2"},
       {[](Call &c) { c.ints[2] = -1; }, "more than one -1 in shape"},
       {[](Call &c) { c.out[0].dtype = F16; },
        "result (output 0) is f16 but input (input 0) is f32"}});
  expectRules({opName(OpId::Unsqueeze), {v(F32, 2)}, {v(F32, 3)}, {2}, {}},
              {{[](Call &c) { c.ints[0] = 3; },
                "dim (integer attribute 0) 3 is out of range for rank 3"},
               {[](Call &c) { c.out[0].rank = 2; },
                "result (output 0) has rank 2, expected 3 (the rank of input "
                "(input 0) + 1)"}});
  expectRules({opName(OpId::Squeeze), {v(F32, 3)}, {v(F32, 2)}, {1}, {}},
              {{[](Call &c) { c.ints[0] = 3; },
                "dim (integer attribute 0) 3 is out of range for rank 3"}});
  expectRules({opName(OpId::Squeeze), {v(F32, 0)}, {v(F32, 0)}, {-1}, {}},
              {{[](Call &c) { c.ints[0] = 1; },
                "dim (integer attribute 0) 1 is out of range for rank 1"}});
  expectRules({opName(OpId::Expand), {v(F32, 2)}, {v(F32, 3)}, {4, -1, 8}, {}},
              {{[](Call &c) { c.ints.pop_back(); },
                "shape has 2 entries, expected 3 (the rank of result"},
               {[](Call &c) {
                  c.ints = {8};
                  c.out[0].rank = 1;
                },
                "result (output 0) has rank 1, expected at least 2"},
               {[](Call &c) { c.ints[0] = -2; },
                "shape[0] (integer attribute 0) must be at least -1"},
               {[](Call &c) { c.out[0].dtype = I64; },
                "result (output 0) is i64 but input (input 0) is f32"}});
  expectRules({opName(OpId::Slice), {v(F32, 3)}, {v(F32, 3)}, {1, 0, 4, 1}, {}},
              {{[](Call &c) { c.ints[0] = 3; },
                "dim (integer attribute 0) 3 is out of range for rank 3"},
               {[](Call &c) { c.ints[3] = 0; },
                "step (integer attribute 3) must be at least 1, got 0"},
               {[](Call &c) { c.out[0].dtype = F16; },
                "result (output 0) is f16 but input (input 0) is f32"}});
  expectRules({opName(OpId::Cat),
               {v(F32, 3), v(F32, 3), v(F32, 3)},
               {v(F32, 3)},
               {-1},
               {}},
              {{[](Call &c) { c.ints[0] = 3; },
                "dim (integer attribute 0) 3 is out of range for rank 3"},
               {[](Call &c) { c.in[2].dtype = F16; },
                "inputs[2] (input 2) is f16 but result (output 0) is f32"},
               {[](Call &c) { c.in[1].rank = 2; },
                "inputs[1] (input 1) has rank 2, expected 3"}});
  expectRules({opName(OpId::Split),
               {v(F32, 3)},
               {v(F32, 3), v(F32, 3)},
               {2, 64, 32},
               {}},
              {{[](Call &c) { c.out.pop_back(); },
                "sizes has 2 entries, expected 1 (one per value of results)"},
               {[](Call &c) { c.ints = {2}; },
                "sizes has 0 entries, expected 2 (one per value of results)"},
               {[](Call &c) { c.ints[0] = -4; },
                "dim (integer attribute 0) -4 is out of range for rank 3"},
               {[](Call &c) { c.ints[2] = -1; },
                "sizes[1] (integer attribute 2) must be at least 0"},
               {[](Call &c) { c.out[1].dtype = F16; },
                "results[1] (output 1) is f16 but input (input 0) is f32"}});
  for (const char *op : {opName(OpId::IndexSelect), opName(OpId::Gather)})
    expectRules({op, {v(F32, 2), v(I64, 2)}, {v(F32, 2)}, {1}, {}},
                {{[](Call &c) { c.ints[0] = 2; },
                  "dim (integer attribute 0) 2 is out of range for rank 2"},
                 {[](Call &c) { c.in[1].dtype = F32; },
                  "index (input 1) has element type f32, expected i64 or "
                  "i32"}});
  expectRules({opName(OpId::IndexCopy),
               {v(F32, 4), v(I64, 1), v(F32, 4)},
               {v(F32, 4)},
               {2},
               {}},
              {{[](Call &c) { c.ints[0] = 4; }, "4 is out of range for rank 4"},
               {[](Call &c) { c.in[1].dtype = F16; },
                "index (input 1) has element type f16"},
               {[](Call &c) { c.out[0].dtype = F16; },
                "result (output 0) is f16 but input (input 0) is f32"}});
  expectRules(
      {opName(OpId::IndexPut),
       {v(F32, 4), v(I32, 1), v(F32, 4)},
       {v(F32, 4)},
       {2, 1},
       {}},
      {{[](Call &c) { c.ints[0] = -5; }, "-5 is out of range for rank 4"},
       {[](Call &c) { c.in[1].dtype = Bool; },
        "index (input 1) has element type bool"},
       {[](Call &c) { c.out[0].dtype = F16; },
        "result (output 0) is f16 but input (input 0) is f32"}});
}

TEST(OpRules, FusedOps) {
  expectRules({opName(OpId::RmsNorm),
               {v(F32, 3), v(F32, 1)},
               {v(F32, 3)},
               {},
               {1e-6, 0}},
              {{[](Call &c) { c.floats[0] = std::nan(""); },
                "eps (float attribute 0) nan is not finite"},
               {[](Call &c) { c.floats[0] = -1; },
                "eps (float attribute 0) -1.000000 is out of range"},
               {[](Call &c) { c.floats[1] = INFINITY; },
                "weight_offset (float attribute 1) inf is not finite"}});
  expectRules({opName(OpId::LayerNorm),
               {v(F32, 3), v(F32, 1)},
               {v(F32, 3)},
               {1, 0},
               {1e-5}},
              {{[](Call &c) { c.floats[0] = -1; },
                "eps (float attribute 0) -1.000000 is out of range"}});
  expectRules(
      {opName(OpId::Rope),
       {v(F32, 4), v(I64, 1), v(F32, 1)},
       {v(F32, 4)},
       {0},
       {1}},
      {{[](Call &c) { c.floats[0] = INFINITY; },
        "attention_scaling (float attribute 0) inf is not finite"},
       {[](Call &c) { c.in[0].rank = 3; },
        "input (input 0) has rank 3, expected 4"},
       {[](Call &c) { c.in[1].rank = 2; },
        "positions (input 1) has rank 2, expected 1"},
       {[](Call &c) { c.in[1].dtype = F32; },
        "positions (input 1) has element type f32, expected i64 or i32"},
       {[](Call &c) { c.in[2].rank = 2; },
        "inv_freq (input 2) has rank 2, expected 1"},
       {[](Call &c) { c.in[2].dtype = I64; },
        "inv_freq (input 2) has element type i64, expected f32"}});
  expectRules(
      {opName(OpId::Sdpa),
       {v(F32, 4), v(F32, 4), v(F32, 4), v(I64, 1)},
       {v(F32, 4)},
       {0, 1, 1, 0},
       {0.35, 0}},
      {{[](Call &c) { c.ints[3] = -1; },
        "sliding_window (integer attribute 3) must be at least 0, got -1"},
       {[](Call &c) { c.floats[0] = INFINITY; },
        "scale (float attribute 0) inf is not finite"},
       {[](Call &c) { c.floats[1] = -3; },
        "softcap (float attribute 1) -3.000000 is out of range"},
       {[](Call &c) { c.in[0].rank = 3; }, "query (input 0) has rank 3"},
       {[](Call &c) { c.in[1].rank = 3; }, "key (input 1) has rank 3"},
       {[](Call &c) { c.in[2].rank = 1; }, "value (input 2) has rank 1"},
       {[](Call &c) { c.in[3].dtype = F32; },
        "positions (input 3) has element type f32, expected i64 or i32"}});
  // The optional inputs are placed by the has_* flags: a mask alone is
  // input 3.
  Status mask = verify({opName(OpId::Sdpa),
                        {v(F32, 4), v(F32, 4), v(F32, 4), v(I64, 1)},
                        {v(F32, 4)},
                        {1, 0, 0, 0},
                        {0.35, 0}});
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(
      mask.message().find(
          "mask (input 3) has element type i64, expected f32, f16 or bf16"),
      std::string::npos)
      << mask.message();
  expectRules(
      {opName(OpId::KvCacheUpdate),
       {v(F16, 4), v(I64, 1), v(F16, 4)},
       {v(F16, 4)},
       {2},
       {}},
      {{[](Call &c) { c.ints[0] = 9; },
        "dim (integer attribute 0) 9 is out of range for rank 4"},
       {[](Call &c) { c.in[1].dtype = F32; },
        "positions (input 1) has element type f32, expected i64 or i32"},
       // value vs cache is the kernel's check, not a load-time rule: an
       // int8 cache (QAct) takes float values (nn_test.cpp).
       {[](Call &c) { c.out[0].dtype = F32; },
        "result (output 0) is f32 but cache (input 0) is f16"}});
  expectRules(
      {opName(OpId::Lora), {v(F32, 3), v(F32, 3)}, {v(F32, 3)}, {0}, {}},
      {{[](Call &c) { c.in[0].dtype = F16; },
        "input (input 0) has element type f16, expected f32"},
       {[](Call &c) { c.in[1].dtype = F16; },
        "base (input 1) has element type f16, expected f32"},
       {[](Call &c) {
          c.in[0].rank = 0;
          c.in[1].rank = 0;
          c.out[0].rank = 0;
        },
        "input (input 0) has rank 0, expected at least 1"},
       {[](Call &c) { c.in[0].rank = 2; },
        "input (input 0) has rank 2, expected 3 (the rank of base"},
       {[](Call &c) { c.ints[0] = -1; },
        "hook (integer attribute 0) must be at least 0, got -1"}});
}

TEST(OpRules, QuantizedOps) {
  expectRules({opName(OpId::QuantizeDynamic), {v(F32, 3)}, {v(QA, 3)}, {}, {}},
              {{[](Call &c) { c.out[0].dtype = I8; },
                "result (output 0) has element type i8, expected qact"}});
  expectRules(
      {opName(OpId::QLinear), {v(QA, 3), v(QW, 2)}, {v(F32, 3)}, {}, {}},
      {{[](Call &c) { c.in[1].dtype = F32; },
        "weight (input 1) has element type f32, expected qweight"}});
  expectRules(
      {opName(OpId::QEmbedding), {v(QW, 2), v(I32, 2)}, {v(F32, 3)}, {}, {}},
      {{[](Call &c) { c.in[0].dtype = F32; },
        "weight (input 0) has element type f32, expected qweight"},
       {[](Call &c) { c.in[1].dtype = I8; },
        "indices (input 1) has element type i8"}});
  expectRules({opName(OpId::Dequantize), {v(QW, 2)}, {v(F32, 2)}, {}, {}},
              {{[](Call &c) { c.in[0].dtype = F32; },
                "input (input 0) has element type f32, expected qweight"}});
  // moe: top_k, scoring, topk_method, n_group, topk_group, norm_topk_prob,
  // has_score_bias; routed_scaling_factor, norm_eps.
  expectRules(
      {opName(OpId::Moe),
       {v(F32, 2), v(F32, 2), v(QW, 3), v(QW, 3), v(F32, 3), v(F32, 1)},
       {v(F32, 2)},
       {2, 0, 0, 1, 1, 1, 1},
       {1, 0}},
      {{[](Call &c) { c.ints[0] = 0; },
        "top_k (integer attribute 0) must be at least 1"},
       {[](Call &c) { c.ints[3] = 0; },
        "n_group (integer attribute 3) must be at least 1"},
       {[](Call &c) { c.ints[4] = -1; },
        "topk_group (integer attribute 4) must be at least 1"},
       {[](Call &c) {
          c.in[0].rank = 0;
          c.out[0].rank = 0;
        },
        "input (input 0) has rank 0, expected at least 1"},
       {[](Call &c) { c.out[0].dtype = F16; },
        "result (output 0) is f16 but input (input 0) is f32"},
       {[](Call &c) { c.in[1].rank = 3; }, "router (input 1) has rank 3"},
       {[](Call &c) { c.in[1].dtype = QW; },
        "router (input 1) has element type qweight"},
       {[](Call &c) { c.in[2].rank = 2; }, "gate (input 2) has rank 2"},
       {[](Call &c) { c.in[3].dtype = I8; },
        "up (input 3) has element type i8"},
       {[](Call &c) { c.in[4].rank = 4; }, "down (input 4) has rank 4"},
       {[](Call &c) { c.in[5].rank = 2; }, "score_bias (input 5) has rank 2"},
       {[](Call &c) { c.in[5].dtype = F16; },
        "score_bias (input 5) has element type f16, expected f32"},
       {[](Call &c) { c.floats[0] = -1; },
        "routed_scaling_factor (float attribute 0) -1.000000 is out of range"},
       {[](Call &c) { c.floats[1] = std::nan(""); },
        "norm_eps (float attribute 1) nan is not finite"}});
}

// Hostile calls that the counts let through never reach past the values.
TEST(OpRules, PlacesValuesDefensively) {
  // Too few inputs for the has_* flags (checkIntAttrs refuses it first when
  // a program loads; the rules do not read past the inputs either).
  Status st = verify({opName(OpId::Sdpa),
                      {v(F32, 4), v(F32, 4), v(F32, 4)},
                      {v(F32, 4)},
                      {1, 1, 0, 0},
                      {0.35, 0}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("3 inputs, expected at least 5"),
            std::string::npos)
      << st.message();
}

} // namespace
