//===- Llama.cpp - LlamaForCausalLM (Llama 2, 3, 3.1, 3.2) ----------------===//
//
// transformers models/llama (LlamaConfig, modeling_llama.py); llama.cpp
// LLM_ARCH_LLAMA ("llama") and convert_hf_to_gguf.py's LlamaModel, which
// permutes q/k rows for ggml's RoPE and stores llama3 rope scaling as the
// rope_freqs tensor. llama2.c checkpoints (run.c) are Llamas too.
//
//===----------------------------------------------------------------------===//
#include "../SpecTables.h"
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeLlamaFamily() {
  FamilySpec s = renamed(FamilySpec(), "LlamaForCausalLM", "llama", "Llama");

  s.hf.maxPositionEmbeddings = 2048;
  s.hf.rmsNormEps = 1e-6;
  s.hf.bosTokenId = 1;
  s.hf.eosTokenId = 2;
  s.hf.bias = BiasRule::AttentionBiasKey;
  s.hf.mlpBiasKey = true;
  s.hf.constants = {{"pretraining_tp", ConstantKey::Kind::Int, 1}};

  s.gguf.arch = "llama";
  s.gguf.permutesQk = true;
  // TextModel's keys, then LlamaModel's.
  s.gguf.metadata = textModelMetadata();
  s.gguf.metadata.push_back(GgufKey::VocabSize);
  s.gguf.metadata.push_back(GgufKey::RopeDimensionCount);
  s.gguf.tensors = {
      {GgufTensor::TokenEmbd, HfModule::Embed},
      {GgufTensor::OutputNorm, HfModule::FinalNorm},
      {GgufTensor::Output, HfModule::LmHead},
      {GgufTensor::AttnNorm, HfModule::InputNorm},
      {GgufTensor::AttnQ, HfModule::QProj},
      {GgufTensor::AttnK, HfModule::KProj},
      {GgufTensor::AttnV, HfModule::VProj},
      {GgufTensor::AttnOut, HfModule::OProj},
      {GgufTensor::FfnNorm, HfModule::PostAttentionNorm},
      {GgufTensor::FfnGate, HfModule::GateProj},
      {GgufTensor::FfnUp, HfModule::UpProj},
      {GgufTensor::FfnDown, HfModule::DownProj},
  };

  s.generator.vocab = SyntheticVocab::SentencePiece;
  s.generator.llama3RopeScaling = true;
  GeneratorPreset llama32 =
      sizedPreset("llama-3.2-1b", 2048, 16, 32, 8, 64, 8192, 128256, 131072);
  llama32.tied = true;
  llama32.ropeTheta = 500000.0;
  llama32.rmsEps = 1e-5;
  llama32.ropeScaling = "llama3";
  llama32.vocab = SyntheticVocab::Llama3Bpe;
  s.generator.presets = {llama32};

  s.llama2c = true;
  return s;
}

} // namespace etllm::models
