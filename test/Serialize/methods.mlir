// RUN: etllm-translate --mlir-to-pte %s -o %t.pte
// RUN: etllm-translate --pte-to-text %t.pte | FileCheck %s
// RUN: etllm-opt --etllm-plan-memory %s | FileCheck %s --check-prefix=PLAN
// RUN: not etllm-run %t.pte --prompt x 2>&1 | FileCheck %s --check-prefix=RUNNER

// Every public function is a method (a static program's `prefill` and
// `decode`), each with its own values, instructions and arena; they share
// the constants (one copy of the parameter `w`) and the buffers (one
// `state`). A private function is not a method.
// CHECK: constants: 1
// CHECK: [0] w: segment 0 offset 0 size 32
// CHECK: buffers: 1
// CHECK: [0] state: f32 [2, 4] 32 bytes
// CHECK: method prefill: {{[0-9]+}} values, 2 instructions
// CHECK: %0 = f32 [2, 4] planned arena 0 @{{[0-9]+}} (32 bytes) input.0
// CHECK: %1 = f32 [2, 4] constant #0 (32 bytes) w
// CHECK: 0: add(%0, %1) -> %2
// CHECK: 1: copy(%2) -> %3
// CHECK: method decode: {{[0-9]+}} values, 2 instructions
// CHECK: %0 = f32 [1, 4] planned arena 0 @{{[0-9]+}} (16 bytes) input.0
// CHECK: %1 = f32 [2, 4] constant #0 (32 bytes) w
// CHECK: 0: slice(%1) ints [0, 0, 1, 1] -> %2
// CHECK: 1: mul(%0, %2) -> %3
// CHECK-NOT: method

// The runner takes `prefill` for a static program's and checks it: this
// one is not (one error naming the file, no crash).
// RUNNER: etllm-run: error: {{.*}}.pte: not a static program's `prefill` and `decode` (etllm-static-methods): they take (tokens, positions, caches...) and return (logits, new entries...)

// The planning stage records a plan on each method.
// PLAN: func.func @prefill({{.*}}etllm.plan = #etllm.slot<arena 0
// PLAN-SAME: etllm.memory = {aliases = 0 : i64, arena_bytes = 128 : i64, buffer_bytes = 32 : i64, constant_bytes = 32 : i64
// PLAN: func.func @decode({{.*}}etllm.plan = #etllm.slot<arena 0
// PLAN-SAME: etllm.memory = {aliases = 0 : i64, arena_bytes = 192 : i64
// PLAN: func.func private @helper
// PLAN-NOT: etllm.plan
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 4>} {
  etllm.parameter @w : tensor<2x4xf32> = dense<1.0> : tensor<2x4xf32>
  etllm.buffer @state : tensor<2x4xf32>
  func.func @prefill(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %w = etllm.parameter.get @w : tensor<2x4xf32>
    %y = etllm.add %x, %w : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    etllm.buffer.write %y to @state : tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
  func.func @decode(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %w = etllm.parameter.get @w : tensor<2x4xf32>
    %row = etllm.slice %w dim 0 [0 : 1] : tensor<2x4xf32> -> tensor<1x4xf32>
    %y = etllm.mul %x, %row : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    return %y : tensor<1x4xf32>
  }
  func.func private @helper(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    return %x : tensor<1x4xf32>
  }
}
