//===- registry_test.cpp - The portable kernel table and its checks -------===//
#include "helpers.h"

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

TEST(Registry, EveryOpHasAPortableKernel) {
  const KernelTable &table = portableKernels();
  for (size_t i = 0; i < size_t(OpId::NumOps); ++i)
    EXPECT_NE(table.get(OpId(i)), nullptr) << opInfo(OpId(i)).name;
  // Spot-check that the table is indexed like ops.def.
  EXPECT_NE(table.get(OpId::Sdpa), table.get(OpId::Add));
}

TEST(Registry, ArgumentCountsAreChecked) {
  auto x = makeTensor(DType::F32, {2}, {1, 2});
  OwnedTensor y(DType::F32, {2});
  EXPECT_ERROR(run(OpId::Neg, {x, x}, {y}), "neg: expected 1 inputs, got 2");
  EXPECT_ERROR(run(OpId::Neg, {x}, {}), "expected 1 outputs");
  EXPECT_ERROR(run(OpId::Gelu, {x}, {y}), "integer attributes");
  EXPECT_ERROR(run(OpId::MaskedFill, {x, x}, {y}), "float attributes");
  EXPECT_ERROR(run(OpId::Cat, {}, {y}, {0}), "at least 1");
  EXPECT_ERROR(run(OpId::Linear, {x, x, x, x}, {y}), "2 to 3 inputs");
  EXPECT_ERROR(run(OpId::Neg, {nullptr}, {y}), "input 0 is null");
}

TEST(Registry, InputsMustFitTheirStorage) {
  auto x = makeTensor(DType::F32, {2}, {1, 2});
  Tensor lying = *x;
  lying.sizes[0] = 3; // 12 bytes in 8
  OwnedTensor y(DType::F32, {3});
  EXPECT_ERROR(run(OpId::Neg, {&lying}, {y}), "does not fit its storage");
  Tensor negative = *x;
  negative.sizes[0] = -1;
  EXPECT_ERROR(run(OpId::Neg, {&negative}, {y}), "negative");
  Tensor noData = *x;
  noData.data = nullptr;
  EXPECT_ERROR(run(OpId::Neg, {&noData}, {y}), "does not fit its storage");
}

TEST(Registry, ScratchNeedsAContext) {
  auto x = makeTensor(DType::F32, {2, 2}, {1, 2, 3, 4});
  OwnedTensor y(DType::F32, {2});
  Tensor *ins[1] = {x};
  Tensor *outs[1] = {y};
  int64_t ints[2] = {0, 1};
  KernelArgs args;
  args.inputs = {ins, 1};
  args.outputs = {outs, 1};
  args.ints = {ints, 2};
  args.ctx = nullptr;
  Status s = portableKernels().get(OpId::Sum)(args);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("execution context"), std::string::npos);
  // Kernels without scratch run without a context.
  Tensor *addIns[2] = {x, x};
  OwnedTensor z(DType::F32, {2, 2});
  Tensor *addOuts[1] = {z};
  KernelArgs add;
  add.inputs = {addIns, 2};
  add.outputs = {addOuts, 1};
  EXPECT_OK(portableKernels().get(OpId::Add)(add));
  EXPECT_VALUES(*z, (std::vector<double>{2, 4, 6, 8}), 0);
}

} // namespace
