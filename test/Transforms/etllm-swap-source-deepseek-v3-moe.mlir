// RUN: etllm-opt %s --split-input-file --etllm-swap-source --verify-diagnostics | FileCheck %s
// DeepSeek-V3's sparse block (DeepseekV3MoE with its DeepseekV3TopkRouter;
// lib/Import/Blocks/Moe.cpp's level-A form: the float32 router, a sigmoid,
// the choice = scores + e_score_correction_bias, the topk_group best groups
// by the sum of their two best choices, top-k of the masked choice, the
// weights gathered from the unbiased scores, renormalized (+ 1e-20) and
// scaled, then the masked loop over every expert) becomes one etllm.moe
// with routing noaux_tc and the bias as its score_bias operand. Forms that
// differ in one detail are left alone with a remark. (The generated file:
// 4 experts in 2 groups, the best group kept, top-2.)

// noaux_tc: the router parameter, the bias and the stacked experts feed
// one etllm.moe; nothing of the routing is left.
// CHECK-LABEL: module attributes
// CHECK-NOT: etllm.parameter @mlp.experts.0.
// CHECK-DAG: etllm.parameter @mlp.experts.gate_proj.weight : tensor<4x2x4xf32>
// CHECK-DAG: etllm.parameter @mlp.experts.down_proj.weight : tensor<4x4x2xf32>
// CHECK-LABEL: func.func @noaux_tc
// CHECK-SAME: (%[[H:.+]]: tensor<?x4xf32>)
// CHECK-DAG: %[[R:.+]] = etllm.parameter.get @mlp.gate.weight
// CHECK-DAG: %[[B:.+]] = etllm.parameter.get @mlp.gate.e_score_correction_bias
// CHECK: %[[Y:.+]] = etllm.moe %[[H]], %[[R]], %{{.+}}, %{{.+}}, %{{.+}} bias %[[B]] top_k 2 scoring <sigmoid> method <noaux_tc> groups 2 norm_topk_prob norm_eps 9.999{{[0-9]+}}E-21 scale 2.500000e+00 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<4x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32>, tensor<4xf32>) -> tensor<?x4xf32>
// CHECK-NOT: etllm.topk
// CHECK-NOT: etllm.gather
// CHECK-NOT: etllm.masked_fill
// CHECK: return %[[Y]]
module attributes {etllm.module_classes = {mlp = "DeepseekV3MoE", mlp.experts.0 = "DeepseekV3MLP", mlp.gate = "DeepseekV3TopkRouter", mlp.shared_experts = "DeepseekV3MLP"}} {
  etllm.parameter @mlp.gate.weight : tensor<4x4xf32> = dense<[[-0.08, -0.03, 0.03, 0.08], [-0.15, -0.05, 0.05, 0.15], [-0.23, -0.08, 0.08, 0.23], [-0.30, -0.10, 0.10, 0.30]]> : tensor<4x4xf32>
  etllm.parameter @mlp.gate.e_score_correction_bias : tensor<4xf32> = dense<[0.1, -0.1, 0.05, 0.0]> : tensor<4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.25> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.25> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.25> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.2.gate_proj.weight : tensor<2x4xf32> = dense<0.375> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.2.up_proj.weight : tensor<2x4xf32> = dense<0.375> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.2.down_proj.weight : tensor<4x2xf32> = dense<0.375> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.3.gate_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.3.up_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.3.down_proj.weight : tensor<4x2xf32> = dense<0.5> : tensor<4x2xf32>
  func.func @noaux_tc(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<4x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %p = etllm.sigmoid %logits {etllm.module = "mlp.gate"} : tensor<?x4xf32>
    %b = etllm.parameter.get @mlp.gate.e_score_correction_bias {etllm.module = "mlp.gate"} : tensor<4xf32>
    %bu = etllm.unsqueeze %b dim 0 {etllm.module = "mlp.gate"} : tensor<4xf32> -> tensor<1x4xf32>
    %pf = etllm.reshape %p [-1, 4] {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %c = etllm.add %pf, %bu {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
    %cg = etllm.reshape %c [-1, 2, 2] {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x2x2xf32>
    %t2v, %t2i = etllm.topk %cg k 2 {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x2x2xf32>, tensor<?x2x2xi64>
    %gs = etllm.sum %t2v dims [-1] {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x2xf32>
    %gv, %gi = etllm.topk %gs k 1 {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %groups = etllm.arange 0 to 2 {etllm.module = "mlp.gate"} : tensor<2xi64>
    %giu = etllm.unsqueeze %gi dim -1 {etllm.module = "mlp.gate"} : tensor<?x1xi64> -> tensor<?x1x1xi64>
    %hit = etllm.eq %giu, %groups {etllm.module = "mlp.gate"} : (tensor<?x1x1xi64>, tensor<2xi64>) -> tensor<?x1x2xi1>
    %hitf = etllm.convert %hit {etllm.module = "mlp.gate"} : tensor<?x1x2xi1> -> tensor<?x1x2xf32>
    %gmask = etllm.sum %hitf dims [1] {etllm.module = "mlp.gate"} : tensor<?x1x2xf32> -> tensor<?x2xf32>
    %gmu = etllm.unsqueeze %gmask dim -1 {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x2x1xf32>
    %gme = etllm.expand %gmu [-1, 2, 2] {etllm.module = "mlp.gate"} : tensor<?x2x1xf32> -> tensor<?x2x2xf32>
    %gmf = etllm.reshape %gme [-1, 4] {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x4xf32>
    %keep = etllm.convert %gmf {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x4xi1>
    %drop = etllm.logical_not %keep {etllm.module = "mlp.gate"} : tensor<?x4xi1>
    %masked = etllm.masked_fill %c, %drop, 0.000000e+00 {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<?x4xi1>) -> tensor<?x4xf32>
    %v, %sel = etllm.topk %masked k 2 {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %wt = etllm.gather %p dim 1, %sel {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
    %ws = etllm.sum %wt dims [-1] keepdim {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %eps = etllm.constant {etllm.module = "mlp.gate"} dense<9.99999968E-21> : tensor<f32>
    %wse = etllm.add %ws, %eps {etllm.module = "mlp.gate"} : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %wn = etllm.div %wt, %wse {etllm.module = "mlp.gate"} : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
    %sc = etllm.constant {etllm.module = "mlp.gate"} dense<2.500000e+00> : tensor<f32>
    %vs = etllm.mul %wn, %sc {etllm.module = "mlp.gate"} : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh0 = etllm.where %hit0, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %wh1 = etllm.where %hit1, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %i2 = etllm.constant {etllm.module = "mlp"} dense<2> : tensor<i64>
    %hit2 = etllm.eq %sel, %i2 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh2 = etllm.where %hit2, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w2 = etllm.sum %wh2 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw2 = etllm.parameter.get @mlp.experts.2.gate_proj.weight {etllm.module = "mlp.experts.2.gate_proj"} : tensor<2x4xf32>
    %g2 = etllm.linear %h, %gw2 {etllm.module = "mlp.experts.2.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw2 = etllm.parameter.get @mlp.experts.2.up_proj.weight {etllm.module = "mlp.experts.2.up_proj"} : tensor<2x4xf32>
    %u2 = etllm.linear %h, %uw2 {etllm.module = "mlp.experts.2.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a2 = etllm.silu %g2 {etllm.module = "mlp.experts.2.act_fn"} : tensor<?x2xf32>
    %au2 = etllm.mul %a2, %u2 {etllm.module = "mlp.experts.2"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw2 = etllm.parameter.get @mlp.experts.2.down_proj.weight {etllm.module = "mlp.experts.2.down_proj"} : tensor<4x2xf32>
    %y2 = etllm.linear %au2, %dw2 {etllm.module = "mlp.experts.2.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t2 = etllm.mul %y2, %w2 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc3 = etllm.add %acc2, %t2 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i3 = etllm.constant {etllm.module = "mlp"} dense<3> : tensor<i64>
    %hit3 = etllm.eq %sel, %i3 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh3 = etllm.where %hit3, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w3 = etllm.sum %wh3 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw3 = etllm.parameter.get @mlp.experts.3.gate_proj.weight {etllm.module = "mlp.experts.3.gate_proj"} : tensor<2x4xf32>
    %g3 = etllm.linear %h, %gw3 {etllm.module = "mlp.experts.3.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw3 = etllm.parameter.get @mlp.experts.3.up_proj.weight {etllm.module = "mlp.experts.3.up_proj"} : tensor<2x4xf32>
    %u3 = etllm.linear %h, %uw3 {etllm.module = "mlp.experts.3.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a3 = etllm.silu %g3 {etllm.module = "mlp.experts.3.act_fn"} : tensor<?x2xf32>
    %au3 = etllm.mul %a3, %u3 {etllm.module = "mlp.experts.3"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw3 = etllm.parameter.get @mlp.experts.3.down_proj.weight {etllm.module = "mlp.experts.3.down_proj"} : tensor<4x2xf32>
    %y3 = etllm.linear %au3, %dw3 {etllm.module = "mlp.experts.3.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t3 = etllm.mul %y3, %w3 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc4 = etllm.add %acc3, %t3 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc4 : tensor<?x4xf32>
  }
}
// -----

// Near miss: groups ranked by their best choice (amax, V2's way) while the
// weights are gathered (V3's way): not DeepSeek's code, left alone.
// CHECK-LABEL: func.func @ranked_by_amax
// CHECK-NOT: etllm.moe
// CHECK: etllm.amax
module attributes {etllm.module_classes = {mlp = "DeepseekV3MoE", mlp.experts.0 = "DeepseekV3MLP", mlp.gate = "DeepseekV3TopkRouter", mlp.shared_experts = "DeepseekV3MLP"}} {
  etllm.parameter @mlp.gate.weight : tensor<4x4xf32> = dense<[[-0.08, -0.03, 0.03, 0.08], [-0.15, -0.05, 0.05, 0.15], [-0.23, -0.08, 0.08, 0.23], [-0.30, -0.10, 0.10, 0.30]]> : tensor<4x4xf32>
  etllm.parameter @mlp.gate.e_score_correction_bias : tensor<4xf32> = dense<[0.1, -0.1, 0.05, 0.0]> : tensor<4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.25> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.25> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.25> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.2.gate_proj.weight : tensor<2x4xf32> = dense<0.375> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.2.up_proj.weight : tensor<2x4xf32> = dense<0.375> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.2.down_proj.weight : tensor<4x2xf32> = dense<0.375> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.3.gate_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.3.up_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.3.down_proj.weight : tensor<4x2xf32> = dense<0.5> : tensor<4x2xf32>
  func.func @ranked_by_amax(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left DeepseekV3MoE instance 'mlp' alone: the noaux_tc selection: the groups are not ranked by the sum of their two best choices}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<4x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %p = etllm.sigmoid %logits {etllm.module = "mlp.gate"} : tensor<?x4xf32>
    %b = etllm.parameter.get @mlp.gate.e_score_correction_bias {etllm.module = "mlp.gate"} : tensor<4xf32>
    %bu = etllm.unsqueeze %b dim 0 {etllm.module = "mlp.gate"} : tensor<4xf32> -> tensor<1x4xf32>
    %pf = etllm.reshape %p [-1, 4] {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %c = etllm.add %pf, %bu {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
    %cg = etllm.reshape %c [-1, 2, 2] {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x2x2xf32>
    %gs = etllm.amax %cg dims [-1] {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x2xf32>
    %gv, %gi = etllm.topk %gs k 1 {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %groups = etllm.arange 0 to 2 {etllm.module = "mlp.gate"} : tensor<2xi64>
    %giu = etllm.unsqueeze %gi dim -1 {etllm.module = "mlp.gate"} : tensor<?x1xi64> -> tensor<?x1x1xi64>
    %hit = etllm.eq %giu, %groups {etllm.module = "mlp.gate"} : (tensor<?x1x1xi64>, tensor<2xi64>) -> tensor<?x1x2xi1>
    %hitf = etllm.convert %hit {etllm.module = "mlp.gate"} : tensor<?x1x2xi1> -> tensor<?x1x2xf32>
    %gmask = etllm.sum %hitf dims [1] {etllm.module = "mlp.gate"} : tensor<?x1x2xf32> -> tensor<?x2xf32>
    %gmu = etllm.unsqueeze %gmask dim -1 {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x2x1xf32>
    %gme = etllm.expand %gmu [-1, 2, 2] {etllm.module = "mlp.gate"} : tensor<?x2x1xf32> -> tensor<?x2x2xf32>
    %gmf = etllm.reshape %gme [-1, 4] {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x4xf32>
    %keep = etllm.convert %gmf {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x4xi1>
    %drop = etllm.logical_not %keep {etllm.module = "mlp.gate"} : tensor<?x4xi1>
    %masked = etllm.masked_fill %c, %drop, 0.000000e+00 {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<?x4xi1>) -> tensor<?x4xf32>
    %v, %sel = etllm.topk %masked k 2 {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %wt = etllm.gather %p dim 1, %sel {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
    %ws = etllm.sum %wt dims [-1] keepdim {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %eps = etllm.constant {etllm.module = "mlp.gate"} dense<9.99999968E-21> : tensor<f32>
    %wse = etllm.add %ws, %eps {etllm.module = "mlp.gate"} : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %wn = etllm.div %wt, %wse {etllm.module = "mlp.gate"} : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
    %sc = etllm.constant {etllm.module = "mlp.gate"} dense<2.500000e+00> : tensor<f32>
    %vs = etllm.mul %wn, %sc {etllm.module = "mlp.gate"} : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh0 = etllm.where %hit0, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %wh1 = etllm.where %hit1, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %i2 = etllm.constant {etllm.module = "mlp"} dense<2> : tensor<i64>
    %hit2 = etllm.eq %sel, %i2 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh2 = etllm.where %hit2, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w2 = etllm.sum %wh2 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw2 = etllm.parameter.get @mlp.experts.2.gate_proj.weight {etllm.module = "mlp.experts.2.gate_proj"} : tensor<2x4xf32>
    %g2 = etllm.linear %h, %gw2 {etllm.module = "mlp.experts.2.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw2 = etllm.parameter.get @mlp.experts.2.up_proj.weight {etllm.module = "mlp.experts.2.up_proj"} : tensor<2x4xf32>
    %u2 = etllm.linear %h, %uw2 {etllm.module = "mlp.experts.2.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a2 = etllm.silu %g2 {etllm.module = "mlp.experts.2.act_fn"} : tensor<?x2xf32>
    %au2 = etllm.mul %a2, %u2 {etllm.module = "mlp.experts.2"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw2 = etllm.parameter.get @mlp.experts.2.down_proj.weight {etllm.module = "mlp.experts.2.down_proj"} : tensor<4x2xf32>
    %y2 = etllm.linear %au2, %dw2 {etllm.module = "mlp.experts.2.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t2 = etllm.mul %y2, %w2 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc3 = etllm.add %acc2, %t2 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i3 = etllm.constant {etllm.module = "mlp"} dense<3> : tensor<i64>
    %hit3 = etllm.eq %sel, %i3 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh3 = etllm.where %hit3, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w3 = etllm.sum %wh3 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw3 = etllm.parameter.get @mlp.experts.3.gate_proj.weight {etllm.module = "mlp.experts.3.gate_proj"} : tensor<2x4xf32>
    %g3 = etllm.linear %h, %gw3 {etllm.module = "mlp.experts.3.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw3 = etllm.parameter.get @mlp.experts.3.up_proj.weight {etllm.module = "mlp.experts.3.up_proj"} : tensor<2x4xf32>
    %u3 = etllm.linear %h, %uw3 {etllm.module = "mlp.experts.3.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a3 = etllm.silu %g3 {etllm.module = "mlp.experts.3.act_fn"} : tensor<?x2xf32>
    %au3 = etllm.mul %a3, %u3 {etllm.module = "mlp.experts.3"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw3 = etllm.parameter.get @mlp.experts.3.down_proj.weight {etllm.module = "mlp.experts.3.down_proj"} : tensor<4x2xf32>
    %y3 = etllm.linear %au3, %dw3 {etllm.module = "mlp.experts.3.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t3 = etllm.mul %y3, %w3 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc4 = etllm.add %acc3, %t3 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc4 : tensor<?x4xf32>
  }
}
// -----

// Near miss: the weights gathered from the biased choice instead of the
// unbiased scores.
// CHECK-LABEL: func.func @biased_weights
// CHECK-NOT: etllm.moe
// CHECK: etllm.gather
module attributes {etllm.module_classes = {mlp = "DeepseekV3MoE", mlp.experts.0 = "DeepseekV3MLP", mlp.gate = "DeepseekV3TopkRouter", mlp.shared_experts = "DeepseekV3MLP"}} {
  etllm.parameter @mlp.gate.weight : tensor<4x4xf32> = dense<[[-0.08, -0.03, 0.03, 0.08], [-0.15, -0.05, 0.05, 0.15], [-0.23, -0.08, 0.08, 0.23], [-0.30, -0.10, 0.10, 0.30]]> : tensor<4x4xf32>
  etllm.parameter @mlp.gate.e_score_correction_bias : tensor<4xf32> = dense<[0.1, -0.1, 0.05, 0.0]> : tensor<4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.25> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.25> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.25> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.2.gate_proj.weight : tensor<2x4xf32> = dense<0.375> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.2.up_proj.weight : tensor<2x4xf32> = dense<0.375> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.2.down_proj.weight : tensor<4x2xf32> = dense<0.375> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.3.gate_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.3.up_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.3.down_proj.weight : tensor<4x2xf32> = dense<0.5> : tensor<4x2xf32>
  func.func @biased_weights(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left DeepseekV3MoE instance 'mlp' alone: the noaux_tc weights are not the unbiased scores gathered at the selected experts}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<4x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %p = etllm.sigmoid %logits {etllm.module = "mlp.gate"} : tensor<?x4xf32>
    %b = etllm.parameter.get @mlp.gate.e_score_correction_bias {etllm.module = "mlp.gate"} : tensor<4xf32>
    %bu = etllm.unsqueeze %b dim 0 {etllm.module = "mlp.gate"} : tensor<4xf32> -> tensor<1x4xf32>
    %pf = etllm.reshape %p [-1, 4] {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %c = etllm.add %pf, %bu {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
    %cg = etllm.reshape %c [-1, 2, 2] {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x2x2xf32>
    %t2v, %t2i = etllm.topk %cg k 2 {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x2x2xf32>, tensor<?x2x2xi64>
    %gs = etllm.sum %t2v dims [-1] {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x2xf32>
    %gv, %gi = etllm.topk %gs k 1 {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %groups = etllm.arange 0 to 2 {etllm.module = "mlp.gate"} : tensor<2xi64>
    %giu = etllm.unsqueeze %gi dim -1 {etllm.module = "mlp.gate"} : tensor<?x1xi64> -> tensor<?x1x1xi64>
    %hit = etllm.eq %giu, %groups {etllm.module = "mlp.gate"} : (tensor<?x1x1xi64>, tensor<2xi64>) -> tensor<?x1x2xi1>
    %hitf = etllm.convert %hit {etllm.module = "mlp.gate"} : tensor<?x1x2xi1> -> tensor<?x1x2xf32>
    %gmask = etllm.sum %hitf dims [1] {etllm.module = "mlp.gate"} : tensor<?x1x2xf32> -> tensor<?x2xf32>
    %gmu = etllm.unsqueeze %gmask dim -1 {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x2x1xf32>
    %gme = etllm.expand %gmu [-1, 2, 2] {etllm.module = "mlp.gate"} : tensor<?x2x1xf32> -> tensor<?x2x2xf32>
    %gmf = etllm.reshape %gme [-1, 4] {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x4xf32>
    %keep = etllm.convert %gmf {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x4xi1>
    %drop = etllm.logical_not %keep {etllm.module = "mlp.gate"} : tensor<?x4xi1>
    %masked = etllm.masked_fill %c, %drop, 0.000000e+00 {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<?x4xi1>) -> tensor<?x4xf32>
    %v, %sel = etllm.topk %masked k 2 {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %wt = etllm.gather %c dim 1, %sel {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
    %ws = etllm.sum %wt dims [-1] keepdim {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %eps = etllm.constant {etllm.module = "mlp.gate"} dense<9.99999968E-21> : tensor<f32>
    %wse = etllm.add %ws, %eps {etllm.module = "mlp.gate"} : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %wn = etllm.div %wt, %wse {etllm.module = "mlp.gate"} : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
    %sc = etllm.constant {etllm.module = "mlp.gate"} dense<2.500000e+00> : tensor<f32>
    %vs = etllm.mul %wn, %sc {etllm.module = "mlp.gate"} : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh0 = etllm.where %hit0, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %wh1 = etllm.where %hit1, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %i2 = etllm.constant {etllm.module = "mlp"} dense<2> : tensor<i64>
    %hit2 = etllm.eq %sel, %i2 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh2 = etllm.where %hit2, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w2 = etllm.sum %wh2 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw2 = etllm.parameter.get @mlp.experts.2.gate_proj.weight {etllm.module = "mlp.experts.2.gate_proj"} : tensor<2x4xf32>
    %g2 = etllm.linear %h, %gw2 {etllm.module = "mlp.experts.2.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw2 = etllm.parameter.get @mlp.experts.2.up_proj.weight {etllm.module = "mlp.experts.2.up_proj"} : tensor<2x4xf32>
    %u2 = etllm.linear %h, %uw2 {etllm.module = "mlp.experts.2.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a2 = etllm.silu %g2 {etllm.module = "mlp.experts.2.act_fn"} : tensor<?x2xf32>
    %au2 = etllm.mul %a2, %u2 {etllm.module = "mlp.experts.2"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw2 = etllm.parameter.get @mlp.experts.2.down_proj.weight {etllm.module = "mlp.experts.2.down_proj"} : tensor<4x2xf32>
    %y2 = etllm.linear %au2, %dw2 {etllm.module = "mlp.experts.2.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t2 = etllm.mul %y2, %w2 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc3 = etllm.add %acc2, %t2 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i3 = etllm.constant {etllm.module = "mlp"} dense<3> : tensor<i64>
    %hit3 = etllm.eq %sel, %i3 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh3 = etllm.where %hit3, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w3 = etllm.sum %wh3 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw3 = etllm.parameter.get @mlp.experts.3.gate_proj.weight {etllm.module = "mlp.experts.3.gate_proj"} : tensor<2x4xf32>
    %g3 = etllm.linear %h, %gw3 {etllm.module = "mlp.experts.3.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw3 = etllm.parameter.get @mlp.experts.3.up_proj.weight {etllm.module = "mlp.experts.3.up_proj"} : tensor<2x4xf32>
    %u3 = etllm.linear %h, %uw3 {etllm.module = "mlp.experts.3.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a3 = etllm.silu %g3 {etllm.module = "mlp.experts.3.act_fn"} : tensor<?x2xf32>
    %au3 = etllm.mul %a3, %u3 {etllm.module = "mlp.experts.3"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw3 = etllm.parameter.get @mlp.experts.3.down_proj.weight {etllm.module = "mlp.experts.3.down_proj"} : tensor<4x2xf32>
    %y3 = etllm.linear %au3, %dw3 {etllm.module = "mlp.experts.3.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t3 = etllm.mul %y3, %w3 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc4 = etllm.add %acc3, %t3 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc4 : tensor<?x4xf32>
  }
}
// -----

// Near miss: a constant bias (not the router's e_score_correction_bias
// parameter).
// CHECK-LABEL: func.func @constant_bias
// CHECK-NOT: etllm.moe
// CHECK: etllm.masked_fill
module attributes {etllm.module_classes = {mlp = "DeepseekV3MoE", mlp.experts.0 = "DeepseekV3MLP", mlp.gate = "DeepseekV3TopkRouter", mlp.shared_experts = "DeepseekV3MLP"}} {
  etllm.parameter @mlp.gate.weight : tensor<4x4xf32> = dense<[[-0.08, -0.03, 0.03, 0.08], [-0.15, -0.05, 0.05, 0.15], [-0.23, -0.08, 0.08, 0.23], [-0.30, -0.10, 0.10, 0.30]]> : tensor<4x4xf32>
  etllm.parameter @mlp.gate.e_score_correction_bias : tensor<4xf32> = dense<[0.1, -0.1, 0.05, 0.0]> : tensor<4xf32>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xf32> = dense<0.125> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xf32> = dense<0.125> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xf32> = dense<0.25> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xf32> = dense<0.25> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xf32> = dense<0.25> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.2.gate_proj.weight : tensor<2x4xf32> = dense<0.375> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.2.up_proj.weight : tensor<2x4xf32> = dense<0.375> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.2.down_proj.weight : tensor<4x2xf32> = dense<0.375> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.3.gate_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.3.up_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.3.down_proj.weight : tensor<4x2xf32> = dense<0.5> : tensor<4x2xf32>
  func.func @constant_bias(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left DeepseekV3MoE instance 'mlp' alone: the noaux_tc selection: the score-correction bias is not a float32 parameter [E]}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp.gate"} : tensor<4x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %p = etllm.sigmoid %logits {etllm.module = "mlp.gate"} : tensor<?x4xf32>
    %b = etllm.constant {etllm.module = "mlp.gate"} dense<[0.1, -0.1, 0.05, 0.0]> : tensor<4xf32>
    %bu = etllm.unsqueeze %b dim 0 {etllm.module = "mlp.gate"} : tensor<4xf32> -> tensor<1x4xf32>
    %pf = etllm.reshape %p [-1, 4] {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %c = etllm.add %pf, %bu {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
    %cg = etllm.reshape %c [-1, 2, 2] {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x2x2xf32>
    %t2v, %t2i = etllm.topk %cg k 2 {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x2x2xf32>, tensor<?x2x2xi64>
    %gs = etllm.sum %t2v dims [-1] {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x2xf32>
    %gv, %gi = etllm.topk %gs k 1 {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi64>
    %groups = etllm.arange 0 to 2 {etllm.module = "mlp.gate"} : tensor<2xi64>
    %giu = etllm.unsqueeze %gi dim -1 {etllm.module = "mlp.gate"} : tensor<?x1xi64> -> tensor<?x1x1xi64>
    %hit = etllm.eq %giu, %groups {etllm.module = "mlp.gate"} : (tensor<?x1x1xi64>, tensor<2xi64>) -> tensor<?x1x2xi1>
    %hitf = etllm.convert %hit {etllm.module = "mlp.gate"} : tensor<?x1x2xi1> -> tensor<?x1x2xf32>
    %gmask = etllm.sum %hitf dims [1] {etllm.module = "mlp.gate"} : tensor<?x1x2xf32> -> tensor<?x2xf32>
    %gmu = etllm.unsqueeze %gmask dim -1 {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x2x1xf32>
    %gme = etllm.expand %gmu [-1, 2, 2] {etllm.module = "mlp.gate"} : tensor<?x2x1xf32> -> tensor<?x2x2xf32>
    %gmf = etllm.reshape %gme [-1, 4] {etllm.module = "mlp.gate"} : tensor<?x2x2xf32> -> tensor<?x4xf32>
    %keep = etllm.convert %gmf {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x4xi1>
    %drop = etllm.logical_not %keep {etllm.module = "mlp.gate"} : tensor<?x4xi1>
    %masked = etllm.masked_fill %c, %drop, 0.000000e+00 {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<?x4xi1>) -> tensor<?x4xf32>
    %v, %sel = etllm.topk %masked k 2 {etllm.module = "mlp.gate"} : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %wt = etllm.gather %p dim 1, %sel {etllm.module = "mlp.gate"} : (tensor<?x4xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
    %ws = etllm.sum %wt dims [-1] keepdim {etllm.module = "mlp.gate"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %eps = etllm.constant {etllm.module = "mlp.gate"} dense<9.99999968E-21> : tensor<f32>
    %wse = etllm.add %ws, %eps {etllm.module = "mlp.gate"} : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %wn = etllm.div %wt, %wse {etllm.module = "mlp.gate"} : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
    %sc = etllm.constant {etllm.module = "mlp.gate"} dense<2.500000e+00> : tensor<f32>
    %vs = etllm.mul %wn, %sc {etllm.module = "mlp.gate"} : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xf32> -> tensor<?x4xf32>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<f32>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh0 = etllm.where %hit0, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %wh1 = etllm.where %hit1, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %i2 = etllm.constant {etllm.module = "mlp"} dense<2> : tensor<i64>
    %hit2 = etllm.eq %sel, %i2 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh2 = etllm.where %hit2, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w2 = etllm.sum %wh2 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw2 = etllm.parameter.get @mlp.experts.2.gate_proj.weight {etllm.module = "mlp.experts.2.gate_proj"} : tensor<2x4xf32>
    %g2 = etllm.linear %h, %gw2 {etllm.module = "mlp.experts.2.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw2 = etllm.parameter.get @mlp.experts.2.up_proj.weight {etllm.module = "mlp.experts.2.up_proj"} : tensor<2x4xf32>
    %u2 = etllm.linear %h, %uw2 {etllm.module = "mlp.experts.2.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a2 = etllm.silu %g2 {etllm.module = "mlp.experts.2.act_fn"} : tensor<?x2xf32>
    %au2 = etllm.mul %a2, %u2 {etllm.module = "mlp.experts.2"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw2 = etllm.parameter.get @mlp.experts.2.down_proj.weight {etllm.module = "mlp.experts.2.down_proj"} : tensor<4x2xf32>
    %y2 = etllm.linear %au2, %dw2 {etllm.module = "mlp.experts.2.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t2 = etllm.mul %y2, %w2 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc3 = etllm.add %acc2, %t2 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i3 = etllm.constant {etllm.module = "mlp"} dense<3> : tensor<i64>
    %hit3 = etllm.eq %sel, %i3 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh3 = etllm.where %hit3, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w3 = etllm.sum %wh3 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw3 = etllm.parameter.get @mlp.experts.3.gate_proj.weight {etllm.module = "mlp.experts.3.gate_proj"} : tensor<2x4xf32>
    %g3 = etllm.linear %h, %gw3 {etllm.module = "mlp.experts.3.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw3 = etllm.parameter.get @mlp.experts.3.up_proj.weight {etllm.module = "mlp.experts.3.up_proj"} : tensor<2x4xf32>
    %u3 = etllm.linear %h, %uw3 {etllm.module = "mlp.experts.3.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a3 = etllm.silu %g3 {etllm.module = "mlp.experts.3.act_fn"} : tensor<?x2xf32>
    %au3 = etllm.mul %a3, %u3 {etllm.module = "mlp.experts.3"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw3 = etllm.parameter.get @mlp.experts.3.down_proj.weight {etllm.module = "mlp.experts.3.down_proj"} : tensor<4x2xf32>
    %y3 = etllm.linear %au3, %dw3 {etllm.module = "mlp.experts.3.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t3 = etllm.mul %y3, %w3 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc4 = etllm.add %acc3, %t3 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %acc4 : tensor<?x4xf32>
  }
}
