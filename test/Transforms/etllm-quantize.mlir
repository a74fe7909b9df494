// RUN: etllm-opt %s --split-input-file --etllm-quantize="linear=int4 group-size=32" --verify-diagnostics | FileCheck %s --check-prefix=INT4
// RUN: etllm-opt %s --split-input-file --etllm-quantize="linear=8da4w group-size=32 scale-type=f16" --verify-diagnostics | FileCheck %s --check-prefix=DA
// RUN: etllm-opt %s --split-input-file --etllm-quantize="linear=int8 group-size=-1 symmetric=false embedding=int8 output-layer=none exclude=model.layers.1.*" | FileCheck %s --check-prefix=INT8
// RUN: etllm-opt %s --split-input-file --etllm-quantize="linear=int4 scale-type=f16 activations=int8-block" | FileCheck %s --check-prefix=BLK
// RUN: not etllm-opt %s --split-input-file --etllm-quantize="linear=int4 activations=int4" 2>&1 | FileCheck %s --check-prefix=BADACT
// BADACT: for the --activations option: Cannot find option named 'int4'

// A linear with a parameter weight becomes qlinear on a qweight parameter
// (same name: every use was quantized).
// INT4: etllm.parameter @w : !etllm.qweight<16x64, i4, group 32, sym, f32>
// INT4-LABEL: func.func @linear
// INT4: %[[W:.+]] = etllm.parameter.get @w {{.*}}: !etllm.qweight<16x64, i4, group 32, sym, f32>
// INT4: etllm.qlinear %{{.+}}, %[[W]], %{{.+}} {etllm.module = "model.layers.0.mlp.up_proj"} : (tensor<1x?x64xf32>, !etllm.qweight<16x64, i4, group 32, sym, f32>, tensor<16xf32>) -> tensor<1x?x16xf32>
// INT4-NOT: etllm.linear
// DA-LABEL: func.func @linear
// DA: %[[A:.+]] = etllm.quantize_dynamic %{{.+}} {etllm.module = "model.layers.0.mlp.up_proj"} : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_token, asym>
// DA: etllm.qlinear %[[A]], %{{.+}}, %{{.+}} {{.*}}: (!etllm.qact<1x?x64, i8, per_token, asym>, !etllm.qweight<16x64, i4, group 32, sym, f16>, tensor<16xf32>) -> tensor<1x?x16xf32>
// INT8: etllm.parameter @w : !etllm.qweight<16x64, i8, group 64, asym, f32>
// INT8-LABEL: func.func @linear
// With activations=int8-block, the activation is quantized per block of 32
// (symmetric) at run time.
// BLK-LABEL: func.func @linear
// BLK: %[[A:.+]] = etllm.quantize_dynamic %{{.+}} : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_block, sym>
// BLK: etllm.qlinear %[[A]], %{{.+}}, %{{.+}} {{.*}}: (!etllm.qact<1x?x64, i8, per_block, sym>, !etllm.qweight<16x64, i4, group 32, sym, f16>, tensor<16xf32>) -> tensor<1x?x16xf32>
etllm.parameter @w : tensor<16x64xf32>
etllm.parameter @b : tensor<16xf32>
func.func @linear(%x: tensor<1x?x64xf32>) -> tensor<1x?x16xf32> {
  %w = etllm.parameter.get @w {etllm.module = "model.layers.0.mlp.up_proj"} : tensor<16x64xf32>
  %b = etllm.parameter.get @b {etllm.module = "model.layers.0.mlp.up_proj"} : tensor<16xf32>
  %y = etllm.linear %x, %w, %b {etllm.module = "model.layers.0.mlp.up_proj"} : (tensor<1x?x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// A group size that does not divide the input features falls back to one
// group per row (with a remark); the weight is still quantized.
// INT4: etllm.parameter @w : !etllm.qweight<8x48, i4, group 48, sym, f32>
// INT4-LABEL: func.func @group_fallback
etllm.parameter @w : tensor<8x48xf32>
func.func @group_fallback(%x: tensor<1x?x48xf32>) -> tensor<1x?x8xf32> {
  %w = etllm.parameter.get @w : tensor<8x48xf32>
  // expected-remark @+1 {{group size 32 does not divide 48 input features; using one group per row}}
  %y = etllm.linear %x, %w {etllm.module = "model.layers.0.mlp.down_proj"} : (tensor<1x?x48xf32>, tensor<8x48xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// A weight shared by an embedding and the output layer (tied embeddings):
// the linear reads a new quantized parameter with the same source, the
// embedding keeps the float one (unless embeddings are quantized too), and
// `output-layer=none` keeps lm_head in float.
// INT4: etllm.parameter @embed : tensor<32x64xf32>
// INT4: etllm.parameter @embed.q4g32 : !etllm.qweight<32x64, i4, group 32, sym, f32> {source = "embed"}
// INT4-LABEL: func.func @tied
// INT4: etllm.embedding
// INT4: etllm.qlinear
// INT8: etllm.parameter @embed : tensor<32x64xf32>
// INT8: etllm.parameter @embed.q8g64 : !etllm.qweight<32x64, i8, group 64, asym, f32> {source = "embed"}
// INT8-LABEL: func.func @tied
// INT8: etllm.qembedding
// INT8: etllm.linear %{{.+}}, %{{.+}} {etllm.module = "lm_head"}
etllm.parameter @embed : tensor<32x64xf32>
func.func @tied(%t: tensor<1x?xi64>) -> tensor<1x?x32xf32> {
  %e = etllm.parameter.get @embed : tensor<32x64xf32>
  %h = etllm.embedding %e, %t : (tensor<32x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %y = etllm.linear %h, %e {etllm.module = "lm_head"} : (tensor<1x?x64xf32>, tensor<32x64xf32>) -> tensor<1x?x32xf32>
  return %y : tensor<1x?x32xf32>
}

// -----

// Excluded layers stay in float; a weight computed at run time is not a
// parameter and is never quantized.
// INT8-LABEL: func.func @excluded_and_dynamic
// INT8: etllm.linear %{{.+}}, %{{.+}} {etllm.module = "model.layers.1.self_attn.q_proj"}
// INT8: etllm.linear %{{.+}}, %{{.+}} {etllm.module = "model.layers.0.self_attn.q_proj"}
// INT8-NOT: etllm.qlinear
// INT4-LABEL: func.func @excluded_and_dynamic
// INT4: etllm.qlinear
// INT4: etllm.linear %{{.+}}, %arg1
etllm.parameter @w : tensor<8x64xf32>
func.func @excluded_and_dynamic(%x: tensor<1x?x64xf32>, %wdyn: tensor<8x64xf32>) -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>) {
  %w = etllm.parameter.get @w : tensor<8x64xf32>
  %a = etllm.linear %x, %w {etllm.module = "model.layers.1.self_attn.q_proj"} : (tensor<1x?x64xf32>, tensor<8x64xf32>) -> tensor<1x?x8xf32>
  %b = etllm.linear %x, %wdyn {etllm.module = "model.layers.0.self_attn.q_proj"} : (tensor<1x?x64xf32>, tensor<8x64xf32>) -> tensor<1x?x8xf32>
  return %a, %b : tensor<1x?x8xf32>, tensor<1x?x8xf32>
}

// -----

// Layers that read one activation share one quantize_dynamic.
// INT4-LABEL: func.func @shared_input
// INT8-LABEL: func.func @shared_input
// DA-LABEL: func.func @shared_input
// DA: %[[A:.+]] = etllm.quantize_dynamic
// DA-NOT: etllm.quantize_dynamic
// BLK-LABEL: func.func @shared_input
// BLK: %[[A:.+]] = etllm.quantize_dynamic
// BLK-NOT: etllm.quantize_dynamic
// BLK: etllm.qlinear %[[A]]
// BLK: etllm.qlinear %[[A]]
etllm.parameter @wq : tensor<16x64xf32>
etllm.parameter @wk : tensor<8x64xf32>
func.func @shared_input(%x: tensor<1x?x64xf32>) -> (tensor<1x?x16xf32>, tensor<1x?x8xf32>) {
  %wq = etllm.parameter.get @wq : tensor<16x64xf32>
  %wk = etllm.parameter.get @wk : tensor<8x64xf32>
  %q = etllm.linear %x, %wq {etllm.module = "model.layers.0.self_attn.q_proj"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  %k = etllm.linear %x, %wk {etllm.module = "model.layers.0.self_attn.k_proj"} : (tensor<1x?x64xf32>, tensor<8x64xf32>) -> tensor<1x?x8xf32>
  return %q, %k : tensor<1x?x16xf32>, tensor<1x?x8xf32>
}
