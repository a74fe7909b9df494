//===- Registry.h - The model families --------------------------*- C++ -*-===//
//
// Every FamilySpec (lib/Models/Families/<Name>.cpp), in one table built at
// compile time from the files of that folder, and the lookups the readers,
// writers, generator and graph builder use instead of comparing names.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_MODELS_REGISTRY_H
#define ETLLM_MODELS_REGISTRY_H

#include "etllm/Models/Family.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace etllm::models {

/// Every family, ordered by file name.
const std::vector<const FamilySpec *> &families();

/// The family of a transformers class ("LlamaForCausalLM"), or null.
const FamilySpec *findByArchitecture(std::string_view hfArchitecture);
/// The family of a transformers model_type ("llama"), or null.
const FamilySpec *findByModelType(std::string_view hfModelType);
/// The family a GGUF general.architecture opens as ("llama"), or null.
/// Families that need a key to read back (GgufSpec::readsBackWithKey) are
/// skipped; when families share the architecture, the one marked
/// identityDefault.
const FamilySpec *findByGgufArch(std::string_view ggufArch);
/// The family a GGUF file opens as, given its architecture and its integer
/// metadata (`value(key)`: "<arch>.<name>", nullopt when absent): a family
/// whose readsBackWithKey the file has (Mixtral: "llama" with
/// expert_count), else among those sharing the architecture the one whose
/// identityKey holds its identityValue, else the one of
/// findByGgufArch(ggufArch).
const FamilySpec *
findByGgufArch(std::string_view ggufArch,
               const std::function<std::optional<int64_t>(GgufKey)> &value);
/// The family of a generator id (--arch), or null.
const FamilySpec *findById(std::string_view id);
/// The family llama2.c checkpoints import as.
const FamilySpec &llama2cFamily();

/// For messages: "GemmaForCausalLM, Gemma2ForCausalLM, ...".
std::string supportedArchitectures();
/// For messages: the GGUF architectures that open ("gemma, gemma2, ...").
std::string supportedGgufArchs();
/// For messages: the generator ids ("gemma, gemma2, ...").
std::string supportedIds();

/// llama.cpp's spelling of a metadata key, without the "<arch>." prefix
/// (except general.* keys, which have none): "attention.head_count".
const char *ggufKeyName(GgufKey key);
/// True for keys of the architecture ("<arch>.<name>").
bool ggufKeyHasArchPrefix(GgufKey key);
/// llama.cpp's name of a tensor ("attn_q"), without "blk.<i>." or ".weight".
const char *ggufTensorName(GgufTensor tensor);

/// The config.json spelling of a routing choice ("softmax", "noaux_tc"),
/// which #etllm.model_config records too.
const char *moeScoringName(MoeScoring scoring);
const char *moeTopkMethodName(MoeTopkMethod method);

/// True when `module` lives inside a decoder layer.
bool isLayerModule(HfModule module);
/// True for the projections of one routed expert (their path has the
/// expert's index: "<layer>.<MoeExperts>.<j>.<name>").
bool isExpertModule(HfModule module);
/// True for a module entry that names a parameter itself, not a module
/// whose ".weight"/".bias" are the tensors (DeepSeek-V3's
/// "mlp.gate.e_score_correction_bias").
bool isBareParameter(HfModule module);
/// The module's full path: "model.embed_tokens", or for a per-layer module
/// "model.layers.<layer>.self_attn.q_proj", or for an expert module
/// "model.layers.<layer>.mlp.experts.<expert>.gate_proj".
std::string hfPath(const FamilySpec &family, HfModule module,
                   int64_t layer = -1, int64_t expert = -1);

} // namespace etllm::models

#endif // ETLLM_MODELS_REGISTRY_H
