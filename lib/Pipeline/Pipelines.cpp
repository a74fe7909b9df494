//===- Pipelines.cpp - Named recipes as stage lists -----------------------===//
#include "etllm/Pipeline/Pipelines.h"

#include "etllm/Config/RecipeAliases.h"
#include "etllm/Pipeline/Calibrate.h"
#include "etllm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace etllm {

namespace {
/// A recipe's choices; each recipe below sets the ones it changes, by name.
struct Recipe {
  std::string name;
  std::string description;
  LinearScheme linear = LinearScheme::None;
  int64_t groupSize = 32;
  std::vector<std::string> backends;
  EmbeddingScheme embedding = EmbeddingScheme::None;
  OutputLayerScheme outputLayer = OutputLayerScheme::Same;
  ScaleType scaleType = ScaleType::F32;
  ActivationScheme activations = ActivationScheme::F32;
  int64_t embeddingGroupSize = -1;
  /// Options of the backends' compiler halves (etllm-partition's
  /// backend-options).
  std::vector<std::string> backendOptions;
};

Recipe portable() {
  Recipe r;
  r.name = "portable";
  r.description = "fp32, level-B fused ops, no delegate: every op on "
                  "portable kernels";
  return r;
}

Recipe cpuFp32() {
  Recipe r;
  r.name = "cpu-fp32";
  r.description = "fp32 weights and activations, delegated to the optimized "
                  "CPU backend";
  r.backends = {rt::cpu::kBackendId};
  return r;
}

/// Int4 group-wise weights (group 32, f16 scales: Q4_0's bytes) and an int4
/// embedding (one table with a tied lm_head): cpu-int4's and vulkan-int4's.
Recipe withInt4Weights(Recipe r) {
  r.linear = LinearScheme::Int4;
  r.embedding = EmbeddingScheme::Int4;
  r.scaleType = ScaleType::F16;
  r.embeddingGroupSize = 32;
  return r;
}

Recipe cpuInt4() {
  Recipe r = withInt4Weights(cpuFp32());
  r.name = "cpu-int4";
  r.description = "int4 group-wise weights (group 32, f16 scales: Q4_0's "
                  "bytes), int8 activations per block of 32 (Q8_0), int4 "
                  "embedding (one table with a tied lm_head), on the CPU "
                  "backend";
  r.activations = ActivationScheme::Int8Block;
  return r;
}

Recipe cpu8da4w() {
  Recipe r = cpuFp32();
  r.name = "cpu-8da4w";
  r.description = "int8 dynamic per-token activations x int4 group-wise "
                  "weights (group 32), int8 per-row embedding, 8da8w lm_head: "
                  "ExecuTorch's default CPU recipe";
  r.linear = LinearScheme::Dyn8Int4;
  r.embedding = EmbeddingScheme::Int8;
  r.outputLayer = OutputLayerScheme::Dyn8Int8;
  return r;
}

Recipe cpu8sa4w() {
  Recipe r = cpu8da4w();
  r.name = "cpu-8sa4w";
  r.description = "int8 static per-tensor activations (scales from a "
                  "calibration text) x int4 group-wise weights (group 32), "
                  "int8 per-row embedding, 8-bit lm_head: what NPUs run, "
                  "on the CPU backend";
  r.activations = ActivationScheme::Int8Static;
  return r;
}

Recipe cpuGguf() {
  // cpu-int4's activations (Q8_0 blocks) with every weight in its own type.
  Recipe r = cpuInt4();
  r.name = "cpu-gguf";
  r.description = "a GGUF's own mix kept exactly, as llama.cpp runs it: every "
                  "weight in its GGUF type (Q4_0, Q4_1, Q8_0, Q5_0, Q5_1, "
                  "Q4_K, Q5_K, Q6_K blocks bit for bit; float stays float), "
                  "int8 activations per block of 32, on the CPU backend";
  r.linear = LinearScheme::Gguf;
  r.embedding = EmbeddingScheme::Gguf;
  return r;
}

Recipe cpuInt8() {
  Recipe r = cpuFp32();
  r.name = "cpu-int8";
  r.description = "int8 per-channel weights, fp32 activations, int8 per-row "
                  "embedding (one table with a tied lm_head), on the CPU "
                  "backend";
  r.linear = LinearScheme::Int8;
  r.groupSize = -1;
  r.embedding = EmbeddingScheme::Int8;
  return r;
}

Recipe vulkanFp32() {
  Recipe r;
  r.name = "vulkan-fp32";
  r.description = "fp32 weights and activations, delegated to the Vulkan GPU "
                  "backend (what it cannot run stays on portable kernels)";
  r.backends = {"vulkan"};
  return r;
}

Recipe vulkanFp16() {
  Recipe r = vulkanFp32();
  r.name = "vulkan-fp16";
  r.description = "the fp32 graph on the Vulkan GPU backend with f16 weights "
                  "and activations (sums, norms, softmax and RoPE in f32; f16 "
                  "KV cache)";
  r.backendOptions = {"vulkan.precision=f16"};
  return r;
}

Recipe vulkanInt4() {
  Recipe r = withInt4Weights(vulkanFp16());
  r.name = "vulkan-int4";
  r.description = "int4 group-wise weights (group 32, f16 scales), int4 "
                  "embedding (one table with a tied lm_head), f16 activations "
                  "on the Vulkan GPU backend";
  return r;
}

Recipe vulkanInt4Mixed() {
  Recipe r = vulkanInt4();
  r.name = "vulkan-int4-mixed";
  r.description = "vulkan-int4 in a program mixed with the CPU: the RMSNorms "
                  "on the CPU backend (cpu), the attention (RoPE, KV "
                  "cache, SDPA) on portable kernels, the rest on the GPU";
  r.backends = {"vulkan", rt::cpu::kBackendId};
  r.backendOptions.push_back("vulkan.exclude=etllm.rms_norm:etllm.rope:"
                             "etllm.kv_cache.update:etllm.sdpa");
  return r;
}

/// Every recipe, in documentation order.
const std::vector<Recipe> &recipes() {
  static const std::vector<Recipe> r = {
      portable(), cpuFp32(),    cpuInt4(),    cpu8da4w(),
      cpu8sa4w(), cpuGguf(),    cpuInt8(),    vulkanFp32(),
      vulkanFp16(), vulkanInt4(), vulkanInt4Mixed()};
  return r;
}

/// Reports a recipe option whose value is not one of its enum's (a pass, so
/// that a registered pipeline, which cannot return an error, fails with
/// the message when it runs).
struct OptionErrorPass
    : public mlir::PassWrapper<OptionErrorPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OptionErrorPass)
  explicit OptionErrorPass(std::string message) : message(std::move(message)) {}
  llvm::StringRef getArgument() const override {
    return "etllm-recipe-option-error";
  }
  void runOnOperation() override {
    getOperation().emitError(message);
    signalPassFailure();
  }
  std::string message;
};

