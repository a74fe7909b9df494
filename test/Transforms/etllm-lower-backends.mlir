// RUN: etllm-example-opt %s --split-input-file --etllm-lower-backends --verify-diagnostics | FileCheck %s

// Each outlined function runs its backend's lowering pipeline: the example
// backend rewrites silu into x * sigmoid(x) in its own subgraph only.
// CHECK-LABEL: func.func private @example_0
// CHECK: %[[S:.+]] = etllm.sigmoid %arg0
// CHECK: etllm.mul %arg0, %[[S]]
// CHECK-NOT: etllm.silu
// CHECK-LABEL: func.func @forward
// CHECK: etllm.silu
func.func private @example_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {etllm.backend = "example"} {
  %s = etllm.silu %x : tensor<4xf32>
  return %s : tensor<4xf32>
}
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = etllm.delegate.call "example" @example_0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = etllm.silu %x : tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// A backend without lowering passes (cpu) leaves its functions alone.
// CHECK-LABEL: func.func private @cpu_0
// CHECK: etllm.silu
func.func private @cpu_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {etllm.backend = "cpu"} {
  %s = etllm.silu %x : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// IR written before the CPU backend was renamed names it "xnnpack", its
// former id: the cpu backend takes it (no error, functions left alone).
// CHECK-LABEL: func.func private @xnnpack_0
// CHECK-SAME: etllm.backend = "xnnpack"
// CHECK: etllm.silu
func.func private @xnnpack_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {etllm.backend = "xnnpack"} {
  %s = etllm.silu %x : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// expected-error @+1 {{no backend 'missing' is registered}}
func.func private @missing_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {etllm.backend = "missing"} {
  return %x : tensor<4xf32>
}
