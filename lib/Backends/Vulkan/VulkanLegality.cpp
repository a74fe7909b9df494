//===- VulkanLegality.cpp - What the Vulkan backend runs ------------------===//
//
// The legality contract the partitioner asks: the ops the kernels run, on
// f32 activations of rank <= 4 with at most one dynamic (sequence)
// dimension, every one within the binding limit at the sequence bound;
// weights that are parameters in a layout the kernels read (f32/f16 rows,
// symmetric int4 in groups of 32); attention of the shapes the kernels
// take (the sequence as dimension 2, heads of at most 256, no mask); and
// nothing the module's backend options exclude. What is not legal stays on
// the next backend or the portable kernels in the same program.
//
//===----------------------------------------------------------------------===//
#include "VulkanPlan.h"
#include "VulkanViews.h"

#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Lowering/KernelCalls.h"
#include "etllm/Target/Backend.h"
#include "etllm/runtime/vulkan/packing.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::vk {

/// Bound assumed for modules without a model configuration (hand-written
/// IR): the legality of a sequence-sized activation depends on it.
constexpr int64_t kDefaultSeqBound = 2048;

PlanOptions planOptions(Operation *op, int64_t seqBound) {
  PlanOptions o;
  o.f16 = backendOption(op, rvk::kBackendId, "precision", "f32") == "f16";
  std::string bytes =
      backendOption(op, rvk::kBackendId, "max-binding-bytes", "");
  unsigned long long b = 0;
  if (!bytes.empty() && !llvm::getAsUnsignedInteger(bytes, 10, b) && b >= 4096)
    o.maxBindingBytes = b;
  llvm::SmallVector<llvm::StringRef> names;
  std::string exclude = backendOption(op, rvk::kBackendId, "exclude", "");
  llvm::StringRef(exclude).split(names, ':', -1, false);
  for (llvm::StringRef n : names)
    o.exclude.push_back(n.trim().str());
  auto module =
      isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  o.seqBound = seqBound;
  if (o.seqBound <= 0 && module)
    if (ModelConfigAttr cfg = getModelConfig(module))
      o.seqBound = cfg.getMaxSeqLen();
  if (o.seqBound <= 0)
    o.seqBound = kDefaultSeqBound;
  return o;
}

namespace {

bool isParam(Value v) { return v && v.getDefiningOp<ParameterGetOp>(); }

/// An f32 activation the kernels can hold.
bool isAct(Type t, const PlanOptions &o) {
  auto tt = dyn_cast<RankedTensorType>(t);
  if (!tt || !tt.getElementType().isF32() || tt.getRank() < 1)
    return false;
  std::optional<Shape> s = shapeOfType(t, o.seqBound);
  if (!s)
    return false;
  uint64_t n = o.f16 ? 2 : 4;
  for (int64_t d : s->sizes)
    n *= uint64_t(d);
  return n <= o.maxBindingBytes;
}

/// Rows of a matrix (the kernels' rows m0 + mS * S): no dimension larger
/// than 1 before the sequence.
bool seqOutermost(Type t) {
  auto tt = dyn_cast<RankedTensorType>(t);
  if (!tt)
    return false;
  for (int64_t d = 0; d < tt.getRank(); ++d) {
    if (tt.isDynamicDim(d))
      return true;
    if (tt.getDimSize(d) != 1 &&
        llvm::any_of(tt.getShape().drop_front(d), ShapedType::isDynamic))
      return false;
  }
  return true;
}

/// Index tensors: tokens [1, S] or [S], positions [S].
bool isIndices(Type t) {
  auto tt = dyn_cast<RankedTensorType>(t);
  return tt && tt.getRank() >= 1 && tt.getRank() <= 2 &&
         (tt.getElementType().isInteger(64) ||
          tt.getElementType().isInteger(32)) &&
         shapeOfType(t, 1).has_value();
}

/// A view of index tensors only Vulkan ops read: a subgraph returns f32,
/// so an index view a CPU-side op reads (a mask's positions) stays there.
bool indicesForVulkan(Value v) {
  return isIndices(v.getType()) &&
         llvm::all_of(v.getUsers(), [](Operation *u) { return isLegal(u); });
}

bool isF32Param(Value v, int64_t rank) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return isParam(v) && t && t.getElementType().isF32() && t.getRank() == rank &&
         t.hasStaticShape();
}

