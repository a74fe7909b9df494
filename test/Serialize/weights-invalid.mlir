// RUN: rm -rf %t && mkdir -p %t
// RUN: etllm-gen-checkpoint --arch llama --format hf --layers 1 -o %t/model > /dev/null
// RUN: sed 's|CHECKPOINT|%t/model|' %s > %t/in.mlir
// RUN: etllm-translate --mlir-to-pte %t/in.mlir --split-input-file --verify-diagnostics -o /dev/null
// The serializer's diagnostics about parameter bytes read from a
// checkpoint (a generated one: `model.norm.weight` is f32 [64]).

module attributes {etllm.checkpoint = "CHECKPOINT"} {
  // expected-error @+1 {{tensor 'model.missing.weight' is not in}}
  etllm.parameter @model.missing.weight : tensor<64xf32>
  func.func @forward() -> tensor<64xf32> {
    %w = etllm.parameter.get @model.missing.weight : tensor<64xf32>
    return %w : tensor<64xf32>
  }
}

// -----

module attributes {etllm.checkpoint = "CHECKPOINT"} {
  // expected-error @+1 {{has shape [64], the IR declares [32]}}
  etllm.parameter @model.norm.weight : tensor<32xf32>
  func.func @forward() -> tensor<32xf32> {
    %w = etllm.parameter.get @model.norm.weight : tensor<32xf32>
    return %w : tensor<32xf32>
  }
}

// -----

// Parameters are float (or quantized) tensors.
module attributes {etllm.checkpoint = "CHECKPOINT"} {
  // expected-error @+1 {{parameters of element type 'i32' are not supported}}
  etllm.parameter @model.norm.weight : tensor<64xi32>
  func.func @forward() -> tensor<64xi32> {
    %w = etllm.parameter.get @model.norm.weight : tensor<64xi32>
    return %w : tensor<64xi32>
  }
}

// -----

// The near miss: the same tensor, declared as it is, serializes.
module attributes {etllm.checkpoint = "CHECKPOINT"} {
  etllm.parameter @model.norm.weight : tensor<64xf32>
  func.func @forward() -> tensor<64xf32> {
    %w = etllm.parameter.get @model.norm.weight : tensor<64xf32>
    return %w : tensor<64xf32>
  }
}
