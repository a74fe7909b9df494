//===- SwapSource.cpp - Module-level replacements by class ----------------===//
#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Models/Registry.h"
#include "etllm/Transforms/Passes.h"
#include "etllm/Transforms/SourceSwap.h"

#include "SourceSwaps/SwapUtils.h"

#include "llvm/Support/Debug.h"

#include <map>
#include <mutex>

#define DEBUG_TYPE "etllm-swap-source"

namespace etllm {
#define GEN_PASS_DEF_SWAPSOURCEPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {

bool ModuleInstance::contains(Operation *op) const {
  StringRef p = getModulePath(op);
  return p == path || (p.size() > path.size() && p.starts_with(path) &&
                       p[path.size()] == '.');
}

namespace {
std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}
std::vector<std::pair<std::string, SourceSwapFn>> &registry() {
  static std::vector<std::pair<std::string, SourceSwapFn>> r;
  return r;
}
} // namespace

void registerSourceSwap(llvm::StringRef suffix, SourceSwapFn fn) {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (auto &e : registry())
    if (e.first == suffix) {
      e.second = std::move(fn);
      return;
    }
  registry().push_back({suffix.str(), std::move(fn)});
}

const SourceSwapFn *findSourceSwap(llvm::StringRef klass,
                                   std::string *matched) {
  std::lock_guard<std::mutex> lock(registryMutex());
  const std::pair<std::string, SourceSwapFn> *best = nullptr;
  for (auto &e : registry())
    if (klass.ends_with(e.first) &&
        (!best || e.first.size() > best->first.size()))
      best = &e;
  if (best && matched)
    *matched = best->first;
  return best ? &best->second : nullptr;
}

void registerBuiltinSourceSwaps() {
  registerSourceSwap("RMSNorm", swaps::swapRmsNorm);
  registerSourceSwap("Attention", swaps::swapAttention);
  registerSourceSwap("SparseMoeBlock", swaps::swapSparseMoe);
  // A family whose sparse block has another class name (DeepSeek's
  // "DeepseekV2Moe", "DeepseekV3MoE": MoeSpec::blockClass after the class
  // prefix), taken from the family registry.
  for (const models::FamilySpec *f : models::families()) {
    if (f->blocks.mlp != models::MlpBlock::SparseMoe)
      continue;
    std::string cls = std::string(f->classPrefix) + f->moe.blockClass;
    if (!llvm::StringRef(cls).ends_with("SparseMoeBlock"))
      registerSourceSwap(cls, swaps::swapSparseMoe);
  }
}

} // namespace etllm

namespace {

struct SwapSourcePass
    : public ::etllm::impl::SwapSourcePassBase<SwapSourcePass> {
  using SwapSourcePassBase::SwapSourcePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto classTable = module->getAttrOfType<DictionaryAttr>(
        EtllmDialect::kModuleClassesAttrName);
    if (!classTable)
      return; // no module information: nothing to swap (fuse-sdpa's job)
    ModelConfigAttr config = getModelConfig(module);
    // Instances to swap, grouped by matched suffix in registry order so that
    // norms inside attention go first.
    std::map<std::string, std::vector<std::pair<std::string, std::string>>>
        bySuffix;
    for (NamedAttribute entry : classTable) {
      auto cls = dyn_cast<StringAttr>(entry.getValue());
      if (!cls)
        continue;
      std::string suffix;
      if (!::etllm::findSourceSwap(cls.getValue(), &suffix))
        continue;
      if (!classes.empty() && !llvm::is_contained(classes, suffix))
        continue;
      bySuffix[suffix].push_back({entry.getName().str(), cls.str()});
    }
    IRRewriter rewriter(&getContext());
    for (const char *order : {"RMSNorm", "Attention"})
      for (auto &[suffix, list] : bySuffix)
        if (suffix == order)
          runInstances(module, config, suffix, list, rewriter);
    for (auto &[suffix, list] : bySuffix)
      if (suffix != "RMSNorm" && suffix != "Attention")
        runInstances(module, config, suffix, list, rewriter);
  }

  void runInstances(ModuleOp module, ModelConfigAttr config,
                    const std::string &suffix,
                    std::vector<std::pair<std::string, std::string>> &list,
                    IRRewriter &rewriter) {
    const ::etllm::SourceSwapFn *fn =
        ::etllm::findSourceSwap(list.front().second);
    // An instance is swapped in each function that runs it (a composite
    // model's forward and text_decoder both run the decoder's layers).
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (auto &[path, cls] : list) {
      for (func::FuncOp function : functions) {
        ::etllm::ModuleInstance inst;
        inst.path = path;
        inst.klass = cls;
        inst.config = config;
        inst.module = module;
        inst.mlaCache = mlaCache;
        inst.moe = moe;
        function.walk([&](Operation *op) {
          if (op != function && inst.contains(op))
            inst.ops.push_back(op);
        });
        if (inst.ops.empty())
          continue;
        std::string reason;
        if (failed((*fn)(inst, rewriter, reason))) {
          inst.ops.front()->emitRemark()
              << "etllm-swap-source: left " << cls << " instance '" << path
              << "' alone: " << reason;
          LLVM_DEBUG(llvm::dbgs()
                     << "skip " << path << ": " << reason << "\n");
        }
      }
    }
  }
};

} // namespace
