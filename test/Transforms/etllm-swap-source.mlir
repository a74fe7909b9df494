// RUN: etllm-opt %s --split-input-file --etllm-swap-source --verify-diagnostics | FileCheck %s

// An RMSNorm instance (LlamaRMSNorm, decomposed) becomes one rms_norm.
// CHECK-LABEL: func.func @llama_rms_norm
// CHECK-SAME: (%[[X:.+]]: tensor<1x?x8xf32>)
// CHECK: %[[W:.+]] = etllm.parameter.get @norm.weight
// CHECK: %[[Y:.+]] = etllm.rms_norm %[[X]], %[[W]] eps 1.000000e-05 {etllm.module = "norm"}
// CHECK-NOT: etllm.rsqrt
// CHECK: return %[[Y]]
module attributes {etllm.module_classes = {norm = "LlamaRMSNorm"},
                   etllm.model_config = #etllm.model_config<rms_norm_eps = 1.0e-05>} {
  etllm.parameter @norm.weight : tensor<8xf32>
  func.func @llama_rms_norm(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
    %w = etllm.parameter.get @norm.weight {etllm.module = "norm"} : tensor<8xf32>
    %two = etllm.constant {etllm.module = "norm"} dense<2.0> : tensor<f32>
    %sq = etllm.pow %x, %two {etllm.module = "norm"} : (tensor<1x?x8xf32>, tensor<f32>) -> tensor<1x?x8xf32>
    %m = etllm.mean %sq dims [-1] keepdim {etllm.module = "norm"} : tensor<1x?x8xf32> -> tensor<1x?x1xf32>
    %eps = etllm.constant {etllm.module = "norm"} dense<1.0e-05> : tensor<f32>
    %me = etllm.add %m, %eps {etllm.module = "norm"} : (tensor<1x?x1xf32>, tensor<f32>) -> tensor<1x?x1xf32>
    %r = etllm.rsqrt %me {etllm.module = "norm"} : tensor<1x?x1xf32>
    %n = etllm.mul %x, %r {etllm.module = "norm"} : (tensor<1x?x8xf32>, tensor<1x?x1xf32>) -> tensor<1x?x8xf32>
    %y = etllm.mul %w, %n {etllm.module = "norm"} : (tensor<8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
    return %y : tensor<1x?x8xf32>
  }
}

// -----

// Gemma's (1 + w) RMSNorm keeps its form as `offset 1.0`.
// CHECK-LABEL: func.func @gemma_rms_norm
// CHECK: etllm.rms_norm %{{.+}}, %{{.+}} eps 9.9999999747524271E-7 offset 1.000000e+00
module attributes {etllm.module_classes = {norm = "GemmaRMSNorm"}} {
  etllm.parameter @norm.weight : tensor<8xf32>
  func.func @gemma_rms_norm(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
    %w = etllm.parameter.get @norm.weight {etllm.module = "norm"} : tensor<8xf32>
    %two = etllm.constant {etllm.module = "norm"} dense<2.0> : tensor<f32>
    %sq = etllm.pow %x, %two {etllm.module = "norm"} : (tensor<1x?x8xf32>, tensor<f32>) -> tensor<1x?x8xf32>
    %m = etllm.mean %sq dims [-1] keepdim {etllm.module = "norm"} : tensor<1x?x8xf32> -> tensor<1x?x1xf32>
    %eps = etllm.constant {etllm.module = "norm"} dense<1.0e-06> : tensor<f32>
    %me = etllm.add %m, %eps {etllm.module = "norm"} : (tensor<1x?x1xf32>, tensor<f32>) -> tensor<1x?x1xf32>
    %r = etllm.rsqrt %me {etllm.module = "norm"} : tensor<1x?x1xf32>
    %n = etllm.mul %x, %r {etllm.module = "norm"} : (tensor<1x?x8xf32>, tensor<1x?x1xf32>) -> tensor<1x?x8xf32>
    %one = etllm.constant {etllm.module = "norm"} dense<1.0> : tensor<f32>
    %w1 = etllm.add %w, %one {etllm.module = "norm"} : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    %y = etllm.mul %n, %w1 {etllm.module = "norm"} : (tensor<1x?x8xf32>, tensor<8xf32>) -> tensor<1x?x8xf32>
    return %y : tensor<1x?x8xf32>
  }
}

// -----

// Not an RMSNorm computation (no rsqrt): left alone, with a remark.
// CHECK-LABEL: func.func @not_rms
// CHECK-NOT: etllm.rms_norm
// CHECK: etllm.mean
module attributes {etllm.module_classes = {norm = "LlamaRMSNorm"}} {
  func.func @not_rms(%x: tensor<1x?x8xf32>) -> tensor<1x?x1xf32> {
    // expected-remark @+1 {{left LlamaRMSNorm instance 'norm' alone: not an RMSNorm computation}}
    %two = etllm.constant {etllm.module = "norm"} dense<2.0> : tensor<f32>
    %sq = etllm.pow %x, %two {etllm.module = "norm"} : (tensor<1x?x8xf32>, tensor<f32>) -> tensor<1x?x8xf32>
    %m = etllm.mean %sq dims [-1] keepdim {etllm.module = "norm"} : tensor<1x?x8xf32> -> tensor<1x?x1xf32>
    return %m : tensor<1x?x1xf32>
  }
}

// -----

// Two activation inputs: not the RMSNorm interface, left alone.
// CHECK-LABEL: func.func @two_inputs
// CHECK-NOT: etllm.rms_norm
module attributes {etllm.module_classes = {norm = "LlamaRMSNorm"}} {
  func.func @two_inputs(%x: tensor<1x?x8xf32>, %y: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
    // expected-remark @+1 {{expected one input and one output, found 2 and 1}}
    %a = etllm.add %x, %y {etllm.module = "norm"} : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
    %m = etllm.mean %a dims [-1] keepdim {etllm.module = "norm"} : tensor<1x?x8xf32> -> tensor<1x?x1xf32>
    %r = etllm.rsqrt %m {etllm.module = "norm"} : tensor<1x?x1xf32>
    %n = etllm.mul %a, %r {etllm.module = "norm"} : (tensor<1x?x8xf32>, tensor<1x?x1xf32>) -> tensor<1x?x8xf32>
    return %n : tensor<1x?x8xf32>
  }
}

// -----

// An attention instance without a static cache does not fit the
// replacement: left alone with a remark.
// CHECK-LABEL: func.func @attention_without_cache
// CHECK: etllm.softmax
// CHECK-NOT: etllm.sdpa
module attributes {etllm.module_classes = {attn = "LlamaAttention", "attn.q_proj" = "Linear", "attn.o_proj" = "Linear"},
                   etllm.model_config = #etllm.model_config<num_attention_heads = 1, num_key_value_heads = 1, head_dim = 8>} {
  func.func @attention_without_cache(%x: tensor<1x8x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x8x8xf32> {
    // expected-remark @+1 {{left LlamaAttention instance 'attn' alone: projections not found}}
    %q = etllm.linear %x, %w {etllm.module = "attn.q_proj"} : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %p = etllm.softmax %q dim -1 {etllm.module = "attn"} : tensor<1x8x8xf32>
    %o = etllm.linear %p, %w {etllm.module = "attn.o_proj"} : (tensor<1x8x8xf32>, tensor<8x8xf32>) -> tensor<1x8x8xf32>
    return %o : tensor<1x8x8xf32>
  }
}

// -----

// Classes without a registered replacement (MLP) are untouched, and no
// module information means nothing to do.
// CHECK-LABEL: func.func @unregistered_class
// CHECK: etllm.silu
// CHECK: etllm.mul
module attributes {etllm.module_classes = {mlp = "LlamaMLP"}} {
  func.func @unregistered_class(%x: tensor<4xf32>) -> tensor<4xf32> {
    %s = etllm.silu %x {etllm.module = "mlp"} : tensor<4xf32>
    %m = etllm.mul %s, %x {etllm.module = "mlp"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %m : tensor<4xf32>
  }
}
