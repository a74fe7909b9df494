// RUN: etllm-example-opt %s --split-input-file --verify-diagnostics --etllm-partition="backends=example_static" | FileCheck %s --check-prefix=STATIC
// RUN: etllm-example-opt %s --split-input-file --etllm-partition="backends=example" | FileCheck %s --check-prefix=DYNAMIC

// A backend that runs static shapes only (BackendCompiler::
// requiresStaticShapes, as an NPU states it) gets a program with a dynamic
// sequence length refused, the value named, instead of a graph it cannot
// compile; the same legality without that requirement takes it.
// DYNAMIC: etllm.delegate.call "example" @example_0
// expected-error @+1 {{etllm-partition: backend 'example_static' runs only static shapes, but this program's 'tensor<1x?x4xf32>' has a dynamic dimension}}
func.func @forward(%x: tensor<1x?x4xf32>) -> tensor<1x?x4xf32> {
  %s = etllm.silu %x : tensor<1x?x4xf32>
  return %s : tensor<1x?x4xf32>
}

// -----

// Near miss: the argument is static but a view's result is not: refused
// at that op.
// DYNAMIC: etllm.delegate.call "example" @example_0
func.func @forward(%x: tensor<1x8x4xf32>) -> tensor<1x?x4xf32> {
  %s = etllm.silu %x : tensor<1x8x4xf32>
  // expected-error @+1 {{backend 'example_static' runs only static shapes, but this program's 'tensor<1x?x4xf32>' has a dynamic dimension}}
  %c = etllm.reshape %s [1, -1, 4] : tensor<1x8x4xf32> -> tensor<1x?x4xf32>
  return %c : tensor<1x?x4xf32>
}

// -----

// Every shape fixed: partitioned as for the dynamic-shape backend.
// STATIC: func.func private @example_static_0({{.*}} attributes {etllm.backend = "example_static"}
// STATIC: etllm.delegate.call "example_static" @example_static_0
// DYNAMIC: etllm.delegate.call "example" @example_0
func.func @forward(%x: tensor<1x8x4xf32>) -> tensor<1x8x4xf32> {
  %s = etllm.silu %x : tensor<1x8x4xf32>
  %g = etllm.mul %s, %x : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x4xf32>
  return %g : tensor<1x8x4xf32>
}
