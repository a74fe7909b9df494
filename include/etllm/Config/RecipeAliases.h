//===- RecipeAliases.h - Former names of recipes ----------------*- C++ -*-===//
//
// A recipe is named after the backend it delegates to (`cpu-int4`). When a
// backend is renamed, its former id (etllm/runtime/cpu/backend.h
// kFormerBackendIds: "xnnpack") keeps naming its recipes: `xnnpack-int4` is
// an alias of `cpu-int4`, accepted wherever a recipe is named (etllm-opt
// --pipeline, etllm-export --pipeline, export_config.yaml's pipeline.name,
// Python's run_recipe and export_llm), and it resolves to exactly that
// recipe. Tools print the recipe's own name. Here, below the pipelines
// (lib/Pipeline), because the configuration checks pipeline.name with it.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_CONFIG_RECIPEALIASES_H
#define ETLLM_CONFIG_RECIPEALIASES_H

#include "etllm/runtime/cpu/backend.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace etllm {

/// Whether `name` is backend id `id` and a recipe suffix ("cpu-int4" for
/// "cpu": true).
inline bool namedAfter(std::string_view name, std::string_view id) {
  return name.size() > id.size() && name.substr(0, id.size()) == id &&
         name[id.size()] == '-';
}

/// `name` with a former backend id at its front replaced by the backend's
/// id (`xnnpack-int4` -> `cpu-int4`); any other name as given. Whether the
/// result is a recipe is the caller's to check.
inline std::string canonicalRecipeName(std::string_view name) {
  for (std::string_view former : rt::cpu::kFormerBackendIds)
    if (namedAfter(name, former))
      return rt::cpu::kBackendId + std::string(name.substr(former.size()));
  return std::string(name);
}

/// The aliases of `recipes` (in their order): each former name with the
/// recipe it resolves to.
inline std::vector<std::pair<std::string, std::string>>
recipeAliasesOf(const std::vector<std::string> &recipes) {
  std::vector<std::pair<std::string, std::string>> aliases;
  const std::string_view id(rt::cpu::kBackendId);
  for (const std::string &r : recipes)
    if (namedAfter(r, id))
      for (const char *former : rt::cpu::kFormerBackendIds)
        aliases.push_back({former + r.substr(id.size()), r});
  return aliases;
}

} // namespace etllm

#endif // ETLLM_CONFIG_RECIPEALIASES_H
