// REQUIRES: shared
// RUN: etllm-opt %s --etllm-calibrate="file=%etllm_src/test/Inputs/calibration-story.txt tokenizer=%shared/models/stories260K/tok512.bin samples=2 window=16" | FileCheck %s
// RUN: not etllm-opt %s --etllm-calibrate="file=%t.missing tokenizer=%shared/models/stories260K/tok512.bin" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not etllm-opt %s --etllm-calibrate="file=%etllm_src/test/Inputs/calibration-story.txt" 2>&1 | FileCheck %s --check-prefix=NOTOK
// RUN: not etllm-opt %s --etllm-calibrate="tokenizer=%shared/models/stories260K/tok512.bin" 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: printf '' > %t.empty
// RUN: not etllm-opt %s --etllm-calibrate="file=%t.empty tokenizer=%shared/models/stories260K/tok512.bin" 2>&1 | FileCheck %s --check-prefix=EMPTY
// etllm-calibrate runs the float program on windows of a text and records
// on each linear the largest |x| its input took. Here every embedding row
// is 0.5, the first linear's input is 0.5 everywhere, its output 4 x 0.5 x
// 0.25 = 0.5, tripled: the second linear's input is 1.5.
// CHECK: module attributes {etllm.calibration = {file = "{{.*}}calibration-story.txt", samples = 2 : i64, tokens = 32 : i64}
// CHECK: etllm.linear {{.*}}etllm.act_absmax = 5.000000e-01 : f64
// CHECK: etllm.linear {{.*}}etllm.act_absmax = 1.500000e+00 : f64
// MISSING: error: etllm-calibrate: {{.*}}.missing: cannot open
// NOTOK: error: etllm-calibrate: no tokenizer for the calibration text ({{.*}}): give one with --tokenizer
// NOFILE: error: etllm-calibrate: no calibration text (quantization.calibration)
// EMPTY: error: etllm-calibrate: '{{.*}}.empty' holds no text to calibrate on
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 64, vocab_size = 512>} {
  func.func @forward(%tokens: tensor<1x?xi64>, %pos: tensor<?xi64>) -> tensor<1x?x8xf32> {
    %table = etllm.constant dense<0.5> : tensor<512x4xf32>
    %x = etllm.embedding %table, %tokens : (tensor<512x4xf32>, tensor<1x?xi64>) -> tensor<1x?x4xf32>
    %w1 = etllm.constant dense<0.25> : tensor<4x4xf32>
    %h = etllm.linear %x, %w1 : (tensor<1x?x4xf32>, tensor<4x4xf32>) -> tensor<1x?x4xf32>
    %three = etllm.constant dense<3.0> : tensor<f32>
    %h3 = etllm.mul %h, %three : (tensor<1x?x4xf32>, tensor<f32>) -> tensor<1x?x4xf32>
    %w2 = etllm.constant dense<1.0> : tensor<8x4xf32>
    %y = etllm.linear %h3, %w2 : (tensor<1x?x4xf32>, tensor<8x4xf32>) -> tensor<1x?x8xf32>
    return %y : tensor<1x?x8xf32>
  }
}
