//===- Mla.cpp - Multi-head latent attention ------------------------------===//
//
// DeepSeek's multi-head latent attention: its decoupled RoPE, the latent
// cache form (mla-cache=latent) and the expanded form's RoPE.
//
//===----------------------------------------------------------------------===//
#include "SwapUtils.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::swaps {

namespace {

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
    std::optional<double> sc = floatSplat(m.getRhs());
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

} // namespace

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
  MlaConfigAttr mla = cfg.getMla();
  if (!mla) {
    reason = "the model config has no latent attention (mla) group";
    return failure();
  }
  const int64_t H = cfg.getNumAttentionHeads(), rope = cfg.getHeadDim(),
                kvl = mla.getKvLoraRank(), nope = mla.getQkNopeHeadDim(),
                vd = mla.getVHeadDim();
  if (H <= 0 || rope <= 0 || kvl <= 0 || nope <= 0 || vd <= 0) {
    reason = "the model config lacks the latent attention sizes";
    return failure();
  }
  LinearOp kvB = linearAt(inst, "kv_b_proj"), oProj = linearAt(inst, "o_proj");
  BufferReadOp kRead = cacheRead(inst, "k_cache"),
               vRead = cacheRead(inst, "v_cache");
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

} // namespace etllm::swaps
