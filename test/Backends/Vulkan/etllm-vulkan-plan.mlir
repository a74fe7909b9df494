// RUN: etllm-opt %s --split-input-file --etllm-partition="backends=vulkan" --etllm-lower-backends | FileCheck %s
// RUN: etllm-opt %s --split-input-file --etllm-partition="backends=vulkan backend-options=vulkan.precision=f16,vulkan.max-binding-bytes=4096" --etllm-lower-backends | FileCheck %s --check-prefix=SMALL

// The schedule etllm-vulkan-plan records for a Llama decoder layer: 8
// dispatches. The q, k and v projections are one matmul over their
// concatenated weights (n = 16 + 8 + 8); one ROPE dispatch rotates the
// queries, writes the rotated keys into the key cache and the values into
// the value cache; split-KV attention and its combine; o_proj with the
// residual add as its epilogue; gate and up with silu * mul as one matmul
// (swiglu); down_proj with the residual. A barrier separates each dispatch
// from the one before (each reads what the previous wrote); the first has
// none. The transposes and reshapes around the attention dispatch nothing:
// sdpa writes token-major, so o_proj reads it in place.
// CHECK-LABEL: func.func private @vulkan_0
// CHECK-SAME: etllm.backend = "vulkan"
// CHECK-SAME: vulkan.schedule = [
// CHECK-SAME: "0: rms_norm layer=0 (rms_norm model.layers.0.input_layernorm)
// CHECK-SAME: "1: matmul wf32 n=32 k=16 barrier layer=0 (linear+linear+linear model.layers.0.self_attn.q_proj) {{[^"]*}} const(vulkan/wq+wk+wv@f32)
// CHECK-SAME: "2: rope jobs=3 barrier (rope+rope+kv_cache.update+kv_cache.update) {{[^"]*}} cache1 {{[^"]*}} cache2"
// CHECK-SAME: "3: sdpa barrier layer=0 (sdpa model.layers.0.self_attn) {{[^"]*}} cache1 cache2
// CHECK-SAME: "4: sdpa_combine barrier layer=0
// CHECK-SAME: "5: matmul wf32 +residual n=16 k=16 barrier layer=0 (linear+add model.layers.0.self_attn.o_proj)
// CHECK-SAME: "6: matmul wf32 swiglu n=24 k=16 barrier layer=0 (linear+linear+silu+mul model.layers.0.mlp.gate_proj) {{[^"]*}} const(vulkan/wg+wu@f32)
// CHECK-SAME: "7: matmul wf32 +residual n=16 k=24 barrier layer=0 (linear+add model.layers.0.mlp.down_proj)
// CHECK-SAME: vulkan.summary = {arena_bytes = {{[0-9]+}} : i64, barriers = 7 : i64, dispatches = 8 : i64, layers = 1 : i64, precision = "f32"}
// The ops carry the dispatches that run them; the views none.
// CHECK: etllm.rms_norm {{.*}}vulkan.dispatch = array<i64: 0>
// CHECK: etllm.linear {{.*}}vulkan.dispatch = array<i64: 1>
// CHECK: etllm.reshape
// CHECK-NOT: vulkan.dispatch
// CHECK-SAME: -> tensor<1x?x2x8xf32>
// CHECK: etllm.sdpa {{.*}}vulkan.dispatch = array<i64: 3, 4>
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "vulkan" @vulkan_0
// CHECK-NOT: etllm.delegate.call

