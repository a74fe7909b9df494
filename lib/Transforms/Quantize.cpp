//===- Quantize.cpp - Block-wise weight quantization ----------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Dialect/Etllm/MoeActivations.h"
#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Quantizer.h"
#include "etllm/Support/Glob.h"
#include "etllm/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Debug.h"

#include <cmath>
#include <map>
#include <tuple>

#define DEBUG_TYPE "etllm-quantize"

namespace etllm {
#define GEN_PASS_DEF_QUANTIZEPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

/// A weight scheme resolved for one layer.
struct Scheme {
  unsigned bits = 0;               // 0: keep float
  bool dynamicActivations = false; // int8 per token (8da)
  bool blockActivations = false;   // int8 per block of 32 (Q8_0)
  int64_t groupSize = 32;
  bool symmetric = true;
  bool f16Scales = false;
  /// Keep each weight as its GGUF stores it (`gguf`): blocks exactly
  /// (ggml schemes for Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), float left float.
  bool gguf = false;
};

struct QuantizePass : public ::etllm::impl::QuantizePassBase<QuantizePass> {
  using QuantizePassBase::QuantizePassBase;

  /// The checkpoint tensor type behind a parameter (for exact GGUF blocks),
  /// as the importer recorded it.
  std::optional<::etllm::formats::DType> sourceDType(ParameterOp p) {
    if (p.getValue() || !p.getSourceDtype())
      return std::nullopt;
    auto dt = ::etllm::formats::parseDType(*p.getSourceDtype());
    if (!dt.ok())
      return std::nullopt;
    return *dt;
  }

  /// The bits and activation handling of a linear scheme.
  static void applyScheme(::etllm::LinearScheme scheme, Scheme &s) {
    using ::etllm::LinearScheme;
    switch (scheme) {
    case LinearScheme::None:
      s.bits = 0;
      break;
    case LinearScheme::Int4:
    case LinearScheme::Dyn8Int4:
      s.bits = 4;
      s.dynamicActivations = scheme == LinearScheme::Dyn8Int4;
      break;
    case LinearScheme::Int8:
    case LinearScheme::Dyn8Int8:
      s.bits = 8;
      s.dynamicActivations = scheme == LinearScheme::Dyn8Int8;
      break;
    case LinearScheme::Gguf:
      s.gguf = true;
      s.bits = 8; // (not 0: the layer is considered; its type is the file's)
      break;
    }
  }

