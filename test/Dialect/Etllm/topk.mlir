// RUN: etllm-opt %s --split-input-file --verify-diagnostics | etllm-opt --split-input-file | FileCheck %s
// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: sed '/^\/\/ -----/q' %s > %t.first.mlir
// RUN: etllm-translate --mlir-to-pte %t.first.mlir -o %t.pte
// RUN: etllm-translate --pte-to-text %t.pte | FileCheck %s --check-prefix=PTE
// etllm.topk: round trip, inference, the kernel call, and the near misses.

// Result types are inferred (k along dim, the last by default); the op is
// the runtime's topk kernel, values and indices both planned.
// CHECK-LABEL: func.func @forward
// CHECK: = etllm.topk %{{.+}} k 2 : tensor<1x?x8xf32> -> tensor<1x?x2xf32>, tensor<1x?x2xi64>
// CHECK: etllm.topk %{{.+}} k 1 dim 0 : tensor<3x4xi32> -> tensor<1x4xi32>, tensor<1x4xi64>
// PLAN: etllm.topk {{.*}} {etllm.plan = [#etllm.slot<{{.*}}>, #etllm.slot<{{.*}}>]}
// PTE: 0: topk(%0) ints [2, -1] -> %2, %3
// PTE: 1: topk(%1) ints [1, 0] -> %4, %5
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 4>} {
  func.func @forward(%probs: tensor<1x?x8xf32>, %x: tensor<3x4xi32>)
      -> (tensor<1x?x2xf32>, tensor<1x?x2xi64>, tensor<1x4xi32>) {
    %w, %e = etllm.topk %probs k 2 : tensor<1x?x8xf32> -> tensor<1x?x2xf32>, tensor<1x?x2xi64>
    %v, %i = etllm.topk %x k 1 dim 0 : tensor<3x4xi32> -> tensor<1x4xi32>, tensor<1x4xi64>
    return %w, %e, %v : tensor<1x?x2xf32>, tensor<1x?x2xi64>, tensor<1x4xi32>
  }
}

// -----

func.func @k_too_large(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{k = 4 is out of range for a dimension of size 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = etllm.topk %x k 4 : tensor<2x3xf32> -> tensor<2x4xf32>, tensor<2x4xi64>
  return
}

// -----

func.func @k_zero(%x: tensor<2x?xf32>) {
  // expected-error @+2 {{k = 0 is out of range}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = etllm.topk %x k 0 : tensor<2x?xf32> -> tensor<2x0xf32>, tensor<2x0xi64>
  return
}

// -----

func.func @bad_dim(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{dimension 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = etllm.topk %x k 1 dim 2 : tensor<2x3xf32> -> tensor<2x1xf32>, tensor<2x1xi64>
  return
}

// -----

// The printed types must agree with the inferred ones.
func.func @wrong_result(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'etllm.topk' op inferred type(s) 'tensor<2x2xf32>', 'tensor<2x2xi64>' are incompatible with return type(s) of operation 'tensor<2x3xf32>', 'tensor<2x2xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = etllm.topk %x k 2 : tensor<2x3xf32> -> tensor<2x3xf32>, tensor<2x2xi64>
  return
}

// -----

func.func @i32_indices(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 64-bit signless integer values}}
  %v, %i = etllm.topk %x k 2 : tensor<2x3xf32> -> tensor<2x2xf32>, tensor<2x2xi32>
  return
}
