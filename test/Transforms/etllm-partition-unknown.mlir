// RUN: etllm-opt %s --etllm-partition="backends=nope" --verify-diagnostics

// An unknown backend is an error that lists the registered ones.
// expected-error @+1 {{etllm-partition: unknown backend 'nope' (registered: cpu, vulkan)}}
module {
  func.func @forward() {
    return
  }
}
