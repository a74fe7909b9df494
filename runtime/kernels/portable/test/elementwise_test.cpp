//===- elementwise_test.cpp - Unary, binary, select and fill kernels ------===//
#include "helpers.h"

#include <limits>

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

TEST(Unary, FloatMath) {
  auto x = makeTensor(DType::F32, {4}, {0.25, 1.0, 4.0, 9.0});
  OwnedTensor y(DType::F32, {4});
  ASSERT_OK(run(OpId::Rsqrt, {x}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{2.0, 1.0, 0.5, 1.0 / 3}), 1e-7);
  ASSERT_OK(run(OpId::Sqrt, {x}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{0.5, 1.0, 2.0, 3.0}), 0);
  ASSERT_OK(run(OpId::Log, {x}, {y}));
  EXPECT_VALUES(
      *y,
      (std::vector<double>{std::log(0.25), 0, std::log(4.0), std::log(9.0)}),
      1e-6);

  auto z = makeTensor(DType::F32, {3}, {0.0, 1.0, -2.0});
  OwnedTensor o(DType::F32, {3});
  ASSERT_OK(run(OpId::Exp, {z}, {o}));
  EXPECT_VALUES(*o, (std::vector<double>{1.0, M_E, std::exp(-2.0)}), 1e-6);
  ASSERT_OK(run(OpId::Cos, {z}, {o}));
  EXPECT_VALUES(*o, (std::vector<double>{1.0, std::cos(1.0), std::cos(-2.0)}),
                1e-6);
  ASSERT_OK(run(OpId::Sin, {z}, {o}));
  EXPECT_VALUES(*o, (std::vector<double>{0.0, std::sin(1.0), std::sin(-2.0)}),
                1e-6);
  ASSERT_OK(run(OpId::Tanh, {z}, {o}));
  EXPECT_VALUES(
      *o, (std::vector<double>{0.0, 0.7615941559557649, -0.9640275800758169}),
      1e-6);
  ASSERT_OK(run(OpId::Sigmoid, {z}, {o}));
  EXPECT_VALUES(
      *o, (std::vector<double>{0.5, 0.7310585786300049, 0.11920292202211755}),
      1e-6);
  ASSERT_OK(run(OpId::Silu, {z}, {o}));
  EXPECT_VALUES(
      *o, (std::vector<double>{0.0, 0.7310585786300049, -0.2384058440442351}),
      1e-6);
  ASSERT_OK(run(OpId::Relu, {z}, {o}));
  EXPECT_VALUES(*o, (std::vector<double>{0.0, 1.0, 0.0}), 0);
  ASSERT_OK(run(OpId::Neg, {z}, {o}));
  EXPECT_VALUES(*o, (std::vector<double>{0.0, -1.0, 2.0}), 0);
  ASSERT_OK(run(OpId::Abs, {z}, {o}));
  EXPECT_VALUES(*o, (std::vector<double>{0.0, 1.0, 2.0}), 0);
}

TEST(Unary, GeluBothForms) {
  auto x = makeTensor(DType::F32, {3}, {1.0, -1.0, 0.0});
  OwnedTensor y(DType::F32, {3});
  ASSERT_OK(run(OpId::Gelu, {x}, {y}, {0}));
  EXPECT_VALUES(
      *y, (std::vector<double>{0.8413447460685429, -0.15865525393145707, 0.0}),
      1e-6);
  ASSERT_OK(run(OpId::Gelu, {x}, {y}, {1}));
  EXPECT_VALUES(
      *y, (std::vector<double>{0.8411919906082768, -0.15880800939172324, 0.0}),
      1e-6);
  EXPECT_ERROR(run(OpId::Gelu, {x}, {y}, {2}), opName(OpId::Gelu));
}

TEST(Unary, HalfAndBFloat16RoundTheF32Result) {
  for (DType dt : {DType::F16, DType::BF16}) {
    auto x = makeTensor(dt, {3}, {0.5, 1.0, -3.0});
    OwnedTensor y(dt, {3});
    ASSERT_OK(run(OpId::Exp, {x}, {y}));
    std::vector<double> want;
    for (double v : values(*x)) {
      float e = std::exp(float(v));
      want.push_back(dt == DType::F16 ? halfToFloat(floatToHalf(e))
                                      : bf16ToFloat(floatToBf16(e)));
    }
    EXPECT_VALUES(*y, want, 0);
  }
}

