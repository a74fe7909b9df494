//===- KernelCalls.cpp - etllm ops as runtime kernel calls ----------------===//
#include "etllm/Serialize/KernelCalls.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {
ArrayRef<int64_t> shapeOf(Type t) {
  if (auto q = dyn_cast<QWeightType>(t))
    return q.getShape();
  if (auto q = dyn_cast<QActType>(t))
    return q.getShape();
  return cast<RankedTensorType>(t).getShape();
}

rt::QuantInfo quantInfoOf(Type t) {
  rt::QuantInfo info;
  if (auto q = dyn_cast<QWeightType>(t)) {
    info.bits = q.getBits();
    info.groupSize = q.getGroupSize();
    info.symmetric = q.getSymmetric();
    info.scaleType = q.getScaleType().isF16() ? rt::DType::F16 : rt::DType::F32;
  } else if (auto q = dyn_cast<QActType>(t)) {
    info.bits = q.getBits();
    info.symmetric = q.getSymmetric();
    info.perToken = q.getGranularity() == ActQuantGranularity::per_token;
    info.scaleType = rt::DType::F32;
  }
  return info;
}

FailureOr<rt::DType> runtimeDType(Operation *op, Type t) {
  if (isa<QWeightType>(t))
    return rt::DType::QWeight;
  if (isa<QActType>(t))
    return rt::DType::QAct;
  auto tt = dyn_cast<RankedTensorType>(t);
  if (!tt)
    return op->emitError("cannot serialize values of type ") << t;
  Type e = tt.getElementType();
  if (e.isF32())
    return rt::DType::F32;
  if (e.isF16())
    return rt::DType::F16;
  if (e.isBF16())
    return rt::DType::BF16;
  if (e.isInteger(64))
    return rt::DType::I64;
  if (e.isInteger(32))
    return rt::DType::I32;
  if (e.isInteger(8))
    return rt::DType::I8;
  if (e.isInteger(1))
    return rt::DType::Bool;
  return op->emitError("cannot serialize element type ") << e;
}

FailureOr<KernelCall> describeKernelCall(Operation *op) {
  KernelCall in;
  auto i64 = [&](int64_t v) { in.ints.push_back(v); };
  auto f64 = [&](double v) { in.floats.push_back(v); };
  auto done = [&](StringRef name) -> LogicalResult {
    in.op = name.str();
    return success();
  };
  LogicalResult result =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          // Element-wise and simple ops: name = mnemonic.
          .Case<NegOp, AbsOp, RsqrtOp, SqrtOp, ExpOp, LogOp, CosOp, SinOp,
                TanhOp, SigmoidOp, SiluOp, ReluOp, LogicalNotOp, ConvertOp,
                AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp,
                LogicalAndOp, LogicalOrOp, EqOp, NeOp, LtOp, LeOp, GtOp, GeOp,
                WhereOp, MatmulOp, LinearOp, EmbeddingOp, QuantizeDynamicOp,
                QLinearOp, QEmbeddingOp, DequantizeOp>(
              [&](Operation *o) { return done(o->getName().stripDialect()); })
          .Case([&](GeluOp g) {
            i64(g.getApproximate() == GeluApproximation::tanh ? 1 : 0);
            return done("gelu");
          })
          .Case([&](MaskedFillOp m) {
            f64(m.getValue().convertToDouble());
            return done("masked_fill");
          })
          .Case<SumOp, MeanOp, AmaxOp>([&](Operation *o) {
            auto dims = o->getAttrOfType<DenseI64ArrayAttr>("dims");
            i64(o->hasAttr("keepdim") ? 1 : 0);
            for (int64_t d : dims.asArrayRef())
              i64(d);
            return done(o->getName().stripDialect());
          })
          .Case([&](SoftmaxOp s) {
            i64(s.getDim());
            return done("softmax");
          })
          .Case([&](ArangeOp a) {
            i64(a.getStart());
            i64(a.getEnd());
            i64(a.getStep());
            return done("arange");
          })
          .Case([&](FullOp f) {
            f64(f.getValue().convertToDouble());
            return done("full");
          })
          .Case([&](FullLikeOp f) {
            f64(f.getValue().convertToDouble());
            return done("full_like");
          })
          .Case([&](TriuOp t) {
            i64(t.getDiagonal());
            return done("triu");
          })
          .Case([&](TrilOp t) {
            i64(t.getDiagonal());
            return done("tril");
          })
          .Case([&](TransposeOp t) {
            i64(t.getDim0());
            i64(t.getDim1());
            return done("transpose");
          })
          .Case([&](PermuteOp p) {
            for (int64_t d : p.getDims())
              i64(d);
            return done("permute");
          })
          .Case([&](ReshapeOp r) {
            for (int64_t d : r.getShape())
              i64(d);
            return done("reshape");
          })
          .Case([&](UnsqueezeOp u) {
            i64(u.getDim());
            return done("unsqueeze");
          })
          .Case([&](SqueezeOp s) {
            i64(s.getDim());
            return done("squeeze");
          })
          .Case([&](ExpandOp e) {
            for (int64_t d : e.getShape())
              i64(d);
            return done("expand");
          })
          .Case([&](SliceOp s) {
            i64(s.getDim());
            i64(s.getStart());
            i64(s.getEnd());
            i64(s.getStep());
            return done("slice");
          })
          .Case([&](CatOp c) {
            i64(c.getDim());
            return done("cat");
          })
          .Case([&](SplitOp s) {
            i64(s.getDim());
            for (int64_t d : s.getSizes())
              i64(d);
            return done("split");
          })
          .Case([&](IndexSelectOp s) {
            i64(s.getDim());
            return done("index_select");
          })
          .Case([&](GatherOp g) {
            i64(g.getDim());
            return done("gather");
          })
          .Case([&](IndexCopyOp c) {
            i64(c.getDim());
            return done("index_copy");
          })
          .Case([&](IndexPutOp p) {
            i64(p.getDim());
            i64(p.getAccumulate() ? 1 : 0);
            return done("index_put");
          })
          .Case([&](RmsNormOp n) {
            f64(n.getEps().convertToDouble());
            f64(n.getWeightOffset().convertToDouble());
            return done("rms_norm");
          })
          .Case([&](LayerNormOp n) {
            i64(n.getWeight() ? 1 : 0);
            i64(n.getBias() ? 1 : 0);
            f64(n.getEps().convertToDouble());
            return done("layer_norm");
          })
          .Case([&](RopeOp r) {
            i64(r.getConvention() == RopeConvention::interleaved ? 1 : 0);
            f64(r.getAttentionScaling().convertToDouble());
            return done("rope");
          })
          .Case([&](SdpaOp s) {
            i64(s.getMask() ? 1 : 0);
            i64(s.getPositions() ? 1 : 0);
            i64(s.getCausal() ? 1 : 0);
            i64(s.getSlidingWindow());
            f64(s.getScale().convertToDouble());
            f64(s.getSoftcap().convertToDouble());
            return done("sdpa");
          })
          .Case([&](KvCacheUpdateOp u) {
            i64(u.getDim());
            return done("kv_cache_update");
          })
          .Default([&](Operation *) { return failure(); });
  if (failed(result))
    return failure();
  return in;
}
} // namespace etllm
