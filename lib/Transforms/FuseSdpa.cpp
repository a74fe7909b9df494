//===- FuseSdpa.cpp - Decomposed attention to etllm.sdpa ------------------===//
#include "Matchers.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#include <cmath>

#define DEBUG_TYPE "etllm-fuse-sdpa"

namespace etllm {
#define GEN_PASS_DEF_FUSESDPAPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;
using ::etllm::matchers::rankOf;
using ::etllm::matchers::skipConvert;
using ::etllm::matchers::splat;
using ::etllm::matchers::throughUnitDims;

namespace {

/// Replaces `old` with the new sdpa `fused` (given `old`'s module path)
/// when `fused` verifies; otherwise erases it and fails the match.
LogicalResult replaceWithFused(PatternRewriter &rewriter, Operation *old,
                               SdpaOp fused) {
  if (StringRef path = getModulePath(old); !path.empty())
    setModulePath(fused, path);
  if (failed(mlir::verify(fused, /*verifyRecursively=*/false))) {
    rewriter.eraseOp(fused);
    return rewriter.notifyMatchFailure(old, "the fused op would not verify");
  }
  rewriter.replaceOp(old, fused.getResult());
  return success();
}

/// k = reshape(expand(unsqueeze(k0, 2), [b, hkv, n, t, d]), [b, hkv*n, t, d])
/// -> k0 (repeat_kv). Otherwise returns `v` itself.
Value stripRepeatKv(Value v) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return v;
  auto expand = reshape.getInput().getDefiningOp<ExpandOp>();
  if (!expand)
    return v;
  auto unsq = expand.getInput().getDefiningOp<UnsqueezeOp>();
  if (!unsq || unsq.getDim() != 2 || rankOf(unsq.getInput()) != 4)
    return v;
  auto base = cast<RankedTensorType>(unsq.getInput().getType());
  auto out = cast<RankedTensorType>(reshape.getType());
  ArrayRef<int64_t> e = expand.getShape();
  if (e.size() != 5 || out.getRank() != 4 || base.isDynamicDim(1) ||
      out.isDynamicDim(1) || e[1] != base.getDimSize(1) || e[2] <= 0 ||
      out.getDimSize(1) != e[1] * e[2])
    return v;
  if (!reshape->hasOneUse() || !expand->hasOneUse() || !unsq->hasOneUse())
    return v;
  return unsq.getInput();
}

/// True when `t` swaps the last two dims of a rank-4 value.
Value transposedLastTwo(Value v) {
  if (auto t = v.getDefiningOp<TransposeOp>()) {
    if (rankOf(t.getInput()) != 4)
      return {};
    int64_t a = t.getDim0() < 0 ? t.getDim0() + 4 : t.getDim0();
    int64_t b = t.getDim1() < 0 ? t.getDim1() + 4 : t.getDim1();
    if ((a == 2 && b == 3) || (a == 3 && b == 2))
      return t.getInput();
  }
  if (auto p = v.getDefiningOp<PermuteOp>())
    if (p.getDims() == ArrayRef<int64_t>{0, 1, 3, 2})
      return p.getInput();
  return {};
}

struct FuseAttention : public OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp pv,
                                PatternRewriter &rewriter) const override {
    // probs: [convert] softmax(dim -1) [convert]
    Value probs = pv.getLhs();
    Operation *probsConvert = probs.getDefiningOp<ConvertOp>();
    auto softmax = skipConvert(probs).getDefiningOp<SoftmaxOp>();
    if (!softmax)
      return rewriter.notifyMatchFailure(pv, "lhs is not a softmax");
    int64_t rank = rankOf(softmax.getInput());
    if (rank != 4 || (softmax.getDim() != -1 && softmax.getDim() != 3))
      return rewriter.notifyMatchFailure(pv, "softmax is not over the keys");
    Value scores = softmax.getInput();
    Operation *scoresConvert = scores.getDefiningOp<ConvertOp>();
    scores = skipConvert(scores);

    // + mask
    Value mask;
    SmallVector<Operation *> chain = {softmax};
    if (probsConvert)
      chain.push_back(probsConvert);
    if (scoresConvert)
      chain.push_back(scoresConvert);
    if (auto add = scores.getDefiningOp<AddOp>()) {
      // The scores side is the one that leads to a matmul.
      auto leadsToQk = [](Value v) {
        for (int i = 0; i < 6 && v; ++i) {
          Operation *d = v.getDefiningOp();
          if (!d)
            return false;
          if (isa<MatmulOp>(d))
            return true;
          if (d->getNumOperands() == 0)
            return false;
          v = d->getOperand(0);
        }
        return false;
      };
      Value a = add.getLhs(), b = add.getRhs();
      if (leadsToQk(a)) {
        scores = a;
        mask = b;
      } else if (leadsToQk(b)) {
        scores = b;
        mask = a;
      } else {
        return rewriter.notifyMatchFailure(pv, "no scores under the add");
      }
      chain.push_back(add);
    }

    // soft-capping: mul(tanh(div(s, c)), c)
    double softcap = 0;
    if (auto mul = scores.getDefiningOp<MulOp>()) {
      if (auto tanh = mul.getLhs().getDefiningOp<TanhOp>()) {
        if (auto div = tanh.getInput().getDefiningOp<DivOp>()) {
          std::optional<double> c1 = splat(mul.getRhs()),
                                c2 = splat(div.getRhs());
          if (!c1 || !c2 || *c1 != *c2 || *c1 <= 0)
            return rewriter.notifyMatchFailure(pv, "soft-cap constants differ");
          softcap = *c1;
          scores = div.getLhs();
          chain.append({mul, tanh, div});
        }
      }
    }

    // scale: mul(qk, c) | mul(c, qk) | div(qk, c)
    double scale = 1.0;
    Value qk = scores;
    if (auto mul = scores.getDefiningOp<MulOp>()) {
      std::optional<double> c = splat(mul.getRhs());
      Value other = mul.getLhs();
      if (!c) {
        c = splat(mul.getLhs());
        other = mul.getRhs();
      }
      if (!c)
        return rewriter.notifyMatchFailure(pv, "scale is not a splat constant");
      scale = *c;
      qk = other;
      chain.push_back(mul);
    } else if (auto div = scores.getDefiningOp<DivOp>()) {
      std::optional<double> c = splat(div.getRhs());
      if (!c || *c == 0)
        return rewriter.notifyMatchFailure(pv, "divisor is not a constant");
      scale = 1.0 / *c;
      qk = div.getLhs();
      chain.push_back(div);
    }
    auto qkMatmul = qk.getDefiningOp<MatmulOp>();
    if (!qkMatmul)
      return rewriter.notifyMatchFailure(pv, "no q @ k^T matmul");
    chain.push_back(qkMatmul);
    Value q = qkMatmul.getLhs();
    Value kRep = transposedLastTwo(qkMatmul.getRhs());
    if (!kRep)
      return rewriter.notifyMatchFailure(pv, "k is not transposed");
    chain.push_back(qkMatmul.getRhs().getDefiningOp());
    Value k = stripRepeatKv(kRep);
    Value v = stripRepeatKv(pv.getRhs());

    // Every intermediate value is used only inside the pattern.
    for (Operation *op : chain)
      if (!op->hasOneUse())
        return rewriter.notifyMatchFailure(pv,
                                           "an intermediate has other uses");
    if (rankOf(q) != 4 || rankOf(k) != 4 || rankOf(v) != 4)
      return rewriter.notifyMatchFailure(pv, "operands are not rank 4");
    auto qt = cast<RankedTensorType>(q.getType());
    auto kt = cast<RankedTensorType>(k.getType());
    auto vt = cast<RankedTensorType>(v.getType());
    if (qt.getElementType() != kt.getElementType() ||
        qt.getElementType() != vt.getElementType())
      return rewriter.notifyMatchFailure(pv, "q, k, v element types differ");
    if (kt.isDynamicDim(1) || vt.getDimSize(1) != kt.getDimSize(1) ||
        qt.isDynamicDim(1) || qt.getDimSize(1) % kt.getDimSize(1) != 0)
      return rewriter.notifyMatchFailure(pv, "heads do not group");
    if (!(scale > 0) || !std::isfinite(scale))
      return rewriter.notifyMatchFailure(pv, "scale is not positive");
    if (mask) {
      auto mt = cast<RankedTensorType>(mask.getType());
      if (!isa<FloatType>(mt.getElementType()) || mt.getRank() > 4)
        return rewriter.notifyMatchFailure(pv, "mask is not an additive float");
    }
    auto resultType = cast<RankedTensorType>(pv.getType());
    auto sdpa = rewriter.create<SdpaOp>(
        pv.getLoc(), resultType, q, k, v, mask, Value(),
        rewriter.getF64FloatAttr(scale), UnitAttr(),
        rewriter.getI64IntegerAttr(0), rewriter.getF64FloatAttr(softcap));
    return replaceWithFused(rewriter, pv, sdpa);
  }
};

