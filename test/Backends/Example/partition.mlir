// RUN: etllm-example-opt %s --etllm-partition="backends=example,cpu" | FileCheck %s --check-prefix=FIRST
// RUN: etllm-example-opt %s --etllm-partition="backends=cpu,example" | FileCheck %s --check-prefix=SECOND

// An out-of-tree backend plugs into the partitioner: its legality contract
// (silu, sigmoid, mul on same-shape f32) is asked in priority order.
// FIRST-DAG: func.func private @example_0({{.*}} attributes {etllm.backend = "example"}
// FIRST-DAG: func.func private @cpu_0({{.*}} attributes {etllm.backend = "cpu"}
// FIRST-LABEL: func.func @forward
// FIRST: etllm.delegate.call "cpu" @cpu_0
// FIRST: etllm.delegate.call "example" @example_0

// With cpu first, it takes the element-wise ops together with the
// linear; the example backend gets nothing.
// SECOND-NOT: etllm.backend = "example"
// SECOND-LABEL: func.func @forward
// SECOND-COUNT-1: etllm.delegate.call "cpu"
etllm.parameter @w : tensor<4x4xf32>
func.func @forward(%x: tensor<1x?x4xf32>) -> tensor<1x?x4xf32> {
  %w = etllm.parameter.get @w : tensor<4x4xf32>
  %h = etllm.linear %x, %w : (tensor<1x?x4xf32>, tensor<4x4xf32>) -> tensor<1x?x4xf32>
  %s = etllm.silu %h : tensor<1x?x4xf32>
  %g = etllm.mul %s, %h : (tensor<1x?x4xf32>, tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  return %g : tensor<1x?x4xf32>
}
