//===- KvCacheInPlace.cpp - Functional cache updates to in-place ----------===//
//
// index_copy/index_put of a buffer's value followed by a whole-buffer
// write-back become etllm.kv_cache.update, whose result is the buffer's own
// storage, and the write-back goes away. See Passes.td for the safety rule.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "etllm-kv-cache-in-place"

namespace etllm {
#define GEN_PASS_DEF_KVCACHEINPLACEPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

/// True when `op` may read or write the buffer `name` (conservative: any op
/// with buffer effects that is not a read of another buffer).
bool touchesBuffer(Operation *op, StringRef name) {
  if (auto r = dyn_cast<BufferReadOp>(op))
    return r.getName() == name;
  if (auto w = dyn_cast<BufferWriteOp>(op))
    return w.getName() == name;
  if (isa<KvCacheUpdateOp>(op))
    return false; // updates other caches through their own reads (checked)
  if (isMemoryEffectFree(op))
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true; // unknown effects: assume the worst
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (auto &e : list)
    if (isa<BufferResource>(e.getResource()))
      return true;
  return false;
}

/// Tries to make one update in place. Returns true when it did.
bool rewrite(Operation *update, Value cache, Value positions, Value values,
             int64_t dim) {
  auto read = cache.getDefiningOp<BufferReadOp>();
  if (!read) {
    LLVM_DEBUG(llvm::dbgs() << "skip: the cache is not a buffer read\n");
    return false;
  }
  if (!cache.hasOneUse()) {
    LLVM_DEBUG(llvm::dbgs() << "skip: the old cache value has other uses\n");
    return false;
  }
  Value updated = update->getResult(0);
  BufferWriteOp writeBack;
  for (Operation *user : updated.getUsers())
    if (auto w = dyn_cast<BufferWriteOp>(user)) {
      if (w.getName() != read.getName() || writeBack) {
        LLVM_DEBUG(llvm::dbgs()
                   << "skip: written to another buffer or twice\n");
        return false;
      }
      writeBack = w;
    }
  if (!writeBack || writeBack->getBlock() != read->getBlock() ||
      update->getBlock() != read->getBlock()) {
    LLVM_DEBUG(llvm::dbgs() << "skip: no write-back in the same block\n");
    return false;
  }
  // Nothing between the read and the write-back may touch the buffer.
  for (Operation *op = read->getNextNode(); op && op != writeBack;
       op = op->getNextNode())
    if (op != update && touchesBuffer(op, read.getName())) {
      LLVM_DEBUG(llvm::dbgs() << "skip: " << op->getName()
                              << " touches the buffer in between\n");
      return false;
    }
  OpBuilder b(update);
  auto inPlace = b.create<KvCacheUpdateOp>(update->getLoc(), cache, positions,
                                           values, b.getI64IntegerAttr(dim));
  if (StringRef path = getModulePath(update); !path.empty())
    setModulePath(inPlace, path);
  updated.replaceAllUsesWith(inPlace.getResult());
  update->erase();
  writeBack->erase();
  return true;
}

struct KvCacheInPlacePass
    : public ::etllm::impl::KvCacheInPlacePassBase<KvCacheInPlacePass> {
  void runOnOperation() override {
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (isa<IndexCopyOp>(op))
        candidates.push_back(op);
      else if (auto put = dyn_cast<IndexPutOp>(op); put && !put.getAccumulate())
        candidates.push_back(op);
    });
    // A write-back of a value that already is the buffer (an in-place update
    // of a read of that same buffer) writes nothing new: drop it.
    SmallVector<BufferWriteOp> redundant;
    getOperation().walk([&](BufferWriteOp w) {
      auto u = w.getValue().getDefiningOp<KvCacheUpdateOp>();
      auto r = u ? u.getCache().getDefiningOp<BufferReadOp>() : BufferReadOp();
      if (r && r.getName() == w.getName())
        redundant.push_back(w);
    });
    for (BufferWriteOp w : redundant)
      w->erase();
    for (Operation *op : candidates) {
      if (auto c = dyn_cast<IndexCopyOp>(op))
        rewrite(op, c.getInput(), c.getIndex(), c.getSource(), c.getDim());
      else if (auto p = dyn_cast<IndexPutOp>(op))
        rewrite(op, p.getInput(), p.getIndex(), p.getValues(), p.getDim());
    }
  }
};

} // namespace
