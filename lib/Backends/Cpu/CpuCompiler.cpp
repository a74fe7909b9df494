//===- CpuCompiler.cpp - Compiler half of the CPU backend -----------------===//
//
// The optimized CPU backend ("cpu": etllm's own kernels; it was called
// "xnnpack", after ExecuTorch's CPU delegate, whose library it never used).
// Legality: f32 activations, static innermost dimension, and the ops its
// runtime half has optimized kernels for (linear/qlinear with parameter
// weights, dynamic activation quantization per token or per block,
// element-wise math, RMSNorm).
// Serialization: the subgraph as an EXN1 flatbuffer whose constants are
// program constants, linear weights packed into the kernels' layouts.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Dialect/Etllm/MoeActivations.h"
#include "etllm/Lowering/KernelCalls.h"
#include "etllm/Lowering/WeightStore.h"
#include "etllm/Target/Backend.h"
#include "etllm/runtime/tensor.h"

#include "etllm/runtime/cpu/backend.h"
#include "etllm/runtime/cpu/packing.h"
#include "etllm/schema/cpu_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::etllm;
namespace xfb = ::etllm::cpu;
namespace rt = ::etllm::rt;

namespace etllm {
namespace {

bool isF32Tensor(Type t, bool allowDynamicLast = false) {
  auto tt = dyn_cast<RankedTensorType>(t);
  return tt && tt.getElementType().isF32() && tt.getRank() >= 1 &&
         tt.getRank() <= 4 &&
         (allowDynamicLast || !tt.isDynamicDim(tt.getRank() - 1));
}

bool isF32Scalar(Type t) {
  auto tt = dyn_cast<RankedTensorType>(t);
  return tt && tt.getElementType().isF32() && tt.getRank() == 0;
}

bool isParam(Value v) { return v && v.getDefiningOp<ParameterGetOp>(); }

bool isIndexVector(Type t) {
  auto tt = dyn_cast<RankedTensorType>(t);
  return tt && tt.getRank() == 1 &&
         (tt.getElementType().isInteger(64) ||
          tt.getElementType().isInteger(32));
}

/// Stacked expert weights the moe kernel packs per expert: a parameter
/// !etllm.qweight [E, N, K] whose groups the block layout holds.
bool isPackableExperts(Value v) {
  auto w = dyn_cast<QWeightType>(v.getType());
  // (Experts of a ggml scheme run on the portable kernel.)
  return isParam(v) && w && w.getRank() == 3 && !w.isGgml() &&
         rt::cpu::PackedQBlockLayout::supports(w.getShape().back(),
                                               quantInfoOf(w));
}

bool isF32Rank4(Type t) {
  auto tt = dyn_cast<RankedTensorType>(t);
  return tt && tt.getRank() == 4 && isF32Tensor(t);
}

/// A KV cache attention.cpp reads: f32, or int8 with one scale per token
/// and head (model.kv_cache_dtype: int8).
bool isKvCache(Type t) {
  auto q = dyn_cast<QActType>(t);
  return isF32Rank4(t) || (q && q.isKvCacheLayout());
}

/// A constant view of an f32 parameter: the parameter read through
/// reshapes, slices and transposes (the MLA swap's per-head halves of
/// kv_b_proj). A matmul's right-hand side of this
/// form becomes one constant at export (the view materialized), so a
/// decode step reads the weight once instead of copying it through views.
struct ParamView {
  ParameterGetOp get;
  SmallVector<Operation *> chain; // from the parameter to the value
};

std::optional<ParamView> paramView(Value v) {
  ParamView pv;
  while (Operation *d = v.getDefiningOp()) {
    if (auto g = dyn_cast<ParameterGetOp>(d)) {
      auto t = dyn_cast<RankedTensorType>(g.getType());
      if (!t || !t.getElementType().isF32() || !t.hasStaticShape())
        return std::nullopt;
      pv.get = g;
      std::reverse(pv.chain.begin(), pv.chain.end());
      return pv;
    }
    if (!isa<ReshapeOp, SliceOp, TransposeOp>(d) ||
        !cast<RankedTensorType>(d->getResult(0).getType()).hasStaticShape())
      return std::nullopt;
    if (auto sl = dyn_cast<SliceOp>(d); sl && sl.getStep() < 1)
      return std::nullopt;
    pv.chain.push_back(d);
    v = d->getOperand(0);
  }
  return std::nullopt;
}

/// A 2-D weight that is an f32 parameter read through reshapes only (a
/// patch embedding's convolution weight [D, C, P, P] as the linear's
/// [D, C*P*P]): one constant at export, packed as any linear weight.
bool isReshapedParam(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  std::optional<ParamView> pv = paramView(v);
  return t && t.getRank() == 2 && pv && !pv->chain.empty() &&
         llvm::all_of(pv->chain,
                      [](Operation *o) { return isa<ReshapeOp>(o); });
}

/// What a ParamView computes, as plain data (the export materializes it
/// after the subgraph is gone): the parameter's shape, then per op its kind
/// ('r'eshape, 's'lice: dim, start, step; 't'ranspose: dims) and result shape.
struct ViewSteps {
  SmallVector<int64_t> shape;
  struct Step {
    char kind;
    int64_t a = 0, b = 0, c = 0;
    SmallVector<int64_t> out;
  };
  std::vector<Step> steps;
  std::string name; // shared by every delegate that reads the view
};

ViewSteps describeView(ParamView pv) {
  ViewSteps v;
  auto t = cast<RankedTensorType>(pv.get.getType());
  v.shape.assign(t.getShape().begin(), t.getShape().end());
  v.name = "cpu/" + pv.get.getName().str() + "@view";
  SmallVector<int64_t> shape = v.shape;
  for (Operation *op : pv.chain) {
    ViewSteps::Step st;
    auto out = cast<RankedTensorType>(op->getResult(0).getType()).getShape();
    st.out.assign(out.begin(), out.end());
    const int64_t rank = int64_t(shape.size());
    auto norm = [&](int64_t d) { return d < 0 ? d + rank : d; };
    if (auto sl = dyn_cast<SliceOp>(op)) {
      st.kind = 's';
      st.a = norm(sl.getDim());
      int64_t start =
          sl.getStart() < 0 ? sl.getStart() + shape[st.a] : sl.getStart();
      st.b = std::clamp<int64_t>(start, 0, shape[st.a]);
      st.c = sl.getStep();
      v.name += llvm::formatv(".slice{0}:{1}:{2}", st.a, st.b, st.c).str();
    } else if (auto tr = dyn_cast<TransposeOp>(op)) {
      st.kind = 't';
      st.a = norm(tr.getDim0());
      st.b = norm(tr.getDim1());
      v.name += llvm::formatv(".transpose{0}:{1}", st.a, st.b).str();
    } else {
      st.kind = 'r';
      v.name += ".reshape";
    }
    for (int64_t d : st.out)
      v.name += ":" + std::to_string(d);
    shape = st.out;
    v.steps.push_back(std::move(st));
  }
  return v;
}

/// The values of the view (row-major in its shape) from the parameter's:
/// reshape keeps the order, slice and transpose gather.
std::vector<float> evaluateView(const ViewSteps &v, std::vector<float> x) {
  SmallVector<int64_t> shape = v.shape;
  for (const ViewSteps::Step &st : v.steps) {
    if (st.kind == 'r') {
      shape = st.out;
      continue;
    }
    // out[idx] = x[offset + sum_d idx[d] * src[d]].
    const int64_t rank = int64_t(shape.size());
    SmallVector<int64_t> src(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      src[d] = src[d + 1] * shape[d + 1];
    int64_t offset = 0;
    if (st.kind == 's') {
      offset = st.b * src[st.a];
      src[st.a] *= st.c;
    } else {
      std::swap(src[st.a], src[st.b]);
    }
    int64_t n = 1;
    for (int64_t e : st.out)
      n *= e;
    std::vector<float> y(static_cast<size_t>(n));
    SmallVector<int64_t> idx(rank, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t at = offset;
      for (int64_t d = 0; d < rank; ++d)
        at += idx[d] * src[d];
      y[size_t(i)] = x[size_t(at)];
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < st.out[d])
          break;
        idx[d] = 0;
      }
    }
    x = std::move(y);
    shape = st.out;
  }
  return x;
}

class CpuCompiler : public BackendCompiler {
public:
  llvm::StringRef id() const override { return rt::cpu::kBackendId; }
  llvm::ArrayRef<const char *> formerIds() const override {
    return rt::cpu::kFormerBackendIds;
  }
  llvm::StringRef description() const override {
    return "optimized CPU kernels: packed int4/int8/f32 linear layers, "
           "dynamic int8 activations, element-wise math and RMSNorm";
  }

