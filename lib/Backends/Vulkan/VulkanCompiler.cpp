//===- VulkanCompiler.cpp - Compiler half of the GPU backend --------------===//
//
// The "vulkan" backend: GPU compute shaders for phone GPUs (runtime half in
// runtime/backends/vulkan). Legality: VulkanLegality.cpp. Lowering: the
// etllm-vulkan-plan pass records the schedule. Serialization: the plan
// (VulkanPlan.h) as a VKN1 flatbuffer; weights packed into the shaders'
// layouts as program constants (concatenated for fused matmuls, split into
// bindings of at most the device limit the compiler assumes).
//
//===----------------------------------------------------------------------===//
#include "VulkanPlan.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Lowering/KernelCalls.h"
#include "etllm/Lowering/WeightStore.h"
#include "etllm/Target/Backend.h"
#include "etllm/runtime/vulkan/packing.h"
#include "etllm/schema/vulkan_generated.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <cstring>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {
namespace vk {
std::unique_ptr<Pass> makeVulkanPlanPass();
} // namespace vk

namespace {

namespace vfb = ::etllm::vulkan;
namespace rvk = ::etllm::rt::vulkan;

/// A KV cache that another Vulkan delegate call updates cannot be read
/// here: it lives in that call's device memory.
LogicalResult checkCachesAreLocal(func::FuncOp fn) {
  auto module = fn->getParentOfType<ModuleOp>();
  if (!module)
    return success();
  LogicalResult result = success();
  module.walk([&](DelegateCallOp call) {
    if (call.getCallee() != fn.getSymName())
      return;
    for (auto [i, operand] : llvm::enumerate(call.getOperands())) {
      auto other = operand.getDefiningOp<DelegateCallOp>();
      if (!other || other.getBackend() != rvk::kBackendId)
        continue;
      auto callee = module.lookupSymbol<func::FuncOp>(other.getCallee());
      if (!callee)
        continue;
      auto ret = cast<func::ReturnOp>(callee.getBody().front().getTerminator());
      unsigned r = cast<OpResult>(operand).getResultNumber();
      if (ret.getOperand(r).getDefiningOp<KvCacheUpdateOp>()) {
        fn.emitError("vulkan: argument ")
            << i << " is a KV cache that " << other.getCallee()
            << " updates in its own device memory; its update and its "
               "readers must be in one Vulkan subgraph";
        result = failure();
      }
    }
  });
  return result;
}

/// A KV cache buffer that Vulkan calls of two methods update (a composite
/// model's forward and text_decoder, a static program's prefill and
/// decode) would be two caches: each call keeps its own in its device
/// memory, so one method would not see what the other wrote.
LogicalResult checkCachesAreInOneMethod(func::FuncOp fn) {
  auto module = fn->getParentOfType<ModuleOp>();
  if (!module)
    return success();
  // Buffer symbol -> the methods whose Vulkan calls update it.
  llvm::StringMap<llvm::SmallSetVector<StringRef, 2>> updaters;
  module.walk([&](DelegateCallOp call) {
    if (call.getBackend() != rvk::kBackendId)
      return;
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (!callee)
      return;
    for (auto [i, operand] : llvm::enumerate(call.getOperands())) {
      auto read = operand.getDefiningOp<BufferReadOp>();
      if (!read)
        continue;
      bool updated = llvm::any_of(
          callee.getArgument(i).getUsers(),
          [](Operation *u) { return isa<KvCacheUpdateOp>(u); });
      if (updated)
        updaters[read.getName()].insert(
            call->getParentOfType<func::FuncOp>().getSymName());
    }
  });
  for (auto &entry : updaters)
    if (entry.getValue().size() > 1)
      return fn.emitError("vulkan: the KV cache ")
             << entry.getKey() << " is updated by Vulkan calls of two methods ("
             << entry.getValue()[0] << ", " << entry.getValue()[1]
             << "): each call keeps its caches in its own device memory, so "
                "one method would not see the other's entries";
  return success();
}

class VulkanCompiler : public BackendCompiler {
public:
  llvm::StringRef id() const override { return rvk::kBackendId; }
  llvm::StringRef description() const override {
    return "GPU compute shaders through Vulkan (phone GPUs; tested on "
           "lavapipe): f32/f16/int4 matmuls, RMSNorm, RoPE into the KV "
           "cache, split-KV attention, element-wise math";
  }
  bool isLegal(Operation *op) const override { return vk::isLegal(op); }
  bool isProfitable(ArrayRef<Operation *> ops) const override {
    return llvm::any_of(ops, [](Operation *op) {
      return isa<LinearOp, QLinearOp, RmsNormOp, SdpaOp, EmbeddingOp,
                 QEmbeddingOp>(op);
    });
  }
  void buildLoweringPipeline(OpPassManager &pm) const override {
    pm.addPass(vk::makeVulkanPlanPass());
  }
  LogicalResult serialize(
      func::FuncOp fn, DelegateContext &ctx, std::vector<uint8_t> &blob,
      std::vector<std::pair<std::string, std::string>> &specs) const override;
};

LogicalResult VulkanCompiler::serialize(
    func::FuncOp fn, DelegateContext &ctx, std::vector<uint8_t> &blob,
    std::vector<std::pair<std::string, std::string>> &specs) const {
  if (failed(checkCachesAreLocal(fn)) || failed(checkCachesAreInOneMethod(fn)))
    return failure();
  vk::PlanOptions options = vk::planOptions(fn, ctx.dynamicDimBound());
  FailureOr<vk::Plan> plan = vk::planFunction(fn, options);
  if (failed(plan))
    return failure();
  // A schedule recorded by etllm-vulkan-plan must be the one emitted.
  if (auto recorded = fn->getAttrOfType<ArrayAttr>(vk::kScheduleAttr)) {
    std::vector<std::string> now = plan->describe();
    bool same = recorded.size() == now.size();
    for (size_t i = 0; same && i < now.size(); ++i) {
      auto s = dyn_cast<StringAttr>(recorded[i]);
      same = s && s.getValue() == now[i];
    }
    if (!same)
      return fn.emitError("vulkan: the recorded schedule (vulkan.schedule) "
                          "is stale: the IR changed after etllm-vulkan-plan");
  }

  // Constants: packed weights, f32 vectors, RoPE frequencies.
  WeightStore *weights = &ctx.weights();
  auto module = fn->getParentOfType<ModuleOp>();
  auto paramNamed = [&](const std::string &name) {
    return module.lookupSymbol<ParameterOp>(name);
  };
  std::vector<uint32_t> constantOf(plan->buffers.size(), 0);
  for (auto [i, b] : llvm::enumerate(plan->buffers)) {
    if (b.kind == vk::PlanBuffer::Weight) {
      struct Part {
        ParameterOp param;
        int64_t begin, end;
      };
      std::vector<Part> parts;
      for (const vk::WeightPart &p : b.parts) {
        ParameterOp param = paramNamed(p.param);
        if (!param)
          return fn.emitError("vulkan: no parameter @") << p.param;
        parts.push_back({param, p.rowBegin, p.rowEnd});
      }
      const rvk::WeightFormat format = b.format;
      const int64_t cols = b.cols;
      Operation *diag = parts.front().param;
      constantOf[i] = ctx.addWeight(
          b.name, b.bytes, uint64_t(b.rows) * uint64_t(cols),
          [weights, parts, format, cols,
           diag]() -> FailureOr<std::vector<uint8_t>> {
            // The sources stay alive until the packing is done.
            std::vector<std::vector<float>> floats(parts.size());
            std::vector<std::vector<uint8_t>> quant(parts.size());
            std::vector<rvk::WeightPart> packParts;
            for (size_t k = 0; k < parts.size(); ++k) {
              ParameterOp param = parts[k].param;
              rvk::WeightPart wp;
              ArrayRef<int64_t> shape = shapeOf(param.getType());
              wp.rows = shape[0];
              wp.cols = cols;
              wp.rowBegin = parts[k].begin;
              wp.rowEnd = parts[k].end;
              if (isa<QWeightType>(param.getType())) {
                // (Q4; or dequantized by packWeight into f32/f16.)
                FailureOr<std::vector<uint8_t>> bytes =
                    weights->materialize(param);
                if (failed(bytes))
                  return failure();
                quant[k] = std::move(*bytes);
                wp.qweight = quant[k].data();
                wp.qweightBytes = quant[k].size();
                wp.quant = quantInfoOf(param.getType());
              } else {
                FailureOr<std::vector<float>> f = weights->floatValues(param);
                if (failed(f))
                  return failure();
                floats[k] = std::move(*f);
                wp.floats = floats[k].data();
              }
              packParts.push_back(wp);
            }
            auto packed = rvk::packWeight(format, packParts);
            if (!packed.ok())
              return diag->emitError("vulkan: ") << packed.message();
            return std::move(*packed);
          });
    } else if (b.kind == vk::PlanBuffer::Floats ||
               (b.kind == vk::PlanBuffer::RopeTable &&
                !b.floatsParam.empty())) {
      ParameterOp param = paramNamed(b.floatsParam);
      if (!param)
        return fn.emitError("vulkan: no parameter @") << b.floatsParam;
      const uint64_t count =
          uint64_t(cast<RankedTensorType>(param.getType()).getNumElements());
      constantOf[i] = ctx.addWeight(
          "vulkan/" + b.floatsParam + "@f32", count * 4, count,
          [weights, param]() mutable -> FailureOr<std::vector<uint8_t>> {
            FailureOr<std::vector<float>> f = weights->floatValues(param);
            if (failed(f))
              return failure();
            std::vector<uint8_t> bytes(f->size() * 4);
            std::memcpy(bytes.data(), f->data(), bytes.size());
            return bytes;
          });
    } else if (b.kind == vk::PlanBuffer::RopeTable) {
      std::vector<uint8_t> bytes;
      for (APFloat v : b.floatsData.getValues<APFloat>()) {
        float f = v.convertToFloat();
        const uint8_t *p = reinterpret_cast<const uint8_t *>(&f);
        bytes.insert(bytes.end(), p, p + 4);
      }
      constantOf[i] = ctx.addConstant(
          fn.getSymName().str() + "/" + b.name + ".inv_freq", bytes.size(),
          [bytes]() -> FailureOr<std::vector<uint8_t>> { return bytes; });
    }
  }

  // The blob.
  flatbuffers::FlatBufferBuilder fb;
  std::vector<flatbuffers::Offset<vfb::Buffer>> buffers;
  for (auto [i, b] : llvm::enumerate(plan->buffers)) {
    vfb::BufferKind kind =
        b.kind == vk::PlanBuffer::Arena       ? vfb::BufferKind::ARENA
        : b.kind == vk::PlanBuffer::Cache     ? vfb::BufferKind::CACHE
        : b.kind == vk::PlanBuffer::RopeTable ? vfb::BufferKind::ROPE_TABLE
                                              : vfb::BufferKind::CONSTANT;
    buffers.push_back(vfb::CreateBuffer(fb, kind, constantOf[i], b.bytes,
                                        b.tableRows, b.scaling));
  }
  auto binding = [&](int s) {
    const vk::Slot &slot = plan->slots[size_t(s)];
    return vfb::CreateBinding(fb, uint32_t(slot.buffer), slot.offset,
                              slot.bytes);
  };
  std::vector<flatbuffers::Offset<vfb::Dispatch>> dispatches;
  for (const vk::PlanDispatch &d : plan->dispatches) {
    std::vector<flatbuffers::Offset<vfb::Binding>> bindings;
    for (int s : d.slots)
      bindings.push_back(binding(s));
    dispatches.push_back(vfb::CreateDispatch(
        fb, vfb::Kernel(uint16_t(d.kernel)), d.variant,
        fb.CreateVector(bindings), fb.CreateVector(d.params), d.barrier,
        d.layer, fb.CreateString(d.label)));
  }
  auto ios = [&](const std::vector<vk::PlanIo> &list) {
    std::vector<flatbuffers::Offset<vfb::Io>> out;
    for (const vk::PlanIo &io : list) {
      const vk::Slot &slot = plan->slots[size_t(io.slot)];
      out.push_back(vfb::CreateIo(
          fb, vfb::IoRole(io.role), uint8_t(io.dtype), uint8_t(io.deviceDtype),
          fb.CreateVector(io.sizes), io.dyn, slot.buffer == 0 ? slot.offset : 0,
          io.indexBound, io.buffer < 0 ? 0u : uint32_t(io.buffer)));
    }
    return fb.CreateVector(out);
  };
  auto in = ios(plan->inputs), out = ios(plan->outputs);
  auto graph = vfb::CreateGraph(
      fb, fb.CreateVector(buffers), fb.CreateVector(dispatches), in, out,
      options.seqBound, options.maxBindingBytes,
      uint8_t(options.f16 ? rt::DType::F16 : rt::DType::F32), plan->numLayers);
  vfb::FinishGraphBuffer(fb, graph);
  blob.assign(fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize());
  specs.push_back({"format", rvk::kBlobFormat});
  specs.push_back({"precision", options.f16 ? "f16" : "f32"});
  return success();
}

} // namespace

/// Registers this backend (named in cmake/Backends.cmake).
void registerVulkanBackendCompiler() {
  registerBackendCompiler(std::make_unique<VulkanCompiler>());
  vk::registerVulkanPasses();
}

} // namespace etllm
