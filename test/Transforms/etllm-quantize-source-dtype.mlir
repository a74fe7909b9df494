// RUN: etllm-opt %s --split-input-file --etllm-quantize="linear=int4 group-size=64" --verify-diagnostics | FileCheck %s

// The pass reads the checkpoint's storage type from `source_dtype` (the
// importer records it); it opens no file: this module names no checkpoint.
// A weight stored as Q8_0 keeps its exact 8-bit values.
// CHECK: etllm.parameter @w : !etllm.qweight<16x64, i8, group 32, sym, f16> {source_dtype = "Q8_0"}
// CHECK-LABEL: func.func @stored_q8_0
etllm.parameter @w : tensor<16x64xf32> {source_dtype = "Q8_0"}
func.func @stored_q8_0(%x: tensor<1x?x64xf32>) -> tensor<1x?x16xf32> {
  %w = etllm.parameter.get @w : tensor<16x64xf32>
  // expected-remark @+1 {{etllm-quantize: kept at 8 bits: the weight arrives as Q8_0}}
  %y = etllm.linear %x, %w {etllm.module = "model.layers.0.mlp.up_proj"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// Q4_0 blocks: 4 bits, group 32, f16 scales, whatever the options say.
// CHECK: etllm.parameter @w : !etllm.qweight<16x64, i4, group 32, sym, f16>
// CHECK-LABEL: func.func @stored_q4_0
etllm.parameter @w : tensor<16x64xf32> {source_dtype = "Q4_0"}
func.func @stored_q4_0(%x: tensor<1x?x64xf32>) -> tensor<1x?x16xf32> {
  %w = etllm.parameter.get @w : tensor<16x64xf32>
  %y = etllm.linear %x, %w {etllm.module = "model.layers.0.mlp.up_proj"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// A float source (or an unknown name) follows the options.
// CHECK: etllm.parameter @w : !etllm.qweight<16x64, i4, group 64, sym, f32>
// CHECK: etllm.parameter @v : !etllm.qweight<64x64, i4, group 64, sym, f32>
// CHECK-LABEL: func.func @stored_float
etllm.parameter @w : tensor<16x64xf32> {source_dtype = "F16"}
etllm.parameter @v : tensor<64x64xf32> {source_dtype = "Q9_9"}
func.func @stored_float(%x: tensor<1x?x64xf32>) -> tensor<1x?x16xf32> {
  %v = etllm.parameter.get @v : tensor<64x64xf32>
  %w = etllm.parameter.get @w : tensor<16x64xf32>
  %y = etllm.linear %x, %v {etllm.module = "model.layers.0.mlp.gate_proj"} : (tensor<1x?x64xf32>, tensor<64x64xf32>) -> tensor<1x?x64xf32>
  %z = etllm.linear %y, %w {etllm.module = "model.layers.0.mlp.up_proj"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  return %z : tensor<1x?x16xf32>
}
