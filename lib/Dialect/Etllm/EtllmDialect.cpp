//===- EtllmDialect.cpp - etllm dialect registration ----------------------===//
#include "etllm/Dialect/Etllm/EtllmDialect.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Dialect/Etllm/EtllmTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::etllm;

#include "etllm/Dialect/Etllm/EtllmDialect.cpp.inc"
#include "etllm/Dialect/Etllm/EtllmEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "etllm/Dialect/Etllm/EtllmAttrs.cpp.inc"

void EtllmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "etllm/Dialect/Etllm/EtllmOps.cpp.inc"
      >();
  registerTypes();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "etllm/Dialect/Etllm/EtllmAttrs.cpp.inc"
      >();
}

Operation *EtllmDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

StringRef mlir::etllm::getModulePath(Operation *op) {
  if (auto attr = op->getAttrOfType<StringAttr>(EtllmDialect::kModuleAttrName))
    return attr.getValue();
  return {};
}

void mlir::etllm::setModulePath(Operation *op, StringRef path) {
  op->setAttr(EtllmDialect::kModuleAttrName,
              StringAttr::get(op->getContext(), path));
}
