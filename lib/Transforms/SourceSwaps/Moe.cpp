//===- Moe.cpp - Sparse mixture-of-experts blocks -------------------------===//
//
// The sparse MoE swap: router, top-k selection (greedy, group-limited,
// noaux_tc) and every expert as a masked term -> one etllm.moe over stacked
// expert weights.
//
//===----------------------------------------------------------------------===//
#include "SwapUtils.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::swaps {

namespace {

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

} // namespace

/// A sparse mixture-of-experts block (lib/Import/Blocks/Moe.cpp's level-A
/// form: the router linear, softmax or sigmoid, topk, the optional
/// renormalization and scale, then the masked loop over every expert
///   final = final + expert_j(h) * sum(where(selected == j, weights, 0)))
/// -> one etllm.moe over stacked expert weights that computes only the
/// selected experts. Everything else in the block (the shared expert and
/// its gate, the reshapes) stays as it is.
LogicalResult swapSparseMoe(ModuleInstance &inst, RewriterBase &rewriter,
                            std::string &reason) {
  if (inst.moe == ::etllm::MoeMode::Masked) {
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
    std::optional<double> index = eq ? splat(eq.getRhs()) : std::nullopt;
    std::optional<double> other =
        where ? splat(where.getOnFalse()) : std::nullopt;
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
    std::optional<double> s = splat(mul.getRhs());
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
      std::optional<double> eps = splat(addEps.getRhs());
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

} // namespace etllm::swaps
