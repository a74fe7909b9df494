// RUN: etllm-opt %s --split-input-file --verify-diagnostics
// One case per verifier diagnostic of the etllm dialect.

// expected-error @+1 {{parameter type must have a static shape}}
etllm.parameter @p : tensor<?x4xf32>

// -----

// expected-error @+1 {{inline value type 'tensor<3xf32>' does not match the parameter type 'tensor<2xf32>'}}
etllm.parameter @p : tensor<2xf32> = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>

// -----

// expected-error @+1 {{inline value of a quantized parameter must be a float tensor of shape [2, 32]}}
etllm.parameter @p : !etllm.qweight<2x32, i8, group 32, sym, f32> = dense<1.0> : tensor<2x16xf32>

// -----

// expected-error @+1 {{has both an inline value and a checkpoint source}}
etllm.parameter @p : tensor<2xf32> = dense<[1.0, 2.0]> : tensor<2xf32> {source = "w"}

// -----

// expected-error @+1 {{qk_permute_heads 3 must divide the rows 8 into heads of even size}}
etllm.parameter @p : tensor<8x8xf32> {qk_permute_heads = 3 : i64}

// -----

func.func @f() {
  // expected-error @+1 {{refers to unknown parameter @missing}}
  %0 = etllm.parameter.get @missing : tensor<2xf32>
  return
}

// -----

etllm.parameter @p : tensor<2xf32>
func.func @f() {
  // expected-error @+1 {{result type 'tensor<3xf32>' does not match parameter type 'tensor<2xf32>'}}
  %0 = etllm.parameter.get @p : tensor<3xf32>
  return
}

// -----

// expected-error @+1 {{buffer type must have a static shape}}
etllm.buffer @b : tensor<1x?xf32>

// -----

func.func @f() {
  // expected-error @+1 {{refers to unknown buffer @missing}}
  %0 = etllm.buffer.read @missing : tensor<2xf32>
  return
}

// -----

etllm.buffer @b : tensor<2xf32>
func.func @f() {
  // expected-error @+1 {{result type 'tensor<4xf32>' does not match buffer type 'tensor<2xf32>'}}
  %0 = etllm.buffer.read @b : tensor<4xf32>
  return
}

// -----

