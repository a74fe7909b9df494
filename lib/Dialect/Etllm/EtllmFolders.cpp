//===- EtllmFolders.cpp - etllm folders and canonicalizations -------------===//
//
// Every folder and canonicalization pattern of the dialect, tested by
// test/Dialect/Etllm/canonicalize.mlir.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::etllm;

/// The splat value of `v` when it is a float or integer splat constant.
static std::optional<double> getSplatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  Type et = attr.getElementType();
  if (isa<FloatType>(et))
    return attr.getSplatValue<APFloat>().convertToDouble();
  if (et.isInteger(64) || et.isInteger(32))
    return double(attr.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

/// `x op c` is `x` when c is the splat identity and broadcasting does not
/// change x's type.
static OpFoldResult foldIdentityRhs(Operation *op, Value lhs, Value rhs,
                                    double identity) {
  std::optional<double> c = getSplatValue(rhs);
  if (c && *c == identity && lhs.getType() == op->getResult(0).getType())
    return lhs;
  return {};
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor) {
  if (OpFoldResult r = foldIdentityRhs(*this, getLhs(), getRhs(), 0.0))
    return r;
  return foldIdentityRhs(*this, getRhs(), getLhs(), 0.0);
}

OpFoldResult SubOp::fold(FoldAdaptor) {
  return foldIdentityRhs(*this, getLhs(), getRhs(), 0.0);
}

OpFoldResult MulOp::fold(FoldAdaptor) {
  if (OpFoldResult r = foldIdentityRhs(*this, getLhs(), getRhs(), 1.0))
    return r;
  return foldIdentityRhs(*this, getRhs(), getLhs(), 1.0);
}

OpFoldResult DivOp::fold(FoldAdaptor) {
  return foldIdentityRhs(*this, getLhs(), getRhs(), 1.0);
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  int64_t rank = getType().getRank();
  auto norm = [&](int64_t d) { return d < 0 ? d + rank : d; };
  if (norm(getDim0()) == norm(getDim1()) && getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    int64_t a = norm(getDim0()), b = norm(getDim1());
    int64_t c = norm(inner.getDim0()), d = norm(inner.getDim1());
    if (((a == c && b == d) || (a == d && b == c)) &&
        inner.getInput().getType() == getType())
      return inner.getInput();
  }
  return {};
}

OpFoldResult PermuteOp::fold(FoldAdaptor) {
  int64_t rank = getType().getRank();
  for (auto [i, d] : llvm::enumerate(getDims()))
    if ((d < 0 ? d + rank : d) != int64_t(i))
      return {};
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  auto in = getInput().getType();
  // Identity: the target names the input's own shape (with -1 standing for
  // its one dynamic dimension).
  if (in == getType()) {
    ArrayRef<int64_t> target = getShape();
    bool same = int64_t(target.size()) == in.getRank();
    for (int64_t i = 0; same && i < in.getRank(); ++i)
      same = in.isDynamicDim(i) ? target[i] == -1
                                : (target[i] == in.getDimSize(i) ||
                                   (target[i] == -1 && in.hasStaticShape()));
    if (same)
      return getInput();
  }
  // reshape(reshape(x)) -> reshape(x): only the element count matters.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

OpFoldResult SqueezeOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<UnsqueezeOp>()) {
    int64_t rank = getInput().getType().getRank();
    auto norm = [&](int64_t d) { return d < 0 ? d + rank : d; };
    if (norm(inner.getDim()) == norm(getDim()) &&
        inner.getInput().getType() == getType())
      return inner.getInput();
  }
  return {};
}

OpFoldResult ExpandOp::fold(FoldAdaptor) {
  auto in = getInput().getType();
  if (in != getType() || int64_t(getShape().size()) != in.getRank())
    return {};
  for (auto [t, d] : llvm::zip(getShape(), in.getShape()))
    if (t != -1 && t != d)
      return {};
  return getInput();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  auto in = getInput().getType();
  int64_t rank = in.getRank();
  int64_t dim = getDim() < 0 ? getDim() + rank : getDim();
  if (dim < 0 || dim >= rank || in.isDynamicDim(dim) || getStep() != 1)
    return {};
  int64_t size = in.getDimSize(dim);
  int64_t start = getStart() < 0 ? getStart() + size : getStart();
  if (start <= 0 && getEnd() >= size && in == getType())
    return getInput();
  return {};
}

OpFoldResult CatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

namespace {
/// Removes `buffer.write %v to @b` when %v is `buffer.read @b` with no write
/// to any buffer in between: writing a buffer's own value back is a no-op.
struct EraseUnchangedWriteBack : public OpRewritePattern<BufferWriteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BufferWriteOp write,
                                PatternRewriter &rewriter) const override {
    auto read = write.getValue().getDefiningOp<BufferReadOp>();
    if (!read || read.getName() != write.getName() ||
        read->getBlock() != write->getBlock())
      return failure();
    for (Operation *op = read->getNextNode(); op != write;
         op = op->getNextNode()) {
      auto effects = dyn_cast<MemoryEffectOpInterface>(op);
      if (!effects) {
        if (!isPure(op))
          return failure();
        continue;
      }
      if (effects.hasEffect<MemoryEffects::Write>())
        return failure();
    }
    rewriter.eraseOp(write);
    return success();
  }
};
} // namespace

void BufferWriteOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                MLIRContext *context) {
  results.add<EraseUnchangedWriteBack>(context);
}
