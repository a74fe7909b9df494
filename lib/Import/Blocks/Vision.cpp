//===- Vision.cpp - The vision tower and projector of a composite model ---===//
//
// The image features of a composite model as transformers computes them.
// LLaVA's (LlavaModel.get_image_features): the CLIP vision tower
// (CLIPVisionEmbeddings: the patch convolution, the class token and learned
// positions; pre_layrnorm; CLIPEncoderLayers with pre-LayerNorm attention
// without a mask and a fc1/act/fc2 MLP) or the SigLIP one (the same layers;
// a patch convolution with a bias, no class token, no pre-LayerNorm) up to
// the hidden state `vision_feature_layer` selects, the first feature
// dropped by the `default` strategy, then LlavaMultiModalProjector
// (linear_1, GELU, linear_2). Gemma 3's (Gemma3Model.get_image_features):
// the SigLIP tower's last_hidden_state after post_layernorm, average-pooled
// over the patch grid, mm_soft_emb_norm, mm_input_projection_weight.
// SmolVLM's / Idefics3's: the same tower's last_hidden_state, the
// connector's pixel shuffle and modality_projection.proj. The patch
// convolution (stride = kernel) is an unfold (reshape, permute) and a
// linear over the weight's [D, 3*P*P] view, as the ATen importer maps it.
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

#include "etllm/Models/Multimodal.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::import {
namespace {

/// A tower module's class: "CLIP", "Siglip" (or SmolVLM's and Idefics3's
/// own names of the same layers) + `suffix`.
std::string towerClass(const GraphEmitter &e, const char *suffix) {
  const std::string &type = e.config.multimodalType;
  const char *prefix = e.config.visionArch == "clip" ? "CLIP"
                       : type == "smolvlm"           ? "SmolVLM"
                       : type == "idefics3"          ? "Idefics3"
                                                     : "Siglip";
  return prefix + std::string(suffix);
}

Value layerNorm(GraphEmitter &e, const std::string &path, Value x,
                int64_t d) {
  GraphEmitter::Scope s(e, path, "LayerNorm");
  return e.val<LayerNormOp>(x, e.param(path + ".weight", {d}),
                            e.param(path + ".bias", {d}),
                            e.b.getF64FloatAttr(e.config.visionLayerNormEps));
}

/// ACT2FN[name] of transformers.
Value activation(GraphEmitter &e, const std::string &name, Value x) {
  if (name == "quick_gelu") // x * sigmoid(1.702 x)
    return e.val<MulOp>(
        x, e.val<SigmoidOp>(e.val<MulOp>(x, e.scalar(1.702, e.dtype))));
  auto approx = name == "gelu_pytorch_tanh" ? GeluApproximation::tanh
                                            : GeluApproximation::none;
  return e.val<GeluOp>(x, GeluApproximationAttr::get(e.ctx, approx));
}

/// CLIPAttention: q/k/v/out projections with biases, every position sees
/// every other, the softmax in float32.
Value attention(GraphEmitter &e, const std::string &path, Value x,
                int64_t tokens) {
  const formats::ModelConfig &c = e.config;
  const int64_t d = c.visionHiddenSize, h = c.visionNumHeads, dh = d / h;
  GraphEmitter::Scope s(e, path, towerClass(e, "Attention"));
  auto heads = [&](const char *proj) {
    Value v = e.linear(path + "." + proj, x, d, d, true);
    return e.transpose(e.reshape(v, {1, tokens, h, dh}), 1, 2);
  };
  Value q = heads("q_proj"), k = heads("k_proj"), v = heads("v_proj");
  Type f32 = e.b.getF32Type();
  Value scores = e.val<MatmulOp>(q, e.transpose(k, 2, 3));
  scores = e.val<MulOp>(scores, e.scalar(1.0 / std::sqrt(double(dh)), e.dtype));
  Value probs = e.val<SoftmaxOp>(e.castTo(scores, f32),
                                 e.b.getI64IntegerAttr(-1));
  Value o = e.val<MatmulOp>(e.castTo(probs, e.dtype), v);
  o = e.reshape(e.transpose(o, 1, 2), {1, tokens, d});
  return e.linear(path + ".out_proj", o, d, d, true);
}

Value encoderLayer(GraphEmitter &e, const std::string &path, Value x,
                   int64_t tokens) {
  const formats::ModelConfig &c = e.config;
  const int64_t d = c.visionHiddenSize, f = c.visionIntermediateSize;
  GraphEmitter::Scope s(e, path, towerClass(e, "EncoderLayer"));
  Value h = layerNorm(e, path + ".layer_norm1", x, d);
  x = e.val<AddOp>(x, attention(e, path + ".self_attn", h, tokens));
  h = layerNorm(e, path + ".layer_norm2", x, d);
  {
    std::string mlp = path + ".mlp";
    GraphEmitter::Scope m(e, mlp, towerClass(e, "MLP"));
    h = e.linear(mlp + ".fc1", h, f, d, true);
    h = activation(e, c.visionHiddenAct, h);
    h = e.linear(mlp + ".fc2", h, d, f, true);
  }
  return e.val<AddOp>(x, h);
}

} // namespace

