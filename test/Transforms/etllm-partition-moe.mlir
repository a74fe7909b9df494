// RUN: etllm-opt %s --split-input-file --etllm-partition="backends=cpu" --verify-diagnostics | FileCheck %s

// etllm.moe over quantized stacked experts (cpu-int4's int4, group 32,
// f16 scales; the block layout packs each expert on its own) runs inside
// the cpu delegate, with its RMSNorm: one outlined function, no moe
// left outside.
// CHECK-LABEL: func.func private @cpu_0
// CHECK-SAME: attributes {etllm.backend = "cpu"}
// CHECK: etllm.rms_norm
// CHECK: etllm.moe {{.*}} {etllm.activations = "int8-block"} : (tensor<?x64xf32>, tensor<5x64xf32>, !etllm.qweight<5x32x64, i4, group 32, sym, f16>, !etllm.qweight<5x32x64, i4, group 32, sym, f16>, !etllm.qweight<5x64x32, i4, group 32, sym, f16>) -> tensor<?x64xf32>
// CHECK: return
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "cpu" @cpu_0
// CHECK-NOT: etllm.moe
etllm.parameter @norm : tensor<64xf32>
etllm.parameter @router : tensor<5x64xf32>
etllm.parameter @gate : !etllm.qweight<5x32x64, i4, group 32, sym, f16>
etllm.parameter @up : !etllm.qweight<5x32x64, i4, group 32, sym, f16>
etllm.parameter @down : !etllm.qweight<5x64x32, i4, group 32, sym, f16>
func.func @forward(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %n = etllm.parameter.get @norm : tensor<64xf32>
  %h = etllm.rms_norm %x, %n eps 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %r = etllm.parameter.get @router : tensor<5x64xf32>
  %g = etllm.parameter.get @gate : !etllm.qweight<5x32x64, i4, group 32, sym, f16>
  %u = etllm.parameter.get @up : !etllm.qweight<5x32x64, i4, group 32, sym, f16>
  %d = etllm.parameter.get @down : !etllm.qweight<5x64x32, i4, group 32, sym, f16>
  %y = etllm.moe %h, %r, %g, %u, %d top_k 2 scoring <softmax> norm_topk_prob {etllm.activations = "int8-block"}
      : (tensor<?x64xf32>, tensor<5x64xf32>, !etllm.qweight<5x32x64, i4, group 32, sym, f16>, !etllm.qweight<5x32x64, i4, group 32, sym, f16>, !etllm.qweight<5x64x32, i4, group 32, sym, f16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// DeepSeek-V3 routing (sigmoid, a score bias, groups) and int8 per-channel
// experts (cpu-int8) with odd sizes: also inside.
// CHECK-LABEL: func.func private @cpu_0
// CHECK: etllm.moe {{.*}} bias {{.*}} method <noaux_tc> groups 2
// CHECK-LABEL: func.func @forward
// CHECK-NOT: etllm.moe
etllm.parameter @norm : tensor<40xf32>
etllm.parameter @router : tensor<6x40xf32>
etllm.parameter @bias : tensor<6xf32>
etllm.parameter @gate : !etllm.qweight<6x24x40, i8, group 40, sym, f32>
etllm.parameter @up : !etllm.qweight<6x24x40, i8, group 40, sym, f32>
etllm.parameter @down : !etllm.qweight<6x40x24, i8, group 24, sym, f32>
func.func @forward(%x: tensor<?x40xf32>) -> tensor<?x40xf32> {
  %n = etllm.parameter.get @norm : tensor<40xf32>
  %h = etllm.rms_norm %x, %n eps 1.0e-05 : (tensor<?x40xf32>, tensor<40xf32>) -> tensor<?x40xf32>
  %r = etllm.parameter.get @router : tensor<6x40xf32>
  %b = etllm.parameter.get @bias : tensor<6xf32>
  %g = etllm.parameter.get @gate : !etllm.qweight<6x24x40, i8, group 40, sym, f32>
  %u = etllm.parameter.get @up : !etllm.qweight<6x24x40, i8, group 40, sym, f32>
  %d = etllm.parameter.get @down : !etllm.qweight<6x40x24, i8, group 24, sym, f32>
  %y = etllm.moe %h, %r, %g, %u, %d bias %b top_k 2 scoring <sigmoid> method <noaux_tc> groups 2 topk_group 1 norm_topk_prob scale 2.5
      : (tensor<?x40xf32>, tensor<6x40xf32>, !etllm.qweight<6x24x40, i8, group 40, sym, f32>, !etllm.qweight<6x24x40, i8, group 40, sym, f32>, !etllm.qweight<6x40x24, i8, group 24, sym, f32>, tensor<6xf32>) -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}

// -----

// Near miss: float experts (cpu-fp32) have no packed form: the moe
// stays on the portable kernel, after the delegated RMSNorm.
// CHECK-LABEL: func.func private @cpu_0
// CHECK-NOT: etllm.moe
// CHECK: return
// CHECK-LABEL: func.func @forward
// CHECK: %[[H:.+]] = etllm.delegate.call "cpu" @cpu_0
// CHECK: etllm.moe %[[H]]
etllm.parameter @norm : tensor<64xf32>
etllm.parameter @w : tensor<64x64xf32>
etllm.parameter @router : tensor<5x64xf32>
etllm.parameter @gate : tensor<5x32x64xf32>
etllm.parameter @down : tensor<5x64x32xf32>
func.func @forward(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %n = etllm.parameter.get @norm : tensor<64xf32>
  %h = etllm.rms_norm %x, %n eps 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %r = etllm.parameter.get @router : tensor<5x64xf32>
  %g = etllm.parameter.get @gate : tensor<5x32x64xf32>
  %d = etllm.parameter.get @down : tensor<5x64x32xf32>
  %y = etllm.moe %h, %r, %g, %g, %d top_k 2 scoring <softmax>
      : (tensor<?x64xf32>, tensor<5x64xf32>, tensor<5x32x64xf32>, tensor<5x32x64xf32>, tensor<5x64x32xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Near miss: int4 experts in groups of 16 (not a multiple of the block
// layout's 32 values) stay on the portable kernel.
// CHECK-LABEL: func.func @forward
// CHECK: etllm.delegate.call "cpu" @cpu_0
// CHECK: etllm.moe {{.*}} !etllm.qweight<5x32x64, i4, group 16, sym, f16>
etllm.parameter @norm : tensor<64xf32>
etllm.parameter @router : tensor<5x64xf32>
etllm.parameter @gate : !etllm.qweight<5x32x64, i4, group 16, sym, f16>
etllm.parameter @down : !etllm.qweight<5x64x32, i4, group 16, sym, f16>
func.func @forward(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %n = etllm.parameter.get @norm : tensor<64xf32>
  %h = etllm.rms_norm %x, %n eps 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %r = etllm.parameter.get @router : tensor<5x64xf32>
  %g = etllm.parameter.get @gate : !etllm.qweight<5x32x64, i4, group 16, sym, f16>
  %d = etllm.parameter.get @down : !etllm.qweight<5x64x32, i4, group 16, sym, f16>
  %y = etllm.moe %h, %r, %g, %g, %d top_k 2 scoring <softmax>
      : (tensor<?x64xf32>, tensor<5x64xf32>, !etllm.qweight<5x32x64, i4, group 16, sym, f16>, !etllm.qweight<5x32x64, i4, group 16, sym, f16>, !etllm.qweight<5x64x32, i4, group 16, sym, f16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The activations mark belongs on an etllm.moe, with "int8-block" or
// "int8-token".
etllm.parameter @w : tensor<8x8xf32>
func.func @forward(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %w = etllm.parameter.get @w : tensor<8x8xf32>
  // expected-error@+1 {{'etllm.activations' must be "int8-block" or "int8-token" on an etllm.moe}}
  %y = etllm.linear %x, %w {etllm.activations = "int8-block"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}
