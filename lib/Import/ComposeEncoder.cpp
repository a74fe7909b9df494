//===- ComposeEncoder.cpp - A traced vision encoder composed with a decoder ===//
//
// The encoder's IR is parsed into the decoder's context and checked before
// anything is built (the file is input like any checkpoint: a wrong
// signature, buffers or other functions are one error naming it). Its
// parameters are renamed under the canonical tower prefix, so the
// quantization's exclusion patterns and the serializer's checkpoint
// (formats' attachVisionWeights) name them as a LLaVA's.
//
//===----------------------------------------------------------------------===//
#include "ComposeEncoder.h"

#include "etllm/Dialect/Etllm/EtllmDialect.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Models/Multimodal.h"
#include "etllm/runtime/llm/method_names.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"

#include <filesystem>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::import {
namespace {

llvm::Error fail(const std::string &path, const llvm::Twine &what) {
  return llvm::make_error<llvm::StringError>(
      path + ": model.vision_encoder: " + what.str(),
      llvm::inconvertibleErrorCode());
}

std::string prefixed(StringRef name) {
  std::string p = models::kVisionTowerPath;
  return name.empty() ? p : p + "." + name.str();
}

} // namespace

llvm::Expected<TracedEncoder> loadTracedEncoder(MLIRContext *context,
                                                const std::string &path,
                                                int64_t hidden) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail(path, "cannot read the IR: " + buffer.getError().message());
  // The weights are in their own file: the IR itself is small.
  if ((*buffer)->getBufferSize() > (uint64_t(256) << 20))
    return fail(path, "the IR is larger than 256 MiB");
  std::string firstError;
  OwningOpRef<ModuleOp> parsed;
  {
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
        firstError = d.str();
      return success();
    });
    parsed = parseSourceString<ModuleOp>((*buffer)->getBuffer(),
                                         ParserConfig(context), path);
  }
  if (!parsed)
    return fail(path, "not valid IR: " + firstError);
  TracedEncoder out;
  func::FuncOp forward;
  for (Operation &op : *parsed->getBody()) {
    if (auto fn = dyn_cast<func::FuncOp>(op)) {
      if (fn.getSymName() != "forward" || forward)
        return fail(path, "the IR has a function '" + fn.getSymName().str() +
                              "' beside `forward` (one method, the "
                              "encoder's)");
      forward = fn;
    } else if (isa<BufferOp>(op)) {
      return fail(path, "the encoder has a mutable buffer (an encoder is a "
                        "function of its pixels)");
    } else if (!isa<ParameterOp>(op)) {
      return fail(path, "unexpected '" + op.getName().getStringRef().str() +
                            "' in the module");
    }
  }
  if (!forward || forward.isExternal())
    return fail(path, "the IR has no `forward` function");
  FunctionType type = forward.getFunctionType();
  auto in = type.getNumInputs() == 1
                ? dyn_cast<RankedTensorType>(type.getInput(0))
                : RankedTensorType();
  auto res = type.getNumResults() == 1
                 ? dyn_cast<RankedTensorType>(type.getResult(0))
                 : RankedTensorType();
  if (!in || !in.hasStaticShape() || in.getRank() != 4 ||
      !in.getElementType().isF32() || in.getDimSize(0) != 1 ||
      in.getDimSize(1) != 3 || in.getDimSize(2) != in.getDimSize(3) ||
      in.getDimSize(2) < 1 || !res || !res.hasStaticShape() ||
      res.getRank() != 3 || res.getDimSize(0) != 1 ||
      res.getDimSize(1) < 1 || !isa<FloatType>(res.getElementType()))
    return fail(path, "`forward` must take pixels f32 [1, 3, S, S] and "
                      "return features [1, N, hidden] (static sizes)");
  if (res.getDimSize(2) != hidden)
    return fail(path, "the encoder's features have " +
                          std::to_string(res.getDimSize(2)) +
                          " channels; the decoder's hidden size is " +
                          std::to_string(hidden));
  out.imageSize = in.getDimSize(2);
  out.seqLen = res.getDimSize(1);
  bool hasParams = llvm::any_of(*parsed->getBody(), [](Operation &op) {
    return isa<ParameterOp>(op);
  });
  if (hasParams) {
    auto ckpt = (*parsed)->getAttrOfType<StringAttr>(
        EtllmDialect::kCheckpointAttrName);
    if (!ckpt)
      return fail(path, "the encoder has parameters but no " +
                            EtllmDialect::kCheckpointAttrName.str() +
                            " naming their file");
    // A relative path is the IR file's neighbour.
    std::filesystem::path w = ckpt.getValue().str();
    if (w.is_relative())
      w = std::filesystem::path(path).parent_path() / w;
    out.weights = w.lexically_normal().string();
  }
  out.module = std::move(parsed);
  return out;
}

void composeEncoder(ModuleOp module, TracedEncoder &encoder, Type dtype,
                    SmallVectorImpl<NamedAttribute> &classes) {
  ModuleOp enc = *encoder.module;
  Builder b(module.getContext());
  // Parameters and their readers under the tower's prefix.
  for (auto param : enc.getOps<ParameterOp>())
    SymbolTable::setSymbolName(param, prefixed(param.getSymName()));
  enc.walk([&](Operation *op) {
    if (auto get = dyn_cast<ParameterGetOp>(op))
      get.setNameAttr(
          FlatSymbolRefAttr::get(b.getContext(), prefixed(get.getName())));
    if (op->hasAttr(EtllmDialect::kModuleAttrName))
      setModulePath(op, prefixed(getModulePath(op)));
  });
  auto fn = *enc.getOps<func::FuncOp>().begin();
  fn.setSymName(::etllm::rt::llm::kVisionEncoderMethod);
  // The decoder's embeddings' type.
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  auto resType = cast<RankedTensorType>(ret.getOperand(0).getType());
  if (resType.getElementType() != dtype) {
    OpBuilder ob(ret);
    Value cast = ob.create<ConvertOp>(ret.getLoc(), resType.clone(dtype),
                                      ret.getOperand(0));
    setModulePath(cast.getDefiningOp(), models::kVisionTowerPath);
    ret->setOperand(0, cast);
    fn.setType(b.getFunctionType(fn.getArgumentTypes(), {cast.getType()}));
  }
  if (auto encClasses = enc->getAttrOfType<DictionaryAttr>(
          EtllmDialect::kModuleClassesAttrName))
    for (NamedAttribute entry : encClasses)
      classes.push_back(
          b.getNamedAttr(prefixed(entry.getName().getValue()),
                         entry.getValue()));
  for (Operation &op : llvm::make_early_inc_range(*enc.getBody())) {
    op.remove();
    module.getBody()->push_back(&op);
  }
}

} // namespace etllm::import
