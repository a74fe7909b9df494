//===- EtllmModelConfig.cpp - #etllm.model_config -------------------------===//
//
// The typed model configuration: parameter parsers, the rules between
// fields (each field's own checks, the JSON both ways and the parameter
// structs are generated from etllm/Models/ModelConfig.td), the module
// accessors, and the dialect's check that `etllm.model_config` holds this
// attribute.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmDialect.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Dialect/Etllm/MoeActivations.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::etllm;

//===----------------------------------------------------------------------===//
// Parameter parsers and printers
//===----------------------------------------------------------------------===//

FailureOr<APFloat> ModelConfigAttr::parseF64(AsmParser &parser) {
  double value;
  if (parser.parseFloat(value))
    return failure();
  return APFloat(value);
}

FailureOr<bool> ModelConfigAttr::parseBool(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return parser.emitError(parser.getCurrentLocation(),
                          "expected 'true' or 'false'");
}

namespace {
template <typename T> ParseResult parseElement(AsmParser &parser, T &out);
template <> ParseResult parseElement(AsmParser &parser, int64_t &out) {
  return parser.parseInteger(out);
}
template <> ParseResult parseElement(AsmParser &parser, bool &out) {
  FailureOr<bool> b = ModelConfigAttr::parseBool(parser);
  if (failed(b))
    return failure();
  out = *b;
  return success();
}
void printElement(AsmPrinter &printer, int64_t v) { printer << v; }
void printElement(AsmPrinter &printer, bool v) {
  printer << (v ? "true" : "false");
}
} // namespace

template <typename T>
FailureOr<SmallVector<T>> ModelConfigAttr::parseArray(AsmParser &parser) {
  SmallVector<T> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        T v{};
        if (parseElement(parser, v))
          return failure();
        values.push_back(v);
        return success();
      }))
    return failure();
  return values;
}

template <typename T>
void ModelConfigAttr::printArray(AsmPrinter &printer, ArrayRef<T> values) {
  printer << '[';
  llvm::interleaveComma(values, printer,
                        [&](T v) { printElement(printer, v); });
  printer << ']';
}

template FailureOr<SmallVector<int64_t>>
ModelConfigAttr::parseArray<int64_t>(AsmParser &);
template FailureOr<SmallVector<bool>>
ModelConfigAttr::parseArray<bool>(AsmParser &);
template void ModelConfigAttr::printArray<int64_t>(AsmPrinter &,
                                                   ArrayRef<int64_t>);
template void ModelConfigAttr::printArray<bool>(AsmPrinter &, ArrayRef<bool>);

//===----------------------------------------------------------------------===//
// Generated from etllm/Models/ModelConfig.td: get/getChecked from the
// parameter structs, each field's checks (verify), the JSON both ways
//===----------------------------------------------------------------------===//

#define GET_MODEL_CONFIG_ATTR_DEFS
#include "etllm/Dialect/Etllm/EtllmModelConfig.inc"

//===----------------------------------------------------------------------===//
// The rules between fields (after each field's generated checks)
//===----------------------------------------------------------------------===//

LogicalResult
mlir::etllm::verifyMlaConfigRules(function_ref<InFlightDiagnostic()> emitError,
                                  const MlaConfigParams &p) {
  if (p.kvLoraRank == 0)
    return emitError() << "q_lora_rank, qk_nope_head_dim and v_head_dim "
                          "need kv_lora_rank (multi-head latent attention)";
  if (p.qkNopeHeadDim == 0 || p.vHeadDim == 0)
    return emitError() << "multi-head latent attention needs "
                          "qk_nope_head_dim and v_head_dim";
  return success();
}

LogicalResult
mlir::etllm::verifyMoeConfigRules(function_ref<InFlightDiagnostic()> emitError,
                                  const MoeConfigParams &p) {
  if (p.numExpertsPerTok > p.numExperts)
    return emitError() << "num_experts_per_tok " << p.numExpertsPerTok
                       << " is more than num_experts " << p.numExperts;
  if (p.numExperts == 0 && llvm::is_contained(p.layerMoe, true))
    return emitError() << "layer_moe marks a layer but num_experts is 0";
  return success();
}

