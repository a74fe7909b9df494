//===- EtllmModelConfig.cpp - #etllm.model_config -------------------------===//
//
// The typed model configuration: parameter parsers, the verifier, the JSON
// the serializer writes, the module accessors, and the dialect's check that
// `etllm.model_config` holds this attribute.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmDialect.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Dialect/Etllm/MoeActivations.h"

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
// Verifier
//===----------------------------------------------------------------------===//

LogicalResult ModelConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef architecture,
    StringRef modelType, StringRef dtype, int64_t hiddenSize,
    int64_t intermediateSize, int64_t numHiddenLayers,
    int64_t numAttentionHeads, int64_t numKeyValueHeads, int64_t headDim,
    int64_t vocabSize, int64_t maxSeqLen, int64_t rotaryDim, APFloat rmsNormEps,
    APFloat ropeTheta, APFloat attentionScale, int64_t slidingWindow,
    APFloat attnLogitSoftcapping, APFloat finalLogitSoftcapping,
    bool tieWordEmbeddings, int64_t bosTokenId, ArrayRef<int64_t> eosTokenIds,
    ArrayRef<bool> layerSlidingWindow, int64_t qLoraRank, int64_t kvLoraRank,
    int64_t qkNopeHeadDim, int64_t vHeadDim, int64_t numExperts,
    int64_t numExpertsPerTok, int64_t moeIntermediateSize,
    int64_t sharedExpertIntermediateSize, bool normTopkProb,
    StringRef moeScoring, StringRef moeTopkMethod, int64_t nGroup,
    int64_t topkGroup, APFloat routedScalingFactor, ArrayRef<bool> layerMoe) {
  (void)normTopkProb;
  (void)architecture;
  (void)modelType;
  (void)tieWordEmbeddings;
  if (!dtype.empty() && dtype != "float32" && dtype != "float16" &&
      dtype != "bfloat16")
    return emitError() << "dtype '" << dtype
                       << "' is not float32, float16 or bfloat16";
  std::pair<StringRef, int64_t> sizes[] = {
      {"hidden_size", hiddenSize},
      {"intermediate_size", intermediateSize},
      {"num_hidden_layers", numHiddenLayers},
      {"num_attention_heads", numAttentionHeads},
      {"num_key_value_heads", numKeyValueHeads},
      {"head_dim", headDim},
      {"vocab_size", vocabSize},
      {"max_seq_len", maxSeqLen},
      {"rotary_dim", rotaryDim},
      {"sliding_window", slidingWindow},
      {"q_lora_rank", qLoraRank},
      {"kv_lora_rank", kvLoraRank},
      {"qk_nope_head_dim", qkNopeHeadDim},
      {"v_head_dim", vHeadDim},
      {"num_experts", numExperts},
      {"num_experts_per_tok", numExpertsPerTok},
      {"moe_intermediate_size", moeIntermediateSize},
      {"shared_expert_intermediate_size", sharedExpertIntermediateSize},
      {"n_group", nGroup},
      {"topk_group", topkGroup}};
  for (auto [name, v] : sizes)
    if (v < 0)
      return emitError() << name << " must not be negative, got " << v;
  if (numKeyValueHeads > 0 && numAttentionHeads % numKeyValueHeads != 0)
    return emitError() << "num_key_value_heads " << numKeyValueHeads
                       << " does not divide num_attention_heads "
                       << numAttentionHeads;
  if (headDim > 0 && rotaryDim > headDim)
    return emitError() << "rotary_dim " << rotaryDim
                       << " is larger than head_dim " << headDim;
  std::pair<StringRef, const APFloat *> reals[] = {
      {"rms_norm_eps", &rmsNormEps},
      {"rope_theta", &ropeTheta},
      {"attention_scale", &attentionScale},
      {"attn_logit_softcapping", &attnLogitSoftcapping},
      {"final_logit_softcapping", &finalLogitSoftcapping},
      {"routed_scaling_factor", &routedScalingFactor}};
  for (auto [name, v] : reals)
    if (&v->getSemantics() != &APFloat::IEEEdouble() || !v->isFinite() ||
        v->isNegative())
      return emitError() << name << " must be a finite, non-negative double";
  if (kvLoraRank == 0 && (qLoraRank || qkNopeHeadDim || vHeadDim))
    return emitError() << "q_lora_rank, qk_nope_head_dim and v_head_dim "
                          "need kv_lora_rank (multi-head latent attention)";
  if (kvLoraRank > 0 && (qkNopeHeadDim == 0 || vHeadDim == 0))
    return emitError() << "multi-head latent attention needs "
                          "qk_nope_head_dim and v_head_dim";
  if (rmsNormEps.convertToDouble() >= 1)
    return emitError() << "rms_norm_eps must be smaller than 1";
  auto token = [&](int64_t id, int64_t lowest) {
    return id >= lowest && (vocabSize == 0 || id < vocabSize);
  };
  if (!token(bosTokenId, -1))
    return emitError() << "bos_token_id " << bosTokenId
                       << " is outside the vocabulary of " << vocabSize;
  for (int64_t id : eosTokenIds)
    if (!token(id, 0))
      return emitError() << "eos_token_ids: " << id
                         << " is outside the vocabulary of " << vocabSize;
  if (!layerSlidingWindow.empty() &&
      static_cast<int64_t>(layerSlidingWindow.size()) != numHiddenLayers)
    return emitError() << "layer_sliding_window has "
                       << layerSlidingWindow.size() << " entries for "
                       << numHiddenLayers << " layers";
  if (slidingWindow == 0 && llvm::is_contained(layerSlidingWindow, true))
    return emitError()
           << "layer_sliding_window marks a layer but sliding_window is 0";
  if (!moeScoring.empty() && moeScoring != "softmax" && moeScoring != "sigmoid")
    return emitError() << "moe_scoring '" << moeScoring
                       << "' is not softmax or sigmoid";
  if (!moeTopkMethod.empty() && moeTopkMethod != "greedy" &&
      moeTopkMethod != "group_limited_greedy" && moeTopkMethod != "noaux_tc")
    return emitError() << "moe_topk_method '" << moeTopkMethod
                       << "' is not greedy, group_limited_greedy or noaux_tc";
  if (numExpertsPerTok > numExperts)
    return emitError() << "num_experts_per_tok " << numExpertsPerTok
                       << " is more than num_experts " << numExperts;
  if (!layerMoe.empty() &&
      static_cast<int64_t>(layerMoe.size()) != numHiddenLayers)
    return emitError() << "layer_moe has " << layerMoe.size() << " entries for "
                       << numHiddenLayers << " layers";
  if (numExperts == 0 && llvm::is_contained(layerMoe, true))
    return emitError() << "layer_moe marks a layer but num_experts is 0";
  return success();
}

