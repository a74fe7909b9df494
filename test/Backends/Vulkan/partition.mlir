// RUN: etllm-opt %s --split-input-file --etllm-partition="backends=vulkan,cpu" | FileCheck %s
// RUN: etllm-opt %s --split-input-file --etllm-partition="backends=vulkan,cpu backend-options=vulkan.exclude=etllm.rms_norm:etllm.rope:etllm.kv_cache.update:etllm.sdpa" | FileCheck %s --check-prefix=MIXED

// The legality contract: a whole decoder layer is legal (one Vulkan
// subgraph, the caches' reads outside it, their updates its results).
// With vulkan.exclude naming the norms and the attention's ops
// (`:`-separated; the recipe vulkan-int4-mixed) they leave the GPU: the
// norm goes to the next backend, cpu; the attention alone is not worth
// a cpu call (no linear in it) and runs on portable kernels, its
// caches in the program's buffers. One program, two backends and the
// portable kernels.
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "vulkan" @vulkan_0
// CHECK-NOT: etllm.delegate.call
// MIXED-LABEL: func.func @forward
// MIXED: etllm.delegate.call "cpu" @cpu_0
// MIXED: etllm.delegate.call "vulkan" @vulkan_0
// MIXED: etllm.rope
// MIXED: etllm.kv_cache.update
// MIXED: etllm.sdpa
// MIXED: etllm.delegate.call "vulkan" @vulkan_1
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

// Near misses, each left to cpu or to the portable kernels:
// an attention with a mask (the kernel takes none), and so the cache
// updates it reads (a cache in device memory must be read there); a linear
// whose weight is not a parameter; a linear of quantized activations (the
// kernels read floats); f16 activations; a slice of the sequence that is
// not the last or the first row.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: etllm.delegate.call "vulkan"
// CHECK: return
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 32>} {
etllm.parameter @q8 : !etllm.qweight<16x16, i8, group 16, sym, f32>
etllm.buffer @kc : tensor<1x1x32x8xf32>
func.func @forward(%q: tensor<1x1x?x8xf32>, %k: tensor<1x1x?x8xf32>, %pos: tensor<?xi64>, %mask: tensor<1x1x?x32xf32>, %x: tensor<1x?x16xf32>, %w: tensor<16x16xf32>, %h: tensor<1x?x16xf16>) -> (tensor<1x1x?x8xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf16>, tensor<1x2x16xf32>) {
  %kc = etllm.buffer.read @kc : tensor<1x1x32x8xf32>
  %ku = etllm.kv_cache.update %kc[%pos], %k : (tensor<1x1x32x8xf32>, tensor<?xi64>, tensor<1x1x?x8xf32>) -> tensor<1x1x32x8xf32>
  %a = etllm.sdpa %q, %ku, %ku mask %mask scale 0.35 : (tensor<1x1x?x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x?x32xf32>) -> tensor<1x1x?x8xf32>
  %y = etllm.linear %x, %w : (tensor<1x?x16xf32>, tensor<16x16xf32>) -> tensor<1x?x16xf32>
  %w8 = etllm.parameter.get @q8 : !etllm.qweight<16x16, i8, group 16, sym, f32>
  %qa = etllm.quantize_dynamic %x : tensor<1x?x16xf32> -> !etllm.qact<1x?x16, i8, per_token, asym>
  %z = etllm.qlinear %qa, %w8 : (!etllm.qact<1x?x16, i8, per_token, asym>, !etllm.qweight<16x16, i8, group 16, sym, f32>) -> tensor<1x?x16xf32>
  %n = etllm.rms_norm %h eps 1.0e-05 : (tensor<1x?x16xf16>) -> tensor<1x?x16xf16>
  %s = etllm.slice %x dim 1 [0 : 2] : tensor<1x?x16xf32> -> tensor<1x2x16xf32>
  return %a, %y, %z, %n, %s : tensor<1x1x?x8xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf16>, tensor<1x2x16xf32>
}
}

// -----