/// A float weight [N, K] the matmul and embedding kernels read.
bool isFloatWeight(Value w, const PlanOptions &o) {
  if (!isF32Param(w, 2))
    return false;
  auto t = cast<RankedTensorType>(w.getType());
  return !o.f16 || t.getDimSize(1) % 2 == 0;
}

/// A quantized weight [N, K]: int4 in groups of 32 keeps its bits (the Q4
/// layout); any other affine one is dequantized at export into the
/// activations' float type (rows of even length when that is f16). Weights
/// kept in ggml's blocks (cpu-gguf's q4_k and the like) stay off the
/// GPU: the packer dequantizes affine layouts only.
bool isQuantWeight(Value w, const PlanOptions &o) {
  auto q = dyn_cast<QWeightType>(w.getType());
  if (!isParam(w) || !q || q.getRank() != 2 || q.isGgml())
    return false;
  return rvk::q4Supports(quantInfoOf(q), q.getShape()[1]) || !o.f16 ||
         q.getShape()[1] % 2 == 0;
}

/// An f32 vector constant or parameter (RoPE's inverse frequencies).
bool isFloatVector(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.getElementType().isF32() || t.getRank() != 1 ||
      !t.hasStaticShape())
    return false;
  if (isParam(v))
    return true;
  auto c = v.getDefiningOp<ConstantOp>();
  return c && isa<DenseElementsAttr>(c.getValue());
}

/// [1, heads, ?, head] with the sequence as dimension 2.
bool isHeads(Type t, const PlanOptions &o, bool dynamicSeq = true) {
  auto tt = dyn_cast<RankedTensorType>(t);
  if (!tt || !isAct(t, o) || tt.getRank() != 4 || tt.getDimSize(0) != 1 ||
      tt.isDynamicDim(1) || tt.isDynamicDim(3))
    return false;
  return dynamicSeq ? tt.isDynamicDim(2) : tt.hasStaticShape();
}

/// A reshape-like op whose result is a view of a contiguous input.
bool reshapes(Operation *op, const PlanOptions &o) {
  std::optional<Shape> in =
      shapeOfType(op->getOperand(0).getType(), o.seqBound);
  std::optional<Shape> out =
      shapeOfType(op->getResult(0).getType(), o.seqBound);
  return in && out && reshapeView(contiguousView(0, *in), *out).has_value();
}

bool excluded(Operation *op, const PlanOptions &o) {
  for (const std::string &name : o.exclude)
    if (op->getName().getStringRef() == name)
      return true;
  return false;
}

} // namespace

