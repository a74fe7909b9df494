// RUN: etllm-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(etllm-fuse-sdpa))' | FileCheck %s

// Multi-head attention with an additive mask and a multiplied scale.
// CHECK-LABEL: func.func @mha
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x?x8xf32>, %[[K:.+]]: tensor<1x4x16x8xf32>, %[[V:.+]]: tensor<1x4x16x8xf32>, %[[M:.+]]: tensor<1x1x?x16xf32>)
// CHECK: %[[O:.+]] = etllm.sdpa %[[Q]], %[[K]], %[[V]] mask %[[M]] scale 0.35355338454246521 {etllm.module = "attn"}
// CHECK-NOT: etllm.softmax
// CHECK-NOT: etllm.matmul
// CHECK: return %[[O]]
func.func @mha(%q: tensor<1x4x?x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>, %mask: tensor<1x1x?x16xf32>) -> tensor<1x4x?x8xf32> {
  %kt = etllm.transpose %k 2, 3 : tensor<1x4x16x8xf32> -> tensor<1x4x8x16xf32>
  %s = etllm.matmul %q, %kt : (tensor<1x4x?x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x?x16xf32>
  %c = etllm.constant dense<0.353553385> : tensor<f32>
  %ss = etllm.mul %s, %c : (tensor<1x4x?x16xf32>, tensor<f32>) -> tensor<1x4x?x16xf32>
  %sm = etllm.add %ss, %mask : (tensor<1x4x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x16xf32>
  %p = etllm.softmax %sm dim -1 : tensor<1x4x?x16xf32>
  %o = etllm.matmul %p, %v {etllm.module = "attn"} : (tensor<1x4x?x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Grouped-query attention: repeat_kv (unsqueeze, expand, reshape) folds into
// the op, which reads the 2 kv heads directly. Scale given as a division.
// CHECK-LABEL: func.func @gqa_repeat_kv
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x?x8xf32>, %[[K:.+]]: tensor<1x2x16x8xf32>, %[[V:.+]]: tensor<1x2x16x8xf32>)
// CHECK: etllm.sdpa %[[Q]], %[[K]], %[[V]] scale 0.3535533{{[0-9]+}} : (tensor<1x4x?x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x?x8xf32>
// CHECK-NOT: etllm.expand
func.func @gqa_repeat_kv(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) -> tensor<1x4x?x8xf32> {
  %ku = etllm.unsqueeze %k dim 2 : tensor<1x2x16x8xf32> -> tensor<1x2x1x16x8xf32>
  %ke = etllm.expand %ku [1, 2, 2, 16, 8] : tensor<1x2x1x16x8xf32> -> tensor<1x2x2x16x8xf32>
  %kr = etllm.reshape %ke [1, 4, 16, 8] : tensor<1x2x2x16x8xf32> -> tensor<1x4x16x8xf32>
  %vu = etllm.unsqueeze %v dim 2 : tensor<1x2x16x8xf32> -> tensor<1x2x1x16x8xf32>
  %ve = etllm.expand %vu [1, 2, 2, 16, 8] : tensor<1x2x1x16x8xf32> -> tensor<1x2x2x16x8xf32>
  %vr = etllm.reshape %ve [1, 4, 16, 8] : tensor<1x2x2x16x8xf32> -> tensor<1x4x16x8xf32>
  %kt = etllm.transpose %kr 2, 3 : tensor<1x4x16x8xf32> -> tensor<1x4x8x16xf32>
  %s = etllm.matmul %q, %kt : (tensor<1x4x?x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x?x16xf32>
  %c = etllm.constant dense<2.82842712474619> : tensor<f32>
  %ss = etllm.div %s, %c : (tensor<1x4x?x16xf32>, tensor<f32>) -> tensor<1x4x?x16xf32>
  %p = etllm.softmax %ss dim 3 : tensor<1x4x?x16xf32>
  %o = etllm.matmul %p, %vr : (tensor<1x4x?x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Gemma 2 style: soft-capping between the scale and the mask, and softmax
// with an fp32 round trip.
// CHECK-LABEL: func.func @softcap_fp32_softmax
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} softcap 5.000000e+01 scale 6.250000e-02 : (tensor<1x2x?x8xf16>, tensor<1x2x16x8xf16>, tensor<1x2x16x8xf16>, tensor<1x1x?x16xf16>) -> tensor<1x2x?x8xf16>
// CHECK-NOT: etllm.tanh
// CHECK-NOT: etllm.convert
func.func @softcap_fp32_softmax(%q: tensor<1x2x?x8xf16>, %k: tensor<1x2x16x8xf16>, %v: tensor<1x2x16x8xf16>, %mask: tensor<1x1x?x16xf16>) -> tensor<1x2x?x8xf16> {
  %kt = etllm.transpose %k 2, 3 : tensor<1x2x16x8xf16> -> tensor<1x2x8x16xf16>
  %s = etllm.matmul %q, %kt : (tensor<1x2x?x8xf16>, tensor<1x2x8x16xf16>) -> tensor<1x2x?x16xf16>
  %c = etllm.constant dense<0.0625> : tensor<f16>
  %ss = etllm.mul %s, %c : (tensor<1x2x?x16xf16>, tensor<f16>) -> tensor<1x2x?x16xf16>
  %cap = etllm.constant dense<50.0> : tensor<f16>
  %d = etllm.div %ss, %cap : (tensor<1x2x?x16xf16>, tensor<f16>) -> tensor<1x2x?x16xf16>
  %t = etllm.tanh %d : tensor<1x2x?x16xf16>
  %sc = etllm.mul %t, %cap : (tensor<1x2x?x16xf16>, tensor<f16>) -> tensor<1x2x?x16xf16>
  %sm = etllm.add %sc, %mask : (tensor<1x2x?x16xf16>, tensor<1x1x?x16xf16>) -> tensor<1x2x?x16xf16>
  %f = etllm.convert %sm : tensor<1x2x?x16xf16> -> tensor<1x2x?x16xf32>
  %p = etllm.softmax %f dim -1 : tensor<1x2x?x16xf32>
  %h = etllm.convert %p : tensor<1x2x?x16xf32> -> tensor<1x2x?x16xf16>
  %o = etllm.matmul %h, %v : (tensor<1x2x?x16xf16>, tensor<1x2x16x8xf16>) -> tensor<1x2x?x8xf16>
  return %o : tensor<1x2x?x8xf16>
}

// -----

// The causal mask the exported graph builds from the input positions turns
// into `causal` + `positions`.
// CHECK-LABEL: func.func @causal_mask
// CHECK-SAME: %[[POS:[^:]+]]: tensor<?xi64>
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} positions %[[POS]] causal scale 5.000000e-01 :
// CHECK-NOT: mask
func.func @causal_mask(%q: tensor<1x4x?x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>, %pos: tensor<?xi64>) -> tensor<1x4x?x8xf32> {
  %kpos = etllm.arange 0 to 16 : tensor<16xi64>
  %qpos = etllm.reshape %pos [-1, 1] : tensor<?xi64> -> tensor<?x1xi64>
  %masked = etllm.gt %kpos, %qpos : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %min = etllm.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = etllm.constant dense<0.0> : tensor<f32>
  %m = etllm.where %masked, %min, %zero : (tensor<?x16xi1>, tensor<f32>, tensor<f32>) -> tensor<?x16xf32>
  %mask = etllm.reshape %m [1, 1, -1, 16] : tensor<?x16xf32> -> tensor<1x1x?x16xf32>
  %kt = etllm.transpose %k 2, 3 : tensor<1x4x16x8xf32> -> tensor<1x4x8x16xf32>
  %s = etllm.matmul %q, %kt : (tensor<1x4x?x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x?x16xf32>
  %c = etllm.constant dense<0.5> : tensor<f32>
  %ss = etllm.mul %s, %c : (tensor<1x4x?x16xf32>, tensor<f32>) -> tensor<1x4x?x16xf32>
  %sm = etllm.add %ss, %mask : (tensor<1x4x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x16xf32>
  %p = etllm.softmax %sm dim -1 : tensor<1x4x?x16xf32>
  %o = etllm.matmul %p, %v : (tensor<1x4x?x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Sliding-window mask: also masked when key <= position - window.
// CHECK-LABEL: func.func @sliding_window_mask
// CHECK: etllm.sdpa {{.+}} positions %{{.+}} causal window 4 scale 5.000000e-01
func.func @sliding_window_mask(%q: tensor<1x4x?x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>, %pos: tensor<?xi64>) -> tensor<1x4x?x8xf32> {
  %kpos = etllm.arange 0 to 16 : tensor<16xi64>
  %qpos = etllm.reshape %pos [-1, 1] : tensor<?xi64> -> tensor<?x1xi64>
  %future = etllm.gt %kpos, %qpos : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %w = etllm.constant dense<4> : tensor<i64>
  %lower = etllm.sub %qpos, %w : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi64>
  %old = etllm.le %kpos, %lower : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %masked = etllm.logical_or %future, %old : (tensor<?x16xi1>, tensor<?x16xi1>) -> tensor<?x16xi1>
  %min = etllm.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = etllm.constant dense<0.0> : tensor<f32>
  %m = etllm.where %masked, %min, %zero : (tensor<?x16xi1>, tensor<f32>, tensor<f32>) -> tensor<?x16xf32>
  %mask = etllm.reshape %m [1, 1, -1, 16] : tensor<?x16xf32> -> tensor<1x1x?x16xf32>
  %kt = etllm.transpose %k 2, 3 : tensor<1x4x16x8xf32> -> tensor<1x4x8x16xf32>
  %s = etllm.matmul %q, %kt : (tensor<1x4x?x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x?x16xf32>
  %c = etllm.constant dense<0.5> : tensor<f32>
  %ss = etllm.mul %s, %c : (tensor<1x4x?x16xf32>, tensor<f32>) -> tensor<1x4x?x16xf32>
  %sm = etllm.add %ss, %mask : (tensor<1x4x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x16xf32>
  %p = etllm.softmax %sm dim -1 : tensor<1x4x?x16xf32>
  %o = etllm.matmul %p, %v : (tensor<1x4x?x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Near miss: softmax over the query dimension is not attention.
// CHECK-LABEL: func.func @softmax_wrong_dim
// CHECK-NOT: etllm.sdpa
// CHECK: etllm.softmax
func.func @softmax_wrong_dim(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> {
  %kt = etllm.transpose %k 2, 3 : tensor<1x4x16x8xf32> -> tensor<1x4x8x16xf32>
  %s = etllm.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32>
  %p = etllm.softmax %s dim 2 : tensor<1x4x16x16xf32>
  %o = etllm.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// Near miss: the scale is a run-time value, not a constant.
// CHECK-LABEL: func.func @dynamic_scale
// CHECK-NOT: etllm.sdpa
func.func @dynamic_scale(%q: tensor<1x4x?x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>, %c: tensor<f32>) -> tensor<1x4x?x8xf32> {
  %kt = etllm.transpose %k 2, 3 : tensor<1x4x16x8xf32> -> tensor<1x4x8x16xf32>
  %s = etllm.matmul %q, %kt : (tensor<1x4x?x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x?x16xf32>
  %ss = etllm.mul %s, %c : (tensor<1x4x?x16xf32>, tensor<f32>) -> tensor<1x4x?x16xf32>
  %p = etllm.softmax %ss dim -1 : tensor<1x4x?x16xf32>
  %o = etllm.matmul %p, %v : (tensor<1x4x?x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Near miss: the attention weights are also returned (a second use), so
// fusing would compute them twice.
// CHECK-LABEL: func.func @probs_observed
// CHECK-NOT: etllm.sdpa
func.func @probs_observed(%q: tensor<1x4x?x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>) -> (tensor<1x4x?x8xf32>, tensor<1x4x?x16xf32>) {
  %kt = etllm.transpose %k 2, 3 : tensor<1x4x16x8xf32> -> tensor<1x4x8x16xf32>
  %s = etllm.matmul %q, %kt : (tensor<1x4x?x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x?x16xf32>
  %p = etllm.softmax %s dim -1 : tensor<1x4x?x16xf32>
  %o = etllm.matmul %p, %v : (tensor<1x4x?x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o, %p : tensor<1x4x?x8xf32>, tensor<1x4x?x16xf32>
}

// -----

// Near miss: k is not transposed (q @ k is not attention scores).
// CHECK-LABEL: func.func @no_transpose
// CHECK-NOT: etllm.sdpa
func.func @no_transpose(%q: tensor<1x4x?x8xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32> {
  %s = etllm.matmul %q, %k : (tensor<1x4x?x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x?x16xf32>
  %p = etllm.softmax %s dim -1 : tensor<1x4x?x16xf32>
  %o = etllm.matmul %p, %v : (tensor<1x4x?x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Near miss for the mask pattern: the mask covers 8 keys of the 16, so it is
// kept as an explicit (broadcasting) mask, never turned into causal.
// CHECK-LABEL: func.func @mask_not_causal
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} scale
// CHECK-NOT: causal
func.func @mask_not_causal(%q: tensor<1x4x?x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>, %pos: tensor<?xi64>) -> tensor<1x4x?x8xf32> {
  %kpos = etllm.arange 0 to 16 : tensor<16xi64>
  %qpos = etllm.reshape %pos [-1, 1] : tensor<?xi64> -> tensor<?x1xi64>
  %masked = etllm.lt %kpos, %qpos : (tensor<16xi64>, tensor<?x1xi64>) -> tensor<?x16xi1>
  %min = etllm.constant dense<-3.40282347E+38> : tensor<f32>
  %zero = etllm.constant dense<0.0> : tensor<f32>
  %m = etllm.where %masked, %min, %zero : (tensor<?x16xi1>, tensor<f32>, tensor<f32>) -> tensor<?x16xf32>
  %mask = etllm.reshape %m [1, 1, -1, 16] : tensor<?x16xf32> -> tensor<1x1x?x16xf32>
  %kt = etllm.transpose %k 2, 3 : tensor<1x4x16x8xf32> -> tensor<1x4x8x16xf32>
  %s = etllm.matmul %q, %kt : (tensor<1x4x?x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x?x16xf32>
  %sm = etllm.add %s, %mask : (tensor<1x4x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x16xf32>
  %p = etllm.softmax %sm dim -1 : tensor<1x4x?x16xf32>
  %o = etllm.matmul %p, %v : (tensor<1x4x?x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// The boolean "attend" mask transformers builds (key index <= query
// position), made additive by the ATen importer as where(mask, 0, lowest),
// becomes `causal` over the query positions.
// CHECK-LABEL: func.func @attend_mask_causal
// CHECK-SAME: %[[POS:[^:]+]]: tensor<?xi64>
// CHECK: %[[O:.+]] = etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} positions %[[POS]] causal scale 5.000000e-01 :
// CHECK-NOT: etllm.where
// CHECK: return %[[O]]
func.func @attend_mask_causal(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %pos: tensor<?xi64>) -> tensor<1x4x?x8xf32> {
  %kpos = etllm.arange 0 to 16 : tensor<16xi64>
  %zi = etllm.constant dense<0> : tensor<i64>
  %kpos0 = etllm.add %kpos, %zi : (tensor<16xi64>, tensor<i64>) -> tensor<16xi64>
  %k4 = etllm.reshape %kpos0 [1, 1, 1, 16] : tensor<16xi64> -> tensor<1x1x1x16xi64>
  %q4 = etllm.reshape %pos [1, 1, -1, 1] : tensor<?xi64> -> tensor<1x1x?x1xi64>
  %attend = etllm.le %k4, %q4 : (tensor<1x1x1x16xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x16xi1>
  %zero = etllm.constant dense<0.0> : tensor<f32>
  %low = etllm.constant dense<-3.40282347E+38> : tensor<f32>
  %mask = etllm.where %attend, %zero, %low : (tensor<1x1x?x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x16xf32>
  %o = etllm.sdpa %q, %k, %v mask %mask scale 0.5 : (tensor<1x4x?x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// transformers' sliding-window mask: (true & key > query - 4) & key <= query
// becomes `causal window 4`.
// CHECK-LABEL: func.func @attend_mask_window
// CHECK-SAME: %[[POS:[^:]+]]: tensor<?xi64>
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} positions %[[POS]] causal window 4 scale 5.000000e-01 :
func.func @attend_mask_window(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %pos: tensor<?xi64>) -> tensor<1x4x?x8xf32> {
  %kpos = etllm.arange 0 to 16 : tensor<16xi64>
  %k4 = etllm.reshape %kpos [1, 1, 1, 16] : tensor<16xi64> -> tensor<1x1x1x16xi64>
  %q4 = etllm.reshape %pos [1, 1, -1, 1] : tensor<?xi64> -> tensor<1x1x?x1xi64>
  %true = etllm.full 1.0 : tensor<i1>
  %w = etllm.constant dense<4> : tensor<i64>
  %lower = etllm.sub %q4, %w : (tensor<1x1x?x1xi64>, tensor<i64>) -> tensor<1x1x?x1xi64>
  %recent = etllm.gt %k4, %lower : (tensor<1x1x1x16xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x16xi1>
  %a = etllm.logical_and %true, %recent : (tensor<i1>, tensor<1x1x?x16xi1>) -> tensor<1x1x?x16xi1>
  %seen = etllm.le %k4, %q4 : (tensor<1x1x1x16xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x16xi1>
  %attend = etllm.logical_and %a, %seen : (tensor<1x1x?x16xi1>, tensor<1x1x?x16xi1>) -> tensor<1x1x?x16xi1>
  %zero = etllm.constant dense<0.0> : tensor<f32>
  %low = etllm.constant dense<-3.40282347E+38> : tensor<f32>
  %mask = etllm.where %attend, %zero, %low : (tensor<1x1x?x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x16xf32>
  %o = etllm.sdpa %q, %k, %v mask %mask scale 0.5 : (tensor<1x4x?x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Near miss: the comparison reads query <= key (the positions along the
// keys' dimension), not a causal mask: the mask stays.
// CHECK-LABEL: func.func @attend_mask_reversed
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} scale
// CHECK-NOT: causal
func.func @attend_mask_reversed(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %pos: tensor<?xi64>) -> tensor<1x4x?x8xf32> {
  %kpos = etllm.arange 0 to 16 : tensor<16xi64>
  %k4 = etllm.reshape %kpos [1, 1, 1, 16] : tensor<16xi64> -> tensor<1x1x1x16xi64>
  %q4 = etllm.reshape %pos [1, 1, -1, 1] : tensor<?xi64> -> tensor<1x1x?x1xi64>
  %attend = etllm.le %q4, %k4 : (tensor<1x1x?x1xi64>, tensor<1x1x1x16xi64>) -> tensor<1x1x?x16xi1>
  %zero = etllm.constant dense<0.0> : tensor<f32>
  %low = etllm.constant dense<-3.40282347E+38> : tensor<f32>
  %mask = etllm.where %attend, %zero, %low : (tensor<1x1x?x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x16xf32>
  %o = etllm.sdpa %q, %k, %v mask %mask scale 0.5 : (tensor<1x4x?x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Near miss: the masked scores get -1, not the lowest value (a bias, not a
// mask): the mask stays.
// CHECK-LABEL: func.func @attend_mask_bias
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} scale
// CHECK-NOT: causal
func.func @attend_mask_bias(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %pos: tensor<?xi64>) -> tensor<1x4x?x8xf32> {
  %kpos = etllm.arange 0 to 16 : tensor<16xi64>
  %k4 = etllm.reshape %kpos [1, 1, 1, 16] : tensor<16xi64> -> tensor<1x1x1x16xi64>
  %q4 = etllm.reshape %pos [1, 1, -1, 1] : tensor<?xi64> -> tensor<1x1x?x1xi64>
  %attend = etllm.le %k4, %q4 : (tensor<1x1x1x16xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x16xi1>
  %zero = etllm.constant dense<0.0> : tensor<f32>
  %low = etllm.constant dense<-1.0> : tensor<f32>
  %mask = etllm.where %attend, %zero, %low : (tensor<1x1x?x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x16xf32>
  %o = etllm.sdpa %q, %k, %v mask %mask scale 0.5 : (tensor<1x4x?x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// An sdpa over repeated keys and values (an imported
// scaled_dot_product_attention after repeat_kv) reads the kv heads directly.
// CHECK-LABEL: func.func @sdpa_repeat_kv
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x?x8xf32>, %[[K:.+]]: tensor<1x2x16x8xf32>, %[[V:.+]]: tensor<1x2x16x8xf32>)
// CHECK: etllm.sdpa %[[Q]], %[[K]], %[[V]] causal scale 5.000000e-01 : (tensor<1x4x?x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x4x?x8xf32>
// CHECK-NOT: etllm.expand
func.func @sdpa_repeat_kv(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) -> tensor<1x4x?x8xf32> {
  %ku = etllm.unsqueeze %k dim 2 : tensor<1x2x16x8xf32> -> tensor<1x2x1x16x8xf32>
  %ke = etllm.expand %ku [1, 2, 2, 16, 8] : tensor<1x2x1x16x8xf32> -> tensor<1x2x2x16x8xf32>
  %kr = etllm.reshape %ke [1, 4, 16, 8] : tensor<1x2x2x16x8xf32> -> tensor<1x4x16x8xf32>
  %vu = etllm.unsqueeze %v dim 2 : tensor<1x2x16x8xf32> -> tensor<1x2x1x16x8xf32>
  %ve = etllm.expand %vu [1, 2, 2, 16, 8] : tensor<1x2x1x16x8xf32> -> tensor<1x2x2x16x8xf32>
  %vr = etllm.reshape %ve [1, 4, 16, 8] : tensor<1x2x2x16x8xf32> -> tensor<1x4x16x8xf32>
  %o = etllm.sdpa %q, %kr, %vr causal scale 0.5 : (tensor<1x4x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Near miss: only the keys are repeated (the values are four heads of their
// own): the sdpa stays as it is.
// CHECK-LABEL: func.func @sdpa_repeat_k_only
// CHECK: etllm.expand
// CHECK: etllm.sdpa %{{.+}}, %{{.+}}, %{{.+}} causal scale 5.000000e-01 : (tensor<1x4x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>)
func.func @sdpa_repeat_k_only(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32> {
  %ku = etllm.unsqueeze %k dim 2 : tensor<1x2x16x8xf32> -> tensor<1x2x1x16x8xf32>
  %ke = etllm.expand %ku [1, 2, 2, 16, 8] : tensor<1x2x1x16x8xf32> -> tensor<1x2x2x16x8xf32>
  %kr = etllm.reshape %ke [1, 4, 16, 8] : tensor<1x2x2x16x8xf32> -> tensor<1x4x16x8xf32>
  %o = etllm.sdpa %q, %kr, %v causal scale 0.5 : (tensor<1x4x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}
