//===- LowerBackends.cpp - Backend lowering of outlined subgraphs ---------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Target/Backend.h"
#include "etllm/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#define DEBUG_TYPE "etllm-lower-backends"

namespace etllm {
#define GEN_PASS_DEF_LOWERBACKENDSPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

struct LowerBackendsPass
    : public ::etllm::impl::LowerBackendsPassBase<LowerBackendsPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      auto id = fn->getAttrOfType<StringAttr>(EtllmDialect::kBackendAttrName);
      if (!id)
        continue;
      const ::etllm::BackendCompiler *backend =
          ::etllm::findBackendCompiler(id.getValue());
      if (!backend) {
        fn.emitError("no backend '") << id.getValue() << "' is registered";
        return signalPassFailure();
      }
      OpPassManager pm(func::FuncOp::getOperationName());
      backend->buildLoweringPipeline(pm);
      if (pm.size() == 0)
        continue;
      if (failed(runPipeline(pm, fn)))
        return signalPassFailure();
    }
  }
};

} // namespace