LogicalResult mlir::etllm::verifyVisionConfigRules(
    function_ref<InFlightDiagnostic()> emitError, const VisionConfigParams &p) {
  if (p.multimodalType.empty() || p.visionArch.empty())
    return emitError() << "a vision group needs multimodal_type and "
                          "vision_arch";
  if ((p.multimodalType == "custom") != (p.visionArch == "module"))
    return emitError() << "multimodal_type custom goes with vision_arch "
                          "module (a traced encoder), and only with it";
  if (p.visionArch == "module") // the encoder's own function says the rest
    return p.imageSeqLen > 0 && p.visionImageSize > 0
               ? success()
               : emitError() << "a traced encoder needs image_seq_len and "
                                "vision_image_size";
  if (p.visionHiddenSize <= 0 || p.visionNumHeads <= 0 ||
      p.visionHiddenSize % p.visionNumHeads != 0)
    return emitError() << "vision_num_heads " << p.visionNumHeads
                       << " does not divide vision_hidden_size "
                       << p.visionHiddenSize;
  if (p.visionPatchSize <= 0 || p.visionImageSize % p.visionPatchSize != 0)
    return emitError() << "vision_patch_size " << p.visionPatchSize
                       << " does not divide vision_image_size "
                       << p.visionImageSize;
  if (p.visionLayersUsed < 1 || p.visionLayersUsed > p.visionNumLayers)
    return emitError() << "vision_layers_used " << p.visionLayersUsed
                       << " is not in 1 .. vision_num_layers ("
                       << p.visionNumLayers << ")";
  int64_t side = p.visionImageSize / p.visionPatchSize;
  if (p.visionPool < 0 || (p.visionPool > 1 && side % p.visionPool != 0))
    return emitError() << "vision_pool " << p.visionPool
                       << " does not divide the " << side
                       << " patches of a side";
  if (p.visionPool > 1 && (p.visionArch == "clip" || p.visionDropClassToken))
    return emitError() << "vision_pool pools a grid of patches: no class "
                          "token, none dropped";
  if (p.visionPixelShuffle < 0 ||
      (p.visionPixelShuffle > 1 && side % p.visionPixelShuffle != 0))
    return emitError() << "vision_pixel_shuffle " << p.visionPixelShuffle
                       << " does not divide the " << side
                       << " patches of a side";
  if (p.visionPixelShuffle > 1 &&
      (p.visionArch == "clip" || p.visionDropClassToken || p.visionPool > 1))
    return emitError() << "vision_pixel_shuffle shuffles a grid of patches: "
                          "no class token, none dropped, no pool";
  int64_t tokens =
      p.visionPool > 1
          ? (side / p.visionPool) * (side / p.visionPool)
      : p.visionPixelShuffle > 1
          ? (side / p.visionPixelShuffle) * (side / p.visionPixelShuffle)
          : side * side + (p.visionArch == "clip" ? 1 : 0) -
                (p.visionDropClassToken ? 1 : 0);
  if (p.imageBeginTokenId < -1 || p.imageEndTokenId < -1)
    return emitError() << "image_begin_token_id and image_end_token_id are "
                          "token ids or -1";
  if (p.imageSeqLen != tokens)
    return emitError() << "image_seq_len " << p.imageSeqLen
                       << " is not the encoder's " << tokens << " features";
  return success();
}