Value buildVisionEncoder(GraphEmitter &e, Value pixels) {
  const formats::ModelConfig &c = e.config;
  const bool clip = c.visionArch == "clip"; // else SigLIP
  const int64_t d = c.visionHiddenSize, p = c.visionPatchSize,
                g = c.visionImageSize / p, patches = g * g,
                tokens = patches + (clip ? 1 : 0), D = c.hiddenSize;
  const std::string tower = models::kVisionTowerPath;
  Value x = e.castTo(pixels, e.dtype);
  {
    GraphEmitter::Scope t(e, tower, towerClass(e, "VisionTransformer"));
    std::string emb = tower + ".embeddings";
    GraphEmitter::Scope s(e, emb, towerClass(e, "VisionEmbeddings"));
    Value patch;
    {
      std::string conv = emb + ".patch_embedding";
      GraphEmitter::Scope cs(e, conv, "Conv2d");
      x = e.reshape(x, {1, 3, g, p, g, p});
      x = e.val<PermuteOp>(x, e.b.getDenseI64ArrayAttr({0, 2, 4, 1, 3, 5}));
      x = e.reshape(x, {1, patches, 3 * p * p});
      Value w = e.reshape(e.param(conv + ".weight", {d, 3, p, p}),
                          {d, 3 * p * p});
      Value bias = clip ? Value() : e.param(conv + ".bias", {d});
      patch = e.val<LinearOp>(x, w, bias);
    }
    x = patch;
    if (clip) {
      Value cls =
          e.reshape(e.param(emb + ".class_embedding", {d}), {1, 1, d});
      x = e.val<CatOp>(ValueRange{cls, patch}, e.b.getI64IntegerAttr(1));
    }
    Value pos;
    {
      std::string pe = emb + ".position_embedding";
      GraphEmitter::Scope ps(e, pe, "Embedding");
      pos = e.reshape(e.param(pe + ".weight", {tokens, d}), {1, tokens, d});
    }
    x = e.val<AddOp>(x, pos);
  }
  {
    GraphEmitter::Scope t(e, tower, towerClass(e, "VisionTransformer"));
    if (clip)
      x = layerNorm(e, tower + ".pre_layrnorm", x, d);
    std::string enc = tower + ".encoder";
    GraphEmitter::Scope s(e, enc, towerClass(e, "Encoder"));
    for (int64_t i = 0; i < c.visionLayersUsed; ++i)
      x = encoderLayer(e, enc + ".layers." + std::to_string(i), x, tokens);
  }
  if (c.visionPostLayerNorm) {
    GraphEmitter::Scope t(e, tower, towerClass(e, "VisionTransformer"));
    x = layerNorm(e, tower + ".post_layernorm", x, d);
  }
  if (c.visionDropClassToken)
    x = e.slice(x, 1, 1, kEnd);
  const models::MultimodalSpec *spec =
      models::findMultimodalByModelType(c.multimodalType);
  const std::string proj = models::kProjectorPath;
  GraphEmitter::Scope s(e, proj, spec->projectorClass);
  if (spec->projector == models::VisionProjector::PixelShuffle) {
    // pixel_shuffle: [1, g, g, d] -> [1, g, g/s, d s] -> swap the two grid
    // axes -> [1, g/s, g/s, d s s] -> swap back -> [1, (g/s)^2, d s s].
    const int64_t sf = c.visionPixelShuffle, t = g / sf;
    x = e.reshape(x, {1, g, t, d * sf});
    x = e.val<PermuteOp>(x, e.b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    x = e.reshape(x, {1, t, t, d * sf * sf});
    x = e.val<PermuteOp>(x, e.b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    x = e.reshape(x, {1, t * t, d * sf * sf});
    std::string mlp = proj + ".modality_projection";
    GraphEmitter::Scope ms(e, mlp, spec->modelType == std::string("smolvlm")
                                       ? "SmolVLMSimpleMLP"
                                       : "Idefics3SimpleMLP");
    return e.linear(mlp + ".proj", x, D, d * sf * sf, false);
  }
  if (spec->projector == models::VisionProjector::Gemma3) {
    // AvgPool2d(k, k) over the [d, g, g] grid: patch (r, c) is row r * g
    // + c, so each pooled token averages a k x k block of rows.
    const int64_t k = std::max<int64_t>(c.visionPool, 1), t = g / k;
    {
      GraphEmitter::Scope ps(e, proj + ".avg_pool", "AvgPool2d");
      x = e.reshape(x, {1, t, k, t, k, d});
      x = e.val<PermuteOp>(x, e.b.getDenseI64ArrayAttr({0, 1, 3, 2, 4, 5}));
      x = e.reshape(x, {1, t * t, k * k, d});
      x = e.val<MeanOp>(x, e.b.getDenseI64ArrayAttr({2}), UnitAttr());
    }
    x = e.rmsNorm(proj + ".mm_soft_emb_norm", x, d,
                  /*addOne=*/!e.ckpt.normWeightsIncludeOne(),
                  c.visionLayerNormEps);
    return e.val<MatmulOp>(
        x, e.param(proj + ".mm_input_projection_weight", {d, D}));
  }
  x = e.linear(proj + ".linear_1", x, D, d, c.projectorBias);
  x = activation(e, c.projectorHiddenAct, x);
  return e.linear(proj + ".linear_2", x, D, D, c.projectorBias);
}

} // namespace etllm::import