TEST(Unary, IntegerNegAbs) {
  auto x = makeTensor(DType::I64, {3}, {5, -7, 0});
  OwnedTensor y(DType::I64, {3});
  ASSERT_OK(run(OpId::Neg, {x}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{-5, 7, 0}), 0);
  ASSERT_OK(run(OpId::Abs, {x}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{5, 7, 0}), 0);
  auto b = makeTensor(DType::Bool, {2}, {1, 0});
  OwnedTensor bo(DType::Bool, {2});
  EXPECT_ERROR(run(OpId::Neg, {b}, {bo}), "bool");
}

TEST(Unary, Errors) {
  auto xi = makeTensor(DType::I64, {2}, {1, 2});
  OwnedTensor yi(DType::I64, {2});
  EXPECT_ERROR(run(OpId::Exp, {xi}, {yi}), "exp: unsupported dtype i64");
  auto x = makeTensor(DType::F32, {4}, {1, 2, 3, 4});
  OwnedTensor y16(DType::F16, {4});
  EXPECT_ERROR(run(OpId::Exp, {x}, {y16}), "f32 -> f16");
  OwnedTensor small(DType::F32, {2});
  EXPECT_ERROR(run(OpId::Exp, {x}, {small}), "more than the planned");
}

TEST(Unary, LogicalNot) {
  auto x = makeTensor(DType::F32, {3}, {0.0, 2.0, kNaN});
  OwnedTensor y(DType::Bool, {3});
  ASSERT_OK(run(OpId::LogicalNot, {x}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{1, 0, 0}), 0);
  auto b = makeTensor(DType::Bool, {2}, {1, 0});
  OwnedTensor bo(DType::Bool, {2});
  ASSERT_OK(run(OpId::LogicalNot, {b}, {bo}));
  EXPECT_VALUES(*bo, (std::vector<double>{0, 1}), 0);
}

TEST(Unary, DynamicShapeAcrossCalls) {
  // The same tensors, resized between calls, within the capacity.
  OwnedTensor x(DType::F32, {1, 2}, 6 * 4);
  OwnedTensor y(DType::F32, {0, 2}, 6 * 4);
  x->ptr<float>()[0] = -1;
  x->ptr<float>()[1] = 2;
  ASSERT_OK(run(OpId::Relu, {x}, {y}));
  EXPECT_SHAPE(*y, 1, 2);
  EXPECT_VALUES(*y, (std::vector<double>{0, 2}), 0);
  int64_t bigger[2] = {3, 2};
  ASSERT_OK(x->resize(bigger, 2));
  for (int i = 0; i < 6; ++i)
    x->ptr<float>()[i] = float(i - 3);
  ASSERT_OK(run(OpId::Relu, {x}, {y}));
  EXPECT_SHAPE(*y, 3, 2);
  EXPECT_VALUES(*y, (std::vector<double>{0, 0, 0, 0, 1, 2}), 0);
}

TEST(Unary, InPlace) {
  auto x = makeTensor(DType::F32, {3}, {1, -2, 3});
  Tensor alias = *x;
  ASSERT_OK(run(OpId::Neg, {x}, {&alias}));
  EXPECT_VALUES(*x, (std::vector<double>{-1, 2, -3}), 0);
}

//===----------------------------------------------------------------------===//
// Copy and convert
//===----------------------------------------------------------------------===//

TEST(Copy, TakesShapeAndBytes) {
  auto x = makeTensor(DType::BF16, {2, 2}, {1, 2, 3, 4});
  OwnedTensor y(DType::BF16, {4});
  ASSERT_OK(run(OpId::Copy, {x}, {y}));
  EXPECT_SHAPE(*y, 2, 2);
  EXPECT_VALUES(*y, (std::vector<double>{1, 2, 3, 4}), 0);
  OwnedTensor wrong(DType::F32, {2, 2});
  EXPECT_ERROR(run(OpId::Copy, {x}, {wrong}), opName(OpId::Copy));
  OwnedTensor small(DType::BF16, {3});
  EXPECT_ERROR(run(OpId::Copy, {x}, {small}), "more than the planned");
}

