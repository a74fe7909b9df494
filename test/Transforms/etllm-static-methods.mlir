// RUN: etllm-opt %s --etllm-static-methods="prefill-chunk=4 kv-cache=io" | FileCheck %s --check-prefix=IO --implicit-check-not="?" --implicit-check-not="etllm.buffer" --implicit-check-not="@forward"
// RUN: etllm-opt %s --etllm-static-methods="prefill-chunk=4 kv-cache=in-place" | FileCheck %s --check-prefix=INPLACE --implicit-check-not="?" --implicit-check-not="@forward"
// RUN: etllm-opt %s --etllm-static-methods="prefill-chunk=8" | FileCheck %s --check-prefix=WHOLE

// `forward` (tokens [1, ?], positions [?] -> logits [1, ?, vocab]) becomes
// `prefill` over a chunk and `decode` over one token, every type inferred
// again: no dynamic dimension is left (implicit-check-not "?").
//
// kv-cache=io (the default): the cache buffer is an input of each method
// (the whole cache) and its update's new entries an output, after the
// logits; no buffer is left.
// IO-LABEL: func.func @prefill(
// IO-SAME: %[[T:[a-z0-9]+]]: tensor<1x4xi64>, %[[P:[a-z0-9]+]]: tensor<4xi64>, %[[K:[a-z0-9]+]]: tensor<1x2x8x4xf32>)
// IO-SAME: -> (tensor<1x4x16xf32>, tensor<1x2x4x4xf32>)
// IO: etllm.embedding %{{.+}}, %[[T]] : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
// IO: %[[NEW:.+]] = etllm.transpose
// IO-SAME: -> tensor<1x2x4x4xf32>
// IO: %[[U:.+]] = etllm.kv_cache.update %[[K]][%[[P]]], %[[NEW]]
// IO: etllm.sdpa %[[NEW]], %[[U]], %[[U]] positions %[[P]] causal
// IO: %[[L:.+]] = etllm.linear
// IO: return %[[L]], %[[NEW]] : tensor<1x4x16xf32>, tensor<1x2x4x4xf32>
// IO-LABEL: func.func @decode(
// IO-SAME: tensor<1x1xi64>, %{{.+}}: tensor<1xi64>, %{{.+}}: tensor<1x2x8x4xf32>) -> (tensor<1x1x16xf32>, tensor<1x2x1x4xf32>)
// IO: return {{.*}} : tensor<1x1x16xf32>, tensor<1x2x1x4xf32>
//
// kv-cache=in-place: the caches stay buffers, read and written back by both
// methods (etllm-kv-cache-in-place drops the write-backs later).
// INPLACE: etllm.buffer @k_cache : tensor<1x2x8x4xf32>
// INPLACE-LABEL: func.func @prefill(%{{.+}}: tensor<1x4xi64>, %{{.+}}: tensor<4xi64>) -> tensor<1x4x16xf32>
// INPLACE: etllm.buffer.read @k_cache
// INPLACE: etllm.buffer.write
// INPLACE-LABEL: func.func @decode(%{{.+}}: tensor<1x1xi64>, %{{.+}}: tensor<1xi64>) -> tensor<1x1x16xf32>
// INPLACE: etllm.buffer.read @k_cache
// INPLACE: etllm.buffer.write
//
// A chunk as long as the cache is allowed.
// WHOLE: func.func @prefill(%{{.+}}: tensor<1x8xi64>
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
  etllm.parameter @emb : tensor<16x8xf32> = dense<0.5> : tensor<16x8xf32>
  etllm.buffer @k_cache : tensor<1x2x8x4xf32>
  func.func @forward(%tok: tensor<1x?xi64>, %pos: tensor<?xi64>) -> tensor<1x?x16xf32> {
    %w = etllm.parameter.get @emb : tensor<16x8xf32>
    %h = etllm.embedding %w, %tok : (tensor<16x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
    %r = etllm.reshape %h [1, -1, 2, 4] : tensor<1x?x8xf32> -> tensor<1x?x2x4xf32>
    %q = etllm.transpose %r 1, 2 : tensor<1x?x2x4xf32> -> tensor<1x2x?x4xf32>
    %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
    %k2 = etllm.kv_cache.update %k[%pos], %q : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
    %a = etllm.sdpa %q, %k2, %k2 positions %pos causal scale 0.5 : (tensor<1x2x?x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<?xi64>) -> tensor<1x2x?x4xf32>
    %t = etllm.transpose %a 1, 2 : tensor<1x2x?x4xf32> -> tensor<1x?x2x4xf32>
    %f = etllm.reshape %t [1, -1, 8] : tensor<1x?x2x4xf32> -> tensor<1x?x8xf32>
    %l = etllm.linear %f, %w : (tensor<1x?x8xf32>, tensor<16x8xf32>) -> tensor<1x?x16xf32>
    etllm.buffer.write %k2 to @k_cache : tensor<1x2x8x4xf32>
    return %l : tensor<1x?x16xf32>
  }
}
