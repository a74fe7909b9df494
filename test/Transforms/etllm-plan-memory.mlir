// RUN: etllm-opt %s --split-input-file --etllm-plan-memory | FileCheck %s
// Planning again replaces the plan (the same one).
// RUN: etllm-opt %s --split-input-file --etllm-plan-memory --etllm-plan-memory | FileCheck %s

// A chain of four 64-byte values: at most two are alive at once, so the
// arena holds two slots (128 bytes) instead of four.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: etllm.memory = {aliases = 0 : i64, arena_bytes = 128 : i64, buffer_bytes = 0 : i64, constant_bytes = 0 : i64, naive_arena_bytes = 256 : i64}
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = etllm.exp %x : tensor<4xf32>
  %b = etllm.exp %a : tensor<4xf32>
  %c = etllm.exp %b : tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// Views alias their input and an in-place cache update aliases the buffer:
// no planned bytes for either; the buffer is counted apart. The inputs
// (64 bytes each) die at the update, so the result reuses their slot.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: etllm.memory = {aliases = 2 : i64, arena_bytes = 128 : i64, buffer_bytes = 128 : i64, constant_bytes = 0 : i64, naive_arena_bytes = 256 : i64}
etllm.buffer @cache : tensor<1x1x8x4xf32>
func.func @forward(%pos: tensor<1xi64>, %new: tensor<1x1x1x4xf32>) -> tensor<2x16xf32> {
  %c = etllm.buffer.read @cache : tensor<1x1x8x4xf32>
  %u = etllm.kv_cache.update %c[%pos], %new : (tensor<1x1x8x4xf32>, tensor<1xi64>, tensor<1x1x1x4xf32>) -> tensor<1x1x8x4xf32>
  %r = etllm.reshape %u [2, 16] : tensor<1x1x8x4xf32> -> tensor<2x16xf32>
  %e = etllm.exp %r : tensor<2x16xf32>
  return %e : tensor<2x16xf32>
}

// -----

// Dynamic dimensions are planned at their bound (max_seq_len = 8).
// CHECK-LABEL: func.func @forward
// CHECK-SAME: arena_bytes = 256 : i64
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
  func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %a = etllm.exp %x : tensor<?x4xf32>
    return %a : tensor<?x4xf32>
  }
}

// -----

// The plan itself: every planned value's slot (offset, reserved size, live
// instructions); inputs live from instruction 0, outputs to the end (3).
// Equal sizes keep their order: %x at 0, %a at 64 (it overlaps %x), %b
// reuses 0 (%x is dead by then), %c needs a third slot.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %{{.*}}: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>}
// CHECK-SAME: arena_bytes = 192
// CHECK: etllm.exp %{{.*}} {etllm.plan = [#etllm.slot<arena 0, offset 64, size 64, live [0, 2]>]}
// CHECK: etllm.exp %{{.*}} {etllm.plan = [#etllm.slot<arena 0, offset 0, size 64, live [1, 2]>]}
// CHECK: etllm.add %{{.*}} {etllm.plan = [#etllm.slot<arena 0, offset 128, size 64, live [2, 3]>]}
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = etllm.exp %x : tensor<4xf32>
  %b = etllm.exp %a : tensor<4xf32>
  %c = etllm.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// Aliases are recorded by operand: the tied cache update and the view of it
// are the buffer's storage. A view of a constant cannot alias (its kernel
// would write read-only memory): it gets a slot. Buffer reads and constants
// have no entry; the write-back copy is an instruction (#3) with no result.
// CHECK-LABEL: func.func @forward
// CHECK: etllm.buffer.read @cache
// CHECK-NOT: etllm.plan
// CHECK-SAME: : tensor<1x1x8x4xf32>
// CHECK: etllm.kv_cache.update {{.*}} {etllm.plan = [#etllm.alias<operand 0>]}
// CHECK: etllm.reshape {{.*}} {etllm.plan = [#etllm.alias<operand 0>]}
// CHECK: etllm.constant dense
// CHECK-NOT: etllm.plan
// CHECK-SAME: tensor<4xf32>
// CHECK: etllm.reshape {{.*}} {etllm.plan = [#etllm.slot<arena 0, offset {{[0-9]+}}, size 64, live [2, 4]>]}
// CHECK: etllm.buffer.write
// CHECK-NOT: etllm.plan
// CHECK-SAME: to @state
// CHECK: etllm.neg {{.*}} {etllm.plan = [#etllm.slot<arena 0, offset {{[0-9]+}}, size 64, live [4, 5]>]}
etllm.buffer @cache : tensor<1x1x8x4xf32>
etllm.buffer @state : tensor<2x2xf32>
func.func @forward(%pos: tensor<1xi64>, %new: tensor<1x1x1x4xf32>) -> (tensor<2x16xf32>, tensor<2x2xf32>) {
  %c = etllm.buffer.read @cache : tensor<1x1x8x4xf32>
  %u = etllm.kv_cache.update %c[%pos], %new : (tensor<1x1x8x4xf32>, tensor<1xi64>, tensor<1x1x1x4xf32>) -> tensor<1x1x8x4xf32>
  %r = etllm.reshape %u [2, 16] : tensor<1x1x8x4xf32> -> tensor<2x16xf32>
  %k = etllm.constant dense<1.0> : tensor<4xf32>
  %kr = etllm.reshape %k [2, 2] : tensor<4xf32> -> tensor<2x2xf32>
  etllm.buffer.write %kr to @state : tensor<2x2xf32>
  %n = etllm.neg %kr : tensor<2x2xf32>
  return %r, %n : tensor<2x16xf32>, tensor<2x2xf32>
}

// -----

// One entry per result; an op's own bound of a dynamic dimension
// (BoundedShapeOpInterface): cat along the sequence is 16 rows of 4 floats
// (256 bytes), twice the sequence bound.
// CHECK-LABEL: func.func @forward
// CHECK: etllm.cat {{.*}} {etllm.plan = [#etllm.slot<arena 0, offset {{[0-9]+}}, size 256, live [0, 2]>]}
// CHECK: etllm.split {{.*}} {etllm.plan = [#etllm.slot<arena 0, offset {{[0-9]+}}, size 64, live [1, 2]>, #etllm.slot<arena 0, offset {{[0-9]+}}, size 64, live [1, 2]>]}
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
  func.func @forward(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %s: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
    %c = etllm.cat %a, %b dim 0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %p, %q = etllm.split %s dim 1 [2, 2] : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xf32>
    return %c, %p, %q : tensor<?x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>
  }
}

// -----

// A module of func ops only (the plan's attributes are the etllm dialect's,
// loaded by the pass): a method that returns its input has one slot, alive
// from its start to its end.
// CHECK-LABEL: func.func @identity
// CHECK-SAME: etllm.plan = #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
