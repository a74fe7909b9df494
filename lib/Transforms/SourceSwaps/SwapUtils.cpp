//===- SwapUtils.cpp - What the built-in source swaps share ---------------===//
#include "SwapUtils.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::swaps {

SmallVector<Value> outputsOf(const ModuleInstance &inst) {
  llvm::DenseSet<Operation *> inside(inst.ops.begin(), inst.ops.end());
  SmallVector<Value> outs;
  for (Operation *op : inst.ops)
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !inside.contains(u); }))
        outs.push_back(r);
  return outs;
}

SmallVector<Value> activationInputs(const ModuleInstance &inst) {
  llvm::DenseSet<Operation *> inside(inst.ops.begin(), inst.ops.end());
  SmallVector<Value> ins;
  for (Operation *op : inst.ops)
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && (inside.contains(def) || isa<ConstantOp, ParameterGetOp>(def)))
        continue;
      if (!llvm::is_contained(ins, v))
        ins.push_back(v);
    }
  return ins;
}

LinearOp linearAt(const ModuleInstance &inst, StringRef name) {
  LinearOp found;
  for (Operation *op : inst.ops)
    if (auto lin = dyn_cast<LinearOp>(op))
      if (getModulePath(op) == inst.path + "." + name.str())
        found = lin;
  return found;
}

BufferReadOp cacheRead(const ModuleInstance &inst, StringRef name) {
  BufferReadOp found;
  for (Operation *op : inst.ops)
    if (auto r = dyn_cast<BufferReadOp>(op))
      if (r.getName() == inst.path + "." + name.str())
        found = r;
  return found;
}

void eraseDead(ModuleInstance &inst, RewriterBase &rewriter,
               ArrayRef<Operation *> keep) {
  std::vector<Operation *> alive;
  for (Operation *op : llvm::reverse(inst.ops)) {
    if (!llvm::is_contained(keep, op) && op->use_empty() &&
        (isPure(op) || isa<BufferReadOp>(op))) {
      rewriter.eraseOp(op);
      continue;
    }
    alive.push_back(op);
  }
  inst.ops.assign(alive.rbegin(), alive.rend());
}

} // namespace etllm::swaps
