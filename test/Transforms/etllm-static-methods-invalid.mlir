// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-static-methods="prefill-chunk=4 kv-cache=io"
// RUN: not etllm-opt %s --split-input-file --etllm-static-methods="prefill-chunk=9" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LONG
// What etllm-static-methods refuses, one case each (the first case is the
// near miss: a well-formed model, accepted with prefill-chunk=4 and refused
// only for a chunk longer than its cache).

// LONG: prefill-chunk 9 is not in 1..8 (the KV cache's length, max_seq_len)
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

// -----

// Only the last position's logits: a padded chunk needs every row.
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
  etllm.parameter @emb : tensor<16x8xf32> = dense<0.5> : tensor<16x8xf32>
  etllm.buffer @k_cache : tensor<1x2x8x4xf32>
  // expected-error @+1 {{etllm-static-methods: `forward` returns only the last position's logits; a padded prefill chunk needs every position's (model.last_logits_only: false)}}
  func.func @forward(%tok: tensor<1x?xi64>, %pos: tensor<?xi64>) -> tensor<1x1x16xf32> {
    %w = etllm.parameter.get @emb : tensor<16x8xf32>
    %h = etllm.embedding %w, %tok : (tensor<16x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
    %r = etllm.reshape %h [1, -1, 2, 4] : tensor<1x?x8xf32> -> tensor<1x?x2x4xf32>
    %q = etllm.transpose %r 1, 2 : tensor<1x?x2x4xf32> -> tensor<1x2x?x4xf32>
    %k = etllm.buffer.read @k_cache : tensor<1x2x8x4xf32>
    %k2 = etllm.kv_cache.update %k[%pos], %q : (tensor<1x2x8x4xf32>, tensor<?xi64>, tensor<1x2x?x4xf32>) -> tensor<1x2x8x4xf32>
    %a = etllm.sdpa %q, %k2, %k2 positions %pos causal scale 0.5 : (tensor<1x2x?x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<?xi64>) -> tensor<1x2x?x4xf32>
    %t = etllm.transpose %a 1, 2 : tensor<1x2x?x4xf32> -> tensor<1x?x2x4xf32>
    %f = etllm.reshape %t [1, -1, 8] : tensor<1x?x2x4xf32> -> tensor<1x?x8xf32>
    %s = etllm.slice %f dim 1 [-1 : 9223372036854775807] : tensor<1x?x8xf32> -> tensor<1x1x8xf32>
    %l = etllm.linear %s, %w : (tensor<1x1x8xf32>, tensor<16x8xf32>) -> tensor<1x1x16xf32>
    etllm.buffer.write %k2 to @k_cache : tensor<1x2x8x4xf32>
    return %l : tensor<1x1x16xf32>
  }
}

// -----

// kv-cache=io: a buffer written by something other than its in-place
// update is not a KV cache the runner can own.
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
    %z = etllm.neg %k2 : tensor<1x2x8x4xf32>
    // expected-error @+1 {{etllm-static-methods: kv-cache=io needs each cache written by its etllm.kv_cache.update; 'k_cache' is written by etllm.neg}}
    etllm.buffer.write %z to @k_cache : tensor<1x2x8x4xf32>
    return %l : tensor<1x?x16xf32>
  }
}

// -----

// Not forward(tokens, positions) -> logits.
module {
  // expected-error @+1 {{etllm-static-methods: `forward` is not forward(tokens: i64 [1, seq], input_pos: i64 [seq]) -> logits [1, seq, vocab]}}
  func.func @forward(%x: tensor<1x?xf32>) -> tensor<1x?xf32> {
    return %x : tensor<1x?xf32>
  }
}

// -----

// No `forward` at all.
// expected-error @+1 {{etllm-static-methods: the module has no `forward`}}
module {
  func.func @prefill(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    return %x : tensor<1x4xf32>
  }
}

// -----

// The methods' names are taken.
module {
  func.func @forward(%tok: tensor<1x?xi64>, %pos: tensor<?xi64>) -> tensor<1x?x4xf32> {
    %w = etllm.constant dense<1.0> : tensor<4x4xf32>
    %h = etllm.embedding %w, %tok : (tensor<4x4xf32>, tensor<1x?xi64>) -> tensor<1x?x4xf32>
    return %h : tensor<1x?x4xf32>
  }
  // expected-error @+1 {{etllm-static-methods: the module already has a `decode`}}
  func.func private @decode() {
    return
  }
}
