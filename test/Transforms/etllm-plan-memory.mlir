// RUN: etllm-opt %s --split-input-file --etllm-plan-memory | FileCheck %s

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
