// RUN: etllm-opt %s --split-input-file --verify-diagnostics | etllm-opt --split-input-file | FileCheck %s
// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: sed '/^\/\/ -----/q' %s > %t.first.mlir
// RUN: etllm-translate --mlir-to-pte %t.first.mlir -o %t.pte
// RUN: etllm-translate --pte-to-text %t.pte | FileCheck %s --check-prefix=PTE
// etllm.kv_ring.slots and etllm.kv_ring.mask: round trip, the plan, the
// kernel calls, and the near misses.

// CHECK-LABEL: func.func @forward
// CHECK: %[[S:.+]] = etllm.kv_ring.slots %{{.+}} sinks 4 size 68 : tensor<?xi64>
// CHECK: %[[M:.+]] = etllm.kv_ring.mask %{{.+}} sinks 4 size 68 window 49 : (tensor<?xi64>) -> tensor<1x1x?x68xf32>
// PLAN: etllm.kv_ring.slots {{.*}} {etllm.plan = [#etllm.slot<{{.*}}>]}
// PLAN: etllm.kv_ring.mask {{.*}} {etllm.plan = [#etllm.slot<{{.*}}>]}
// PTE: 0: kv_ring_slots(%0) ints [4, 68] -> %1
// PTE: 1: kv_ring_mask(%0) ints [4, 68, 49] -> %2
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 16>} {
  func.func @forward(%pos: tensor<?xi64>) -> (tensor<?xi64>, tensor<1x1x?x68xf32>) {
    %s = etllm.kv_ring.slots %pos sinks 4 size 68 : tensor<?xi64>
    %m = etllm.kv_ring.mask %pos sinks 4 size 68 window 49 : (tensor<?xi64>) -> tensor<1x1x?x68xf32>
    return %s, %m : tensor<?xi64>, tensor<1x1x?x68xf32>
  }
}

// -----

func.func @no_ring_slot(%pos: tensor<?xi64>) {
  // expected-error @+1 {{needs at least one ring slot: sinks 4 >= size 4}}
  %s = etllm.kv_ring.slots %pos sinks 4 size 4 : tensor<?xi64>
  return
}

// -----

func.func @negative_sinks(%pos: tensor<?xi64>) {
  // expected-error @+1 {{sinks must not be negative, got -1}}
  %s = etllm.kv_ring.slots %pos sinks -1 size 4 : tensor<?xi64>
  return
}

// -----

func.func @window_past_the_ring(%pos: tensor<?xi64>) {
  // expected-error @+1 {{window 5 is outside [0, the ring's 4 slots]}}
  %m = etllm.kv_ring.mask %pos sinks 0 size 4 window 5 : (tensor<?xi64>) -> tensor<1x1x?x4xf32>
  return
}

// -----

func.func @mask_of_another_size(%pos: tensor<3xi64>) {
  // expected-error @+1 {{result must be [1, 1, positions, size] = [1, 1, 3, 4], got 'tensor<1x1x3x5xf32>'}}
  %m = etllm.kv_ring.mask %pos sinks 0 size 4 window 2 : (tensor<3xi64>) -> tensor<1x1x3x5xf32>
  return
}

// -----

func.func @float_positions(%pos: tensor<?xf32>) {
  // expected-error @+1 {{operand #0 must be}}
  %s = etllm.kv_ring.slots %pos sinks 0 size 4 : tensor<?xf32>
  return
}
