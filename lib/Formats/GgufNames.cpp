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

/// Parses "<MoeExperts>.<j>.<rest>" (an expert module's path below the
/// layer); false otherwise.
bool splitExpert(const FamilySpec &f, const std::string &base, int64_t &expert,
                 std::string &rest) {
  return detail::splitLayerName(
      base,
      f.hfNames[static_cast<size_t>(models::HfModule::MoeExperts)] +
          std::string("."),
      expert, rest);
}

} // namespace

std::string detail::ggufNameToHf(const models::FamilySpec &family,
                                 const std::string &name, int64_t expert) {
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
    if (models::isExpertModule(row.hf) != (expert >= 0))
      return ""; // A stacked tensor names one expert's slice.
    if (models::isBareParameter(row.hf))
      return kind == ".bias" ? models::hfPath(*f, row.hf, layer) : "";
    return models::hfPath(*f, row.hf, layer, expert) + kind;
  }
  return "";
}

std::string detail::hfNameToGguf(const models::FamilySpec &family,
                                 const std::string &name, int64_t *expert) {
  const FamilySpec *f = &family;
  if (expert)
    *expert = -1;
  std::string layers =
      f->hfNames[static_cast<size_t>(models::HfModule::Layers)] +
      std::string(".");
  std::string base, kind, suffix;
  int64_t layer = -1;
  bool isLayer = detail::splitLayerName(name, layers, layer, suffix);
  for (const models::GgufTensorName &row : f->gguf.tensors) {
    if (!isLayer || !models::isBareParameter(row.hf) ||
        suffix != f->hfNames[static_cast<size_t>(row.hf)])
      continue;
    return "blk." + std::to_string(layer) + "." +
           models::ggufTensorName(row.gguf) + ".bias";
  }
  if (!splitKind(isLayer ? suffix : name, base, kind))
    return "";
  int64_t j = -1;
  std::string rest;
  bool isExpert = isLayer && splitExpert(*f, base, j, rest);
  for (const models::GgufTensorName &row : f->gguf.tensors) {
    if (isLayer != models::isLayerModule(row.hf) ||
        models::isBareParameter(row.hf))
      continue;
    bool expertRow = models::isExpertModule(row.hf);
    if (expertRow ? !isExpert || rest != f->hfNames[static_cast<size_t>(row.hf)]
                  : base != f->hfNames[static_cast<size_t>(row.hf)])
      continue;
    if (!isLayer && kind != ".weight")
      return "";
    if (expertRow && kind != ".weight")
      return ""; // Experts have no biases in any supported family.
    if (expertRow && expert)
      *expert = j;
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

std::string ggufNameToHf(const models::FamilySpec &family,
                         const std::string &name, int64_t expert) {
  return detail::ggufNameToHf(family, name, expert);
}

std::string hfNameToGguf(const models::FamilySpec &family,
                         const std::string &name, int64_t *expert) {
  return detail::hfNameToGguf(family, name, expert);
}

std::string ggufArchForModelType(const std::string &modelType) {
  const FamilySpec *f = models::findByModelType(modelType);
  return f && f->gguf.arch ? f->gguf.arch : "";
}

} // namespace etllm::formats
