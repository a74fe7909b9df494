//===- StaticMethods.cpp - Static-shape prefill and decode methods --------===//
//
// Clones `forward` into `prefill` (a chunk of tokens) and `decode` (one
// token) with every shape fixed, optionally turning the KV-cache buffers
// into method inputs and their new entries into outputs. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Transforms/Passes.h"
#include "etllm/runtime/llm/method_names.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/MapVector.h"

#define DEBUG_TYPE "etllm-static-methods"

namespace etllm {
#define GEN_PASS_DEF_STATICMETHODSPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

bool isStatic(Type t) {
  auto shaped = dyn_cast<ShapedType>(t);
  return !shaped || !shaped.hasRank() || shaped.hasStaticShape();
}

/// `forward`'s signature: (tokens [1, ?] i64, positions [?] i64) ->
/// logits [1, ?, V]. Emits the error otherwise.
LogicalResult checkForward(func::FuncOp fn) {
  FunctionType ft = fn.getFunctionType();
  auto tensorOf = [](Type t) { return dyn_cast<RankedTensorType>(t); };
  RankedTensorType tok =
      ft.getNumInputs() == 2 ? tensorOf(ft.getInput(0)) : RankedTensorType();
  RankedTensorType pos = tok ? tensorOf(ft.getInput(1)) : RankedTensorType();
  RankedTensorType logits =
      ft.getNumResults() == 1 ? tensorOf(ft.getResult(0)) : RankedTensorType();
  if (!tok || !pos || !logits || tok.getRank() != 2 || pos.getRank() != 1 ||
      logits.getRank() != 3 || !tok.getElementType().isInteger(64) ||
      !pos.getElementType().isInteger(64))
    return fn.emitError("etllm-static-methods: `forward` is not "
                        "forward(tokens: i64 [1, seq], input_pos: i64 [seq]) "
                        "-> logits [1, seq, vocab]");
  if (!ShapedType::isDynamic(logits.getDimSize(1)))
    return fn.emitError("etllm-static-methods: `forward` returns only the "
                        "last position's logits; a padded prefill chunk needs "
                        "every position's (model.last_logits_only: false)");
  return success();
}

/// kv-cache=io: every buffer read becomes an argument of `fn` (one per
/// buffer, in `buffers` order) and every write-back of a buffer, which must
/// be the in-place update of that argument, is dropped for an output: the
/// update's new entries.
LogicalResult cachesAsInputsAndOutputs(func::FuncOp fn,
                                       ArrayRef<BufferOp> buffers) {
  Block &body = fn.getBody().front();
  llvm::MapVector<StringRef, BlockArgument> argOf;
  for (BufferOp b : buffers)
    argOf[b.getSymName()] = body.addArgument(b.getType(), b.getLoc());
  SmallVector<Operation *> erase;
  llvm::MapVector<StringRef, Value> newEntries;
  for (Operation &op : body) {
    if (auto r = dyn_cast<BufferReadOp>(op)) {
      r.getResult().replaceAllUsesWith(argOf[r.getName()]);
      erase.push_back(r);
    } else if (auto w = dyn_cast<BufferWriteOp>(op)) {
      auto u = w.getValue().getDefiningOp<KvCacheUpdateOp>();
      if (!u || u.getCache() != argOf[w.getName()])
        return w.emitError("etllm-static-methods: kv-cache=io needs each "
                           "cache written by its etllm.kv_cache.update; '")
               << w.getName() << "' is written by "
               << (w.getValue().getDefiningOp()
                       ? w.getValue().getDefiningOp()->getName().getStringRef()
                       : StringRef("an argument"));
      newEntries[w.getName()] = u.getValue();
      erase.push_back(w);
    }
  }
  for (Operation *op : erase)
    op->erase();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> results(ret.getOperands());
  for (BufferOp b : buffers) {
    auto it = newEntries.find(b.getSymName());
    if (it == newEntries.end())
      return fn.emitError("etllm-static-methods: kv-cache=io: the buffer '")
             << b.getSymName() << "' is never written (not a KV cache)";
    results.push_back(it->second);
  }
  ret->setOperands(results);
  return success();
}

/// Infers every result type of `fn`'s body again from its (now static)
/// arguments, then its function type; an op whose result stays dynamic is
/// an error naming it.
LogicalResult inferStatic(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  for (Operation &op : body.without_terminator()) {
    if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
      SmallVector<Type> types;
      if (failed(infer.inferReturnTypes(
              op.getContext(), op.getLoc(), op.getOperands(),
              op.getAttrDictionary(), op.getPropertiesStorage(),
              op.getRegions(), types)))
        return op.emitError("etllm-static-methods: cannot infer the result "
                            "types with static operands");
      for (auto [r, t] : llvm::zip(op.getResults(), types))
        r.setType(t);
    }
    for (Value r : op.getResults())
      if (!isStatic(r.getType()))
        return op.emitError("etllm-static-methods: '")
               << op.getName() << "' keeps a dynamic result " << r.getType()
               << " in `" << fn.getSymName() << "`";
  }
  fn.setType(FunctionType::get(fn.getContext(), body.getArgumentTypes(),
                               body.getTerminator()->getOperandTypes()));
  return success();
}

