// RUN: etllm-translate --mlir-to-pte %s --split-input-file --verify-diagnostics -o /dev/null

// The serializer plans again: a schedule etllm-vulkan-plan recorded that
// no longer fits the function is refused (a stale plan).
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
etllm.parameter @w : tensor<4x4xf32> = dense<0.5> : tensor<4x4xf32>
// expected-error @+1 {{vulkan: the recorded schedule (vulkan.schedule) is stale}}
func.func private @vulkan_0(%x: tensor<1x?x4xf32>) -> tensor<1x?x4xf32> attributes {etllm.backend = "vulkan", vulkan.schedule = ["0: matmul wf32 n=5 k=4 (linear) arena[0+256]"]} {
  %w = etllm.parameter.get @w : tensor<4x4xf32>
  %y = etllm.linear %x, %w : (tensor<1x?x4xf32>, tensor<4x4xf32>) -> tensor<1x?x4xf32>
  return %y : tensor<1x?x4xf32>
}
func.func @forward(%x: tensor<1x?x4xf32>) -> tensor<1x?x4xf32> {
  %y = etllm.delegate.call "vulkan" @vulkan_0(%x) : (tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  return %y : tensor<1x?x4xf32>
}
}

// -----

// A KV cache lives in the device memory of the call that updates it: a
// second Vulkan subgraph cannot read it.
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
etllm.buffer @kc : tensor<1x1x8x4xf32>
func.func private @vulkan_0(%c: tensor<1x1x8x4xf32>, %pos: tensor<?xi64>, %k: tensor<1x1x?x4xf32>) -> tensor<1x1x8x4xf32> attributes {etllm.backend = "vulkan"} {
  %u = etllm.kv_cache.update %c[%pos], %k : (tensor<1x1x8x4xf32>, tensor<?xi64>, tensor<1x1x?x4xf32>) -> tensor<1x1x8x4xf32>
  return %u : tensor<1x1x8x4xf32>
}
// expected-error @+1 {{vulkan: argument 1 is a KV cache that vulkan_0 updates in its own device memory}}
func.func private @vulkan_1(%q: tensor<1x1x?x4xf32>, %c: tensor<1x1x8x4xf32>, %pos: tensor<?xi64>) -> tensor<1x1x?x4xf32> attributes {etllm.backend = "vulkan"} {
  %a = etllm.sdpa %q, %c, %c positions %pos causal scale 0.5 : (tensor<1x1x?x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<?xi64>) -> tensor<1x1x?x4xf32>
  return %a : tensor<1x1x?x4xf32>
}
func.func @forward(%q: tensor<1x1x?x4xf32>, %k: tensor<1x1x?x4xf32>, %pos: tensor<?xi64>) -> tensor<1x1x?x4xf32> {
  %c = etllm.buffer.read @kc : tensor<1x1x8x4xf32>
  %u = etllm.delegate.call "vulkan" @vulkan_0(%c, %pos, %k) : (tensor<1x1x8x4xf32>, tensor<?xi64>, tensor<1x1x?x4xf32>) -> tensor<1x1x8x4xf32>
  %a = etllm.delegate.call "vulkan" @vulkan_1(%q, %u, %pos) : (tensor<1x1x?x4xf32>, tensor<1x1x8x4xf32>, tensor<?xi64>) -> tensor<1x1x?x4xf32>
  return %a : tensor<1x1x?x4xf32>
}
}

// -----

// Two methods (a composite model's forward and text_decoder) whose Vulkan
// calls update one KV cache would each keep their own copy of it: refused.
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
etllm.buffer @kc : tensor<1x1x8x4xf32>
// expected-error @+1 {{vulkan: the KV cache kc is updated by Vulkan calls of two methods (forward, text_decoder)}}
func.func private @vulkan_0(%c: tensor<1x1x8x4xf32>, %pos: tensor<?xi64>, %k: tensor<1x1x?x4xf32>) -> tensor<1x1x8x4xf32> attributes {etllm.backend = "vulkan"} {
  %u = etllm.kv_cache.update %c[%pos], %k : (tensor<1x1x8x4xf32>, tensor<?xi64>, tensor<1x1x?x4xf32>) -> tensor<1x1x8x4xf32>
  return %u : tensor<1x1x8x4xf32>
}
func.func private @vulkan_1(%c: tensor<1x1x8x4xf32>, %pos: tensor<?xi64>, %k: tensor<1x1x?x4xf32>) -> tensor<1x1x8x4xf32> attributes {etllm.backend = "vulkan"} {
  %u = etllm.kv_cache.update %c[%pos], %k : (tensor<1x1x8x4xf32>, tensor<?xi64>, tensor<1x1x?x4xf32>) -> tensor<1x1x8x4xf32>
  return %u : tensor<1x1x8x4xf32>
}
func.func @forward(%k: tensor<1x1x?x4xf32>, %pos: tensor<?xi64>) -> tensor<1x1x8x4xf32> {
  %c = etllm.buffer.read @kc : tensor<1x1x8x4xf32>
  %u = etllm.delegate.call "vulkan" @vulkan_0(%c, %pos, %k) : (tensor<1x1x8x4xf32>, tensor<?xi64>, tensor<1x1x?x4xf32>) -> tensor<1x1x8x4xf32>
  return %u : tensor<1x1x8x4xf32>
}
func.func @text_decoder(%k: tensor<1x1x?x4xf32>, %pos: tensor<?xi64>) -> tensor<1x1x8x4xf32> {
  %c = etllm.buffer.read @kc : tensor<1x1x8x4xf32>
  %u = etllm.delegate.call "vulkan" @vulkan_1(%c, %pos, %k) : (tensor<1x1x8x4xf32>, tensor<?xi64>, tensor<1x1x?x4xf32>) -> tensor<1x1x8x4xf32>
  return %u : tensor<1x1x8x4xf32>
}
}
