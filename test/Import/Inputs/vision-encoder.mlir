// A vision encoder as etllm.export_llm writes one (test/Import/
// vision-encoder.test): forward(pixels [1, 3, 8, 8]) -> features
// [1, 4, 64], 4 x 4 patches through a linear with a constant weight.
module attributes {etllm.module_classes = {proj = "Linear"}} {
  func.func @forward(%px: tensor<1x3x8x8xf32>) -> tensor<1x4x64xf32> {
    %r = etllm.reshape %px [1, 3, 2, 4, 2, 4] : tensor<1x3x8x8xf32> -> tensor<1x3x2x4x2x4xf32>
    %p = etllm.permute %r [0, 2, 4, 1, 3, 5] : tensor<1x3x2x4x2x4xf32> -> tensor<1x2x2x3x4x4xf32>
    %x = etllm.reshape %p [1, 4, 48] : tensor<1x2x2x3x4x4xf32> -> tensor<1x4x48xf32>
    %w = etllm.constant dense<0.03> : tensor<64x48xf32>
    %y = etllm.linear %x, %w {etllm.module = "proj"} : (tensor<1x4x48xf32>, tensor<64x48xf32>) -> tensor<1x4x64xf32>
    return %y : tensor<1x4x64xf32>
  }
}
