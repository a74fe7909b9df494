// RUN: etllm-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(etllm-kv-cache-in-place))' | FileCheck %s

// The exported graph's functional update + write-back becomes in place.
// CHECK-LABEL: func.func @functional_update
// CHECK: %[[R:.+]] = etllm.buffer.read @k_cache
// CHECK: %[[U:.+]] = etllm.kv_cache.update %[[R]][%{{.+}}], %{{.+}} {etllm.module = "attn"}
// CHECK-NOT: etllm.index_copy
// CHECK: return %[[U]]
// CHECK-NOT: etllm.buffer.write
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
func.func @functional_update(%pos: tensor<?xi64>, %new: tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.index_copy %k dim 2, %pos, %new {etllm.module = "attn"} : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  etllm.buffer.write %k2 to @k_cache : tensor<1x2x8x4xf32>
  return %k2 : tensor<1x2x8x4xf32>
}

// -----

// index_put (without accumulate) is the same update.
// CHECK-LABEL: func.func @index_put_update
// CHECK: etllm.kv_cache.update
// CHECK-NOT: etllm.buffer.write
etllm.buffer @v_cache : tensor<1x2x8x4xf32>
func.func @index_put_update(%pos: tensor<?xi64>, %new: tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32> {
  %v = etllm.buffer.read @v_cache : tensor<1x2x8x4xf32>
  %v2 = etllm.index_put %v dim 2, %pos, %new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  etllm.buffer.write %v2 to @v_cache : tensor<1x2x8x4xf32>
  return %v2 : tensor<1x2x8x4xf32>
}

// -----

// Someone still reads the old cache value: not safe, left alone.
// CHECK-LABEL: func.func @old_value_observed
// CHECK: etllm.index_copy
// CHECK: etllm.buffer.write
// CHECK-NOT: etllm.kv_cache.update
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
func.func @old_value_observed(%pos: tensor<?xi64>, %new: tensor<1x2x?x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.index_copy %k dim 2, %pos, %new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  etllm.buffer.write %k2 to @k_cache : tensor<1x2x8x4xf32>
  return %k, %k2 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// The updated value is written to another buffer: left alone.
// CHECK-LABEL: func.func @written_elsewhere
// CHECK: etllm.index_copy
// CHECK: etllm.buffer.write %{{.+}} to @other
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
etllm.buffer @other : tensor<1x2x8x4xf32>
func.func @written_elsewhere(%pos: tensor<?xi64>, %new: tensor<1x2x?x4xf32>) {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.index_copy %k dim 2, %pos, %new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  etllm.buffer.write %k2 to @other : tensor<1x2x8x4xf32>
  return
}

// -----

// A second read of the buffer between the update and the write-back would
// see the new data once in place: left alone.
// CHECK-LABEL: func.func @read_in_between
// CHECK: etllm.index_copy
// CHECK-NOT: etllm.kv_cache.update
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
func.func @read_in_between(%pos: tensor<?xi64>, %new: tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.index_copy %k dim 2, %pos, %new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  %again = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  etllm.buffer.write %k2 to @k_cache : tensor<1x2x8x4xf32>
  return %again : tensor<1x2x8x4xf32>
}

// -----

// Not a buffer: an update of an ordinary value stays functional.
// CHECK-LABEL: func.func @not_a_buffer
// CHECK: etllm.index_copy
// CHECK-NOT: etllm.kv_cache.update
func.func @not_a_buffer(%x: tensor<1x2x8x4xf32>, %pos: tensor<?xi64>, %new: tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32> {
  %k2 = etllm.index_copy %x dim 2, %pos, %new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  return %k2 : tensor<1x2x8x4xf32>
}

// -----

// Accumulating index_put is not a cache update.
// CHECK-LABEL: func.func @accumulate
// CHECK: etllm.index_put {{.+}} accumulate
// CHECK-NOT: etllm.kv_cache.update
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
func.func @accumulate(%pos: tensor<?xi64>, %new: tensor<1x2x?x4xf32>) {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.index_put %k dim 2, %pos, %new accumulate : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  etllm.buffer.write %k2 to @k_cache : tensor<1x2x8x4xf32>
  return
}

// -----

// A write-back of a value that already is the buffer is dropped.
// CHECK-LABEL: func.func @redundant_write_back
// CHECK: etllm.kv_cache.update
// CHECK-NOT: etllm.buffer.write
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
func.func @redundant_write_back(%pos: tensor<?xi64>, %new: tensor<1x2x?x4xf32>) {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  etllm.buffer.write %k2 to @k_cache : tensor<1x2x8x4xf32>
  return
}
