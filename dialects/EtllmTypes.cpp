//===- EtllmTypes.cpp - etllm types ---------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmTypes.h"
#include "etllm/Dialect/Etllm/EtllmDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::etllm;

#define GET_TYPEDEF_CLASSES
#include "etllm/Dialect/Etllm/EtllmTypes.cpp.inc"

static void printDims(AsmPrinter &printer, ArrayRef<int64_t> shape) {
  llvm::interleave(
      shape, printer.getStream(),
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          printer << '?';
        else
          printer << d;
      },
      "x");
}

//===----------------------------------------------------------------------===//
// QWeightType: <128x64, i4, group 32, sym, f16>
//===----------------------------------------------------------------------===//

Type QWeightType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type storage, scaleType;
  int64_t groupSize = 0;
  StringRef symmetry;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/false) ||
      parser.parseComma() || parser.parseType(storage) || parser.parseComma() ||
      parser.parseKeyword("group") || parser.parseInteger(groupSize) ||
      parser.parseComma() || parser.parseKeyword(&symmetry) ||
      parser.parseComma() || parser.parseType(scaleType) ||
      parser.parseGreater())
    return {};
  auto intType = llvm::dyn_cast<IntegerType>(storage);
  if (!intType || !intType.isSignless()) {
    parser.emitError(loc, "expected the storage type i4 or i8");
    return {};
  }
  if (symmetry != "sym" && symmetry != "asym") {
    parser.emitError(loc, "expected 'sym' or 'asym', got '") << symmetry << "'";
    return {};
  }
  return parser.getChecked<QWeightType>(loc, parser.getContext(), shape,
                                        intType.getWidth(), groupSize,
                                        symmetry == "sym", scaleType);
}

void QWeightType::print(AsmPrinter &printer) const {
  printer << '<';
  printDims(printer, getShape());
  printer << ", i" << getBits() << ", group " << getGroupSize() << ", "
          << (getSymmetric() ? "sym" : "asym") << ", " << getScaleType() << '>';
}

LogicalResult QWeightType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> shape, unsigned bits,
                                  int64_t groupSize, bool symmetric,
                                  Type scaleType) {
  if (shape.empty())
    return emitError() << "quantized weight must have rank >= 1";
  for (int64_t d : shape)
    if (d <= 0)
      return emitError() << "quantized weight dimensions must be static and "
                            "positive";
  if (bits != 4 && bits != 8)
    return emitError() << "quantized weights have 4 or 8 bits, got " << bits;
  if (groupSize <= 0)
    return emitError() << "group size must be positive, got " << groupSize;
  if (shape.back() % groupSize != 0)
    return emitError() << "group size " << groupSize
                       << " does not divide the last dimension "
                       << shape.back();
  if (!scaleType.isF16() && !scaleType.isF32())
    return emitError() << "scale type must be f16 or f32, got " << scaleType;
  return success();
}

RankedTensorType QWeightType::getDequantizedType(Type elementType) const {
  return RankedTensorType::get(getShape(), elementType);
}

//===----------------------------------------------------------------------===//
// QActType: <1x?x64, i8, per_token, asym>
//===----------------------------------------------------------------------===//

Type QActType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type storage;
  StringRef granularity, symmetry;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/true,
                                /*withTrailingX=*/false) ||
      parser.parseComma() || parser.parseType(storage) || parser.parseComma() ||
      parser.parseKeyword(&granularity) || parser.parseComma() ||
      parser.parseKeyword(&symmetry) || parser.parseGreater())
    return {};
  auto intType = llvm::dyn_cast<IntegerType>(storage);
  if (!intType || !intType.isSignless()) {
    parser.emitError(loc, "expected the storage type i8");
    return {};
  }
  std::optional<ActQuantGranularity> g =
      symbolizeActQuantGranularity(granularity);
  if (!g) {
    parser.emitError(loc,
                     "expected 'per_token', 'per_tensor' or 'per_block', got '")
        << granularity << "'";
    return {};
  }
  if (symmetry != "sym" && symmetry != "asym") {
    parser.emitError(loc, "expected 'sym' or 'asym', got '") << symmetry << "'";
    return {};
  }
  return parser.getChecked<QActType>(loc, parser.getContext(), shape,
                                     intType.getWidth(), *g, symmetry == "sym");
}

void QActType::print(AsmPrinter &printer) const {
  printer << '<';
  printDims(printer, getShape());
  printer << ", i" << getBits() << ", "
          << stringifyActQuantGranularity(getGranularity()) << ", "
          << (getSymmetric() ? "sym" : "asym") << '>';
}

LogicalResult QActType::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape, unsigned bits,
                               ActQuantGranularity granularity,
                               bool symmetric) {
  if (shape.empty())
    return emitError() << "quantized activation must have rank >= 1";
  if (bits != 8)
    return emitError() << "dynamic activation quantization is 8-bit, got "
                       << bits;
  if (granularity == ActQuantGranularity::per_block && !symmetric)
    return emitError() << "per-block activation quantization is symmetric";
  return success();
}

void EtllmDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "etllm/Dialect/Etllm/EtllmTypes.cpp.inc"
      >();
}
