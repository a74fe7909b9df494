// RUN: etllm-opt %s --split-input-file --etllm-partition="backends=cpu" --verify-diagnostics | FileCheck %s

// The ops cpu takes (linear with parameter weights, element-wise math)
// become one outlined function; the attention stays on portable kernels.
// CHECK-LABEL: func.func private @cpu_0
// CHECK-SAME: attributes {etllm.backend = "cpu"}
// CHECK: etllm.parameter.get @w
// CHECK: etllm.linear
// CHECK: etllm.silu
// CHECK: return
// CHECK-LABEL: func.func @forward
// CHECK: %[[C:.+]] = etllm.delegate.call "cpu" @cpu_0(%{{.+}}) : (tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
// CHECK: etllm.softmax %[[C]]
// CHECK-NOT: etllm.linear
etllm.parameter @w : tensor<8x8xf32>
func.func @forward(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %w = etllm.parameter.get @w : tensor<8x8xf32>
  %y = etllm.linear %x, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %s = etllm.silu %y : tensor<1x?x8xf32>
  %p = etllm.softmax %s dim -1 : tensor<1x?x8xf32>
  return %p : tensor<1x?x8xf32>
}

// -----

// Independent portable work is scheduled around the backend's ops so that
// they form one subgraph: the exp does not split the two linears.
// CHECK-LABEL: func.func private @cpu_0
// CHECK: etllm.linear
// CHECK: etllm.linear
// CHECK-LABEL: func.func @forward
// CHECK-COUNT-1: etllm.delegate.call
// CHECK: etllm.exp
etllm.parameter @w : tensor<8x8xf32>
func.func @forward(%x: tensor<1x?x8xf32>, %z: tensor<4xf32>) -> (tensor<1x?x8xf32>, tensor<4xf32>) {
  %w = etllm.parameter.get @w : tensor<8x8xf32>
  %a = etllm.linear %x, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %e = etllm.exp %z : tensor<4xf32>
  %b = etllm.linear %a, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %b, %e : tensor<1x?x8xf32>, tensor<4xf32>
}

// -----

// A dependency through a portable op keeps two subgraphs apart (merging them
// would need the portable op inside): two calls, in order.
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "cpu" @cpu_0
// CHECK: etllm.softmax
// CHECK: etllm.delegate.call "cpu" @cpu_1
etllm.parameter @w : tensor<8x8xf32>
func.func @forward(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %w = etllm.parameter.get @w : tensor<8x8xf32>
  %a = etllm.linear %x, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %p = etllm.softmax %a dim -1 : tensor<1x?x8xf32>
  %b = etllm.linear %p, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %b : tensor<1x?x8xf32>
}

// -----

// Not legal for cpu: f16 activations, and a linear whose weight is not
// a parameter. Nothing is outlined.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: etllm.delegate.call
// CHECK-NOT: etllm.backend
func.func @forward(%x: tensor<1x?x8xf16>, %w: tensor<8x8xf16>, %y: tensor<1x?x8xf32>, %v: tensor<8x8xf32>) -> (tensor<1x?x8xf16>, tensor<1x?x8xf32>) {
  %a = etllm.linear %x, %w : (tensor<1x?x8xf16>, tensor<8x8xf16>) -> tensor<1x?x8xf16>
  %b = etllm.linear %y, %v : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %a, %b : tensor<1x?x8xf16>, tensor<1x?x8xf32>
}

// -----

// A subgraph with no real work (only element-wise ops) is not worth a call.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: etllm.delegate.call
// CHECK: etllm.silu
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = etllm.silu %x : tensor<4xf32>
  return %s : tensor<4xf32>
}


// -----

