//===- GraphEmitter.cpp - Parameters and torch-level helpers --------------===//
#include "GraphEmitter.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::import {

Value GraphEmitter::scalar(double v, Type et) {
  auto type = RankedTensorType::get({}, et);
  Attribute a = isa<FloatType>(et)
                    ? Attribute(FloatAttr::get(et, v))
                    : Attribute(IntegerAttr::get(et, int64_t(v)));
  return val<ConstantOp>(DenseElementsAttr::get(type, a));
}

Value GraphEmitter::param(const std::string &name, ArrayRef<int64_t> shape) {
  auto type = tensorType(shape, dtype);
  auto symbolTable = SymbolTable(module);
  if (!symbolTable.lookup(name)) {
    const formats::TensorRef *t = ckpt.find(name);
    if (!t) {
      if (error.empty())
        error = ckpt.path() + ": missing tensor '" + name + "'";
    } else if (t->shape != std::vector<int64_t>(shape.begin(), shape.end())) {
      if (error.empty())
        error = ckpt.path() + ": tensor '" + name + "' has shape " +
                formats::shapeToString(t->shape) + ", expected " +
                formats::shapeToString({shape.begin(), shape.end()}) +
                " from the configuration";
    }
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(module.getBody(),
                        std::prev(module.getBody()->end(), 1));
    auto decl =
        b.create<ParameterOp>(loc, name, type, ElementsAttr(), StringAttr(),
                              IntegerAttr(), StringAttr());
    if (t && t->qkPermuteHeads > 0)
      decl.setQkPermuteHeadsAttr(b.getI64IntegerAttr(t->qkPermuteHeads));
    // The storage type, for the quantize pass (exact GGUF blocks) without
    // opening the checkpoint again.
    if (t)
      decl.setSourceDtypeAttr(b.getStringAttr(formats::dtypeName(t->dtype)));
  }
  return val<ParameterGetOp>(type, FlatSymbolRefAttr::get(ctx, name));
}

Value GraphEmitter::linear(const std::string &path, Value x, int64_t out,
                           int64_t in, bool bias) {
  Scope s(*this, path, "Linear");
  Value w = param(path + ".weight", {out, in});
  Value bv = bias ? param(path + ".bias", {out}) : Value();
  return val<LinearOp>(x, w, bv);
}

} // namespace etllm::import