LogicalResult mlir::etllm::verifyModelConfigRules(
    function_ref<InFlightDiagnostic()> emitError, const ModelConfigParams &p) {
  if (p.numKeyValueHeads > 0 && p.numAttentionHeads % p.numKeyValueHeads != 0)
    return emitError() << "num_key_value_heads " << p.numKeyValueHeads
                       << " does not divide num_attention_heads "
                       << p.numAttentionHeads;
  if (p.headDim > 0 && p.rotaryDim > p.headDim)
    return emitError() << "rotary_dim " << p.rotaryDim
                       << " is larger than head_dim " << p.headDim;
  if (p.rmsNormEps >= 1)
    return emitError() << "rms_norm_eps must be smaller than 1";
  auto token = [&](int64_t id, int64_t lowest) {
    return id >= lowest && (p.vocabSize == 0 || id < p.vocabSize);
  };
  if (!token(p.bosTokenId, -1))
    return emitError() << "bos_token_id " << p.bosTokenId
                       << " is outside the vocabulary of " << p.vocabSize;
  for (int64_t id : p.eosTokenIds)
    if (!token(id, 0))
      return emitError() << "eos_token_ids: " << id
                         << " is outside the vocabulary of " << p.vocabSize;
  auto perLayer = [&](StringRef name, ArrayRef<bool> flags) -> LogicalResult {
    if (!flags.empty() &&
        static_cast<int64_t>(flags.size()) != p.numHiddenLayers)
      return emitError() << name << " has " << flags.size()
                         << " entries for " << p.numHiddenLayers << " layers";
    return success();
  };
  if (failed(perLayer("layer_sliding_window", p.layerSlidingWindow)))
    return failure();
  if (p.slidingWindow == 0 && llvm::is_contained(p.layerSlidingWindow, true))
    return emitError()
           << "layer_sliding_window marks a layer but sliding_window is 0";
  if (p.moe && failed(perLayer("layer_moe", p.moe.getLayerMoe())))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Queries
//===----------------------------------------------------------------------===//

int64_t ModelConfigAttr::getLayerWindow(int64_t layer) const {
  ArrayRef<bool> sliding = getLayerSlidingWindow();
  if (layer < 0 || layer >= static_cast<int64_t>(sliding.size()) ||
      !sliding[layer])
    return 0;
  return getSlidingWindow();
}

bool ModelConfigAttr::isMoeLayer(int64_t layer) const {
  if (!getMoe())
    return false;
  ArrayRef<bool> moe = getMoe().getLayerMoe();
  return layer >= 0 && layer < static_cast<int64_t>(moe.size()) && moe[layer];
}

double ModelConfigAttr::getAttentionScaleOrDefault() const {
  if (double s = getAttentionScale().convertToDouble(); s > 0)
    return s;
  return getHeadDim() > 0 ? 1.0 / std::sqrt(double(getHeadDim())) : 0.0;
}

//===----------------------------------------------------------------------===//
// Module accessors and the dialect attribute check
//===----------------------------------------------------------------------===//

ModelConfigAttr mlir::etllm::getModelConfig(ModuleOp module) {
  return module->getAttrOfType<ModelConfigAttr>(
      EtllmDialect::kModelConfigAttrName);
}

void mlir::etllm::setModelConfig(ModuleOp module, ModelConfigAttr config) {
  module->setAttr(EtllmDialect::kModelConfigAttrName, config);
}

LogicalResult EtllmDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() == kLoraAttrName) {
    auto list = dyn_cast<ArrayAttr>(attr.getValue());
    auto bad = [&]() {
      return op->emitError()
             << "'" << kLoraAttrName
             << "' must be an array of {path = \"...\", scale = <f64>}";
    };
    if (!isa<ModuleOp>(op))
      return op->emitError()
             << "'" << kLoraAttrName << "' belongs on a builtin.module";
    if (!list)
      return bad();
    for (Attribute a : list) {
      auto d = dyn_cast<DictionaryAttr>(a);
      if (!d || d.size() != 2 || !d.getAs<StringAttr>("path") ||
          !d.getAs<FloatAttr>("scale"))
        return bad();
      if (!d.getAs<FloatAttr>("scale").getValue().isFinite())
        return op->emitError()
               << "'" << kLoraAttrName << "': the scale of adapter '"
               << d.getAs<StringAttr>("path").getValue() << "' is not finite";
    }
    return success();
  }
  if (attr.getName() == kLoraMaxRankAttrName) {
    auto r = dyn_cast<IntegerAttr>(attr.getValue());
    // (The upper bound, etllm::rt::kMaxLoraRank, is the pass's and the
    // runtime's to check: the dialect does not see the runtime's headers.)
    if (!isa<ModuleOp>(op) || !r || r.getInt() < 1)
      return op->emitError() << "'" << kLoraMaxRankAttrName
                             << "' must be a positive integer on a "
                                "builtin.module";
    return success();
  }
  if (attr.getName() == kKvRingAttrName) {
    auto d = dyn_cast<DictionaryAttr>(attr.getValue());
    IntegerAttr chunk = d ? d.getAs<IntegerAttr>("chunk") : IntegerAttr();
    IntegerAttr sinks = d ? d.getAs<IntegerAttr>("sinks") : IntegerAttr();
    if (!isa<ModuleOp>(op) || !d || d.size() != 2 || !chunk || !sinks ||
        chunk.getInt() < 1 || sinks.getInt() < 0)
      return op->emitError() << "'" << kKvRingAttrName
                             << "' must be {chunk = C >= 1, sinks = S >= 0} "
                                "on a builtin.module";
    return success();
  }
  if (attr.getName() == kActAbsMaxAttrName) {
    auto v = dyn_cast<FloatAttr>(attr.getValue());
    if (!isa<LinearOp>(op) || !v || !v.getValue().isFinite() ||
        v.getValue().isNegative())
      return op->emitError() << "'" << kActAbsMaxAttrName
                             << "' must be a finite float >= 0 on an "
                             << LinearOp::getOperationName();
    return success();
  }
  if (attr.getName() == kMoeActivationsAttrName) {
    auto v = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<MoeOp>(op) || !v ||
        (v.getValue() != kMoeActivationsInt8Block &&
         v.getValue() != kMoeActivationsInt8Token))
      return op->emitError() << "'" << kMoeActivationsAttrName
                             << "' must be \"int8-block\" or \"int8-token\" "
                                "on an "
                             << MoeOp::getOperationName();
    return success();
  }
  if (attr.getName() != kModelConfigAttrName)
    return success();
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << kModelConfigAttrName
                           << "' belongs on a builtin.module";
  if (!isa<ModelConfigAttr>(attr.getValue()))
    return op->emitError() << "'" << kModelConfigAttrName
                           << "' must be a #etllm.model_config<...>, got "
                           << attr.getValue();
  return success();
}
