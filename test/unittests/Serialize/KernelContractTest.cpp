//===- KernelContractTest.cpp - Kernel calls against the runtime's table --===//
//
// The op contracts (ODS, Etllm_Kernel) generate both the serializer's kernel
// calls and the runtime's ops.def; the build fails when the committed ops.def
// differs. These tests check the compiled result on both sides: every
// contract names a runtime operator with the same argument counts, and the
// kernel call of every kernel op in the lit tests' IR fits the runtime's
// table (counts and attribute ranges) and passes its load-time rules
// (element types, ranks, axes, ranges: verify_ops.cpp), as Program::load
// checks it. The runtime's own tests show that the rules refuse what they
// must; these show that they accept what the compiler emits.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/InitAll.h"
#include "etllm/Lowering/KernelCalls.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/verify_ops.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::etllm;
namespace rt = ::etllm::rt;

namespace {

const rt::OpInfo *runtimeOp(const char *name) {
  return rt::findOp(name, std::strlen(name));
}

class KernelContracts : public ::testing::Test {
protected:
  KernelContracts() {
    DialectRegistry registry;
    ::etllm::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  MLIRContext context;
};

TEST_F(KernelContracts, AgreeWithTheRuntimeTable) {
  std::set<std::string> kernels;
  for (const KernelContract *c : kernelContracts()) {
    SCOPED_TRACE(c->opName);
    const rt::OpInfo *op = runtimeOp(c->kernel);
    ASSERT_NE(op, nullptr) << "no runtime operator '" << c->kernel << "'";
    EXPECT_TRUE(kernels.insert(c->kernel).second);
    EXPECT_EQ(c->minInputs, op->minInputs);
    EXPECT_EQ(c->maxInputs, op->maxInputs);
    EXPECT_EQ(c->outputs, op->outputs);
    EXPECT_EQ(c->numInts, op->numInts);
    EXPECT_EQ(c->numFloats, op->numFloats);
  }
  // Every runtime operator is some op's kernel.
  for (size_t i = 0; i < size_t(rt::OpId::NumOps); ++i)
    EXPECT_TRUE(kernels.count(rt::opInfo(rt::OpId(i)).name))
        << rt::opInfo(rt::OpId(i)).name << " has no op";
  // Every registered op with the interface has a listed contract.
  std::set<std::string> listed;
  for (const KernelContract *c : kernelContracts())
    listed.insert(c->opName);
  size_t withInterface = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "etllm" ||
        !name.hasInterface<KernelOpInterface>())
      continue;
    ++withInterface;
    EXPECT_TRUE(listed.count(name.getStringRef().str()))
        << name.getStringRef().str();
  }
  EXPECT_EQ(withInterface, listed.size());
}

/// Every module that parses and verifies in the lit tests' .mlir files (one
/// per `// -----` split), with its file for messages.
std::vector<std::pair<std::string, OwningOpRef<ModuleOp>>>
litModules(MLIRContext &context) {
  std::vector<std::pair<std::string, OwningOpRef<ModuleOp>>> out;
  // Invalid cases are expected to fail: their diagnostics are dropped.
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto &e : fs::recursive_directory_iterator(ETLLM_TEST_SOURCE_DIR))
    if (e.path().extension() == ".mlir")
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path &f : files) {
    auto buf = llvm::MemoryBuffer::getFile(f.string());
    if (!buf)
      continue;
    llvm::SmallVector<llvm::StringRef> chunks;
    (*buf)->getBuffer().split(chunks, "// -----");
    for (llvm::StringRef chunk : chunks) {
      // The parser needs a null-terminated buffer.
      std::string text = chunk.str();
      OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(text, &context);
      if (m)
        out.emplace_back(f.filename().string(), std::move(m));
    }
  }
  return out;
}

TEST_F(KernelContracts, EveryKernelCallInTheLitTestsFitsTheRuntime) {
  auto modules = litModules(context);
  ASSERT_GT(modules.size(), 20u);
  std::set<std::string> seen;
  for (auto &[file, module] : modules) {
    module->walk([&, file = file](KernelOpInterface kernel) {
      Operation *op = kernel;
      std::string where = file + ": " + op->getName().getStringRef().str();
      SCOPED_TRACE(where);
      seen.insert(op->getName().getStringRef().str());
      FailureOr<::etllm::KernelCall> call = ::etllm::describeKernelCall(op);
      ASSERT_TRUE(succeeded(call));
      const rt::OpInfo *info = rt::findOp(call->op.data(), call->op.size());
      ASSERT_NE(info, nullptr) << call->op;
      const KernelContract &c = kernel.getKernelContract();
      EXPECT_EQ(call->op, c.kernel);
      int nin = op->getNumOperands();
      int nout = op->getNumResults() + (c.outputIsBuffer ? 1 : 0);
      EXPECT_GE(nin, info->minInputs);
      if (info->maxInputs >= 0) {
        EXPECT_LE(nin, info->maxInputs);
      }
      if (info->outputs >= 0) {
        EXPECT_EQ(nout, info->outputs);
      } else {
        EXPECT_GE(nout, 1);
      }
      int nints = call->ints.size();
      if (info->numInts >= 0) {
        EXPECT_EQ(nints, info->numInts);
      } else {
        EXPECT_GE(nints, int(rt::intAttrs(info->id).size) - 1);
      }
      EXPECT_EQ(int(call->floats.size()), info->numFloats);
      rt::Status st = rt::checkIntAttrs(info->id, nin,
                                        {call->ints.data(), call->ints.size()});
      EXPECT_TRUE(st.ok()) << st.message();
      // The load-time rules, on the values as the serializer writes them.
      auto describe = [&](Type t) {
        FailureOr<rt::DType> d = ::etllm::runtimeDType(op, t);
        EXPECT_TRUE(succeeded(d));
        return rt::ValueDesc{succeeded(d) ? *d : rt::DType::F32,
                             int(::etllm::shapeOf(t).size())};
      };
      std::vector<rt::ValueDesc> ins, outs;
      for (Type t : op->getOperandTypes())
        ins.push_back(describe(t));
      for (Type t : op->getResultTypes())
        outs.push_back(describe(t));
      if (c.outputIsBuffer) // the write-back's buffer has the value's type
        outs.push_back(describe(op->getOperand(0).getType()));
      st = rt::verifyKernelCall(*info, ins, outs, call->ints.data(),
                                call->ints.size(), call->floats.data(),
                                call->floats.size());
      EXPECT_TRUE(st.ok()) << st.message();
    });
  }
  // The lit tests exercise every contract (a new op comes with its tests).
  for (const KernelContract *c : kernelContracts())
    EXPECT_TRUE(seen.count(c->opName)) << "no lit test IR uses " << c->opName
                                       << ": add a round-trip case for it";
}

} // namespace
