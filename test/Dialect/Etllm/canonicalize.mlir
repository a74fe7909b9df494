// RUN: etllm-opt %s --split-input-file --canonicalize | FileCheck %s
// Every etllm folder and canonicalization pattern, with its near misses.

// CHECK-LABEL: func.func @add_zero
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]], %[[X]]
func.func @add_zero(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %z = etllm.constant dense<0.0> : tensor<f32>
  %0 = etllm.add %x, %z : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = etllm.add %z, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Adding zero that broadcasts x to a bigger shape is not an identity.
// CHECK-LABEL: func.func @add_zero_broadcasting
// CHECK: etllm.add
func.func @add_zero_broadcasting(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %z = etllm.constant dense<0.0> : tensor<2x4xf32>
  %0 = etllm.add %x, %z : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @sub_mul_div_identities
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]]
func.func @sub_mul_div_identities(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %z = etllm.constant dense<0.0> : tensor<f32>
  %o = etllm.constant dense<1.0> : tensor<f32>
  %0 = etllm.sub %x, %z : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = etllm.mul %o, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = etllm.div %x, %o : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// 0 - x and 1 / x are not identities.
// CHECK-LABEL: func.func @sub_div_not_commutative
// CHECK: etllm.sub
// CHECK: etllm.div
func.func @sub_div_not_commutative(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %z = etllm.constant dense<0.0> : tensor<f32>
  %o = etllm.constant dense<1.0> : tensor<f32>
  %0 = etllm.sub %z, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = etllm.div %o, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @mul_by_two_stays
// CHECK: etllm.mul
func.func @mul_by_two_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = etllm.constant dense<2.0> : tensor<f32>
  %0 = etllm.mul %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @double_neg
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @double_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = etllm.neg %x : tensor<4xf32>
  %1 = etllm.neg %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @convert_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT: %[[H:.+]] = etllm.convert %[[X]] : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT: return %[[X]], %[[H]]
func.func @convert_same_type(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf16>) {
  %0 = etllm.convert %x : tensor<4xf32> -> tensor<4xf32>
  %1 = etllm.convert %x : tensor<4xf32> -> tensor<4xf16>
  return %0, %1 : tensor<4xf32>, tensor<4xf16>
}

// -----

// Converting down and back up is not an identity (it rounds).
// CHECK-LABEL: func.func @convert_round_trip_stays
// CHECK: etllm.convert
// CHECK: etllm.convert
func.func @convert_round_trip_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = etllm.convert %x : tensor<4xf32> -> tensor<4xf16>
  %1 = etllm.convert %0 : tensor<4xf16> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_twice
// CHECK-SAME: (%[[X:.+]]: tensor<1x?x8x4xf32>)
// CHECK-NEXT: return %[[X]], %[[X]]
func.func @transpose_twice(%x: tensor<1x?x8x4xf32>) -> (tensor<1x?x8x4xf32>, tensor<1x?x8x4xf32>) {
  %0 = etllm.transpose %x 1, 2 : tensor<1x?x8x4xf32> -> tensor<1x8x?x4xf32>
  %1 = etllm.transpose %0 2, 1 : tensor<1x8x?x4xf32> -> tensor<1x?x8x4xf32>
  %2 = etllm.transpose %x -1, 3 : tensor<1x?x8x4xf32> -> tensor<1x?x8x4xf32>
  return %1, %2 : tensor<1x?x8x4xf32>, tensor<1x?x8x4xf32>
}

// -----

// Two different transposes do not cancel.
// CHECK-LABEL: func.func @transpose_different
// CHECK: etllm.transpose
// CHECK: etllm.transpose
func.func @transpose_different(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = etllm.transpose %x 0, 1 : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = etllm.transpose %0 1, 2 : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  return %1 : tensor<3x4x2xf32>
}

// -----

// CHECK-LABEL: func.func @permute_identity
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[P:.+]] = etllm.permute %[[X]] [1, 0]
// CHECK-NEXT: return %[[X]], %[[P]]
func.func @permute_identity(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %0 = etllm.permute %x [0, -1] : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = etllm.permute %x [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.+]]: tensor<1x?x64xf32>, %[[S:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]], %[[S]]
func.func @reshape_identity(%x: tensor<1x?x64xf32>, %s: tensor<4x8xf32>) -> (tensor<1x?x64xf32>, tensor<4x8xf32>) {
  %0 = etllm.reshape %x [1, -1, 64] : tensor<1x?x64xf32> -> tensor<1x?x64xf32>
  %1 = etllm.reshape %s [-1, 8] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0, %1 : tensor<1x?x64xf32>, tensor<4x8xf32>
}

// -----

// A dynamic reshape that moves the dynamic dimension is not an identity,
// and chains of reshapes fold to one (here: back to the identity).
// CHECK-LABEL: func.func @reshape_dynamic
// CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>)
// CHECK-NEXT: %[[R:.+]] = etllm.reshape %[[X]] [4, -1] : tensor<?x4xf32> -> tensor<4x?xf32>
// CHECK-NEXT: return %[[R]], %[[X]]
func.func @reshape_dynamic(%x: tensor<?x4xf32>) -> (tensor<4x?xf32>, tensor<?x4xf32>) {
  %0 = etllm.reshape %x [4, -1] : tensor<?x4xf32> -> tensor<4x?xf32>
  %1 = etllm.reshape %0 [-1, 4] : tensor<4x?xf32> -> tensor<?x4xf32>
  return %0, %1 : tensor<4x?xf32>, tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.+]]: tensor<1x?x64xf32>)