struct StaticMethodsPass
    : public ::etllm::impl::StaticMethodsPassBase<StaticMethodsPass> {
  using StaticMethodsPassBase::StaticMethodsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    namespace llm = ::etllm::rt::llm;
    auto forward = module.lookupSymbol<func::FuncOp>(llm::kForwardMethod);
    if (!forward) {
      module.emitError("etllm-static-methods: the module has no `forward`");
      return signalPassFailure();
    }
    if (failed(checkForward(forward)))
      return signalPassFailure();
    if (Operation *vision = module.lookupSymbol(llm::kVisionEncoderMethod)) {
      vision->emitError("etllm-static-methods: a composite model's program "
                        "(vision_encoder, text_decoder) has no static form "
                        "yet");
      return signalPassFailure();
    }
    for (StringRef name : {llm::kPrefillMethod, llm::kDecodeMethod})
      if (Operation *other = module.lookupSymbol(name)) {
        other->emitError("etllm-static-methods: the module already has a `")
            << name << "`";
        return signalPassFailure();
      }
    SmallVector<BufferOp> buffers(module.getOps<BufferOp>());
    int64_t cacheLength = 0;
    for (BufferOp b : buffers)
      if (auto t = dyn_cast<ShapedType>(b.getType()); t && t.getRank() == 4)
        cacheLength = std::max(cacheLength, t.getDimSize(2));
    const int64_t chunk = prefillChunk;
    if (chunk < 1 || (cacheLength > 0 && chunk > cacheLength)) {
      module.emitError("etllm-static-methods: prefill-chunk ")
          << chunk << " is not in 1.." << cacheLength
          << " (the KV cache's length, max_seq_len)";
      return signalPassFailure();
    }
    if (kvCache == ::etllm::StaticKvCache::Io)
      for (BufferOp b : buffers)
        if (isa<QActType>(b.getType())) {
          b.emitError("etllm-static-methods: kv-cache=io takes float "
                      "caches; a quantized cache (kv_cache_dtype) stays "
                      "in-place");
          return signalPassFailure();
        }

    OpBuilder b(forward);
    MLIRContext *ctx = &getContext();
    for (auto [name, tokens] :
         {std::pair<StringRef, int64_t>{llm::kPrefillMethod, chunk},
          {llm::kDecodeMethod, 1}}) {
      auto fn = cast<func::FuncOp>(b.clone(*forward));
      fn.setSymName(name);
      Block &body = fn.getBody().front();
      body.getArgument(0).setType(
          RankedTensorType::get({1, tokens}, IntegerType::get(ctx, 64)));
      body.getArgument(1).setType(
          RankedTensorType::get({tokens}, IntegerType::get(ctx, 64)));
      if (kvCache == ::etllm::StaticKvCache::Io &&
          failed(cachesAsInputsAndOutputs(fn, buffers)))
        return signalPassFailure();
      if (failed(inferStatic(fn)))
        return signalPassFailure();
    }
    forward.erase();
    if (kvCache == ::etllm::StaticKvCache::Io)
      for (BufferOp buf : buffers)
        buf.erase();
  }
};

} // namespace
