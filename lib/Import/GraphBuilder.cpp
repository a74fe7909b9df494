//===- GraphBuilder.cpp - Checkpoint to exported-graph IR -----------------===//
//
// Emits, op for op, what torch.export shows for the Hugging Face modeling
// code of the supported decoder-only architectures in eval mode with a
// static KV cache. Each op carries the innermost module it came from
// (`etllm.module`), and the module records every module's class.
//
//===----------------------------------------------------------------------===//
#include "etllm/Import/GraphBuilder.h"

#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Formats/Checkpoint.h"
#include "etllm/Models/Family.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <filesystem>
#include <limits>

using namespace mlir;
using namespace mlir::etllm;
using ::etllm::formats::Checkpoint;
using ::etllm::formats::ModelConfig;
using ::etllm::models::FamilySpec;

namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::make_error<llvm::StringError>(message,
                                             llvm::inconvertibleErrorCode());
}

/// Emits ops with the current module path attached, declares parameters and
/// buffers, and records module classes.
class GraphEmitter {
public:
  GraphEmitter(MLIRContext *ctx, ModuleOp module, const Checkpoint &ckpt,
               const ModelConfig &config, const FamilySpec &family, Type dtype)
      : ctx(ctx), module(module), ckpt(ckpt), config(config), family(family),
        dtype(dtype), b(ctx), loc(UnknownLoc::get(ctx)),
        prefix(family.classPrefix) {}

  MLIRContext *ctx;
  ModuleOp module;
  const Checkpoint &ckpt;
  const ModelConfig &config;
  const FamilySpec &family;
  Type dtype;
  OpBuilder b;
  Location loc;
  std::string prefix; // "Llama", "Qwen2", ...
  std::vector<std::string> pathStack;
  llvm::StringMap<std::string> moduleClasses;
  std::vector<std::pair<std::string, Value>> cacheWrites;
  std::string error;

  /// RAII: enter a module instance `path` of class `cls`.
  struct Scope {
    GraphEmitter &e;
    Scope(GraphEmitter &e, const std::string &path, const std::string &cls)
        : e(e) {
      e.pathStack.push_back(path);
      e.moduleClasses[path] = cls;
    }
    ~Scope() { e.pathStack.pop_back(); }
  };

  std::string cls(StringRef suffix) const { return prefix + suffix.str(); }

  template <typename OpTy, typename... Args> OpTy op(Args &&...args) {
    auto o = b.create<OpTy>(loc, std::forward<Args>(args)...);
    if (!pathStack.empty())
      setModulePath(o, pathStack.back());
    return o;
  }
  template <typename OpTy, typename... Args> Value val(Args &&...args) {
    return op<OpTy>(std::forward<Args>(args)...)->getResult(0);
  }

  RankedTensorType tensorType(ArrayRef<int64_t> shape, Type et) {
    return RankedTensorType::get(shape, et);
  }
  Value scalar(double v, Type et) {
    auto type = RankedTensorType::get({}, et);
    Attribute a = isa<FloatType>(et)
                      ? Attribute(FloatAttr::get(et, v))
                      : Attribute(IntegerAttr::get(et, int64_t(v)));
    return val<ConstantOp>(DenseElementsAttr::get(type, a));
  }

  /// Declares (once) and reads the parameter `name` of `shape`.
  Value param(const std::string &name, ArrayRef<int64_t> shape) {
    auto type = tensorType(shape, dtype);
    auto symbolTable = SymbolTable(module);
    if (!symbolTable.lookup(name)) {
      const ::etllm::formats::TensorRef *t = ckpt.find(name);
      if (!t) {
        if (error.empty())
          error = ckpt.path() + ": missing tensor '" + name + "'";
      } else if (t->shape != std::vector<int64_t>(shape.begin(), shape.end())) {
        if (error.empty())
          error =
              ckpt.path() + ": tensor '" + name + "' has shape " +
              ::etllm::formats::shapeToString(t->shape) + ", expected " +
              ::etllm::formats::shapeToString({shape.begin(), shape.end()}) +
              " from the configuration";
      }
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(module.getBody(),
                          std::prev(module.getBody()->end(), 1));
      auto decl = b.create<ParameterOp>(loc, name, type, ElementsAttr(),
                                        StringAttr(), IntegerAttr());
      if (t && t->qkPermuteHeads > 0)
        decl.setQkPermuteHeadsAttr(b.getI64IntegerAttr(t->qkPermuteHeads));
    }
    return val<ParameterGetOp>(type, FlatSymbolRefAttr::get(ctx, name));
  }

