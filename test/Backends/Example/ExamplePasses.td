//===- ExamplePasses.td - The example backend's own pass ---*- tablegen -*-===//
#ifndef ETLLM_TEST_EXAMPLE_PASSES_TD
#define ETLLM_TEST_EXAMPLE_PASSES_TD

include "mlir/Pass/PassBase.td"

def ExampleDecomposeSiluPass
    : Pass<"example-decompose-silu", "mlir::func::FuncOp"> {
  let summary = "Rewrite silu(x) as x * sigmoid(x) (the example runtime has no silu)";
  let description = [{
    The example backend's runtime half implements only `sigmoid` and `mul`;
    its lowering pipeline rewrites `etllm.silu` inside its subgraphs.
  }];
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

#endif // ETLLM_TEST_EXAMPLE_PASSES_TD
