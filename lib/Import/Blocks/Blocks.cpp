//===- Blocks.cpp - The builders a family's spec selects ------------------===//
//
// One switch per block kind, without a default: a new enumerator in
// etllm/Models/Family.h without a builder here is a compiler warning.
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

namespace etllm::import {

namespace {

AttentionBuilder attentionBuilder(models::AttentionBlock kind) {
  switch (kind) {
  case models::AttentionBlock::Separate:
    return buildSeparateAttention;
  case models::AttentionBlock::FusedQkv:
    return buildFusedQkvAttention;
  case models::AttentionBlock::Mla:
    return buildMlaAttention;
  }
  return nullptr;
}

MlpBuilder mlpBuilder(models::MlpBlock kind) {
  switch (kind) {
  case models::MlpBlock::Gated:
    return buildGatedMlp;
  case models::MlpBlock::FusedGateUp:
    return buildFusedGateUpMlp;
  case models::MlpBlock::SparseMoe:
    return buildSparseMoe;
  }
  return nullptr;
}

DecoderLayerBuilder decoderLayerBuilder(models::DecoderLayerBlock kind) {
  switch (kind) {
  case models::DecoderLayerBlock::PreNorm:
    return buildPreNormLayer;
  case models::DecoderLayerBlock::Sandwich:
    return buildSandwichLayer;
  }
  return nullptr;
}

} // namespace

BlockSet selectBlocks(const models::Blocks &blocks) {
  return {attentionBuilder(blocks.attention), mlpBuilder(blocks.mlp),
          decoderLayerBuilder(blocks.decoderLayer)};
}

} // namespace etllm::import
