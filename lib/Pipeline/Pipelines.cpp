//===- Pipelines.cpp - Named recipes as stage lists -----------------------===//
#include "etllm/Pipeline/Pipelines.h"

#include "etllm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace etllm {

namespace {
struct Recipe {
  const char *name;
  const char *description;
  const char *linear;
  int64_t groupSize;
  std::vector<std::string> backends;
  const char *embedding = "none";
  const char *outputLayer = "same";
  const char *scaleType = "f32";
  const char *activations = "f32";
  int64_t embeddingGroupSize = -1;
  /// Options of the backends' compiler halves (etllm-partition's
  /// backend-options).
  std::vector<std::string> backendOptions = {};
};

const std::vector<Recipe> &recipes() {
  static const std::vector<Recipe> r = {
      {"portable",
       "fp32, level-B fused ops, no delegate: every op on portable "
       "kernels",
       "none",
       32,
       {}},
      {"xnnpack-fp32",
       "fp32 weights and activations, delegated to the "
       "optimized CPU backend",
       "none",
       32,
       {"xnnpack"}},
      {"xnnpack-int4",
       "int4 group-wise weights (group 32, f16 scales: Q4_0's bytes), int8 "
       "activations per block of 32 (Q8_0), int4 embedding (one table with "
       "a tied lm_head), on the CPU backend",
       "int4",
       32,
       {"xnnpack"},
       "int4",
       "same",
       "f16",
       "int8-block",
       32},
      {"xnnpack-8da4w",
       "int8 dynamic per-token activations x int4 group-wise "
       "weights (group 32), int8 per-row embedding, 8da8w lm_head: "
       "ExecuTorch's default CPU recipe",
       "8da4w",
       32,
       {"xnnpack"},
       "int8",
       "8da8w"},
      {"xnnpack-int8",
       "int8 per-channel weights, fp32 activations, int8 per-row embedding "
       "(one table with a tied lm_head), on the CPU backend",
       "int8",
       -1,
       {"xnnpack"},
       "int8",
       "same",
       "f32",
       "f32",
       -1},
      {"vulkan-fp32",
       "fp32 weights and activations, delegated to the Vulkan GPU backend "
       "(what it cannot run stays on portable kernels)",
       "none",
       32,
       {"vulkan"}},
      {"vulkan-fp16",
       "the fp32 graph on the Vulkan GPU backend with f16 weights and "
       "activations (sums, norms, softmax and RoPE in f32; f16 KV cache)",
       "none",
       32,
       {"vulkan"},
       "none",
       "same",
       "f32",
       "f32",
       -1,
       {"vulkan.precision=f16"}},
      {"vulkan-int4",
       "int4 group-wise weights (group 32, f16 scales), int4 embedding (one "
       "table with a tied lm_head), f16 activations on the Vulkan GPU "
       "backend",
       "int4",
       32,
       {"vulkan"},
       "int4",
       "same",
       "f16",
       "f32",
       32,
       {"vulkan.precision=f16"}},
      {"vulkan-int4-mixed",
       "vulkan-int4 in a program mixed with the CPU: the RMSNorms on the "
       "CPU backend (xnnpack), the attention (RoPE, KV cache, SDPA) on "
       "portable kernels, the rest on the GPU",
       "int4",
       32,
       {"vulkan", "xnnpack"},
       "int4",
       "same",
       "f16",
       "f32",
       32,
       {"vulkan.precision=f16",
        "vulkan.exclude=etllm.rms_norm:etllm.rope:etllm.kv_cache.update:"
        "etllm.sdpa"}},
  };
  return r;
}

const Recipe *findRecipe(const std::string &name) {
  for (const Recipe &r : recipes())
    if (name == r.name)
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
  // "" or "pipeline" (export_config.yaml's word for it): the recipe's.
  auto orRecipe = [](const std::string &v, const char *recipeValue) {
    return v.empty() || v == "pipeline" ? std::string(recipeValue) : v;
  };
  std::string linear = orRecipe(o.linear, r->linear);
  std::string embedding = orRecipe(o.embedding, r->embedding);
  std::string outputLayer = orRecipe(o.outputLayer, r->outputLayer);
  std::string scaleType = orRecipe(o.scaleType, r->scaleType);
  std::string activations = orRecipe(o.activations, r->activations);
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
  bool quantize = linear != "none" || embedding != "none" ||
                  (outputLayer != "same" && outputLayer != "none");

  std::vector<StageSpec> stages;
  std::string mlaCache = o.mlaCache, moe = o.moe;
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
  stages.push_back({"kv-cache-in-place", [](mlir::OpPassManager &pm) {
                      pm.addNestedPass<mlir::func::FuncOp>(
                          createKvCacheInPlacePass());
                      cleanup(pm);
                    }});
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

void registerRecipePipelines() {
  for (const Recipe &r : recipes()) {
    std::string name = r.name;
    mlir::PassPipelineRegistration<RecipeOptions>(
        r.name, r.description,
        [name](mlir::OpPassManager &pm, const RecipeOptions &options) {
          buildRecipePipeline(pm, name, options);
        });
  }
}

} // namespace etllm