  bool isLegal(Operation *op) const override {
    return llvm::TypeSwitch<Operation *, bool>(op)
        .Case([](LinearOp l) {
          return isF32Tensor(l.getType()) &&
                 (isParam(l.getWeight()) || isReshapedParam(l.getWeight())) &&
                 isF32Tensor(l.getInput().getType()) &&
                 (!l.getBias() || isParam(l.getBias()));
        })
        .Case([](QLinearOp l) {
          bool actOk = isa<QActType>(l.getInput().getType()) ||
                       isF32Tensor(l.getInput().getType());
          return actOk && isF32Tensor(l.getType()) && isParam(l.getWeight()) &&
                 (!l.getBias() || isParam(l.getBias()));
        })
        // A LoRA hook (runs the adapters applied at run time; the portable
        // kernel, on the delegate's memory).
        .Case([](LoraOp h) {
          return isF32Tensor(h.getInput().getType()) &&
                 isF32Tensor(h.getBase().getType());
        })
        .Case([](QuantizeDynamicOp q) {
          auto t = cast<QActType>(q.getType());
          return isF32Tensor(q.getInput().getType()) && t.getBits() == 8 &&
                 t.getGranularity() != ActQuantGranularity::per_tensor;
        })
        // Element-wise arithmetic; an operand may be an f32 scalar (rank 0:
        // Granite's multipliers, Gemma's embedding scale and softcap), which
        // the kernels broadcast. (div has no fast path: the delegate runs the
        // portable kernel, which keeps the layer in one region.)
        .Case<AddOp, SubOp, MulOp, DivOp>([](Operation *o) {
          return llvm::all_of(o->getOperandTypes(),
                              [](Type t) {
                                return isF32Tensor(t, true) || isF32Scalar(t);
                              }) &&
                 isF32Tensor(o->getResult(0).getType());
        })
        .Case<SiluOp, GeluOp, SigmoidOp, TanhOp, ReluOp>(
            [](Operation *o) { return isF32Tensor(o->getResult(0).getType()); })
        // Latent attention (MLA's absorbed form): the batched matmul of
        // activations [B, H, S, K] by a constant per-head weight [H, K, N]
        // (a view of a parameter, materialized at export); the splits and
        // cats of the query and cache row, and (expanded caches) the shared
        // rope key's expand over the heads: the portable kernels, inside
        // the call.
        .Case([](MatmulOp m) {
          auto rt = dyn_cast<RankedTensorType>(m.getRhs().getType());
          return isF32Rank4(m.getLhs().getType()) &&
                 isF32Tensor(m.getType(), true) && rt && rt.getRank() == 3 &&
                 paramView(m.getRhs());
        })
        .Case<SplitOp, CatOp, ExpandOp>([](Operation *o) {
          return llvm::all_of(o->getOperandTypes(),
                              [](Type t) { return isF32Tensor(t, true); }) &&
                 llvm::all_of(o->getResultTypes(),
                              [](Type t) { return isF32Tensor(t, true); });
        })
        .Case([](RmsNormOp n) {
          return isF32Tensor(n.getType()) &&
                 (!n.getWeight() || isParam(n.getWeight()));
        })
        // The attention block: views and head transposes, RoPE, the in-place
        // cache update and SDPA over the cache (a mask stays portable: the
        // recipes' attention is causal with positions).
        .Case<ReshapeOp, TransposeOp, SliceOp>([](Operation *o) {
          return isF32Tensor(o->getOperand(0).getType(), true) &&
                 isF32Tensor(o->getResult(0).getType(), true);
        })
        .Case([](RopeOp r) {
          return isF32Rank4(r.getType()) &&
                 isF32Rank4(r.getInput().getType()) &&
                 isIndexVector(r.getPositions().getType());
        })
        .Case([](KvCacheUpdateOp u) {
          return isKvCache(u.getCache().getType()) &&
                 isF32Rank4(u.getValue().getType()) &&
                 isIndexVector(u.getPositions().getType()) &&
                 // A mutable buffer (an argument, once outlined): the call
                 // updates it in place.
                 (u.getCache().getDefiningOp<BufferReadOp>() ||
                  isa<BlockArgument>(u.getCache()));
        })
        // (A mask the kernel takes: f32 [1, 1, S or 1, T] over the keys,
        // the ring caches' etllm.kv_ring.mask.)
        .Case([](SdpaOp a) {
          int64_t keys = ShapedType::kDynamic;
          if (auto t = dyn_cast<RankedTensorType>(a.getKey().getType()))
            keys = t.getRank() == 4 ? t.getDimSize(2) : keys;
          else if (auto q = dyn_cast<QActType>(a.getKey().getType()))
            keys = q.getRank() == 4 ? q.getShape()[2] : keys;
          auto maskType =
              a.getMask() ? cast<RankedTensorType>(a.getMask().getType())
                          : RankedTensorType();
          auto queryType = cast<RankedTensorType>(a.getQuery().getType());
          const bool maskOk =
              !maskType ||
              (maskType.getElementType().isF32() && maskType.getRank() == 4 &&
               maskType.getDimSize(0) == 1 && maskType.getDimSize(1) == 1 &&
               (maskType.getDimSize(2) == 1 ||
                maskType.getDimSize(2) == queryType.getDimSize(2)) &&
               !maskType.isDynamicDim(3) && maskType.getDimSize(3) == keys);
          return maskOk && isF32Rank4(a.getType()) &&
                 isF32Rank4(a.getQuery().getType()) &&
                 isKvCache(a.getKey().getType()) &&
                 isKvCache(a.getValue().getType()) &&
                 (!a.getPositions() ||
                  isIndexVector(a.getPositions().getType()));
        })
        // Routed experts over quantized stacked weights (moe.cpp); float
        // experts stay on the portable kernel.
        .Case([](MoeOp m) {
          return isF32Tensor(m.getType()) &&
                 isF32Tensor(m.getInput().getType()) &&
                 isF32Tensor(m.getRouter().getType()) &&
                 cast<RankedTensorType>(m.getRouter().getType()).getRank() ==
                     2 &&
                 isPackableExperts(m.getGate()) &&
                 isPackableExperts(m.getUp()) && isPackableExperts(m.getDown());
        })
        .Case([](QEmbeddingOp e) {
          // A table the block layout holds (the tied lm_head's, read by
          // both from one copy).
          auto w = cast<QWeightType>(e.getWeight().getType());
          auto idx = cast<RankedTensorType>(e.getIndices().getType());
          return isParam(e.getWeight()) && w.getRank() == 2 &&
                 rt::cpu::PackedQBlockLayout::supports(w.getShape().back(),
                                                       quantInfoOf(w)) &&
                 isF32Tensor(e.getType(), true) &&
                 (idx.getElementType().isInteger(64) ||
                  idx.getElementType().isInteger(32));
        })
        .Default([](Operation *) { return false; });
  }

