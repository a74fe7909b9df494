//===- VulkanPasses.td - The Vulkan backend's own pass -----*- tablegen -*-===//
#ifndef ETLLM_BACKENDS_VULKAN_PASSES_TD
#define ETLLM_BACKENDS_VULKAN_PASSES_TD

include "mlir/Pass/PassBase.td"

def VulkanPlanPass : Pass<"etllm-vulkan-plan", "mlir::func::FuncOp"> {
  let summary = "Record the Vulkan backend's dispatches, barriers and arena "
                "of an outlined subgraph";
  let description = [{
    Runs on functions marked `etllm.backend = "vulkan"` (the backend's
    lowering pipeline, in the `lower-backends` stage) and records the
    schedule its serializer will emit (lib/Backends/Vulkan/VulkanPlan.h):
    the fused dispatches in order (kernel, weight format, epilogue,
    barrier, decoder layer, the ops they run and the slots they bind), the
    one activation arena, and on every op the dispatches that run it.
    The options come from the module's `etllm.backend_options`
    (`vulkan.precision`, `vulkan.max-binding-bytes`, `vulkan.exclude`).

    ```mlir
    func.func private @vulkan_0(...) attributes {etllm.backend = "vulkan",
        vulkan.schedule = ["0: rms_norm (rms_norm model.norm) arena[0+256] ...",
                           "1: matmul wf32 n=512 k=64 barrier (linear lm_head) ..."],
        vulkan.summary = {arena_bytes = 1024 : i64, barriers = 1 : i64,
                          dispatches = 2 : i64, layers = 0 : i64}}
    ```

    The serializer plans again and refuses a function whose recorded
    schedule differs (a stale plan).
  }];
  let options = [
    Option<"seqBound", "seq-bound", "int64_t", "0",
           "Bound of the sequence dimension (0: the model's max_seq_len)">,
  ];
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

#endif // ETLLM_BACKENDS_VULKAN_PASSES_TD
