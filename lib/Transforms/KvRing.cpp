//===- KvRing.cpp - ring KV caches: sliding windows and attention sinks ---===//
//
// Shrinks the caches of sliding-window attentions to window + chunk - 1
// positions and, with attention sinks, makes every cache S fixed slots and
// a ring; the slots come from etllm.kv_ring.slots and the mask from
// etllm.kv_ring.mask. See Passes.td for the rule.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmDialect.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Transforms/Passes.h"
#include "etllm/runtime/llm/method_names.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>
#include <tuple>

namespace etllm {
#define GEN_PASS_DEF_KVRINGPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

/// A ring cache: `size` slots, the first `sinks` fixed; queries see
/// `window` positions back (0: all the ring holds).
struct Ring {
  int64_t sinks = 0, size = 0, window = 0;
};

/// The in-place update and buffer read behind an sdpa key or value operand,
/// or null ones when the operand is not a cache.
struct CacheUse {
  KvCacheUpdateOp update;
  BufferReadOp read;
};

CacheUse cacheBehind(Value v) {
  auto u = v.getDefiningOp<KvCacheUpdateOp>();
  if (!u)
    return {};
  auto r = u.getCache().getDefiningOp<BufferReadOp>();
  if (!r)
    return {};
  return {u, r};
}

struct KvRingPass : public ::etllm::impl::KvRingPassBase<KvRingPass> {
  using KvRingPassBase::KvRingPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fail = [&](Operation *at, const Twine &message) {
      at->emitError() << "etllm-kv-ring: " << message;
      signalPassFailure();
    };
    if (chunk < 1)
      return fail(module, "chunk must be at least 1, got " + Twine(chunk));
    if (sinks < 0)
      return fail(module, "sinks must not be negative, got " + Twine(sinks));
    // An image's features go in one call of image_seq_len positions, which
    // a ring of calls of at most `chunk` tokens does not take.
    if (Operation *vision =
            module.lookupSymbol(::etllm::rt::llm::kVisionEncoderMethod))
      return fail(vision, "a composite model's program (vision_encoder, "
                          "text_decoder) cannot have ring caches yet");