/// mask = reshape(where(C, very negative, 0), [1, 1, -1, T]) with
/// C = gt(arange(0..T), reshape(pos, [-1, 1]))
///   [| le(arange, sub(reshape(pos), W))]
/// -> causal + positions (+ window).
struct CausalMaskToPositions : public OpRewritePattern<SdpaOp> {
  using OpRewritePattern::OpRewritePattern;

  static Value queryPositions(Value v) {
    auto r = v.getDefiningOp<ReshapeOp>();
    if (!r || r.getShape() != ArrayRef<int64_t>{-1, 1} ||
        rankOf(r.getInput()) != 1)
      return {};
    return r.getInput();
  }
  static bool isKeyRange(Value v, int64_t t) {
    auto a = v.getDefiningOp<ArangeOp>();
    return a && a.getStart() == 0 && a.getStep() == 1 && a.getEnd() == t;
  }

  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    Value mask = op.getMask();
    if (!mask || op.getCausal())
      return failure();
    auto keyType = dyn_cast<RankedTensorType>(op.getKey().getType());
    if (!keyType) // a quantized cache: attention fused already
      return failure();
    int64_t keys = keyType.getDimSize(2);
    Value m = mask;
    if (auto r = m.getDefiningOp<ReshapeOp>()) {
      ArrayRef<int64_t> s = r.getShape();
      if (s.size() != 4 || s[0] != 1 || s[1] != 1 || s[3] != keys)
        return rewriter.notifyMatchFailure(op,
                                           "mask reshape is not [1,1,-1,T]");
      m = r.getInput();
    }
    auto where = m.getDefiningOp<WhereOp>();
    if (!where)
      return rewriter.notifyMatchFailure(op, "mask is not a where");
    std::optional<double> lo = splat(where.getOnTrue());
    std::optional<double> zero = splat(where.getOnFalse());
    if (!lo || !zero || *zero != 0.0 || *lo > -65504.0)
      return rewriter.notifyMatchFailure(op, "mask values are not (min, 0)");
    Value cond = where.getCondition();
    int64_t window = 0;
    Value positions;
    auto matchCausal = [&](Value c) -> Value {
      auto gt = c.getDefiningOp<GtOp>();
      if (!gt || !isKeyRange(gt.getLhs(), keys))
        return {};
      return queryPositions(gt.getRhs());
    };
    if (auto orOp = cond.getDefiningOp<LogicalOrOp>()) {
      positions = matchCausal(orOp.getLhs());
      auto le = orOp.getRhs().getDefiningOp<LeOp>();
      if (!positions || !le || !isKeyRange(le.getLhs(), keys))
        return rewriter.notifyMatchFailure(op, "not a sliding-window mask");
      auto sub = le.getRhs().getDefiningOp<SubOp>();
      std::optional<double> w = sub ? splat(sub.getRhs()) : std::nullopt;
      if (!sub || !w || *w <= 0 || queryPositions(sub.getLhs()) != positions)
        return rewriter.notifyMatchFailure(op, "window term does not match");
      window = int64_t(*w);
    } else {
      positions = matchCausal(cond);
    }
    if (!positions)
      return rewriter.notifyMatchFailure(op, "not a causal mask");
    auto posType = cast<RankedTensorType>(positions.getType());
    if (failed(verifyCompatibleShape(
            posType.getShape(),
            ArrayRef<int64_t>{op.getQuery().getType().getDimSize(2)})))
      return rewriter.notifyMatchFailure(op, "positions do not match queries");
    auto fused = rewriter.create<SdpaOp>(
        op.getLoc(), op.getType(), op.getQuery(), op.getKey(), op.getValue(),
        Value(), positions, op.getScaleAttr(), rewriter.getUnitAttr(),
        rewriter.getI64IntegerAttr(window), op.getSoftcapAttr());
    return replaceWithFused(rewriter, op, fused);
  }
};

