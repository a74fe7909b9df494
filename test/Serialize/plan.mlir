// RUN: etllm-translate --mlir-to-pte %s -o %t.pte
// RUN: etllm-translate --pte-to-text %t.pte | FileCheck %s
// RUN: etllm-opt %s --etllm-plan-memory | etllm-translate --mlir-to-pte -o %t.replanned.pte
// RUN: etllm-translate --pte-to-text %t.replanned.pte | FileCheck %s --check-prefix=PLANNER
// RUN: etllm-opt %s --etllm-plan-memory | sed -e 's/etllm.memory = {[^}]*}//' -e 's/{etllm.plan = [^}]*}//' | etllm-translate --mlir-to-pte -o %t.unplanned.pte
// RUN: cmp %t.replanned.pte %t.unplanned.pte

// The serializer emits the plan recorded in the IR, not one of its own: this
// (valid, wasteful) plan puts every value in a slot of its own, and the
// program has it. Planned again by etllm-plan-memory, the values share
// slots; that program is the same as one the serializer plans itself (no
// plan recorded).
// CHECK: method forward: 4 values, 3 instructions, arenas [448] bytes
// CHECK: %0 = f32 [4] planned arena 0 @384 (16 bytes) input.0
// CHECK: %1 = f32 [4] planned arena 0 @256 (16 bytes)
// CHECK: %2 = f32 [2, 2] alias %1
// CHECK: %3 = f32 [2, 2] planned arena 0 @128 (16 bytes)
// PLANNER: method forward: 4 values, 3 instructions, arenas [128] bytes
// PLANNER: %0 = f32 [4] planned arena 0 @0 (16 bytes) input.0
// PLANNER: %1 = f32 [4] planned arena 0 @64 (16 bytes)
// PLANNER: %3 = f32 [2, 2] planned arena 0 @0 (16 bytes)
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 384, size 64, live [0, 0]>})
    -> tensor<2x2xf32>
    attributes {etllm.memory = {aliases = 1 : i64, arena_bytes = 448 : i64, buffer_bytes = 0 : i64, constant_bytes = 0 : i64, naive_arena_bytes = 192 : i64}} {
  %e = etllm.exp %x {etllm.plan = [#etllm.slot<arena 0, offset 256, size 64, live [0, 2]>]} : tensor<4xf32>
  %r = etllm.reshape %e [2, 2] {etllm.plan = [#etllm.alias<operand 0>]} : tensor<4xf32> -> tensor<2x2xf32>
  %n = etllm.neg %r {etllm.plan = [#etllm.slot<arena 0, offset 128, size 64, live [2, 3]>]} : tensor<2x2xf32>
  return %n : tensor<2x2xf32>
}
