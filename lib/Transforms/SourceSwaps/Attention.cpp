//===- Attention.cpp - Attention to rope + cache + sdpa -------------------===//
//
// The attention swap: a decoder attention with a static cache becomes
// etllm.rope, etllm.kv_cache.update and etllm.sdpa; multi-head latent
// attention goes to Mla.cpp.
//
//===----------------------------------------------------------------------===//
#include "SwapUtils.h"

#include "etllm/runtime/llm/method_names.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::swaps {

/// Attention with a static cache -> rope + kv_cache.update + sdpa.
LogicalResult swapAttention(ModuleInstance &inst, RewriterBase &rewriter,
                            std::string &reason) {
  ModelConfigAttr cfg = inst.config;
  if (!cfg) {
    reason = "the module has no etllm.model_config";
    return failure();
  }
  if (cfg.getMla()) {
    if (inst.mlaCache == ::etllm::MlaCacheForm::Latent)
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
  LinearOp qProj = linearAt(inst, "q_proj"), kProj = linearAt(inst, "k_proj"),
           vProj = linearAt(inst, "v_proj"),
           qkvProj = linearAt(inst, "qkv_proj"),
           oProj = linearAt(inst, "o_proj");
  BufferReadOp kRead = cacheRead(inst, "k_cache"),
               vRead = cacheRead(inst, "v_cache");
  Value positions;
  for (Operation *op : inst.ops)
    if (auto c = dyn_cast<IndexCopyOp>(op))
      positions = c.getIndex();
  if (!oProj || !(qkvProj || (qProj && kProj && vProj))) {
    reason = "projections not found (q/k/v/o_proj or qkv_proj)";
    return failure();
  }
  if (!kRead || !vRead || !positions) {
    reason = "no static KV cache (k_cache/v_cache buffers updated by "
             "index_copy) in the instance";
    return failure();
  }
  func::FuncOp fn = inst.ops.front()->getParentOfType<func::FuncOp>();
  // A composite model's text_decoder whose image positions see each other
  // (Gemma 3) keeps the mask the model built (the scores' addend from
  // outside the instance); fuse-sdpa makes what it can of it causal
  // positions. Elsewhere the mask is the causal one the positions give.
  Value mask;
  if (VisionConfigAttr vision = cfg.getVision();
      vision && vision.getImageBidirectional() &&
      fn.getSymName() == ::etllm::rt::llm::kTextDecoderMethod) {
    for (Operation *op : inst.ops)
      if (auto add = dyn_cast<AddOp>(op))
        if (Operation *def = add.getRhs().getDefiningOp();
            def && !llvm::is_contained(inst.ops, def) &&
            rankOf(add.getRhs()) == 4)
          mask = add.getRhs();
    if (!mask) {
      reason = "the image-bidirectional text_decoder's attention adds no "
               "mask to its scores";
      return failure();
    }
  }
  // inv_freq: the frequency table of the rotary embedding this attention
  // reads (a model may have two: Gemma 3's sliding-window layers use
  // "rotary_emb_local", the others "rotary_emb").
  Value invFreq;
  double ropeScaling = 1.0;
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
        if (std::optional<double> s = floatSplat(mul.getRhs()))
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
        if (add.getLhs() == w && floatSplat(add.getRhs()) == 1.0)
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
  Value o = mk(
      mask ? rewriter.create<SdpaOp>(loc, qt, q, kc, vc, mask, Value(),
                                     rewriter.getF64FloatAttr(scale),
                                     UnitAttr(), i64(0),
                                     rewriter.getF64FloatAttr(softcap))
           : rewriter.create<SdpaOp>(loc, qt, q, kc, vc, Value(), positions,
                                     rewriter.getF64FloatAttr(scale),
                                     rewriter.getUnitAttr(), i64(window),
                                     rewriter.getF64FloatAttr(softcap)));
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

} // namespace etllm::swaps