TEST(Convert, FloatToInt) {
  auto x = makeTensor(DType::F32, {6}, {-1.7, 2.9, kNaN, 1e20, -1e20, 0.5});
  OwnedTensor y(DType::I32, {6});
  ASSERT_OK(run(OpId::Convert, {x}, {y}));
  EXPECT_VALUES(
      *y, (std::vector<double>{-1, 2, 0, 2147483647, -2147483648.0, 0}), 0);
  OwnedTensor b(DType::Bool, {6});
  ASSERT_OK(run(OpId::Convert, {x}, {b}));
  EXPECT_VALUES(*b, (std::vector<double>{1, 1, 1, 1, 1, 1}), 0);
  OwnedTensor u(DType::U8, {6});
  ASSERT_OK(run(OpId::Convert, {x}, {u}));
  EXPECT_VALUES(*u, (std::vector<double>{0, 2, 0, 255, 0, 0}), 0);
}

TEST(Convert, BetweenTypes) {
  auto b = makeTensor(DType::Bool, {3}, {1, 0, 1});
  OwnedTensor f(DType::F16, {3});
  ASSERT_OK(run(OpId::Convert, {b}, {f}));
  EXPECT_VALUES(*f, (std::vector<double>{1, 0, 1}), 0);

  auto i = makeTensor(DType::I64, {3}, {-3, 2049, 0});
  OwnedTensor h(DType::F16, {3});
  ASSERT_OK(run(OpId::Convert, {i}, {h}));
  EXPECT_VALUES(*h, (std::vector<double>{-3, 2048, 0}), 0); // RNE in f16

  auto f32 = makeTensor(DType::F32, {1}, {1.0 + 1.0 / 256}); // bf16 tie
  OwnedTensor bf(DType::BF16, {1});
  ASSERT_OK(run(OpId::Convert, {f32}, {bf}));
  EXPECT_VALUES(*bf, (std::vector<double>{1.0}), 0);

  auto i64 = makeTensor(DType::I64, {2}, {300, -1});
  OwnedTensor i8(DType::I8, {2});
  ASSERT_OK(run(OpId::Convert, {i64}, {i8}));
  EXPECT_VALUES(*i8, (std::vector<double>{44, -1}), 0); // wraps

  OwnedTensor same(DType::I64, {2});
  ASSERT_OK(run(OpId::Convert, {i64}, {same}));
  EXPECT_VALUES(*same, (std::vector<double>{300, -1}), 0);

  QuantInfo q;
  OwnedTensor qa(DType::QAct, {1, 2}, 256, q);
  EXPECT_ERROR(run(OpId::Convert, {i64}, {qa}), "i64 -> qact");
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

TEST(Binary, ArithmeticWithBroadcasting) {
  auto a = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = makeTensor(DType::F32, {3}, {10, 20, 30});
  OwnedTensor y(DType::F32, {2, 3});
  ASSERT_OK(run(OpId::Add, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{11, 22, 33, 14, 25, 36}), 0);
  ASSERT_OK(run(OpId::Sub, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{-9, -18, -27, -6, -15, -24}), 0);
  ASSERT_OK(run(OpId::Mul, {b, a}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{10, 40, 90, 40, 100, 180}), 0);
  ASSERT_OK(run(OpId::Div, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{0.1, 0.1, 0.1, 0.4, 0.25, 0.2}), 1e-7);

  // [2, 1] with [1, 3] -> [2, 3].
  auto col = makeTensor(DType::F32, {2, 1}, {1, 2});
  auto row = makeTensor(DType::F32, {1, 3}, {1, 2, 3});
  ASSERT_OK(run(OpId::Pow, {col, row}, {y}));
  EXPECT_SHAPE(*y, 2, 3);
  EXPECT_VALUES(*y, (std::vector<double>{1, 1, 1, 2, 4, 8}), 0);
  // A scalar (rank 0) broadcasts too.
  auto s = makeTensor(DType::F32, {}, {2});
  ASSERT_OK(run(OpId::Maximum, {a, s}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{2, 2, 3, 4, 5, 6}), 0);
  ASSERT_OK(run(OpId::Minimum, {s, a}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{1, 2, 2, 2, 2, 2}), 0);
}

TEST(Binary, MaxMinPropagateNaN) {
  auto a = makeTensor(DType::F32, {2}, {kNaN, 1});
  auto b = makeTensor(DType::F32, {2}, {0, kNaN});
  OwnedTensor y(DType::F32, {2});
  ASSERT_OK(run(OpId::Maximum, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{kNaN, kNaN}), 0);
  ASSERT_OK(run(OpId::Minimum, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{kNaN, kNaN}), 0);
}

TEST(Binary, Integers) {
  auto a = makeTensor(DType::I64, {3}, {5, -3, 7});
  auto b = makeTensor(DType::I64, {1}, {2});
  OwnedTensor y(DType::I64, {3});
  ASSERT_OK(run(OpId::Add, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{7, -1, 9}), 0);
  ASSERT_OK(run(OpId::Mul, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{10, -6, 14}), 0);
  ASSERT_OK(run(OpId::Maximum, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{5, 2, 7}), 0);
  // i32 wraps like two's complement.
  auto big = makeTensor(DType::I32, {1}, {2147483647});
  auto one = makeTensor(DType::I32, {1}, {1});
  OwnedTensor w(DType::I32, {1});
  ASSERT_OK(run(OpId::Add, {big, one}, {w}));
  EXPECT_VALUES(*w, (std::vector<double>{-2147483648.0}), 0);
  // Float-only operators reject integers.
  EXPECT_ERROR(run(OpId::Div, {a, b}, {y}), "div: unsupported dtype i64");
  EXPECT_ERROR(run(OpId::Pow, {a, b}, {y}), opName(OpId::Pow));
}

TEST(Binary, HalfAndBFloat16) {
  auto a = makeTensor(DType::F16, {2}, {1.0, 0.1});
  auto b = makeTensor(DType::F16, {2}, {1.0 / 1024, 0.2});
  OwnedTensor y(DType::F16, {2});
  ASSERT_OK(run(OpId::Add, {a, b}, {y}));
  float s1 =
      halfToFloat(floatToHalf(1.0f)) + halfToFloat(floatToHalf(1.0f / 1024));
  float s2 = halfToFloat(floatToHalf(0.1f)) + halfToFloat(floatToHalf(0.2f));
  EXPECT_VALUES(*y,
                (std::vector<double>{halfToFloat(floatToHalf(s1)),
                                     halfToFloat(floatToHalf(s2))}),
                0);
  auto c = makeTensor(DType::BF16, {2}, {3.0, 0.5});
  auto d = makeTensor(DType::BF16, {2}, {1.5, 3.0});
  OwnedTensor z(DType::BF16, {2});
  ASSERT_OK(run(OpId::Mul, {c, d}, {z}));
  EXPECT_VALUES(*z, (std::vector<double>{4.5, 1.5}), 0);
}

TEST(Binary, Errors) {
  auto a = makeTensor(DType::F32, {2, 3}, {});
  auto b = makeTensor(DType::F32, {2}, {});
  OwnedTensor y(DType::F32, {2, 3});
  EXPECT_ERROR(run(OpId::Add, {a, b}, {y}), "do not broadcast");
  auto c = makeTensor(DType::F16, {3}, {});
  EXPECT_ERROR(run(OpId::Add, {a, c}, {y}), "f32, f16 -> f32");
  OwnedTensor small(DType::F32, {2});
  auto d = makeTensor(DType::F32, {3}, {});
  EXPECT_ERROR(run(OpId::Mul, {a, d}, {small}), "mul: output");
  // Arity is checked against ops.def.
  EXPECT_ERROR(run(OpId::Add, {a}, {y}), "expected 2 inputs");
}

TEST(Binary, DynamicShapeAcrossCalls) {
  OwnedTensor a(DType::F32, {1, 2}, 8 * 4);
  auto b = makeTensor(DType::F32, {2}, {10, 20});
  OwnedTensor y(DType::F32, {1, 2}, 8 * 4);
  a->ptr<float>()[0] = 1;
  a->ptr<float>()[1] = 2;
  ASSERT_OK(run(OpId::Add, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{11, 22}), 0);
  int64_t s[2] = {4, 2};
  ASSERT_OK(a->resize(s, 2));
  for (int i = 0; i < 8; ++i)
    a->ptr<float>()[i] = float(i);
  ASSERT_OK(run(OpId::Add, {a, b}, {y}));
  EXPECT_SHAPE(*y, 4, 2);
  EXPECT_VALUES(*y, (std::vector<double>{10, 21, 12, 23, 14, 25, 16, 27}), 0);
  // Beyond the output's capacity: an error, the output keeps its shape.
  OwnedTensor a2(DType::F32, {5, 2});
  EXPECT_ERROR(run(OpId::Add, {a2, b}, {y}), "add: output");
  EXPECT_SHAPE(*y, 4, 2);
}

//===----------------------------------------------------------------------===//
// Comparisons and logical operators
//===----------------------------------------------------------------------===//

TEST(Compare, AllWithBroadcasting) {
  auto a = makeTensor(DType::I64, {3}, {1, 2, 3});
  auto b = makeTensor(DType::I64, {2, 1}, {2, 3});
  OwnedTensor y(DType::Bool, {2, 3});
  ASSERT_OK(run(OpId::Eq, {a, b}, {y}));
  EXPECT_SHAPE(*y, 2, 3);
  EXPECT_VALUES(*y, (std::vector<double>{0, 1, 0, 0, 0, 1}), 0);
  ASSERT_OK(run(OpId::Ne, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{1, 0, 1, 1, 1, 0}), 0);
  ASSERT_OK(run(OpId::Lt, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{1, 0, 0, 1, 1, 0}), 0);
  ASSERT_OK(run(OpId::Le, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{1, 1, 0, 1, 1, 1}), 0);
  ASSERT_OK(run(OpId::Gt, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 0, 1, 0, 0, 0}), 0);
  ASSERT_OK(run(OpId::Ge, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 1, 1, 0, 0, 1}), 0);
}