  bool isProfitable(ArrayRef<Operation *> ops) const override {
    // (Runs are as long as the partitioner makes them: a decoder layer, or
    // with all its ops legal the whole forward, is one delegate call.)
    // Worth a call only with real work in it.
    return llvm::any_of(ops, [](Operation *op) {
      return isa<LinearOp, QLinearOp, RmsNormOp, MoeOp>(op);
    });
  }

  LogicalResult serialize(
      func::FuncOp fn, DelegateContext &ctx, std::vector<uint8_t> &blob,
      std::vector<std::pair<std::string, std::string>> &specs) const override;
};

LogicalResult CpuCompiler::serialize(
    func::FuncOp fn, DelegateContext &ctx, std::vector<uint8_t> &blob,
    std::vector<std::pair<std::string, std::string>> &specs) const {
  flatbuffers::FlatBufferBuilder fb;
  std::vector<flatbuffers::Offset<xfb::Value>> values;
  llvm::DenseMap<Value, uint32_t> index;
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // How each parameter must be packed: by the op that reads it.
  llvm::DenseMap<Value, xfb::Packing> packing;
  for (Operation &op : body) {
    if (auto l = dyn_cast<LinearOp>(op))
      packing[l.getWeight()] = xfb::Packing::F32_NR8;
    if (auto l = dyn_cast<QLinearOp>(op)) {
      // The block layout when it holds the weight's groups (multiples of
      // 32, or one per row); else the dense QWeight and the portable kernel.
      auto w = cast<QWeightType>(l.getWeight().getType());
      if (rt::cpu::PackedQBlockLayout::supports(w.getShape().back(),
                                                quantInfoOf(w)))
        packing[l.getWeight()] = xfb::Packing::QWEIGHT_R16;
    }
    if (auto e = dyn_cast<QEmbeddingOp>(op))
      packing[e.getWeight()] = xfb::Packing::QWEIGHT_R16; // legality checked
    if (auto m = dyn_cast<MoeOp>(op)) // per expert (legality checked)
      for (Value w : {m.getGate(), m.getUp(), m.getDown()})
        packing[w] = xfb::Packing::QWEIGHT_R16;
  }

  // Matmul weights that are views of a parameter: one constant each. The
  // view's ops (and a parameter) that only such weights need are not
  // serialized.
  llvm::DenseMap<Value, ParamView> views;
  llvm::DenseSet<Operation *> candidates, folded;
  for (Operation &op : body) {
    Value weight;
    if (auto m = dyn_cast<MatmulOp>(op))
      weight = m.getRhs();
    else if (auto l = dyn_cast<LinearOp>(op);
             l && isReshapedParam(l.getWeight()))
      weight = l.getWeight();
    if (!weight)
      continue;
    if (std::optional<ParamView> pv = paramView(weight);
        pv && isLegal(&op) && !pv->chain.empty()) {
      views[weight] = *pv;
      folded.insert(&op); // (a reader that needs nothing more)
      candidates.insert(pv->get);
      candidates.insert(pv->chain.begin(), pv->chain.end());
    }
  }
  for (Operation &op : llvm::reverse(body))
    if (candidates.contains(&op) &&
        llvm::all_of(op.getUsers(), [&](Operation *u) {
          return folded.contains(u) ||
                 (u->getNumResults() == 1 && views.count(u->getResult(0)));
        }))
      folded.insert(&op);
  for (auto &entry : views)
    folded.erase(entry.second.chain.back()); // a constant, below
  for (Operation &op : body)
    if (isa<MatmulOp, LinearOp>(op))
      folded.erase(&op);

  auto addValue = [&](Value v, xfb::ValueKind kind, uint32_t idx,
                      xfb::Packing pack) -> uint32_t {
    Type t = v.getType();
    // Legality admitted only types the runtime has.
    rt::DType dtype = *runtimeDType(fn, t);
    ArrayRef<int64_t> shape = shapeOf(t);
    rt::QuantInfo q = quantInfoOf(t);
    std::vector<int64_t> sizes;
    std::vector<uint8_t> dyn;
    for (int64_t d : shape) {
      dyn.push_back(ShapedType::isDynamic(d));
      sizes.push_back(ShapedType::isDynamic(d) ? ctx.dynamicDimBound() : d);
    }
    auto sv = fb.CreateVector(sizes);
    auto dv = fb.CreateVector(dyn);
    xfb::ValueBuilder vb(fb);
    vb.add_dtype(uint8_t(dtype));
    vb.add_sizes(sv);
    vb.add_dynamic_dims(dv);
    vb.add_kind(kind);
    vb.add_index(idx);
    vb.add_packing(pack);
    vb.add_bits(q.bits);
    vb.add_group_size(q.groupSize);
    vb.add_symmetric(q.symmetric);
    vb.add_scale_dtype(uint8_t(q.scaleType));
    vb.add_per_token(q.perToken);
    vb.add_scheme(uint8_t(q.scheme));
    values.push_back(vb.Finish());
    uint32_t id = values.size() - 1;
    index[v] = id;
    return id;
  };

  for (BlockArgument a : body.getArguments())
    addValue(a, xfb::ValueKind::INPUT, a.getArgNumber(), xfb::Packing::DENSE);

  std::vector<flatbuffers::Offset<xfb::Node>> nodes;
  std::string prefix = fn.getSymName().str() + "/";
  for (Operation &op : body.without_terminator()) {
    if (folded.contains(&op))
      continue;
    if (auto it =
            op.getNumResults() == 1 ? views.find(op.getResult(0)) : views.end();
        it != views.end()) {
      auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
          fn, it->second.get.getNameAttr());
      ViewSteps view = describeView(it->second);
      auto t = cast<RankedTensorType>(op.getResult(0).getType());
      WeightStore *weights = &ctx.weights();
      // A linear's weight packed as its kernel reads it; a matmul's dense.
      const xfb::Packing pack = packing.lookup(op.getResult(0));
      const bool nr8 = pack == xfb::Packing::F32_NR8;
      const int64_t rows = t.getRank() == 2 ? t.getDimSize(0) : 0,
                    cols = t.getRank() == 2 ? t.getDimSize(1) : 0;
      uint32_t constant = ctx.addWeight(
          view.name + (nr8 ? "@nr8" : ""),
          nr8 ? rt::cpu::PackedF32Layout::compute(rows, cols).totalBytes
              : uint64_t(t.getNumElements()) * 4,
          uint64_t(t.getNumElements()),
          [weights, param, view, nr8, rows,
           cols]() -> FailureOr<std::vector<uint8_t>> {
            FailureOr<std::vector<float>> f = weights->floatValues(param);
            if (failed(f))
              return failure();
            std::vector<float> v = evaluateView(view, std::move(*f));
            if (nr8)
              return rt::cpu::packF32Weight(v.data(), rows, cols);
            std::vector<uint8_t> bytes(v.size() * 4);
            std::memcpy(bytes.data(), v.data(), bytes.size());
            return bytes;
          });
      addValue(op.getResult(0), xfb::ValueKind::CONSTANT, constant,
               nr8 ? pack : xfb::Packing::DENSE);
      continue;
    }
    if (auto get = dyn_cast<ParameterGetOp>(op)) {
      auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
          fn, get.getNameAttr());
      xfb::Packing pack = packing.lookup(get.getResult());
      WeightStore *weights = &ctx.weights();
      Type t = param.getType();
      ArrayRef<int64_t> shape = shapeOf(t);
      // Stacked expert weights [E, N, K]: each expert packed on its own.
      const bool experts =
          pack == xfb::Packing::QWEIGHT_R16 && shape.size() == 3;
      if (pack != xfb::Packing::DENSE && shape.size() != 2 && !experts)
        return op.emitError("cpu: packed weights must be 2-D");
      int64_t rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1,
              cols = shape.back();
      int64_t stack = experts ? shape[0] : 0;
      rt::QuantInfo q = quantInfoOf(t);
      uint64_t size;
      if (experts) {
        auto l = rt::cpu::PackedQExpertsLayout::compute(stack, rows, cols, q);
        if (!l.ok())
          return op.emitError("cpu: ") << l.message();
        size = l->totalBytes;
      } else if (pack == xfb::Packing::QWEIGHT_R16) {
        auto l = rt::cpu::PackedQBlockLayout::compute(rows, cols, q);
        if (!l.ok())
          return op.emitError("cpu: ") << l.message();
        size = l->totalBytes;
      } else if (pack == xfb::Packing::F32_NR8) {
        size = rt::cpu::PackedF32Layout::compute(rows, cols).totalBytes;
      } else {
        FailureOr<uint64_t> s = weights->byteSize(param);
        if (failed(s))
          return failure();
        size = *s;
      }
      Operation *diag = param;
      // Named by parameter and packing, not by delegate: every delegate
      // call that reads the weight in this packing shares one copy.
      const char *suffix = pack == xfb::Packing::QWEIGHT_R16 ? "@r16"
                           : pack == xfb::Packing::F32_NR8   ? "@nr8"
                                                             : "";
      uint64_t elements = 1;
      for (int64_t d : shape)
        elements *= uint64_t(d);
      uint32_t constant = ctx.addWeight(
          "cpu/" + param.getSymName().str() + suffix, size, elements,
          [weights, param, pack, rows, cols, q, stack,
           diag]() mutable -> FailureOr<std::vector<uint8_t>> {
            if (pack == xfb::Packing::F32_NR8) {
              FailureOr<std::vector<float>> f = weights->floatValues(param);
              if (failed(f))
                return failure();
              return rt::cpu::packF32Weight(f->data(), rows, cols);
            }
            FailureOr<std::vector<uint8_t>> bytes = weights->materialize(param);
            if (failed(bytes) || pack == xfb::Packing::DENSE)
              return bytes;
            auto packed =
                stack > 0 ? rt::cpu::packQExperts(bytes->data(), bytes->size(),
                                                  stack, rows, cols, q)
                          : rt::cpu::packQBlocks(bytes->data(), bytes->size(),
                                                 rows, cols, q);
            if (!packed.ok())
              return diag->emitError("cpu: ") << packed.message();
            return std::move(packed.value());
          });
      addValue(get.getResult(), xfb::ValueKind::CONSTANT, constant, pack);
      continue;
    }
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense || !isa<FloatType>(dense.getElementType()) ||
          !dense.getElementType().isF32())
        return op.emitError("cpu: only f32 constants are supported");
      std::vector<uint8_t> bytes(dense.getNumElements() * 4);
      size_t i = 0;
      for (APFloat v : dense.getValues<APFloat>()) {
        float f = v.convertToFloat();
        std::memcpy(bytes.data() + 4 * i++, &f, 4);
      }
      uint32_t constant = ctx.addConstant(
          prefix + "constant." + std::to_string(values.size()), bytes.size(),
          [bytes]() -> FailureOr<std::vector<uint8_t>> { return bytes; });
      addValue(c.getResult(), xfb::ValueKind::CONSTANT, constant,
               xfb::Packing::DENSE);
      continue;
    }
    FailureOr<KernelCall> call = describeKernelCall(&op);
    if (failed(call) || !isLegal(&op))
      return op.emitError("cpu cannot run this operation");
    std::vector<uint32_t> ins, outs;
    for (Value v : op.getOperands())
      ins.push_back(index.lookup(v));
    for (Value r : op.getResults()) {
      auto it = llvm::find(ret.getOperands(), r);
      if (it != ret.getOperands().end())
        outs.push_back(addValue(r, xfb::ValueKind::OUTPUT,
                                it - ret.getOperands().begin(),
                                xfb::Packing::DENSE));
      else
        outs.push_back(
            addValue(r, xfb::ValueKind::INTERNAL, 0, xfb::Packing::DENSE));
    }
    std::vector<int64_t> ints(call->ints.begin(), call->ints.end());
    std::vector<double> floats(call->floats.begin(), call->floats.end());
    // How moe feeds its experts: what the quantize stage chose for it
    // (int8 per block of 32, int8 per token), else f32.
    uint8_t moeActs = 0;
    if (auto act = op.getAttrOfType<StringAttr>(kMoeActivationsAttrName);
        isa<MoeOp>(op) && act)
      moeActs = act.getValue() == kMoeActivationsInt8Block   ? 1
                : act.getValue() == kMoeActivationsInt8Token ? 2
                                                             : 0;
    nodes.push_back(xfb::CreateNode(fb, fb.CreateString(call->op),
                                    fb.CreateVector(ins), fb.CreateVector(outs),
                                    fb.CreateVector(ints),
                                    fb.CreateVector(floats), moeActs));
  }
  // Every result must be produced by a node of the subgraph, once.
  llvm::DenseSet<Value> seen;
  for (Value v : ret.getOperands())
    if (!v.getDefiningOp() ||
        isa<ParameterGetOp, ConstantOp>(v.getDefiningOp()) ||
        !seen.insert(v).second)
      return fn.emitError("cpu: each result must be computed by the "
                          "subgraph, once");
  auto graph =
      xfb::CreateGraph(fb, fb.CreateVector(values), fb.CreateVector(nodes));
  xfb::FinishGraphBuffer(fb, graph);
  blob.assign(fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize());
  specs.push_back({"format", "EXN1"});
  return success();
}

} // namespace

/// Registers this backend (named in cmake/Backends.cmake).
void registerCpuBackendCompiler() {
  registerBackendCompiler(std::make_unique<CpuCompiler>());
}

} // namespace etllm