/// mask = where(C, 0, lowest): a boolean "attend" mask made additive, as the
/// ATen importer maps scaled_dot_product_attention's boolean attn_mask, with
///   C = le(K, Q) [& gt(K, sub(Q, W))] [& true]
/// K the key index (arange(0..T) [+ 0]) along the last dimension, Q query
/// positions [S] along the one before -> causal + positions Q (+ window W).
/// This is the mask transformers builds (masking_utils) under torch.export.
struct AttendMaskToPositions : public OpRewritePattern<SdpaOp> {
  using OpRewritePattern::OpRewritePattern;

  /// The shape [1, ..., 1, n] (last) or [1, ..., n, 1] (second to last).
  static bool onlyAlong(Value v, int64_t fromEnd) {
    auto t = cast<RankedTensorType>(v.getType());
    int64_t r = t.getRank();
    if (r < 2)
      return false;
    for (int64_t i = 0; i < r; ++i)
      if (i != r - fromEnd && t.getDimSize(i) != 1)
        return false;
    return true;
  }
  static bool isKeyIndex(Value v, int64_t keys) {
    if (!onlyAlong(v, 1))
      return false;
    v = throughUnitDims(v);
    if (auto add = v.getDefiningOp<AddOp>()) {
      std::optional<double> z = splat(add.getRhs());
      if (!z || *z != 0.0)
        return false;
      v = add.getLhs();
    }
    auto a = v.getDefiningOp<ArangeOp>();
    return a && a.getStart() == 0 && a.getStep() == 1 && a.getEnd() == keys;
  }
  static Value queryPositions(Value v) {
    if (!onlyAlong(v, 2))
      return {};
    Value p = throughUnitDims(v);
    auto pt = cast<RankedTensorType>(p.getType());
    if (pt.getRank() != 1 || !isa<IntegerType>(pt.getElementType()))
      return {};
    return p;
  }
  static void terms(Value c, SmallVectorImpl<Value> &out) {
    c = throughUnitDims(c);
    if (auto a = c.getDefiningOp<LogicalAndOp>()) {
      terms(a.getLhs(), out);
      terms(a.getRhs(), out);
      return;
    }
    out.push_back(c);
  }
  static bool isTrue(Value v) {
    if (std::optional<double> s = splat(v))
      return *s != 0.0;
    if (auto f = v.getDefiningOp<FullOp>())
      return f.getValue().convertToDouble() != 0.0;
    return false;
  }

  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    Value mask = op.getMask();
    if (!mask || op.getCausal() || op.getPositions())
      return failure();
    auto keyType = dyn_cast<RankedTensorType>(op.getKey().getType());
    if (!keyType) // a quantized cache: attention fused already
      return failure();
    int64_t keys = keyType.getDimSize(2);
    auto where = throughUnitDims(mask).getDefiningOp<WhereOp>();
    if (!where)
      return rewriter.notifyMatchFailure(op, "mask is not a where");
    std::optional<double> zero = splat(where.getOnTrue());
    std::optional<double> lo = splat(where.getOnFalse());
    if (!lo || !zero || *zero != 0.0 || *lo > -65504.0)
      return rewriter.notifyMatchFailure(op, "mask values are not (0, min)");
    SmallVector<Value> cs;
    terms(where.getCondition(), cs);
    Value positions;
    LeOp causalTerm;
    GtOp windowTerm;
    for (Value c : cs) {
      if (isTrue(c))
        continue;
      if (auto le = c.getDefiningOp<LeOp>(); le && !causalTerm) {
        causalTerm = le;
        continue;
      }
      if (auto gt = c.getDefiningOp<GtOp>(); gt && !windowTerm) {
        windowTerm = gt;
        continue;
      }
      return rewriter.notifyMatchFailure(op, "a mask term is not causal");
    }
    if (!causalTerm || !isKeyIndex(causalTerm.getLhs(), keys) ||
        !(positions = queryPositions(causalTerm.getRhs())))
      return rewriter.notifyMatchFailure(op, "no key <= query term");
    int64_t window = 0;
    if (windowTerm) {
      auto sub = windowTerm.getRhs().getDefiningOp<SubOp>();
      // 0 (no window) when the term is not `positions - W` with a splat W.
      const double w = sub ? splat(sub.getRhs()).value_or(0.0) : 0.0;
      if (!isKeyIndex(windowTerm.getLhs(), keys) || w < 1 ||
          w != std::floor(w) || queryPositions(sub.getLhs()) != positions)
        return rewriter.notifyMatchFailure(op, "window term does not match");
      window = int64_t(w);
    }
    if (failed(verifyCompatibleShape(
            cast<RankedTensorType>(positions.getType()).getShape(),
            ArrayRef<int64_t>{op.getQuery().getType().getDimSize(2)})))
      return rewriter.notifyMatchFailure(op, "positions do not match queries");
    auto fused = rewriter.create<SdpaOp>(
        op.getLoc(), op.getType(), op.getQuery(), op.getKey(), op.getValue(),
        Value(), positions, op.getScaleAttr(), rewriter.getUnitAttr(),
        rewriter.getI64IntegerAttr(window), op.getSoftcapAttr());
    return replaceWithFused(rewriter, op, fused);
  }
};