TEST(Compare, FloatsAndErrors) {
  auto a = makeTensor(DType::BF16, {3}, {1.0, kNaN, -2.0});
  auto b = makeTensor(DType::BF16, {1}, {1.0});
  OwnedTensor y(DType::Bool, {3});
  ASSERT_OK(run(OpId::Ge, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{1, 0, 0}), 0);
  OwnedTensor notBool(DType::F32, {3});
  EXPECT_ERROR(run(OpId::Eq, {a, b}, {notBool}), "eq: unsupported");
  auto c = makeTensor(DType::F32, {1}, {1.0});
  EXPECT_ERROR(run(OpId::Eq, {a, c}, {y}), "eq: unsupported");
}

TEST(Logical, AndOr) {
  auto a = makeTensor(DType::Bool, {4}, {0, 0, 1, 1});
  auto b = makeTensor(DType::Bool, {4}, {0, 1, 0, 1});
  OwnedTensor y(DType::Bool, {4});
  ASSERT_OK(run(OpId::LogicalAnd, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 0, 0, 1}), 0);
  ASSERT_OK(run(OpId::LogicalOr, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 1, 1, 1}), 0);
  auto f = makeTensor(DType::F32, {2}, {0.0, 3.0});
  auto g = makeTensor(DType::F32, {1}, {-1.0});
  OwnedTensor h(DType::F32, {2});
  ASSERT_OK(run(OpId::LogicalAnd, {f, g}, {h}));
  EXPECT_VALUES(*h, (std::vector<double>{0, 1}), 0);
}

