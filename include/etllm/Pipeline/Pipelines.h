//===- Pipelines.h - Named recipes as stage lists ---------------*- C++ -*-===//
//
// A recipe (portable, cpu-fp32, cpu-int4, cpu-8da4w,
// cpu-int8) is an ordered list of stages; each stage is an ordinary MLIR
// pass pipeline. The same list builds the registered MLIR pipeline
// (`etllm-opt --pipeline=cpu-int4`, `--pass-pipeline=...`) and the
// stages etllm-export runs one by one (dumping the IR after each).
//
//   stage               level in -> out   passes
//   swap-source         A -> B            etllm-swap-source, canonicalize, cse
//   fuse-sdpa           A/B -> B          etllm-fuse-sdpa, canonicalize
//   kv-cache-in-place   B -> B            etllm-kv-cache-in-place,
//                                         canonicalize, cse
//   quantize            B -> C            etllm-quantize{...}, canonicalize,
//                                         cse
//   partition           C -> D            etllm-partition{backends=...},
//                                         symbol-dce
//   lower-backends      D -> D            etllm-lower-backends
//
// The last stage of every recipe ends with etllm-plan-memory: the memory
// plan the serializer emits is recorded in the IR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_PIPELINE_PIPELINES_H
#define ETLLM_PIPELINE_PIPELINES_H

#include "etllm/Transforms/OptionEnums.h"

#include "mlir/Pass/PassOptions.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace etllm {

/// Options every recipe accepts; empty/zero values keep the recipe's own.
/// The scheme options are spelled as in OptionEnums.def (or "pipeline",
/// export_config.yaml's word for the recipe's); recipeStages checks them.
struct RecipeOptions : public mlir::PassPipelineOptions<RecipeOptions> {
  Option<std::string> linear{*this, "linear",
                             llvm::cl::desc(recipeOptionHelp<LinearScheme>()),
                             llvm::cl::init("")};
  Option<int64_t> groupSize{
      *this, "group-size",
      llvm::cl::desc(
          "Quantization group size; -1 per channel (default: recipe)"),
      llvm::cl::init(0)};
  Option<bool> symmetric{*this, "symmetric",
                         llvm::cl::desc("Symmetric weight quantization"),
                         llvm::cl::init(true)};
  Option<std::string> scaleType{*this, "scale-type",
                                llvm::cl::desc(recipeOptionHelp<ScaleType>()),
                                llvm::cl::init("")};
  Option<std::string> activations{
      *this, "activations",
      llvm::cl::desc(recipeOptionHelp<ActivationScheme>()), llvm::cl::init("")};
  Option<std::string> calibration{
      *this, "calibration",
      llvm::cl::desc("Calibration text of activations=int8-static "
                     "(etllm-calibrate)"),
      llvm::cl::init("")};
  Option<int64_t> calibrationSamples{
      *this, "calibration-samples",
      llvm::cl::desc("Windows of the calibration text run"),
      llvm::cl::init(8)};
  Option<int64_t> calibrationWindow{
      *this, "calibration-window",
      llvm::cl::desc("Tokens per calibration window"), llvm::cl::init(128)};
  Option<std::string> calibrationTokenizer{
      *this, "calibration-tokenizer",
      llvm::cl::desc("Tokenizer of the calibration text (default: the "
                     "checkpoint's)"),
      llvm::cl::init("")};
  Option<std::string> embedding{
      *this, "embedding", llvm::cl::desc(recipeOptionHelp<EmbeddingScheme>()),
      llvm::cl::init("")};
  Option<int64_t> embeddingGroupSize{
      *this, "embedding-group-size",
      llvm::cl::desc("Embedding group size; -1 per row (default: recipe)"),
      llvm::cl::init(0)};
  Option<std::string> outputLayer{
      *this, "output-layer",
      llvm::cl::desc(recipeOptionHelp<OutputLayerScheme>()),
      llvm::cl::init("")};
  Option<MlaCacheForm> mlaCache{
      *this, "mla-cache", llvm::cl::desc("Multi-head latent attention cache"),
      llvm::cl::init(MlaCacheForm::Expanded), optionValues<MlaCacheForm>()};
  Option<KvCacheDtype> kvCacheDtype{
      *this, "kv-cache-dtype", llvm::cl::desc("Element type of the KV caches"),
      llvm::cl::init(KvCacheDtype::Model), optionValues<KvCacheDtype>()};
  Option<int64_t> staticPrefillChunk{
      *this, "static-prefill-chunk",
      llvm::cl::desc("Static-shape prefill and decode methods, the prefill "
                     "over this many tokens (0: the dynamic forward)"),
      llvm::cl::init(0)};
  Option<StaticKvCache> staticKvCache{
      *this, "static-kv-cache", llvm::cl::desc("KV caches of a static program"),
      llvm::cl::init(StaticKvCache::Io), optionValues<StaticKvCache>()};
  Option<int64_t> kvRingChunk{
      *this, "kv-ring-chunk",
      llvm::cl::desc("Ring KV caches, at most this many tokens per call: "
                     "sliding-window layers keep window + chunk - 1 "
                     "positions (0: no ring)"),
      llvm::cl::init(0)};
  Option<int64_t> attentionSinks{
      *this, "attention-sinks",
      llvm::cl::desc("With kv-ring-chunk: every cache keeps its first S "
                     "positions and a ring, and generation goes on past "
                     "max_seq_len (0: none)"),
      llvm::cl::init(0)};
  Option<MoeMode> moe{
      *this, "moe", llvm::cl::desc("Sparse mixture-of-experts blocks"),
      llvm::cl::init(MoeMode::Experts), optionValues<MoeMode>()};
  ListOption<std::string> exclude{
      *this, "exclude",
      llvm::cl::desc("Linear layers (module path patterns) kept in float")};
  ListOption<std::string> backends{
      *this, "backends",
      llvm::cl::desc("Backends in priority order (default: recipe)")};
  ListOption<std::string> backendOptions{
      *this, "backend-options",
      llvm::cl::desc("Backend options, each <backend>.<key>=<value>, added "
                     "to the recipe's (e.g. vulkan.precision=f32)")};
  ListOption<std::string> loraTargets{
      *this, "lora-targets",
      llvm::cl::desc("Module kinds (q_proj, down_proj, ...) given hooks for "
                     "LoRA adapters applied at run time (etllm-lora-hooks)")};
  Option<int64_t> loraMaxRank{
      *this, "lora-max-rank",
      llvm::cl::desc("Largest rank of a LoRA adapter applied at run time"),
      llvm::cl::init(64)};
};

/// One stage: a name (used for dumps: NN-<name>.mlir) and its passes.
struct StageSpec {
  std::string name;
  std::function<void(mlir::OpPassManager &)> build;
};

/// Names of the registered recipes, in documentation order.
const std::vector<std::string> &recipeNames();
/// The recipes' former names (etllm/Config/RecipeAliases.h), each with its
/// recipe: accepted wherever a recipe is named, registered as pipelines too.
const std::vector<std::pair<std::string, std::string>> &recipeAliases();
/// The stages of `recipe` (a name or an alias) with `options` applied;
/// empty if unknown.
std::vector<StageSpec> recipeStages(const std::string &recipe,
                                    const RecipeOptions &options);
/// Adds every stage of `recipe` to `pm` (anchored on builtin.module).
void buildRecipePipeline(mlir::OpPassManager &pm, const std::string &recipe,
                         const RecipeOptions &options);
/// Registers each recipe as an MLIR pass pipeline.
void registerRecipePipelines();

} // namespace etllm

#endif // ETLLM_PIPELINE_PIPELINES_H
