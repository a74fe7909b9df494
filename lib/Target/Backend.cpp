//===- Backend.cpp - Backend compiler registry ----------------------------===//
#include "etllm/Target/Backend.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <mutex>

namespace etllm {

BackendCompiler::~BackendCompiler() = default;
DelegateContext::~DelegateContext() = default;

bool BackendCompiler::isProfitable(llvm::ArrayRef<mlir::Operation *>) const {
  return true;
}

void BackendCompiler::buildLoweringPipeline(mlir::OpPassManager &) const {}

std::string backendOption(mlir::Operation *op, llvm::StringRef backend,
                          llvm::StringRef key, llvm::StringRef fallback) {
  auto module = mlir::isa<mlir::ModuleOp>(op)
                    ? mlir::cast<mlir::ModuleOp>(op)
                    : op->getParentOfType<mlir::ModuleOp>();
  auto opts =
      module
          ? module->getAttrOfType<mlir::DictionaryAttr>(kBackendOptionsAttrName)
          : nullptr;
  auto v = opts ? opts.getAs<mlir::StringAttr>((backend + "." + key).str())
                : nullptr;
  return v ? v.getValue().str() : fallback.str();
}

namespace {
std::mutex &mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::unique_ptr<BackendCompiler>> &registry() {
  static std::vector<std::unique_ptr<BackendCompiler>> r;
  return r;
}
} // namespace

void registerBackendCompiler(std::unique_ptr<BackendCompiler> backend) {
  std::lock_guard<std::mutex> lock(mutex());
  for (auto &b : registry())
    if (b->id() == backend->id()) {
      b = std::move(backend);
      return;
    }
  registry().push_back(std::move(backend));
}

const BackendCompiler *findBackendCompiler(llvm::StringRef id) {
  std::lock_guard<std::mutex> lock(mutex());
  for (auto &b : registry())
    if (b->id() == id)
      return b.get();
  for (auto &b : registry())
    for (const char *former : b->formerIds())
      if (id == former)
        return b.get();
  return nullptr;
}

std::vector<const BackendCompiler *> registeredBackendCompilers() {
  std::lock_guard<std::mutex> lock(mutex());
  std::vector<const BackendCompiler *> out;
  for (auto &b : registry())
    out.push_back(b.get());
  return out;
}

} // namespace etllm