  Value linear(const std::string &path, Value x, int64_t out, int64_t in,
               bool bias) {
    Scope s(*this, path, "Linear");
    Value w = param(path + ".weight", {out, in});
    Value bv = bias ? param(path + ".bias", {out}) : Value();
    return val<LinearOp>(x, w, bv);
  }

  /// The HF RMSNorm of `cls` over the last dimension of x.
  Value rmsNorm(const std::string &path, const std::string &klass, Value x,
                int64_t dim, bool addOne) {
    Scope s(*this, path, klass);
    Value w = param(path + ".weight", {dim});
    Type f32 = b.getF32Type();
    auto xt = cast<RankedTensorType>(x.getType());
    Value xf =
        xt.getElementType() == f32 ? x : val<ConvertOp>(xt.clone(f32), x);
    Value sq = val<PowOp>(xf, scalar(2.0, f32));
    Value var = val<MeanOp>(sq, b.getDenseI64ArrayAttr({-1}), b.getUnitAttr());
    Value r = val<RsqrtOp>(val<AddOp>(var, scalar(config.rmsNormEps, f32)));
    Value n = val<MulOp>(xf, r);
    if (addOne) {
      // Gemma: (x * rsqrt(...)) * (1 + w.float()), then cast to x's dtype.
      Value wf = dtype == f32
                     ? w
                     : val<ConvertOp>(
                           cast<RankedTensorType>(w.getType()).clone(f32), w);
      Value y = val<MulOp>(n, val<AddOp>(wf, scalar(1.0, f32)));
      return xt.getElementType() == f32 ? y : val<ConvertOp>(xt, y);
    }
    // Llama: weight * hidden.to(input_dtype)
    Value nc = xt.getElementType() == f32 ? n : val<ConvertOp>(xt, n);
    return val<MulOp>(w, nc);
  }

  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return val<ReshapeOp>(x, b.getDenseI64ArrayAttr(shape));
  }
  Value slice(Value x, int64_t dim, int64_t start, int64_t end) {
    return val<SliceOp>(x, b.getI64IntegerAttr(dim), b.getI64IntegerAttr(start),
                        b.getI64IntegerAttr(end), b.getI64IntegerAttr(1));
  }
  Value transpose(Value x, int64_t d0, int64_t d1) {
    return val<TransposeOp>(x, b.getI64IntegerAttr(d0),
                            b.getI64IntegerAttr(d1));
  }
  Value unsqueeze(Value x, int64_t d) {
    return val<UnsqueezeOp>(x, b.getI64IntegerAttr(d));
  }

  /// HF rotate_half: cat(-x2, x1) on the last dimension.
  Value rotateHalf(Value x) {
    int64_t d = cast<RankedTensorType>(x.getType()).getShape().back();
    Value x1 = slice(x, -1, 0, d / 2);
    Value x2 = slice(x, -1, d / 2, std::numeric_limits<int64_t>::max());
    return val<CatOp>(ValueRange{val<NegOp>(x2), x1}, b.getI64IntegerAttr(-1));
  }

  /// q * cos + rotate_half(q) * sin, on the first rotaryDim dims.
  Value applyRope(Value x, Value cos, Value sin) {
    auto xt = cast<RankedTensorType>(x.getType());
    int64_t headDim = xt.getShape().back();
    int64_t rd = config.rotaryDim();
    Value xr = rd == headDim ? x : slice(x, -1, 0, rd);
    Value e = val<AddOp>(val<MulOp>(xr, cos), val<MulOp>(rotateHalf(xr), sin));
    if (rd == headDim)
      return e;
    Value pass = slice(x, -1, rd, std::numeric_limits<int64_t>::max());
    return val<CatOp>(ValueRange{e, pass}, b.getI64IntegerAttr(-1));
  }

  /// repeat_kv: [1, Hkv, T, D] -> [1, H, T, D].
  Value repeatKv(Value x, int64_t nRep) {
    if (nRep == 1)
      return x;
    auto t = cast<RankedTensorType>(x.getType());
    int64_t hkv = t.getDimSize(1), len = t.getDimSize(2), d = t.getDimSize(3);
    Value u = unsqueeze(x, 2);
    Value e = val<ExpandOp>(u, b.getDenseI64ArrayAttr({1, hkv, nRep, len, d}));
    return reshape(e, {1, hkv * nRep, len, d});
  }

  LogicalResult build(const ::etllm::ImportOptions &options, int64_t maxSeq);
};

