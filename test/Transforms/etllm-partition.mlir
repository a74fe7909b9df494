// RUN: etllm-opt %s --split-input-file --etllm-partition="backends=xnnpack" --verify-diagnostics | FileCheck %s

// The ops xnnpack takes (linear with parameter weights, element-wise math)
// become one outlined function; the attention stays on portable kernels.
// CHECK-LABEL: func.func private @xnnpack_0
// CHECK-SAME: attributes {etllm.backend = "xnnpack"}
// CHECK: etllm.parameter.get @w
// CHECK: etllm.linear
// CHECK: etllm.silu
// CHECK: return
// CHECK-LABEL: func.func @forward
// CHECK: %[[C:.+]] = etllm.delegate.call "xnnpack" @xnnpack_0(%{{.+}}) : (tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
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
// CHECK-LABEL: func.func private @xnnpack_0
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
// CHECK: etllm.delegate.call "xnnpack" @xnnpack_0
// CHECK: etllm.softmax
// CHECK: etllm.delegate.call "xnnpack" @xnnpack_1
etllm.parameter @w : tensor<8x8xf32>
func.func @forward(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %w = etllm.parameter.get @w : tensor<8x8xf32>
  %a = etllm.linear %x, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %p = etllm.softmax %a dim -1 : tensor<1x?x8xf32>
  %b = etllm.linear %p, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %b : tensor<1x?x8xf32>
}

// -----

// Not legal for xnnpack: f16 activations, and a linear whose weight is not
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
// CHECK-LABEL: func.func private @xnnpack_0
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
// CHECK: etllm.delegate.call "xnnpack" @xnnpack_0
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
// CHECK-LABEL: func.func private @xnnpack_0
// CHECK: etllm.linear
// CHECK: etllm.mul {{.*}} : (tensor<1x?x8xf32>, tensor<f32>)
// CHECK: etllm.div {{.*}} : (tensor<1x?x8xf32>, tensor<f32>)
// CHECK: etllm.tanh
// CHECK: etllm.add
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "xnnpack" @xnnpack_0
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
// CHECK-LABEL: func.func private @xnnpack_0
// CHECK-NOT: tensor<f16>
// CHECK-NOT: -> tensor<f32>
// CHECK: return
// CHECK-LABEL: func.func @forward
// CHECK-DAG: etllm.mul {{.*}} : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
// CHECK-DAG: etllm.div {{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-DAG: etllm.delegate.call "xnnpack" @xnnpack_0
etllm.parameter @w : tensor<8x8xf32>
func.func @forward(%x: tensor<1x?x8xf32>, %y: tensor<4xf16>, %h: tensor<f16>, %p: tensor<f32>, %q: tensor<f32>) -> (tensor<1x?x8xf32>, tensor<4xf16>, tensor<f32>) {
  %w = etllm.parameter.get @w : tensor<8x8xf32>
  %a = etllm.linear %x, %w : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %m = etllm.mul %y, %h : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
  %d = etllm.div %p, %q : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %a, %m, %d : tensor<1x?x8xf32>, tensor<4xf16>, tensor<f32>
}