//===----------------------------------------------------------------------===//
// where, masked_fill
//===----------------------------------------------------------------------===//

TEST(Where, BroadcastsAllThree) {
  auto c = makeTensor(DType::Bool, {2, 1}, {1, 0});
  auto x = makeTensor(DType::F32, {3}, {1, 2, 3});
  auto y = makeTensor(DType::F32, {}, {-kInf});
  OwnedTensor o(DType::F32, {2, 3});
  ASSERT_OK(run(OpId::Where, {c, x, y}, {o}));
  EXPECT_VALUES(*o, (std::vector<double>{1, 2, 3, -kInf, -kInf, -kInf}), 0);

  auto xi = makeTensor(DType::I64, {2}, {7, 8});
  auto yi = makeTensor(DType::I64, {2}, {-7, -8});
  auto ci = makeTensor(DType::Bool, {2}, {0, 1});
  OwnedTensor oi(DType::I64, {2});
  ASSERT_OK(run(OpId::Where, {ci, xi, yi}, {oi}));
  EXPECT_VALUES(*oi, (std::vector<double>{-7, 8}), 0);

  auto notBool = makeTensor(DType::U8, {2}, {0, 1});
  EXPECT_ERROR(run(OpId::Where, {notBool, xi, yi}, {oi}), "condition");
  EXPECT_ERROR(run(OpId::Where, {ci, xi, x}, {oi}), opName(OpId::Where));
}