    // Decide each attention's ring; every buffer gets one size.
    struct Plan {
      SdpaOp sdpa;
      Ring ring;
      CacheUse key, value;
    };
    SmallVector<Plan> plans;
    llvm::MapVector<StringAttr, int64_t> bufferSize;
    WalkResult walk = module.walk([&](SdpaOp sdpa) {
      CacheUse key = cacheBehind(sdpa.getKey()),
               value = cacheBehind(sdpa.getValue());
      if (!key.update && !value.update)
        return WalkResult::advance(); // not over a cache
      auto refuse = [&](const Twine &why) {
        fail(sdpa, "cannot keep this attention's caches as a ring: " + why);
        return WalkResult::interrupt();
      };
      if (!key.update || !value.update)
        return refuse("only one of its key and value is a cache");
      if (sdpa.getMask() || !sdpa.getCausal() || !sdpa.getPositions())
        return refuse("it is not causal over `positions` without a mask "
                      "(etllm-fuse-sdpa gives that form)");
      for (KvCacheUpdateOp u : {key.update, value.update})
        if (u.getDim() != 2 && u.getDim() != -2)
          return refuse("a cache is updated along dimension " +
                        Twine(u.getDim()) + ", not 2");
      auto type = dyn_cast<RankedTensorType>(key.read.getType());
      if (!type || type.getRank() != 4 || !type.hasStaticShape())
        return refuse("its cache is not a float [B, Hkv, T, D] tensor (run "
                      "before etllm-quantize-kv-cache)");
      const int64_t T = type.getDimSize(2);
      const int64_t W = sdpa.getSlidingWindow();
      Ring ring;
      if (W > 0 && W + chunk - 1 < T) {
        ring = {0, W + chunk - 1, W};
      } else if (sinks > 0) {
        const int64_t window = T - sinks - chunk + 1;
        if (window < 1)
          return refuse("sinks " + Twine(sinks) + " + chunk " + Twine(chunk) +
                        " leave no window in a cache of " + Twine(T) +
                        " positions");
        ring = {sinks, T, W > 0 ? std::min(W, window) : window};
      } else {
        return WalkResult::advance(); // the whole cache is no larger
      }
      for (CacheUse c : {key, value}) {
        auto [it, fresh] =
            bufferSize.insert({c.read.getNameAttr().getAttr(), ring.size});
        if (!fresh && it->second != ring.size)
          return refuse("its cache @" + c.read.getName() +
                        " is another attention's with another ring size");
      }
      plans.push_back({sdpa, ring, key, value});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return;
    // With sinks the positions pass max_seq_len: no cache may stay linear.
    if (sinks > 0) {
      WalkResult linear = module.walk([&](KvCacheUpdateOp u) {
        auto read = u.getCache().getDefiningOp<BufferReadOp>();
        if (read && !bufferSize.count(read.getNameAttr().getAttr())) {
          fail(u, "with sinks every KV cache must be a ring, and @" +
                      read.getName() + " is not read by an attention");
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (linear.wasInterrupted())
        return;
    }
    if (plans.empty())
      return;

    // Every reader of a ring buffer must feed one of the planned updates.
    llvm::SmallPtrSet<Operation *, 16> planned;
    for (Plan &p : plans) {
      planned.insert(p.key.update);
      planned.insert(p.value.update);
    }
    // (Each ring buffer with its reads, checked, then retyped.)
    SmallVector<std::tuple<BufferOp, int64_t, SmallVector<BufferReadOp>>> rings;
    for (auto [name, size] : bufferSize) {
      auto buffer = SymbolTable::lookupNearestSymbolFrom<BufferOp>(
          module, SymbolRefAttr::get(name));
      if (!buffer)
        return fail(module, "no buffer @" + name.getValue());
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(buffer, module);
      if (!uses)
        return fail(buffer, "cannot find the uses of @" + name.getValue());
      SmallVector<BufferReadOp> reads;
      for (const SymbolTable::SymbolUse &use : *uses) {
        auto read = dyn_cast<BufferReadOp>(use.getUser());
        if (!read || !read.getResult().hasOneUse() ||
            !planned.contains(*read.getResult().getUsers().begin()))
          return fail(use.getUser(),
                      "cannot keep @" + name.getValue() +
                          " as a ring: it is used by '" +
                          use.getUser()->getName().getStringRef() +
                          "', not only updated in place for an attention");
        reads.push_back(read);
      }
      rings.push_back({buffer, size, std::move(reads)});
    }
    // Checked: retype every ring buffer, its reads and their updates.
    for (auto &[buffer, size, reads] : rings) {
      auto type = cast<RankedTensorType>(buffer.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[2] = size;
      auto ringType = RankedTensorType::get(shape, type.getElementType());
      buffer.setType(ringType);
      for (BufferReadOp read : reads) {
        read.getResult().setType(ringType);
        (*read.getResult().getUsers().begin())->getResult(0).setType(ringType);
      }
    }

    // The slots and masks, one per positions value and ring, right after
    // the positions are defined.
    OpBuilder b(module.getContext());
    std::map<std::tuple<void *, int64_t, int64_t, int64_t>, Value> made;
    auto once = [&](Value positions, const Ring &ring, int64_t window,
                    llvm::function_ref<Value()> make) {
      Value &v =
          made[{positions.getAsOpaquePointer(), ring.sinks, ring.size, window}];
      if (v)
        return v;
      if (Operation *def = positions.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(cast<BlockArgument>(positions).getOwner());
      return v = make();
    };
    for (Plan &p : plans) {
      for (CacheUse c : {p.key, p.value}) {
        Value positions = c.update.getPositions();
        Value slots = once(positions, p.ring, -1, [&]() -> Value {
          return b.create<KvRingSlotsOp>(c.update.getLoc(), positions.getType(),
                                         positions,
                                         b.getI64IntegerAttr(p.ring.sinks),
                                         b.getI64IntegerAttr(p.ring.size));
        });
        c.update.getPositionsMutable().assign(slots);
      }
      Value positions = p.sdpa.getPositions();
      auto posType = cast<RankedTensorType>(positions.getType());
      Value mask = once(positions, p.ring, p.ring.window, [&]() -> Value {
        auto maskType = RankedTensorType::get(
            {1, 1, posType.getDimSize(0), p.ring.size}, b.getF32Type());
        return b.create<KvRingMaskOp>(p.sdpa.getLoc(), maskType, positions,
                                      b.getI64IntegerAttr(p.ring.sinks),
                                      b.getI64IntegerAttr(p.ring.size),
                                      b.getI64IntegerAttr(p.ring.window));
      });
      p.sdpa.getMaskMutable().assign(mask);
      p.sdpa.getPositionsMutable().clear();
      p.sdpa.removeCausalAttr();
      p.sdpa.setSlidingWindow(0);
    }
    module->setAttr(EtllmDialect::kKvRingAttrName,
                    b.getDictionaryAttr(
                        {b.getNamedAttr("chunk", b.getI64IntegerAttr(chunk)),
                         b.getNamedAttr("sinks", b.getI64IntegerAttr(sinks))}));
  }
};

} // namespace
