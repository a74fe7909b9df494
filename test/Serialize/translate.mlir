// RUN: etllm-translate --mlir-to-pte %s -o %t.pte
// RUN: etllm-translate --pte-to-text %t.pte | FileCheck %s
// RUN: not etllm-translate --pte-to-text %s 2>&1 | FileCheck %s --check-prefix=NOTPTE

// IR to program and back to text: inline parameters become constants, the
// reshape is a view of its planned input, the buffer write-back is a copy.
// CHECK: constants: 1
// CHECK: [0] w: segment 0 offset 0 size 32
// CHECK: buffers: 1
// CHECK: [0] state: f32 [2, 4] 32 bytes
// CHECK: method forward: {{[0-9]+}} values, 3 instructions
// CHECK: %0 = f32 [2, 4] planned arena 0 @{{[0-9]+}} (32 bytes) input.0
// CHECK: %1 = f32 [2, 4] constant #0 (32 bytes) w
// CHECK: %2 = f32 [2, 4] planned
// CHECK: %3 = f32 [8] alias %2
// CHECK: 0: add(%0, %1) -> %2
// CHECK: 1: reshape(%2) ints [8] -> %3
// CHECK: 2: copy(%2) -> %4
// NOTPTE: invalid program file: bad magic
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 4>} {
  etllm.parameter @w : tensor<2x4xf32> = dense<1.0> : tensor<2x4xf32>
  etllm.buffer @state : tensor<2x4xf32>
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<8xf32> {
    %w = etllm.parameter.get @w : tensor<2x4xf32>
    %y = etllm.add %x, %w : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %r = etllm.reshape %y [8] : tensor<2x4xf32> -> tensor<8xf32>
    etllm.buffer.write %y to @state : tensor<2x4xf32>
    return %r : tensor<8xf32>
  }
}
