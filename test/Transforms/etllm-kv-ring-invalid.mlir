// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-kv-ring="chunk=4 sinks=2"
// RUN: sed "/^\/\/ -----/q" %s > %t.first.mlir
// RUN: not etllm-opt %t.first.mlir --etllm-kv-ring="chunk=0" 2>&1 | FileCheck %s --check-prefix=CHUNK
// RUN: not etllm-opt %t.first.mlir --etllm-kv-ring="sinks=-1" 2>&1 | FileCheck %s --check-prefix=SINKS
// Near misses of etllm-kv-ring: one error naming the op, nothing changed.
// CHUNK: error: etllm-kv-ring: chunk must be at least 1, got 0
// SINKS: error: etllm-kv-ring: sinks must not be negative, got -1

// With sinks every cached attention becomes a ring, and one with an
// explicit mask cannot.
etllm.buffer @k_cache : tensor<1x2x16x4xf32>
etllm.buffer @v_cache : tensor<1x2x16x4xf32>
func.func @masked(%q: tensor<1x4x?x4xf32>, %pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>, %v_new: tensor<1x2x?x4xf32>, %m: tensor<1x1x?x16xf32>) -> tensor<1x4x?x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x16x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  %v = etllm.buffer.read @v_cache : tensor<1x2x16x4xf32>
  %v2 = etllm.kv_cache.update %v[%pos], %v_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  // expected-error @+1 {{etllm-kv-ring: cannot keep this attention's caches as a ring: it is not causal over `positions` without a mask}}
  %o = etllm.sdpa %q, %k2, %v2 mask %m scale 0.5 : (tensor<1x4x?x4xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}

// -----

// Sinks 2 and calls of 4 leave no window in a cache of 5 positions.
etllm.buffer @k_cache : tensor<1x2x5x4xf32>
etllm.buffer @v_cache : tensor<1x2x5x4xf32>
func.func @small(%q: tensor<1x4x?x4xf32>, %pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>, %v_new: tensor<1x2x?x4xf32>) -> tensor<1x4x?x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x5x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x5x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x5x4xf32>
  %v = etllm.buffer.read @v_cache : tensor<1x2x5x4xf32>
  %v2 = etllm.kv_cache.update %v[%pos], %v_new : (tensor<1x2x5x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x5x4xf32>
  // expected-error @+1 {{sinks 2 + chunk 4 leave no window in a cache of 5 positions}}
  %o = etllm.sdpa %q, %k2, %v2 positions %pos causal scale 0.5 : (tensor<1x4x?x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<?xi64>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}

// -----

// Only the key is a cache.
etllm.buffer @k_cache : tensor<1x2x16x4xf32>
func.func @one_cache(%q: tensor<1x4x?x4xf32>, %pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>, %v: tensor<1x2x16x4xf32>) -> tensor<1x4x?x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x16x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  // expected-error @+1 {{only one of its key and value is a cache}}
  %o = etllm.sdpa %q, %k2, %v positions %pos causal scale 0.5 : (tensor<1x4x?x4xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32>, tensor<?xi64>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}

// -----

// With sinks a cache no attention reads would overflow past max_seq_len.
etllm.buffer @state : tensor<1x2x16x4xf32>
func.func @not_attended(%pos: tensor<?xi64>, %new: tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32> {
  %s = etllm.buffer.read @state : tensor<1x2x16x4xf32>
  // expected-error @+1 {{with sinks every KV cache must be a ring, and @state is not read by an attention}}
  %s2 = etllm.kv_cache.update %s[%pos], %new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  return %s2 : tensor<1x2x16x4xf32>
}

// -----

// A ring cache read a second time, outside the attention's update.
etllm.buffer @k_cache : tensor<1x2x16x4xf32>
etllm.buffer @v_cache : tensor<1x2x16x4xf32>
func.func @read_twice(%q: tensor<1x4x?x4xf32>, %pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>, %v_new: tensor<1x2x?x4xf32>) -> (tensor<1x4x?x4xf32>, tensor<1x2x16x4xf32>) {
  %k = etllm.buffer.read @k_cache : tensor<1x2x16x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  %v = etllm.buffer.read @v_cache : tensor<1x2x16x4xf32>
  %v2 = etllm.kv_cache.update %v[%pos], %v_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  %o = etllm.sdpa %q, %k2, %v2 positions %pos causal scale 0.5 : (tensor<1x4x?x4xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32>, tensor<?xi64>) -> tensor<1x4x?x4xf32>
  // expected-error @+1 {{cannot keep @k_cache as a ring: it is used by 'etllm.buffer.read', not only updated in place for an attention}}
  %again = etllm.buffer.read @k_cache : tensor<1x2x16x4xf32>
  return %o, %again : tensor<1x4x?x4xf32>, tensor<1x2x16x4xf32>
}