LogicalResult GraphEmitter::build(const ::etllm::ImportOptions &options,
                                  int64_t maxSeq) {
  const ModelConfig &c = config;
  Type f32 = b.getF32Type(), i64 = b.getI64Type(), i1 = b.getI1Type();
  const int64_t D = c.hiddenSize, H = c.numHeads, Hkv = c.numKvHeads,
                Dh = c.headDim, F = c.intermediateSize, V = c.vocabSize,
                T = maxSeq, dyn = ShapedType::kDynamic;
  const int64_t kEnd = std::numeric_limits<int64_t>::max();

  // Mutable buffers: one K and one V cache per layer.
  b.setInsertionPointToEnd(module.getBody());
  auto cacheType = tensorType({1, Hkv, T, Dh}, dtype);
  for (int64_t i = 0; i < c.numLayers; ++i)
    for (const char *kv : {"k_cache", "v_cache"})
      b.create<BufferOp>(
          loc, llvm::formatv("model.layers.{0}.self_attn.{1}", i, kv).str(),
          cacheType);

  auto tokensType = tensorType({1, dyn}, i64);
  auto posType = tensorType({dyn}, i64);
  int64_t outSeq = options.lastLogitsOnly ? 1 : dyn;
  auto logitsType = tensorType({1, outSeq, V}, f32);
  auto fn = b.create<func::FuncOp>(
      loc, "forward", b.getFunctionType({tokensType, posType}, {logitsType}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value tokens = entry->getArgument(0), inputPos = entry->getArgument(1);

  // The LlamaModel (etc.) scope; popped before the lm_head.
  pathStack.push_back("model");
  moduleClasses["model"] = cls("Model");
  Value h;
  {
    Scope s(*this, "model.embed_tokens", "Embedding");
    h = val<EmbeddingOp>(param("model.embed_tokens.weight", {V, D}), tokens);
  }
  if (c.scaleEmbeddings)
    // Gemma: hidden * normalizer, the normalizer in the hidden dtype.
    h = val<MulOp>(h, scalar(std::sqrt(double(D)), dtype));

  // Rotary embedding: cos/sin [1, S, rotaryDim] from the inverse frequencies.
  Value cos, sin;
  {
    Scope s(*this, "model.rotary_emb", cls("RotaryEmbedding"));
    std::vector<double> invFreq = ::etllm::formats::ropeInverseFrequencies(c);
    std::vector<float> invFreqF(invFreq.begin(), invFreq.end());
    int64_t R = invFreqF.size();
    Value freqConst = val<ConstantOp>(DenseElementsAttr::get(
        tensorType({R}, f32), ArrayRef<float>(invFreqF)));
    Value invExp = reshape(freqConst, {1, R, 1});
    Value posF = val<ConvertOp>(tensorType({dyn}, f32), inputPos);
    Value posExp = reshape(posF, {1, 1, -1});
    Value freqs = transpose(val<MatmulOp>(invExp, posExp), 1, 2); // [1,S,R]
    Value emb = val<CatOp>(ValueRange{freqs, freqs}, b.getI64IntegerAttr(-1));
    cos = val<CosOp>(emb);
    sin = val<SinOp>(emb);
    auto ct = cast<RankedTensorType>(cos.getType());
    if (dtype != f32) {
      cos = val<ConvertOp>(ct.clone(dtype), cos);
      sin = val<ConvertOp>(ct.clone(dtype), sin);
    }
  }

  // Causal mask over the static cache [1, 1, S, T]: key j is masked for the
  // query at position p when j > p (and, sliding, when j <= p - window).
  float minValue = -std::numeric_limits<float>::max();
  if (dtype.isF16())
    minValue = -65504.0f;
  else if (dtype.isBF16())
    minValue = -3.3895313892515355e+38f;
  auto buildMask = [&](int64_t window) -> Value {
    Value kpos = val<ArangeOp>(tensorType({T}, i64), b.getI64IntegerAttr(0),
                               b.getI64IntegerAttr(T), b.getI64IntegerAttr(1));
    Value qpos = reshape(inputPos, {-1, 1});
    Value masked = val<GtOp>(kpos, qpos); // [S, T]
    if (window > 0) {
      Value lower = val<SubOp>(qpos, scalar(double(window), i64));
      masked = val<LogicalOrOp>(masked, val<LeOp>(kpos, lower));
    }
    Value m = val<WhereOp>(masked, scalar(minValue, dtype), scalar(0.0, dtype));
    (void)i1;
    return reshape(m, {1, 1, -1, T});
  };
  Value fullMask = buildMask(0);
  Value slidingMask;
  for (bool sliding : c.layerUsesSlidingWindow)
    if (sliding && !slidingMask)
      slidingMask = buildMask(c.slidingWindow);

  bool addOne = c.normAddsOne && !ckpt.normWeightsIncludeOne();
  int64_t nRep = H / Hkv;
  for (int64_t i = 0; i < c.numLayers; ++i) {
    std::string lp = llvm::formatv("model.layers.{0}", i).str();
    Scope layer(*this, lp, cls("DecoderLayer"));
    Value residual = h;
    Value x = rmsNorm(lp + ".input_layernorm", cls("RMSNorm"), h, D, addOne);

    Value attnOut;
    {
      std::string ap = lp + ".self_attn";
      Scope attn(*this, ap, cls("Attention"));
      Value q, k, v;
      if (c.fusedQkv) {
        Value qkv = linear(ap + ".qkv_proj", x, (H + 2 * Hkv) * Dh, D, false);
        q = slice(qkv, -1, 0, H * Dh);
        k = slice(qkv, -1, H * Dh, (H + Hkv) * Dh);
        v = slice(qkv, -1, (H + Hkv) * Dh, kEnd);
      } else {
        q = linear(ap + ".q_proj", x, H * Dh, D, c.attentionBias);
        k = linear(ap + ".k_proj", x, Hkv * Dh, D, c.attentionBias);
        v = linear(ap + ".v_proj", x, Hkv * Dh, D, c.attentionBias);
      }
      q = reshape(q, {1, -1, H, Dh});
      k = reshape(k, {1, -1, Hkv, Dh});
      v = reshape(v, {1, -1, Hkv, Dh});
      if (c.qkNorm) {
        q = rmsNorm(ap + ".q_norm", cls("RMSNorm"), q, Dh, false);
        k = rmsNorm(ap + ".k_norm", cls("RMSNorm"), k, Dh, false);
      }
      q = transpose(q, 1, 2); // [1, H, S, Dh]
      k = transpose(k, 1, 2);
      v = transpose(v, 1, 2);
      Value cosU = unsqueeze(cos, 1), sinU = unsqueeze(sin, 1);
      q = applyRope(q, cosU, sinU);
      k = applyRope(k, cosU, sinU);

      // StaticCache.update: index_copy_ into the caches (functionalized).
      auto updateCache = [&](const char *name, Value newVal) {
        std::string sym = ap + "." + name;
        Value cache =
            val<BufferReadOp>(cacheType, FlatSymbolRefAttr::get(ctx, sym));
        Value updated =
            val<IndexCopyOp>(cache, b.getI64IntegerAttr(2), inputPos, newVal);
        cacheWrites.push_back({sym, updated});
        return updated;
      };
      Value kAll = repeatKv(updateCache("k_cache", k), nRep);
      Value vAll = repeatKv(updateCache("v_cache", v), nRep);

      // eager_attention_forward
      Value scores = val<MatmulOp>(q, transpose(kAll, 2, 3));
      scores = val<MulOp>(scores, scalar(c.attentionScale(), dtype));
      if (c.attnLogitSoftcapping > 0) {
        Value cap = scalar(c.attnLogitSoftcapping, dtype);
        scores = val<MulOp>(val<TanhOp>(val<DivOp>(scores, cap)), cap);
      }
      bool sliding =
          !c.layerUsesSlidingWindow.empty() && c.layerUsesSlidingWindow[i];
      scores = val<AddOp>(scores, sliding ? slidingMask : fullMask);
      Value sf = dtype == f32
                     ? scores
                     : val<ConvertOp>(
                           cast<RankedTensorType>(scores.getType()).clone(f32),
                           scores);
      Value probs = val<SoftmaxOp>(sf, b.getI64IntegerAttr(-1));
      if (dtype != f32)
        probs = val<ConvertOp>(
            cast<RankedTensorType>(probs.getType()).clone(dtype), probs);
      Value o = val<MatmulOp>(probs, vAll); // [1, H, S, Dh]
      o = reshape(transpose(o, 1, 2), {1, -1, H * Dh});
      attnOut = linear(ap + ".o_proj", o, D, H * Dh, c.oProjBias);
    }
    if (c.sandwichNorms)
      attnOut = rmsNorm(lp + ".post_attention_layernorm", cls("RMSNorm"),
                        attnOut, D, addOne);
    h = val<AddOp>(residual, attnOut);

    residual = h;
    x = rmsNorm(lp + (c.sandwichNorms ? ".pre_feedforward_layernorm"
                                      : ".post_attention_layernorm"),
                cls("RMSNorm"), h, D, addOne);
    Value mlpOut;
    {
      std::string mp = lp + ".mlp";
      Scope mlp(*this, mp, cls("MLP"));
      Value gate, up;
      if (c.fusedGateUp) {
        Value gu = linear(mp + ".gate_up_proj", x, 2 * F, D, c.mlpBias);
        gate = slice(gu, -1, 0, F);
        up = slice(gu, -1, F, kEnd);
      } else {
        gate = linear(mp + ".gate_proj", x, F, D, c.mlpBias);
        up = linear(mp + ".up_proj", x, F, D, c.mlpBias);
      }
      Value act;
      {
        bool tanhGelu = c.hiddenAct == "gelu_pytorch_tanh" ||
                        c.hiddenAct == "gelu_new" || c.hiddenAct == "gelu_fast";
        bool gelu = tanhGelu || c.hiddenAct == "gelu";
        Scope s(*this, mp + ".act_fn",
                gelu ? (tanhGelu ? "PytorchGELUTanh" : "GELUActivation")
                     : "SiLU");
        if (gelu)
          act = val<GeluOp>(gate, GeluApproximationAttr::get(
                                      ctx, tanhGelu ? GeluApproximation::tanh
                                                    : GeluApproximation::none));
        else
          act = val<SiluOp>(gate);
      }
      mlpOut = linear(mp + ".down_proj", val<MulOp>(act, up), D, F, c.mlpBias);
    }
    if (c.sandwichNorms)
      mlpOut = rmsNorm(lp + ".post_feedforward_layernorm", cls("RMSNorm"),
                       mlpOut, D, addOne);
    h = val<AddOp>(residual, mlpOut);
  }
  h = rmsNorm("model.norm", cls("RMSNorm"), h, D, addOne);
  pathStack.pop_back(); // back at the root (the *ForCausalLM module)

  if (options.lastLogitsOnly)
    h = slice(h, 1, -1, kEnd);
  Value logits;
  {
    Scope s(*this, "lm_head", "Linear");
    std::string wName =
        c.tieWordEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    logits = val<LinearOp>(h, param(wName, {V, D}), Value());
  }
  if (c.finalLogitSoftcapping > 0) {
    Value cap = scalar(c.finalLogitSoftcapping, dtype);
    logits = val<MulOp>(val<TanhOp>(val<DivOp>(logits, cap)), cap);
  }
  if (dtype != f32)
    logits = val<ConvertOp>(cast<RankedTensorType>(logits.getType()).clone(f32),
                            logits);

  // The write-back copies torch.export inserts for mutated buffers.
  for (auto &[sym, value] : cacheWrites)
    b.create<BufferWriteOp>(loc, value, FlatSymbolRefAttr::get(ctx, sym));
  b.create<func::ReturnOp>(loc, logits);
  return success(error.empty());
}

/// The configuration as the typed `#etllm.model_config`, read back by passes
/// (source swap) and copied into the program file.
ModelConfigAttr configAttr(MLIRContext *ctx, const ModelConfig &c,
                           int64_t maxSeq, const std::string &dtype) {
  return ModelConfigAttr::get(
      ctx, c.architecture, c.modelType, dtype, c.hiddenSize, c.intermediateSize,
      c.numLayers, c.numHeads, c.numKvHeads, c.headDim, c.vocabSize, maxSeq,
      c.rotaryDim(), llvm::APFloat(c.rmsNormEps), llvm::APFloat(c.ropeTheta),
      llvm::APFloat(c.attentionScale()), c.slidingWindow,
      llvm::APFloat(c.attnLogitSoftcapping),
      llvm::APFloat(c.finalLogitSoftcapping), c.tieWordEmbeddings, c.bosTokenId,
      c.eosTokenIds,
      SmallVector<bool>(c.layerUsesSlidingWindow.begin(),
                        c.layerUsesSlidingWindow.end()));
}

} // namespace

namespace etllm {
llvm::Expected<OwningOpRef<ModuleOp>>
buildExportedGraph(MLIRContext *context, const Checkpoint &checkpoint,
                   const ImportOptions &options) {
  context->getOrLoadDialect<EtllmDialect>();
  context->getOrLoadDialect<func::FuncDialect>();
  if (!checkpoint.hasConfig())
    return makeError(checkpoint.path() +
                     ": no model configuration (a bare safetensors file "
                     "needs its config.json next to it)");
  const ModelConfig &c = checkpoint.config();
  if (::etllm::rt::Status st = ::etllm::formats::validate(c); !st.ok())
    return makeError(checkpoint.path() + ": " + st.message());

  Builder builder(context);
  Type dtype;
  if (options.dtype == "float32")
    dtype = builder.getF32Type();
  else if (options.dtype == "float16")
    dtype = builder.getF16Type();
  else if (options.dtype == "bfloat16")
    dtype = builder.getBF16Type();
  else
    return makeError("model.dtype: unknown dtype '" + options.dtype +
                     "' (float32, float16 or bfloat16)");

  int64_t maxSeq = options.maxSeqLen;
  if (maxSeq == 0)
    maxSeq =
        std::min<int64_t>(c.maxPositionEmbeddings > 0 ? c.maxPositionEmbeddings
                                                      : kDefaultMaxSeqLen,
                          kDefaultMaxSeqLen);
  if (maxSeq <= 0 || maxSeq > (int64_t(1) << 24))
    return makeError("model.max_seq_len: " + std::to_string(maxSeq) +
                     " is out of range (1 .. 16777216)");

  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(context));
  GraphEmitter emitter(context, *module, checkpoint, c,
                       *::etllm::formats::familyOf(c), dtype);
  if (failed(emitter.build(options, maxSeq)))
    return makeError(emitter.error);

  std::error_code ec;
  std::string absPath =
      std::filesystem::absolute(checkpoint.path(), ec).lexically_normal();
  SmallVector<NamedAttribute> classes;
  for (auto &entry : emitter.moduleClasses)
    classes.push_back(builder.getNamedAttr(
        entry.getKey(), builder.getStringAttr(entry.getValue())));
  (*module)->setAttr(EtllmDialect::kCheckpointAttrName,
                     builder.getStringAttr(ec ? checkpoint.path() : absPath));
  setModelConfig(*module, configAttr(context, c, maxSeq, options.dtype));
  (*module)->setAttr(EtllmDialect::kModuleClassesAttrName,
                     builder.getDictionaryAttr(classes));
  if (failed(verify(*module)))
    return makeError("internal error: the imported graph does not verify");
  return module;
}
} // namespace etllm