// A decoder layer's attention is one subgraph: the cache reads stay
// outside (their values are the buffers, inputs of the call) without
// splitting it, and the in-place cache updates are results of the call even
// though only the subgraph reads them (the serializer gives them the
// buffers' storage, so the call writes the caches).
// CHECK-LABEL: func.func private @cpu_0
// CHECK-SAME: (%{{.+}}: tensor<1x?x16xf32>, %{{.+}}: tensor<?xi64>, %[[KC:.+]]: tensor<1x2x32x8xf32>, %[[VC:.+]]: tensor<1x2x32x8xf32>) -> (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x?x16xf32>)
// CHECK: etllm.linear
// CHECK: etllm.rope
// CHECK: %[[K:.+]] = etllm.kv_cache.update %[[KC]]
// CHECK: %[[V:.+]] = etllm.kv_cache.update %[[VC]]
// CHECK: etllm.sdpa {{.*}}, %[[K]], %[[V]]
// CHECK: return %[[K]], %[[V]], %{{.+}}
// CHECK-LABEL: func.func @forward
// CHECK: etllm.buffer.read @kc
// CHECK: etllm.buffer.read @vc
// CHECK: etllm.delegate.call "cpu" @cpu_0
// CHECK-NOT: etllm.delegate.call
// CHECK: return
etllm.parameter @wq : tensor<16x16xf32>
etllm.parameter @wk : tensor<16x16xf32>
etllm.buffer @kc : tensor<1x2x32x8xf32>
etllm.buffer @vc : tensor<1x2x32x8xf32>
func.func @forward(%x: tensor<1x?x16xf32>, %pos: tensor<?xi64>) -> tensor<1x?x16xf32> {
  %f = etllm.constant dense<[1.0, 0.1, 0.01, 0.001]> : tensor<4xf32>
  %wq = etllm.parameter.get @wq : tensor<16x16xf32>
  %wk = etllm.parameter.get @wk : tensor<16x16xf32>
  %q0 = etllm.linear %x, %wq : (tensor<1x?x16xf32>, tensor<16x16xf32>) -> tensor<1x?x16xf32>
  %q1 = etllm.reshape %q0 [1, -1, 2, 8] : tensor<1x?x16xf32> -> tensor<1x?x2x8xf32>
  %q2 = etllm.transpose %q1 1, 2 : tensor<1x?x2x8xf32> -> tensor<1x2x?x8xf32>
  %q = etllm.rope %q2, %pos, %f convention <rotate_half> : (tensor<1x2x?x8xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x2x?x8xf32>
  %k0 = etllm.linear %x, %wk : (tensor<1x?x16xf32>, tensor<16x16xf32>) -> tensor<1x?x16xf32>
  %k1 = etllm.reshape %k0 [1, -1, 2, 8] : tensor<1x?x16xf32> -> tensor<1x?x2x8xf32>
  %k2 = etllm.transpose %k1 1, 2 : tensor<1x?x2x8xf32> -> tensor<1x2x?x8xf32>
  %kc = etllm.buffer.read @kc : tensor<1x2x32x8xf32>
  %ku = etllm.kv_cache.update %kc[%pos], %k2 : (tensor<1x2x32x8xf32>, tensor<?xi64>, tensor<1x2x?x8xf32>) -> tensor<1x2x32x8xf32>
  %vc = etllm.buffer.read @vc : tensor<1x2x32x8xf32>
  %vu = etllm.kv_cache.update %vc[%pos], %k2 : (tensor<1x2x32x8xf32>, tensor<?xi64>, tensor<1x2x?x8xf32>) -> tensor<1x2x32x8xf32>
  %a = etllm.sdpa %q, %ku, %vu positions %pos causal scale 0.35 : (tensor<1x2x?x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<?xi64>) -> tensor<1x2x?x8xf32>
  %a1 = etllm.transpose %a 1, 2 : tensor<1x2x?x8xf32> -> tensor<1x?x2x8xf32>
  %o = etllm.reshape %a1 [1, -1, 16] : tensor<1x?x2x8xf32> -> tensor<1x?x16xf32>
  return %o : tensor<1x?x16xf32>
}

// -----

// Element-wise math with an f32 scalar operand (Granite's multipliers,
// Gemma's soft-cap) and div are legal: the linear, the scaled residual and
// the soft-cap stay one subgraph, with the scalar as an operand.
// CHECK-LABEL: func.func private @cpu_0
// CHECK: etllm.linear
// CHECK: etllm.mul {{.*}} : (tensor<1x?x8xf32>, tensor<f32>)
// CHECK: etllm.div {{.*}} : (tensor<1x?x8xf32>, tensor<f32>)
// CHECK: etllm.tanh
// CHECK: etllm.add
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "cpu" @cpu_0
// CHECK-NOT: etllm.{{(mul|div|tanh|add)}}
// CHECK: return
etllm.parameter @w : tensor<8x8xf32>
func.func @forward(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %s = etllm.constant dense<0.25> : tensor<f32>
  %w = etllm.parameter.get @w : tensor<8x8xf32>
  %a = etllm.linear %x, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %m = etllm.mul %a, %s : (tensor<1x?x8xf32>, tensor<f32>) -> tensor<1x?x8xf32>
  %d = etllm.div %m, %s : (tensor<1x?x8xf32>, tensor<f32>) -> tensor<1x?x8xf32>
  %t = etllm.tanh %d : tensor<1x?x8xf32>
  %r = etllm.add %t, %x : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  return %r : tensor<1x?x8xf32>
}

// -----

// Near miss: a scalar of another element type (f16) is not legal, and a
// scalar result is not either: those ops stay portable.
// CHECK-LABEL: func.func private @cpu_0
// CHECK-NOT: tensor<f16>
// CHECK-NOT: -> tensor<f32>
// CHECK: return
// CHECK-LABEL: func.func @forward
// CHECK-DAG: etllm.mul {{.*}} : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
// CHECK-DAG: etllm.div {{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-DAG: etllm.delegate.call "cpu" @cpu_0
etllm.parameter @w : tensor<8x8xf32>
func.func @forward(%x: tensor<1x?x8xf32>, %y: tensor<4xf16>, %h: tensor<f16>, %p: tensor<f32>, %q: tensor<f32>) -> (tensor<1x?x8xf32>, tensor<4xf16>, tensor<f32>) {
  %w = etllm.parameter.get @w : tensor<8x8xf32>
  %a = etllm.linear %x, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %m = etllm.mul %y, %h : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
  %d = etllm.div %p, %q : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %a, %m, %d : tensor<1x?x8xf32>, tensor<4xf16>, tensor<f32>
}

// -----

// Multi-head latent attention in its absorbed form (the MLA swap's): the
// splits, the matmuls by per-head views of kv_b_proj's weight (reshape,
// slice, transpose of a parameter: free ops, cloned into the subgraph, the
// backend materializes them), the cats, the latent cache update and the
// sdpa over it all join the projections in one subgraph. A matmul by an
// activation (not a parameter's view) stays portable.
// CHECK-LABEL: func.func private @cpu_0
// CHECK: %[[W:.+]] = etllm.parameter.get @kvb
// CHECK: %[[WR:.+]] = etllm.reshape %[[W]] [2, 12, 16]
// CHECK: %[[WK:.+]] = etllm.slice %[[WR]] dim 1 [0 : 8]
// CHECK: %[[WV:.+]] = etllm.slice %[[WR]] dim 1 [8 : 12]
// CHECK: %[[WVT:.+]] = etllm.transpose %[[WV]] 1, 2
// CHECK: etllm.split
// CHECK: etllm.matmul %{{.+}}, %[[WK]]
// CHECK: etllm.cat
// CHECK: etllm.kv_cache.update
// CHECK: etllm.sdpa
// CHECK: etllm.matmul %{{.+}}, %[[WVT]]
// CHECK: etllm.linear
// CHECK-LABEL: func.func @forward
// CHECK-NOT: etllm.reshape
// CHECK: etllm.delegate.call "cpu" @cpu_0
// CHECK-NEXT: etllm.matmul %{{.+}}, %arg2
// CHECK-NEXT: return
etllm.parameter @wq : tensor<32x16xf32>
etllm.parameter @kvb : tensor<24x16xf32>
etllm.parameter @wo : tensor<16x8xf32>
etllm.buffer @lc : tensor<1x1x32x20xf32>
func.func @forward(%x: tensor<1x?x16xf32>, %pos: tensor<?xi64>, %act: tensor<1x2x4x4xf32>) -> (tensor<1x?x16xf32>, tensor<1x2x?x4xf32>) {
  %wq = etllm.parameter.get @wq : tensor<32x16xf32>
  %kvb = etllm.parameter.get @kvb : tensor<24x16xf32>
  %wo = etllm.parameter.get @wo : tensor<16x8xf32>
  %q0 = etllm.linear %x, %wq : (tensor<1x?x16xf32>, tensor<32x16xf32>) -> tensor<1x?x32xf32>
  %q1 = etllm.reshape %q0 [1, -1, 2, 16] : tensor<1x?x32xf32> -> tensor<1x?x2x16xf32>
  %q2 = etllm.transpose %q1 1, 2 : tensor<1x?x2x16xf32> -> tensor<1x2x?x16xf32>
  %qs:2 = etllm.split %q2 dim 3 [8, 8] : tensor<1x2x?x16xf32> -> tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
  %wr = etllm.reshape %kvb [2, 12, 16] : tensor<24x16xf32> -> tensor<2x12x16xf32>
  %wk = etllm.slice %wr dim 1 [0 : 8] : tensor<2x12x16xf32> -> tensor<2x8x16xf32>
  %wv = etllm.slice %wr dim 1 [8 : 12] : tensor<2x12x16xf32> -> tensor<2x4x16xf32>
  %ql = etllm.matmul %qs#0, %wk : (tensor<1x2x?x8xf32>, tensor<2x8x16xf32>) -> tensor<1x2x?x16xf32>
  %qa = etllm.cat %ql, %qs#1 dim -1 : (tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x24xf32>
  %qb = etllm.slice %qa dim -1 [0 : 20] : tensor<1x2x?x24xf32> -> tensor<1x2x?x20xf32>
  %e = etllm.slice %qb dim 1 [0 : 1] : tensor<1x2x?x20xf32> -> tensor<1x1x?x20xf32>
  %lc = etllm.buffer.read @lc : tensor<1x1x32x20xf32>
  %lu = etllm.kv_cache.update %lc[%pos], %e : (tensor<1x1x32x20xf32>, tensor<?xi64>, tensor<1x1x?x20xf32>) -> tensor<1x1x32x20xf32>
  %o = etllm.sdpa %qb, %lu, %lu positions %pos causal scale 0.25 : (tensor<1x2x?x20xf32>, tensor<1x1x32x20xf32>, tensor<1x1x32x20xf32>, tensor<?xi64>) -> tensor<1x2x?x20xf32>
  %ol = etllm.slice %o dim -1 [0 : 16] : tensor<1x2x?x20xf32> -> tensor<1x2x?x16xf32>
  %wvt = etllm.transpose %wv 1, 2 : tensor<2x4x16xf32> -> tensor<2x16x4xf32>
  %ov = etllm.matmul %ol, %wvt : (tensor<1x2x?x16xf32>, tensor<2x16x4xf32>) -> tensor<1x2x?x4xf32>
  %ot = etllm.transpose %ov 1, 2 : tensor<1x2x?x4xf32> -> tensor<1x?x2x4xf32>
  %or = etllm.reshape %ot [1, -1, 8] : tensor<1x?x2x4xf32> -> tensor<1x?x8xf32>
  %y = etllm.linear %or, %wo : (tensor<1x?x8xf32>, tensor<16x8xf32>) -> tensor<1x?x16xf32>
  %n = etllm.matmul %ov, %act : (tensor<1x2x?x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x?x4xf32>
  return %y, %n : tensor<1x?x16xf32>, tensor<1x2x?x4xf32>
}

// -----

// A linear whose weight is a parameter read through reshapes only (a patch
// embedding's convolution weight [D, C, P, P] as [D, C*P*P]) is cpu's: the
// view becomes one packed constant at export.
// CHECK-LABEL: func.func private @cpu_0
// CHECK: etllm.parameter.get @patch
// CHECK: etllm.reshape
// CHECK: etllm.linear
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "cpu" @cpu_0
// CHECK-NOT: etllm.linear
etllm.parameter @patch : tensor<8x3x2x2xf32>
func.func @forward(%x: tensor<1x4x12xf32>) -> tensor<1x4x8xf32> {
  %w = etllm.parameter.get @patch : tensor<8x3x2x2xf32>
  %v = etllm.reshape %w [8, 12] : tensor<8x3x2x2xf32> -> tensor<8x12xf32>
  %y = etllm.linear %x, %v : (tensor<1x4x12xf32>, tensor<8x12xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// Near miss: a weight read through a transpose is not a reshaped parameter:
// the linear stays on portable kernels.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: etllm.delegate.call
// CHECK: etllm.linear
etllm.parameter @wt : tensor<12x8xf32>
func.func @forward(%x: tensor<1x4x12xf32>) -> tensor<1x4x8xf32> {
  %w = etllm.parameter.get @wt : tensor<12x8xf32>
  %v = etllm.transpose %w 0, 1 : tensor<12x8xf32> -> tensor<8x12xf32>
  %y = etllm.linear %x, %v : (tensor<1x4x12xf32>, tensor<8x12xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}
