//===- GgufConfig.cpp - The ModelConfig of a GGUF file --------------------===//
//
// From the common <arch>.* keys and the family's own ones (its spec's
// metadata keys and family keys), the tensors that exist (biases, tied
// output), rope_freqs (llama3 scaling) and the tokenizer's special tokens.
//
//===----------------------------------------------------------------------===//

#include "GgufInternal.h"
#include "etllm/Models/Registry.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace etllm::formats {

using detail::MetaReader;
using models::FamilySpec;

namespace {

/// Recovers llama3 rope-scaling parameters from llama.cpp's rope_freqs
/// factors when they match its formula; false otherwise.
bool fitLlama3(ModelConfig &c, const std::vector<float> &ff) {
  if (ff.empty())
    return false;
  float factor = 0;
  for (float f : ff)
    factor = std::max(factor, f);
  if (!(factor > 1.0f))
    return false;
  auto matches = [&](double low, double high, int64_t orig) {
    ModelConfig t = c;
    t.ropeScaling.type = "llama3";
    t.ropeScaling.factor = factor;
    t.ropeScaling.lowFreqFactor = low;
    t.ropeScaling.highFreqFactor = high;
    t.ropeScaling.originalMaxPositionEmbeddings = orig;
    std::vector<float> want = llama3RopeFreqFactors(t, orig);
    if (want.size() != ff.size())
      return false;
    for (size_t i = 0; i < ff.size(); ++i)
      if (std::fabs(want[i] - ff[i]) > 1e-4f * std::max(1.0f, ff[i]))
        return false;
    c = t;
    return true;
  };
  // llama.cpp's converter takes the original context from the top-level
  // hparams, 8192 when absent (as for every Llama 3.x config).
  constexpr int64_t kOrig = 8192;
  if (matches(1.0, 4.0, kOrig))
    return true;
  // Solve low/high from two intermediate points: smooth is linear in
  // orig / wavelen.
  std::vector<std::pair<double, double>> pts;
  int64_t dim = c.headDim;
  for (size_t i = 0; i < ff.size(); ++i) {
    double r = ff[i];
    if (r <= 1.0 + 1e-6 || r >= factor - 1e-6)
      continue;
    double freq = 1.0 / std::pow(c.ropeTheta, (2.0 * i) / dim);
    double x = kOrig / (2 * M_PI / freq);
    double s = (1.0 / r - 1.0 / factor) / (1.0 - 1.0 / factor);
    pts.push_back({x, s});
  }
  if (pts.size() >= 2) {
    auto [x0, s0] = pts.front();
    auto [x1, s1] = pts.back();
    if (std::fabs(s1 - s0) > 1e-9 && std::fabs(x1 - x0) > 1e-9) {
      double slope = (s1 - s0) / (x1 - x0); // 1 / (high - low)
      double low = x0 - s0 / slope;
      double high = low + 1.0 / slope;
      if (low > 0 && high > low && matches(low, high, kOrig))
        return true;
    }
  }
  return false;
}

/// A family key from its GGUF key (or what GGUF implies without one).
Result<double> readGgufFamilyKey(const MetaReader &m, const ModelConfig &c,
                                 const models::ConfigKey &k,
                                 const std::string &name) {
  if (k.gguf == models::GgufKey::None)
    return k.ggufImplied ? k.ggufDefault : detail::fallbackValue(c, k.fallback);
  std::optional<double> got;
  switch (k.type) {
  case models::KeyType::IntList:
    return 0.0;
  case models::KeyType::Bool: {
    std::optional<bool> b;
    ETLLM_ASSIGN_OR_RETURN(b, m.optBool(name));
    if (b)
      got = *b ? 1.0 : 0.0;
    break;
  }
  case models::KeyType::Choice: {
    std::optional<uint64_t> u;
    ETLLM_ASSIGN_OR_RETURN(u, m.optUInt(name));
    if (u) {
      std::string accepted;
      for (size_t i = 0; i < k.ggufCodes.size(); ++i) {
        if (*u == k.ggufCodes[i])
          got = static_cast<double>(i);
        accepted += (i ? ", " : "") + std::to_string(k.ggufCodes[i]) + " (" +
                    k.choices[i] + ")";
      }
      if (!got)
        return m.error(name, "unsupported value " + std::to_string(*u) +
                                 " (supported: " + accepted + ")");
    }
    break;
  }
  case models::KeyType::Number:
    if (detail::isIntegerKey(k)) {
      std::optional<uint64_t> u;
      ETLLM_ASSIGN_OR_RETURN(u, m.optUInt(name));
      if (u)
        got = static_cast<double>(*u);
    } else {
      ETLLM_ASSIGN_OR_RETURN(got, m.optFloat(name));
    }
    break;
  }
  double v = got.value_or(k.ggufDefault);
  if (!got && v == 0 && k.type == models::KeyType::Number)
    v = detail::fallbackValue(c, k.fallback);
  ETLLM_RETURN_IF_ERROR(
      detail::checkKeyRange(k, v, [&](const std::string &what) {
        return m.error(name, what);
      }));
  return v;
}

/// Which layers are sparse: those with a router tensor. A family whose
/// config keys say which (DeepSeek's leading_dense_block_count) must agree;
/// one whose GGUF cannot say (Qwen-MoE's mlp_only_layers) takes them from
/// the tensors.
Status readMoeLayers(const Checkpoint &ckpt, const FamilySpec &f,
                     ModelConfig &c) {
  detail::applyMoeLayers(c, f);
  if (f.blocks.mlp != models::MlpBlock::SparseMoe)
    return Status();
  std::vector<bool> present(static_cast<size_t>(c.numLayers));
  for (int64_t i = 0; i < c.numLayers; ++i)
    present[static_cast<size_t>(i)] =
        ckpt.find(models::hfPath(f, models::HfModule::MoeRouter, i) +
                  ".weight") != nullptr;
  if (present == c.layerIsMoe)
    return Status();
  if (f.moe.layers == models::MoeLayerRule::SparseStep && c.numExperts > 0) {
    c.decoderSparseStep = 1;
    c.mlpOnlyLayers.clear();
    for (int64_t i = 0; i < c.numLayers; ++i)
      if (!present[static_cast<size_t>(i)])
        c.mlpOnlyLayers.push_back(i);
    detail::applyMoeLayers(c, f);
    if (present == c.layerIsMoe)
      return Status();
  }
  for (int64_t i = 0; i < c.numLayers; ++i)
    if (present[static_cast<size_t>(i)] != c.isMoeLayer(i))
      return Error(ckpt.path() + ": layer " + std::to_string(i) +
                   (present[static_cast<size_t>(i)] ? " has" : " lacks") +
                   " the router tensor blk." + std::to_string(i) + "." +
                   models::ggufTensorName(models::GgufTensor::FfnGateInp) +
                   ".weight, but the metadata makes it " +
                   (c.isMoeLayer(i) ? "sparse" : "dense"));
  return Status();
}

/// The shortest decimal x (up to 9 significant digits) whose
/// float(x * multiplier) is `stored`: the value a converter wrote as
/// float32(x * multiplier) (yarn_log_multiplier = 0.1 * mscale_all_dim).
double shortestDecimal(float stored, double multiplier) {
  double raw = static_cast<double>(stored) / multiplier;
  for (int digits = 1; digits <= 9; ++digits) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.*g", digits, raw);
    double x = std::strtod(buf, nullptr);
    if (static_cast<float>(x * multiplier) == stored)
      return x;
  }
  return raw;
}