TEST(MaskedFill, BroadcastMask) {
  auto x = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto m = makeTensor(DType::Bool, {3}, {0, 1, 1});
  OwnedTensor y(DType::F32, {2, 3});
  ASSERT_OK(run(OpId::MaskedFill, {x, m}, {y}, {}, {-kInf}));
  EXPECT_VALUES(*y, (std::vector<double>{1, -kInf, -kInf, 4, -kInf, -kInf}), 0);
  // The mask must broadcast to the input, not beyond it.
  auto big = makeTensor(DType::Bool, {2, 2, 3}, {});
  EXPECT_ERROR(run(OpId::MaskedFill, {x, big}, {y}, {}, {0.0}),
               "does not broadcast");
  auto xi = makeTensor(DType::I64, {2}, {1, 2});
  auto mi = makeTensor(DType::Bool, {2}, {1, 0});
  OwnedTensor yi(DType::I64, {2});
  ASSERT_OK(run(OpId::MaskedFill, {xi, mi}, {yi}, {}, {-5.0}));
  EXPECT_VALUES(*yi, (std::vector<double>{-5, 2}), 0);
  EXPECT_ERROR(run(OpId::MaskedFill, {xi, mi}, {yi}, {}, {-kInf}), "integer");
  auto bf = makeTensor(DType::BF16, {2}, {1, 2});
  OwnedTensor ybf(DType::BF16, {2});
  ASSERT_OK(run(OpId::MaskedFill, {bf, mi}, {ybf}, {}, {0.1}));
  EXPECT_VALUES(*ybf, (std::vector<double>{bf16ToFloat(floatToBf16(0.1f)), 2}),
                0);
}

//===----------------------------------------------------------------------===//
// full, full_like, arange, triu, tril
//===----------------------------------------------------------------------===//

TEST(Full, FillsTheStaticShape) {
  OwnedTensor y(DType::F32, {2, 2});
  ASSERT_OK(run(OpId::Full, {}, {y}, {}, {2.5}));
  EXPECT_VALUES(*y, (std::vector<double>{2.5, 2.5, 2.5, 2.5}), 0);
  ASSERT_OK(run(OpId::Full, {}, {y}, {}, {-kInf}));
  EXPECT_VALUES(*y, (std::vector<double>{-kInf, -kInf, -kInf, -kInf}), 0);
  OwnedTensor h(DType::F16, {3});
  ASSERT_OK(run(OpId::Full, {}, {h}, {}, {0.1}));
  EXPECT_EQ(h->ptr<uint16_t>()[2], floatToHalf(0.1f));
  OwnedTensor b(DType::Bool, {2});
  ASSERT_OK(run(OpId::Full, {}, {b}, {}, {0.5}));
  EXPECT_VALUES(*b, (std::vector<double>{1, 1}), 0);
  OwnedTensor i(DType::I32, {2});
  ASSERT_OK(run(OpId::Full, {}, {i}, {}, {-3.9}));
  EXPECT_VALUES(*i, (std::vector<double>{-3, -3}), 0);
  EXPECT_ERROR(run(OpId::Full, {}, {i}, {}, {kInf}), "integer");
  EXPECT_ERROR(run(OpId::Full, {}, {i}, {}, {kNaN}), "integer");
  // A shape beyond the capacity.
  OwnedTensor bad(DType::F32, {2}, 4);
  EXPECT_ERROR(run(OpId::Full, {}, {bad}, {}, {1.0}), "more than the planned");
}

