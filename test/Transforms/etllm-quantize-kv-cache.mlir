// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-quantize-kv-cache | FileCheck %s

// An attention's two caches (updated in place, read by sdpa) become int8
// caches with one scale per token and head; the buffer, its read and the
// update are retyped, the float values written stay float.
// CHECK-LABEL: etllm.buffer @k_cache : !etllm.qact<1x2x8x4, i8, per_token, sym>
// CHECK: etllm.buffer @v_cache : !etllm.qact<1x2x8x4, i8, per_token, sym>
// CHECK: func.func @attention
// CHECK: %[[K:.+]] = etllm.buffer.read @k_cache : !etllm.qact<1x2x8x4, i8, per_token, sym>
// CHECK: %[[K2:.+]] = etllm.kv_cache.update %[[K]][%{{.+}}], %{{.+}} : (!etllm.qact<1x2x8x4, i8, per_token, sym>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> !etllm.qact<1x2x8x4, i8, per_token, sym>
// CHECK: %[[V2:.+]] = etllm.kv_cache.update
// CHECK: etllm.sdpa %{{.+}}, %[[K2]], %[[V2]] positions %{{.+}} causal scale 5.000000e-01 : (tensor<1x4x?x4xf32>, !etllm.qact<1x2x8x4, i8, per_token, sym>, !etllm.qact<1x2x8x4, i8, per_token, sym>, tensor<?xi64>) -> tensor<1x4x?x4xf32>
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
etllm.buffer @v_cache : tensor<1x2x8x4xf32>
func.func @attention(%q: tensor<1x4x?x4xf32>, %pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>, %v_new: tensor<1x2x?x4xf32>) -> tensor<1x4x?x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  %v = etllm.buffer.read @v_cache : tensor<1x2x8x4xf32>
  %v2 = etllm.kv_cache.update %v[%pos], %v_new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  %o = etllm.sdpa %q, %k2, %v2 positions %pos causal scale 0.5 : (tensor<1x4x?x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<?xi64>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}

// -----

// A buffer nobody updates in place (not a KV cache) is left alone.
// CHECK-LABEL: etllm.buffer @state : tensor<1x2x8x4xf32>
// CHECK: etllm.buffer.read @state : tensor<1x2x8x4xf32>
etllm.buffer @state : tensor<1x2x8x4xf32>
func.func @not_a_cache() -> tensor<1x2x8x4xf32> {
  %s = etllm.buffer.read @state : tensor<1x2x8x4xf32>
  return %s : tensor<1x2x8x4xf32>
}

// -----

// A cache whose updated value something other than sdpa reads cannot be
// stored quantized: one error naming the reader, the IR left as it was.
// expected-error @+1 {{'etllm.buffer' op cannot be stored as a quantized KV cache: it is read by 'func.return'}}
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
func.func @returned(%pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  return %k2 : tensor<1x2x8x4xf32>
}

// -----

// An update along another dimension than the tokens: refused.
// expected-error @+1 {{'etllm.buffer' op cannot be stored as a quantized KV cache: it is read by 'etllm.kv_cache.update'}}
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
func.func @wrong_dim(%pos: tensor<?xi64>, %k_new: tensor<1x?x8x4xf32>, %q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new dim 1 : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x?x8x4xf32>) -> tensor<1x2x8x4xf32>
  %o = etllm.sdpa %q, %k2, %k2 scale 0.5 : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// An integer cache (not attention keys): refused.
// expected-error @+1 {{'etllm.buffer' op cannot be stored as a quantized KV cache: it is not a float [batch, kv_heads, length, head_dim] tensor}}
etllm.buffer @ids : tensor<1x2x8x4xi64>
func.func @int_cache(%pos: tensor<?xi64>, %new: tensor<1x2x?x4xi64>) -> tensor<1x2x8x4xi64> {
  %k = etllm.buffer.read @ids : tensor<1x2x8x4xi64>
  %k2 = etllm.kv_cache.update %k[%pos], %new : (tensor<1x2x8x4xi64>, tensor<?xi64>, tensor<1x2x?x4xi64>) -> tensor<1x2x8x4xi64>
  return %k2 : tensor<1x2x8x4xi64>
}
