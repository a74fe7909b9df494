//===- Partition.cpp - Outline backend subgraphs into delegate calls ------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Lowering/Lowering.h"
#include "etllm/Target/Backend.h"
#include "etllm/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#include <functional>
#include <queue>

#define DEBUG_TYPE "etllm-partition"

namespace etllm {
#define GEN_PASS_DEF_PARTITIONPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

/// Ops that are cloned into every partition that needs them rather than
/// partitioned themselves: constants, parameters, and views (reshape,
/// slice, transpose) of them, which a backend may materialize as constants
/// (the cpu backend does for the per-head weights of MLA's absorbed attention).
bool isFree(Operation *op) {
  if (isa<ConstantOp, ParameterGetOp>(op))
    return true;
  if (!isa<ReshapeOp, SliceOp, TransposeOp>(op))
    return false;
  Operation *d = op->getOperand(0).getDefiningOp();
  return d && isFree(d);
}

/// Ops that do not break a run of one backend: the free ops, and reads of
/// mutable buffers (no instruction: their value is the buffer itself, an
/// input of the delegate call that uses it). Reads still keep their place
/// among the ops with buffer effects.
bool isTransparent(Operation *op) {
  return isFree(op) || isa<BufferReadOp>(op);
}

/// The first value of `fn` (an argument, or an op's result) whose type has
/// a dynamic dimension, refused for backend `b` (which runs static shapes
/// only) with an error at that value's op or the function.
LogicalResult checkStaticShapes(func::FuncOp fn,
                                const ::etllm::BackendCompiler &b) {
  auto isDynamic = [](Type t) {
    auto shaped = dyn_cast<ShapedType>(t);
    return shaped && shaped.hasRank() && !shaped.hasStaticShape();
  };
  auto refuse = [&](InFlightDiagnostic d, Type t) {
    d << "etllm-partition: backend '" << b.id()
      << "' runs only static shapes, but this program's " << t
      << " has a dynamic dimension (export static-shape methods for it: "
         "model.static_prefill_chunk, etllm-static-methods; or choose a "
         "backend that takes dynamic ones)";
    return failure();
  };
  for (BlockArgument a : fn.getArguments())
    if (isDynamic(a.getType()))
      return refuse(fn.emitError(), a.getType());
  WalkResult r = fn.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      if (isDynamic(t)) {
        (void)refuse(op->emitError(), t);
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

struct PartitionPass : public ::etllm::impl::PartitionPassBase<PartitionPass> {
  using PartitionPassBase::PartitionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<const ::etllm::BackendCompiler *> enabled;
    for (const std::string &id : backends) {
      const ::etllm::BackendCompiler *b = ::etllm::findBackendCompiler(id);
      if (!b) {
        std::string known;
        for (const ::etllm::BackendCompiler *r :
             ::etllm::registeredBackendCompilers())
          known += (known.empty() ? "" : ", ") + r->id().str();
        module.emitError("etllm-partition: unknown backend '")
            << id << "' (registered: " << known << ")";
        return signalPassFailure();
      }
      enabled.push_back(b);
    }
    // Backend options, recorded where the backends' legality and
    // serialization read them (etllm::backendOption).
    if (!backendOptions.empty()) {
      NamedAttrList opts;
      for (const std::string &o : backendOptions) {
        size_t dot = o.find('.'), eq = o.find('=');
        const ::etllm::BackendCompiler *b =
            dot == std::string::npos || eq == std::string::npos || eq < dot
                ? nullptr
                : ::etllm::findBackendCompiler(o.substr(0, dot));
        if (!b) {
          module.emitError("etllm-partition: backend option '")
              << o << "' is not <registered backend>.<key>=<value>";
          return signalPassFailure();
        }
        // Recorded under the backend's id (a former id names it too).
        opts.set(b->id().str() + o.substr(dot, eq - dot),
                 StringAttr::get(module.getContext(), o.substr(eq + 1)));
      }
      module->setAttr(::etllm::kBackendOptionsAttrName,
                      opts.getDictionary(module.getContext()));
    }
    if (enabled.empty())
      return;
    // Every method (`forward`, or a static program's `prefill` and
    // `decode`) is partitioned on its own; their subgraphs' names are
    // unique in the module.
    SmallVector<func::FuncOp> methods = ::etllm::methodFunctions(module);
    for (func::FuncOp fn : methods)
      for (const ::etllm::BackendCompiler *b : enabled)
        if (b->requiresStaticShapes() && failed(checkStaticShapes(fn, *b)))
          return signalPassFailure();
    llvm::StringMap<int> counters;
    SymbolTable symbols(module);
    for (func::FuncOp fn : methods)
      partitionMethod(module, fn, enabled, counters, symbols);
  }

  void partitionMethod(ModuleOp module, func::FuncOp fn,
                       ArrayRef<const ::etllm::BackendCompiler *> enabled,
                       llvm::StringMap<int> &counters, SymbolTable &symbols) {
    Block &block = fn.getBody().front();

    // 1. Who takes each op (-1: nobody, portable kernels).
    llvm::DenseMap<Operation *, int> owner;
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator()) {
      ops.push_back(&op);
      int who = -1;
      if (!isFree(&op))
        for (auto [i, b] : llvm::enumerate(enabled))
          if (b->isLegal(&op)) {
            who = i;
            break;
          }
      owner[&op] = who;
    }

    // 2. Reschedule so that runs of one backend stay together: list
    // scheduling over data dependencies (and the order of ops with
    // buffer effects), preferring the backend of the last scheduled op, ties
    // in original order. Deterministic.
    llvm::DenseMap<Operation *, size_t> position;
    for (auto [i, op] : llvm::enumerate(ops))
      position[op] = i;
    llvm::DenseMap<Operation *, int> pending;
    llvm::DenseMap<Operation *, SmallVector<Operation *>> dependents;
    Operation *lastEffect = nullptr;
    for (Operation *op : ops) {
      llvm::SmallSetVector<Operation *, 4> deps;
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp(); d && d->getBlock() == &block)
          deps.insert(d);
      if (!isMemoryEffectFree(op)) {
        if (lastEffect)
          deps.insert(lastEffect);
        lastEffect = op;
      }
      pending[op] = deps.size();
      for (Operation *d : deps)
        dependents[d].push_back(op);
    }
    auto cmp = [&](Operation *a, Operation *b) {
      return position[a] > position[b];
    };
    std::priority_queue<Operation *, std::vector<Operation *>, decltype(cmp)>
        ready(cmp);
    for (Operation *op : ops)
      if (pending[op] == 0)
        ready.push(op);
    SmallVector<Operation *> order;
    int current = -2;
    while (!ready.empty()) {
      // Prefer an op of the current owner (or a free op).
      std::vector<Operation *> skipped;
      Operation *pick = nullptr;
      while (!ready.empty()) {
        Operation *c = ready.top();
        ready.pop();
        if (isTransparent(c) || owner[c] == current) {
          pick = c;
          break;
        }
        skipped.push_back(c);
      }
      if (!pick) {
        pick = skipped.front();
        skipped.erase(skipped.begin());
      }
      for (Operation *s : skipped)
        ready.push(s);
      if (!isTransparent(pick))
        current = owner[pick];
      order.push_back(pick);
      for (Operation *d : dependents[pick])
        if (--pending[d] == 0)
          ready.push(d);
    }
    Operation *terminator = block.getTerminator();
    for (Operation *op : order)
      op->moveBefore(terminator);

    // 3. Runs of one backend (free ops and buffer reads do not break a run).
    SmallVector<std::pair<int, SmallVector<Operation *>>> runs;
    for (Operation *op : order) {
      if (isTransparent(op))
        continue;
      int who = owner[op];
      if (runs.empty() || runs.back().first != who)
        runs.push_back({who, {}});
      runs.back().second.push_back(op);
    }

    // 4. Outline.
    for (auto &[who, runOps] : runs) {
      if (who < 0 || int64_t(runOps.size()) < minOps ||
          !enabled[who]->isProfitable(runOps))
        continue;
      outline(module, fn, enabled[who], runOps, counters, symbols);
    }
  }

