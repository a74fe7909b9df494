// RUN: etllm-opt %s --split-input-file --verify-diagnostics | etllm-opt --split-input-file | FileCheck %s
// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: sed '/^\/\/ -----/q' %s > %t.first.mlir
// RUN: etllm-translate --mlir-to-pte %t.first.mlir -o %t.pte
// RUN: etllm-translate --pte-to-text %t.pte | FileCheck %s --check-prefix=PTE
// etllm.quantize_static: round trip, the plan, the kernel call with its
// scale, and the near misses.

// CHECK-LABEL: func.func @forward
// CHECK: etllm.quantize_static %{{.+}} scale 1.250000e-02 : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_tensor, sym>
// PLAN: etllm.quantize_static {{.*}} {etllm.plan = [#etllm.slot<{{.*}}>]}
// PTE: 0: quantize_static(%0) floats [0.0125] -> %1
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8>} {
  func.func @forward(%x: tensor<1x?x64xf32>) -> !etllm.qact<1x?x64, i8, per_tensor, sym> {
    %q = etllm.quantize_static %x scale 0.0125 : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_tensor, sym>
    return %q : !etllm.qact<1x?x64, i8, per_tensor, sym>
  }
}

// -----

func.func @per_token(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{result must be an 8-bit per-tensor symmetric activation, got '!etllm.qact<2x4, i8, per_token, asym>'}}
  %q = etllm.quantize_static %x scale 0.5 : tensor<2x4xf32> -> !etllm.qact<2x4, i8, per_token, asym>
  return
}

// -----

func.func @zero_scale(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{scale must be positive and finite, got 0.000000e+00}}
  %q = etllm.quantize_static %x scale 0.0 : tensor<2x4xf32> -> !etllm.qact<2x4, i8, per_tensor, sym>
  return
}

// -----

func.func @other_shape(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{result shape [2, 8] differs from the input shape [2, 4]}}
  %q = etllm.quantize_static %x scale 0.5 : tensor<2x4xf32> -> !etllm.qact<2x8, i8, per_tensor, sym>
  return
}

// -----

// The calibrated range a linear carries must be a finite float >= 0.
func.func @bad_range(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'etllm.act_absmax' must be a finite float >= 0 on an etllm.linear}}
  %y = etllm.linear %x, %w {etllm.act_absmax = -1.0 : f64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// A ring attribute that does not say what it must.
// expected-error @+1 {{'etllm.kv_ring' must be {chunk = C >= 1, sinks = S >= 0} on a builtin.module}}
module attributes {etllm.kv_ring = {chunk = 0 : i64, sinks = 0 : i64}} {
}
