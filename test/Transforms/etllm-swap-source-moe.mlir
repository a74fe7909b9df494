// RUN: etllm-opt %s --split-input-file --etllm-swap-source --verify-diagnostics | FileCheck %s
// RUN: etllm-opt %s --split-input-file --etllm-swap-source --verify-diagnostics | etllm-opt --split-input-file --canonicalize | FileCheck %s --check-prefix=CANON
// The sparse mixture-of-experts block's level-A form (lib/Import/Blocks/
// Moe.cpp: router linear, softmax, topk, renormalization, then the masked
// loop over every expert) becomes one etllm.moe over stacked expert
// weights; forms that differ in one detail are left alone with a remark.

// A Qwen3-MoE block with two experts, top-1, renormalized: one etllm.moe
// reading the router and three stacked parameters whose inline values are
// the experts' in order; the per-expert parameters and the loop are gone.
// CHECK-LABEL: module attributes
// CHECK-NOT: etllm.parameter @mlp.experts.0.
// CHECK-DAG: etllm.parameter @mlp.experts.gate_proj.weight : tensor<2x2x4xf32> = dense<{{\[\[\[}}1.250000e-01
// CHECK-DAG: etllm.parameter @mlp.experts.up_proj.weight : tensor<2x2x4xf32>
// CHECK-DAG: etllm.parameter @mlp.experts.down_proj.weight : tensor<2x4x2xf32>
// CHECK-LABEL: func.func @qwen3_moe
// CHECK-SAME: (%[[H:.+]]: tensor<?x4xf32>)
// CHECK: %[[R:.+]] = etllm.parameter.get @mlp.gate.weight
// CHECK: %[[G:.+]] = etllm.parameter.get @mlp.experts.gate_proj.weight {etllm.module = "mlp"} : tensor<2x2x4xf32>
// CHECK: %[[U:.+]] = etllm.parameter.get @mlp.experts.up_proj.weight
// CHECK: %[[D:.+]] = etllm.parameter.get @mlp.experts.down_proj.weight
// CHECK: %[[Y:.+]] = etllm.moe %[[H]], %[[R]], %[[G]], %[[U]], %[[D]] top_k 1 scoring <softmax> norm_topk_prob {etllm.module = "mlp"}
// CHECK-NOT: etllm.topk
// CHECK-NOT: etllm.where
// CHECK: return %[[Y]]
// CANON-LABEL: func.func @qwen3_moe
// CANON-NOT: etllm.linear
// CANON: etllm.moe
module attributes {etllm.module_classes = {mlp = "Qwen3MoeSparseMoeBlock"}} {
  etllm.parameter @mlp.gate.weight : tensor<2x4xf32> = dense<[[-0.15, -0.05, 0.05, 0.15], [-0.30, -0.10, 0.10, 0.30]]> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.250> : tensor<4x2xf32>
  func.func @qwen3_moe(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<2x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x2xf32>
    %v, %sel = etllm.topk %p k 1 {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %s = etllm.sum %v dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %wn = etllm.div %v, %s {etllm.module = "mlp"} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh0 = etllm.where %hit0, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w0 = etllm.sum %wh0 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw0 = etllm.parameter.get @mlp.experts.0.gate_proj.weight {etllm.module = "mlp.experts.0.gate_proj"} : tensor<2x4xf32>
    %g0 = etllm.linear %h, %gw0 {etllm.module = "mlp.experts.0.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw0 = etllm.parameter.get @mlp.experts.0.up_proj.weight {etllm.module = "mlp.experts.0.up_proj"} : tensor<2x4xf32>
    %u0 = etllm.linear %h, %uw0 {etllm.module = "mlp.experts.0.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a0 = etllm.silu %g0 {etllm.module = "mlp.experts.0.act_fn"} : tensor<?x2xf32>
    %au0 = etllm.mul %a0, %u0 {etllm.module = "mlp.experts.0"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw0 = etllm.parameter.get @mlp.experts.0.down_proj.weight {etllm.module = "mlp.experts.0.down_proj"} : tensor<4x2xf32>
    %y0 = etllm.linear %au0, %dw0 {etllm.module = "mlp.experts.0.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t0 = etllm.mul %y0, %w0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc1 = etllm.add %acc0, %t0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i1 = etllm.constant {etllm.module = "mlp"} dense<1> : tensor<i64>
    %hit1 = etllm.eq %sel, %i1 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh1 = etllm.where %hit1, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w1 = etllm.sum %wh1 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw1 = etllm.parameter.get @mlp.experts.1.gate_proj.weight {etllm.module = "mlp.experts.1.gate_proj"} : tensor<2x4xf32>
    %g1 = etllm.linear %h, %gw1 {etllm.module = "mlp.experts.1.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw1 = etllm.parameter.get @mlp.experts.1.up_proj.weight {etllm.module = "mlp.experts.1.up_proj"} : tensor<2x4xf32>
    %u1 = etllm.linear %h, %uw1 {etllm.module = "mlp.experts.1.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a1 = etllm.silu %g1 {etllm.module = "mlp.experts.1.act_fn"} : tensor<?x2xf32>
    %au1 = etllm.mul %a1, %u1 {etllm.module = "mlp.experts.1"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw1 = etllm.parameter.get @mlp.experts.1.down_proj.weight {etllm.module = "mlp.experts.1.down_proj"} : tensor<4x2xf32>
    %y1 = etllm.linear %au1, %dw1 {etllm.module = "mlp.experts.1.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t1 = etllm.mul %y1, %w1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc2 = etllm.add %acc1, %t1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc2 : tensor<?x4xf32>
  }
}

// -----

// Mixtral's form: top-2 of 2 experts (top_k = E), not renormalized here,
// and a routed scaling factor on the weights.
// CHECK-LABEL: func.func @scaled_top_all
// CHECK: etllm.moe %{{.+}} top_k 2 scoring <softmax> scale 2.500000e+00 {etllm.module = "mlp"}
// CHECK-NOT: norm_topk_prob
module attributes {etllm.module_classes = {mlp = "MixtralSparseMoeBlock"}} {
  etllm.parameter @mlp.gate.weight : tensor<2x4xf32> = dense<[[-0.15, -0.05, 0.05, 0.15], [-0.30, -0.10, 0.10, 0.30]]> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.250> : tensor<4x2xf32>
  func.func @scaled_top_all(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<2x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x2xf32>
    %v, %sel = etllm.topk %p k 2 {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %sc = etllm.constant {etllm.module = "mlp"} dense<2.5> : tensor<f32>
    %ws = etllm.mul %v, %sc {etllm.module = "mlp"} : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh0 = etllm.where %hit0, %ws, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w0 = etllm.sum %wh0 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw0 = etllm.parameter.get @mlp.experts.0.gate_proj.weight {etllm.module = "mlp.experts.0.gate_proj"} : tensor<2x4xf32>
    %g0 = etllm.linear %h, %gw0 {etllm.module = "mlp.experts.0.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw0 = etllm.parameter.get @mlp.experts.0.up_proj.weight {etllm.module = "mlp.experts.0.up_proj"} : tensor<2x4xf32>
    %u0 = etllm.linear %h, %uw0 {etllm.module = "mlp.experts.0.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a0 = etllm.silu %g0 {etllm.module = "mlp.experts.0.act_fn"} : tensor<?x2xf32>
    %au0 = etllm.mul %a0, %u0 {etllm.module = "mlp.experts.0"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw0 = etllm.parameter.get @mlp.experts.0.down_proj.weight {etllm.module = "mlp.experts.0.down_proj"} : tensor<4x2xf32>
    %y0 = etllm.linear %au0, %dw0 {etllm.module = "mlp.experts.0.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t0 = etllm.mul %y0, %w0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc1 = etllm.add %acc0, %t0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i1 = etllm.constant {etllm.module = "mlp"} dense<1> : tensor<i64>
    %hit1 = etllm.eq %sel, %i1 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh1 = etllm.where %hit1, %ws, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w1 = etllm.sum %wh1 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw1 = etllm.parameter.get @mlp.experts.1.gate_proj.weight {etllm.module = "mlp.experts.1.gate_proj"} : tensor<2x4xf32>
    %g1 = etllm.linear %h, %gw1 {etllm.module = "mlp.experts.1.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw1 = etllm.parameter.get @mlp.experts.1.up_proj.weight {etllm.module = "mlp.experts.1.up_proj"} : tensor<2x4xf32>
    %u1 = etllm.linear %h, %uw1 {etllm.module = "mlp.experts.1.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a1 = etllm.silu %g1 {etllm.module = "mlp.experts.1.act_fn"} : tensor<?x2xf32>
    %au1 = etllm.mul %a1, %u1 {etllm.module = "mlp.experts.1"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw1 = etllm.parameter.get @mlp.experts.1.down_proj.weight {etllm.module = "mlp.experts.1.down_proj"} : tensor<4x2xf32>
    %y1 = etllm.linear %au1, %dw1 {etllm.module = "mlp.experts.1.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t1 = etllm.mul %y1, %w1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc2 = etllm.add %acc1, %t1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc2 : tensor<?x4xf32>
  }
}

// -----

// Qwen2-MoE's form: a gated shared-expert term is added after the loop;
// the loop still becomes etllm.moe and the shared term stays beside it.
// CHECK-LABEL: func.func @qwen2_moe_shared
// CHECK: %[[Y:.+]] = etllm.moe %{{.+}} top_k 1 scoring <softmax> norm_topk_prob
// CHECK: %[[S:.+]] = etllm.mul
// CHECK: etllm.add %[[Y]], %[[S]]
module attributes {etllm.module_classes = {mlp = "Qwen2MoeSparseMoeBlock"}} {
  etllm.parameter @mlp.gate.weight : tensor<2x4xf32> = dense<[[-0.15, -0.05, 0.05, 0.15], [-0.30, -0.10, 0.10, 0.30]]> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.250> : tensor<4x2xf32>
  func.func @qwen2_moe_shared(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<2x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x2xf32>
    %v, %sel = etllm.topk %p k 1 {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %s = etllm.sum %v dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %wn = etllm.div %v, %s {etllm.module = "mlp"} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh0 = etllm.where %hit0, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w0 = etllm.sum %wh0 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw0 = etllm.parameter.get @mlp.experts.0.gate_proj.weight {etllm.module = "mlp.experts.0.gate_proj"} : tensor<2x4xf32>
    %g0 = etllm.linear %h, %gw0 {etllm.module = "mlp.experts.0.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw0 = etllm.parameter.get @mlp.experts.0.up_proj.weight {etllm.module = "mlp.experts.0.up_proj"} : tensor<2x4xf32>
    %u0 = etllm.linear %h, %uw0 {etllm.module = "mlp.experts.0.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a0 = etllm.silu %g0 {etllm.module = "mlp.experts.0.act_fn"} : tensor<?x2xf32>
    %au0 = etllm.mul %a0, %u0 {etllm.module = "mlp.experts.0"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw0 = etllm.parameter.get @mlp.experts.0.down_proj.weight {etllm.module = "mlp.experts.0.down_proj"} : tensor<4x2xf32>
    %y0 = etllm.linear %au0, %dw0 {etllm.module = "mlp.experts.0.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t0 = etllm.mul %y0, %w0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc1 = etllm.add %acc0, %t0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i1 = etllm.constant {etllm.module = "mlp"} dense<1> : tensor<i64>
    %hit1 = etllm.eq %sel, %i1 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh1 = etllm.where %hit1, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w1 = etllm.sum %wh1 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw1 = etllm.parameter.get @mlp.experts.1.gate_proj.weight {etllm.module = "mlp.experts.1.gate_proj"} : tensor<2x4xf32>
    %g1 = etllm.linear %h, %gw1 {etllm.module = "mlp.experts.1.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw1 = etllm.parameter.get @mlp.experts.1.up_proj.weight {etllm.module = "mlp.experts.1.up_proj"} : tensor<2x4xf32>
    %u1 = etllm.linear %h, %uw1 {etllm.module = "mlp.experts.1.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a1 = etllm.silu %g1 {etllm.module = "mlp.experts.1.act_fn"} : tensor<?x2xf32>
    %au1 = etllm.mul %a1, %u1 {etllm.module = "mlp.experts.1"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw1 = etllm.parameter.get @mlp.experts.1.down_proj.weight {etllm.module = "mlp.experts.1.down_proj"} : tensor<4x2xf32>
    %y1 = etllm.linear %au1, %dw1 {etllm.module = "mlp.experts.1.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t1 = etllm.mul %y1, %w1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc2 = etllm.add %acc1, %t1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %sg = etllm.sigmoid %h {etllm.module = "mlp"} : tensor<?x4xf32>
    %sh = etllm.mul %sg, %h {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %out = etllm.add %acc2, %sh {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %out : tensor<?x4xf32>
  }
}

// -----

// Expert 1's mask compares with 0: not the masked loop. Left alone.
// CHECK-LABEL: func.func @wrong_index
// CHECK-NOT: etllm.moe
// CHECK: etllm.topk
module attributes {etllm.module_classes = {mlp = "Qwen3MoeSparseMoeBlock"}} {
  etllm.parameter @mlp.gate.weight : tensor<2x4xf32> = dense<[[-0.15, -0.05, 0.05, 0.15], [-0.30, -0.10, 0.10, 0.30]]> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.250> : tensor<4x2xf32>
  func.func @wrong_index(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left Qwen3MoeSparseMoeBlock instance 'mlp' alone: expert 1's weight is not sum(where(selected == 1, weights, 0), -1)}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<2x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x2xf32>
    %v, %sel = etllm.topk %p k 1 {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %s = etllm.sum %v dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %wn = etllm.div %v, %s {etllm.module = "mlp"} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh0 = etllm.where %hit0, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w0 = etllm.sum %wh0 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw0 = etllm.parameter.get @mlp.experts.0.gate_proj.weight {etllm.module = "mlp.experts.0.gate_proj"} : tensor<2x4xf32>
    %g0 = etllm.linear %h, %gw0 {etllm.module = "mlp.experts.0.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw0 = etllm.parameter.get @mlp.experts.0.up_proj.weight {etllm.module = "mlp.experts.0.up_proj"} : tensor<2x4xf32>
    %u0 = etllm.linear %h, %uw0 {etllm.module = "mlp.experts.0.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a0 = etllm.silu %g0 {etllm.module = "mlp.experts.0.act_fn"} : tensor<?x2xf32>
    %au0 = etllm.mul %a0, %u0 {etllm.module = "mlp.experts.0"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw0 = etllm.parameter.get @mlp.experts.0.down_proj.weight {etllm.module = "mlp.experts.0.down_proj"} : tensor<4x2xf32>
    %y0 = etllm.linear %au0, %dw0 {etllm.module = "mlp.experts.0.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t0 = etllm.mul %y0, %w0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc1 = etllm.add %acc0, %t0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i1 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit1 = etllm.eq %sel, %i1 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh1 = etllm.where %hit1, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w1 = etllm.sum %wh1 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw1 = etllm.parameter.get @mlp.experts.1.gate_proj.weight {etllm.module = "mlp.experts.1.gate_proj"} : tensor<2x4xf32>
    %g1 = etllm.linear %h, %gw1 {etllm.module = "mlp.experts.1.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw1 = etllm.parameter.get @mlp.experts.1.up_proj.weight {etllm.module = "mlp.experts.1.up_proj"} : tensor<2x4xf32>
    %u1 = etllm.linear %h, %uw1 {etllm.module = "mlp.experts.1.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a1 = etllm.silu %g1 {etllm.module = "mlp.experts.1.act_fn"} : tensor<?x2xf32>
    %au1 = etllm.mul %a1, %u1 {etllm.module = "mlp.experts.1"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw1 = etllm.parameter.get @mlp.experts.1.down_proj.weight {etllm.module = "mlp.experts.1.down_proj"} : tensor<4x2xf32>
    %y1 = etllm.linear %au1, %dw1 {etllm.module = "mlp.experts.1.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t1 = etllm.mul %y1, %w1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc2 = etllm.add %acc1, %t1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc2 : tensor<?x4xf32>
  }
}

// -----

// Expert 1 uses GELU: etllm.moe's experts are SiLU-gated. Left alone.
// CHECK-LABEL: func.func @gelu_expert
// CHECK-NOT: etllm.moe
// CHECK: etllm.topk
module attributes {etllm.module_classes = {mlp = "Qwen3MoeSparseMoeBlock"}} {
  etllm.parameter @mlp.gate.weight : tensor<2x4xf32> = dense<[[-0.15, -0.05, 0.05, 0.15], [-0.30, -0.10, 0.10, 0.30]]> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.250> : tensor<4x2xf32>
  func.func @gelu_expert(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left Qwen3MoeSparseMoeBlock instance 'mlp' alone: an expert is not down_proj(silu(gate_proj(x)) * up_proj(x)) (only SiLU experts are swapped)}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<2x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x2xf32>
    %v, %sel = etllm.topk %p k 1 {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %s = etllm.sum %v dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %wn = etllm.div %v, %s {etllm.module = "mlp"} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh0 = etllm.where %hit0, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w0 = etllm.sum %wh0 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw0 = etllm.parameter.get @mlp.experts.0.gate_proj.weight {etllm.module = "mlp.experts.0.gate_proj"} : tensor<2x4xf32>
    %g0 = etllm.linear %h, %gw0 {etllm.module = "mlp.experts.0.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw0 = etllm.parameter.get @mlp.experts.0.up_proj.weight {etllm.module = "mlp.experts.0.up_proj"} : tensor<2x4xf32>
    %u0 = etllm.linear %h, %uw0 {etllm.module = "mlp.experts.0.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a0 = etllm.silu %g0 {etllm.module = "mlp.experts.0.act_fn"} : tensor<?x2xf32>
    %au0 = etllm.mul %a0, %u0 {etllm.module = "mlp.experts.0"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw0 = etllm.parameter.get @mlp.experts.0.down_proj.weight {etllm.module = "mlp.experts.0.down_proj"} : tensor<4x2xf32>
    %y0 = etllm.linear %au0, %dw0 {etllm.module = "mlp.experts.0.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t0 = etllm.mul %y0, %w0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc1 = etllm.add %acc0, %t0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i1 = etllm.constant {etllm.module = "mlp"} dense<1> : tensor<i64>
    %hit1 = etllm.eq %sel, %i1 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh1 = etllm.where %hit1, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w1 = etllm.sum %wh1 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw1 = etllm.parameter.get @mlp.experts.1.gate_proj.weight {etllm.module = "mlp.experts.1.gate_proj"} : tensor<2x4xf32>
    %g1 = etllm.linear %h, %gw1 {etllm.module = "mlp.experts.1.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw1 = etllm.parameter.get @mlp.experts.1.up_proj.weight {etllm.module = "mlp.experts.1.up_proj"} : tensor<2x4xf32>
    %u1 = etllm.linear %h, %uw1 {etllm.module = "mlp.experts.1.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a1 = etllm.gelu %g1 approximate <none> {etllm.module = "mlp.experts.1.act_fn"} : tensor<?x2xf32>
    %au1 = etllm.mul %a1, %u1 {etllm.module = "mlp.experts.1"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw1 = etllm.parameter.get @mlp.experts.1.down_proj.weight {etllm.module = "mlp.experts.1.down_proj"} : tensor<4x2xf32>
    %y1 = etllm.linear %au1, %dw1 {etllm.module = "mlp.experts.1.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t1 = etllm.mul %y1, %w1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc2 = etllm.add %acc1, %t1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc2 : tensor<?x4xf32>
  }
}

// -----

// The unselected experts' weight is 1, not 0. Left alone.
// CHECK-LABEL: func.func @else_not_zero
// CHECK-NOT: etllm.moe
// CHECK: etllm.topk
module attributes {etllm.module_classes = {mlp = "Qwen3MoeSparseMoeBlock"}} {
  etllm.parameter @mlp.gate.weight : tensor<2x4xf32> = dense<[[-0.15, -0.05, 0.05, 0.15], [-0.30, -0.10, 0.10, 0.30]]> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.250> : tensor<4x2xf32>
  func.func @else_not_zero(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left Qwen3MoeSparseMoeBlock instance 'mlp' alone: expert 0's weight is not sum(where(selected == 0, weights, 0), -1)}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<2x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x2xf32>
    %v, %sel = etllm.topk %p k 1 {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %s = etllm.sum %v dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %wn = etllm.div %v, %s {etllm.module = "mlp"} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<1.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh0 = etllm.where %hit0, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w0 = etllm.sum %wh0 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw0 = etllm.parameter.get @mlp.experts.0.gate_proj.weight {etllm.module = "mlp.experts.0.gate_proj"} : tensor<2x4xf32>
    %g0 = etllm.linear %h, %gw0 {etllm.module = "mlp.experts.0.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw0 = etllm.parameter.get @mlp.experts.0.up_proj.weight {etllm.module = "mlp.experts.0.up_proj"} : tensor<2x4xf32>
    %u0 = etllm.linear %h, %uw0 {etllm.module = "mlp.experts.0.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a0 = etllm.silu %g0 {etllm.module = "mlp.experts.0.act_fn"} : tensor<?x2xf32>
    %au0 = etllm.mul %a0, %u0 {etllm.module = "mlp.experts.0"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw0 = etllm.parameter.get @mlp.experts.0.down_proj.weight {etllm.module = "mlp.experts.0.down_proj"} : tensor<4x2xf32>
    %y0 = etllm.linear %au0, %dw0 {etllm.module = "mlp.experts.0.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t0 = etllm.mul %y0, %w0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc1 = etllm.add %acc0, %t0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i1 = etllm.constant {etllm.module = "mlp"} dense<1> : tensor<i64>
    %hit1 = etllm.eq %sel, %i1 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh1 = etllm.where %hit1, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w1 = etllm.sum %wh1 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw1 = etllm.parameter.get @mlp.experts.1.gate_proj.weight {etllm.module = "mlp.experts.1.gate_proj"} : tensor<2x4xf32>
    %g1 = etllm.linear %h, %gw1 {etllm.module = "mlp.experts.1.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw1 = etllm.parameter.get @mlp.experts.1.up_proj.weight {etllm.module = "mlp.experts.1.up_proj"} : tensor<2x4xf32>
    %u1 = etllm.linear %h, %uw1 {etllm.module = "mlp.experts.1.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a1 = etllm.silu %g1 {etllm.module = "mlp.experts.1.act_fn"} : tensor<?x2xf32>
    %au1 = etllm.mul %a1, %u1 {etllm.module = "mlp.experts.1"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw1 = etllm.parameter.get @mlp.experts.1.down_proj.weight {etllm.module = "mlp.experts.1.down_proj"} : tensor<4x2xf32>
    %y1 = etllm.linear %au1, %dw1 {etllm.module = "mlp.experts.1.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t1 = etllm.mul %y1, %w1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc2 = etllm.add %acc1, %t1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc2 : tensor<?x4xf32>
  }
}

// -----

// The loop covers one of the router's two experts. Left alone.
// CHECK-LABEL: func.func @missing_expert
// CHECK-NOT: etllm.moe
// CHECK: etllm.topk
module attributes {etllm.module_classes = {mlp = "Qwen3MoeSparseMoeBlock"}} {
  etllm.parameter @mlp.gate.weight : tensor<2x4xf32> = dense<[[-0.15, -0.05, 0.05, 0.15], [-0.30, -0.10, 0.10, 0.30]]> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  func.func @missing_expert(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left Qwen3MoeSparseMoeBlock instance 'mlp' alone: the router has 2 experts, the loop 1}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<2x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x2xf32>
    %v, %sel = etllm.topk %p k 1 {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %s = etllm.sum %v dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %wn = etllm.div %v, %s {etllm.module = "mlp"} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh0 = etllm.where %hit0, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w0 = etllm.sum %wh0 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw0 = etllm.parameter.get @mlp.experts.0.gate_proj.weight {etllm.module = "mlp.experts.0.gate_proj"} : tensor<2x4xf32>
    %g0 = etllm.linear %h, %gw0 {etllm.module = "mlp.experts.0.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw0 = etllm.parameter.get @mlp.experts.0.up_proj.weight {etllm.module = "mlp.experts.0.up_proj"} : tensor<2x4xf32>
    %u0 = etllm.linear %h, %uw0 {etllm.module = "mlp.experts.0.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a0 = etllm.silu %g0 {etllm.module = "mlp.experts.0.act_fn"} : tensor<?x2xf32>
    %au0 = etllm.mul %a0, %u0 {etllm.module = "mlp.experts.0"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw0 = etllm.parameter.get @mlp.experts.0.down_proj.weight {etllm.module = "mlp.experts.0.down_proj"} : tensor<4x2xf32>
    %y0 = etllm.linear %au0, %dw0 {etllm.module = "mlp.experts.0.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t0 = etllm.mul %y0, %w0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc1 = etllm.add %acc0, %t0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc1 : tensor<?x4xf32>
  }
}

// -----

// The softmax runs over the tokens. Left alone.
// CHECK-LABEL: func.func @softmax_dim0
// CHECK-NOT: etllm.moe
// CHECK: etllm.topk
module attributes {etllm.module_classes = {mlp = "Qwen3MoeSparseMoeBlock"}} {
  etllm.parameter @mlp.gate.weight : tensor<2x4xf32> = dense<[[-0.15, -0.05, 0.05, 0.15], [-0.30, -0.10, 0.10, 0.30]]> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.250> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.250> : tensor<4x2xf32>
  func.func @softmax_dim0(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left Qwen3MoeSparseMoeBlock instance 'mlp' alone: the softmax is not over the experts}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<2x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %p = etllm.softmax %logits dim 0 {etllm.module = "mlp"} : tensor<?x2xf32>
    %v, %sel = etllm.topk %p k 1 {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %s = etllm.sum %v dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %wn = etllm.div %v, %s {etllm.module = "mlp"} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh0 = etllm.where %hit0, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w0 = etllm.sum %wh0 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw0 = etllm.parameter.get @mlp.experts.0.gate_proj.weight {etllm.module = "mlp.experts.0.gate_proj"} : tensor<2x4xf32>
    %g0 = etllm.linear %h, %gw0 {etllm.module = "mlp.experts.0.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw0 = etllm.parameter.get @mlp.experts.0.up_proj.weight {etllm.module = "mlp.experts.0.up_proj"} : tensor<2x4xf32>
    %u0 = etllm.linear %h, %uw0 {etllm.module = "mlp.experts.0.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a0 = etllm.silu %g0 {etllm.module = "mlp.experts.0.act_fn"} : tensor<?x2xf32>
    %au0 = etllm.mul %a0, %u0 {etllm.module = "mlp.experts.0"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw0 = etllm.parameter.get @mlp.experts.0.down_proj.weight {etllm.module = "mlp.experts.0.down_proj"} : tensor<4x2xf32>
    %y0 = etllm.linear %au0, %dw0 {etllm.module = "mlp.experts.0.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t0 = etllm.mul %y0, %w0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc1 = etllm.add %acc0, %t0 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i1 = etllm.constant {etllm.module = "mlp"} dense<1> : tensor<i64>
    %hit1 = etllm.eq %sel, %i1 {etllm.module = "mlp"} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
    %wh1 = etllm.where %hit1, %wn, %zero {etllm.module = "mlp"} : (tensor<?x1xi1>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %w1 = etllm.sum %wh1 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x1xf32> -> tensor<?x1xf32>
    %gw1 = etllm.parameter.get @mlp.experts.1.gate_proj.weight {etllm.module = "mlp.experts.1.gate_proj"} : tensor<2x4xf32>
    %g1 = etllm.linear %h, %gw1 {etllm.module = "mlp.experts.1.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw1 = etllm.parameter.get @mlp.experts.1.up_proj.weight {etllm.module = "mlp.experts.1.up_proj"} : tensor<2x4xf32>
    %u1 = etllm.linear %h, %uw1 {etllm.module = "mlp.experts.1.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a1 = etllm.silu %g1 {etllm.module = "mlp.experts.1.act_fn"} : tensor<?x2xf32>
    %au1 = etllm.mul %a1, %u1 {etllm.module = "mlp.experts.1"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw1 = etllm.parameter.get @mlp.experts.1.down_proj.weight {etllm.module = "mlp.experts.1.down_proj"} : tensor<4x2xf32>
    %y1 = etllm.linear %au1, %dw1 {etllm.module = "mlp.experts.1.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t1 = etllm.mul %y1, %w1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc2 = etllm.add %acc1, %t1 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc2 : tensor<?x4xf32>
  }
}
