// RUN: etllm-opt %s --split-input-file | etllm-opt --split-input-file | FileCheck %s
// Round trip of every etllm op in its pretty form (printed, parsed again).

// Parameters, buffers and module information.
// CHECK-LABEL: module attributes {etllm.checkpoint = "model.safetensors"
// CHECK: etllm.parameter @model.embed_tokens.weight : tensor<512x64xf32>
// CHECK: etllm.parameter @model.layers.0.self_attn.q_proj.weight : tensor<64x64xf32> {qk_permute_heads = 8 : i64, source = "blk.0.attn_q.weight"}
// CHECK: etllm.parameter @inline : tensor<2xf32> = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: etllm.parameter @quantized : !etllm.qweight<128x64, i4, group 32, sym, f16>
// CHECK: etllm.buffer @model.layers.0.self_attn.k_cache : tensor<1x4x16x8xf32>
// CHECK-LABEL: func.func @forward
// CHECK: %[[W:.+]] = etllm.parameter.get @model.embed_tokens.weight : tensor<512x64xf32>
// CHECK: %[[K:.+]] = etllm.buffer.read @model.layers.0.self_attn.k_cache : tensor<1x4x16x8xf32>
// CHECK: etllm.buffer.write %[[K]] to @model.layers.0.self_attn.k_cache : tensor<1x4x16x8xf32>
// CHECK: etllm.embedding %[[W]], %{{.+}} {etllm.module = "model.embed_tokens"} : (tensor<512x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
module attributes {etllm.checkpoint = "model.safetensors",
                   etllm.module_classes = {model = "LlamaModel", "model.embed_tokens" = "Embedding"}} {
  etllm.parameter @model.embed_tokens.weight : tensor<512x64xf32>
  etllm.parameter @model.layers.0.self_attn.q_proj.weight : tensor<64x64xf32> {qk_permute_heads = 8 : i64, source = "blk.0.attn_q.weight"}
  etllm.parameter @inline : tensor<2xf32> = dense<[1.0, 2.0]> : tensor<2xf32>
  etllm.parameter @quantized : !etllm.qweight<128x64, i4, group 32, sym, f16>
  etllm.buffer @model.layers.0.self_attn.k_cache : tensor<1x4x16x8xf32>
  func.func @forward(%tokens: tensor<1x?xi64>) -> tensor<1x?x64xf32> {
    %w = etllm.parameter.get @model.embed_tokens.weight : tensor<512x64xf32>
    %k = etllm.buffer.read @model.layers.0.self_attn.k_cache : tensor<1x4x16x8xf32>
    etllm.buffer.write %k to @model.layers.0.self_attn.k_cache : tensor<1x4x16x8xf32>
    %h = etllm.embedding %w, %tokens {etllm.module = "model.embed_tokens"} : (tensor<512x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
    return %h : tensor<1x?x64xf32>
  }
}

// -----

// Constants, element-wise unary ops.
// CHECK-LABEL: func.func @unary
// CHECK: etllm.constant dense<9.99999974E-6> : tensor<f32>
// CHECK: etllm.neg %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.abs %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.rsqrt %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.sqrt %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.exp %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.log %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.cos %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.sin %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.tanh %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.sigmoid %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.silu %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.relu %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.gelu %{{.+}} : tensor<1x?x64xf32>
// CHECK: etllm.gelu %{{.+}} approximate <tanh> : tensor<1x?x64xf32>
// CHECK: etllm.logical_not %{{.+}} : tensor<4xi1>
func.func @unary(%x: tensor<1x?x64xf32>, %b: tensor<4xi1>) {
  %c = etllm.constant dense<1.0e-05> : tensor<f32>
  %0 = etllm.neg %x : tensor<1x?x64xf32>
  %1 = etllm.abs %x : tensor<1x?x64xf32>
  %2 = etllm.rsqrt %x : tensor<1x?x64xf32>
  %3 = etllm.sqrt %x : tensor<1x?x64xf32>
  %4 = etllm.exp %x : tensor<1x?x64xf32>
  %5 = etllm.log %x : tensor<1x?x64xf32>
  %6 = etllm.cos %x : tensor<1x?x64xf32>
  %7 = etllm.sin %x : tensor<1x?x64xf32>
  %8 = etllm.tanh %x : tensor<1x?x64xf32>
  %9 = etllm.sigmoid %x : tensor<1x?x64xf32>
  %10 = etllm.silu %x : tensor<1x?x64xf32>
  %11 = etllm.relu %x : tensor<1x?x64xf32>
  %12 = etllm.gelu %x : tensor<1x?x64xf32>
  %13 = etllm.gelu %x approximate <tanh> : tensor<1x?x64xf32>
  %14 = etllm.logical_not %b : tensor<4xi1>
  return
}

// -----

// Binary ops with broadcasting, comparisons, selects, conversion.
// CHECK-LABEL: func.func @binary
// CHECK: etllm.add %{{.+}}, %{{.+}} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
// CHECK: etllm.sub %{{.+}}, %{{.+}} : (tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
// CHECK: etllm.mul
// CHECK: etllm.div
// CHECK: etllm.pow
// CHECK: etllm.maximum
// CHECK: etllm.minimum
// CHECK: etllm.logical_and %{{.+}}, %{{.+}} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
// CHECK: etllm.logical_or
// CHECK: etllm.eq %{{.+}}, %{{.+}} : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
// CHECK: etllm.ne
// CHECK: etllm.lt
// CHECK: etllm.le
// CHECK: etllm.gt
// CHECK: etllm.ge
// CHECK: etllm.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<?x16xi1>, tensor<f32>, tensor<f32>) -> tensor<?x16xf32>
// CHECK: etllm.masked_fill %{{.+}}, %{{.+}}, -3.4028234663852886E+38 : (tensor<1x8x?x16xf32>, tensor<?x16xi1>) -> tensor<1x8x?x16xf32>
// CHECK: etllm.convert %{{.+}} : tensor<1x?x64xf32> -> tensor<1x?x64xf16>
func.func @binary(%x: tensor<1x?x64xf32>, %w: tensor<64xf32>, %s: tensor<f32>,
                  %b: tensor<4xi1>, %kpos: tensor<16xi64>, %qpos: tensor<?x1xi64>,
                  %scores: tensor<1x8x?x16xf32>) {
  %0 = etllm.add %x, %w : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %1 = etllm.sub %x, %s : (tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
  %2 = etllm.mul %x, %w : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %3 = etllm.div %x, %s : (tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
  %4 = etllm.pow %x, %s : (tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
  %5 = etllm.maximum %x, %s : (tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
  %6 = etllm.minimum %x, %s : (tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
  %7 = etllm.logical_and %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %8 = etllm.logical_or %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %9 = etllm.eq %kpos, %qpos : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %10 = etllm.ne %kpos, %qpos : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %11 = etllm.lt %kpos, %qpos : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %12 = etllm.le %kpos, %qpos : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %13 = etllm.gt %kpos, %qpos : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %14 = etllm.ge %kpos, %qpos : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %15 = etllm.where %13, %s, %s : (tensor<?x16xi1>, tensor<f32>, tensor<f32>) -> tensor<?x16xf32>
  %16 = etllm.masked_fill %scores, %13, -3.4028234663852886e+38 : (tensor<1x8x?x16xf32>, tensor<?x16xi1>) -> tensor<1x8x?x16xf32>
  %17 = etllm.convert %x : tensor<1x?x64xf32> -> tensor<1x?x64xf16>
  return
}

// -----

// Reductions, softmax, linear algebra, lookups, creation.
// CHECK-LABEL: func.func @compute
// CHECK: etllm.sum %{{.+}} dims [-1] : tensor<1x?x64xf32> -> tensor<1x?xf32>
// CHECK: etllm.mean %{{.+}} dims [-1] keepdim : tensor<1x?x64xf32> -> tensor<1x?x1xf32>
// CHECK: etllm.amax %{{.+}} dims [0, 2] : tensor<1x?x64xf32> -> tensor<?xf32>
// CHECK: etllm.softmax %{{.+}} dim -1 : tensor<1x8x?x16xf32>
// CHECK: etllm.matmul %{{.+}}, %{{.+}} : (tensor<1x8x?x8xf32>, tensor<1x8x8x16xf32>) -> tensor<1x8x?x16xf32>
// CHECK: etllm.linear %{{.+}}, %{{.+}} : (tensor<1x?x64xf32>, tensor<128x64xf32>) -> tensor<1x?x128xf32>
// CHECK: etllm.linear %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<1x?x128xf32>
// CHECK: etllm.embedding %{{.+}}, %{{.+}} : (tensor<512x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
// CHECK: etllm.arange 0 to 16 : tensor<16xi64>
// CHECK: etllm.arange 0 to 8 step 2 : tensor<4xf32>
// CHECK: etllm.full 0.000000e+00 : tensor<4x4xf32>
// CHECK: etllm.full_like %{{.+}}, 1.000000e+00 : tensor<1x?xi64> -> tensor<1x?xf32>
// CHECK: etllm.triu %{{.+}} diagonal 1 : tensor<4x4xf32>
// CHECK: etllm.tril %{{.+}} : tensor<4x4xf32>
func.func @compute(%x: tensor<1x?x64xf32>, %s: tensor<1x8x?x16xf32>,
                   %q: tensor<1x8x?x8xf32>, %kt: tensor<1x8x8x16xf32>,
                   %w: tensor<128x64xf32>, %bias: tensor<128xf32>,
                   %emb: tensor<512x64xf32>, %tok: tensor<1x?xi64>) {
  %0 = etllm.sum %x dims [-1] : tensor<1x?x64xf32> -> tensor<1x?xf32>
  %1 = etllm.mean %x dims [-1] keepdim : tensor<1x?x64xf32> -> tensor<1x?x1xf32>
  %2 = etllm.amax %x dims [0, 2] : tensor<1x?x64xf32> -> tensor<?xf32>
  %3 = etllm.softmax %s dim -1 : tensor<1x8x?x16xf32>
  %4 = etllm.matmul %q, %kt : (tensor<1x8x?x8xf32>, tensor<1x8x8x16xf32>) -> tensor<1x8x?x16xf32>
  %5 = etllm.linear %x, %w : (tensor<1x?x64xf32>, tensor<128x64xf32>) -> tensor<1x?x128xf32>
  %6 = etllm.linear %x, %w, %bias : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<1x?x128xf32>
  %7 = etllm.embedding %emb, %tok : (tensor<512x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %8 = etllm.arange 0 to 16 : tensor<16xi64>
  %9 = etllm.arange 0 to 8 step 2 : tensor<4xf32>
  %10 = etllm.full 0.0 : tensor<4x4xf32>
  %11 = etllm.full_like %tok, 1.0 : tensor<1x?xi64> -> tensor<1x?xf32>
  %12 = etllm.triu %10 diagonal 1 : tensor<4x4xf32>
  %13 = etllm.tril %10 : tensor<4x4xf32>
  return
}

// -----

// Shape manipulation and indexing.
// CHECK-LABEL: func.func @shapes
// CHECK: etllm.transpose %{{.+}} 1, 2 : tensor<1x?x8x8xf32> -> tensor<1x8x?x8xf32>
// CHECK: etllm.permute %{{.+}} [0, 2, 1, 3] : tensor<1x?x8x8xf32> -> tensor<1x8x?x8xf32>
// CHECK: etllm.reshape %{{.+}} [1, -1, 8, 8] : tensor<1x?x64xf32> -> tensor<1x?x8x8xf32>
// CHECK: etllm.unsqueeze %{{.+}} dim 2 : tensor<1x4x16x8xf32> -> tensor<1x4x1x16x8xf32>
// CHECK: etllm.squeeze %{{.+}} dim 2 : tensor<1x4x1x16x8xf32> -> tensor<1x4x16x8xf32>
// CHECK: etllm.expand %{{.+}} [1, 4, 2, -1, 8] : tensor<1x4x1x16x8xf32> -> tensor<1x4x2x16x8xf32>
// CHECK: etllm.slice %{{.+}} dim 3 [0 : 4] : tensor<1x8x?x8xf32> -> tensor<1x8x?x4xf32>
// CHECK: etllm.slice %{{.+}} dim 1 [-1 : 9223372036854775807] : tensor<1x?x64xf32> -> tensor<1x1x64xf32>
// CHECK: etllm.slice %{{.+}} dim 0 [0 : 16 : 2] : tensor<16xi64> -> tensor<8xi64>
// CHECK: etllm.cat %{{.+}}, %{{.+}} dim -1 : (tensor<1x8x?x4xf32>, tensor<1x8x?x4xf32>) -> tensor<1x8x?x8xf32>
// CHECK: etllm.split %{{.+}} dim 2 [32, 16, 16] : tensor<1x?x64xf32> -> tensor<1x?x32xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>
// CHECK: etllm.index_select %{{.+}} dim 0, %{{.+}} : (tensor<512x64xf32>, tensor<?xi64>) -> tensor<?x64xf32>
// CHECK: etllm.gather %{{.+}} dim 1, %{{.+}} : (tensor<4x8xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
// CHECK: etllm.index_copy %{{.+}} dim 2, %{{.+}}, %{{.+}} : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x16x8xf32>
// CHECK: etllm.index_put %{{.+}} dim 2, %{{.+}}, %{{.+}} accumulate : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x16x8xf32>
func.func @shapes(%x4: tensor<1x?x8x8xf32>, %x: tensor<1x?x64xf32>,
                  %c: tensor<1x4x16x8xf32>, %q: tensor<1x8x?x8xf32>,
                  %r: tensor<16xi64>, %emb: tensor<512x64xf32>,
                  %idx: tensor<?xi64>, %g: tensor<4x8xf32>, %gi: tensor<4x2xi64>,
                  %new: tensor<1x4x?x8xf32>) {
  %0 = etllm.transpose %x4 1, 2 : tensor<1x?x8x8xf32> -> tensor<1x8x?x8xf32>
  %1 = etllm.permute %x4 [0, 2, 1, 3] : tensor<1x?x8x8xf32> -> tensor<1x8x?x8xf32>
  %2 = etllm.reshape %x [1, -1, 8, 8] : tensor<1x?x64xf32> -> tensor<1x?x8x8xf32>
  %3 = etllm.unsqueeze %c dim 2 : tensor<1x4x16x8xf32> -> tensor<1x4x1x16x8xf32>
  %4 = etllm.squeeze %3 dim 2 : tensor<1x4x1x16x8xf32> -> tensor<1x4x16x8xf32>
  %5 = etllm.expand %3 [1, 4, 2, -1, 8] : tensor<1x4x1x16x8xf32> -> tensor<1x4x2x16x8xf32>
  %6 = etllm.slice %q dim 3 [0 : 4] : tensor<1x8x?x8xf32> -> tensor<1x8x?x4xf32>
  %7 = etllm.slice %x dim 1 [-1 : 9223372036854775807] : tensor<1x?x64xf32> -> tensor<1x1x64xf32>
  %8 = etllm.slice %r dim 0 [0 : 16 : 2] : tensor<16xi64> -> tensor<8xi64>
  %9 = etllm.cat %6, %6 dim -1 : (tensor<1x8x?x4xf32>, tensor<1x8x?x4xf32>) -> tensor<1x8x?x8xf32>
  %10:3 = etllm.split %x dim 2 [32, 16, 16] : tensor<1x?x64xf32> -> tensor<1x?x32xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>
  %11 = etllm.index_select %emb dim 0, %idx : (tensor<512x64xf32>, tensor<?xi64>) -> tensor<?x64xf32>
  %12 = etllm.gather %g dim 1, %gi : (tensor<4x8xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  %13 = etllm.index_copy %c dim 2, %idx, %new : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x16x8xf32>
  %14 = etllm.index_put %c dim 2, %idx, %new accumulate : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

// Level B: fused ops.
// CHECK-LABEL: func.func @fused
// CHECK: etllm.rms_norm %{{.+}}, %{{.+}} eps 1.000000e-05 : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
// CHECK: etllm.rms_norm %{{.+}}, %{{.+}} eps 9.9999999999999995E-7 offset 1.000000e+00 : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
// CHECK: etllm.rms_norm %{{.+}} eps 1.000000e-05 : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
// CHECK: etllm.layer_norm %{{.+}} weight %{{.+}} bias %{{.+}} eps 1.000000e-05 : (tensor<1x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
// CHECK: etllm.layer_norm %{{.+}} eps 1.000000e-05 : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
// CHECK: etllm.rope %{{.+}}, %{{.+}}, %{{.+}} convention <rotate_half> : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x8x?x8xf32>
// CHECK: etllm.rope %{{.+}}, %{{.+}}, %{{.+}} convention <interleaved> scaling 1.500000e+00 : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<2xf32>) -> tensor<1x8x?x8xf32>
// CHECK: etllm.rope %{{.+}}, %{{.+}}, %{{.+}} convention <deinterleave_rotate_half> scaling 1.250000e+00 : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x8x?x8xf32>
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} positions %{{.+}} causal scale 0.35355339059327373 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<?xi64>) -> tensor<1x8x?x8xf32>
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} softcap 5.000000e+01 scale 6.250000e-02 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x1x?x16xf32>) -> tensor<1x8x?x8xf32>
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} positions %{{.+}} causal window 4 scale 0.35355339059327373
// CHECK: %[[U:.+]] = etllm.kv_cache.update %{{.+}}[%{{.+}}], %{{.+}} : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x16x8xf32>
// CHECK: etllm.kv_cache.update %{{.+}}[%{{.+}}], %{{.+}} dim 1 : (tensor<1x16x4x8xf32>, tensor<?xi64>, tensor<1x?x4x8xf32>) -> tensor<1x16x4x8xf32>
func.func @fused(%x: tensor<1x?x64xf32>, %w: tensor<64xf32>, %q: tensor<1x8x?x8xf32>,
                 %pos: tensor<?xi64>, %f: tensor<4xf32>, %f2: tensor<2xf32>,
                 %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>,
                 %mask: tensor<1x1x?x16xf32>, %new: tensor<1x4x?x8xf32>,
                 %c2: tensor<1x16x4x8xf32>, %new2: tensor<1x?x4x8xf32>,
                 %cache: tensor<1x4x16x8xf32>) {
  %0 = etllm.rms_norm %x, %w eps 1.0e-05 : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %1 = etllm.rms_norm %x, %w eps 1.0e-06 offset 1.0 : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %2 = etllm.rms_norm %x eps 1.0e-05 : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %3 = etllm.layer_norm %x weight %w bias %w eps 1.0e-05 : (tensor<1x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %4 = etllm.layer_norm %x eps 1.0e-05 : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %5 = etllm.rope %q, %pos, %f convention <rotate_half> : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x8x?x8xf32>
  %6 = etllm.rope %q, %pos, %f2 convention <interleaved> scaling 1.5 : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<2xf32>) -> tensor<1x8x?x8xf32>
  %deinterleaved = etllm.rope %q, %pos, %f convention <deinterleave_rotate_half> scaling 1.25 : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x8x?x8xf32>
  %7 = etllm.sdpa %q, %k, %v positions %pos causal scale 0.35355339059327373 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<?xi64>) -> tensor<1x8x?x8xf32>
  %8 = etllm.sdpa %q, %k, %v mask %mask softcap 50.0 scale 0.0625 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x1x?x16xf32>) -> tensor<1x8x?x8xf32>
  %9 = etllm.sdpa %q, %k, %v positions %pos causal window 4 scale 0.35355339059327373 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<?xi64>) -> tensor<1x8x?x8xf32>
  %10 = etllm.kv_cache.update %cache[%pos], %new : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x16x8xf32>
  %11 = etllm.kv_cache.update %c2[%pos], %new2 dim 1 : (tensor<1x16x4x8xf32>, tensor<?xi64>, tensor<1x?x4x8xf32>) -> tensor<1x16x4x8xf32>
  return
}

// -----

// Level C and D: quantization and delegation.
// CHECK-LABEL: func.func @quantized
// CHECK: %[[QA:.+]] = etllm.quantize_dynamic %{{.+}} : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_token, asym>
// CHECK: etllm.qlinear %[[QA]], %{{.+}} : (!etllm.qact<1x?x64, i8, per_token, asym>, !etllm.qweight<128x64, i4, group 32, sym, f32>) -> tensor<1x?x128xf32>
// CHECK: etllm.qlinear %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x?x64xf32>, !etllm.qweight<128x64, i4, group 32, sym, f32>, tensor<128xf32>) -> tensor<1x?x128xf32>
// CHECK: etllm.qembedding %{{.+}}, %{{.+}} : (!etllm.qweight<512x64, i8, group 64, asym, f16>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
// CHECK: etllm.dequantize %{{.+}} : !etllm.qweight<128x64, i4, group 32, sym, f32> -> tensor<128x64xf32>
// CHECK: etllm.delegate.call "cpu" @cpu_0(%{{.+}}) : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
// CHECK: etllm.lora %{{.+}}, %{{.+}} {hook = 0 : i64, target = "model.layers.0.mlp.up_proj"} : (tensor<1x?x64xf32>, tensor<1x?x128xf32>) -> tensor<1x?x128xf32>
func.func private @cpu_0(%x: tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    attributes {etllm.backend = "cpu"} {
  %0 = etllm.silu %x : tensor<1x?x64xf32>
  return %0 : tensor<1x?x64xf32>
}
func.func @quantized(%x: tensor<1x?x64xf32>, %w: !etllm.qweight<128x64, i4, group 32, sym, f32>,
                     %b: tensor<128xf32>, %e: !etllm.qweight<512x64, i8, group 64, asym, f16>,
                     %tok: tensor<1x?xi64>) {
  %qa = etllm.quantize_dynamic %x : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_token, asym>
  %0 = etllm.qlinear %qa, %w : (!etllm.qact<1x?x64, i8, per_token, asym>, !etllm.qweight<128x64, i4, group 32, sym, f32>) -> tensor<1x?x128xf32>
  %1 = etllm.qlinear %x, %w, %b : (tensor<1x?x64xf32>, !etllm.qweight<128x64, i4, group 32, sym, f32>, tensor<128xf32>) -> tensor<1x?x128xf32>
  %2 = etllm.qembedding %e, %tok : (!etllm.qweight<512x64, i8, group 64, asym, f16>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %3 = etllm.dequantize %w : !etllm.qweight<128x64, i4, group 32, sym, f32> -> tensor<128x64xf32>
  %4 = etllm.delegate.call "cpu" @cpu_0(%x) : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %5 = etllm.lora %x, %1 {hook = 0 : i64, target = "model.layers.0.mlp.up_proj"} : (tensor<1x?x64xf32>, tensor<1x?x128xf32>) -> tensor<1x?x128xf32>
  return
}