TEST(FullLike, TakesTheInputShape) {
  auto x = makeTensor(DType::I64, {1, 3}, {1, 2, 3});
  OwnedTensor y(DType::F32, {0}, 3 * 4);
  ASSERT_OK(run(OpId::FullLike, {x}, {y}, {}, {1.0}));
  EXPECT_SHAPE(*y, 1, 3);
  EXPECT_VALUES(*y, (std::vector<double>{1, 1, 1}), 0);
  OwnedTensor small(DType::F32, {0}, 2 * 4);
  EXPECT_ERROR(run(OpId::FullLike, {x}, {small}, {}, {1.0}), "planned");
}

TEST(Arange, IntegersAndFloats) {
  OwnedTensor y(DType::I64, {0}, 16 * 8);
  ASSERT_OK(run(OpId::Arange, {}, {y}, {0, 7, 2}));
  EXPECT_SHAPE(*y, 4);
  EXPECT_VALUES(*y, (std::vector<double>{0, 2, 4, 6}), 0);
  ASSERT_OK(run(OpId::Arange, {}, {y}, {5, 1, -2}));
  EXPECT_VALUES(*y, (std::vector<double>{5, 3}), 0);
  ASSERT_OK(run(OpId::Arange, {}, {y}, {3, 3, 1}));
  EXPECT_SHAPE(*y, 0);
  OwnedTensor f(DType::F16, {0}, 16 * 2);
  ASSERT_OK(run(OpId::Arange, {}, {f}, {-2, 2, 1}));
  EXPECT_VALUES(*f, (std::vector<double>{-2, -1, 0, 1}), 0);
  OwnedTensor i(DType::I32, {0}, 16 * 4);
  ASSERT_OK(run(OpId::Arange, {}, {i}, {0, 3, 1}));
  EXPECT_VALUES(*i, (std::vector<double>{0, 1, 2}), 0);
  EXPECT_ERROR(run(OpId::Arange, {}, {i}, {0, 3, 0}), "step");
  EXPECT_ERROR(
      run(OpId::Arange, {}, {i}, {int64_t(1) << 40, (int64_t(1) << 40) + 2, 1}),
      "i32");
  EXPECT_ERROR(run(OpId::Arange, {}, {y}, {0, 100, 1}), "planned");
  OwnedTensor b(DType::Bool, {0}, 16);
  EXPECT_ERROR(run(OpId::Arange, {}, {b}, {0, 2, 1}), "arange: unsupported");
}

TEST(Triangle, TriuTrilWithDiagonal) {
  std::vector<double> m = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto x = makeTensor(DType::F32, {3, 3}, m);
  OwnedTensor y(DType::F32, {3, 3});
  ASSERT_OK(run(OpId::Triu, {x}, {y}, {0}));
  EXPECT_VALUES(*y, (std::vector<double>{1, 2, 3, 0, 5, 6, 0, 0, 9}), 0);
  ASSERT_OK(run(OpId::Triu, {x}, {y}, {1}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 2, 3, 0, 0, 6, 0, 0, 0}), 0);
  ASSERT_OK(run(OpId::Tril, {x}, {y}, {0}));
  EXPECT_VALUES(*y, (std::vector<double>{1, 0, 0, 4, 5, 0, 7, 8, 9}), 0);
  ASSERT_OK(run(OpId::Tril, {x}, {y}, {-1}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 0, 0, 4, 0, 0, 7, 8, 0}), 0);
  ASSERT_OK(run(OpId::Tril, {x}, {y}, {INT64_MAX}));
  EXPECT_VALUES(*y, m, 0);
  ASSERT_OK(run(OpId::Triu, {x}, {y}, {INT64_MIN}));
  EXPECT_VALUES(*y, m, 0);

  // Batched, Bool, non-square.
  auto b = makeTensor(DType::Bool, {2, 2, 3}, std::vector<double>(12, 1));
  OwnedTensor bo(DType::Bool, {2, 2, 3});
  ASSERT_OK(run(OpId::Tril, {b}, {bo}, {0}));
  EXPECT_VALUES(*bo, (std::vector<double>{1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0}),
                0);
  auto v = makeTensor(DType::F32, {3}, {});
  OwnedTensor vo(DType::F32, {3});
  EXPECT_ERROR(run(OpId::Triu, {v}, {vo}, {0}), "rank >= 2");
}

} // namespace
