// RUN: etllm-opt %s --split-input-file --verify-diagnostics

func.func @rank(%x: tensor<1x?x8xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{input and base must have the same rank}}
  %r = etllm.lora %x, %y {hook = 0 : i64, target = "model.layers.0.self_attn.q_proj"} : (tensor<1x?x8xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

func.func @result(%x: tensor<1x?x8xf32>, %y: tensor<1x?x4xf32>) -> tensor<1x?x8xf32> {
  // expected-error @+1 {{result type 'tensor<1x?x8xf32>' differs from the base's 'tensor<1x?x4xf32>'}}
  %r = etllm.lora %x, %y {hook = 0 : i64, target = "model.layers.0.self_attn.q_proj"} : (tensor<1x?x8xf32>, tensor<1x?x4xf32>) -> tensor<1x?x8xf32>
  return %r : tensor<1x?x8xf32>
}

// -----

func.func @rows(%x: tensor<1x3x8xf32>, %y: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{differ outside the features}}
  %r = etllm.lora %x, %y {hook = 0 : i64, target = "model.layers.0.self_attn.q_proj"} : (tensor<1x3x8xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return %r : tensor<1x2x4xf32>
}

// -----

func.func @hook(%x: tensor<1x?x8xf32>, %y: tensor<1x?x4xf32>) -> tensor<1x?x4xf32> {
  // expected-error @+1 {{hook index -1 is negative}}
  %r = etllm.lora %x, %y {hook = -1 : i64, target = "model.layers.0.self_attn.q_proj"} : (tensor<1x?x8xf32>, tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  return %r : tensor<1x?x4xf32>
}

// -----

func.func @target(%x: tensor<1x?x8xf32>, %y: tensor<1x?x4xf32>) -> tensor<1x?x4xf32> {
  // expected-error @+1 {{empty target module}}
  %r = etllm.lora %x, %y {hook = 0 : i64, target = ""} : (tensor<1x?x8xf32>, tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  return %r : tensor<1x?x4xf32>
}

// -----

// expected-error @+1 {{'etllm.lora_max_rank' must be a positive integer on a builtin.module}}
module attributes {etllm.lora_max_rank = 0 : i64} {
}