/// sdpa(q, repeat_kv(k), repeat_kv(v)) -> sdpa(q, k, v): etllm.sdpa groups
/// query heads over key/value heads itself (an imported
/// scaled_dot_product_attention gets its keys and values repeated).
struct SdpaWithoutRepeatKv : public OpRewritePattern<SdpaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    Value k = stripRepeatKv(op.getKey()), v = stripRepeatKv(op.getValue());
    if (k == op.getKey() || v == op.getValue())
      return rewriter.notifyMatchFailure(op, "keys and values not repeated");
    auto kt = cast<RankedTensorType>(k.getType());
    auto vt = cast<RankedTensorType>(v.getType());
    if (kt.getDimSize(1) != vt.getDimSize(1))
      return rewriter.notifyMatchFailure(op, "keys and values group unlike");
    rewriter.modifyOpInPlace(op, [&] {
      op.getKeyMutable().assign(k);
      op.getValueMutable().assign(v);
    });
    return success();
  }
};

struct FuseSdpaPass : public ::etllm::impl::FuseSdpaPassBase<FuseSdpaPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttention, CausalMaskToPositions, AttendMaskToPositions,
                 SdpaWithoutRepeatKv>(&getContext());
    GreedyRewriteConfig config;
    config.useTopDownTraversal = true;
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns),
                                            config)))
      signalPassFailure();
  }
};

} // namespace
