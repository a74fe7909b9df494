//===- Registry.cpp - The table of model families -------------------------===//
//
// The table is the list of files in Families/ (FamilyList.h, generated):
// registration is explicit and from one place, with no static initializers.
// Lookups are linear: there are a handful of families.
//
//===----------------------------------------------------------------------===//
#include "etllm/Models/Registry.h"
#include "FamilyList.h"

#include <iterator>

namespace etllm::models {

FamilySpec renamed(FamilySpec base, const char *hfArchitecture,
                   const char *hfModelType, const char *classPrefix) {
  base.hfArchitecture = hfArchitecture;
  base.hfModelType = hfModelType;
  base.classPrefix = classPrefix;
  return base;
}

namespace {
FamilySpec withId(FamilySpec spec, const char *id) {
  spec.id = id;
  return spec;
}
} // namespace

#define ETLLM_FAMILY(id, fn, make)                                             \
  const FamilySpec &fn() {                                                     \
    static const FamilySpec spec = withId(make(), #id);                        \
    return spec;                                                               \
  }
#include "Families.inc"
#undef ETLLM_FAMILY

const std::vector<const FamilySpec *> &families() {
  static const std::vector<const FamilySpec *> table = {
#define ETLLM_FAMILY(id, fn, make) &fn(),
#include "Families.inc"
#undef ETLLM_FAMILY
  };
  return table;
}

namespace {
template <typename Pred> const FamilySpec *findIf(Pred pred) {
  for (const FamilySpec *f : families())
    if (pred(*f))
      return f;
  return nullptr;
}

template <typename Get> std::string join(Get get) {
  std::string s;
  for (const FamilySpec *f : families()) {
    const char *name = get(*f);
    if (!name)
      continue;
    if (!s.empty())
      s += ", ";
    s += name;
  }
  return s;
}
} // namespace

const FamilySpec *findByArchitecture(std::string_view hfArchitecture) {
  return findIf([&](const FamilySpec &f) {
    return !hfArchitecture.empty() && f.hfArchitecture == hfArchitecture;
  });
}

const FamilySpec *findByModelType(std::string_view hfModelType) {
  return findIf([&](const FamilySpec &f) {
    return !hfModelType.empty() && f.hfModelType == hfModelType;
  });
}

const FamilySpec *
findByGgufArch(std::string_view ggufArch,
               const std::function<std::optional<int64_t>(GgufKey)> &value) {
  auto sameArch = [&](const FamilySpec *f) {
    return f->gguf.arch && f->gguf.readsBack && f->gguf.arch == ggufArch;
  };
  // A family that needs a key to read back (Mixtral: "llama" with
  // expert_count) when the file has the key.
  if (value)
    for (const FamilySpec *f : families())
      if (sameArch(f) && f->gguf.readsBackWithKey != GgufKey::None &&
          value(f->gguf.readsBackWithKey))
        return f;
  const FamilySpec *fallback = nullptr;
  for (const FamilySpec *f : families()) {
    if (!sameArch(f) || f->gguf.readsBackWithKey != GgufKey::None)
      continue;
    if (f->gguf.identityKey == GgufKey::None)
      return f;
    if (value)
      if (std::optional<int64_t> v = value(f->gguf.identityKey);
          v && *v == f->gguf.identityValue)
        return f;
    if (f->gguf.identityDefault)
      fallback = f;
  }
  return fallback;
}

const FamilySpec *findByGgufArch(std::string_view ggufArch) {
  return findByGgufArch(ggufArch, nullptr);
}

const FamilySpec *findById(std::string_view id) {
  return findIf([&](const FamilySpec &f) { return f.id == id; });
}

const FamilySpec &llama2cFamily() {
  const FamilySpec *f = findIf([](const FamilySpec &f) { return f.llama2c; });
  // A build without a llama2.c family is a registry bug, not an input error.
  if (!f)
    __builtin_trap();
  return *f;
}

std::string supportedArchitectures() {
  return join([](const FamilySpec &f) { return f.hfArchitecture; });
}

std::string supportedGgufArchs() {
  return join([](const FamilySpec &f) {
    return f.gguf.readsBack ? f.gguf.arch : nullptr;
  });
}

std::string supportedIds() {
  return join([](const FamilySpec &f) { return f.id; });
}

const char *moeScoringName(MoeScoring scoring) {
  size_t i = static_cast<size_t>(scoring);
  return i < std::size(kMoeScoringNames) ? kMoeScoringNames[i] : "";
}

const char *moeTopkMethodName(MoeTopkMethod method) {
  size_t i = static_cast<size_t>(method);
  return i < std::size(kMoeTopkMethodNames) ? kMoeTopkMethodNames[i] : "";
}

bool isLayerModule(HfModule module) {
  return static_cast<int>(module) >= static_cast<int>(HfModule::InputNorm);
}

bool isExpertModule(HfModule module) {
  switch (module) {
  case HfModule::ExpertGateProj:
  case HfModule::ExpertUpProj:
  case HfModule::ExpertDownProj:
  case HfModule::ExpertActFn:
    return true;
  default:
    return false;
  }
}

bool isBareParameter(HfModule module) {
  return module == HfModule::MoeRouterBias;
}

std::string hfPath(const FamilySpec &family, HfModule module, int64_t layer,
                   int64_t expert) {
  const char *name = family.hfNames[static_cast<size_t>(module)];
  if (!isLayerModule(module))
    return name;
  std::string layerPath =
      std::string(family.hfNames[static_cast<size_t>(HfModule::Layers)]) + "." +
      std::to_string(layer) + ".";
  if (isExpertModule(module))
    return layerPath +
           family.hfNames[static_cast<size_t>(HfModule::MoeExperts)] + "." +
           std::to_string(expert) + "." + name;
  return layerPath + name;
}

} // namespace etllm::models
