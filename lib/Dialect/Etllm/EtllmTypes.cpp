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
// QWeightType: <128x64, i4, group 32, sym, f16> or <640x2048, q4_k>
//===----------------------------------------------------------------------===//

namespace {
/// What a ggml scheme implies: value bits, values per scale, symmetry (the
/// runtime's rt::ggmlQuantInfo; serialize.QWeightSchemes checks that the two
/// agree) and values per block.
struct GgmlImplied {
  unsigned bits;
  int64_t groupSize;
  bool symmetric;
  int64_t blockValues;
};
GgmlImplied ggmlImplied(QWeightScheme s) {
  switch (s) {
  case QWeightScheme::q5_0:
    return {5, 32, true, 32};
  case QWeightScheme::q5_1:
    return {5, 32, false, 32};
  case QWeightScheme::q4_k:
    return {4, 32, false, 256};
  case QWeightScheme::q5_k:
    return {5, 32, false, 256};
  case QWeightScheme::q6_k:
    return {6, 16, true, 256};
  case QWeightScheme::affine:
    break;
  }
  return {0, 0, true, 0};
}
} // namespace

QWeightType QWeightType::get(MLIRContext *ctx, ArrayRef<int64_t> shape,
                             QWeightScheme scheme) {
  GgmlImplied g = ggmlImplied(scheme);
  return Base::get(ctx, shape, g.bits, g.groupSize, g.symmetric,
                   Float16Type::get(ctx), scheme);
}

int64_t QWeightType::getGgmlBlockValues() const {
  return ggmlImplied(getScheme()).blockValues;
}

Type QWeightType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/false) ||
      parser.parseComma())
    return {};
  // A ggml scheme by name, or the affine parameters. Both start with a bare
  // identifier (`q4_k`, `i4`), which the parser reads as a keyword.
  Type storage, scaleType;
  StringRef word;
  if (succeeded(parser.parseOptionalKeyword(&word))) {
    std::optional<QWeightScheme> scheme = symbolizeQWeightScheme(word);
    unsigned width = 0;
    if (scheme && *scheme != QWeightScheme::affine) {
      if (parser.parseGreater())
        return {};
      GgmlImplied g = ggmlImplied(*scheme);
      return parser.getChecked<QWeightType>(
          loc, parser.getContext(), shape, g.bits, g.groupSize, g.symmetric,
          Float16Type::get(parser.getContext()), *scheme);
    }
    StringRef digits = word;
    if (!digits.consume_front("i") || digits.getAsInteger(10, width) ||
        width == 0) {
      parser.emitError(loc, "expected the storage type i4 or i8 or a ggml "
                            "scheme (q5_0, q5_1, q4_k, q5_k, q6_k), got '")
          << word << "'";
      return {};
    }
    storage = IntegerType::get(parser.getContext(), width);
  } else if (parser.parseType(storage)) {
    return {};
  }
  int64_t groupSize = 0;
  StringRef symmetry;
  if (parser.parseComma() ||
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
  return parser.getChecked<QWeightType>(
      loc, parser.getContext(), shape, intType.getWidth(), groupSize,
      symmetry == "sym", scaleType, QWeightScheme::affine);
}

void QWeightType::print(AsmPrinter &printer) const {
  printer << '<';
  printDims(printer, getShape());
  if (isGgml()) {
    printer << ", " << stringifyQWeightScheme(getScheme()) << '>';
    return;
  }
  printer << ", i" << getBits() << ", group " << getGroupSize() << ", "
          << (getSymmetric() ? "sym" : "asym") << ", " << getScaleType() << '>';
}

LogicalResult QWeightType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> shape, unsigned bits,
                                  int64_t groupSize, bool symmetric,
                                  Type scaleType, QWeightScheme scheme) {
  if (shape.empty())
    return emitError() << "quantized weight must have rank >= 1";
  for (int64_t d : shape)
    if (d <= 0)
      return emitError() << "quantized weight dimensions must be static and "
                            "positive";
  if (scheme != QWeightScheme::affine) {
    GgmlImplied g = ggmlImplied(scheme);
    if (g.blockValues == 0)
      return emitError() << "unknown quantized weight scheme "
                         << int64_t(scheme);
    if (bits != g.bits || groupSize != g.groupSize ||
        symmetric != g.symmetric || !scaleType.isF16())
      return emitError() << "a " << stringifyQWeightScheme(scheme)
                         << " weight has " << g.bits << " bits, groups of "
                         << g.groupSize << ", "
                         << (g.symmetric ? "sym" : "asym") << " and f16";
    if (shape.back() % g.blockValues != 0)
      return emitError() << "a " << stringifyQWeightScheme(scheme)
                         << " weight's rows are whole blocks of "
                         << g.blockValues << " values, not " << shape.back();
    return success();
  }
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

RankedTensorType QActType::getDequantizedType(Type elementType) const {
  return RankedTensorType::get(getShape(), elementType);
}

bool QActType::isKvCacheLayout(std::string *why) const {
  auto no = [&](const char *reason) {
    if (why)
      *why = reason;
    return false;
  };
  if (getRank() != 4)
    return no("a quantized KV cache is [batch, kv_heads, length, head_dim]");
  if (llvm::any_of(getShape(), ShapedType::isDynamic))
    return no("a quantized KV cache has a static shape");
  if (getGranularity() != ActQuantGranularity::per_token || !getSymmetric())
    return no("a quantized KV cache is per_token and sym (one scale per "
              "token and head)");
  return true;
}

void EtllmDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "etllm/Dialect/Etllm/EtllmTypes.cpp.inc"
      >();
}
