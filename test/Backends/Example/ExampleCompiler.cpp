//===- ExampleCompiler.cpp - The example backend's compiler half ----------===//
//
// Legality: silu, sigmoid and mul on f32 tensors of one shape (element-wise,
// no broadcasting). Lowering: silu -> x * sigmoid(x). Blob: text, one line
// per instruction:
//
//   example-blob 1
//   input <value> <argument index>
//   sigmoid <out> <in>
//   mul <out> <lhs> <rhs>
//   output <value> <result index>
//
//===----------------------------------------------------------------------===//
#include "ExampleBackend.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Target/Backend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"

#include <sstream>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::example {
#define GEN_PASS_DECL
#define GEN_PASS_DEF_EXAMPLEDECOMPOSESILUPASS
#define GEN_PASS_REGISTRATION
#include "ExamplePasses.h.inc"
} // namespace etllm::example

namespace {

struct DecomposeSilu : public OpRewritePattern<SiluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SiluOp op,
                                PatternRewriter &rewriter) const override {
    Value s = rewriter.create<SigmoidOp>(op.getLoc(), op.getInput());
    rewriter.replaceOpWithNewOp<MulOp>(op, op.getInput(), s);
    return success();
  }
};

struct ExampleDecomposeSiluPass
    : public ::etllm::example::impl::ExampleDecomposeSiluPassBase<
          ExampleDecomposeSiluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeSilu>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

bool sameF32Shape(Operation *op) {
  SmallVector<Type> types(op->getOperandTypes());
  llvm::append_range(types, op->getResultTypes());
  for (Type t : types) {
    auto tt = dyn_cast<RankedTensorType>(t);
    if (!tt || !tt.getElementType().isF32() || t != types.front())
      return false;
  }
  return true;
}

class ExampleCompiler : public ::etllm::BackendCompiler {
public:
  llvm::StringRef id() const override { return "example"; }
  llvm::StringRef description() const override {
    return "test backend: element-wise silu/sigmoid/mul";
  }
  bool isLegal(Operation *op) const override {
    return isa<SiluOp, SigmoidOp, MulOp>(op) && sameF32Shape(op);
  }
  void buildLoweringPipeline(OpPassManager &pm) const override {
    pm.addPass(std::make_unique<ExampleDecomposeSiluPass>());
  }
  LogicalResult serialize(
      func::FuncOp fn, ::etllm::DelegateContext &, std::vector<uint8_t> &blob,
      std::vector<std::pair<std::string, std::string>> &specs) const override {
    std::ostringstream os;
    os << "example-blob 1\n";
    llvm::DenseMap<Value, int> ids;
    Block &body = fn.getBody().front();
    for (BlockArgument a : body.getArguments()) {
      ids[a] = ids.size();
      os << "input " << ids[a] << " " << a.getArgNumber() << "\n";
    }
    for (Operation &op : body.without_terminator()) {
      const char *name = isa<SigmoidOp>(op) ? "sigmoid"
                         : isa<MulOp>(op)   ? "mul"
                                            : nullptr;
      if (!name)
        return op.emitError("the example backend cannot run this operation "
                            "(was etllm-lower-backends run?)");
      int out = ids.size();
      ids[op.getResult(0)] = out;
      os << name << " " << out;
      for (Value v : op.getOperands())
        os << " " << ids.lookup(v);
      os << "\n";
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      os << "output " << ids.lookup(v) << " " << i << "\n";
    std::string text = os.str();
    blob.assign(text.begin(), text.end());
    specs.push_back({"format", "example-blob 1"});
    return success();
  }
};

/// The same backend as an NPU would state it: static shapes only
/// (etllm-partition refuses a program with a dynamic dimension for it,
/// static-shapes.mlir; a static program runs, static-program.test).
class ExampleStaticCompiler : public ExampleCompiler {
public:
  llvm::StringRef id() const override { return "example_static"; }
  llvm::StringRef description() const override {
    return "test backend: the example backend, static shapes only";
  }
  bool requiresStaticShapes() const override { return true; }
};

} // namespace

void ::etllm::example::registerExampleBackend() {
  ::etllm::registerBackendCompiler(std::make_unique<ExampleCompiler>());
  ::etllm::registerBackendCompiler(std::make_unique<ExampleStaticCompiler>());
  mlir::registerPass(
      [] { return std::make_unique<ExampleDecomposeSiluPass>(); });
}
