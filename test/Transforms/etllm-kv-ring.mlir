// RUN: etllm-opt %s --split-input-file --etllm-kv-ring="chunk=1" | FileCheck %s
// RUN: etllm-opt %s --split-input-file --etllm-kv-ring="chunk=4 sinks=2" | FileCheck %s --check-prefix=SINKS

// A sliding-window attention (window 4) over caches of 16 positions: with
// one token per call the caches become rings of 4 slots, written at
// kv_ring.slots and read through kv_ring.mask instead of causal +
// positions + window, one of each for both caches. With sinks (calls of 4), the window layer keeps a
// ring of 4 + 4 - 1 = 7 slots and no sinks.
// CHECK: module attributes {etllm.kv_ring = {chunk = 1 : i64, sinks = 0 : i64}}
// CHECK: etllm.buffer @k_cache : tensor<1x2x4x4xf32>
// CHECK: etllm.buffer @v_cache : tensor<1x2x4x4xf32>
// CHECK: func.func @window
// CHECK-DAG: %[[M:.+]] = etllm.kv_ring.mask %arg1 sinks 0 size 4 window 4 : (tensor<?xi64>) -> tensor<1x1x?x4xf32>
// CHECK-DAG: %[[S:.+]] = etllm.kv_ring.slots %arg1 sinks 0 size 4 : tensor<?xi64>
// CHECK: %[[K:.+]] = etllm.buffer.read @k_cache : tensor<1x2x4x4xf32>
// CHECK: %[[K2:.+]] = etllm.kv_cache.update %[[K]][%[[S]]], %arg2 : (tensor<1x2x4x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK: %[[V2:.+]] = etllm.kv_cache.update %{{.+}}[%[[S]]], %arg3
// CHECK: etllm.sdpa %arg0, %[[K2]], %[[V2]] mask %[[M]] scale 5.000000e-01 : (tensor<1x4x?x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x4x?x4xf32>
// SINKS: module attributes {etllm.kv_ring = {chunk = 4 : i64, sinks = 2 : i64}}
// SINKS: etllm.buffer @k_cache : tensor<1x2x7x4xf32>
// SINKS-DAG: etllm.kv_ring.slots %arg1 sinks 0 size 7
// SINKS-DAG: etllm.kv_ring.mask %arg1 sinks 0 size 7 window 4
etllm.buffer @k_cache : tensor<1x2x16x4xf32>
etllm.buffer @v_cache : tensor<1x2x16x4xf32>
func.func @window(%q: tensor<1x4x?x4xf32>, %pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>, %v_new: tensor<1x2x?x4xf32>) -> tensor<1x4x?x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x16x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  %v = etllm.buffer.read @v_cache : tensor<1x2x16x4xf32>
  %v2 = etllm.kv_cache.update %v[%pos], %v_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  %o = etllm.sdpa %q, %k2, %v2 positions %pos causal window 4 scale 0.5 : (tensor<1x4x?x4xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32>, tensor<?xi64>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}

// -----

// A full attention keeps its cache without sinks; with sinks 2 and calls
// of 4 its 16 slots are 2 sinks and a ring of 14 that each query sees
// 16 - 2 - 4 + 1 = 11 positions of.
// CHECK-NOT: etllm.kv_ring
// CHECK: etllm.buffer @k_cache : tensor<1x2x16x4xf32>
// CHECK: func.func @full
// CHECK-NOT: kv_ring
// CHECK: etllm.sdpa %arg0, %{{.+}}, %{{.+}} positions %arg1 causal scale
// SINKS: module attributes {etllm.kv_ring = {chunk = 4 : i64, sinks = 2 : i64}}
// SINKS: etllm.buffer @k_cache : tensor<1x2x16x4xf32>
// SINKS-DAG: etllm.kv_ring.slots %arg1 sinks 2 size 16
// SINKS-DAG: etllm.kv_ring.mask %arg1 sinks 2 size 16 window 11
// SINKS: etllm.sdpa %arg0, %{{.+}}, %{{.+}} mask %{{.+}} scale
etllm.buffer @k_cache : tensor<1x2x16x4xf32>
etllm.buffer @v_cache : tensor<1x2x16x4xf32>
func.func @full(%q: tensor<1x4x?x4xf32>, %pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>, %v_new: tensor<1x2x?x4xf32>) -> tensor<1x4x?x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x16x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  %v = etllm.buffer.read @v_cache : tensor<1x2x16x4xf32>
  %v2 = etllm.kv_cache.update %v[%pos], %v_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  %o = etllm.sdpa %q, %k2, %v2 positions %pos causal scale 0.5 : (tensor<1x4x?x4xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32>, tensor<?xi64>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}

// -----

// A window no smaller than the cache (16 + 1 - 1 >= 16): nothing to gain,
// left alone without sinks.
// CHECK: etllm.buffer @k_cache : tensor<1x2x16x4xf32>
// CHECK: func.func @wide_window
// CHECK: etllm.sdpa %arg0, %{{.+}}, %{{.+}} positions %arg1 causal window 16 scale
etllm.buffer @k_cache : tensor<1x2x16x4xf32>
etllm.buffer @v_cache : tensor<1x2x16x4xf32>
func.func @wide_window(%q: tensor<1x4x?x4xf32>, %pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>, %v_new: tensor<1x2x?x4xf32>) -> tensor<1x4x?x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x16x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  %v = etllm.buffer.read @v_cache : tensor<1x2x16x4xf32>
  %v2 = etllm.kv_cache.update %v[%pos], %v_new : (tensor<1x2x16x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x16x4xf32>
  %o = etllm.sdpa %q, %k2, %v2 positions %pos causal window 16 scale 0.5 : (tensor<1x4x?x4xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32>, tensor<?xi64>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}

// -----

// An attention over plain tensors (no cache) is not touched.
// CHECK: func.func @no_cache
// CHECK: etllm.sdpa %arg0, %arg1, %arg1 positions %arg2 causal window 2 scale
// SINKS: func.func @no_cache
// SINKS: etllm.sdpa %arg0, %arg1, %arg1 positions %arg2 causal window 2 scale
func.func @no_cache(%q: tensor<1x4x?x4xf32>, %kv: tensor<1x2x8x4xf32>, %pos: tensor<?xi64>) -> tensor<1x4x?x4xf32> {
  %o = etllm.sdpa %q, %kv, %kv positions %pos causal window 2 scale 0.5 : (tensor<1x4x?x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<?xi64>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}
