// RUN: etllm-opt %s --split-input-file --etllm-swap-source --verify-diagnostics | FileCheck %s
// DeepSeek-V2's sparse block (DeepseekV2Moe; lib/Import/Blocks/Moe.cpp's
// level-A form: the float32 router F.linear(x.float(), gate.weight.float()),
// a softmax, greedy or group-limited top-k, the optional renormalization
// (+ 1e-20) and routed_scaling_factor, the masked loop over every expert)
// becomes one etllm.moe with DeepSeek's routing; the ungated shared experts
// stay beside it. Forms that differ in one detail of the group selection
// are left alone with a remark.

// group_limited_greedy: 6 experts in 3 groups, the best 2 groups by their
// best score, top-2, scaled by 2.5; the shared experts stay an MLP added to
// the moe's output.
// CHECK-LABEL: module attributes
// CHECK-NOT: etllm.parameter @mlp.experts.0.
// CHECK-DAG: etllm.parameter @mlp.experts.gate_proj.weight : tensor<6x2x4xf32>
// CHECK-DAG: etllm.parameter @mlp.experts.down_proj.weight : tensor<6x4x2xf32>
// CHECK-LABEL: func.func @group_limited
// CHECK-SAME: (%[[H:.+]]: tensor<?x4xf32>)
// CHECK: %[[Y:.+]] = etllm.moe %[[H]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} top_k 2 scoring <softmax> method <group_limited_greedy> groups 3 topk_group 2 scale 2.500000e+00 {etllm.module = "mlp"}
// CHECK-NOT: etllm.topk
// CHECK-NOT: etllm.masked_fill
// CHECK: %[[S:.+]] = etllm.linear {{.*}}mlp.shared_experts.down_proj
// CHECK: %[[O:.+]] = etllm.add %[[Y]], %[[S]]
// CHECK: return %[[O]]
module attributes {etllm.module_classes = {mlp = "DeepseekV2Moe", mlp.experts.0 = "DeepseekV2MLP", mlp.shared_experts = "DeepseekV2MLP"}} {
  etllm.parameter @mlp.gate.weight : tensor<6x4xf32> = dense<[[-0.08, -0.03, 0.03, 0.08], [-0.15, -0.05, 0.05, 0.15], [-0.23, -0.08, 0.08, 0.23], [-0.30, -0.10, 0.10, 0.30], [-0.38, -0.12, 0.12, 0.38], [-0.45, -0.15, 0.15, 0.45]]> : tensor<6x4xf32>
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
  etllm.parameter @mlp.experts.4.gate_proj.weight : tensor<2x4xf32> = dense<0.625> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.4.up_proj.weight : tensor<2x4xf32> = dense<0.625> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.4.down_proj.weight : tensor<4x2xf32> = dense<0.625> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.5.gate_proj.weight : tensor<2x4xf32> = dense<0.75> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.5.up_proj.weight : tensor<2x4xf32> = dense<0.75> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.5.down_proj.weight : tensor<4x2xf32> = dense<0.75> : tensor<4x2xf32>
  etllm.parameter @mlp.shared_experts.gate_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.shared_experts.up_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.shared_experts.down_proj.weight : tensor<4x2xf32> = dense<0.5> : tensor<4x2xf32>
  func.func @group_limited(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp"} : tensor<6x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<6x4xf32>) -> tensor<?x6xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x6xf32>
    %grouped = etllm.reshape %p [-1, 3, 2] {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x3x2xf32>
    %best = etllm.amax %grouped dims [-1] {etllm.module = "mlp"} : tensor<?x3x2xf32> -> tensor<?x3xf32>
    %gv, %gi = etllm.topk %best k 2 {etllm.module = "mlp"} : tensor<?x3xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %groups = etllm.arange 0 to 3 {etllm.module = "mlp"} : tensor<3xi64>
    %giu = etllm.unsqueeze %gi dim -1 {etllm.module = "mlp"} : tensor<?x2xi64> -> tensor<?x2x1xi64>
    %hit = etllm.eq %giu, %groups {etllm.module = "mlp"} : (tensor<?x2x1xi64>, tensor<3xi64>) -> tensor<?x2x3xi1>
    %hitf = etllm.convert %hit {etllm.module = "mlp"} : tensor<?x2x3xi1> -> tensor<?x2x3xf32>
    %gmask = etllm.sum %hitf dims [1] {etllm.module = "mlp"} : tensor<?x2x3xf32> -> tensor<?x3xf32>
    %gmu = etllm.unsqueeze %gmask dim -1 {etllm.module = "mlp"} : tensor<?x3xf32> -> tensor<?x3x1xf32>
    %gme = etllm.expand %gmu [-1, 3, 2] {etllm.module = "mlp"} : tensor<?x3x1xf32> -> tensor<?x3x2xf32>
    %gmf = etllm.reshape %gme [-1, 6] {etllm.module = "mlp"} : tensor<?x3x2xf32> -> tensor<?x6xf32>
    %keep = etllm.convert %gmf {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x6xi1>
    %drop = etllm.logical_not %keep {etllm.module = "mlp"} : tensor<?x6xi1>
    %masked = etllm.masked_fill %p, %drop, 0.000000e+00 {etllm.module = "mlp"} : (tensor<?x6xf32>, tensor<?x6xi1>) -> tensor<?x6xf32>
    %v, %sel = etllm.topk %masked k 2 {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %sc = etllm.constant {etllm.module = "mlp"} dense<2.500000e+00> : tensor<f32>
    %vs = etllm.mul %v, %sc {etllm.module = "mlp"} : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %i4 = etllm.constant {etllm.module = "mlp"} dense<4> : tensor<i64>
    %hit4 = etllm.eq %sel, %i4 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh4 = etllm.where %hit4, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w4 = etllm.sum %wh4 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw4 = etllm.parameter.get @mlp.experts.4.gate_proj.weight {etllm.module = "mlp.experts.4.gate_proj"} : tensor<2x4xf32>
    %g4 = etllm.linear %h, %gw4 {etllm.module = "mlp.experts.4.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw4 = etllm.parameter.get @mlp.experts.4.up_proj.weight {etllm.module = "mlp.experts.4.up_proj"} : tensor<2x4xf32>
    %u4 = etllm.linear %h, %uw4 {etllm.module = "mlp.experts.4.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a4 = etllm.silu %g4 {etllm.module = "mlp.experts.4.act_fn"} : tensor<?x2xf32>
    %au4 = etllm.mul %a4, %u4 {etllm.module = "mlp.experts.4"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw4 = etllm.parameter.get @mlp.experts.4.down_proj.weight {etllm.module = "mlp.experts.4.down_proj"} : tensor<4x2xf32>
    %y4 = etllm.linear %au4, %dw4 {etllm.module = "mlp.experts.4.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t4 = etllm.mul %y4, %w4 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc5 = etllm.add %acc4, %t4 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i5 = etllm.constant {etllm.module = "mlp"} dense<5> : tensor<i64>
    %hit5 = etllm.eq %sel, %i5 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh5 = etllm.where %hit5, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w5 = etllm.sum %wh5 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw5 = etllm.parameter.get @mlp.experts.5.gate_proj.weight {etllm.module = "mlp.experts.5.gate_proj"} : tensor<2x4xf32>
    %g5 = etllm.linear %h, %gw5 {etllm.module = "mlp.experts.5.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw5 = etllm.parameter.get @mlp.experts.5.up_proj.weight {etllm.module = "mlp.experts.5.up_proj"} : tensor<2x4xf32>
    %u5 = etllm.linear %h, %uw5 {etllm.module = "mlp.experts.5.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a5 = etllm.silu %g5 {etllm.module = "mlp.experts.5.act_fn"} : tensor<?x2xf32>
    %au5 = etllm.mul %a5, %u5 {etllm.module = "mlp.experts.5"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw5 = etllm.parameter.get @mlp.experts.5.down_proj.weight {etllm.module = "mlp.experts.5.down_proj"} : tensor<4x2xf32>
    %y5 = etllm.linear %au5, %dw5 {etllm.module = "mlp.experts.5.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t5 = etllm.mul %y5, %w5 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc6 = etllm.add %acc5, %t5 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %sgw = etllm.parameter.get @mlp.shared_experts.gate_proj.weight {etllm.module = "mlp.shared_experts.gate_proj"} : tensor<2x4xf32>
    %sg = etllm.linear %h, %sgw {etllm.module = "mlp.shared_experts.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %suw = etllm.parameter.get @mlp.shared_experts.up_proj.weight {etllm.module = "mlp.shared_experts.up_proj"} : tensor<2x4xf32>
    %su = etllm.linear %h, %suw {etllm.module = "mlp.shared_experts.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %sa = etllm.silu %sg {etllm.module = "mlp.shared_experts.act_fn"} : tensor<?x2xf32>
    %sau = etllm.mul %sa, %su {etllm.module = "mlp.shared_experts"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %sdw = etllm.parameter.get @mlp.shared_experts.down_proj.weight {etllm.module = "mlp.shared_experts.down_proj"} : tensor<4x2xf32>
    %sy = etllm.linear %sau, %sdw {etllm.module = "mlp.shared_experts.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %out = etllm.add %acc6, %sy {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %out : tensor<?x4xf32>
  }
}

// -----

// Greedy in bf16: the router's float32 F.linear over converted input and
// weight, renormalized with DeepSeek's + 1e-20 (a float32 constant), no scale.
// CHECK-LABEL: func.func @greedy_bf16
// CHECK: etllm.moe %{{.+}} top_k 2 scoring <softmax> norm_topk_prob norm_eps 9.9999996826552254E-21 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<6x4xbf16>, tensor<6x2x4xbf16>
// CHECK-NOT: etllm.topk
module attributes {etllm.module_classes = {mlp = "DeepseekV2Moe", mlp.experts.0 = "DeepseekV2MLP", mlp.shared_experts = "DeepseekV2MLP"}} {
  etllm.parameter @mlp.gate.weight : tensor<6x4xbf16> = dense<[[-0.08, -0.03, 0.03, 0.08], [-0.15, -0.05, 0.05, 0.15], [-0.23, -0.08, 0.08, 0.23], [-0.30, -0.10, 0.10, 0.30], [-0.38, -0.12, 0.12, 0.38], [-0.45, -0.15, 0.15, 0.45]]> : tensor<6x4xbf16>
  etllm.parameter @mlp.experts.0.gate_proj.weight : tensor<2x4xbf16> = dense<0.125> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.0.up_proj.weight : tensor<2x4xbf16> = dense<0.125> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.0.down_proj.weight : tensor<4x2xbf16> = dense<0.125> : tensor<4x2xbf16>
  etllm.parameter @mlp.experts.1.gate_proj.weight : tensor<2x4xbf16> = dense<0.25> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.1.up_proj.weight : tensor<2x4xbf16> = dense<0.25> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.1.down_proj.weight : tensor<4x2xbf16> = dense<0.25> : tensor<4x2xbf16>
  etllm.parameter @mlp.experts.2.gate_proj.weight : tensor<2x4xbf16> = dense<0.375> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.2.up_proj.weight : tensor<2x4xbf16> = dense<0.375> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.2.down_proj.weight : tensor<4x2xbf16> = dense<0.375> : tensor<4x2xbf16>
  etllm.parameter @mlp.experts.3.gate_proj.weight : tensor<2x4xbf16> = dense<0.5> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.3.up_proj.weight : tensor<2x4xbf16> = dense<0.5> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.3.down_proj.weight : tensor<4x2xbf16> = dense<0.5> : tensor<4x2xbf16>
  etllm.parameter @mlp.experts.4.gate_proj.weight : tensor<2x4xbf16> = dense<0.625> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.4.up_proj.weight : tensor<2x4xbf16> = dense<0.625> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.4.down_proj.weight : tensor<4x2xbf16> = dense<0.625> : tensor<4x2xbf16>
  etllm.parameter @mlp.experts.5.gate_proj.weight : tensor<2x4xbf16> = dense<0.75> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.5.up_proj.weight : tensor<2x4xbf16> = dense<0.75> : tensor<2x4xbf16>
  etllm.parameter @mlp.experts.5.down_proj.weight : tensor<4x2xbf16> = dense<0.75> : tensor<4x2xbf16>
  etllm.parameter @mlp.shared_experts.gate_proj.weight : tensor<2x4xbf16> = dense<0.5> : tensor<2x4xbf16>
  etllm.parameter @mlp.shared_experts.up_proj.weight : tensor<2x4xbf16> = dense<0.5> : tensor<2x4xbf16>
  etllm.parameter @mlp.shared_experts.down_proj.weight : tensor<4x2xbf16> = dense<0.5> : tensor<4x2xbf16>
  func.func @greedy_bf16(%h: tensor<?x4xbf16>) -> tensor<?x4xbf16> {
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp"} : tensor<6x4xbf16>
    %hf = etllm.convert %h {etllm.module = "mlp"} : tensor<?x4xbf16> -> tensor<?x4xf32>
    %rwf = etllm.convert %rw {etllm.module = "mlp"} : tensor<6x4xbf16> -> tensor<6x4xf32>
    %logits = etllm.linear %hf, %rwf {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<6x4xf32>) -> tensor<?x6xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x6xf32>
    %v, %sel = etllm.topk %p k 2 {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %s = etllm.sum %v dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %eps = etllm.constant {etllm.module = "mlp"} dense<1.000000e-20> : tensor<f32>
    %se = etllm.add %s, %eps {etllm.module = "mlp"} : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    %vn = etllm.div %v, %se {etllm.module = "mlp"} : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
    %vt = etllm.convert %vn {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x2xbf16>
    %acc0 = etllm.full_like %h, 0.000000e+00 {etllm.module = "mlp"} : tensor<?x4xbf16> -> tensor<?x4xbf16>
    %zero = etllm.constant {etllm.module = "mlp"} dense<0.000000e+00> : tensor<bf16>
    %i0 = etllm.constant {etllm.module = "mlp"} dense<0> : tensor<i64>
    %hit0 = etllm.eq %sel, %i0 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh0 = etllm.where %hit0, %vt, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xbf16>, tensor<bf16>) -> tensor<?x2xbf16>
    %w0 = etllm.sum %wh0 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xbf16> -> tensor<?x1xbf16>
    %gw0 = etllm.parameter.get @mlp.experts.0.gate_proj.weight {etllm.module = "mlp.experts.0.gate_proj"} : tensor<2x4xbf16>
    %g0 = etllm.linear %h, %gw0 {etllm.module = "mlp.experts.0.gate_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %uw0 = etllm.parameter.get @mlp.experts.0.up_proj.weight {etllm.module = "mlp.experts.0.up_proj"} : tensor<2x4xbf16>
    %u0 = etllm.linear %h, %uw0 {etllm.module = "mlp.experts.0.up_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %a0 = etllm.silu %g0 {etllm.module = "mlp.experts.0.act_fn"} : tensor<?x2xbf16>
    %au0 = etllm.mul %a0, %u0 {etllm.module = "mlp.experts.0"} : (tensor<?x2xbf16>, tensor<?x2xbf16>) -> tensor<?x2xbf16>
    %dw0 = etllm.parameter.get @mlp.experts.0.down_proj.weight {etllm.module = "mlp.experts.0.down_proj"} : tensor<4x2xbf16>
    %y0 = etllm.linear %au0, %dw0 {etllm.module = "mlp.experts.0.down_proj"} : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
    %t0 = etllm.mul %y0, %w0 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x1xbf16>) -> tensor<?x4xbf16>
    %acc1 = etllm.add %acc0, %t0 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x4xbf16>) -> tensor<?x4xbf16>
    %i1 = etllm.constant {etllm.module = "mlp"} dense<1> : tensor<i64>
    %hit1 = etllm.eq %sel, %i1 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh1 = etllm.where %hit1, %vt, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xbf16>, tensor<bf16>) -> tensor<?x2xbf16>
    %w1 = etllm.sum %wh1 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xbf16> -> tensor<?x1xbf16>
    %gw1 = etllm.parameter.get @mlp.experts.1.gate_proj.weight {etllm.module = "mlp.experts.1.gate_proj"} : tensor<2x4xbf16>
    %g1 = etllm.linear %h, %gw1 {etllm.module = "mlp.experts.1.gate_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %uw1 = etllm.parameter.get @mlp.experts.1.up_proj.weight {etllm.module = "mlp.experts.1.up_proj"} : tensor<2x4xbf16>
    %u1 = etllm.linear %h, %uw1 {etllm.module = "mlp.experts.1.up_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %a1 = etllm.silu %g1 {etllm.module = "mlp.experts.1.act_fn"} : tensor<?x2xbf16>
    %au1 = etllm.mul %a1, %u1 {etllm.module = "mlp.experts.1"} : (tensor<?x2xbf16>, tensor<?x2xbf16>) -> tensor<?x2xbf16>
    %dw1 = etllm.parameter.get @mlp.experts.1.down_proj.weight {etllm.module = "mlp.experts.1.down_proj"} : tensor<4x2xbf16>
    %y1 = etllm.linear %au1, %dw1 {etllm.module = "mlp.experts.1.down_proj"} : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
    %t1 = etllm.mul %y1, %w1 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x1xbf16>) -> tensor<?x4xbf16>
    %acc2 = etllm.add %acc1, %t1 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x4xbf16>) -> tensor<?x4xbf16>
    %i2 = etllm.constant {etllm.module = "mlp"} dense<2> : tensor<i64>
    %hit2 = etllm.eq %sel, %i2 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh2 = etllm.where %hit2, %vt, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xbf16>, tensor<bf16>) -> tensor<?x2xbf16>
    %w2 = etllm.sum %wh2 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xbf16> -> tensor<?x1xbf16>
    %gw2 = etllm.parameter.get @mlp.experts.2.gate_proj.weight {etllm.module = "mlp.experts.2.gate_proj"} : tensor<2x4xbf16>
    %g2 = etllm.linear %h, %gw2 {etllm.module = "mlp.experts.2.gate_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %uw2 = etllm.parameter.get @mlp.experts.2.up_proj.weight {etllm.module = "mlp.experts.2.up_proj"} : tensor<2x4xbf16>
    %u2 = etllm.linear %h, %uw2 {etllm.module = "mlp.experts.2.up_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %a2 = etllm.silu %g2 {etllm.module = "mlp.experts.2.act_fn"} : tensor<?x2xbf16>
    %au2 = etllm.mul %a2, %u2 {etllm.module = "mlp.experts.2"} : (tensor<?x2xbf16>, tensor<?x2xbf16>) -> tensor<?x2xbf16>
    %dw2 = etllm.parameter.get @mlp.experts.2.down_proj.weight {etllm.module = "mlp.experts.2.down_proj"} : tensor<4x2xbf16>
    %y2 = etllm.linear %au2, %dw2 {etllm.module = "mlp.experts.2.down_proj"} : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
    %t2 = etllm.mul %y2, %w2 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x1xbf16>) -> tensor<?x4xbf16>
    %acc3 = etllm.add %acc2, %t2 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x4xbf16>) -> tensor<?x4xbf16>
    %i3 = etllm.constant {etllm.module = "mlp"} dense<3> : tensor<i64>
    %hit3 = etllm.eq %sel, %i3 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh3 = etllm.where %hit3, %vt, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xbf16>, tensor<bf16>) -> tensor<?x2xbf16>
    %w3 = etllm.sum %wh3 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xbf16> -> tensor<?x1xbf16>
    %gw3 = etllm.parameter.get @mlp.experts.3.gate_proj.weight {etllm.module = "mlp.experts.3.gate_proj"} : tensor<2x4xbf16>
    %g3 = etllm.linear %h, %gw3 {etllm.module = "mlp.experts.3.gate_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %uw3 = etllm.parameter.get @mlp.experts.3.up_proj.weight {etllm.module = "mlp.experts.3.up_proj"} : tensor<2x4xbf16>
    %u3 = etllm.linear %h, %uw3 {etllm.module = "mlp.experts.3.up_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %a3 = etllm.silu %g3 {etllm.module = "mlp.experts.3.act_fn"} : tensor<?x2xbf16>
    %au3 = etllm.mul %a3, %u3 {etllm.module = "mlp.experts.3"} : (tensor<?x2xbf16>, tensor<?x2xbf16>) -> tensor<?x2xbf16>
    %dw3 = etllm.parameter.get @mlp.experts.3.down_proj.weight {etllm.module = "mlp.experts.3.down_proj"} : tensor<4x2xbf16>
    %y3 = etllm.linear %au3, %dw3 {etllm.module = "mlp.experts.3.down_proj"} : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
    %t3 = etllm.mul %y3, %w3 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x1xbf16>) -> tensor<?x4xbf16>
    %acc4 = etllm.add %acc3, %t3 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x4xbf16>) -> tensor<?x4xbf16>
    %i4 = etllm.constant {etllm.module = "mlp"} dense<4> : tensor<i64>
    %hit4 = etllm.eq %sel, %i4 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh4 = etllm.where %hit4, %vt, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xbf16>, tensor<bf16>) -> tensor<?x2xbf16>
    %w4 = etllm.sum %wh4 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xbf16> -> tensor<?x1xbf16>
    %gw4 = etllm.parameter.get @mlp.experts.4.gate_proj.weight {etllm.module = "mlp.experts.4.gate_proj"} : tensor<2x4xbf16>
    %g4 = etllm.linear %h, %gw4 {etllm.module = "mlp.experts.4.gate_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %uw4 = etllm.parameter.get @mlp.experts.4.up_proj.weight {etllm.module = "mlp.experts.4.up_proj"} : tensor<2x4xbf16>
    %u4 = etllm.linear %h, %uw4 {etllm.module = "mlp.experts.4.up_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %a4 = etllm.silu %g4 {etllm.module = "mlp.experts.4.act_fn"} : tensor<?x2xbf16>
    %au4 = etllm.mul %a4, %u4 {etllm.module = "mlp.experts.4"} : (tensor<?x2xbf16>, tensor<?x2xbf16>) -> tensor<?x2xbf16>
    %dw4 = etllm.parameter.get @mlp.experts.4.down_proj.weight {etllm.module = "mlp.experts.4.down_proj"} : tensor<4x2xbf16>
    %y4 = etllm.linear %au4, %dw4 {etllm.module = "mlp.experts.4.down_proj"} : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
    %t4 = etllm.mul %y4, %w4 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x1xbf16>) -> tensor<?x4xbf16>
    %acc5 = etllm.add %acc4, %t4 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x4xbf16>) -> tensor<?x4xbf16>
    %i5 = etllm.constant {etllm.module = "mlp"} dense<5> : tensor<i64>
    %hit5 = etllm.eq %sel, %i5 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh5 = etllm.where %hit5, %vt, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xbf16>, tensor<bf16>) -> tensor<?x2xbf16>
    %w5 = etllm.sum %wh5 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xbf16> -> tensor<?x1xbf16>
    %gw5 = etllm.parameter.get @mlp.experts.5.gate_proj.weight {etllm.module = "mlp.experts.5.gate_proj"} : tensor<2x4xbf16>
    %g5 = etllm.linear %h, %gw5 {etllm.module = "mlp.experts.5.gate_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %uw5 = etllm.parameter.get @mlp.experts.5.up_proj.weight {etllm.module = "mlp.experts.5.up_proj"} : tensor<2x4xbf16>
    %u5 = etllm.linear %h, %uw5 {etllm.module = "mlp.experts.5.up_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %a5 = etllm.silu %g5 {etllm.module = "mlp.experts.5.act_fn"} : tensor<?x2xbf16>
    %au5 = etllm.mul %a5, %u5 {etllm.module = "mlp.experts.5"} : (tensor<?x2xbf16>, tensor<?x2xbf16>) -> tensor<?x2xbf16>
    %dw5 = etllm.parameter.get @mlp.experts.5.down_proj.weight {etllm.module = "mlp.experts.5.down_proj"} : tensor<4x2xbf16>
    %y5 = etllm.linear %au5, %dw5 {etllm.module = "mlp.experts.5.down_proj"} : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
    %t5 = etllm.mul %y5, %w5 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x1xbf16>) -> tensor<?x4xbf16>
    %acc6 = etllm.add %acc5, %t5 {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x4xbf16>) -> tensor<?x4xbf16>
    %sgw = etllm.parameter.get @mlp.shared_experts.gate_proj.weight {etllm.module = "mlp.shared_experts.gate_proj"} : tensor<2x4xbf16>
    %sg = etllm.linear %h, %sgw {etllm.module = "mlp.shared_experts.gate_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %suw = etllm.parameter.get @mlp.shared_experts.up_proj.weight {etllm.module = "mlp.shared_experts.up_proj"} : tensor<2x4xbf16>
    %su = etllm.linear %h, %suw {etllm.module = "mlp.shared_experts.up_proj"} : (tensor<?x4xbf16>, tensor<2x4xbf16>) -> tensor<?x2xbf16>
    %sa = etllm.silu %sg {etllm.module = "mlp.shared_experts.act_fn"} : tensor<?x2xbf16>
    %sau = etllm.mul %sa, %su {etllm.module = "mlp.shared_experts"} : (tensor<?x2xbf16>, tensor<?x2xbf16>) -> tensor<?x2xbf16>
    %sdw = etllm.parameter.get @mlp.shared_experts.down_proj.weight {etllm.module = "mlp.shared_experts.down_proj"} : tensor<4x2xbf16>
    %sy = etllm.linear %sau, %sdw {etllm.module = "mlp.shared_experts.down_proj"} : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
    %out = etllm.add %acc6, %sy {etllm.module = "mlp"} : (tensor<?x4xbf16>, tensor<?x4xbf16>) -> tensor<?x4xbf16>
    return %out : tensor<?x4xbf16>
  }
}

// -----

// The groups ranked by the sum of their scores, not their best: left alone.
// CHECK-LABEL: func.func @ranked_by_sum
// CHECK-NOT: etllm.moe
// CHECK: etllm.masked_fill
module attributes {etllm.module_classes = {mlp = "DeepseekV2Moe", mlp.experts.0 = "DeepseekV2MLP", mlp.shared_experts = "DeepseekV2MLP"}} {
  etllm.parameter @mlp.gate.weight : tensor<6x4xf32> = dense<[[-0.08, -0.03, 0.03, 0.08], [-0.15, -0.05, 0.05, 0.15], [-0.23, -0.08, 0.08, 0.23], [-0.30, -0.10, 0.10, 0.30], [-0.38, -0.12, 0.12, 0.38], [-0.45, -0.15, 0.15, 0.45]]> : tensor<6x4xf32>
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
  etllm.parameter @mlp.experts.4.gate_proj.weight : tensor<2x4xf32> = dense<0.625> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.4.up_proj.weight : tensor<2x4xf32> = dense<0.625> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.4.down_proj.weight : tensor<4x2xf32> = dense<0.625> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.5.gate_proj.weight : tensor<2x4xf32> = dense<0.75> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.5.up_proj.weight : tensor<2x4xf32> = dense<0.75> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.5.down_proj.weight : tensor<4x2xf32> = dense<0.75> : tensor<4x2xf32>
  etllm.parameter @mlp.shared_experts.gate_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.shared_experts.up_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.shared_experts.down_proj.weight : tensor<4x2xf32> = dense<0.5> : tensor<4x2xf32>
  func.func @ranked_by_sum(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left DeepseekV2Moe instance 'mlp' alone: the group-limited selection: the groups are not ranked by their best score (amax over each group of the masked scores)}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp"} : tensor<6x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<6x4xf32>) -> tensor<?x6xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x6xf32>
    %grouped = etllm.reshape %p [-1, 3, 2] {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x3x2xf32>
    %best = etllm.sum %grouped dims [-1] {etllm.module = "mlp"} : tensor<?x3x2xf32> -> tensor<?x3xf32>
    %gv, %gi = etllm.topk %best k 2 {etllm.module = "mlp"} : tensor<?x3xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %groups = etllm.arange 0 to 3 {etllm.module = "mlp"} : tensor<3xi64>
    %giu = etllm.unsqueeze %gi dim -1 {etllm.module = "mlp"} : tensor<?x2xi64> -> tensor<?x2x1xi64>
    %hit = etllm.eq %giu, %groups {etllm.module = "mlp"} : (tensor<?x2x1xi64>, tensor<3xi64>) -> tensor<?x2x3xi1>
    %hitf = etllm.convert %hit {etllm.module = "mlp"} : tensor<?x2x3xi1> -> tensor<?x2x3xf32>
    %gmask = etllm.sum %hitf dims [1] {etllm.module = "mlp"} : tensor<?x2x3xf32> -> tensor<?x3xf32>
    %gmu = etllm.unsqueeze %gmask dim -1 {etllm.module = "mlp"} : tensor<?x3xf32> -> tensor<?x3x1xf32>
    %gme = etllm.expand %gmu [-1, 3, 2] {etllm.module = "mlp"} : tensor<?x3x1xf32> -> tensor<?x3x2xf32>
    %gmf = etllm.reshape %gme [-1, 6] {etllm.module = "mlp"} : tensor<?x3x2xf32> -> tensor<?x6xf32>
    %keep = etllm.convert %gmf {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x6xi1>
    %drop = etllm.logical_not %keep {etllm.module = "mlp"} : tensor<?x6xi1>
    %masked = etllm.masked_fill %p, %drop, 0.000000e+00 {etllm.module = "mlp"} : (tensor<?x6xf32>, tensor<?x6xi1>) -> tensor<?x6xf32>
    %v, %sel = etllm.topk %masked k 2 {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %sc = etllm.constant {etllm.module = "mlp"} dense<2.500000e+00> : tensor<f32>
    %vs = etllm.mul %v, %sc {etllm.module = "mlp"} : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %i4 = etllm.constant {etllm.module = "mlp"} dense<4> : tensor<i64>
    %hit4 = etllm.eq %sel, %i4 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh4 = etllm.where %hit4, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w4 = etllm.sum %wh4 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw4 = etllm.parameter.get @mlp.experts.4.gate_proj.weight {etllm.module = "mlp.experts.4.gate_proj"} : tensor<2x4xf32>
    %g4 = etllm.linear %h, %gw4 {etllm.module = "mlp.experts.4.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw4 = etllm.parameter.get @mlp.experts.4.up_proj.weight {etllm.module = "mlp.experts.4.up_proj"} : tensor<2x4xf32>
    %u4 = etllm.linear %h, %uw4 {etllm.module = "mlp.experts.4.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a4 = etllm.silu %g4 {etllm.module = "mlp.experts.4.act_fn"} : tensor<?x2xf32>
    %au4 = etllm.mul %a4, %u4 {etllm.module = "mlp.experts.4"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw4 = etllm.parameter.get @mlp.experts.4.down_proj.weight {etllm.module = "mlp.experts.4.down_proj"} : tensor<4x2xf32>
    %y4 = etllm.linear %au4, %dw4 {etllm.module = "mlp.experts.4.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t4 = etllm.mul %y4, %w4 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc5 = etllm.add %acc4, %t4 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i5 = etllm.constant {etllm.module = "mlp"} dense<5> : tensor<i64>
    %hit5 = etllm.eq %sel, %i5 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh5 = etllm.where %hit5, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w5 = etllm.sum %wh5 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw5 = etllm.parameter.get @mlp.experts.5.gate_proj.weight {etllm.module = "mlp.experts.5.gate_proj"} : tensor<2x4xf32>
    %g5 = etllm.linear %h, %gw5 {etllm.module = "mlp.experts.5.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw5 = etllm.parameter.get @mlp.experts.5.up_proj.weight {etllm.module = "mlp.experts.5.up_proj"} : tensor<2x4xf32>
    %u5 = etllm.linear %h, %uw5 {etllm.module = "mlp.experts.5.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a5 = etllm.silu %g5 {etllm.module = "mlp.experts.5.act_fn"} : tensor<?x2xf32>
    %au5 = etllm.mul %a5, %u5 {etllm.module = "mlp.experts.5"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw5 = etllm.parameter.get @mlp.experts.5.down_proj.weight {etllm.module = "mlp.experts.5.down_proj"} : tensor<4x2xf32>
    %y5 = etllm.linear %au5, %dw5 {etllm.module = "mlp.experts.5.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t5 = etllm.mul %y5, %w5 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc6 = etllm.add %acc5, %t5 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %sgw = etllm.parameter.get @mlp.shared_experts.gate_proj.weight {etllm.module = "mlp.shared_experts.gate_proj"} : tensor<2x4xf32>
    %sg = etllm.linear %h, %sgw {etllm.module = "mlp.shared_experts.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %suw = etllm.parameter.get @mlp.shared_experts.up_proj.weight {etllm.module = "mlp.shared_experts.up_proj"} : tensor<2x4xf32>
    %su = etllm.linear %h, %suw {etllm.module = "mlp.shared_experts.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %sa = etllm.silu %sg {etllm.module = "mlp.shared_experts.act_fn"} : tensor<?x2xf32>
    %sau = etllm.mul %sa, %su {etllm.module = "mlp.shared_experts"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %sdw = etllm.parameter.get @mlp.shared_experts.down_proj.weight {etllm.module = "mlp.shared_experts.down_proj"} : tensor<4x2xf32>
    %sy = etllm.linear %sau, %sdw {etllm.module = "mlp.shared_experts.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %out = etllm.add %acc6, %sy {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %out : tensor<?x4xf32>
  }
}

// -----

// The dropped experts filled with -1, not 0: left alone.
// CHECK-LABEL: func.func @fill_not_zero
// CHECK-NOT: etllm.moe
// CHECK: etllm.masked_fill
module attributes {etllm.module_classes = {mlp = "DeepseekV2Moe", mlp.experts.0 = "DeepseekV2MLP", mlp.shared_experts = "DeepseekV2MLP"}} {
  etllm.parameter @mlp.gate.weight : tensor<6x4xf32> = dense<[[-0.08, -0.03, 0.03, 0.08], [-0.15, -0.05, 0.05, 0.15], [-0.23, -0.08, 0.08, 0.23], [-0.30, -0.10, 0.10, 0.30], [-0.38, -0.12, 0.12, 0.38], [-0.45, -0.15, 0.15, 0.45]]> : tensor<6x4xf32>
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
  etllm.parameter @mlp.experts.4.gate_proj.weight : tensor<2x4xf32> = dense<0.625> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.4.up_proj.weight : tensor<2x4xf32> = dense<0.625> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.4.down_proj.weight : tensor<4x2xf32> = dense<0.625> : tensor<4x2xf32>
  etllm.parameter @mlp.experts.5.gate_proj.weight : tensor<2x4xf32> = dense<0.75> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.5.up_proj.weight : tensor<2x4xf32> = dense<0.75> : tensor<2x4xf32>
  etllm.parameter @mlp.experts.5.down_proj.weight : tensor<4x2xf32> = dense<0.75> : tensor<4x2xf32>
  etllm.parameter @mlp.shared_experts.gate_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.shared_experts.up_proj.weight : tensor<2x4xf32> = dense<0.5> : tensor<2x4xf32>
  etllm.parameter @mlp.shared_experts.down_proj.weight : tensor<4x2xf32> = dense<0.5> : tensor<4x2xf32>
  func.func @fill_not_zero(%h: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-remark @+1 {{left DeepseekV2Moe instance 'mlp' alone: the group-limited selection: the scores are not masked_fill(scores, mask, 0)}}
    %rw = etllm.parameter.get @mlp.gate.weight {etllm.module = "mlp"} : tensor<6x4xf32>
    %logits = etllm.linear %h, %rw {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<6x4xf32>) -> tensor<?x6xf32>
    %p = etllm.softmax %logits dim 1 {etllm.module = "mlp"} : tensor<?x6xf32>
    %grouped = etllm.reshape %p [-1, 3, 2] {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x3x2xf32>
    %best = etllm.amax %grouped dims [-1] {etllm.module = "mlp"} : tensor<?x3x2xf32> -> tensor<?x3xf32>
    %gv, %gi = etllm.topk %best k 2 {etllm.module = "mlp"} : tensor<?x3xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %groups = etllm.arange 0 to 3 {etllm.module = "mlp"} : tensor<3xi64>
    %giu = etllm.unsqueeze %gi dim -1 {etllm.module = "mlp"} : tensor<?x2xi64> -> tensor<?x2x1xi64>
    %hit = etllm.eq %giu, %groups {etllm.module = "mlp"} : (tensor<?x2x1xi64>, tensor<3xi64>) -> tensor<?x2x3xi1>
    %hitf = etllm.convert %hit {etllm.module = "mlp"} : tensor<?x2x3xi1> -> tensor<?x2x3xf32>
    %gmask = etllm.sum %hitf dims [1] {etllm.module = "mlp"} : tensor<?x2x3xf32> -> tensor<?x3xf32>
    %gmu = etllm.unsqueeze %gmask dim -1 {etllm.module = "mlp"} : tensor<?x3xf32> -> tensor<?x3x1xf32>
    %gme = etllm.expand %gmu [-1, 3, 2] {etllm.module = "mlp"} : tensor<?x3x1xf32> -> tensor<?x3x2xf32>
    %gmf = etllm.reshape %gme [-1, 6] {etllm.module = "mlp"} : tensor<?x3x2xf32> -> tensor<?x6xf32>
    %keep = etllm.convert %gmf {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x6xi1>
    %drop = etllm.logical_not %keep {etllm.module = "mlp"} : tensor<?x6xi1>
    %masked = etllm.masked_fill %p, %drop, -1.000000e+00 {etllm.module = "mlp"} : (tensor<?x6xf32>, tensor<?x6xi1>) -> tensor<?x6xf32>
    %v, %sel = etllm.topk %masked k 2 {etllm.module = "mlp"} : tensor<?x6xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
    %sc = etllm.constant {etllm.module = "mlp"} dense<2.500000e+00> : tensor<f32>
    %vs = etllm.mul %v, %sc {etllm.module = "mlp"} : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
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
    %i4 = etllm.constant {etllm.module = "mlp"} dense<4> : tensor<i64>
    %hit4 = etllm.eq %sel, %i4 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh4 = etllm.where %hit4, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w4 = etllm.sum %wh4 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw4 = etllm.parameter.get @mlp.experts.4.gate_proj.weight {etllm.module = "mlp.experts.4.gate_proj"} : tensor<2x4xf32>
    %g4 = etllm.linear %h, %gw4 {etllm.module = "mlp.experts.4.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw4 = etllm.parameter.get @mlp.experts.4.up_proj.weight {etllm.module = "mlp.experts.4.up_proj"} : tensor<2x4xf32>
    %u4 = etllm.linear %h, %uw4 {etllm.module = "mlp.experts.4.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a4 = etllm.silu %g4 {etllm.module = "mlp.experts.4.act_fn"} : tensor<?x2xf32>
    %au4 = etllm.mul %a4, %u4 {etllm.module = "mlp.experts.4"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw4 = etllm.parameter.get @mlp.experts.4.down_proj.weight {etllm.module = "mlp.experts.4.down_proj"} : tensor<4x2xf32>
    %y4 = etllm.linear %au4, %dw4 {etllm.module = "mlp.experts.4.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t4 = etllm.mul %y4, %w4 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc5 = etllm.add %acc4, %t4 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %i5 = etllm.constant {etllm.module = "mlp"} dense<5> : tensor<i64>
    %hit5 = etllm.eq %sel, %i5 {etllm.module = "mlp"} : (tensor<?x2xi64>, tensor<i64>) -> tensor<?x2xi1>
    %wh5 = etllm.where %hit5, %vs, %zero {etllm.module = "mlp"} : (tensor<?x2xi1>, tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
    %w5 = etllm.sum %wh5 dims [-1] keepdim {etllm.module = "mlp"} : tensor<?x2xf32> -> tensor<?x1xf32>
    %gw5 = etllm.parameter.get @mlp.experts.5.gate_proj.weight {etllm.module = "mlp.experts.5.gate_proj"} : tensor<2x4xf32>
    %g5 = etllm.linear %h, %gw5 {etllm.module = "mlp.experts.5.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %uw5 = etllm.parameter.get @mlp.experts.5.up_proj.weight {etllm.module = "mlp.experts.5.up_proj"} : tensor<2x4xf32>
    %u5 = etllm.linear %h, %uw5 {etllm.module = "mlp.experts.5.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %a5 = etllm.silu %g5 {etllm.module = "mlp.experts.5.act_fn"} : tensor<?x2xf32>
    %au5 = etllm.mul %a5, %u5 {etllm.module = "mlp.experts.5"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %dw5 = etllm.parameter.get @mlp.experts.5.down_proj.weight {etllm.module = "mlp.experts.5.down_proj"} : tensor<4x2xf32>
    %y5 = etllm.linear %au5, %dw5 {etllm.module = "mlp.experts.5.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %t5 = etllm.mul %y5, %w5 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    %acc6 = etllm.add %acc5, %t5 {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %sgw = etllm.parameter.get @mlp.shared_experts.gate_proj.weight {etllm.module = "mlp.shared_experts.gate_proj"} : tensor<2x4xf32>
    %sg = etllm.linear %h, %sgw {etllm.module = "mlp.shared_experts.gate_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %suw = etllm.parameter.get @mlp.shared_experts.up_proj.weight {etllm.module = "mlp.shared_experts.up_proj"} : tensor<2x4xf32>
    %su = etllm.linear %h, %suw {etllm.module = "mlp.shared_experts.up_proj"} : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    %sa = etllm.silu %sg {etllm.module = "mlp.shared_experts.act_fn"} : tensor<?x2xf32>
    %sau = etllm.mul %sa, %su {etllm.module = "mlp.shared_experts"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %sdw = etllm.parameter.get @mlp.shared_experts.down_proj.weight {etllm.module = "mlp.shared_experts.down_proj"} : tensor<4x2xf32>
    %sy = etllm.linear %sau, %sdw {etllm.module = "mlp.shared_experts.down_proj"} : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
    %out = etllm.add %acc6, %sy {etllm.module = "mlp"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %out : tensor<?x4xf32>
  }
}