  void outline(ModuleOp module, func::FuncOp fn,
               const ::etllm::BackendCompiler *backend,
               ArrayRef<Operation *> runOps, llvm::StringMap<int> &counters,
               SymbolTable &symbols) {
    llvm::DenseSet<Operation *> inRun(runOps.begin(), runOps.end());
    llvm::SetVector<Value> inputs, outputs;
    llvm::SetVector<Operation *> freeOps;
    // A free op and the free ops it reads (a view of a parameter), those
    // first.
    std::function<void(Operation *)> addFree = [&](Operation *d) {
      for (Value v : d->getOperands())
        if (Operation *p = v.getDefiningOp(); p && isFree(p))
          addFree(p);
      freeOps.insert(d);
    };
    for (Operation *op : runOps) {
      for (Value v : op->getOperands()) {
        Operation *d = v.getDefiningOp();
        if (d && inRun.contains(d))
          continue;
        if (d && isFree(d))
          addFree(d);
        else
          inputs.insert(v);
      }
      for (Value r : op->getResults())
        for (Operation *u : r.getUsers())
          if (!inRun.contains(u))
            outputs.insert(r);
      // An in-place cache update is a result even when only the run reads
      // it: the call then writes the cache, and the serializer gives the
      // result the storage of the call's cache input.
      if (isa<KvCacheUpdateOp>(op))
        outputs.insert(op->getResult(0));
    }
    std::string name =
        (backend->id() + "_" + Twine(counters[backend->id()]++)).str();
    while (symbols.lookup(name))
      name = (backend->id() + "_" + Twine(counters[backend->id()]++)).str();
    OpBuilder b(module.getContext());
    b.setInsertionPoint(fn);
    SmallVector<Type> inTypes, outTypes;
    for (Value v : inputs)
      inTypes.push_back(v.getType());
    for (Value v : outputs)
      outTypes.push_back(v.getType());
    auto sub = b.create<func::FuncOp>(fn.getLoc(), name,
                                      b.getFunctionType(inTypes, outTypes));
    sub.setPrivate();
    sub->setAttr(EtllmDialect::kBackendAttrName,
                 b.getStringAttr(backend->id()));
    symbols.insert(sub);
    Block *entry = sub.addEntryBlock();
    IRMapping map;
    for (auto [v, arg] : llvm::zip(inputs, entry->getArguments()))
      map.map(v, arg);
    b.setInsertionPointToStart(entry);
    for (Operation *op : freeOps)
      b.clone(*op, map);
    for (Operation *op : runOps)
      b.clone(*op, map);
    SmallVector<Value> results;
    for (Value v : outputs)
      results.push_back(map.lookup(v));
    b.create<func::ReturnOp>(fn.getLoc(), results);

    // Replace the run by one call, placed where the run's last op was.
    b.setInsertionPointAfter(runOps.back());
    auto call = b.create<DelegateCallOp>(
        runOps.back()->getLoc(), outTypes, b.getStringAttr(backend->id()),
        FlatSymbolRefAttr::get(sub), inputs.getArrayRef());
    for (auto [v, r] : llvm::zip(outputs, call.getResults()))
      Value(v).replaceAllUsesWith(r);
    for (Operation *op : llvm::reverse(runOps))
      op->erase();
    for (Operation *op : llvm::reverse(freeOps))
      if (op->use_empty())
        op->erase();
  }
};

} // namespace