  /// The output-layer override as a linear scheme (nullopt: `same`).
  static std::optional<::etllm::LinearScheme>
  outputScheme(::etllm::OutputLayerScheme o) {
    using ::etllm::LinearScheme;
    using ::etllm::OutputLayerScheme;
    switch (o) {
    case OutputLayerScheme::Same:
      return std::nullopt;
    case OutputLayerScheme::None:
      return LinearScheme::None;
    case OutputLayerScheme::Int4:
      return LinearScheme::Int4;
    case OutputLayerScheme::Int8:
      return LinearScheme::Int8;
    case OutputLayerScheme::Dyn8Int4:
      return LinearScheme::Dyn8Int4;
    case OutputLayerScheme::Dyn8Int8:
      return LinearScheme::Dyn8Int8;
    case OutputLayerScheme::Gguf:
      return LinearScheme::Gguf;
    }
    return std::nullopt;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The options' values are checked by their parser (OptionEnums.def).
    const bool blockActs = activations == ::etllm::ActivationScheme::Int8Block;
    const bool staticActs =
        activations == ::etllm::ActivationScheme::Int8Static;
    Scheme base;
    base.groupSize = groupSize;
    base.symmetric = symmetric;
    base.f16Scales = scaleType == ::etllm::ScaleType::F16;
    applyScheme(linear, base);
    base.blockActivations = blockActs && !base.dynamicActivations;
    Scheme output = base;
    const std::optional<::etllm::LinearScheme> outputOverride =
        outputScheme(outputLayer);
    if (outputOverride) {
      applyScheme(*outputOverride, output);
      output.blockActivations = blockActs && !output.dynamicActivations;
      // An 8-bit output layer is per channel, as in ExecuTorch's recipes:
      // the vocabulary projection is the most error-sensitive linear and
      // per-row int8 keeps it near float at half the size of group-wise.
      if (output.bits == 8)
        output.groupSize = -1;
    }
    Scheme emb = base;
    emb.dynamicActivations = false;
    emb.blockActivations = false;
    emb.groupSize = embeddingGroupSize;
    switch (embedding) {
    case ::etllm::EmbeddingScheme::None:
      emb.bits = 0;
      break;
    case ::etllm::EmbeddingScheme::Int8:
      emb.bits = 8;
      break;
    case ::etllm::EmbeddingScheme::Int4:
      emb.bits = 4;
      break;
    case ::etllm::EmbeddingScheme::Gguf:
      emb.gguf = true;
      emb.bits = 8;
      break;
    }

    SymbolTable symbols(module);
    // (parameter, qweight type) -> declaration of the quantized parameter.
    std::map<std::pair<std::string, const void *>, ParameterOp> quantized;
    auto quantizedParam = [&](ParameterOp p, QWeightType t) {
      auto key =
          std::make_pair(p.getSymName().str(), Type(t).getAsOpaquePointer());
      auto it = quantized.find(key);
      if (it != quantized.end())
        return it->second;
      OpBuilder b(p);
      b.setInsertionPointAfter(p);
      std::string name = (p.getSymName() + ".q" + Twine(t.getBits()) + "g" +
                          Twine(t.getGroupSize()))
                             .str();
      auto q = b.create<ParameterOp>(
          p.getLoc(), name, t, p.getValueAttr(),
          p.getValue() || p.getStack() ? StringAttr()
                                       : b.getStringAttr(p.getSourceName()),
          p.getQkPermuteHeadsAttr(), p.getSourceDtypeAttr(), p.getStackAttr());
      symbols.insert(q);
      quantized[key] = q;
      return q;
    };
    // A get of `param` quantized to `t`, built before `at` where `get` was,
    // with the module path `path` (none when empty).
    auto quantizedGet = [&](ParameterGetOp get, ParameterOp param,
                            QWeightType t, Operation *at, StringRef path) {
      OpBuilder b(at);
      auto qget = b.create<ParameterGetOp>(
          get.getLoc(), t, FlatSymbolRefAttr::get(quantizedParam(param, t)));
      if (!path.empty())
        setModulePath(qget, path);
      return qget;
    };
    auto excluded = [&](StringRef path) {
      return llvm::any_of(exclude, [&](const std::string &pat) {
        return ::etllm::globMatch(pat, std::string_view(path));
      });
    };

    // Resolve the weight type for a layer, honouring exact GGUF blocks.
    auto weightType = [&](ParameterOp p, const Scheme &s, Operation *at,
                          Scheme &used) -> QWeightType {
      auto wt = cast<RankedTensorType>(p.getType());
      int64_t k = wt.getShape().back();
      used = s;
      if (used.groupSize <= 0 || used.groupSize > k)
        used.groupSize = k;
      std::optional<::etllm::formats::DType> src = sourceDType(p);
      using ::etllm::formats::DType;
      if (s.gguf) {
        // The file's own type: ggml's other block formats by scheme (the
        // serializer copies their blocks), Q4_0/Q8_0/Q4_1 as below, float
        // stays float.
        std::optional<::etllm::rt::QScheme> scheme;
        if (src)
          scheme = ::etllm::ggmlSchemeOf(*src);
        if (scheme) // (QWeightScheme has rt::QScheme's values)
          return QWeightType::get(&getContext(), wt.getShape(),
                                  static_cast<QWeightScheme>(*scheme));
        if (!src || (*src != DType::Q4_0 && *src != DType::Q8_0 &&
                     *src != DType::Q4_1)) {
          at->emitRemark() << "etllm-quantize: kept in float: the weight "
                              "arrives as "
                           << (src ? ::etllm::formats::dtypeName(*src)
                                   : "a float tensor");
          return {};
        }
      }
      if (src &&
          (*src == DType::Q4_0 || *src == DType::Q8_0 || *src == DType::Q4_1)) {
        // Already quantized: keep the exact values (group 32, f16 scales).
        unsigned exactBits = *src == DType::Q8_0 ? 8 : 4;
        unsigned bits = s.gguf ? exactBits : std::max(exactBits, s.bits);
        if (bits != s.bits && !s.gguf)
          at->emitRemark() << "etllm-quantize: kept at " << bits
                           << " bits: the weight arrives as "
                           << ::etllm::formats::dtypeName(*src);
        used.bits = bits;
        used.groupSize = 32;
        used.symmetric = *src != DType::Q4_1;
        used.f16Scales = true;
      } else if (k % used.groupSize != 0) {
        at->emitRemark() << "etllm-quantize: group size " << used.groupSize
                         << " does not divide " << k
                         << " input features; using one group per row";
        used.groupSize = k;
      }
      if (used.bits == 4 && k % 2 != 0) {
        at->emitRemark() << "etllm-quantize: " << k
                         << " input features are odd; left in float";
        return {};
      }
      Builder b(&getContext());
      return QWeightType::get(&getContext(), wt.getShape(), used.bits,
                              used.groupSize, used.symmetric,
                              used.f16Scales ? Type(b.getF16Type())
                                             : Type(b.getF32Type()));
    };

    // One quantize op per activation and its quantized type (with
    // int8-static, its scale too), shared by the layers that read it (q, k
    // and v projections; gate and up) when it comes before them.
    std::map<std::tuple<const void *, const void *, double>, Operation *>
        quantizedActs;
    auto sharedQuantize = [&](Value x, QActType act, double scale,
                              LinearOp lin,
                              llvm::function_ref<Operation *()> make) {
      Operation *&q =
          quantizedActs[{x.getAsOpaquePointer(),
                         Type(act).getAsOpaquePointer(), scale}];
      if (!q || q->getBlock() != lin->getBlock() || !q->isBeforeInBlock(lin))
        q = make();
      return q->getResult(0);
    };

    SmallVector<LinearOp> linears;
    SmallVector<EmbeddingOp> embeddings;
    SmallVector<MoeOp> moes;
    module.walk([&](Operation *op) {
      if (auto l = dyn_cast<LinearOp>(op))
        linears.push_back(l);
      else if (auto e = dyn_cast<EmbeddingOp>(op))
        embeddings.push_back(e);
      else if (auto m = dyn_cast<MoeOp>(op))
        moes.push_back(m);
    });

    // Mixture-of-experts layers: the stacked expert weights take the
    // linear scheme, grouped along their last dimension. The op's input
    // stays f32; an 8da scheme marks the op etllm.activations =
    // "int8-token", activations=int8-block "int8-block", which lets an
    // optimized kernel quantize its expert inputs as the qlinears of the
    // recipe are (the portable kernel keeps f32). The
    // router is an operand of the op that has no quantized form: routers
    // stay float in every recipe. `exclude` matches the stacked
    // projection's name ("model.layers.0.mlp.experts.gate_proj").
    for (MoeOp moe : moes) {
      if (base.bits == 0)
        break;
      for (OpOperand *use : {&moe.getGateMutable(), &moe.getUpMutable(),
                             &moe.getDownMutable()}) {
        auto get = use->get().getDefiningOp<ParameterGetOp>();
        auto param =
            get ? symbols.lookup<ParameterOp>(get.getName()) : ParameterOp();
        auto wt = param ? dyn_cast<RankedTensorType>(param.getType())
                        : RankedTensorType();
        if (!wt || wt.getRank() != 3)
          continue;
        StringRef path = param.getSymName();
        path.consume_back(".weight");
        if (excluded(path))
          continue;
        Scheme s = base;
        s.dynamicActivations = false;
        s.blockActivations = false;
        Scheme used;
        QWeightType qt = weightType(param, s, moe, used);
        if (!qt)
          continue;
        use->set(quantizedGet(get, param, qt, moe, getModulePath(get)));
        if (get->use_empty())
          get.erase();
        if (base.dynamicActivations || base.blockActivations)
          moe->setAttr(
              kMoeActivationsAttrName,
              StringAttr::get(&getContext(), base.dynamicActivations
                                                 ? kMoeActivationsInt8Token
                                                 : kMoeActivationsInt8Block));
      }
    }

    for (LinearOp lin : linears) {
      auto get = lin.getWeight().getDefiningOp<ParameterGetOp>();
      if (!get)
        continue; // weight computed at run time: not a parameter
      auto param = symbols.lookup<ParameterOp>(get.getName());
      auto wt = dyn_cast<RankedTensorType>(param.getType());
      if (!wt || wt.getRank() != 2)
        continue;
      StringRef path = getModulePath(lin);
      if (excluded(path))
        continue;
      bool isOutput = path == "lm_head" || path.ends_with(".lm_head");
      const Scheme &s = isOutput && outputOverride ? output : base;
      if (s.bits == 0)
        continue;
      Scheme used;
      QWeightType qt = weightType(param, s, lin, used);
      if (!qt)
        continue;
      FloatAttr absmax;
      if (staticActs) {
        absmax =
            lin->getAttrOfType<FloatAttr>(EtllmDialect::kActAbsMaxAttrName);
        if (!absmax) {
          lin.emitOpError("has no calibrated input range (")
              << EtllmDialect::kActAbsMaxAttrName
              << "): activations=int8-static needs calibration "
                 "(quantization.calibration, etllm-calibrate)";
          return signalPassFailure();
        }
      }
      auto qget = quantizedGet(get, param, qt, lin, getModulePath(get));
      OpBuilder b(lin);
      Value x = lin.getInput();
      if (staticActs) {
        // One scale for the whole input, fixed now: absmax / 127 (1 for an
        // input that was all zeros).
        const double m = absmax.getValueAsDouble();
        const double scale = m > 0 && std::isfinite(m) ? m / 127.0 : 1.0;
        auto xt = cast<RankedTensorType>(x.getType());
        auto act = QActType::get(&getContext(), xt.getShape(), 8,
                                 ActQuantGranularity::per_tensor,
                                 /*symmetric=*/true);
        x = sharedQuantize(x, act, scale, lin, [&]() -> Operation * {
          auto q = b.create<QuantizeStaticOp>(lin.getLoc(), act, x,
                                              b.getF64FloatAttr(scale));
          setModulePath(q, path);
          return q;
        });
      } else if (used.dynamicActivations || used.blockActivations) {
        auto xt = cast<RankedTensorType>(x.getType());
        auto act = QActType::get(&getContext(), xt.getShape(), 8,
                                 used.blockActivations
                                     ? ActQuantGranularity::per_block
                                     : ActQuantGranularity::per_token,
                                 /*symmetric=*/used.blockActivations);
        x = sharedQuantize(x, act, /*scale=*/0, lin, [&]() -> Operation * {
          auto q = b.create<QuantizeDynamicOp>(lin.getLoc(), act, x);
          setModulePath(q, path);
          return q;
        });
      }
      auto ql = b.create<QLinearOp>(lin.getLoc(), lin.getType(), x, qget,
                                    lin.getBias());
      setModulePath(ql, path);
      lin.replaceAllUsesWith(ql.getResult());
      lin.erase();
      if (get->use_empty())
        get.erase();
    }

    for (EmbeddingOp e : embeddings) {
      if (emb.bits == 0)
        break;
      auto get = e.getWeight().getDefiningOp<ParameterGetOp>();
      if (!get)
        continue;
      auto param = symbols.lookup<ParameterOp>(get.getName());
      Scheme used;
      QWeightType qt = weightType(param, emb, e, used);
      if (!qt)
        continue;
      StringRef path = getModulePath(e);
      auto qget = quantizedGet(get, param, qt, e, path);
      OpBuilder b(e);
      auto qe =
          b.create<QEmbeddingOp>(e.getLoc(), e.getType(), qget, e.getIndices());
      if (!path.empty())
        setModulePath(qe, path);
      e.replaceAllUsesWith(qe.getResult());
      e.erase();
      if (get->use_empty())
        get.erase();
    }

    // Float parameters nobody reads any more go away; a fully quantized
    // parameter keeps its original name.
    for (ParameterOp p :
         llvm::make_early_inc_range(module.getOps<ParameterOp>())) {
      if (!SymbolTable::symbolKnownUseEmpty(p, module))
        continue;
      if (!isa<RankedTensorType>(p.getType()))
        continue;
      SmallVector<ParameterOp> replacements;
      for (auto &[key, q] : quantized)
        if (key.first == p.getSymName())
          replacements.push_back(q);
      StringRef name = p.getSymName();
      std::string keep = name.str();
      p.erase();
      if (replacements.size() == 1 &&
          failed(SymbolTable::replaceAllSymbolUses(
              replacements[0], StringAttr::get(&getContext(), keep), module)))
        return signalPassFailure();
      if (replacements.size() == 1) {
        replacements[0].setSymName(keep);
        if (replacements[0].getSource() == keep)
          replacements[0].removeSourceAttr();
      }
    }
  }
};

} // namespace
