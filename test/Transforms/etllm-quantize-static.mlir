// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-quantize="linear=8da4w group-size=32 activations=int8-static" | FileCheck %s
// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-quantize="linear=int8 group-size=-1 activations=int8-static" | FileCheck %s --check-prefix=INT8
// Static activations (activations=int8-static): each linear's input is
// quantized with the scale its calibrated range gives (etllm.act_absmax /
// 127), per tensor and symmetric, whatever the weight scheme (the 8da
// schemes' run-time per-token quantization included).

// Two linears that read one activation with one range share one
// quantize_static; a third with another range gets its own.
// CHECK-LABEL: func.func @shared
// CHECK: %[[A:.+]] = etllm.quantize_static %arg0 scale 2.000000e-02 {etllm.module = "model.layers.0.self_attn.q_proj"} : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_tensor, sym>
// CHECK: etllm.qlinear %[[A]], %{{.+}} {etllm.module = "model.layers.0.self_attn.q_proj"} : (!etllm.qact<1x?x64, i8, per_tensor, sym>, !etllm.qweight<16x64, i4, group 32, sym, f32>) -> tensor<1x?x16xf32>
// CHECK: etllm.qlinear %[[A]], %{{.+}} {etllm.module = "model.layers.0.self_attn.k_proj"}
// CHECK: %[[B:.+]] = etllm.quantize_static %arg0 scale 1.000000e+00
// CHECK: etllm.qlinear %[[B]]
// CHECK-NOT: quantize_dynamic
// INT8-LABEL: func.func @shared
// INT8: etllm.quantize_static %arg0 scale 2.000000e-02
// INT8: etllm.qlinear {{.*}} !etllm.qweight<16x64, i8, group 64, sym, f32>
etllm.parameter @wq : tensor<16x64xf32>
etllm.parameter @wk : tensor<16x64xf32>
etllm.parameter @wv : tensor<16x64xf32>
func.func @shared(%x: tensor<1x?x64xf32>) -> (tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>) {
  %wq = etllm.parameter.get @wq : tensor<16x64xf32>
  %wk = etllm.parameter.get @wk : tensor<16x64xf32>
  %wv = etllm.parameter.get @wv : tensor<16x64xf32>
  %q = etllm.linear %x, %wq {etllm.module = "model.layers.0.self_attn.q_proj", etllm.act_absmax = 2.54 : f64} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  %k = etllm.linear %x, %wk {etllm.module = "model.layers.0.self_attn.k_proj", etllm.act_absmax = 2.54 : f64} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  // An input that was all zeros in calibration: scale 1.
  %v = etllm.linear %x, %wv {etllm.module = "model.layers.0.self_attn.v_proj", etllm.act_absmax = 0.0 : f64} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  return %q, %k, %v : tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>
}

// -----

// A linear to quantize without a calibrated range: one error naming it.
etllm.parameter @w : tensor<16x64xf32>
func.func @uncalibrated(%x: tensor<1x?x64xf32>) -> tensor<1x?x16xf32> {
  %w = etllm.parameter.get @w : tensor<16x64xf32>
  // expected-error @+1 {{'etllm.linear' op has no calibrated input range (etllm.act_absmax): activations=int8-static needs calibration (quantization.calibration, etllm-calibrate)}}
  %y = etllm.linear %x, %w : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}
