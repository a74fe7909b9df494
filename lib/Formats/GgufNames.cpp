//===- GgufNames.cpp - llama.cpp tensor names <-> Hugging Face names ------===//
//
// Both directions from the family spec's tensor-name table (GgufSpec::
// tensors, llama.cpp's LLM_TENSOR_NAMES) and module paths (hfNames).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/Models/Registry.h"

#include <cstring>

namespace etllm::formats {

//===----------------------------------------------------------------------===//
// Tensor names
//===----------------------------------------------------------------------===//

namespace {

using models::FamilySpec;

/// Splits "x.weight"/"x.bias".
bool splitKind(const std::string &name, std::string &base, std::string &kind) {
  for (const char *k : {".weight", ".bias"}) {
    size_t n = std::strlen(k);
    if (name.size() > n && name.compare(name.size() - n, n, k) == 0) {
      base = name.substr(0, name.size() - n);
      kind = k;
      return true;
    }
  }
  return false;
}

} // namespace

std::string detail::ggufNameToHf(const models::FamilySpec &family,
                                 const std::string &name) {
  const FamilySpec *f = &family;
  std::string base, kind, suffix;
  int64_t layer = -1;
  bool isLayer = detail::splitLayerName(name, "blk.", layer, suffix);
  if (!splitKind(isLayer ? suffix : name, base, kind))
    return "";
  for (const models::GgufTensorName &row : f->gguf.tensors) {
    if (isLayer != models::isLayerModule(row.hf) ||
        base != models::ggufTensorName(row.gguf))
      continue;
    if (!isLayer && kind != ".weight")
      return ""; // Model-level tensors have no bias.
    return models::hfPath(*f, row.hf, layer) + kind;
  }
  return "";
}

std::string detail::hfNameToGguf(const models::FamilySpec &family,
                                 const std::string &name) {
  const FamilySpec *f = &family;
  std::string layers =
      f->hfNames[static_cast<size_t>(models::HfModule::Layers)] +
      std::string(".");
  std::string base, kind, suffix;
  int64_t layer = -1;
  bool isLayer = detail::splitLayerName(name, layers, layer, suffix);
  if (!splitKind(isLayer ? suffix : name, base, kind))
    return "";
  for (const models::GgufTensorName &row : f->gguf.tensors) {
    if (isLayer != models::isLayerModule(row.hf) ||
        base != f->hfNames[static_cast<size_t>(row.hf)])
      continue;
    if (!isLayer && kind != ".weight")
      return "";
    std::string g = models::ggufTensorName(row.gguf) + kind;
    return isLayer ? "blk." + std::to_string(layer) + "." + g : g;
  }
  return "";
}

std::string ggufNameToHf(const std::string &arch, const std::string &name) {
  const FamilySpec *f = models::findByGgufArch(arch);
  return f ? detail::ggufNameToHf(*f, name) : "";
}

std::string hfNameToGguf(const std::string &arch, const std::string &name) {
  const FamilySpec *f = models::findByGgufArch(arch);
  return f ? detail::hfNameToGguf(*f, name) : "";
}

std::string ggufArchForModelType(const std::string &modelType) {
  const FamilySpec *f = models::findByModelType(modelType);
  return f && f->gguf.arch ? f->gguf.arch : "";
}

} // namespace etllm::formats