// With vulkan.precision=f16: f16 activations, caches and float weights.
// SMALL-LABEL: func.func private @vulkan_0
// SMALL-SAME: "1: matmul wf16 n=32 k=16 f16 barrier
// SMALL-SAME: "6: matmul wf16 swiglu n=24 k=16 f16 barrier
// SMALL-SAME: precision = "f16"
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 32>} {
etllm.parameter @norm : tensor<16xf32>
etllm.parameter @wq : tensor<16x16xf32>
etllm.parameter @wk : tensor<8x16xf32>
etllm.parameter @wv : tensor<8x16xf32>
etllm.parameter @wo : tensor<16x16xf32>
etllm.parameter @wg : tensor<24x16xf32>
etllm.parameter @wu : tensor<24x16xf32>
etllm.parameter @wd : tensor<16x24xf32>
etllm.buffer @kc : tensor<1x1x32x8xf32>
etllm.buffer @vc : tensor<1x1x32x8xf32>
func.func @forward(%x: tensor<1x?x16xf32>, %pos: tensor<?xi64>) -> tensor<1x?x16xf32> {
  %f = etllm.constant dense<[1.0, 0.1, 0.01, 0.001]> : tensor<4xf32>
  %nw = etllm.parameter.get @norm : tensor<16xf32>
  %wq = etllm.parameter.get @wq : tensor<16x16xf32>
  %wk = etllm.parameter.get @wk : tensor<8x16xf32>
  %wv = etllm.parameter.get @wv : tensor<8x16xf32>
  %wo = etllm.parameter.get @wo : tensor<16x16xf32>
  %wg = etllm.parameter.get @wg : tensor<24x16xf32>
  %wu = etllm.parameter.get @wu : tensor<24x16xf32>
  %wd = etllm.parameter.get @wd : tensor<16x24xf32>
  %h = etllm.rms_norm %x, %nw eps 1.0e-05 {etllm.module = "model.layers.0.input_layernorm"} : (tensor<1x?x16xf32>, tensor<16xf32>) -> tensor<1x?x16xf32>
  %q0 = etllm.linear %h, %wq {etllm.module = "model.layers.0.self_attn.q_proj"} : (tensor<1x?x16xf32>, tensor<16x16xf32>) -> tensor<1x?x16xf32>
  %q1 = etllm.reshape %q0 [1, -1, 2, 8] : tensor<1x?x16xf32> -> tensor<1x?x2x8xf32>
  %q2 = etllm.transpose %q1 1, 2 : tensor<1x?x2x8xf32> -> tensor<1x2x?x8xf32>
  %q = etllm.rope %q2, %pos, %f convention <rotate_half> : (tensor<1x2x?x8xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x2x?x8xf32>
  %k0 = etllm.linear %h, %wk {etllm.module = "model.layers.0.self_attn.k_proj"} : (tensor<1x?x16xf32>, tensor<8x16xf32>) -> tensor<1x?x8xf32>
  %k1 = etllm.reshape %k0 [1, -1, 1, 8] : tensor<1x?x8xf32> -> tensor<1x?x1x8xf32>
  %k2 = etllm.transpose %k1 1, 2 : tensor<1x?x1x8xf32> -> tensor<1x1x?x8xf32>
  %k = etllm.rope %k2, %pos, %f convention <rotate_half> : (tensor<1x1x?x8xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x1x?x8xf32>
  %v0 = etllm.linear %h, %wv {etllm.module = "model.layers.0.self_attn.v_proj"} : (tensor<1x?x16xf32>, tensor<8x16xf32>) -> tensor<1x?x8xf32>
  %v1 = etllm.reshape %v0 [1, -1, 1, 8] : tensor<1x?x8xf32> -> tensor<1x?x1x8xf32>
  %v2 = etllm.transpose %v1 1, 2 : tensor<1x?x1x8xf32> -> tensor<1x1x?x8xf32>
  %kc = etllm.buffer.read @kc : tensor<1x1x32x8xf32>
  %ku = etllm.kv_cache.update %kc[%pos], %k : (tensor<1x1x32x8xf32>, tensor<?xi64>, tensor<1x1x?x8xf32>) -> tensor<1x1x32x8xf32>
  %vc = etllm.buffer.read @vc : tensor<1x1x32x8xf32>
  %vu = etllm.kv_cache.update %vc[%pos], %v2 : (tensor<1x1x32x8xf32>, tensor<?xi64>, tensor<1x1x?x8xf32>) -> tensor<1x1x32x8xf32>
  %a = etllm.sdpa %q, %ku, %vu positions %pos causal scale 0.35 {etllm.module = "model.layers.0.self_attn"} : (tensor<1x2x?x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x32x8xf32>, tensor<?xi64>) -> tensor<1x2x?x8xf32>
  %a1 = etllm.transpose %a 1, 2 : tensor<1x2x?x8xf32> -> tensor<1x?x2x8xf32>
  %a2 = etllm.reshape %a1 [1, -1, 16] : tensor<1x?x2x8xf32> -> tensor<1x?x16xf32>
  %o = etllm.linear %a2, %wo {etllm.module = "model.layers.0.self_attn.o_proj"} : (tensor<1x?x16xf32>, tensor<16x16xf32>) -> tensor<1x?x16xf32>
  %r = etllm.add %x, %o : (tensor<1x?x16xf32>, tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %g = etllm.linear %r, %wg {etllm.module = "model.layers.0.mlp.gate_proj"} : (tensor<1x?x16xf32>, tensor<24x16xf32>) -> tensor<1x?x24xf32>
  %s = etllm.silu %g : tensor<1x?x24xf32>
  %u = etllm.linear %r, %wu {etllm.module = "model.layers.0.mlp.up_proj"} : (tensor<1x?x16xf32>, tensor<24x16xf32>) -> tensor<1x?x24xf32>
  %m = etllm.mul %s, %u : (tensor<1x?x24xf32>, tensor<1x?x24xf32>) -> tensor<1x?x24xf32>
  %d = etllm.linear %m, %wd {etllm.module = "model.layers.0.mlp.down_proj"} : (tensor<1x?x24xf32>, tensor<16x24xf32>) -> tensor<1x?x16xf32>
  %y = etllm.add %r, %d : (tensor<1x?x16xf32>, tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}
}

// -----

// A weight larger than the binding limit is split into row ranges, one
// binding and one dispatch each, named by the rows they hold; gate and up
// stay paired in each range (each holds rows [a:b] of both); a barrier
// orders the ranges' writes into the one output. With the default limit
// (128 MiB) nothing is split.
// CHECK-LABEL: func.func private @vulkan_0
// CHECK-SAME: "0: matmul wf32 n=96 k=32 (linear) {{[^"]*}} const(vulkan/head@f32)
// CHECK-SAME: "1: matmul wf32 swiglu n=48 k=32 (linear+linear+silu+mul) {{[^"]*}} const(vulkan/g+u@f32)
// CHECK-SAME: dispatches = 2 : i64
// 4 KiB: f16 rows of 64 bytes, 64 a binding (32 pairs).
// SMALL-LABEL: func.func private @vulkan_0
// SMALL-SAME: "0: matmul wf16 n=64 k=32 f16 (linear) {{[^"]*}} const(vulkan/head[0:64]@f16)
// SMALL-SAME: "1: matmul wf16 n=32 k=32 f16 barrier (linear) {{[^"]*}} const(vulkan/head[64:96]@f16)
// SMALL-SAME: "2: matmul wf16 swiglu n=32 k=32 f16 (linear+linear+silu+mul) {{[^"]*}} const(vulkan/g[0:32]+u[0:32]@f16)
// SMALL-SAME: "3: matmul wf16 swiglu n=16 k=32 f16 barrier (linear+linear+silu+mul) {{[^"]*}} const(vulkan/g[32:48]+u[32:48]@f16)
// SMALL-SAME: dispatches = 4 : i64
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
etllm.parameter @head : tensor<96x32xf32>
etllm.parameter @g : tensor<48x32xf32>
etllm.parameter @u : tensor<48x32xf32>
func.func @forward(%x: tensor<1x?x32xf32>) -> (tensor<1x?x96xf32>, tensor<1x?x48xf32>) {
  %wh = etllm.parameter.get @head : tensor<96x32xf32>
  %wg = etllm.parameter.get @g : tensor<48x32xf32>
  %wu = etllm.parameter.get @u : tensor<48x32xf32>
  %y = etllm.linear %x, %wh : (tensor<1x?x32xf32>, tensor<96x32xf32>) -> tensor<1x?x96xf32>
  %g = etllm.linear %x, %wg : (tensor<1x?x32xf32>, tensor<48x32xf32>) -> tensor<1x?x48xf32>
  %s = etllm.silu %g : tensor<1x?x48xf32>
  %u = etllm.linear %x, %wu : (tensor<1x?x32xf32>, tensor<48x32xf32>) -> tensor<1x?x48xf32>
  %m = etllm.mul %s, %u : (tensor<1x?x48xf32>, tensor<1x?x48xf32>) -> tensor<1x?x48xf32>
  return %y, %m : tensor<1x?x96xf32>, tensor<1x?x48xf32>
}
}

// -----

// A reshape no strides express (merging a transposed pair) reads a
// contiguous copy: one COPY dispatch, then the matmul. Without the
// transpose (near miss) the reshapes are views: no copy.
// CHECK-LABEL: func.func private @vulkan_0
// CHECK-SAME: "0: copy (copy for reshape) {{[^"]*}}"
// CHECK-SAME: "1: matmul wf32 n=8 k=16 barrier (linear)
// CHECK-SAME: dispatches = 2 : i64
// CHECK-LABEL: func.func private @vulkan_1
// CHECK-SAME: "0: matmul wf32 n=8 k=8 (linear)
// CHECK-SAME: dispatches = 1 : i64
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
etllm.parameter @w : tensor<8x16xf32>
etllm.parameter @w2 : tensor<8x8xf32>
func.func @forward(%x: tensor<1x?x16xf32>) -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>) {
  %w = etllm.parameter.get @w : tensor<8x16xf32>
  %w2 = etllm.parameter.get @w2 : tensor<8x8xf32>
  %a = etllm.reshape %x [1, -1, 2, 8] : tensor<1x?x16xf32> -> tensor<1x?x2x8xf32>
  %b = etllm.transpose %a 2, 3 : tensor<1x?x2x8xf32> -> tensor<1x?x8x2xf32>
  %c = etllm.reshape %b [1, -1, 16] : tensor<1x?x8x2xf32> -> tensor<1x?x16xf32>
  %y = etllm.linear %c, %w : (tensor<1x?x16xf32>, tensor<8x16xf32>) -> tensor<1x?x8xf32>
  %e = etllm.exp %y : tensor<1x?x8xf32>
  %f = etllm.reshape %e [1, -1, 2, 4] : tensor<1x?x8xf32> -> tensor<1x?x2x4xf32>
  %h = etllm.reshape %f [1, -1, 8] : tensor<1x?x2x4xf32> -> tensor<1x?x8xf32>
  %z = etllm.linear %h, %w2 : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y, %z : tensor<1x?x8xf32>, tensor<1x?x8xf32>
}
}