/// The Multi-head Latent Attention shape (llama.cpp's deepseek2). Two forms:
/// the converter's current one (kv_b_proj split into attn_k_b/attn_v_b,
/// head_count_kv 1, key/value_length of the absorbed MQA view: kv_lora_rank
/// + rope and kv_lora_rank, and key/value_length_mla of the heads) and the
/// older joint attn_kv_b (head_count_kv = heads, key/value_length of the
/// heads). c.headDim (the rope dimension) and the LoRA ranks are set.
Status readMlaLengths(const MetaReader &m,
                      const std::function<std::string(models::GgufKey)> &key,
                      ModelConfig &c) {
  using models::GgufKey;
  std::optional<uint64_t> keyLen, valLen, keyMla, valMla, kvHeads;
  ETLLM_ASSIGN_OR_RETURN(keyLen, m.optUInt(key(GgufKey::KeyLength)));
  ETLLM_ASSIGN_OR_RETURN(valLen, m.optUInt(key(GgufKey::ValueLength)));
  ETLLM_ASSIGN_OR_RETURN(keyMla, m.optUInt(key(GgufKey::KeyLengthMla)));
  ETLLM_ASSIGN_OR_RETURN(valMla, m.optUInt(key(GgufKey::ValueLengthMla)));
  ETLLM_ASSIGN_OR_RETURN(kvHeads, m.optUInt(key(GgufKey::HeadCountKv)));
  const int64_t rope = c.headDim, kvl = c.kvLoraRank;
  int64_t qk = 0, v = 0;
  auto expect = [&](GgufKey k, const std::optional<uint64_t> &got, int64_t want,
                    const char *what) -> Status {
    if (got && static_cast<int64_t>(*got) != want)
      return m.error(key(k), std::to_string(*got) + " differs from " +
                                 std::to_string(want) + " (" + what + ")");
    return Status();
  };
  if (keyMla || valMla) {
    if (!keyMla || !valMla)
      return m.error(
          key(keyMla ? GgufKey::ValueLengthMla : GgufKey::KeyLengthMla),
          "required with " +
              key(keyMla ? GgufKey::KeyLengthMla : GgufKey::ValueLengthMla));
    ETLLM_RETURN_IF_ERROR(expect(GgufKey::HeadCountKv, kvHeads, 1,
                                 "the split MLA form has one kv head"));
    ETLLM_RETURN_IF_ERROR(expect(GgufKey::KeyLength, keyLen, kvl + rope,
                                 "kv_lora_rank + rope dimensions"));
    ETLLM_RETURN_IF_ERROR(
        expect(GgufKey::ValueLength, valLen, kvl, "kv_lora_rank"));
    ETLLM_ASSIGN_OR_RETURN(qk, m.dim(key(GgufKey::KeyLengthMla), std::nullopt));
    ETLLM_ASSIGN_OR_RETURN(v,
                           m.dim(key(GgufKey::ValueLengthMla), std::nullopt));
  } else {
    ETLLM_RETURN_IF_ERROR(expect(GgufKey::HeadCountKv, kvHeads, c.numHeads,
                                 "the joint MLA form has a kv head per head"));
    ETLLM_ASSIGN_OR_RETURN(qk, m.dim(key(GgufKey::KeyLength), std::nullopt));
    ETLLM_ASSIGN_OR_RETURN(v, m.dim(key(GgufKey::ValueLength), qk));
  }
  if (qk <= rope)
    return m.error(key(keyMla ? GgufKey::KeyLengthMla : GgufKey::KeyLength),
                   std::to_string(qk) +
                       " leaves no non-rotated part of the head (rope "
                       "dimensions " +
                       std::to_string(rope) + ")");
  c.qkNopeHeadDim = qk - rope;
  c.vHeadDim = v;
  c.numKvHeads = c.numHeads;
  return Status();
}

} // namespace