bool isLegal(Operation *op) {
  const PlanOptions o = planOptions(op);
  if (excluded(op, o))
    return false;
  auto act = [&](Type t) { return isAct(t, o); };
  // Activations the row kernels (matmul, norms, element-wise) read.
  auto rows = [&](Type t) { return isAct(t, o) && seqOutermost(t); };
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case([&](LinearOp l) {
        return rows(l.getInput().getType()) && rows(l.getType()) &&
               isFloatWeight(l.getWeight(), o) &&
               (!l.getBias() || isF32Param(l.getBias(), 1));
      })
      .Case([&](QLinearOp l) {
        return rows(l.getInput().getType()) && rows(l.getType()) &&
               isQuantWeight(l.getWeight(), o) &&
               (!l.getBias() || isF32Param(l.getBias(), 1));
      })
      .Case([&](RmsNormOp n) {
        return rows(n.getInput().getType()) && rows(n.getType()) &&
               (!n.getWeight() || isF32Param(n.getWeight(), 1));
      })
      .Case([&](SoftmaxOp s) {
        auto t = cast<RankedTensorType>(s.getType());
        return rows(t) && (s.getDim() == -1 || s.getDim() == t.getRank() - 1);
      })
      .Case<AddOp, SubOp, MulOp>([&](Operation *o2) {
        Type r = o2->getResult(0).getType();
        if (!rows(r))
          return false;
        // Same-shape operands, or a scalar f32 constant on the right.
        if (o2->getOperand(0).getType() != r)
          return false;
        Value b = o2->getOperand(1);
        if (b.getType() == r)
          return true;
        auto bt = dyn_cast<RankedTensorType>(b.getType());
        auto c = b.getDefiningOp<ConstantOp>();
        return bt && bt.getRank() == 0 && bt.getElementType().isF32() && c &&
               isa<DenseElementsAttr>(c.getValue());
      })
      .Case([&](SiluOp s) { return rows(s.getType()); })
      .Case([&](EmbeddingOp e) {
        return rows(e.getType()) && isIndices(e.getIndices().getType()) &&
               seqOutermost(e.getIndices().getType()) &&
               isFloatWeight(e.getWeight(), o);
      })
      .Case([&](QEmbeddingOp e) {
        return rows(e.getType()) && isIndices(e.getIndices().getType()) &&
               seqOutermost(e.getIndices().getType()) &&
               isQuantWeight(e.getWeight(), o);
      })
      .Case<ReshapeOp, UnsqueezeOp, SqueezeOp>([&](Operation *r) {
        return (act(r->getResult(0).getType()) ||
                indicesForVulkan(r->getResult(0))) &&
               reshapes(r, o);
      })
      .Case([&](TransposeOp t) {
        return act(t.getType()) || indicesForVulkan(t.getResult());
      })
      .Case([&](SliceOp s) {
        auto in = cast<RankedTensorType>(s.getInput().getType());
        if (!act(in) || !act(s.getType()) || s.getStep() < 1)
          return false;
        int64_t dim = s.getDim() < 0 ? s.getDim() + in.getRank() : s.getDim();
        return !in.isDynamicDim(dim) ||
               sequenceSliceHasView(s.getStart(), s.getEnd(), s.getStep(),
                                    o.seqBound);
      })
      .Case([&](RopeOp r) {
        auto t = cast<RankedTensorType>(r.getType());
        auto f = cast<RankedTensorType>(r.getInvFreq().getType());
        return isHeads(r.getInput().getType(), o) &&
               r.getType() == r.getInput().getType() &&
               isIndices(r.getPositions().getType()) &&
               isFloatVector(r.getInvFreq()) &&
               2 * f.getDimSize(0) <= t.getDimSize(3) &&
               t.getDimSize(3) <= 65536;
      })
      .Case([&](KvCacheUpdateOp u) {
        // A cache in device memory: its readers must be on this backend too.
        return u.getDim() == 2 && isHeads(u.getCache().getType(), o, false) &&
               isHeads(u.getValue().getType(), o) &&
               isIndices(u.getPositions().getType()) &&
               (u.getCache().getDefiningOp<BufferReadOp>() ||
                isa<BlockArgument>(u.getCache())) &&
               llvm::all_of(u->getUsers(), [](Operation *user) {
                 return isa<SdpaOp>(user) && isLegal(user);
               });
      })
      .Case([&](SdpaOp a) {
        // Float caches only: an int8 cache (model.kv_cache_dtype: int8)
        // has no shader here, so its attention stays on the CPU.
        auto q = cast<RankedTensorType>(a.getQuery().getType());
        auto k = dyn_cast<RankedTensorType>(a.getKey().getType());
        auto v = dyn_cast<RankedTensorType>(a.getValue().getType());
        return k && v && !a.getMask() && isHeads(q, o) &&
               isHeads(a.getType(), o) &&
               isHeads(k, o, false) && isHeads(v, o, false) &&
               k.getDimSize(1) == v.getDimSize(1) &&
               k.getDimSize(2) == v.getDimSize(2) &&
               q.getDimSize(1) % k.getDimSize(1) == 0 &&
               q.getDimSize(3) <= 256 && v.getDimSize(3) <= 256 &&
               a.getSlidingWindow() >= 0 &&
               (!a.getPositions() || isIndices(a.getPositions().getType()));
      })
      .Default([](Operation *) { return false; });
}

} // namespace etllm::vk
