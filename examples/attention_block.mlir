// A small exported-graph (level A) example: one RMSNorm followed by
// single-head causal attention, written the way torch.export decomposes them.
// `scripts/run-demo.sh` runs it through etllm-opt.
module attributes {etllm.module_classes = {"model.norm" = "LlamaRMSNorm",
                                           "model.attn" = "LlamaAttention"}} {
  etllm.parameter @model.norm.weight : tensor<8xf32> = dense<1.0> : tensor<8xf32>
  func.func @forward(%x: tensor<1x?x8xf32>) -> tensor<1x1x?x8xf32> {
    // RMSNorm: x * rsqrt(mean(x^2) + eps) * w
    %two = etllm.constant dense<2.0> : tensor<f32>
    %eps = etllm.constant dense<1.0e-05> : tensor<f32>
    %w = etllm.parameter.get @model.norm.weight : tensor<8xf32>
    %sq = etllm.pow %x, %two {etllm.module = "model.norm"} : (tensor<1x?x8xf32>, tensor<f32>) -> tensor<1x?x8xf32>
    %ms = etllm.mean %sq dims [-1] keepdim {etllm.module = "model.norm"} : tensor<1x?x8xf32> -> tensor<1x?x1xf32>
    %ms_eps = etllm.add %ms, %eps {etllm.module = "model.norm"} : (tensor<1x?x1xf32>, tensor<f32>) -> tensor<1x?x1xf32>
    %r = etllm.rsqrt %ms_eps {etllm.module = "model.norm"} : tensor<1x?x1xf32>
    %n = etllm.mul %x, %r {etllm.module = "model.norm"} : (tensor<1x?x8xf32>, tensor<1x?x1xf32>) -> tensor<1x?x8xf32>
    %h = etllm.mul %n, %w {etllm.module = "model.norm"} : (tensor<1x?x8xf32>, tensor<8xf32>) -> tensor<1x?x8xf32>
    // Attention with q = k = v = h (no mask): softmax(q k^T / sqrt(d)) v
    %q = etllm.unsqueeze %h dim 1 {etllm.module = "model.attn"} : tensor<1x?x8xf32> -> tensor<1x1x?x8xf32>
    %kt = etllm.transpose %q 2, 3 {etllm.module = "model.attn"} : tensor<1x1x?x8xf32> -> tensor<1x1x8x?xf32>
    %s = etllm.matmul %q, %kt {etllm.module = "model.attn"} : (tensor<1x1x?x8xf32>, tensor<1x1x8x?xf32>) -> tensor<1x1x?x?xf32>
    %scale = etllm.constant dense<0.353553385> : tensor<f32>
    %ss = etllm.mul %s, %scale {etllm.module = "model.attn"} : (tensor<1x1x?x?xf32>, tensor<f32>) -> tensor<1x1x?x?xf32>
    %one = etllm.constant dense<1.0> : tensor<f32>
    %ss1 = etllm.mul %ss, %one {etllm.module = "model.attn"} : (tensor<1x1x?x?xf32>, tensor<f32>) -> tensor<1x1x?x?xf32>
    %p = etllm.softmax %ss1 dim -1 {etllm.module = "model.attn"} : tensor<1x1x?x?xf32>
    %o = etllm.matmul %p, %q {etllm.module = "model.attn"} : (tensor<1x1x?x?xf32>, tensor<1x1x?x8xf32>) -> tensor<1x1x?x8xf32>
    return %o : tensor<1x1x?x8xf32>
  }
}
