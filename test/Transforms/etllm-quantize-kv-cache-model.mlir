// RUN: etllm-opt %s --etllm-quantize-kv-cache=dtype=model | FileCheck %s
// RUN: not etllm-opt %s --etllm-quantize-kv-cache=dtype=int4 2>&1 | FileCheck %s --check-prefix=BAD

// dtype=model leaves the caches float.
// CHECK: etllm.buffer @k_cache : tensor<1x2x8x4xf32>
// CHECK: etllm.kv_cache.update {{.+}} -> tensor<1x2x8x4xf32>
// An unknown dtype is one error listing the values.
// BAD: for the --dtype option: Cannot find option named 'int4'!
etllm.buffer @k_cache : tensor<1x2x8x4xf32>
func.func @attention(%q: tensor<1x2x?x4xf32>, %pos: tensor<?xi64>, %k_new: tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32> {
  %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
  %k2 = etllm.kv_cache.update %k[%pos], %k_new : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
  %o = etllm.sdpa %q, %k2, %k2 positions %pos causal scale 0.5 : (tensor<1x2x?x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<?xi64>) -> tensor<1x2x?x4xf32>
  return %o : tensor<1x2x?x4xf32>
}
