//===- EtllmKernels.cpp - The ops' kernel contracts -----------------------===//
//
// The KernelOpInterface methods of every op with an Etllm_Kernel contract,
// generated from ODS by etllm-tblgen -gen-etllm-kernel-defs (which also
// generates the runtime's ops.def from the same declarations).
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"

using namespace mlir;
using namespace mlir::etllm;

#include "etllm/Dialect/Etllm/EtllmInterfaces.cpp.inc"

#define GET_KERNEL_CONTRACT_DEFS
#include "etllm/Dialect/Etllm/EtllmKernels.cpp.inc"

const std::vector<const KernelContract *> &mlir::etllm::kernelContracts() {
  static const std::vector<const KernelContract *> contracts = [] {
    using Getter = const KernelContract &(*)();
    static const Getter getters[] = {
#define GET_KERNEL_CONTRACT_LIST
#include "etllm/Dialect/Etllm/EtllmKernels.cpp.inc"
    };
    std::vector<const KernelContract *> out;
    for (Getter g : getters)
      out.push_back(&g());
    return out;
  }();
  return contracts;
}
