// RUN: etllm-opt %s --split-input-file --etllm-quantize="linear=gguf embedding=gguf activations=int8-block" --verify-diagnostics | FileCheck %s
// RUN: etllm-opt %s --split-input-file --etllm-quantize="linear=int4 group-size=32" | FileCheck %s --check-prefix=INT4

// linear=gguf keeps each weight in its GGUF type: ggml's Q5_0, Q5_1, Q4_K,
// Q5_K and Q6_K as their own schemes (the serializer copies their blocks),
// the activations int8 per block.
// CHECK-DAG: etllm.parameter @a : !etllm.qweight<16x64, q5_0> {source_dtype = "Q5_0"}
// CHECK-DAG: etllm.parameter @b : !etllm.qweight<16x64, q5_1> {source_dtype = "Q5_1"}
// CHECK-DAG: etllm.parameter @c : !etllm.qweight<16x256, q4_k> {source_dtype = "Q4_K"}
// CHECK-DAG: etllm.parameter @d : !etllm.qweight<16x256, q5_k> {source_dtype = "Q5_K"}
// CHECK-DAG: etllm.parameter @e : !etllm.qweight<16x256, q6_k> {source_dtype = "Q6_K"}
// CHECK-LABEL: func.func @kept
// CHECK: etllm.quantize_dynamic %{{.+}} {{.*}}-> !etllm.qact<1x?x64, i8, per_block, sym>
// CHECK: etllm.qlinear {{.*}}!etllm.qweight<16x64, q5_0>
// CHECK: etllm.qlinear {{.*}}!etllm.qweight<16x64, q5_1>
// CHECK: etllm.qlinear {{.*}}!etllm.qweight<16x256, q4_k>
// The other schemes quantize these formats as they ask (from their
// dequantized values).
// INT4-DAG: etllm.parameter @a : !etllm.qweight<16x64, i4, group 32, sym, f32>
// INT4-DAG: etllm.parameter @c : !etllm.qweight<16x256, i4, group 32, sym, f32>
// INT4-DAG: etllm.parameter @e : !etllm.qweight<16x256, i4, group 32, sym, f32>
// INT4-LABEL: func.func @kept
etllm.parameter @a : tensor<16x64xf32> {source_dtype = "Q5_0"}
etllm.parameter @b : tensor<16x64xf32> {source_dtype = "Q5_1"}
etllm.parameter @c : tensor<16x256xf32> {source_dtype = "Q4_K"}
etllm.parameter @d : tensor<16x256xf32> {source_dtype = "Q5_K"}
etllm.parameter @e : tensor<16x256xf32> {source_dtype = "Q6_K"}
func.func @kept(%x: tensor<1x?x64xf32>, %x2: tensor<1x?x256xf32>) -> (tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>) {
  %a = etllm.parameter.get @a : tensor<16x64xf32>
  %b = etllm.parameter.get @b : tensor<16x64xf32>
  %c = etllm.parameter.get @c : tensor<16x256xf32>
  %d = etllm.parameter.get @d : tensor<16x256xf32>
  %e = etllm.parameter.get @e : tensor<16x256xf32>
  %ya = etllm.linear %x, %a {etllm.module = "model.layers.0.mlp.a"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  %yb = etllm.linear %x, %b {etllm.module = "model.layers.0.mlp.b"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  %yc = etllm.linear %x2, %c {etllm.module = "model.layers.0.mlp.c"} : (tensor<1x?x256xf32>, tensor<16x256xf32>) -> tensor<1x?x16xf32>
  %yd = etllm.linear %x2, %d {etllm.module = "model.layers.0.mlp.d"} : (tensor<1x?x256xf32>, tensor<16x256xf32>) -> tensor<1x?x16xf32>
  %ye = etllm.linear %x2, %e {etllm.module = "model.layers.0.mlp.e"} : (tensor<1x?x256xf32>, tensor<16x256xf32>) -> tensor<1x?x16xf32>
  return %ya, %yb, %yc, %yd, %ye : tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>
}

// -----

// Q8_0, Q4_0 and Q4_1 keep their affine types; a float weight stays float
// (a remark says why), and so does the embedding table of a float source.
// CHECK-DAG: etllm.parameter @q8 : !etllm.qweight<16x64, i8, group 32, sym, f16>
// CHECK-DAG: etllm.parameter @q41 : !etllm.qweight<16x64, i4, group 32, asym, f16>
// CHECK-DAG: etllm.parameter @emb : !etllm.qweight<100x64, i8, group 32, sym, f16>
// CHECK-DAG: etllm.parameter @f : tensor<16x64xf32> {source_dtype = "F16"}
// CHECK-LABEL: func.func @mixed
// CHECK: etllm.qembedding
// CHECK: etllm.linear %{{.+}}, %{{.+}} {etllm.module = "model.layers.0.mlp.f"}
etllm.parameter @q8 : tensor<16x64xf32> {source_dtype = "Q8_0"}
etllm.parameter @q41 : tensor<16x64xf32> {source_dtype = "Q4_1"}
etllm.parameter @f : tensor<16x64xf32> {source_dtype = "F16"}
etllm.parameter @emb : tensor<100x64xf32> {source_dtype = "Q8_0"}
func.func @mixed(%t: tensor<1x?xi64>) -> (tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>) {
  %emb = etllm.parameter.get @emb : tensor<100x64xf32>
  %x = etllm.embedding %emb, %t {etllm.module = "model.embed_tokens"} : (tensor<100x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %q8 = etllm.parameter.get @q8 : tensor<16x64xf32>
  %q41 = etllm.parameter.get @q41 : tensor<16x64xf32>
  %f = etllm.parameter.get @f : tensor<16x64xf32>
  %y8 = etllm.linear %x, %q8 {etllm.module = "model.layers.0.mlp.q8"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  %y41 = etllm.linear %x, %q41 {etllm.module = "model.layers.0.mlp.q41"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  // expected-remark @+1 {{etllm-quantize: kept in float: the weight arrives as F16}}
  %yf = etllm.linear %x, %f {etllm.module = "model.layers.0.mlp.f"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  return %y8, %y41, %yf : tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>
}
