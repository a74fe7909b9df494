//===- Matchers.cpp - Small value matchers the passes share ---------------===//
#include "Matchers.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::matchers {

std::optional<double> splat(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  if (isa<FloatType>(attr.getElementType()))
    return attr.getSplatValue<APFloat>().convertToDouble();
  if (isa<IntegerType>(attr.getElementType()))
    return double(attr.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

std::optional<double> floatSplat(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

Value skipConvert(Value v) {
  if (auto c = v.getDefiningOp<ConvertOp>())
    return c.getInput();
  return v;
}

Value throughConverts(Value v) {
  while (auto c = v.getDefiningOp<ConvertOp>())
    v = c.getInput();
  return v;
}

/// The dimensions of `t` other than those of size 1.
static SmallVector<int64_t> nonUnitDims(RankedTensorType t) {
  SmallVector<int64_t> out;
  for (int64_t d : t.getShape())
    if (d != 1)
      out.push_back(d);
  return out;
}

Value throughUnitDims(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    Value in;
    if (auto u = dyn_cast<UnsqueezeOp>(def))
      in = u.getInput();
    else if (auto r = dyn_cast<ReshapeOp>(def))
      in = r.getInput();
    else if (auto e = dyn_cast<ExpandOp>(def))
      in = e.getInput();
    else
      break;
    auto it = cast<RankedTensorType>(in.getType());
    auto ot = cast<RankedTensorType>(v.getType());
    // Only unit dimensions may come or go (an expand may also broadcast
    // its input's unit dimensions: the values along them repeat).
    if (!isa<ExpandOp>(def) && nonUnitDims(it) != nonUnitDims(ot))
      break;
    if (isa<ExpandOp>(def) && it.getRank() != ot.getRank())
      break;
    v = in;
  }
  return v;
}

} // namespace etllm::matchers
