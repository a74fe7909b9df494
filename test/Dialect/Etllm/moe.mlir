// RUN: etllm-opt %s --split-input-file --verify-diagnostics | etllm-opt --split-input-file | FileCheck %s
// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: sed '/^\/\/ -----/q' %s > %t.first.mlir
// RUN: etllm-translate --mlir-to-pte %t.first.mlir -o %t.pte
// RUN: etllm-translate --pte-to-text %t.pte | FileCheck %s --check-prefix=PTE
// etllm.moe: round trip, the memory plan, the kernel call, and the near
// misses of its verifier.

// A Mixtral-style block (softmax, top-2, renormalized) over float experts,
// a DeepSeek-V3-style one (sigmoid, bias, groups, scale) over quantized
// experts.
// CHECK-LABEL: func.func @forward
// CHECK: = etllm.moe %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} top_k 2 scoring <softmax> norm_topk_prob : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>) -> tensor<?x4xf32>
// CHECK: = etllm.moe %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} bias %{{.+}} top_k 3 scoring <sigmoid> method <noaux_tc> groups 2 topk_group 2 norm_topk_prob norm_eps 9.9999999999999995E-21 scale 2.500000e+00 : (tensor<?x4xf32>, tensor<4x4xf32>, !etllm.qweight<4x2x4, i4, group 4, sym, f32>, !etllm.qweight<4x2x4, i4, group 4, sym, f32>, tensor<4x4x2xf32>, tensor<4xf32>) -> tensor<?x4xf32>
// PLAN: etllm.moe {{.*}} {etllm.plan = [#etllm.slot<{{.*}}>]}
// PTE: moe(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) ints [2, 0, 0, 1, 1, 1, 0] floats [1, 0] -> %{{[0-9]+}}
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 4>} {
  etllm.parameter @router : tensor<3x4xf32> = dense<0.5> : tensor<3x4xf32>
  etllm.parameter @up : tensor<3x2x4xf32> = dense<0.25> : tensor<3x2x4xf32>
  etllm.parameter @down : tensor<3x4x2xf32> = dense<0.125> : tensor<3x4x2xf32>
  func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %r = etllm.parameter.get @router : tensor<3x4xf32>
    %g = etllm.parameter.get @up : tensor<3x2x4xf32>
    %u = etllm.parameter.get @up : tensor<3x2x4xf32>
    %d = etllm.parameter.get @down : tensor<3x4x2xf32>
    %y = etllm.moe %x, %r, %g, %u, %d top_k 2 scoring <softmax> norm_topk_prob
        : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>) -> tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
  func.func @deepseek(%x: tensor<?x4xf32>, %r: tensor<4x4xf32>,
                      %g: !etllm.qweight<4x2x4, i4, group 4, sym, f32>,
                      %d: tensor<4x4x2xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
    %y = etllm.moe %x, %r, %g, %g, %d bias %b top_k 3 scoring <sigmoid>
        method <noaux_tc> groups 2 topk_group 2 norm_topk_prob norm_eps 1.0e-20 scale 2.5
        : (tensor<?x4xf32>, tensor<4x4xf32>, !etllm.qweight<4x2x4, i4, group 4, sym, f32>, !etllm.qweight<4x2x4, i4, group 4, sym, f32>, tensor<4x4x2xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}

// -----

// A stacked parameter: one checkpoint tensor per expert, in order.
// CHECK: etllm.parameter @experts.gate_proj.weight : tensor<3x2x4xf32> {stack = ["experts.0.gate_proj.weight", "experts.1.gate_proj.weight", "experts.2.gate_proj.weight"]}
etllm.parameter @experts.gate_proj.weight : tensor<3x2x4xf32> {stack = ["experts.0.gate_proj.weight", "experts.1.gate_proj.weight", "experts.2.gate_proj.weight"]}

// -----

func.func @top_k_too_large(%x: tensor<?x4xf32>, %r: tensor<3x4xf32>, %g: tensor<3x2x4xf32>, %d: tensor<3x4x2xf32>) {
  // expected-error @+1 {{top_k 4 must be in [1, 3]}}
  %y = etllm.moe %x, %r, %g, %g, %d top_k 4 scoring <softmax>
      : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @router_width(%x: tensor<?x4xf32>, %r: tensor<3x5xf32>, %g: tensor<3x2x4xf32>, %d: tensor<3x4x2xf32>) {
  // expected-error @+1 {{router must be [experts, 4], got [3, 5]}}
  %y = etllm.moe %x, %r, %g, %g, %d top_k 1 scoring <softmax>
      : (tensor<?x4xf32>, tensor<3x5xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>) -> tensor<?x4xf32>
  return
}

// -----

// One expert too few in the stacked gate.
func.func @gate_experts(%x: tensor<?x4xf32>, %r: tensor<3x4xf32>, %g: tensor<2x2x4xf32>, %u: tensor<3x2x4xf32>, %d: tensor<3x4x2xf32>) {
  // expected-error @+1 {{gate must be [3, F, 4], got [2, 2, 4]}}
  %y = etllm.moe %x, %r, %g, %u, %d top_k 1 scoring <softmax>
      : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<2x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>) -> tensor<?x4xf32>
  return
}

// -----

// down is [E, D, F], not gate's [E, F, D].
func.func @down_transposed(%x: tensor<?x4xf32>, %r: tensor<3x4xf32>, %g: tensor<3x2x4xf32>) {
  // expected-error @+1 {{down must be [3, 4, 2], got [3, 2, 4]}}
  %y = etllm.moe %x, %r, %g, %g, %g top_k 1 scoring <softmax>
      : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @groups_do_not_divide(%x: tensor<?x4xf32>, %r: tensor<3x4xf32>, %g: tensor<3x2x4xf32>, %d: tensor<3x4x2xf32>) {
  // expected-error @+1 {{n_group 2 must divide the 3 experts}}
  %y = etllm.moe %x, %r, %g, %g, %d top_k 1 scoring <softmax> method <group_limited_greedy> groups 2
      : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @greedy_with_groups(%x: tensor<?x4xf32>, %r: tensor<4x4xf32>, %g: tensor<4x2x4xf32>, %d: tensor<4x4x2xf32>) {
  // expected-error @+1 {{greedy routing has no groups}}
  %y = etllm.moe %x, %r, %g, %g, %d top_k 1 scoring <softmax> groups 2
      : (tensor<?x4xf32>, tensor<4x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32>) -> tensor<?x4xf32>
  return
}

// -----

// Two groups of two, one kept: at most 2 experts can be selected.
func.func @top_k_beyond_groups(%x: tensor<?x4xf32>, %r: tensor<4x4xf32>, %g: tensor<4x2x4xf32>, %d: tensor<4x4x2xf32>) {
  // expected-error @+1 {{top_k 3 is more than the 2 experts of the topk_group groups}}
  %y = etllm.moe %x, %r, %g, %g, %d top_k 3 scoring <softmax> method <group_limited_greedy> groups 2 topk_group 1
      : (tensor<?x4xf32>, tensor<4x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @bias_size(%x: tensor<?x4xf32>, %r: tensor<3x4xf32>, %g: tensor<3x2x4xf32>, %d: tensor<3x4x2xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{score_bias must be [3], got [4]}}
  %y = etllm.moe %x, %r, %g, %g, %d bias %b top_k 1 scoring <sigmoid>
      : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

// The router has no quantized form (routers stay float).
func.func @quantized_router(%x: tensor<?x4xf32>, %r: !etllm.qweight<3x4, i4, group 4, sym, f32>, %g: tensor<3x2x4xf32>, %d: tensor<3x4x2xf32>) {
  // expected-error @+1 {{operand #1 must be}}
  %y = etllm.moe %x, %r, %g, %g, %d top_k 1 scoring <softmax>
      : (tensor<?x4xf32>, !etllm.qweight<3x4, i4, group 4, sym, f32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @result_type(%x: tensor<?x4xf32>, %r: tensor<3x4xf32>, %g: tensor<3x2x4xf32>, %d: tensor<3x4x2xf32>) {
  // expected-error @+1 {{all of {input, result} have same type}}
  %y = etllm.moe %x, %r, %g, %g, %d top_k 1 scoring <softmax>
      : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>) -> tensor<?x4xf16>
  return
}

// -----

// A stacked parameter names one tensor per expert.
// expected-error @+1 {{stack of 2 tensors does not match the leading dimension of 'tensor<3x2x4xf32>'}}
etllm.parameter @bad_stack : tensor<3x2x4xf32> {stack = ["a", "b"]}
