// RUN: etllm-opt %s --split-input-file | etllm-opt --split-input-file | FileCheck %s
// Weights kept in ggml's block formats: `!etllm.qweight<shape, scheme>`
// round-trips in its short form, for every scheme, and the ops that read a
// qweight take it.

// CHECK: etllm.parameter @q5_0 : !etllm.qweight<16x64, q5_0> {source_dtype = "Q5_0"}
// CHECK: etllm.parameter @q5_1 : !etllm.qweight<16x96, q5_1>
// CHECK: etllm.parameter @q4_k : !etllm.qweight<32x256, q4_k>
// CHECK: etllm.parameter @q5_k : !etllm.qweight<8x512, q5_k>
// CHECK: etllm.parameter @q6_k : !etllm.qweight<640x2048, q6_k>
// CHECK-LABEL: func.func @reads
// CHECK: etllm.qlinear %{{.+}}, %{{.+}} : (!etllm.qact<1x?x256, i8, per_block, sym>, !etllm.qweight<32x256, q4_k>) -> tensor<1x?x32xf32>
// CHECK: etllm.qembedding %{{.+}}, %{{.+}} : (!etllm.qweight<640x2048, q6_k>, tensor<1x?xi64>) -> tensor<1x?x2048xf32>
etllm.parameter @q5_0 : !etllm.qweight<16x64, q5_0> {source_dtype = "Q5_0"}
etllm.parameter @q5_1 : !etllm.qweight<16x96, q5_1>
etllm.parameter @q4_k : !etllm.qweight<32x256, q4_k>
etllm.parameter @q5_k : !etllm.qweight<8x512, q5_k>
etllm.parameter @q6_k : !etllm.qweight<640x2048, q6_k>
func.func @reads(%x: !etllm.qact<1x?x256, i8, per_block, sym>, %t: tensor<1x?xi64>) -> (tensor<1x?x32xf32>, tensor<1x?x2048xf32>) {
  %w = etllm.parameter.get @q4_k : !etllm.qweight<32x256, q4_k>
  %y = etllm.qlinear %x, %w : (!etllm.qact<1x?x256, i8, per_block, sym>, !etllm.qweight<32x256, q4_k>) -> tensor<1x?x32xf32>
  %e = etllm.parameter.get @q6_k : !etllm.qweight<640x2048, q6_k>
  %z = etllm.qembedding %e, %t : (!etllm.qweight<640x2048, q6_k>, tensor<1x?xi64>) -> tensor<1x?x2048xf32>
  return %y, %z : tensor<1x?x32xf32>, tensor<1x?x2048xf32>
}

