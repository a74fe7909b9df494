// An etllm op whose operand and result types disagree.
func.func @f(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = etllm.add %a, %b : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