// The legal forms next to those near misses: int4 weights in groups of 32
// (f16 scales), an int8 weight on float activations (dequantized at
// export), an RMSNorm and the last row of the sequence (the lm_head's
// input) are one Vulkan subgraph.
// CHECK-LABEL: func.func private @vulkan_0
// CHECK: etllm.rms_norm
// CHECK: etllm.qlinear {{.*}}i8, group 64
// CHECK: etllm.slice {{.*}} dim 1 [-1 : 9223372036854775807]
// CHECK: etllm.qlinear {{.*}}i4, group 32
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "vulkan" @vulkan_0
// CHECK-NOT: etllm.delegate.call
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 32>} {
etllm.parameter @n : tensor<64xf32>
etllm.parameter @q4 : !etllm.qweight<128x64, i4, group 32, sym, f16>
etllm.parameter @q8 : !etllm.qweight<64x64, i8, group 64, sym, f32>
func.func @forward(%x: tensor<1x?x64xf32>) -> tensor<1x1x128xf32> {
  %nw = etllm.parameter.get @n : tensor<64xf32>
  %w = etllm.parameter.get @q4 : !etllm.qweight<128x64, i4, group 32, sym, f16>
  %w8 = etllm.parameter.get @q8 : !etllm.qweight<64x64, i8, group 64, sym, f32>
  %h0 = etllm.rms_norm %x, %nw eps 1.0e-05 : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %h = etllm.qlinear %h0, %w8 : (tensor<1x?x64xf32>, !etllm.qweight<64x64, i8, group 64, sym, f32>) -> tensor<1x?x64xf32>
  %l = etllm.slice %h dim 1 [-1 : 9223372036854775807] : tensor<1x?x64xf32> -> tensor<1x1x64xf32>
  %y = etllm.qlinear %l, %w : (tensor<1x1x64xf32>, !etllm.qweight<128x64, i4, group 32, sym, f16>) -> tensor<1x1x128xf32>
  return %y : tensor<1x1x128xf32>
}
}

// -----

// Near miss: the same with a binding limit (vulkan.max-binding-bytes) of
// 4 KiB and a sequence bound of 512: the normalized rows (512 x 64 x 4
// bytes) exceed it, so the RMSNorm goes to the next backend; the lm_head
// fits.
// CHECK-LABEL: func.func private @cpu_0
// CHECK: etllm.rms_norm
// CHECK-LABEL: func.func private @vulkan_0
// CHECK-NOT: etllm.rms_norm
// CHECK: etllm.qlinear
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "cpu" @cpu_0
// CHECK: etllm.delegate.call "vulkan" @vulkan_0
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 512>, etllm.backend_options = {"vulkan.max-binding-bytes" = "4096"}} {
etllm.parameter @n : tensor<64xf32>
etllm.parameter @q4 : !etllm.qweight<128x64, i4, group 32, sym, f16>
func.func @forward(%x: tensor<1x?x64xf32>) -> tensor<1x1x128xf32> {
  %nw = etllm.parameter.get @n : tensor<64xf32>
  %w = etllm.parameter.get @q4 : !etllm.qweight<128x64, i4, group 32, sym, f16>
  %h = etllm.rms_norm %x, %nw eps 1.0e-05 : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %l = etllm.slice %h dim 1 [-1 : 9223372036854775807] : tensor<1x?x64xf32> -> tensor<1x1x64xf32>
  %y = etllm.qlinear %l, %w : (tensor<1x1x64xf32>, !etllm.qweight<128x64, i4, group 32, sym, f16>) -> tensor<1x1x128xf32>
  return %y : tensor<1x1x128xf32>
}
}

// -----

// Near miss: a reshape of positions (index tensor, legal on Vulkan for the
// kernels' own readers: RoPE, the cache update) whose reader is a CPU-side
// op (a mask's comparison, as a composite model's text_decoder builds) stays
// off the GPU: a Vulkan subgraph returns float tensors only.
// CHECK-LABEL: func.func private @vulkan_0
// CHECK-NOT: etllm.reshape
// CHECK: etllm.linear
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "vulkan" @vulkan_0
// CHECK: etllm.reshape %arg1 [-1, 1]
// CHECK: etllm.gt
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 32>} {
etllm.parameter @w : tensor<16x16xf32>
func.func @forward(%x: tensor<1x?x16xf32>, %pos: tensor<?xi64>) -> (tensor<1x?x16xf32>, tensor<?x32xi1>) {
  %w = etllm.parameter.get @w : tensor<16x16xf32>
  %y = etllm.linear %x, %w : (tensor<1x?x16xf32>, tensor<16x16xf32>) -> tensor<1x?x16xf32>
  %p = etllm.reshape %pos [-1, 1] : tensor<?xi64> -> tensor<?x1xi64>
  %k = etllm.arange 0 to 32 : tensor<32xi64>
  %m = etllm.gt %k, %p : (tensor<32xi64>, tensor<?x1xi64>) -> tensor<?x32xi1>
  return %y, %m : tensor<1x?x16xf32>, tensor<?x32xi1>
}
}
