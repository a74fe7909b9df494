// RUN: etllm-opt %s --split-input-file --verify-diagnostics --etllm-plan-memory
// What the planning stage refuses, one case each (the serializer's lowering
// diagnostics, test/Serialize/invalid.mlir, apply here too).

// A dynamic input dimension needs the sequence bound.
// expected-error @+1 {{dynamic dimensions need a bound: set max_seq_len in the module's etllm.model_config}}
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %e = etllm.exp %x : tensor<?x4xf32>
  return %e : tensor<?x4xf32>
}

// -----

// A buffer read is the buffer's storage: writing the buffer back while the
// read is still used would clobber it.
etllm.buffer @state : tensor<4xf32>
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{the read}}
  %old = etllm.buffer.read @state : tensor<4xf32>
  %new = etllm.exp %x : tensor<4xf32>
  // expected-error @+1 {{buffer 'state' is written back while an earlier read of it is still used; the read cannot alias the buffer}}
  etllm.buffer.write %new to @state : tensor<4xf32>
  %y = etllm.add %old, %new : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The near miss: the read's last use comes before the write-back.
etllm.buffer @state : tensor<4xf32>
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %old = etllm.buffer.read @state : tensor<4xf32>
  %y = etllm.add %old, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  etllm.buffer.write %y to @state : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Only ops the runtime can run are planned.
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot serialize this operation}}
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Without a public function there is nothing to plan (and nothing is
// recorded).
func.func private @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
