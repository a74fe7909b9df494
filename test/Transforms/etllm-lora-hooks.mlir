// RUN: etllm-opt %s --etllm-lora-hooks="targets=q_proj,k_proj,down_proj max-rank=16" | FileCheck %s
// RUN: etllm-opt %s --etllm-lora-hooks | FileCheck %s --check-prefix=OFF
// RUN: not etllm-opt %s --etllm-lora-hooks="targets=q_proj,zz_proj" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not etllm-opt %s --etllm-lora-hooks="targets=self_attn.q_proj" 2>&1 | FileCheck %s --check-prefix=PATH
// RUN: not etllm-opt %s --etllm-lora-hooks="targets=q_proj max-rank=0" 2>&1 | FileCheck %s --check-prefix=RANK
// UNKNOWN: no f32-activation linear layer of this model is a 'zz_proj'
// PATH: target 'self_attn.q_proj' is not a module kind
// RANK: max-rank 0 is outside 1..1024

// q and k read one input: both hooks go after both linears (before the
// first use of either output), so the backend can still run q and k as one
// group; v is not a target. The hook reads the float input.
// CHECK: module attributes {etllm.lora_max_rank = 16 : i64}
// CHECK-LABEL: func.func @attention
// CHECK: %[[Q:.+]] = etllm.linear %[[X:[^,]+]], %{{.+}} {etllm.module = "model.layers.0.self_attn.q_proj"}
// CHECK-NEXT: %[[K:.+]] = etllm.linear %[[X]], %{{.+}} {etllm.module = "model.layers.0.self_attn.k_proj"}
// CHECK-NEXT: %[[V:.+]] = etllm.linear %[[X]]
// CHECK-NEXT: %[[HQ:.+]] = etllm.lora %[[X]], %[[Q]] {etllm.module = "model.layers.0.self_attn.q_proj", hook = 0 : i64, target = "model.layers.0.self_attn.q_proj"}
// CHECK-NEXT: %[[HK:.+]] = etllm.lora %[[X]], %[[K]] {etllm.module = "model.layers.0.self_attn.k_proj", hook = 1 : i64, target = "model.layers.0.self_attn.k_proj"}
// CHECK-NEXT: %[[S:.+]] = etllm.add %[[HQ]], %[[HK]]
// CHECK-NEXT: etllm.add %[[S]], %[[V]]
// OFF-NOT: etllm.lora
// OFF-NOT: lora_max_rank
etllm.parameter @wq : tensor<8x8xf32>
etllm.parameter @wk : tensor<8x8xf32>
etllm.parameter @wv : tensor<8x8xf32>
func.func @attention(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %wq = etllm.parameter.get @wq : tensor<8x8xf32>
  %wk = etllm.parameter.get @wk : tensor<8x8xf32>
  %wv = etllm.parameter.get @wv : tensor<8x8xf32>
  %q = etllm.linear %x, %wq {etllm.module = "model.layers.0.self_attn.q_proj"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %k = etllm.linear %x, %wk {etllm.module = "model.layers.0.self_attn.k_proj"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %v = etllm.linear %x, %wv {etllm.module = "model.layers.0.self_attn.v_proj"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %s = etllm.add %q, %k : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  %r = etllm.add %s, %v : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  return %r : tensor<1x?x8xf32>
}

// A dynamically quantized input: the hook reads the float activation before
// quantize_dynamic. A result returned directly gets its hook before the
// return. A linear whose weight is computed is not hooked.
// CHECK-LABEL: func.func @quantized
// CHECK: %[[A:.+]] = etllm.quantize_dynamic %[[X:[^ ]+]]
// CHECK: %[[Y:.+]] = etllm.qlinear %[[A]]
// CHECK: %[[H:.+]] = etllm.lora %[[X]], %[[Y]] {{.*}}hook = 2 : i64, target = "model.layers.1.mlp.down_proj"}
// CHECK-NOT: etllm.lora
// CHECK: return %[[H]]
// OFF-LABEL: func.func @quantized
// OFF-NOT: etllm.lora
etllm.parameter @wd : !etllm.qweight<16x64, i4, group 32, sym, f32>
func.func @quantized(%x: tensor<1x?x64xf32>, %wq: tensor<16x64xf32>) -> (tensor<1x?x16xf32>, tensor<1x?x16xf32>) {
  %w = etllm.parameter.get @wd : !etllm.qweight<16x64, i4, group 32, sym, f32>
  %a = etllm.quantize_dynamic %x {etllm.module = "model.layers.1.mlp.down_proj"} : tensor<1x?x64xf32> -> !etllm.qact<1x?x64, i8, per_token, asym>
  %y = etllm.qlinear %a, %w {etllm.module = "model.layers.1.mlp.down_proj"} : (!etllm.qact<1x?x64, i8, per_token, asym>, !etllm.qweight<16x64, i4, group 32, sym, f32>) -> tensor<1x?x16xf32>
  %z = etllm.linear %x, %wq {etllm.module = "model.layers.1.self_attn.q_proj"} : (tensor<1x?x64xf32>, tensor<16x64xf32>) -> tensor<1x?x16xf32>
  return %y, %z : tensor<1x?x16xf32>, tensor<1x?x16xf32>
}
