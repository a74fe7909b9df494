//===- QuantizeKvCache.cpp - int8 KV caches, one scale per token and head -===//
//
// Retypes the KV-cache buffers (and their reads and in-place updates) to
// !etllm.qact<[B, Hkv, T, D], i8, per_token, sym>; the kernels of
// kv_cache.update and sdpa do the rest. See Passes.td for the rule.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "etllm-quantize-kv-cache"

namespace etllm {
#define GEN_PASS_DEF_QUANTIZEKVCACHEPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

/// Whether `use` is the key or the value operand of an etllm.sdpa.
bool isSdpaKeyOrValue(OpOperand &use) {
  auto sdpa = dyn_cast<SdpaOp>(use.getOwner());
  return sdpa && (&use == &sdpa.getKeyMutable() ||
                  &use == &sdpa.getValueMutable());
}

/// Whether `u` updates its cache along the token dimension (2 of 4).
bool updatesTokens(KvCacheUpdateOp u) {
  return u.getDim() == 2 || u.getDim() == -2;
}

/// Checks that every read of the cache buffer `b` feeds only in-place
/// updates along the tokens whose results only SDPA reads, or SDPA itself;
/// collects the values to retype. Emits an error naming the first reader
/// that is not one of those.
LogicalResult collectCacheValues(BufferOp b, ArrayRef<BufferReadOp> reads,
                                 SmallVectorImpl<Value> &values) {
  auto refuse = [&](Operation *user) {
    return b.emitOpError("cannot be stored as a quantized KV cache: ")
           << "it is read by '" << user->getName()
           << "'; a quantized cache is only updated in place "
              "(etllm.kv_cache.update along dimension 2) and read by "
              "etllm.sdpa as key or value";
  };
  for (BufferReadOp r : reads) {
    values.push_back(r.getResult());
    for (OpOperand &use : r.getResult().getUses()) {
      if (isSdpaKeyOrValue(use))
        continue;
      auto u = dyn_cast<KvCacheUpdateOp>(use.getOwner());
      if (!u || &use != &u.getCacheMutable() || !updatesTokens(u))
        return refuse(use.getOwner());
      values.push_back(u.getResult());
      for (OpOperand &next : u.getResult().getUses())
        if (!isSdpaKeyOrValue(next))
          return refuse(next.getOwner());
    }
  }
  return success();
}

struct QuantizeKvCachePass
    : public ::etllm::impl::QuantizeKvCachePassBase<QuantizeKvCachePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dtype == ::etllm::KvCacheDtype::Model)
      return; // the caches keep the model's dtype
    llvm::MapVector<StringRef, SmallVector<BufferReadOp>> reads;
    llvm::DenseSet<StringRef> updated;
    module.walk([&](BufferReadOp r) {
      reads[r.getName()].push_back(r);
      for (Operation *user : r.getResult().getUsers())
        if (isa<KvCacheUpdateOp>(user))
          updated.insert(r.getName());
    });
    // Check every cache first, then retype: an error leaves the IR as it
    // was.
    SmallVector<std::pair<BufferOp, SmallVector<Value>>> caches;
    for (BufferOp b : module.getOps<BufferOp>()) {
      auto t = dyn_cast<RankedTensorType>(b.getType());
      if (!t || !updated.contains(b.getSymName()))
        continue; // not a cache, or quantized already
      if (!isa<FloatType>(t.getElementType()) || t.getRank() != 4) {
        b.emitOpError("cannot be stored as a quantized KV cache: it is not "
                      "a float [batch, kv_heads, length, head_dim] tensor");
        return signalPassFailure();
      }
      SmallVector<Value> values;
      if (failed(collectCacheValues(b, reads[b.getSymName()], values)))
        return signalPassFailure();
      caches.push_back({b, std::move(values)});
    }
    for (auto &[b, values] : caches) {
      auto t = cast<RankedTensorType>(b.getType());
      auto q = QActType::get(&getContext(), t.getShape(), 8,
                             ActQuantGranularity::per_token,
                             /*symmetric=*/true);
      LLVM_DEBUG(llvm::dbgs() << "quantizing @" << b.getSymName() << "\n");
      b.setType(q);
      for (Value v : values)
        v.setType(q);
    }
    // SDPA takes both caches quantized or neither.
    WalkResult mixed = module.walk([&](SdpaOp op) {
      if (isa<QActType>(op.getKey().getType()) !=
          isa<QActType>(op.getValue().getType())) {
        op.emitOpError("reads a quantized and a float cache: its key and "
                       "value must both be KV-cache buffers");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (mixed.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
