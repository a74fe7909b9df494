// RUN: etllm-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// The etllm.lora module attribute: the adapters the serializer merges into
// the parameters, in order. One case per diagnostic, and a valid one.

// CHECK: module attributes {etllm.lora = [{path = "/a", scale = 5.000000e-01 : f64}, {path = "/b", scale = -1.000000e+00 : f64}]}
module attributes {etllm.lora = [{path = "/a", scale = 0.5 : f64},
                                 {path = "/b", scale = -1.0 : f64}]} {
}

// -----

// expected-error @+1 {{'etllm.lora' must be an array of {path = "...", scale = <f64>}}}
module attributes {etllm.lora = {path = "/a", scale = 0.5 : f64}} {
}

// -----

// expected-error @+1 {{'etllm.lora' must be an array of {path = "...", scale = <f64>}}}
module attributes {etllm.lora = [{path = "/a"}]} {
}

// -----

// expected-error @+1 {{'etllm.lora' must be an array of {path = "...", scale = <f64>}}}
module attributes {etllm.lora = [{path = 3 : i64, scale = 0.5 : f64}]} {
}

// -----

// expected-error @+1 {{'etllm.lora': the scale of adapter '/a' is not finite}}
module attributes {etllm.lora = [{path = "/a", scale = 0x7FF8000000000000 : f64}]} {
}

// -----

module {
  // expected-error @+1 {{'etllm.lora' belongs on a builtin.module}}
  func.func @f() attributes {etllm.lora = []} {
    return
  }
}
