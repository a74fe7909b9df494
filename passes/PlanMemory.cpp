//===- PlanMemory.cpp - Plan activation memory and report it --------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Serialize/ProgramWriter.h"
#include "etllm/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "etllm-plan-memory"

namespace etllm {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

struct PlanMemoryPass
    : public ::etllm::impl::PlanMemoryPassBase<PlanMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>("forward");
    if (!fn)
      return;
    FailureOr<::etllm::MemoryReport> report =
        ::etllm::planProgramMemory(module);
    if (failed(report))
      return signalPassFailure();
    Builder b(&getContext());
    auto i64 = [&](uint64_t v) { return b.getI64IntegerAttr(int64_t(v)); };
    fn->setAttr(
        "etllm.memory",
        b.getDictionaryAttr({
            b.getNamedAttr("arena_bytes", i64(report->arenaBytes)),
            b.getNamedAttr("buffer_bytes", i64(report->bufferBytes)),
            b.getNamedAttr("constant_bytes", i64(report->constantBytes)),
            b.getNamedAttr("naive_arena_bytes", i64(report->naiveArenaBytes)),
            b.getNamedAttr("aliases", i64(report->numAliases)),
        }));
  }
};

} // namespace
