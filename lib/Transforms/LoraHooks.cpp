//===- LoraHooks.cpp - Hooks for LoRA adapters applied at run time --------===//
//
// etllm.lora after each targeted linear layer; see Passes.td.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Transforms/Passes.h"
#include "etllm/runtime/lora.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <set>

namespace etllm {
#define GEN_PASS_DEF_LORAHOOKSPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

struct LoraHooksPass : ::etllm::impl::LoraHooksPassBase<LoraHooksPass> {
  using LoraHooksPassBase::LoraHooksPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (targets.empty())
      return;
    if (maxRank < 1 || maxRank > ::etllm::rt::kMaxLoraRank) {
      module.emitError("etllm-lora-hooks: max-rank ")
          << maxRank.getValue() << " is outside 1.."
          << ::etllm::rt::kMaxLoraRank;
      return signalPassFailure();
    }
    std::set<std::string> kinds(targets.begin(), targets.end()), used;
    for (const std::string &k : kinds)
      if (k.empty() || k.find('.') != std::string::npos) {
        module.emitError("etllm-lora-hooks: target '")
            << k << "' is not a module kind (the last part of a module "
            << "path, such as q_proj)";
        return signalPassFailure();
      }
    // Every hook in program order, numbered from the ones already there.
    int64_t next = 0;
    module.walk([&](LoraOp h) { next = std::max(next, h.getHook() + 1); });
    SmallVector<Operation *> linears;
    module.walk([&](Operation *op) {
      if (isa<LinearOp, QLinearOp>(op))
        linears.push_back(op);
    });
    for (Operation *op : linears) {
      Value weight = op->getOperand(1);
      if (!weight.getDefiningOp<ParameterGetOp>())
        continue;
      StringRef path = getModulePath(op);
      size_t dot = path.rfind('.');
      std::string kind =
          (dot == StringRef::npos ? path : path.substr(dot + 1)).str();
      if (path.empty() || !kinds.count(kind))
        continue;
      Value x = op->getOperand(0);
      if (auto q = x.getDefiningOp<QuantizeDynamicOp>())
        x = q.getInput();
      auto xt = dyn_cast<RankedTensorType>(x.getType());
      auto yt = cast<RankedTensorType>(op->getResult(0).getType());
      if (!xt || !xt.getElementType().isF32() || !yt.getElementType().isF32()) {
        op->emitError("etllm-lora-hooks: '")
            << path << "' is not an f32 linear layer (LoRA hooks need f32 "
            << "activations)";
        return signalPassFailure();
      }
      used.insert(kind);
      Value y = op->getResult(0);
      // Before the first user in the block (never between the linears of
      // one input).
      Operation *first = nullptr;
      for (Operation *u : y.getUsers()) {
        Operation *a = op->getBlock()->findAncestorOpInBlock(*u);
        if (a && (!first || a->isBeforeInBlock(first)))
          first = a;
      }
      OpBuilder b(op->getContext());
      if (first)
        b.setInsertionPoint(first);
      else
        b.setInsertionPointAfter(op);
      auto hook =
          b.create<LoraOp>(op->getLoc(), yt, x, y, b.getI64IntegerAttr(next++),
                           b.getStringAttr(path));
      setModulePath(hook, path);
      y.replaceAllUsesExcept(hook.getResult(), hook);
    }
    for (const std::string &k : kinds)
      if (!used.count(k)) {
        module.emitError("etllm-lora-hooks: no f32-activation linear layer "
                         "of this model is a '")
            << k << "' (targets: module kinds such as q_proj, down_proj)";
        return signalPassFailure();
      }
    module->setAttr(EtllmDialect::kLoraMaxRankAttrName,
                    Builder(module.getContext()).getI64IntegerAttr(maxRank));
  }
};

} // namespace
