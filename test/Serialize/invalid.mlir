// RUN: etllm-translate --mlir-to-pte %s --split-input-file --verify-diagnostics -o /dev/null
// Every diagnostic of the serializer's lowering, one case each. (The memory
// plan's are in plan-invalid.mlir, the weights' in weights-invalid.mlir.)

// A module's methods are its public functions (private ones are backends'
// subgraphs).
// expected-error @+1 {{the module has no public function (a method: `forward`, or `prefill` and `decode`)}}
module {
  func.func private @main() {
    return
  }
}

// -----

// expected-error @+1 {{`forward` must have a single block}}
func.func @forward() {
  return
^bb1:
  return
}

// -----

// A dynamic input dimension needs the sequence bound.
// expected-error @+1 {{dynamic dimensions need a bound: set max_seq_len in the module's etllm.model_config}}
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}

// -----

// Values are tensors (or quantized weights and activations).
// expected-error @+1 {{cannot serialize values of type 'i32'}}
func.func @forward(%x: i32) -> i32 {
  return %x : i32
}

// -----

// expected-error @+1 {{cannot serialize element type 'f64'}}
func.func @forward(%x: tensor<4xf64>) -> tensor<4xf64> {
  return %x : tensor<4xf64>
}

// -----

// expected-error @+1 {{rank 9 exceeds the runtime's 8}}
func.func @forward(%x: tensor<1x1x1x1x1x1x1x1x2xf32>) -> tensor<1x1x1x1x1x1x1x1x2xf32> {
  return %x : tensor<1x1x1x1x1x1x1x1x2xf32>
}

// -----

// expected-error @+1 {{value cannot be stored}}
func.func @forward(%x: tensor<4611686018427387904x8xf32>) -> tensor<4611686018427387904x8xf32> {
  return %x : tensor<4611686018427387904x8xf32>
}

// -----

// Only ops with a kernel contract (and constants, parameters, buffers,
// delegate calls) become instructions.
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot serialize this operation}}
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @forward() -> tensor<4xf32> {
  // expected-error @+1 {{only dense constants can be serialized}}
  %c = etllm.constant dense_resource<__elided__> : tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

func.func private @sub(%x: tensor<4xf32>) -> tensor<4xf32> attributes {etllm.backend = "missing"} {
  return %x : tensor<4xf32>
}
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{no backend 'missing' is registered}}
  %y = etllm.delegate.call "missing" @sub(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A buffer read is the buffer's storage: writing the buffer back while the
// read is still used would change what the read says.
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

// Weights come from the checkpoint the module names, or inline.
func.func @forward() -> tensor<4xf32> {
  %w = etllm.parameter.get @w : tensor<4xf32>
  return %w : tensor<4xf32>
}
// expected-error @+1 {{parameter has no inline value and the module has no etllm.checkpoint attribute}}
etllm.parameter @w : tensor<4xf32>

// -----

// expected-error @+1 {{cannot open the checkpoint: /nonexistent/model.safetensors: cannot open}}
module attributes {etllm.checkpoint = "/nonexistent/model.safetensors"} {
  etllm.parameter @w : tensor<4xf32>
  func.func @forward() -> tensor<4xf32> {
    %w = etllm.parameter.get @w : tensor<4xf32>
    return %w : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{inline parameter values must be dense floats}}
etllm.parameter @w : tensor<4xi32> = dense<[1, 2, 3, 4]> : tensor<4xi32>
func.func @forward() -> tensor<4xi32> {
  %w = etllm.parameter.get @w : tensor<4xi32>
  return %w : tensor<4xi32>
}