// CHECK-NEXT: %[[R:.+]] = etllm.reshape %[[X]] [1, -1, 4, 16] : tensor<1x?x64xf32> -> tensor<1x?x4x16xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<1x?x64xf32>) -> tensor<1x?x4x16xf32> {
  %0 = etllm.reshape %x [1, -1, 8, 8] : tensor<1x?x64xf32> -> tensor<1x?x8x8xf32>
  %1 = etllm.reshape %0 [1, -1, 4, 16] : tensor<1x?x8x8xf32> -> tensor<1x?x4x16xf32>
  return %1 : tensor<1x?x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @squeeze_unsqueeze
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @squeeze_unsqueeze(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = etllm.unsqueeze %x dim 1 : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %1 = etllm.squeeze %0 dim -2 : tensor<4x1x8xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Squeezing another size-1 dimension is not the inverse.
// CHECK-LABEL: func.func @squeeze_other_dim
// CHECK: etllm.unsqueeze
// CHECK: etllm.squeeze
func.func @squeeze_other_dim(%x: tensor<1x8xf32>) -> tensor<8x1xf32> {
  %0 = etllm.unsqueeze %x dim 2 : tensor<1x8xf32> -> tensor<1x8x1xf32>
  %1 = etllm.squeeze %0 dim 0 : tensor<1x8x1xf32> -> tensor<8x1xf32>
  return %1 : tensor<8x1xf32>
}

// -----

// CHECK-LABEL: func.func @expand_identity
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[E:.+]] = etllm.expand
// CHECK-NEXT: return %[[X]], %[[E]]
func.func @expand_identity(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<2x4x8xf32>) {
  %0 = etllm.expand %x [-1, 8] : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = etllm.expand %x [2, 4, 8] : tensor<4x8xf32> -> tensor<2x4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<2x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @slice_full
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[S:.+]] = etllm.slice %[[X]] dim 1 [0 : 4]
// CHECK-NEXT: return %[[X]], %[[S]]
func.func @slice_full(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>) {
  %0 = etllm.slice %x dim 1 [0 : 9223372036854775807] : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = etllm.slice %x dim 1 [0 : 4] : tensor<4x8xf32> -> tensor<4x4xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @cat_single
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[C:.+]] = etllm.cat %[[X]], %[[X]]
// CHECK-NEXT: return %[[X]], %[[C]]
func.func @cat_single(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>) {
  %0 = etllm.cat %x dim 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = etllm.cat %x, %x dim 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<8x8xf32>
}

// -----

// Writing a buffer's unchanged value back is a no-op.
// CHECK-LABEL: func.func @write_back_unchanged
// CHECK-NOT: etllm.buffer.write
// CHECK: return
etllm.buffer @cache : tensor<2x4xf32>
func.func @write_back_unchanged() {
  %0 = etllm.buffer.read @cache : tensor<2x4xf32>
  etllm.buffer.write %0 to @cache : tensor<2x4xf32>
  return
}

// -----

// ... but not when another write to the buffer comes in between.
// CHECK-LABEL: func.func @write_back_after_write
// CHECK: etllm.buffer.write %{{.+}} to @cache
// CHECK: etllm.buffer.write %{{.+}} to @cache
etllm.buffer @cache : tensor<2x4xf32>
func.func @write_back_after_write(%x: tensor<2x4xf32>) {
  %0 = etllm.buffer.read @cache : tensor<2x4xf32>
  etllm.buffer.write %x to @cache : tensor<2x4xf32>
  etllm.buffer.write %0 to @cache : tensor<2x4xf32>
  return
}

// -----

// ... nor when the value comes from another buffer.
// CHECK-LABEL: func.func @write_back_other_buffer
// CHECK: etllm.buffer.write %{{.+}} to @b
etllm.buffer @a : tensor<2x4xf32>
etllm.buffer @b : tensor<2x4xf32>
func.func @write_back_other_buffer() {
  %0 = etllm.buffer.read @a : tensor<2x4xf32>
  etllm.buffer.write %0 to @b : tensor<2x4xf32>
  return
}

// -----

// Unused pure ops are removed; buffer reads are not reordered past writes.
// CHECK-LABEL: func.func @dead_code
// CHECK-NOT: etllm.exp
// CHECK: return
func.func @dead_code(%x: tensor<4xf32>) {
  %0 = etllm.exp %x : tensor<4xf32>
  return
}
