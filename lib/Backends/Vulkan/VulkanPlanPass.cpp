//===- VulkanPlanPass.cpp - Record the Vulkan schedule in the IR ----------===//
#include "VulkanPlan.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/runtime/vulkan/format.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#define DEBUG_TYPE "etllm-vulkan-plan"

namespace etllm::vk {
#define GEN_PASS_DECL_VULKANPLANPASS
#define GEN_PASS_DEF_VULKANPLANPASS
#include "VulkanPasses.h.inc"
} // namespace etllm::vk

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::vk {
namespace {

struct VulkanPlanPass : public impl::VulkanPlanPassBase<VulkanPlanPass> {
  using VulkanPlanPassBase::VulkanPlanPassBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    auto id = fn->getAttrOfType<StringAttr>(EtllmDialect::kBackendAttrName);
    if (!id || id.getValue() != rvk::kBackendId)
      return;
    FailureOr<Plan> plan = planFunction(fn, planOptions(fn, seqBound));
    if (failed(plan))
      return signalPassFailure();
    Builder b(&getContext());
    SmallVector<Attribute> lines;
    for (const std::string &l : plan->describe())
      lines.push_back(b.getStringAttr(l));
    fn->setAttr(kScheduleAttr, b.getArrayAttr(lines));
    fn->setAttr(
        kSummaryAttr,
        b.getDictionaryAttr({
            b.getNamedAttr("arena_bytes",
                           b.getI64IntegerAttr(int64_t(plan->arenaBytes))),
            b.getNamedAttr("barriers", b.getI64IntegerAttr(plan->barriers)),
            b.getNamedAttr("dispatches", b.getI64IntegerAttr(
                                             int64_t(plan->dispatches.size()))),
            b.getNamedAttr("layers", b.getI64IntegerAttr(plan->numLayers)),
            b.getNamedAttr("precision",
                           b.getStringAttr(plan->options.f16 ? "f16" : "f32")),
        }));
    fn.walk([&](Operation *op) {
      auto it = plan->opDispatches.find(op);
      if (it == plan->opDispatches.end())
        return;
      SmallVector<int64_t> ids(it->second.begin(), it->second.end());
      op->setAttr(kDispatchAttr, b.getDenseI64ArrayAttr(ids));
    });
  }
};

} // namespace

std::unique_ptr<Pass> makeVulkanPlanPass() {
  return std::make_unique<VulkanPlanPass>();
}

void registerVulkanPasses() { mlir::registerPass(makeVulkanPlanPass); }

} // namespace etllm::vk
