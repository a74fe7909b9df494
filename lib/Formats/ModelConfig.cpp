//===- ModelConfig.cpp - The family of a config, its traits, RoPE ---------===//
//
// The config's family (etllm/Models/Registry.h) and the traits it implies,
// the derived quantities (rotary dimension, attention scale) and the RoPE
// inverse frequencies HF computes (linear/llama3 scaling, GGUF factors).
//
//===----------------------------------------------------------------------===//

#include "etllm/Formats/ModelConfig.h"
#include "Internal.h"
#include "etllm/Models/Registry.h"

#include <algorithm>
#include <cmath>

namespace etllm::formats {

using models::FamilySpec;

std::string supportedArchitectures() {
  return models::supportedArchitectures();
}

const FamilySpec *familyOf(const ModelConfig &c) {
  if (const FamilySpec *f = models::findByArchitecture(c.architecture))
    return f;
  if (c.architecture.empty())
    return models::findByModelType(c.modelType);
  return nullptr;
}

Status applyArchitectureTraits(ModelConfig &c) {
  const FamilySpec *f = familyOf(c);
  if (!f)
    return Error("unsupported architecture '" + c.architecture +
                 "' (supported: " + supportedArchitectures() + ")");
  c.architecture = f->hfArchitecture;
  c.modelType = f->hfModelType;
  c.fusedQkv = f->blocks.attention == models::AttentionBlock::FusedQkv;
  c.fusedGateUp = f->blocks.mlp == models::MlpBlock::FusedGateUp;
  c.qkNorm = f->traits.qkNorm;
  c.normAddsOne = f->traits.normAddsOne;
  c.scaleEmbeddings = f->traits.scaleEmbeddings;
  c.sandwichNorms =
      f->blocks.decoderLayer == models::DecoderLayerBlock::Sandwich;
  return Status();
}

int64_t ModelConfig::visionFeatures() const {
  if (visionArch == "module") // a traced encoder: its output's length
    return imageSeqLen;
  if (visionPatchSize <= 0)
    return 0;
  int64_t side = visionImageSize / visionPatchSize;
  if (visionPool > 1) // Gemma 3: the pooled grid (no class token)
    return (side / visionPool) * (side / visionPool);
  if (visionPixelShuffle > 1) // SmolVLM: s x s patches a feature
    return (side / visionPixelShuffle) * (side / visionPixelShuffle);
  // transformers' `default` strategy drops the first feature whichever the
  // tower (a SigLIP tower's is a patch).
  return side * side + (visionArch == "clip" ? 1 : 0) -
         (visionDropClassToken ? 1 : 0);
}

int64_t ModelConfig::rotaryDim() const {
  int64_t d = static_cast<int64_t>(std::floor(headDim * partialRotaryFactor));
  return d - (d % 2);
}

namespace {
/// YaRN's magnitude scale (DeepSeek's yarn_get_mscale).
double yarnMscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}
} // namespace

double ModelConfig::attentionScale() const {
  if (attentionMultiplier > 0)
    return attentionMultiplier;
  if (isMla()) {
    // DeepseekV2Attention.softmax_scale (DeepSeek's modeling_deepseek.py,
    // transformers' DeepseekV3Attention.scaling).
    double s = 1.0 / std::sqrt(static_cast<double>(qkHeadDim()));
    if (ropeScaling.type == "yarn" && ropeScaling.mscaleAllDim != 0) {
      double m = yarnMscale(ropeScaling.factor, ropeScaling.mscaleAllDim);
      s *= m * m;
    }
    return s;
  }
  double s = queryPreAttnScalar > 0 ? queryPreAttnScalar
                                    : static_cast<double>(headDim);
  return s > 0 ? 1.0 / std::sqrt(s) : 0.0;
}

double ModelConfig::ropeAttentionFactor() const {
  if (ropeScaling.type != "yarn")
    return 1.0;
  return yarnMscale(ropeScaling.factor, ropeScaling.mscale) /
         yarnMscale(ropeScaling.factor, ropeScaling.mscaleAllDim);
}

std::vector<double> ropeInverseFrequencies(const ModelConfig &c) {
  int64_t d = c.rotaryDim();
  std::vector<double> inv(static_cast<size_t>(std::max<int64_t>(d / 2, 0)));
  for (size_t i = 0; i < inv.size(); ++i)
    inv[i] = 1.0 / std::pow(c.ropeTheta, (2.0 * i) / d);
  const RopeScaling &s = c.ropeScaling;
  if (!s.freqFactors.empty() && s.freqFactors.size() == inv.size()) {
    for (size_t i = 0; i < inv.size(); ++i)
      inv[i] /= s.freqFactors[i];
    return inv;
  }
  if (s.type == "linear") {
    for (double &f : inv)
      f /= s.factor;
  } else if (s.type == "yarn") {
    // DeepseekV2YarnRotaryEmbedding: the extrapolated (original) and the
    // interpolated (divided by factor) frequencies, blended by a linear
    // ramp over the dimensions between the correction bounds of beta_fast
    // and beta_slow rotations at the original context.
    auto correctionDim = [&](double rotations) {
      return (d *
              std::log(static_cast<double>(s.originalMaxPositionEmbeddings) /
                       (rotations * 2 * M_PI))) /
             (2 * std::log(c.ropeTheta));
    };
    double low = std::max(std::floor(correctionDim(s.betaFast)), 0.0);
    double high = std::min(std::ceil(correctionDim(s.betaSlow)),
                           static_cast<double>(d - 1));
    if (low == high)
      high += 0.001; // yarn_linear_ramp_mask's guard
    for (size_t i = 0; i < inv.size(); ++i) {
      double ramp =
          std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      double extrapolation = 1.0 - ramp; // inv_freq_mask
      double inter = inv[i] / s.factor;
      inv[i] = inter * (1 - extrapolation) + inv[i] * extrapolation;
    }
  } else if (s.type == "llama3") {
    double old = static_cast<double>(s.originalMaxPositionEmbeddings);
    double lowWavelen = old / s.lowFreqFactor;
    double highWavelen = old / s.highFreqFactor;
    for (double &f : inv) {
      double wavelen = 2 * M_PI / f;
      if (wavelen < highWavelen)
        continue;
      if (wavelen > lowWavelen) {
        f /= s.factor;
        continue;
      }
      double smooth = (old / wavelen - s.lowFreqFactor) /
                      (s.highFreqFactor - s.lowFreqFactor);
      f = (1 - smooth) * f / s.factor + smooth * f;
    }
  }
  return inv;
}

std::vector<float> llama3RopeFreqFactors(const ModelConfig &c,
                                         int64_t originalContext) {
  const RopeScaling &s = c.ropeScaling;
  int64_t dim = c.headDim;
  std::vector<float> out;
  double old = static_cast<double>(originalContext);
  double lowWavelen = old / s.lowFreqFactor;
  double highWavelen = old / s.highFreqFactor;
  for (int64_t i = 0; i < dim; i += 2) {
    float freq = static_cast<float>(
        1.0 /
        std::pow(c.ropeTheta, static_cast<double>(static_cast<float>(i) /
                                                  static_cast<float>(dim))));
    double wavelen = 2 * M_PI / freq;
    if (wavelen < highWavelen) {
      out.push_back(1.0f);
    } else if (wavelen > lowWavelen) {
      out.push_back(static_cast<float>(s.factor));
    } else {
      double smooth = (old / wavelen - s.lowFreqFactor) /
                      (s.highFreqFactor - s.lowFreqFactor);
      out.push_back(
          static_cast<float>(1.0 / ((1 - smooth) / s.factor + smooth)));
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//

} // namespace etllm::formats
