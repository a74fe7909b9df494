//===- SwapSource.cpp - Module-level replacements by class ----------------===//
#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Models/Registry.h"
#include "etllm/Transforms/Passes.h"
#include "etllm/Transforms/SourceSwap.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Debug.h"

#include <map>
#include <mutex>

#define DEBUG_TYPE "etllm-swap-source"

namespace etllm {
#define GEN_PASS_DEF_SWAPSOURCEPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {

bool ModuleInstance::contains(Operation *op) const {
  StringRef p = getModulePath(op);
  return p == path || (p.size() > path.size() && p.starts_with(path) &&
                       p[path.size()] == '.');
}

namespace {
std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}
std::vector<std::pair<std::string, SourceSwapFn>> &registry() {
  static std::vector<std::pair<std::string, SourceSwapFn>> r;
  return r;
}
} // namespace

void registerSourceSwap(llvm::StringRef suffix, SourceSwapFn fn) {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (auto &e : registry())
    if (e.first == suffix) {
      e.second = std::move(fn);
      return;
    }
  registry().push_back({suffix.str(), std::move(fn)});
}

const SourceSwapFn *findSourceSwap(llvm::StringRef klass,
                                   std::string *matched) {
  std::lock_guard<std::mutex> lock(registryMutex());
  const std::pair<std::string, SourceSwapFn> *best = nullptr;
  for (auto &e : registry())
    if (klass.ends_with(e.first) &&
        (!best || e.first.size() > best->first.size()))
      best = &e;
  if (best && matched)
    *matched = best->first;
  return best ? &best->second : nullptr;
}

//===----------------------------------------------------------------------===//
// Built-in replacements
//===----------------------------------------------------------------------===//

