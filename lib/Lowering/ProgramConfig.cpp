//===- ProgramConfig.cpp - What the serializer reads of the model config --===//
#include "etllm/Lowering/ProgramConfig.h"

#include "etllm/Dialect/Etllm/EtllmDialect.h"
#include "etllm/Dialect/Etllm/EtllmModelConfig.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {

ProgramConfig readProgramConfig(ModuleOp module) {
  ProgramConfig c;
  c.maxSeqLenSource = (llvm::Twine("max_seq_len in the module's ") +
                       EtllmDialect::kModelConfigAttrName)
                          .str();
  if (auto ring = module->getAttrOfType<DictionaryAttr>(
          EtllmDialect::kKvRingAttrName)) {
    if (auto chunk = ring.getAs<IntegerAttr>("chunk"))
      c.ringChunk = chunk.getInt();
    if (auto sinks = ring.getAs<IntegerAttr>("sinks"))
      c.ringSinks = sinks.getInt();
  }
  ModelConfigAttr cfg = getModelConfig(module);
  if (!cfg)
    return c;
  c.maxSeqLen = cfg.getMaxSeqLen();
  c.vocabSize = cfg.getVocabSize();
  c.bosTokenId = cfg.getBosTokenId();
  c.eosTokenIds.assign(cfg.getEosTokenIds().begin(),
                       cfg.getEosTokenIds().end());
  return c;
}

std::string calibrationFile(ModuleOp module) {
  if (auto c = module->getAttrOfType<DictionaryAttr>(
          EtllmDialect::kCalibrationAttrName))
    if (auto f = c.getAs<StringAttr>("file"))
      return f.getValue().str();
  return "";
}

std::string modelConfigJson(ModuleOp module) {
  ModelConfigAttr cfg = getModelConfig(module);
  return cfg ? cfg.toJson() : "{}";
}

} // namespace etllm