etllm.buffer @b : tensor<2xf32>
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{value type 'tensor<4xf32>' does not match buffer type 'tensor<2xf32>'}}
  etllm.buffer.write %x to @b : tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{refers to unknown buffer @missing}}
  etllm.buffer.write %x to @missing : tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // The ODS trait AllElementTypesMatch (also a runtime load-time rule).
  // expected-error @+1 {{failed to verify that all of {lhs, rhs, result} have same element type}}
  %0 = etllm.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{shapes [4] and [3] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.mul %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @f(%a: tensor<4xi64>, %b: tensor<4xi32>) {
  // expected-error @+1 {{failed to verify that all of {lhs, rhs} have same element type}}
  %0 = etllm.lt %a, %b : (tensor<4xi64>, tensor<4xi32>) -> tensor<4xi1>
  return
}

// -----

func.func @f(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{failed to verify that all of {on_true, on_false, result} have same element type}}
  %0 = etllm.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{shapes [3], [4] and [4] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.where %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>, %m: tensor<2x4xi1>) {
  // expected-error @+2 {{mask shape [2, 4] does not broadcast to the input shape [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.masked_fill %x, %m, 0.0 : (tensor<4xf32>, tensor<2x4xi1>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.sum %x dims [2] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension -1 is reduced twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.mean %x dims [1, -1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{expected at least one dimension to reduce}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.amax %x dims [] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dimension 2 is out of range for rank 2}}
  %0 = etllm.softmax %x dim 2 : tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+2 {{operands must have rank >= 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.matmul %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<2x8xf32>, %b: tensor<8x4xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.matmul %a, %b : (tensor<2x8xf32>, tensor<8x4xf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%a: tensor<2x8xf32>, %b: tensor<7x4xf32>) {
  // expected-error @+2 {{contracting dimensions differ: [2, 8] x [7, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.matmul %a, %b : (tensor<2x8xf32>, tensor<7x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%a: tensor<3x2x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+2 {{batch dimensions of [3, 2, 8] and [2, 8, 4] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.matmul %a, %b : (tensor<3x2x8xf32>, tensor<2x8x4xf32>) -> tensor<3x2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: tensor<128xf32>) {
  // expected-error @+2 {{expected input of rank >= 1 and a weight of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.linear %x, %w : (tensor<1x?x64xf32>, tensor<128xf32>) -> tensor<1x?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: tensor<128x64xf16>) {
  // expected-error @+2 {{input and weight element types differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.linear %x, %w : (tensor<1x?x64xf32>, tensor<128x64xf16>) -> tensor<1x?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x32xf32>, %w: tensor<128x64xf32>) {
  // expected-error @+2 {{input features 32 do not match weight [128, 64]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.linear %x, %w : (tensor<1x?x32xf32>, tensor<128x64xf32>) -> tensor<1x?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: tensor<128x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+2 {{bias shape [64] does not match the 128 output features}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.linear %x, %w, %b : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<64xf32>) -> tensor<1x?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf16>) {
  // expected-error @+2 {{bias element type 'f16' differs from the input's}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.linear %x, %w, %b : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<128xf16>) -> tensor<1x?x128xf32>
  return
}

// -----

func.func @f(%w: tensor<512xf32>, %t: tensor<1x?xi64>) {
  // expected-error @+2 {{embedding table must have rank 2, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.embedding %w, %t : (tensor<512xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{step must not be zero}}
  %0 = etllm.arange 0 to 4 step 0 : tensor<4xi64>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{result must be tensor<4x...>, got 'tensor<5xi64>'}}
  %0 = etllm.arange 0 to 8 step 2 : tensor<5xi64>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{result must have a static shape (use full_like for a dynamic one)}}
  %0 = etllm.full 0.0 : tensor<?xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{input must have rank >= 2}}
  %0 = etllm.triu %x : tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{input must have rank >= 2}}
  %0 = etllm.tril %x : tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimensions 0, 2 are out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.transpose %x 0, 2 : tensor<4x8xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{permutation has 3 entries for an input of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.permute %x [0, 1, 2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dims [0, 0] are not a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.permute %x [0, 0] : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{shape [-1, -1] has more than one -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.reshape %x [-1, -1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{invalid size -2 in shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.reshape %x [-2, 16] : tensor<4x8xf32> -> tensor<2x16xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{cannot reshape [4, 8] to [-1, 5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.reshape %x [-1, 5] : tensor<4x8xf32> -> tensor<6x5xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{cannot reshape [4, 8] (32 elements) to [4, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.reshape %x [4, 4] : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @+2 {{reshape of a dynamic shape needs one -1 in [4, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.reshape %x [4, 8] : tensor<?x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 3 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.unsqueeze %x dim 3 : tensor<4x8xf32> -> tensor<4x8x1xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.squeeze %x dim 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 0 has size 4, not 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.squeeze %x dim 0 : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{expand shape [8] has fewer dimensions than the input [4, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.expand %x [8] : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{new leading dimension 0 cannot be -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.expand %x [-1, 4, 8] : tensor<4x8xf32> -> tensor<1x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{invalid size -3 in expand shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.expand %x [4, -3] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{cannot expand dimension of size 4 to 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.expand %x [5, 8] : tensor<4x8xf32> -> tensor<5x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.slice %x dim 2 [0 : 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{step must be positive, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.slice %x dim 1 [0 : 4 : 0] : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{inputs must have the same rank and element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.cat %a, %b dim 0 : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<4x7xf32>) {
  // expected-error @+2 {{input shapes [4, 8] and [4, 7] differ outside dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.cat %a, %b dim 0 : (tensor<4x8xf32>, tensor<4x7xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.cat %a dim 3 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{split sizes [4, 3] sum to 7, not the dimension size 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = etllm.split %x dim 1 [4, 3] : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{split sizes must be non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = etllm.split %x dim 1 [10, -2] : tensor<4x8xf32> -> tensor<4x10xf32>, tensor<4x2xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dimension 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = etllm.split %x dim 2 [4, 4] : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %i: tensor<2x2xi64>) {
  // expected-error @+2 {{index must have rank 1, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.index_select %x dim 0, %i : (tensor<4x8xf32>, tensor<2x2xi64>) -> tensor<2x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{dimension 5 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.index_select %x dim 5, %i : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{index rank 1 differs from the input rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.gather %x dim 1, %i : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+2 {{dimension 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.gather %x dim 2, %i : (tensor<4x8xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
  return
}

// -----

func.func @f(%c: tensor<1x4x16x8xf32>, %i: tensor<?xi64>, %s: tensor<1x4x?x7xf32>) {
  // expected-error @+2 {{source shape [1, 4, ?, 7] does not match input [1, 4, 16, 8] with dimension 2 indexed by [?]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.index_copy %c dim 2, %i, %s : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x4x?x7xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @f(%c: tensor<1x4x16x8xf32>, %i: tensor<2x2xi64>, %s: tensor<1x4x2x8xf32>) {
  // expected-error @+2 {{index must have rank 1, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.index_put %c dim 2, %i, %s : (tensor<1x4x16x8xf32>, tensor<2x2xi64>, tensor<1x4x2x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @f(%c: tensor<1x4x16x8xf32>, %i: tensor<2xi64>, %s: tensor<1x4x2x8xf16>) {
  // expected-error @+1 {{failed to verify that all of {input, values, result} have same element type}}
  %0 = etllm.index_put %c dim 2, %i, %s : (tensor<1x4x16x8xf32>, tensor<2xi64>, tensor<1x4x2x8xf16>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>) {
  // expected-error @+2 {{input must have rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.rms_norm %x eps 1.0e-05 : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+2 {{weight shape [32] does not match the normalized dimension 64}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.rms_norm %x, %w eps 1.0e-05 : (tensor<1x?x64xf32>, tensor<32xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: tensor<64xf16>) {
  // expected-error @+2 {{weight element type 'f16' differs from the input's 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.rms_norm %x, %w eps 1.0e-05 : (tensor<1x?x64xf32>, tensor<64xf16>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>) {
  // expected-error @+2 {{eps must be non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.rms_norm %x eps -1.0 : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %b: tensor<32xf32>) {
  // expected-error @+2 {{bias shape [32] does not match the normalized dimension 64}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.layer_norm %x bias %b eps 1.0e-05 : (tensor<1x?x64xf32>, tensor<32xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %p: tensor<?xi64>, %f: tensor<4xf32>) {
  // expected-error @+2 {{input must be [batch, heads, seq, head_dim], got rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.rope %x, %p, %f convention <rotate_half> : (tensor<1x?x64xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<1x8x3x8xf32>, %p: tensor<4xi64>, %f: tensor<4xf32>) {
  // expected-error @+2 {{positions [4] must be [seq] with seq = 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.rope %x, %p, %f convention <rotate_half> : (tensor<1x8x3x8xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<1x8x3x8xf32>
  return
}

// -----

func.func @f(%x: tensor<1x8x?x8xf32>, %p: tensor<?xi64>, %f: tensor<?xf32>) {
  // expected-error @+2 {{inv_freq must be a static 1-D tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.rope %x, %p, %f convention <rotate_half> : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<?xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<1x8x?x8xf32>, %p: tensor<?xi64>, %f: tensor<5xf32>) {
  // expected-error @+2 {{inv_freq has 5 frequencies, more than half the head dimension 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.rope %x, %p, %f convention <interleaved> : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<5xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<1x8x?x6xf32>, %p: tensor<?xi64>, %f: tensor<4xf32>) {
  // expected-error @+2 {{inv_freq has 4 frequencies, more than half the head dimension 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.rope %x, %p, %f convention <deinterleave_rotate_half> : (tensor<1x8x?x6xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x8x?x6xf32>
  return
}

// -----

func.func @f(%x: tensor<1x8x?x8xf32>, %p: tensor<?xi64>, %f: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::etllm::RopeConvention to be one of: rotate_half, interleaved, deinterleave_rotate_half}}
  // expected-error @+1 {{failed to parse Etllm_RopeConventionAttr parameter 'value'}}
  %0 = etllm.rope %x, %p, %f convention <deinterleave> : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<8x?x8xf32>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{query, key and value must be [batch, heads, seq, dim]}}
  %0 = etllm.sdpa %q, %k, %k scale 1.0 : (tensor<8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x8x?x8xf16>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+2 {{query, key and value element types differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.sdpa %q, %k, %k scale 1.0 : (tensor<1x8x?x8xf16>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x8x?x8xf16>
  return
}

// -----

func.func @f(%q: tensor<1x8x?x4xf32>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{query head dim 4 differs from the key head dim 8}}
  %0 = etllm.sdpa %q, %k, %k scale 1.0 : (tensor<1x8x?x4xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x8x?x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x12x8xf32>) {
  // expected-error @+1 {{key [1, 4, 16, 8] and value [1, 4, 12, 8] differ in heads or length}}
  %0 = etllm.sdpa %q, %k, %v scale 1.0 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x12x8xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x?x8xf32>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{query and key batch sizes differ}}
  %0 = etllm.sdpa %q, %k, %k scale 1.0 : (tensor<2x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<2x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x6x?x8xf32>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{query heads 6 are not a multiple of the key/value heads 4}}
  %0 = etllm.sdpa %q, %k, %k scale 1.0 : (tensor<1x6x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x6x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x8x?x8xf32>, %k: tensor<1x4x16x8xf32>, %m: tensor<1x1x?x15xf32>) {
  // expected-error @+1 {{mask [1, 1, ?, 15] does not broadcast to the scores [1, 8, ?, 16]}}
  %0 = etllm.sdpa %q, %k, %k mask %m scale 1.0 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x1x?x15xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x8x3x8xf32>, %k: tensor<1x4x16x8xf32>, %p: tensor<2xi64>) {
  // expected-error @+1 {{positions [2] must be [seq] with seq = 3}}
  %0 = etllm.sdpa %q, %k, %k positions %p causal scale 1.0 : (tensor<1x8x3x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<2xi64>) -> tensor<1x8x3x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x8x?x8xf32>, %k: tensor<1x4x16x8xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{positions are only meaningful with causal}}
  %0 = etllm.sdpa %q, %k, %k positions %p scale 1.0 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<?xi64>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x8x?x8xf32>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{sliding window must be non-negative}}
  %0 = etllm.sdpa %q, %k, %k causal window -2 scale 1.0 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x8x?x8xf32>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{a sliding window needs causal attention}}
  %0 = etllm.sdpa %q, %k, %k window 4 scale 1.0 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x8x?x8xf32>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{softcap must be non-negative}}
  %0 = etllm.sdpa %q, %k, %k softcap -1.0 scale 1.0 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x8x?x8xf32>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{scale must be positive}}
  %0 = etllm.sdpa %q, %k, %k scale 0.0 : (tensor<1x8x?x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x8x?x8xf32>
  return
}

// -----

func.func @f(%c: tensor<1x4x?x8xf32>, %p: tensor<?xi64>, %v: tensor<1x4x?x8xf32>) {
  // expected-error @+1 {{cache must have a static shape}}
  %0 = etllm.kv_cache.update %c[%p], %v : (tensor<1x4x?x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32>
  return
}

// -----

func.func @f(%c: tensor<1x4x16x8xf32>, %p: tensor<?xi64>, %v: tensor<1x4x?x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{cache operand must have no other use (the update is in place)}}
  %0 = etllm.kv_cache.update %c[%p], %v : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x16x8xf32>
  return %c : tensor<1x4x16x8xf32>
}

// -----

func.func @f(%c: tensor<1x4x16x8xf32>, %p: tensor<?xi64>, %v: tensor<1x2x?x8xf32>) {
  // expected-error @+2 {{source shape [1, 2, ?, 8] does not match input [1, 4, 16, 8] with dimension 2 indexed by [?]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.kv_cache.update %c[%p], %v : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x2x?x8xf32>) -> tensor<1x4x16x8xf32>
  return
}

// -----

func.func @f(%c: tensor<1x4x16x8xf32>, %p: tensor<?xi64>, %v: tensor<1x4x?x8xf16>) {
  // expected-error @+1 {{value element type 'f16' differs from the cache's 'f32'}}
  %0 = etllm.kv_cache.update %c[%p], %v : (tensor<1x4x16x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf16>) -> tensor<1x4x16x8xf32>
  return
}

// -----

// A quantized KV cache is updated along the tokens (dimension 2) only.
func.func @f(%c: !etllm.qact<1x4x16x8, i8, per_token, sym>, %p: tensor<?xi64>, %v: tensor<1x?x16x8xf32>) {
  // expected-error @+1 {{a quantized cache is updated along dimension 2 (tokens), not 1}}
  %0 = etllm.kv_cache.update %c[%p], %v dim 1 : (!etllm.qact<1x4x16x8, i8, per_token, sym>, tensor<?xi64>, tensor<1x?x16x8xf32>) -> !etllm.qact<1x4x16x8, i8, per_token, sym>
  return
}

// -----

// One scale per token and head: a per-block qact is no KV cache.
func.func @f(%c: !etllm.qact<1x4x16x32, i8, per_block, sym>, %p: tensor<?xi64>, %v: tensor<1x4x?x32xf32>) {
  // expected-error @+1 {{a quantized KV cache is per_token and sym (one scale per token and head)}}
  %0 = etllm.kv_cache.update %c[%p], %v : (!etllm.qact<1x4x16x32, i8, per_block, sym>, tensor<?xi64>, tensor<1x4x?x32xf32>) -> !etllm.qact<1x4x16x32, i8, per_block, sym>
  return
}

// -----

func.func @f(%c: !etllm.qact<1x4x?x8, i8, per_token, sym>, %p: tensor<?xi64>, %v: tensor<1x4x?x8xf32>) {
  // expected-error @+1 {{a quantized KV cache has a static shape}}
  %0 = etllm.kv_cache.update %c[%p], %v : (!etllm.qact<1x4x?x8, i8, per_token, sym>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> !etllm.qact<1x4x?x8, i8, per_token, sym>
  return
}

// -----

func.func @f(%c: !etllm.qact<1x4x16x8, i8, per_token, sym>, %p: tensor<?xi64>, %v: tensor<1x4x?x8xi32>) {
  // expected-error @+2 {{a quantized cache takes float values}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = etllm.kv_cache.update %c[%p], %v : (!etllm.qact<1x4x16x8, i8, per_token, sym>, tensor<?xi64>, tensor<1x4x?x8xi32>) -> !etllm.qact<1x4x16x8, i8, per_token, sym>
  return
}

// -----

// sdpa reads both caches quantized or neither.
func.func @f(%q: tensor<1x4x1x8xf32>, %k: !etllm.qact<1x4x16x8, i8, per_token, sym>, %v: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{key and value must both be float or both quantized KV caches}}
  %0 = etllm.sdpa %q, %k, %v scale 0.5 : (tensor<1x4x1x8xf32>, !etllm.qact<1x4x16x8, i8, per_token, sym>, tensor<1x4x16x8xf32>) -> tensor<1x4x1x8xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x1x8xf32>, %k: !etllm.qact<1x4x16x8, i8, per_token, asym>, %v: !etllm.qact<1x4x16x8, i8, per_token, asym>) {
  // expected-error @+1 {{a quantized KV cache is per_token and sym (one scale per token and head)}}
  %0 = etllm.sdpa %q, %k, %v scale 0.5 : (tensor<1x4x1x8xf32>, !etllm.qact<1x4x16x8, i8, per_token, asym>, !etllm.qact<1x4x16x8, i8, per_token, asym>) -> tensor<1x4x1x8xf32>
  return
}

// -----

// expected-error @+1 {{a quantized KV cache is [batch, kv_heads, length, head_dim]}}
etllm.buffer @bad : !etllm.qact<4x16x8, i8, per_token, sym>

// -----

func.func @f(%x: tensor<1x?x64xf32>) {
  // expected-error @+1 {{result shape [1, ?, 32] differs from the input shape [1, ?, 64]}}
  %0 = etllm.quantize_dynamic %x : tensor<1x?x64xf32> -> !etllm.qact<1x?x32, i8, per_token, asym>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: !etllm.qweight<2x128x64, i4, group 32, sym, f32>) {
  // expected-error @+1 {{weight must have rank 2, got 3}}
  %0 = etllm.qlinear %x, %w : (tensor<1x?x64xf32>, !etllm.qweight<2x128x64, i4, group 32, sym, f32>) -> tensor<1x?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x32xf32>, %w: !etllm.qweight<128x64, i4, group 32, sym, f32>) {
  // expected-error @+1 {{input features 32 do not match weight [128, 64]}}
  %0 = etllm.qlinear %x, %w : (tensor<1x?x32xf32>, !etllm.qweight<128x64, i4, group 32, sym, f32>) -> tensor<1x?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: !etllm.qweight<128x64, i4, group 32, sym, f32>) {
  // expected-error @+1 {{result element type differs from the input's}}
  %0 = etllm.qlinear %x, %w : (tensor<1x?x64xf32>, !etllm.qweight<128x64, i4, group 32, sym, f32>) -> tensor<1x?x128xf16>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: !etllm.qweight<128x64, i4, group 32, sym, f32>) {
  // expected-error @+1 {{result shape [1, ?, 64] should be [1, ?, 128]}}
  %0 = etllm.qlinear %x, %w : (tensor<1x?x64xf32>, !etllm.qweight<128x64, i4, group 32, sym, f32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>, %w: !etllm.qweight<128x64, i4, group 32, sym, f32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{bias shape [64] does not match the 128 output features}}
  %0 = etllm.qlinear %x, %w, %b : (tensor<1x?x64xf32>, !etllm.qweight<128x64, i4, group 32, sym, f32>, tensor<64xf32>) -> tensor<1x?x128xf32>
  return
}

// -----

func.func @f(%w: !etllm.qweight<512x64, i8, group 64, sym, f32>, %t: tensor<1x?xi64>) {
  // expected-error @+1 {{result shape [1, ?, 32] should be [1, ?, 64]}}
  %0 = etllm.qembedding %w, %t : (!etllm.qweight<512x64, i8, group 64, sym, f32>, tensor<1x?xi64>) -> tensor<1x?x32xf32>
  return
}

// -----

func.func @f(%w: !etllm.qweight<512, i8, group 64, sym, f32>, %t: tensor<1x?xi64>) {
  // expected-error @+1 {{table must have rank 2, got 1}}
  %0 = etllm.qembedding %w, %t : (!etllm.qweight<512, i8, group 64, sym, f32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @f(%w: !etllm.qweight<128x64, i4, group 32, sym, f32>) {
  // expected-error @+1 {{result shape [64, 128] differs from the weight's [128, 64]}}
  %0 = etllm.dequantize %w : !etllm.qweight<128x64, i4, group 32, sym, f32> -> tensor<64x128xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{refers to unknown function @missing}}
  %0 = etllm.delegate.call "cpu" @missing(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @sub(%x: tensor<4xf32>) -> tensor<4xf32> attributes {etllm.backend = "cpu"}
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{type does not match the callee's '(tensor<4xf32>) -> tensor<4xf32>'}}
  %0 = etllm.delegate.call "cpu" @sub(%x) : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @sub(%x: tensor<4xf32>) -> tensor<4xf32>
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{callee @sub is not marked etllm.backend = "cpu"}}
  %0 = etllm.delegate.call "cpu" @sub(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{quantized weights have 4 or 8 bits, got 2}}
etllm.parameter @p : !etllm.qweight<4x32, i2, group 32, sym, f32>

// -----

// expected-error @+1 {{group size 48 does not divide the last dimension 64}}
etllm.parameter @p : !etllm.qweight<4x64, i4, group 48, sym, f32>

// -----

// expected-error @+1 {{group size must be positive, got 0}}
etllm.parameter @p : !etllm.qweight<4x64, i4, group 0, sym, f32>

// -----

// expected-error @+1 {{scale type must be f16 or f32, got 'bf16'}}
etllm.parameter @p : !etllm.qweight<4x64, i4, group 32, sym, bf16>

// -----

// expected-error @+1 {{quantized weight dimensions must be static and positive}}
etllm.parameter @p : !etllm.qweight<0x64, i4, group 32, sym, f32>

// -----

// expected-error @+1 {{expected 'sym' or 'asym', got 'symmetric'}}
etllm.parameter @p : !etllm.qweight<4x64, i4, group 32, symmetric, f32>

// -----

// expected-error @+1 {{expected the storage type i4 or i8}}
etllm.parameter @p : !etllm.qweight<4x64, f32, group 32, sym, f32>

// -----

func.func @f(%x: tensor<1x?x64xf32>) {
  // expected-error @+1 {{dynamic activation quantization is 8-bit, got 4}}
  %0 = etllm.quantize_dynamic %x : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i4, per_token, asym>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>) {
  // expected-error @+1 {{expected 'per_token', 'per_tensor' or 'per_block', got 'per_channel'}}
  %0 = etllm.quantize_dynamic %x : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_channel, asym>
  return
}

// -----

func.func @f(%x: tensor<1x?x64xf32>) {
  // expected-error @+1 {{per-block activation quantization is symmetric}}
  %0 = etllm.quantize_dynamic %x : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_block, asym>
  return
}

// -----

// A K-quant row is whole super-blocks of 256 values.
// expected-error @+1 {{a q4_k weight's rows are whole blocks of 256 values, not 128}}
etllm.parameter @p : !etllm.qweight<2x128, q4_k>

// -----

// Q5_0 rows are whole blocks of 32.
// expected-error @+1 {{a q5_0 weight's rows are whole blocks of 32 values, not 48}}
etllm.parameter @p : !etllm.qweight<2x48, q5_0>

// -----

// expected-error @+1 {{expected the storage type i4 or i8 or a ggml scheme (q5_0, q5_1, q4_k, q5_k, q6_k), got 'q3_k'}}
etllm.parameter @p : !etllm.qweight<2x256, q3_k>

// -----

// `affine` is spelled with its parameters.
// expected-error @+1 {{expected the storage type i4 or i8 or a ggml scheme (q5_0, q5_1, q4_k, q5_k, q6_k), got 'affine'}}
etllm.parameter @p : !etllm.qweight<2x256, affine>

// -----

// A ggml-scheme weight comes from a GGUF's blocks: no inline value.
// expected-error @+1 {{a q6_k weight keeps a GGUF's blocks: it has no inline value}}
etllm.parameter @p : !etllm.qweight<1x256, q6_k> = dense<1.0> : tensor<1x256xf32>