namespace {

std::optional<double> splat(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// Values defined inside the instance and used outside it.
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

/// Activation inputs: operands defined outside the instance that are not
/// constants or parameters (which may be shared after CSE).
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

/// Erases the instance's ops that have become dead (reverse order) and
/// drops them from the instance.
void eraseDead(ModuleInstance &inst, RewriterBase &rewriter,
               ArrayRef<Operation *> keep = {}) {
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

/// RMSNorm: x * rsqrt(mean(x^2) + eps) * (w [+ 1]) -> rms_norm.
LogicalResult swapRmsNorm(ModuleInstance &inst, RewriterBase &rewriter,
                          std::string &reason) {
  SmallVector<Value> ins = activationInputs(inst);
  SmallVector<Value> outs = outputsOf(inst);
  if (ins.size() != 1 || outs.size() != 1) {
    reason = "expected one input and one output, found " +
             std::to_string(ins.size()) + " and " + std::to_string(outs.size());
    return failure();
  }
  Value w;
  double eps = -1, offset = 0;
  bool haveMean = false, haveRsqrt = false;
  for (Operation *op : inst.ops) {
    if (auto g = dyn_cast<ParameterGetOp>(op)) {
      if (w) {
        reason = "more than one parameter";
        return failure();
      }
      w = g.getResult();
    }
    haveMean |= isa<MeanOp>(op);
    haveRsqrt |= isa<RsqrtOp>(op);
    if (auto add = dyn_cast<AddOp>(op)) {
      std::optional<double> c = splat(add.getRhs());
      if (c && add.getLhs().getDefiningOp<MeanOp>())
        eps = *c;
      else if (c && *c == 1.0)
        offset = 1.0;
    }
  }
  // A weight read outside the instance (shared after CSE) still counts.
  if (!w)
    for (Operation *op : inst.ops)
      for (Value v : op->getOperands())
        if (v.getDefiningOp<ParameterGetOp>())
          w = v;
  if (!haveMean || !haveRsqrt || eps < 0) {
    reason = "not an RMSNorm computation (mean, eps, rsqrt)";
    return failure();
  }
  // Prefer the configuration's exact eps when the graph's constant is its
  // rounding (the kernel adds eps in f32 either way).
  double cfgEps =
      inst.config ? inst.config.getRmsNormEps().convertToDouble() : 0.0;
  if (cfgEps > 0 && float(cfgEps) == float(eps))
    eps = cfgEps;
  Value x = ins.front();
  auto xt = cast<RankedTensorType>(x.getType());
  if (outs.front().getType() != xt) {
    reason = "output type differs from the input type";
    return failure();
  }
  if (w) {
    auto wt = cast<RankedTensorType>(w.getType());
    if (wt.getRank() != 1 || wt.getElementType() != xt.getElementType()) {
      reason = "weight does not match the normalized dimension";
      return failure();
    }
  }
  // Insert after the last op of the instance (dominates every output use).
  rewriter.setInsertionPointAfter(inst.ops.back());
  auto norm = rewriter.create<RmsNormOp>(inst.ops.back()->getLoc(), xt, x, w,
                                         rewriter.getF64FloatAttr(eps),
                                         rewriter.getF64FloatAttr(offset));
  setModulePath(norm, inst.path);
  rewriter.replaceAllUsesWith(outs.front(), norm.getResult());
  eraseDead(inst, rewriter);
  return success();
}

/// DeepSeek's decoupled RoPE, matched on its application.
struct DeepseekRope {
  Value input;   // [1, h, S, 2R]: the rope part before the rotation
  Value invFreq; // the rotary table's f32 [R] constant
  double scaling = 1.0;
};

bool isLastDim(int64_t dim, int64_t rank) {
  return dim == -1 || dim == rank - 1;
}

/// A transpose of dimensions a < b of a rank-`rank` tensor (either order,
/// negative dimensions counted from the end).
bool swapsDims(TransposeOp t, int64_t rank, int64_t a, int64_t b) {
  int64_t d0 = t.getDim0() < 0 ? t.getDim0() + rank : t.getDim0();
  int64_t d1 = t.getDim1() < 0 ? t.getDim1() + rank : t.getDim1();
  return std::min(d0, d1) == a && std::max(d0, d1) == b;
}

/// x[..., a:b] of `of` (step 1, b clamped to the size as torch does).
bool isLastSlice(Value v, Value of, int64_t a, int64_t b) {
  auto sl = v.getDefiningOp<SliceOp>();
  if (!sl || sl.getInput() != of || sl.getStep() != 1 || sl.getStart() != a)
    return false;
  auto t = cast<RankedTensorType>(of.getType());
  int64_t size = t.getShape().back();
  return isLastDim(sl.getDim(), t.getRank()) &&
         (sl.getEnd() == b || (b >= size && sl.getEnd() >= size));
}

/// The rotary table behind one of cos/sin [1, S, 2R] (Rotary.cpp's
/// buildRotary): [convert] [mul by a splat] Trig(cat(f, f)) with
/// f = transpose(matmul(reshape(inv_freq, [1, R, 1]),
///                      reshape(convert(positions), [1, 1, -1])), 1, 2).
template <typename Trig>
LogicalResult matchRotaryTable(Value t, Value positions, int64_t R, Value &emb,
                               Value &invFreq, double &scaling,
                               std::string &why) {
  if (auto c = t.getDefiningOp<ConvertOp>())
    t = c.getInput();
  scaling = 1.0;
  if (auto m = t.getDefiningOp<MulOp>()) {
    std::optional<double> sc = splat(m.getRhs());
    if (!sc) {
      why = "the rotary table is scaled by a non-splat";
      return failure();
    }
    scaling = *sc;
    t = m.getLhs();
  }
  auto trig = t.getDefiningOp<Trig>();
  CatOp cat = trig ? trig.getInput().template getDefiningOp<CatOp>() : CatOp();
  if (!cat || cat.getInputs().size() != 2 ||
      cat.getInputs()[0] != cat.getInputs()[1] ||
      !isLastDim(cat.getDim(),
                 cast<RankedTensorType>(cat.getType()).getRank())) {
    why = "cos/sin are not of cat(freqs, freqs)";
    return failure();
  }
  emb = cat.getResult();
  auto tr = cat.getInputs()[0].getDefiningOp<TransposeOp>();
  auto mm = tr ? tr.getInput().getDefiningOp<MatmulOp>() : MatmulOp();
  auto fr = mm ? mm.getLhs().getDefiningOp<ReshapeOp>() : ReshapeOp();
  auto pr = mm ? mm.getRhs().getDefiningOp<ReshapeOp>() : ReshapeOp();
  auto pc = pr ? pr.getInput().getDefiningOp<ConvertOp>() : ConvertOp();
  DenseElementsAttr freq;
  if (!tr || !swapsDims(tr, 3, 1, 2) || !fr || !pc ||
      pc.getInput() != positions ||
      cast<RankedTensorType>(fr.getType()).getShape() !=
          ArrayRef<int64_t>{1, R, 1} ||
      !matchPattern(fr.getInput(), m_Constant(&freq))) {
    why = "the angles are not positions x the inverse frequencies";
    return failure();
  }
  auto ft = cast<RankedTensorType>(fr.getInput().getType());
  if (ft.getRank() != 1 || ft.getDimSize(0) != R ||
      !ft.getElementType().isF32()) {
    why = "the inverse frequencies are not an f32 table of the rope size";
    return failure();
  }
  invFreq = fr.getInput();
  return success();
}

/// Matches Mla.cpp's ropeInterleaved on v [1, h, S, 2R]:
///   halves = reshape(transpose(reshape(x, [1, h, -1, R, 2]), 4, 3),
///                    [1, h, -1, 2R])
///   v = halves * unsqueeze(cos, 1) + cat(-halves[R:], halves[:R]) *
///       unsqueeze(sin, 1)
/// with cos and sin of one rotary table of `positions`: the rotation of
/// pairs (2i, 2i + 1) of x written to (i, i + R), etllm.rope's
/// deinterleave_rotate_half.
FailureOr<DeepseekRope> matchDeepseekRope(Value v, Value positions,
                                          std::string &why) {
  auto vt = cast<RankedTensorType>(v.getType());
  const int64_t D = vt.getRank() == 4 ? vt.getDimSize(3) : 0;
  auto add = v.getDefiningOp<AddOp>();
  if (ShapedType::isDynamic(D) || D <= 0 || D % 2 || !add) {
    why = "not x * cos + rotate_half(x) * sin on a [1, heads, S, even] part";
    return failure();
  }
  const int64_t R = D / 2;
  auto mc = add.getLhs().getDefiningOp<MulOp>();
  auto ms = add.getRhs().getDefiningOp<MulOp>();
  if (!mc || !ms || mc.getType() != vt || ms.getType() != vt) {
    why = "not x * cos + rotate_half(x) * sin";
    return failure();
  }
  Value halves = mc.getLhs();
  auto rot = ms.getLhs().getDefiningOp<CatOp>();
  auto neg = rot && rot.getInputs().size() == 2
                 ? rot.getInputs()[0].getDefiningOp<NegOp>()
                 : NegOp();
  if (!neg || !isLastDim(rot.getDim(), 4) ||
      !isLastSlice(neg.getInput(), halves, R, D) ||
      !isLastSlice(rot.getInputs()[1], halves, 0, R)) {
    why = "the rotated copy is not rotate_half (cat(-x[R:], x[:R]))";
    return failure();
  }
  auto r2 = halves.getDefiningOp<ReshapeOp>();
  auto tr = r2 ? r2.getInput().getDefiningOp<TransposeOp>() : TransposeOp();
  auto r1 = tr ? tr.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  auto pairs = r1 ? cast<RankedTensorType>(r1.getType()) : RankedTensorType();
  if (!r1 || halves.getType() != vt || r1.getInput().getType() != vt ||
      pairs.getRank() != 5 || pairs.getDimSize(3) != R ||
      pairs.getDimSize(4) != 2 || !swapsDims(tr, 5, 3, 4)) {
    why = "the rope part is not de-interleaved by view(.., R, 2).transpose";
    return failure();
  }
  auto cu = mc.getRhs().getDefiningOp<UnsqueezeOp>();
  auto su = ms.getRhs().getDefiningOp<UnsqueezeOp>();
  if (!cu || !su || cu.getDim() != 1 || su.getDim() != 1) {
    why = "cos/sin are not the rotary table unsqueezed at the heads";
    return failure();
  }
  DeepseekRope r;
  r.input = r1.getInput();
  Value embC, embS, freqS;
  double scaleS;
  if (failed(matchRotaryTable<CosOp>(cu.getInput(), positions, R, embC,
                                     r.invFreq, r.scaling, why)) ||
      failed(matchRotaryTable<SinOp>(su.getInput(), positions, R, embS, freqS,
                                     scaleS, why)))
    return failure();
  if (embC != embS || scaleS != r.scaling) {
    why = "cos and sin are not of one rotary table";
    return failure();
  }
  return r;
}

/// Multi-head latent attention (DeepSeek's Mla block, lib/Import/Blocks/
/// Mla.cpp) -> the latent cache and the absorbed attention. The expanded
/// form attends with per-head keys [k_nope | k_pe] = [W_uk c | k_pe] and
/// values W_uv c, where c is the normalized latent and W_uk/W_uv the key
/// and value halves of kv_b_proj, so
///   q . k = (q_nope W_uk) . c + q_pe . k_pe  and  p V = (p C) W_uv^T:
/// one key/value "head" [c | k_pe] of kv_lora_rank + qk_rope_head_dim
/// values per token serves every query head. The sdpa reads the cache as
/// both key and value (its output's rope part is dropped), so the cache is
/// never copied.
LogicalResult swapMlaAttention(ModuleInstance &inst, RewriterBase &rewriter,
                               std::string &reason) {
  ModelConfigAttr cfg = inst.config;
  const int64_t H = cfg.getNumAttentionHeads(), rope = cfg.getHeadDim(),
                kvl = cfg.getKvLoraRank(), nope = cfg.getQkNopeHeadDim(),
                vd = cfg.getVHeadDim();
  if (H <= 0 || rope <= 0 || kvl <= 0 || nope <= 0 || vd <= 0) {
    reason = "the model config lacks the latent attention sizes";
    return failure();
  }
  LinearOp kvB, oProj;
  BufferReadOp kRead, vRead;
  for (Operation *op : inst.ops) {
    StringRef path = getModulePath(op);
    if (auto lin = dyn_cast<LinearOp>(op)) {
      if (path == inst.path + ".kv_b_proj")
        kvB = lin;
      else if (path == inst.path + ".o_proj")
        oProj = lin;
    } else if (auto r = dyn_cast<BufferReadOp>(op)) {
      if (r.getName() == inst.path + ".k_cache")
        kRead = r;
      else if (r.getName() == inst.path + ".v_cache")
        vRead = r;
    }
  }
  if (!kvB || !oProj || kvB.getBias()) {
    reason = "projections not found (kv_b_proj without bias, o_proj)";
    return failure();
  }
  // The cache updates and what they store: key = cat(k_nope, expand(k_pe)).
  auto copyOf = [&](BufferReadOp read) -> IndexCopyOp {
    if (!read || !read->hasOneUse())
      return IndexCopyOp();
    auto c = dyn_cast<IndexCopyOp>(*read->getUsers().begin());
    return c && c.getInput() == read.getResult() ? c : IndexCopyOp();
  };
  IndexCopyOp kCopy = copyOf(kRead), vCopy = copyOf(vRead);
  if (!kCopy || !vCopy || kCopy.getIndex() != vCopy.getIndex()) {
    reason = "no static KV cache (k_cache/v_cache buffers updated by "
             "index_copy at one set of positions) in the instance";
    return failure();
  }
  Value positions = kCopy.getIndex();
  auto keyCat = kCopy.getSource().getDefiningOp<CatOp>();
  ExpandOp kPeExpand = keyCat && keyCat.getInputs().size() == 2
                           ? keyCat.getInputs()[1].getDefiningOp<ExpandOp>()
                           : ExpandOp();
  if (!kPeExpand) {
    reason = "the cached key is not cat(k_nope, expand(k_pe))";
    return failure();
  }
  Value kPe = kPeExpand.getInput();
  // The query: the other two-part cat of [1, H, S, nope + rope].
  CatOp queryCat;
  for (Operation *op : inst.ops)
    if (auto c = dyn_cast<CatOp>(op); c && c != keyCat &&
                                      c.getInputs().size() == 2 &&
                                      c.getType() == keyCat.getType())
      queryCat = c;
  Value latent = kvB.getInput();
  auto latentType = cast<RankedTensorType>(latent.getType());
  auto kPeType = cast<RankedTensorType>(kPe.getType());
  auto wType = cast<RankedTensorType>(kvB.getWeight().getType());
  auto kType = cast<RankedTensorType>(kRead.getType());
  if (!queryCat || latentType.getRank() != 3 ||
      latentType.getDimSize(2) != kvl || kPeType.getRank() != 4 ||
      kPeType.getDimSize(1) != 1 || kPeType.getDimSize(3) != rope ||
      wType.getShape() != ArrayRef<int64_t>{H * (nope + vd), kvl} ||
      kType.getRank() != 4 || kType.getDimSize(3) != nope + rope) {
    reason = "the query, latent, shared rope key or kv_b_proj do not have "
             "the configuration's sizes";
    return failure();
  }
  Value qNope = queryCat.getInputs()[0], qPe = queryCat.getInputs()[1];
  auto qNopeType = cast<RankedTensorType>(qNope.getType());
  if (qNopeType.getRank() != 4 || qNopeType.getDimSize(1) != H ||
      qNopeType.getDimSize(3) != nope) {
    reason = "the query's non-rotated part is not [1, heads, S, nope]";
    return failure();
  }
  // o_proj reads [1, S, H * v] of the query's element type.
  auto oIn = cast<RankedTensorType>(oProj.getInput().getType());
  if (oIn.getShape() != ArrayRef<int64_t>{1, qNopeType.getDimSize(2), H * vd} ||
      oIn.getElementType() != qNopeType.getElementType()) {
    reason = "o_proj's input is not [1, S, heads * v_head_dim]";
    return failure();
  }
  // The old caches' buffers and write-backs.
  SymbolTable symbols(inst.module);
  auto kBuf = symbols.lookup<BufferOp>(kRead.getName());
  auto vBuf = symbols.lookup<BufferOp>(vRead.getName());
  SmallVector<BufferWriteOp> writes;
  for (Operation *c : {kCopy.getOperation(), vCopy.getOperation()})
    for (Operation *u : c->getUsers())
      if (auto w = dyn_cast<BufferWriteOp>(u))
        writes.push_back(w);
  if (!kBuf || !vBuf || writes.size() != 2) {
    reason = "the k/v cache buffers or their write-backs are missing";
    return failure();
  }

  // The decoupled RoPE of q_pe and k_pe: etllm.rope, its table built once
  // by the kernels (else the decomposed form stays, with a remark).
  std::string whyRope;
  FailureOr<DeepseekRope> qRope = matchDeepseekRope(qPe, positions, whyRope);
  FailureOr<DeepseekRope> kRope =
      succeeded(qRope) ? matchDeepseekRope(kPe, positions, whyRope)
                       : FailureOr<DeepseekRope>(failure());
  const bool fuseRope = succeeded(qRope) && succeeded(kRope) &&
                        qRope->invFreq == kRope->invFreq &&
                        qRope->scaling == kRope->scaling;
  if (!fuseRope)
    oProj->emitRemark() << "etllm-swap-source: kept the decomposed RoPE of '"
                        << inst.path << "': "
                        << (whyRope.empty() ? "q and k use other tables"
                                            : whyRope);

  Location loc = oProj.getLoc();
  auto mk = [&](auto op) {
    setModulePath(op, inst.path);
    return op->getResult(0);
  };
  auto i64 = [&](int64_t v) { return rewriter.getI64IntegerAttr(v); };
  auto dims = [&](ArrayRef<int64_t> d) {
    return rewriter.getDenseI64ArrayAttr(d);
  };
  const int64_t T = kType.getDimSize(2);
  const std::string cacheName = inst.path + ".latent_cache";
  auto cacheType =
      RankedTensorType::get({1, 1, T, kvl + rope}, kType.getElementType());
  rewriter.setInsertionPoint(kBuf);
  rewriter.create<BufferOp>(kBuf.getLoc(), cacheName, cacheType);

  rewriter.setInsertionPoint(oProj);
  if (fuseRope) {
    auto rope = [&](const DeepseekRope &r) {
      return mk(rewriter.create<RopeOp>(
          loc, r.input.getType(), r.input, positions, r.invFreq,
          RopeConventionAttr::get(rewriter.getContext(),
                                  RopeConvention::deinterleave_rotate_half),
          rewriter.getF64FloatAttr(r.scaling)));
    };
    qPe = rope(*qRope);
    kPe = rope(*kRope);
  }
  // The cache row of each new token: [c | k_pe] (the normalized latent and
  // the rotated shared key).
  Value c4 = mk(rewriter.create<ReshapeOp>(loc, latent, dims({1, 1, -1, kvl})));
  Value entry = mk(rewriter.create<CatOp>(loc, ValueRange{c4, kPe}, i64(-1)));
  Value cache = mk(rewriter.create<BufferReadOp>(
      loc, cacheType,
      FlatSymbolRefAttr::get(rewriter.getContext(), cacheName)));
  Value kc = mk(rewriter.create<KvCacheUpdateOp>(loc, cacheType, cache,
                                                 positions, entry, i64(2)));
  // kv_b_proj's halves, per head: [H, nope, kvl] and [H, v, kvl].
  Value w = mk(rewriter.create<ReshapeOp>(loc, kvB.getWeight(),
                                          dims({H, nope + vd, kvl})));
  Value wUk =
      mk(rewriter.create<SliceOp>(loc, w, i64(1), i64(0), i64(nope), i64(1)));
  Value wUv = mk(rewriter.create<SliceOp>(loc, w, i64(1), i64(nope),
                                          i64(nope + vd), i64(1)));
  Value qLat = mk(rewriter.create<MatmulOp>(loc, qNope, wUk));
  Value q = mk(rewriter.create<CatOp>(loc, ValueRange{qLat, qPe}, i64(-1)));
  auto qt = cast<RankedTensorType>(q.getType());
  Value o = mk(rewriter.create<SdpaOp>(
      loc, qt, q, kc, kc, Value(), positions,
      rewriter.getF64FloatAttr(cfg.getAttentionScaleOrDefault()),
      rewriter.getUnitAttr(), i64(0),
      rewriter.getF64FloatAttr(
          cfg.getAttnLogitSoftcapping().convertToDouble())));
  o = mk(rewriter.create<SliceOp>(loc, o, i64(-1), i64(0), i64(kvl), i64(1)));
  Value wUvT = mk(rewriter.create<TransposeOp>(loc, wUv, i64(1), i64(2)));
  o = mk(rewriter.create<MatmulOp>(loc, o, wUvT)); // [1, H, S, v]
  o = mk(rewriter.create<TransposeOp>(loc, o, i64(1), i64(2)));
  o = mk(rewriter.create<ReshapeOp>(loc, o, dims({1, -1, H * vd})));
  rewriter.modifyOpInPlace(oProj, [&] { oProj.getInputMutable().assign(o); });
  // One write-back of the latent cache where the k cache's was.
  rewriter.setInsertionPoint(writes.front());
  rewriter.create<BufferWriteOp>(
      writes.front().getLoc(), kc,
      FlatSymbolRefAttr::get(rewriter.getContext(), cacheName));
  for (BufferWriteOp wr : writes)
    rewriter.eraseOp(wr);
  SmallVector<Operation *> keep = {oProj};
  eraseDead(inst, rewriter, keep);
  for (BufferOp b : {kBuf, vBuf})
    if (SymbolTable::symbolKnownUseEmpty(b, inst.module))
      rewriter.eraseOp(b);
  return success();
}

/// The integer or float value of a splat constant.
std::optional<double> splatNumber(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  if (isa<FloatType>(attr.getElementType()))
    return attr.getSplatValue<APFloat>().convertToDouble();
  if (isa<IntegerType>(attr.getElementType()))
    return double(attr.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

/// v with element-type conversions looked through.
Value throughConverts(Value v) {
  while (auto c = v.getDefiningOp<ConvertOp>())
    v = c.getInput();
  return v;
}

/// The path without its last component ("a.b.c" -> "a.b").
StringRef parentPath(StringRef p) { return p.rsplit('.').first; }

/// One routed expert of the level-A loop: down(silu(gate(h)) * up(h)).
struct ExpertTerm {
  LinearOp gate, up, down;
  ParameterOp gateW, upW, downW;
};

/// Matches y = down(silu(gate(h)) * up(h)) without biases, each weight a
/// parameter.
LogicalResult matchExpert(Value y, Value h, SymbolTable &symbols, ExpertTerm &t,
                          std::string &reason) {
  t.down = y.getDefiningOp<LinearOp>();
  auto mul = t.down ? t.down.getInput().getDefiningOp<MulOp>() : MulOp();
  if (!mul) {
    reason = "an expert's output is not down_proj(act * up)";
    return failure();
  }
  auto silu = mul.getLhs().getDefiningOp<SiluOp>();
  t.up = mul.getRhs().getDefiningOp<LinearOp>();
  t.gate = silu ? silu.getInput().getDefiningOp<LinearOp>() : LinearOp();
  if (!t.gate || !t.up) {
    reason = "an expert is not down_proj(silu(gate_proj(x)) * up_proj(x)) "
             "(only SiLU experts are swapped)";
    return failure();
  }
  if (t.gate.getInput() != h || t.up.getInput() != h) {
    reason = "an expert does not read the block's hidden states";
    return failure();
  }
  for (auto [lin, w] :
       {std::pair{t.gate, &t.gateW}, {t.up, &t.upW}, {t.down, &t.downW}}) {
    auto get = lin.getWeight().getDefiningOp<ParameterGetOp>();
    *w = get ? symbols.lookup<ParameterOp>(get.getName()) : ParameterOp();
    if (lin.getBias() || !*w || !isa<RankedTensorType>(w->getType())) {
      reason = "an expert projection has a bias or a weight that is not a "
               "float parameter";
      return failure();
    }
  }
  return success();
}

/// A parameter [E, ...] stacking `parts` (same type each) along a new
/// leading dimension, declared after the last of them.
ParameterOp stackParameters(MutableArrayRef<ParameterOp> parts, StringRef name,
                            RewriterBase &rewriter, std::string &reason) {
  auto pt = cast<RankedTensorType>(parts.front().getType());
  SmallVector<int64_t> shape = {int64_t(parts.size())};
  llvm::append_range(shape, pt.getShape());
  auto type = RankedTensorType::get(shape, pt.getElementType());
  bool inlineValues = bool(parts.front().getValue());
  StringAttr dtype = parts.front().getSourceDtypeAttr();
  SmallVector<Attribute> sources, values;
  for (ParameterOp p : parts) {
    if (p.getType() != pt || bool(p.getValue()) != inlineValues ||
        p.getQkPermuteHeads() || p.getStack()) {
      reason = "the experts' weights differ in type or storage";
      return ParameterOp();
    }
    if (p.getSourceDtypeAttr() != dtype)
      dtype = StringAttr();
    if (inlineValues) {
      auto dense = dyn_cast<DenseElementsAttr>(*p.getValue());
      if (!dense) {
        reason = "an expert weight's inline value is not dense";
        return ParameterOp();
      }
      llvm::append_range(values, dense.getValues<Attribute>());
    } else {
      sources.push_back(rewriter.getStringAttr(p.getSourceName()));
    }
  }
  rewriter.setInsertionPointAfter(parts.back());
  auto stacked = rewriter.create<ParameterOp>(
      parts.back().getLoc(), name, type,
      inlineValues ? ElementsAttr(DenseElementsAttr::get(type, values))
                   : ElementsAttr(),
      StringAttr(), IntegerAttr(), dtype,
      inlineValues ? ArrayAttr() : rewriter.getArrayAttr(sources));
  return stacked;
}

/// DeepSeek's group selection (lib/Import/Blocks/Moe.cpp's level-A form):
/// `masked` = masked_fill(choice, !bool(reshape(expand(unsqueeze(mask, -1),
/// [-1, G, E/G]), [-1, E])), 0) where mask = sum over dim 1 of
/// float(unsqueeze(group_idx, -1) == arange(0, G)) and group_idx the
/// indices of a top-k over the G groups' ranks. On success `choice` is the
/// unmasked values, `ranks` what that top-k ranks the groups by, and G and
/// topkGroup (its k) are set; how the groups are ranked is the caller's
/// (V2: amax, V3: the sum of the two best).
LogicalResult matchGroupMask(Value masked, int64_t E, Value &choice,
                             Value &ranks, int64_t &G, int64_t &topkGroup,
                             std::string &reason) {
  auto fail = [&](const char *what) {
    reason = std::string("the group-limited selection: ") + what;
    return failure();
  };
  auto mf = masked.getDefiningOp<MaskedFillOp>();
  if (!mf || mf.getValue().convertToDouble() != 0.0)
    return fail("the scores are not masked_fill(scores, mask, 0)");
  auto lnot = mf.getMask().getDefiningOp<LogicalNotOp>();
  auto toBool = lnot ? lnot.getInput().getDefiningOp<ConvertOp>() : ConvertOp();
  auto flat =
      toBool ? toBool.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  auto expand = flat ? flat.getInput().getDefiningOp<ExpandOp>() : ExpandOp();
  auto unsq =
      expand ? expand.getInput().getDefiningOp<UnsqueezeOp>() : UnsqueezeOp();
  auto sum = unsq ? unsq.getInput().getDefiningOp<SumOp>() : SumOp();
  if (!sum || flat.getShape() != ArrayRef<int64_t>{-1, E} ||
      expand.getShape().size() != 3 || unsq.getDim() != -1 ||
      sum.getKeepdim() || sum.getDims() != ArrayRef<int64_t>{1})
    return fail("the mask is not the group mask expanded over the experts");
  G = expand.getShape()[1];
  if (G < 1 || E % G != 0 ||
      expand.getShape() != ArrayRef<int64_t>{-1, G, E / G})
    return fail("the groups do not divide the experts");
  auto toF = sum.getInput().getDefiningOp<ConvertOp>();
  auto eq = toF ? toF.getInput().getDefiningOp<EqOp>() : EqOp();
  auto idxUnsq = eq ? eq.getLhs().getDefiningOp<UnsqueezeOp>() : UnsqueezeOp();
  auto range = eq ? eq.getRhs().getDefiningOp<ArangeOp>() : ArangeOp();
  if (!idxUnsq || idxUnsq.getDim() != -1 || !range || range.getStart() != 0 ||
      range.getEnd() != G || range.getStep() != 1)
    return fail("the group mask is not the one-hot sum of the chosen groups");
  auto groups = idxUnsq.getInput().getDefiningOp<TopKOp>();
  if (!groups || groups.getIndices() != idxUnsq.getInput() ||
      (groups.getDim() != -1 && groups.getDim() != 1))
    return fail("the chosen groups are not a top-k over the groups");
  topkGroup = groups.getK();
  if (topkGroup < 1 || topkGroup > G)
    return fail("topk_group is outside [1, n_group]");
  choice = mf.getInput();
  ranks = groups.getInput();
  return success();
}

/// `v` when it is reshape(choice, [-1, G, E/G]), the per-group view the
/// groups are ranked over; null otherwise.
ReshapeOp groupedView(Value v, Value choice, int64_t G, int64_t E) {
  auto grouped = v.getDefiningOp<ReshapeOp>();
  return grouped && grouped.getShape() == ArrayRef<int64_t>{-1, G, E / G} &&
                 grouped.getInput() == choice
             ? grouped
             : ReshapeOp();
}

/// DeepSeek-V2's group_limited_greedy: the groups ranked by their best
/// score (amax over each group of the scores that are masked). On success,
/// `scores` is the unmasked scores and G, topkGroup are set.
LogicalResult matchGroupLimited(Value masked, int64_t E, Value &scores,
                                int64_t &G, int64_t &topkGroup,
                                std::string &reason) {
  Value choice, ranks;
  if (failed(matchGroupMask(masked, E, choice, ranks, G, topkGroup, reason)))
    return failure();
  auto amax = ranks.getDefiningOp<AmaxOp>();
  if (!amax || amax.getKeepdim() || amax.getDims() != ArrayRef<int64_t>{-1} ||
      !groupedView(amax.getInput(), choice, G, E)) {
    reason = "the group-limited selection: the groups are not ranked by "
             "their best score (amax over each group of the masked scores)";
    return failure();
  }
  scores = choice;
  return success();
}

/// DeepSeek-V3's noaux_tc: `masked` is the group mask over choice =
/// reshape(scores, [-1, E]) + unsqueeze(bias, 0), the groups ranked by the
/// sum of the two best choices of each. On success `scores` is the
/// unbiased scores, `bias` the f32 score-correction bias [E], and G,
/// topkGroup are set.
LogicalResult matchNoauxTc(Value masked, int64_t E, Value &scores, Value &bias,
                           int64_t &G, int64_t &topkGroup,
                           std::string &reason) {
  Value choice, ranks;
  if (failed(matchGroupMask(masked, E, choice, ranks, G, topkGroup, reason)))
    return failure();
  auto fail = [&](const char *what) {
    reason = std::string("the noaux_tc selection: ") + what;
    return failure();
  };
  auto sum = ranks.getDefiningOp<SumOp>();
  auto top2 = sum ? sum.getInput().getDefiningOp<TopKOp>() : TopKOp();
  if (!sum || sum.getKeepdim() || sum.getDims() != ArrayRef<int64_t>{-1} ||
      !top2 || top2.getValues() != sum.getInput() || top2.getK() != 2 ||
      (top2.getDim() != -1 && top2.getDim() != 2) ||
      !groupedView(top2.getInput(), choice, G, E))
    return fail("the groups are not ranked by the sum of their two best "
                "choices");
  auto add = choice.getDefiningOp<AddOp>();
  auto unsq = add ? add.getRhs().getDefiningOp<UnsqueezeOp>() : UnsqueezeOp();
  if (!add || !unsq || unsq.getDim() != 0)
    return fail("the choice is not scores + unsqueeze(bias, 0)");
  bias = unsq.getInput();
  auto bt = dyn_cast<RankedTensorType>(bias.getType());
  if (!bt || bt.getShape() != ArrayRef<int64_t>{E} ||
      !bt.getElementType().isF32() ||
      !throughConverts(bias).getDefiningOp<ParameterGetOp>())
    return fail("the score-correction bias is not a float32 parameter [E]");
  scores = add.getLhs();
  if (auto flat = scores.getDefiningOp<ReshapeOp>();
      flat && flat.getShape() == ArrayRef<int64_t>{-1, E})
    scores = flat.getInput();
  return success();
}

/// A sparse mixture-of-experts block (lib/Import/Blocks/Moe.cpp's level-A
/// form: the router linear, softmax or sigmoid, topk, the optional
/// renormalization and scale, then the masked loop over every expert
///   final = final + expert_j(h) * sum(where(selected == j, weights, 0)))
/// -> one etllm.moe over stacked expert weights that computes only the
/// selected experts. Everything else in the block (the shared expert and
/// its gate, the reshapes) stays as it is.
LogicalResult swapSparseMoe(ModuleInstance &inst, RewriterBase &rewriter,
                            std::string &reason) {
  if (inst.moe == "masked") {
    reason = "moe=masked keeps the level-A loop over every expert";
    return failure();
  }
  SymbolTable symbols(inst.module);
  // The accumulator: full_like(h, 0), then one add per expert.
  FullLikeOp zeros;
  for (Operation *op : inst.ops)
    if (auto f = dyn_cast<FullLikeOp>(op);
        f && f.getValue().convertToDouble() == 0.0) {
      if (zeros) {
        reason = "more than one accumulator (full_like 0)";
        return failure();
      }
      zeros = f;
    }
  if (!zeros) {
    reason = "no expert accumulator (full_like 0) in the block";
    return failure();
  }
  Value h = zeros.getInput();
  auto ht = cast<RankedTensorType>(h.getType());
  if (ht.getRank() != 2 || ShapedType::isDynamic(ht.getDimSize(1))) {
    reason = "the experts' input is not [tokens, hidden]";
    return failure();
  }
  const int64_t D = ht.getDimSize(1);
  Value acc = zeros.getResult();
  SmallVector<ExpertTerm> experts;
  Value selected, weights;
  AddOp last;
  while (acc.hasOneUse()) {
    auto add = dyn_cast<AddOp>(*acc.getUsers().begin());
    auto term = add && add.getLhs() == acc ? add.getRhs().getDefiningOp<MulOp>()
                                           : MulOp();
    if (!term)
      break;
    const int64_t j = int64_t(experts.size());
    // w_j = sum(where(selected == j, weights, 0), -1, keepdim)
    auto sum = term.getRhs().getDefiningOp<SumOp>();
    auto where = sum ? sum.getInput().getDefiningOp<WhereOp>() : WhereOp();
    if (!where)
      break; // past the loop (Qwen2-MoE's gated shared expert is added next)
    auto eq = where ? where.getCondition().getDefiningOp<EqOp>() : EqOp();
    std::optional<double> index = eq ? splatNumber(eq.getRhs()) : std::nullopt;
    std::optional<double> other =
        where ? splatNumber(where.getOnFalse()) : std::nullopt;
    if (!sum || !sum.getKeepdim() || sum.getDims() != ArrayRef<int64_t>{-1} ||
        !index || *index != double(j) || !other || *other != 0.0) {
      reason = "expert " + std::to_string(j) +
               "'s weight is not sum(where(selected == " + std::to_string(j) +
               ", weights, 0), -1)";
      return failure();
    }
    if (j == 0) {
      selected = eq.getLhs();
      weights = where.getOnTrue();
    } else if (eq.getLhs() != selected || where.getOnTrue() != weights) {
      reason = "the experts read different routings";
      return failure();
    }
    ExpertTerm t;
    if (failed(matchExpert(term.getLhs(), h, symbols, t, reason)))
      return failure();
    experts.push_back(t);
    acc = add.getResult();
    last = add;
  }
  if (experts.empty()) {
    reason = "no expert terms on the accumulator";
    return failure();
  }
  const int64_t E = int64_t(experts.size());
  // The routing: weights = [convert]([mul scale]([div by sum](topk values))).
  Value w = throughConverts(weights);
  double scale = 1.0;
  if (auto mul = w.getDefiningOp<MulOp>()) {
    std::optional<double> s = splatNumber(mul.getRhs());
    if (!s || !(*s > 0)) {
      reason = "the routing weights are scaled by a non-constant";
      return failure();
    }
    scale = *s;
    w = mul.getLhs();
  }
  bool norm = false;
  double normEps = 0.0;
  if (auto div = w.getDefiningOp<DivOp>()) {
    Value den = div.getRhs();
    if (auto addEps = den.getDefiningOp<AddOp>()) {
      std::optional<double> eps = splatNumber(addEps.getRhs());
      if (!eps || *eps < 0) {
        reason = "the renormalization adds a non-constant";
        return failure();
      }
      normEps = *eps;
      den = addEps.getLhs();
    }
    auto sum = den.getDefiningOp<SumOp>();
    if (!sum || sum.getInput() != div.getLhs() || !sum.getKeepdim() ||
        sum.getDims() != ArrayRef<int64_t>{-1}) {
      reason = "the routing weights are divided by something other than "
               "their sum";
      return failure();
    }
    norm = true;
    w = div.getLhs();
  }
  // The weights are the top-k's values, or (noaux_tc) the unbiased scores
  // gathered at the top-k's indices.
  auto gather = w.getDefiningOp<GatherOp>();
  auto topk = gather ? gather.getIndex().getDefiningOp<TopKOp>()
                     : w.getDefiningOp<TopKOp>();
  if (!topk || (!gather && topk.getValues() != w) ||
      topk.getIndices() != selected ||
      (topk.getDim() != -1 && topk.getDim() != 1) ||
      (gather && gather.getDim() != 1 && gather.getDim() != -1)) {
    reason = "the experts are not selected by one top-k over the experts "
             "(values as weights, or the scores gathered at its indices; "
             "indices as the selection)";
    return failure();
  }
  const int64_t k = topk.getK();
  Value scores = topk.getInput(), scoreBias;
  RouterSelection selection = RouterSelection::greedy;
  int64_t nGroup = 1, topkGroup = 1;
  if (gather) {
    if (failed(matchNoauxTc(scores, E, scores, scoreBias, nGroup, topkGroup,
                            reason)))
      return failure();
    if (gather.getInput() != scores) {
      reason = "the noaux_tc weights are not the unbiased scores gathered "
               "at the selected experts";
      return failure();
    }
    selection = RouterSelection::noaux_tc;
  } else if (scores.getDefiningOp<MaskedFillOp>()) {
    if (failed(matchGroupLimited(scores, E, scores, nGroup, topkGroup, reason)))
      return failure();
    selection = RouterSelection::group_limited_greedy;
  }
  RouterScoring scoring;
  Value logits;
  if (auto sm = scores.getDefiningOp<SoftmaxOp>()) {
    if (sm.getDim() != 1 && sm.getDim() != -1) {
      reason = "the softmax is not over the experts";
      return failure();
    }
    scoring = RouterScoring::softmax;
    logits = sm.getInput();
  } else if (auto sg = scores.getDefiningOp<SigmoidOp>()) {
    scoring = RouterScoring::sigmoid;
    logits = sg.getInput();
  } else {
    reason = "the router scores are neither softmax nor sigmoid";
    return failure();
  }
  if (!cast<RankedTensorType>(scores.getType()).getElementType().isF32()) {
    reason = "the router scores are not float32";
    return failure();
  }
  auto router = throughConverts(logits).getDefiningOp<LinearOp>();
  Value routerW = router ? throughConverts(router.getWeight()) : Value();
  auto routerGet =
      routerW ? routerW.getDefiningOp<ParameterGetOp>() : ParameterGetOp();
  if (!router || router.getBias() || throughConverts(router.getInput()) != h ||
      !routerGet) {
    reason = "the router is not a linear of the hidden states by a "
             "parameter, without bias";
    return failure();
  }
  auto rt = cast<RankedTensorType>(routerW.getType());
  if (rt.getShape() != ArrayRef<int64_t>{E, D}) {
    reason = "the router has " + std::to_string(rt.getDimSize(0)) +
             " experts, the loop " + std::to_string(E);
    return failure();
  }
  // The experts' shapes.
  auto gt = cast<RankedTensorType>(experts.front().gateW.getType());
  const int64_t F = gt.getDimSize(0);
  for (ExpertTerm &t : experts)
    if (t.gateW.getType() != gt || t.upW.getType() != gt ||
        cast<RankedTensorType>(t.downW.getType()).getShape() !=
            ArrayRef<int64_t>{D, F} ||
        gt.getShape() != ArrayRef<int64_t>{F, D}) {
      reason = "the experts' projections do not all have the same shapes";
      return failure();
    }
  // The stacked parameter of a projection: "<experts>.<proj>.weight" from
  // expert j's "<experts>.<j>.<proj>".
  auto stackedName = [&](LinearOp lin) {
    StringRef p = getModulePath(lin);
    return (parentPath(parentPath(p)) + "." + p.rsplit('.').second + ".weight")
        .str();
  };
  std::string names[3] = {stackedName(experts.front().gate),
                          stackedName(experts.front().up),
                          stackedName(experts.front().down)};
  for (const std::string &n : names)
    if (n.front() == '.' || symbols.lookup(n)) {
      reason = "no free name for the stacked expert weights ('" + n + "')";
      return failure();
    }
  SmallVector<ParameterOp> gates, ups, downs;
  for (ExpertTerm &t : experts) {
    gates.push_back(t.gateW);
    ups.push_back(t.upW);
    downs.push_back(t.downW);
  }
  OpBuilder::InsertionGuard guard(rewriter);
  ParameterOp stacked[3];
  SmallVector<ParameterOp> *lists[3] = {&gates, &ups, &downs};
  for (int i = 0; i < 3; ++i) {
    stacked[i] = stackParameters(*lists[i], names[i], rewriter, reason);
    if (!stacked[i]) {
      for (int j = 0; j < i; ++j)
        rewriter.eraseOp(stacked[j]);
      return failure();
    }
  }
  rewriter.setInsertionPointAfter(last);
  Location loc = last.getLoc();
  auto mk = [&](auto op) {
    setModulePath(op, inst.path);
    return op->getResult(0);
  };
  Value ws[3];
  for (int i = 0; i < 3; ++i)
    ws[i] = mk(rewriter.create<ParameterGetOp>(
        loc, stacked[i].getType(), FlatSymbolRefAttr::get(stacked[i])));
  auto moe = rewriter.create<MoeOp>(
      loc, ht, h, routerW, ws[0], ws[1], ws[2], scoreBias,
      rewriter.getI64IntegerAttr(k),
      RouterScoringAttr::get(rewriter.getContext(), scoring),
      RouterSelectionAttr::get(rewriter.getContext(), selection),
      rewriter.getI64IntegerAttr(nGroup), rewriter.getI64IntegerAttr(topkGroup),
      norm ? rewriter.getUnitAttr() : UnitAttr(),
      rewriter.getF64FloatAttr(scale), rewriter.getF64FloatAttr(normEps));
  setModulePath(moe, inst.path);
  rewriter.replaceAllUsesWith(last.getResult(), moe.getResult());
  eraseDead(inst, rewriter);
  // The per-expert weights nobody reads any more.
  for (SmallVector<ParameterOp> *list : lists)
    for (ParameterOp p : *list)
      if (SymbolTable::symbolKnownUseEmpty(p, inst.module))
        rewriter.eraseOp(p);
  return success();
}

/// Multi-head latent attention with its expanded caches (mla-cache=
/// expanded): the attention stays (fuse-sdpa fuses it over the caches); its
/// decoupled RoPE on q_pe and k_pe becomes etllm.rope as in the latent
/// form. The key cached is cat(k_nope, expand(k_pe)), the query the other
/// cat of the same type.
LogicalResult fuseExpandedMlaRope(ModuleInstance &inst, RewriterBase &rewriter,
                                  std::string &reason) {
  IndexCopyOp kCopy;
  for (Operation *op : inst.ops)
    if (auto r = dyn_cast<BufferReadOp>(op);
        r && r.getName() == inst.path + ".k_cache" && r->hasOneUse())
      kCopy = dyn_cast<IndexCopyOp>(*r->getUsers().begin());
  auto keyCat = kCopy ? kCopy.getSource().getDefiningOp<CatOp>() : CatOp();
  ExpandOp kPeExpand = keyCat && keyCat.getInputs().size() == 2
                           ? keyCat.getInputs()[1].getDefiningOp<ExpandOp>()
                           : ExpandOp();
  CatOp queryCat;
  for (Operation *op : inst.ops)
    if (auto c = dyn_cast<CatOp>(op); c && keyCat && c != keyCat &&
                                      c.getInputs().size() == 2 &&
                                      c.getType() == keyCat.getType())
      queryCat = c;
  if (!kPeExpand || !queryCat) {
    reason = "multi-head latent attention keeps its expanded cache "
             "(mla-cache=expanded; fuse-sdpa fuses it), and its key is not "
             "cat(k_nope, expand(k_pe)) into k_cache";
    return failure();
  }
  Value positions = kCopy.getIndex();
  Value qPe = queryCat.getInputs()[1], kPe = kPeExpand.getInput();
  std::string why;
  FailureOr<DeepseekRope> qRope = matchDeepseekRope(qPe, positions, why);
  FailureOr<DeepseekRope> kRope = succeeded(qRope)
                                      ? matchDeepseekRope(kPe, positions, why)
                                      : FailureOr<DeepseekRope>(failure());
  if (failed(qRope) || failed(kRope) || qRope->invFreq != kRope->invFreq ||
      qRope->scaling != kRope->scaling) {
    reason = "multi-head latent attention keeps its expanded cache "
             "(mla-cache=expanded; fuse-sdpa fuses it), and its RoPE stays "
             "decomposed: " +
             (why.empty() ? std::string("q and k use other tables") : why);
    return failure();
  }
  for (auto [old, r] : {std::pair{qPe, *qRope}, std::pair{kPe, *kRope}}) {
    rewriter.setInsertionPointAfter(old.getDefiningOp());
    auto rope = rewriter.create<RopeOp>(
        old.getLoc(), r.input.getType(), r.input, positions, r.invFreq,
        RopeConventionAttr::get(rewriter.getContext(),
                                RopeConvention::deinterleave_rotate_half),
        rewriter.getF64FloatAttr(r.scaling));
    setModulePath(rope, inst.path);
    rewriter.replaceAllUsesWith(old, rope.getResult());
  }
  eraseDead(inst, rewriter);
  queryCat->emitRemark() << "etllm-swap-source: multi-head latent attention '"
                         << inst.path
                         << "' keeps its expanded cache (mla-cache=expanded; "
                            "fuse-sdpa fuses it); its RoPE is etllm.rope";
  return success();
}

/// Attention with a static cache -> rope + kv_cache.update + sdpa.
LogicalResult swapAttention(ModuleInstance &inst, RewriterBase &rewriter,
                            std::string &reason) {
  ModelConfigAttr cfg = inst.config;
  if (!cfg) {
    reason = "the module has no etllm.model_config";
    return failure();
  }
  if (cfg.getKvLoraRank() > 0) {
    if (inst.mlaCache == "latent")
      return swapMlaAttention(inst, rewriter, reason);
    return fuseExpandedMlaRope(inst, rewriter, reason);
  }
  int64_t H = cfg.getNumAttentionHeads(), Hkv = cfg.getNumKeyValueHeads(),
          D = cfg.getHeadDim();
  if (H <= 0 || Hkv <= 0 || D <= 0) {
    reason = "the model config lacks head counts";
    return failure();
  }
  double scale = cfg.getAttentionScaleOrDefault();
  double softcap = cfg.getAttnLogitSoftcapping().convertToDouble();
  double eps = cfg.getRmsNormEps().convertToDouble();
  if (eps <= 0)
    eps = 1e-6;
  int64_t window = 0;
  {
    // Layer index from "....layers.N.self_attn".
    StringRef p(inst.path);
    size_t at = p.find("layers.");
    int64_t layer = -1;
    if (at != StringRef::npos)
      p.substr(at + 7).split('.').first.getAsInteger(10, layer);
    window = cfg.getLayerWindow(layer);
  }

  // Projections (kept), caches, positions.
  LinearOp qProj, kProj, vProj, qkvProj, oProj;
  BufferReadOp kRead, vRead;
  Value positions;
  for (Operation *op : inst.ops) {
    StringRef path = getModulePath(op);
    if (auto lin = dyn_cast<LinearOp>(op)) {
      if (path == inst.path + ".q_proj")
        qProj = lin;
      else if (path == inst.path + ".k_proj")
        kProj = lin;
      else if (path == inst.path + ".v_proj")
        vProj = lin;
      else if (path == inst.path + ".qkv_proj")
        qkvProj = lin;
      else if (path == inst.path + ".o_proj")
        oProj = lin;
    } else if (auto r = dyn_cast<BufferReadOp>(op)) {
      if (r.getName() == inst.path + ".k_cache")
        kRead = r;
      else if (r.getName() == inst.path + ".v_cache")
        vRead = r;
    } else if (auto c = dyn_cast<IndexCopyOp>(op)) {
      positions = c.getIndex();
    }
  }
  if (!oProj || !(qkvProj || (qProj && kProj && vProj))) {
    reason = "projections not found (q/k/v/o_proj or qkv_proj)";
    return failure();
  }
  if (!kRead || !vRead || !positions) {
    reason = "no static KV cache (k_cache/v_cache buffers updated by "
             "index_copy) in the instance";
    return failure();
  }
  // inv_freq: the frequency table of the rotary embedding this attention
  // reads (a model may have two: Gemma 3's sliding-window layers use
  // "rotary_emb_local", the others "rotary_emb").
  Value invFreq;
  double ropeScaling = 1.0;
  func::FuncOp fn = inst.ops.front()->getParentOfType<func::FuncOp>();
  auto classes = inst.module->getAttrOfType<DictionaryAttr>(
      EtllmDialect::kModuleClassesAttrName);
  auto isRotary = [&](StringRef path) {
    auto cls = classes && !path.empty() ? classes.getAs<StringAttr>(path)
                                        : StringAttr();
    return cls && cls.getValue().ends_with("RotaryEmbedding");
  };
  std::string rotaryPath;
  for (Operation *op : inst.ops)
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (StringRef p = getModulePath(def); isRotary(p)) {
          if (!rotaryPath.empty() && rotaryPath != p) {
            reason = "the attention reads two rotary embeddings ('" +
                     rotaryPath + "', '" + p.str() + "')";
            return failure();
          }
          rotaryPath = p.str();
        }
  fn.walk([&](Operation *op) {
    StringRef path = getModulePath(op);
    if (!isRotary(path) || (!rotaryPath.empty() && path != rotaryPath))
      return;
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto t = cast<RankedTensorType>(c.getType());
      if (t.getRank() == 1 && t.getElementType().isF32() && t.getDimSize(0) > 1)
        invFreq = c.getResult();
    }
    if (auto mul = dyn_cast<MulOp>(op))
      if (mul.getLhs().getDefiningOp<CosOp>())
        if (std::optional<double> s = splat(mul.getRhs()))
          ropeScaling = *s;
  });
  if (!invFreq) {
    reason = "no rotary frequency table (a *RotaryEmbedding constant)";
    return failure();
  }
  if (2 * cast<RankedTensorType>(invFreq.getType()).getDimSize(0) > D) {
    reason = "the rotary table is larger than the head";
    return failure();
  }
  // Per-head q/k norms: x * w (Qwen3) or x * (1 + w) (Gemma 3 from an HF
  // checkpoint, whose graph adds 1 to the weight, or an rms_norm with offset
  // 1 once the norm module itself was swapped).
  Value qNormW, kNormW;
  for (Operation *op : inst.ops)
    if (auto g = dyn_cast<ParameterGetOp>(op)) {
      if (g.getName() == inst.path + ".q_norm.weight")
        qNormW = g.getResult();
      if (g.getName() == inst.path + ".k_norm.weight")
        kNormW = g.getResult();
    }
  auto normOffset = [&](Value w) {
    double offset = 0.0;
    if (!w)
      return offset;
    for (Operation *user : w.getUsers()) {
      if (auto add = dyn_cast<AddOp>(user))
        if (add.getLhs() == w && splat(add.getRhs()) == 1.0)
          offset = 1.0;
      if (auto n = dyn_cast<RmsNormOp>(user))
        offset = n.getWeightOffset().convertToDouble();
    }
    return offset;
  };
  const double qNormOffset = normOffset(qNormW),
               kNormOffset = normOffset(kNormW);

  Location loc = oProj.getLoc();
  rewriter.setInsertionPoint(oProj);
  auto mk = [&](auto op) {
    setModulePath(op, inst.path);
    return op->getResult(0);
  };
  auto i64 = [&](int64_t v) { return rewriter.getI64IntegerAttr(v); };
  Value qLin, kLin, vLin;
  if (qkvProj) {
    Value qkv = qkvProj.getResult();
    int64_t end = std::numeric_limits<int64_t>::max();
    qLin = mk(rewriter.create<SliceOp>(loc, qkv, i64(-1), i64(0), i64(H * D),
                                       i64(1)));
    kLin = mk(rewriter.create<SliceOp>(loc, qkv, i64(-1), i64(H * D),
                                       i64((H + Hkv) * D), i64(1)));
    vLin = mk(rewriter.create<SliceOp>(loc, qkv, i64(-1), i64((H + Hkv) * D),
                                       i64(end), i64(1)));
  } else {
    qLin = qProj.getResult();
    kLin = kProj.getResult();
    vLin = vProj.getResult();
  }
  auto heads = [&](Value x, int64_t n, Value normW, double offset) {
    Value r = mk(rewriter.create<ReshapeOp>(
        loc, x, rewriter.getDenseI64ArrayAttr({1, -1, n, D})));
    if (normW)
      r = mk(rewriter.create<RmsNormOp>(loc, r.getType(), r, normW,
                                        rewriter.getF64FloatAttr(eps),
                                        rewriter.getF64FloatAttr(offset)));
    return mk(rewriter.create<TransposeOp>(loc, r, i64(1), i64(2)));
  };
  auto rope = [&](Value x) {
    return mk(rewriter.create<RopeOp>(
        loc, x.getType(), x, positions, invFreq,
        RopeConventionAttr::get(rewriter.getContext(),
                                RopeConvention::rotate_half),
        rewriter.getF64FloatAttr(ropeScaling)));
  };
  Value q = rope(heads(qLin, H, qNormW, qNormOffset));
  Value k = rope(heads(kLin, Hkv, kNormW, kNormOffset));
  Value v = heads(vLin, Hkv, Value(), 0.0);
  auto update = [&](BufferReadOp oldRead, Value val) {
    Value cache = mk(rewriter.create<BufferReadOp>(loc, oldRead.getType(),
                                                   oldRead.getNameAttr()));
    return mk(rewriter.create<KvCacheUpdateOp>(loc, cache.getType(), cache,
                                               positions, val, i64(2)));
  };
  Value kc = update(kRead, k), vc = update(vRead, v);
  auto qt = cast<RankedTensorType>(q.getType());
  Value o = mk(rewriter.create<SdpaOp>(
      loc, qt, q, kc, vc, Value(), positions, rewriter.getF64FloatAttr(scale),
      rewriter.getUnitAttr(), i64(window), rewriter.getF64FloatAttr(softcap)));
  o = mk(rewriter.create<TransposeOp>(loc, o, i64(1), i64(2)));
  o = mk(rewriter.create<ReshapeOp>(
      loc, o, rewriter.getDenseI64ArrayAttr({1, -1, H * D})));
  if (o.getType() != oProj.getInput().getType()) {
    reason = "the rebuilt attention output does not match o_proj's input";
    // Undo: everything new is unused.
    for (Operation *op = o.getDefiningOp(); op;) {
      Operation *prev = op->getPrevNode();
      bool isNew = op->isBeforeInBlock(oProj) && op->use_empty() &&
                   !llvm::is_contained(inst.ops, op);
      if (!isNew)
        break;
      rewriter.eraseOp(op);
      op = prev;
    }
    return failure();
  }
  rewriter.modifyOpInPlace(oProj, [&] { oProj.getInputMutable().assign(o); });
  // The old functional updates were written back; write the new values.
  for (Operation *op : inst.ops)
    if (auto c = dyn_cast<IndexCopyOp>(op)) {
      Value repl = c.getInput() == kRead.getResult()   ? kc
                   : c.getInput() == vRead.getResult() ? vc
                                                       : Value();
      if (!repl)
        continue;
      for (OpOperand &use : llvm::make_early_inc_range(c->getUses()))
        if (isa<BufferWriteOp>(use.getOwner()))
          rewriter.modifyOpInPlace(use.getOwner(), [&] { use.set(repl); });
    }
  SmallVector<Operation *> keep = {oProj};
  eraseDead(inst, rewriter, keep);
  return success();
}

} // namespace

void registerBuiltinSourceSwaps() {
  registerSourceSwap("RMSNorm", swapRmsNorm);
  registerSourceSwap("Attention", swapAttention);
  registerSourceSwap("SparseMoeBlock", swapSparseMoe);
  // A family whose sparse block has another class name (DeepSeek's
  // "DeepseekV2Moe", "DeepseekV3MoE": MoeSpec::blockClass after the class
  // prefix), taken from the family registry.
  for (const models::FamilySpec *f : models::families()) {
    if (f->blocks.mlp != models::MlpBlock::SparseMoe)
      continue;
    std::string cls = std::string(f->classPrefix) + f->moe.blockClass;
    if (!llvm::StringRef(cls).ends_with("SparseMoeBlock"))
      registerSourceSwap(cls, swapSparseMoe);
  }
}

} // namespace etllm

namespace {

struct SwapSourcePass
    : public ::etllm::impl::SwapSourcePassBase<SwapSourcePass> {
  using SwapSourcePassBase::SwapSourcePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (mlaCache != "expanded" && mlaCache != "latent") {
      module.emitError() << "etllm-swap-source: mla-cache must be expanded "
                            "or latent, got '"
                         << mlaCache << "'";
      return signalPassFailure();
    }
    if (moe != "experts" && moe != "masked") {
      module.emitError() << "etllm-swap-source: moe must be experts or "
                            "masked, got '"
                         << moe << "'";
      return signalPassFailure();
    }
    auto classTable = module->getAttrOfType<DictionaryAttr>(
        EtllmDialect::kModuleClassesAttrName);
    if (!classTable)
      return; // no module information: nothing to swap (fuse-sdpa's job)
    ModelConfigAttr config = getModelConfig(module);
    // Instances to swap, grouped by matched suffix in registry order so that
    // norms inside attention go first.
    std::map<std::string, std::vector<std::pair<std::string, std::string>>>
        bySuffix;
    for (NamedAttribute entry : classTable) {
      auto cls = dyn_cast<StringAttr>(entry.getValue());
      if (!cls)
        continue;
      std::string suffix;
      if (!::etllm::findSourceSwap(cls.getValue(), &suffix))
        continue;
      if (!classes.empty() && !llvm::is_contained(classes, suffix))
        continue;
      bySuffix[suffix].push_back({entry.getName().str(), cls.str()});
    }
    IRRewriter rewriter(&getContext());
    for (const char *order : {"RMSNorm", "Attention"})
      for (auto &[suffix, list] : bySuffix)
        if (suffix == order)
          runInstances(module, config, suffix, list, rewriter);
    for (auto &[suffix, list] : bySuffix)
      if (suffix != "RMSNorm" && suffix != "Attention")
        runInstances(module, config, suffix, list, rewriter);
  }

  void runInstances(ModuleOp module, ModelConfigAttr config,
                    const std::string &suffix,
                    std::vector<std::pair<std::string, std::string>> &list,
                    IRRewriter &rewriter) {
    const ::etllm::SourceSwapFn *fn =
        ::etllm::findSourceSwap(list.front().second);
    for (auto &[path, cls] : list) {
      ::etllm::ModuleInstance inst;
      inst.path = path;
      inst.klass = cls;
      inst.config = config;
      inst.module = module;
      inst.mlaCache = mlaCache;
      inst.moe = moe;
      module.walk([&](Operation *op) {
        if (!isa<ModuleOp, func::FuncOp>(op) && inst.contains(op))
          inst.ops.push_back(op);
      });
      if (inst.ops.empty())
        continue;
      std::string reason;
      if (failed((*fn)(inst, rewriter, reason))) {
        inst.ops.front()->emitRemark()
            << "etllm-swap-source: left " << cls << " instance '" << path
            << "' alone: " << reason;
        LLVM_DEBUG(llvm::dbgs() << "skip " << path << ": " << reason << "\n");
      }
    }
  }
};

} // namespace