const FamilySpec *detail::ggufFamily(const Checkpoint &ckpt,
                                     const std::string &arch) {
  return models::findByGgufArch(arch, [&](models::GgufKey k) {
    const GgufValue *v = ckpt.metadata(arch + "." + models::ggufKeyName(k));
    return v ? v->toInt() : std::nullopt;
  });
}

Result<ModelConfig> configFromGguf(const Checkpoint &ckpt) {
  MetaReader m(ckpt);
  std::optional<std::string> archOpt;
  ETLLM_ASSIGN_OR_RETURN(archOpt, m.optString("general.architecture"));
  if (!archOpt)
    return m.error("general.architecture", "required key is missing");
  const std::string arch = *archOpt;
  const FamilySpec *family = detail::ggufFamily(ckpt, arch);
  if (!family)
    return m.error("general.architecture",
                   "unsupported architecture '" + arch +
                       "' (supported: " + models::supportedGgufArchs() + ")");
  const FamilySpec &f = *family;
  ModelConfig c;
  c.architecture = f.hfArchitecture;
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(c));
  auto key = [&](models::GgufKey k) {
    return models::ggufKeyHasArchPrefix(k)
               ? arch + "." + models::ggufKeyName(k)
               : std::string(models::ggufKeyName(k));
  };
  using models::GgufKey;

  ETLLM_ASSIGN_OR_RETURN(c.hiddenSize,
                         m.dim(key(GgufKey::EmbeddingLength), std::nullopt));
  ETLLM_ASSIGN_OR_RETURN(c.intermediateSize,
                         m.dim(key(GgufKey::FeedForwardLength), std::nullopt));
  ETLLM_ASSIGN_OR_RETURN(c.numLayers,
                         m.dim(key(GgufKey::BlockCount), std::nullopt));
  ETLLM_ASSIGN_OR_RETURN(c.numHeads,
                         m.dim(key(GgufKey::HeadCount), std::nullopt));
  const bool mla = f.blocks.attention == models::AttentionBlock::Mla;
  if (mla) {
    // The heads' sizes: readMlaLengths, once the ranks are read.
    c.numKvHeads = c.numHeads;
    ETLLM_ASSIGN_OR_RETURN(
        c.headDim, m.dim(key(GgufKey::RopeDimensionCount), std::nullopt));
  } else {
    ETLLM_ASSIGN_OR_RETURN(c.numKvHeads,
                           m.dim(key(GgufKey::HeadCountKv), c.numHeads));
    if (c.numHeads % c.numKvHeads != 0)
      return m.error(key(GgufKey::HeadCountKv),
                     std::to_string(c.numKvHeads) +
                         " does not divide the head count " +
                         std::to_string(c.numHeads));
  }
  std::optional<uint64_t> keyLength, valueLength;
  ETLLM_ASSIGN_OR_RETURN(keyLength, m.optUInt(key(GgufKey::KeyLength)));
  ETLLM_ASSIGN_OR_RETURN(valueLength, m.optUInt(key(GgufKey::ValueLength)));
  if (mla) {
    // MLA's key/value lengths are not the rope head: readMlaLengths.
  } else if (keyLength) {
    ETLLM_ASSIGN_OR_RETURN(c.headDim,
                           m.dim(key(GgufKey::KeyLength), std::nullopt));
  } else {
    if (c.hiddenSize % c.numHeads != 0)
      return m.error(key(GgufKey::HeadCount),
                     std::to_string(c.numHeads) +
                         " does not divide the embedding length " +
                         std::to_string(c.hiddenSize));
    c.headDim = c.hiddenSize / c.numHeads;
  }
  if (!mla && valueLength && static_cast<int64_t>(*valueLength) != c.headDim)
    return m.error(key(GgufKey::ValueLength),
                   "value head size " + std::to_string(*valueLength) +
                       " differs from the key head size " +
                       std::to_string(c.headDim) + " (unsupported)");

  std::string embedName =
      models::hfPath(f, models::HfModule::Embed) + ".weight";
  const TensorRef *embed = ckpt.find(embedName);
  std::optional<uint64_t> vocabKey;
  ETLLM_ASSIGN_OR_RETURN(vocabKey, m.optUInt(key(GgufKey::VocabSize)));
  if (vocabKey) {
    ETLLM_ASSIGN_OR_RETURN(c.vocabSize,
                           m.dim(key(GgufKey::VocabSize), std::nullopt));
  } else if (embed && embed->shape.size() == 2) {
    c.vocabSize = embed->shape[0];
  } else if (ckpt.ggufTokenizer() && !ckpt.ggufTokenizer()->tokens.empty()) {
    c.vocabSize = static_cast<int64_t>(ckpt.ggufTokenizer()->tokens.size());
  } else {
    return Error(ckpt.path() + ": cannot determine the vocabulary size (no " +
                 key(GgufKey::VocabSize) + ", " +
                 models::ggufTensorName(models::GgufTensor::TokenEmbd) +
                 ".weight or tokenizer tokens)");
  }
  ETLLM_ASSIGN_OR_RETURN(c.maxPositionEmbeddings,
                         m.dim(key(GgufKey::ContextLength), std::nullopt));
  std::optional<double> fv;
  ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RmsEpsilon)));
  if (!fv)
    return m.error(key(GgufKey::RmsEpsilon), "required key is missing");
  if (!(*fv > 0 && *fv < 1))
    return m.error(key(GgufKey::RmsEpsilon), "must be in (0, 1)");
  c.rmsNormEps = *fv;
  ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RopeFreqBase)));
  c.ropeTheta = fv.value_or(10000.0);
  if (!(c.ropeTheta > 0))
    return m.error(key(GgufKey::RopeFreqBase), "must be positive");
  std::optional<uint64_t> ropeDims;
  ETLLM_ASSIGN_OR_RETURN(ropeDims, m.optUInt(key(GgufKey::RopeDimensionCount)));
  if (ropeDims) {
    if (*ropeDims < 2 || static_cast<int64_t>(*ropeDims) > c.headDim ||
        *ropeDims % 2 != 0)
      return m.error(key(GgufKey::RopeDimensionCount),
                     std::to_string(*ropeDims) +
                         " must be even and within the head size " +
                         std::to_string(c.headDim));
    c.partialRotaryFactor =
        static_cast<double>(*ropeDims) / static_cast<double>(c.headDim);
  }
  std::optional<std::string> scalingType;
  ETLLM_ASSIGN_OR_RETURN(scalingType,
                         m.optString(key(GgufKey::RopeScalingLinear)));
  if (scalingType && *scalingType == "yarn" && f.hf.yarnRopeScaling) {
    // DeepSeek's YaRN as llama.cpp's deepseek2 reads it: mscale and
    // mscale_all_dim are both yarn_log_multiplier / 0.1.
    RopeScaling &rs = c.ropeScaling;
    rs.type = "yarn";
    ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RopeScalingFactor)));
    if (!fv || !(*fv > 0))
      return m.error(key(GgufKey::RopeScalingFactor),
                     "missing or not positive for yarn scaling");
    rs.factor = *fv;
    ETLLM_ASSIGN_OR_RETURN(
        rs.originalMaxPositionEmbeddings,
        m.dim(key(GgufKey::RopeOriginalContext), std::nullopt));
    ETLLM_ASSIGN_OR_RETURN(fv,
                           m.optFloat(key(GgufKey::RopeScalingYarnBetaFast)));
    rs.betaFast = fv.value_or(32.0);
    ETLLM_ASSIGN_OR_RETURN(fv,
                           m.optFloat(key(GgufKey::RopeScalingYarnBetaSlow)));
    rs.betaSlow = fv.value_or(1.0);
    if (!(rs.betaFast > 0) || !(rs.betaSlow > 0))
      return m.error(key(GgufKey::RopeScalingYarnBetaFast),
                     "yarn's betas must be positive");
    ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RopeScalingYarnLogMul)));
    if (!fv || !(*fv >= 0))
      return m.error(key(GgufKey::RopeScalingYarnLogMul),
                     "required (non-negative) for yarn: DeepSeek's mscale "
                     "and mscale_all_dim are this value / 0.1");
    rs.mscale = rs.mscaleAllDim = shortestDecimal(static_cast<float>(*fv), 0.1);
    for (const char *unsupported :
         {"rope.scaling.yarn_ext_factor", "rope.scaling.yarn_attn_factor",
          "rope.scaling.attn_factor"})
      if (ckpt.metadata(arch + "." + unsupported))
        return m.error(arch + "." + unsupported,
                       "is not supported (DeepSeek's YaRN has no such "
                       "parameter)");
  } else if (scalingType && *scalingType != "none") {
    if (*scalingType != "linear")
      return m.error(key(GgufKey::RopeScalingLinear),
                     "unsupported rope scaling '" + *scalingType +
                         "' (supported: none, linear" +
                         (f.hf.yarnRopeScaling ? ", yarn" : "") + ")");
    ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RopeScalingFactor)));
    if (!fv || !(*fv > 0))
      return m.error(key(GgufKey::RopeScalingFactor),
                     "missing or not positive for linear scaling");
    c.ropeScaling.type = "linear";
    c.ropeScaling.factor = *fv;
  } else if (!scalingType) {
    ETLLM_ASSIGN_OR_RETURN(fv, m.optFloat(key(GgufKey::RopeScaleLinear)));
    if (fv && *fv != 1.0) {
      if (!(*fv > 0))
        return m.error(key(GgufKey::RopeScaleLinear), "must be positive");
      c.ropeScaling.type = "linear";
      c.ropeScaling.factor = *fv;
    }
  }
  std::string ropeFreqsName =
      std::string(models::ggufTensorName(models::GgufTensor::RopeFreqs)) +
      ".weight";
  if (const TensorRef *rf = ckpt.find(ropeFreqsName)) {
    if (rf->dtype != DType::F32 || rf->shape.size() != 1 ||
        rf->shape[0] != c.rotaryDim() / 2)
      return Error(rf->file + ": tensor '" + ropeFreqsName + "' must be F32 [" +
                   std::to_string(c.rotaryDim() / 2) + "], got " +
                   dtypeName(rf->dtype) + " " + shapeToString(rf->shape));
    std::vector<float> ff(static_cast<size_t>(rf->shape[0]));
    std::memcpy(ff.data(), rf->data, ff.size() * 4);
    for (float v : ff)
      if (!(v > 0) || !std::isfinite(v))
        return Error(rf->file + ": tensor '" + ropeFreqsName +
                     "' has a non-positive factor");
    if (!c.ropeScaling.type.empty())
      return Error(ckpt.path() + ": both " + ropeFreqsName + " and " +
                   key(GgufKey::RopeScalingLinear) + " are present");
    fitLlama3(c, ff);
    c.ropeScaling.freqFactors = std::move(ff);
  }

  c.layerUsesSlidingWindow.assign(static_cast<size_t>(c.numLayers), false);
  std::optional<uint64_t> window;
  ETLLM_ASSIGN_OR_RETURN(window, m.optUInt(key(GgufKey::SlidingWindow)));
  if (window && *window > static_cast<uint64_t>(detail::kMaxConfigDim))
    return m.error(key(GgufKey::SlidingWindow), "absurdly large");
  auto declares = [&](GgufKey k) {
    for (GgufKey d : f.gguf.metadata)
      if (d == k)
        return true;
    return false;
  };
  if (window && *window > 0 && declares(GgufKey::SlidingWindow)) {
    c.slidingWindow = static_cast<int64_t>(*window);
    detail::applyGgufSlidingPattern(c, f);
  }
  // The family's own keys: from their GGUF key, else what GGUF implies.
  detail::applyMoeDefaults(c, f);
  for (const models::ConfigKey &k : f.hf.keys) {
    if (k.type == models::KeyType::IntList) {
      detail::listField(c, k.field)->clear();
      continue;
    }
    double v;
    ETLLM_ASSIGN_OR_RETURN(v, readGgufFamilyKey(m, c, k, key(k.gguf)));
    detail::setField(c, k.field, v);
  }
  // llama.cpp ranks expert groups V3's way (the sum of each group's two
  // best) whenever expert_group_count > 1: a family that routes greedily
  // over ungrouped experts in GGUF (DeepSeek-V2) cannot take such a file.
  if (f.blocks.mlp == models::MlpBlock::SparseMoe &&
      !declares(GgufKey::ExpertGroupCount)) {
    std::optional<uint64_t> groups;
    ETLLM_ASSIGN_OR_RETURN(groups, m.optUInt(key(GgufKey::ExpertGroupCount)));
    if (groups && *groups > 1)
      return m.error(key(GgufKey::ExpertGroupCount),
                     std::to_string(*groups) + " is not supported for " +
                         c.architecture +
                         " (llama.cpp would rank the groups by their two "
                         "best experts)");
  }
  if (mla)
    ETLLM_RETURN_IF_ERROR(readMlaLengths(m, key, c));
  ETLLM_RETURN_IF_ERROR(readMoeLayers(ckpt, f, c));
  c.hiddenAct = f.hf.hiddenAct;
  c.tieWordEmbeddings = ckpt.find(models::hfPath(f, models::HfModule::LmHead) +
                                  ".weight") == nullptr;
  auto has = [&](models::HfModule module, const char *kind) {
    return ckpt.find(models::hfPath(f, module, 0) + kind) != nullptr;
  };
  if (f.hf.bias == models::BiasRule::QkvOnly) {
    c.attentionBias = true;
  } else {
    c.attentionBias =
        has(c.fusedQkv ? models::HfModule::QkvProj : models::HfModule::QProj,
            ".bias");
    c.oProjBias = has(models::HfModule::OProj, ".bias");
  }
  c.mlpBias = has(models::HfModule::UpProj, ".bias");

  if (const GgufTokenizerInfo *t = ckpt.ggufTokenizer()) {
    c.bosTokenId = t->bosTokenId < c.vocabSize ? t->bosTokenId : -1;
    if (t->eosTokenId >= 0 && t->eosTokenId < c.vocabSize)
      c.eosTokenIds.push_back(t->eosTokenId);
    c.padTokenId = t->paddingTokenId < c.vocabSize ? t->paddingTokenId : -1;
  }
  std::optional<uint64_t> fileType;
  ETLLM_ASSIGN_OR_RETURN(fileType, m.optUInt(key(GgufKey::FileType)));
  if (fileType)
    c.torchDtype = *fileType == 0    ? "float32"
                   : *fileType == 1  ? "float16"
                   : *fileType == 32 ? "bfloat16"
                                     : "";
  Status s = validate(c);
  if (!s.ok())
    return Error(ckpt.path() + ": " + s.message());
  return c;
}

} // namespace etllm::formats