/// The option's value: the recipe's for "" or "pipeline"; else its
/// spelling, or an error naming the option (by its flag, declared once in
/// RecipeOptions) and the accepted values.
template <typename E, typename Opt>
E chooseOption(const std::string &recipe, const Opt &option, E recipeValue,
               std::string &error) {
  const std::string &value = option.getValue();
  const std::string flag = option.ArgStr.str();
  if (value.empty() || value == "pipeline")
    return recipeValue;
  if (std::optional<E> v = parseOptionEnum<E>(value))
    return *v;
  if (error.empty())
    error = recipe + ": " + flag + "='" + value + "' is not one of " +
            optionEnumSpellings<E>() + " (or pipeline: the recipe's)";
  return recipeValue;
}

/// The recipe `name` names: its own name or an alias (RecipeAliases.h).
const Recipe *findRecipe(const std::string &name) {
  std::string canonical = canonicalRecipeName(name);
  for (const Recipe &r : recipes())
    if (r.name == canonical)
      return &r;
  return nullptr;
}

void cleanup(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}
} // namespace

const std::vector<std::string> &recipeNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Recipe &r : recipes())
      n.push_back(r.name);
    return n;
  }();
  return names;
}

std::vector<StageSpec> recipeStages(const std::string &recipe,
                                    const RecipeOptions &o) {
  const Recipe *r = findRecipe(recipe);
  if (!r)
    return {};
  std::string optionError;
  LinearScheme linear = chooseOption(recipe, o.linear, r->linear, optionError);
  EmbeddingScheme embedding =
      chooseOption(recipe, o.embedding, r->embedding, optionError);
  OutputLayerScheme outputLayer =
      chooseOption(recipe, o.outputLayer, r->outputLayer, optionError);
  ScaleType scaleType =
      chooseOption(recipe, o.scaleType, r->scaleType, optionError);
  ActivationScheme activations =
      chooseOption(recipe, o.activations, r->activations, optionError);
  // Caches that leave the program (static-kv-cache=io) are the model's
  // dtype: quantized ones stay its buffers.
  if (optionError.empty() && o.staticPrefillChunk > 0 &&
      o.staticKvCache == StaticKvCache::Io &&
      o.kvCacheDtype != KvCacheDtype::Model)
    optionError = recipe + ": kv-cache-dtype='" +
                  spell(o.kvCacheDtype.getValue()) +
                  "' needs static-kv-cache=in-place (the caches a static "
                  "program takes as inputs and outputs are float)";
  if (optionError.empty() && activations == ActivationScheme::Int8Static &&
      o.calibration.empty())
    optionError = recipe + ": activations=int8-static needs a calibration "
                           "text (calibration, quantization.calibration)";
  if (optionError.empty() && o.attentionSinks > 0 && o.kvRingChunk <= 0)
    optionError = recipe + ": attention-sinks needs kv-ring-chunk > 0 (the "
                           "sinks' caches are rings)";
  if (optionError.empty() && (o.kvRingChunk < 0 || o.attentionSinks < 0))
    optionError = recipe + ": kv-ring-chunk and attention-sinks must not be "
                           "negative";
  // A static program's rings are its buffers, written by calls of its
  // prefill chunk.
  if (optionError.empty() && o.kvRingChunk > 0 && o.staticPrefillChunk > 0 &&
      o.staticKvCache == StaticKvCache::Io)
    optionError = recipe + ": kv-ring-chunk needs static-kv-cache=in-place "
                           "in a static program (the ring caches are its "
                           "buffers)";
  if (optionError.empty() && o.kvRingChunk > 0 && o.staticPrefillChunk > 0 &&
      o.kvRingChunk != o.staticPrefillChunk)
    optionError = recipe + ": kv-ring-chunk " +
                  std::to_string(o.kvRingChunk.getValue()) +
                  " must be the static program's prefill chunk " +
                  std::to_string(o.staticPrefillChunk.getValue()) +
                  " (the most tokens of a call)";
  if (!optionError.empty())
    return {{"options", [optionError](mlir::OpPassManager &pm) {
               pm.addPass(std::make_unique<OptionErrorPass>(optionError));
             }}};
  int64_t groupSize = o.groupSize == 0 ? r->groupSize : o.groupSize.getValue();
  int64_t embeddingGroupSize = o.embeddingGroupSize == 0
                                   ? r->embeddingGroupSize
                                   : o.embeddingGroupSize.getValue();
  std::vector<std::string> backends(o.backends.begin(), o.backends.end());
  if (backends.empty())
    backends = r->backends;
  std::vector<std::string> backendOptions = r->backendOptions;
  backendOptions.insert(backendOptions.end(), o.backendOptions.begin(),
                        o.backendOptions.end());
  bool quantize = linear != LinearScheme::None ||
                  embedding != EmbeddingScheme::None ||
                  (outputLayer != OutputLayerScheme::Same &&
                   outputLayer != OutputLayerScheme::None);

  std::vector<StageSpec> stages;
  MlaCacheForm mlaCache = o.mlaCache;
  MoeMode moe = o.moe;
  stages.push_back({"swap-source", [mlaCache, moe](mlir::OpPassManager &pm) {
                      SwapSourcePassOptions swap;
                      swap.mlaCache = mlaCache;
                      swap.moe = moe;
                      pm.addPass(createSwapSourcePass(swap));
                      cleanup(pm);
                    }});
  stages.push_back({"fuse-sdpa", [](mlir::OpPassManager &pm) {
                      pm.addNestedPass<mlir::func::FuncOp>(
                          createFuseSdpaPass());
                      pm.addPass(mlir::createCanonicalizerPass());
                    }});
  // Static activations: each linear's input range from a text (a stage
  // only when asked for), before the static methods copy `forward`.
  if (activations == ActivationScheme::Int8Static) {
    CalibrateOptions c;
    c.file = o.calibration;
    c.samples = o.calibrationSamples;
    c.window = o.calibrationWindow;
    c.tokenizer = o.calibrationTokenizer;
    stages.push_back({"calibrate", [c](mlir::OpPassManager &pm) {
                        pm.addPass(createCalibratePass(c));
                      }});
  }
  // Static-shape methods for backends that need them (a stage only when
  // asked for: dynamic programs are unchanged).
  if (o.staticPrefillChunk > 0) {
    StaticMethodsPassOptions s;
    s.prefillChunk = o.staticPrefillChunk;
    s.kvCache = o.staticKvCache;
    stages.push_back({"static-methods", [s](mlir::OpPassManager &pm) {
                        pm.addPass(createStaticMethodsPass(s));
                        cleanup(pm);
                      }});
  }
  stages.push_back({"kv-cache-in-place", [](mlir::OpPassManager &pm) {
                      pm.addNestedPass<mlir::func::FuncOp>(
                          createKvCacheInPlacePass());
                      cleanup(pm);
                    }});
  // Ring caches (a stage only when asked for).
  if (o.kvRingChunk > 0) {
    KvRingPassOptions r;
    r.chunk = o.kvRingChunk;
    r.sinks = o.attentionSinks;
    stages.push_back({"kv-ring", [r](mlir::OpPassManager &pm) {
                        pm.addPass(createKvRingPass(r));
                        cleanup(pm);
                      }});
  }
  // The KV caches stored as int8 (a stage only when asked for: programs
  // with float caches are unchanged).
  if (o.kvCacheDtype != KvCacheDtype::Model) {
    KvCacheDtype dtype = o.kvCacheDtype;
    stages.push_back({"quantize-kv-cache", [dtype](mlir::OpPassManager &pm) {
                        QuantizeKvCachePassOptions k;
                        k.dtype = dtype;
                        pm.addPass(createQuantizeKvCachePass(k));
                      }});
  }
  if (quantize) {
    QuantizePassOptions q;
    q.linear = linear;
    q.groupSize = groupSize;
    q.symmetric = o.symmetric;
    q.scaleType = scaleType;
    q.activations = activations;
    q.embedding = embedding;
    q.embeddingGroupSize = embeddingGroupSize;
    q.outputLayer = outputLayer;
    // The options hold an ArrayRef: keep the list alive in the stage.
    std::vector<std::string> exclude(o.exclude.begin(), o.exclude.end());
    stages.push_back({"quantize", [q, exclude](mlir::OpPassManager &pm) {
                        QuantizePassOptions opts = q;
                        opts.exclude = exclude;
                        pm.addPass(createQuantizePass(opts));
                        cleanup(pm);
                      }});
  }
  // Hooks for adapters applied at run time, on the linears as quantized
  // (a stage only when asked for: programs without hooks are unchanged).
  if (!o.loraTargets.empty()) {
    std::vector<std::string> targets(o.loraTargets.begin(),
                                     o.loraTargets.end());
    int64_t maxRank = o.loraMaxRank;
    stages.push_back(
        {"lora-hooks", [targets, maxRank](mlir::OpPassManager &pm) {
           LoraHooksPassOptions l;
           l.targets = targets;
           l.maxRank = maxRank;
           pm.addPass(createLoraHooksPass(l));
         }});
  }
  if (!backends.empty()) {
    stages.push_back(
        {"partition", [backends, backendOptions](mlir::OpPassManager &pm) {
           PartitionPassOptions p;
           p.backends = backends;
           p.backendOptions = backendOptions;
           pm.addPass(createPartitionPass(p));
           pm.addPass(mlir::createSymbolDCEPass());
         }});
    stages.push_back({"lower-backends", [](mlir::OpPassManager &pm) {
                        pm.addPass(createLowerBackendsPass());
                      }});
  }
  // Memory planning is the last IR step of every recipe: the serializer
  // emits the plan it records (etllm-plan-memory). It runs at the end of the
  // last stage rather than as a stage of its own because a program records
  // the names of the stages that built it, and the planned program is the
  // same whether the serializer or this pass plans it.
  std::function<void(mlir::OpPassManager &)> last = stages.back().build;
  stages.back().build = [last](mlir::OpPassManager &pm) {
    last(pm);
    pm.addPass(createPlanMemoryPass());
  };
  return stages;
}

void buildRecipePipeline(mlir::OpPassManager &pm, const std::string &recipe,
                         const RecipeOptions &options) {
  for (const StageSpec &s : recipeStages(recipe, options))
    s.build(pm);
}

const std::vector<std::pair<std::string, std::string>> &recipeAliases() {
  static const std::vector<std::pair<std::string, std::string>> aliases =
      recipeAliasesOf(recipeNames());
  return aliases;
}

void registerRecipePipelines() {
  registerCalibratePass();
  for (const Recipe &r : recipes()) {
    std::string name = r.name;
    mlir::PassPipelineRegistration<RecipeOptions>(
        r.name, r.description,
        [name](mlir::OpPassManager &pm, const RecipeOptions &options) {
          buildRecipePipeline(pm, name, options);
        });
  }
  // Each alias builds its recipe's stages (the same pipeline).
  for (const auto &[alias, recipe] : recipeAliases()) {
    std::string name = recipe;
    mlir::PassPipelineRegistration<RecipeOptions>(
        alias, "former name of " + recipe + " (an alias)",
        [name](mlir::OpPassManager &pm, const RecipeOptions &options) {
          buildRecipePipeline(pm, name, options);
        });
  }
}

} // namespace etllm