//===----------------------------------------------------------------------===//
// Queries and JSON
//===----------------------------------------------------------------------===//

int64_t ModelConfigAttr::getLayerWindow(int64_t layer) const {
  ArrayRef<bool> sliding = getLayerSlidingWindow();
  if (layer < 0 || layer >= static_cast<int64_t>(sliding.size()) ||
      !sliding[layer])
    return 0;
  return getSlidingWindow();
}

bool ModelConfigAttr::isMoeLayer(int64_t layer) const {
  ArrayRef<bool> moe = getLayerMoe();
  return layer >= 0 && layer < static_cast<int64_t>(moe.size()) && moe[layer];
}

double ModelConfigAttr::getRoutedScalingFactorOrDefault() const {
  double s = getRoutedScalingFactor().convertToDouble();
  return s > 0 ? s : 1.0;
}

double ModelConfigAttr::getAttentionScaleOrDefault() const {
  if (double s = getAttentionScale().convertToDouble(); s > 0)
    return s;
  return getHeadDim() > 0 ? 1.0 / std::sqrt(double(getHeadDim())) : 0.0;
}

std::string ModelConfigAttr::toJson() const {
  // The keys are the parameter names; llvm::json prints them sorted.
  llvm::json::Object obj;
  obj["architecture"] = getArchitecture().str();
  obj["model_type"] = getModelType().str();
  obj["dtype"] = getDtype().str();
  obj["hidden_size"] = getHiddenSize();
  obj["intermediate_size"] = getIntermediateSize();
  obj["num_hidden_layers"] = getNumHiddenLayers();
  obj["num_attention_heads"] = getNumAttentionHeads();
  obj["num_key_value_heads"] = getNumKeyValueHeads();
  obj["head_dim"] = getHeadDim();
  obj["vocab_size"] = getVocabSize();
  obj["max_seq_len"] = getMaxSeqLen();
  obj["rotary_dim"] = getRotaryDim();
  obj["rms_norm_eps"] = getRmsNormEps().convertToDouble();
  obj["rope_theta"] = getRopeTheta().convertToDouble();
  obj["attention_scale"] = getAttentionScale().convertToDouble();
  obj["sliding_window"] = getSlidingWindow();
  obj["attn_logit_softcapping"] = getAttnLogitSoftcapping().convertToDouble();
  obj["final_logit_softcapping"] = getFinalLogitSoftcapping().convertToDouble();
  obj["tie_word_embeddings"] = getTieWordEmbeddings();
  obj["bos_token_id"] = getBosTokenId();
  llvm::json::Array eos;
  for (int64_t e : getEosTokenIds())
    eos.push_back(e);
  obj["eos_token_ids"] = std::move(eos);
  llvm::json::Array sliding;
  for (bool b : getLayerSlidingWindow())
    sliding.push_back(b);
  obj["layer_sliding_window"] = std::move(sliding);
  if (getKvLoraRank() > 0) {
    // Only MLA programs carry these (the others' metadata is unchanged).
    obj["q_lora_rank"] = getQLoraRank();
    obj["kv_lora_rank"] = getKvLoraRank();
    obj["qk_nope_head_dim"] = getQkNopeHeadDim();
    obj["v_head_dim"] = getVHeadDim();
  }
  // Mixture-of-experts keys only for models that have experts (dense
  // programs keep their metadata).
  if (getNumExperts() > 0) {
    obj["num_experts"] = getNumExperts();
    obj["num_experts_per_tok"] = getNumExpertsPerTok();
    obj["moe_intermediate_size"] = getMoeIntermediateSize();
    obj["shared_expert_intermediate_size"] = getSharedExpertIntermediateSize();
    obj["norm_topk_prob"] = getNormTopkProb();
    obj["moe_scoring"] =
        getMoeScoring().empty() ? "softmax" : getMoeScoring().str();
    obj["moe_topk_method"] =
        getMoeTopkMethod().empty() ? "greedy" : getMoeTopkMethod().str();
    obj["n_group"] = getNGroup();
    obj["topk_group"] = getTopkGroup();
    obj["routed_scaling_factor"] = getRoutedScalingFactorOrDefault();
    llvm::json::Array moe;
    for (bool b : getLayerMoe())
      moe.push_back(b);
    obj["layer_moe"] = std::move(moe);
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(obj));
  return s;
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
