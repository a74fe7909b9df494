//===- KernelContract.h - The op contract as etllm-tblgen reads it -*- C++
//-*-===//
//
// One op's kernel contract (Etllm_Kernel in EtllmInterfaces.td), resolved
// against its ODS definition: the runtime operator's name, its argument
// counts and how each integer and float attribute is derived from the op.
// The backends of etllm-tblgen (etllm-tblgen.cpp, RuntimeRules.cpp) read it.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TBLGEN_KERNELCONTRACT_H
#define ETLLM_TBLGEN_KERNELCONTRACT_H

#include "mlir/TableGen/Operator.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/TableGen/Record.h"

#include <string>
#include <vector>

namespace etllm_tblgen {

/// How one kernel attribute is derived from the op.
enum class ArgKind { Value, Enum, Flag, Input, List, Float };

struct KernelArg {
  ArgKind kind;
  std::string name;    // the ODS attribute or operand
  std::string getter;  // its C++ accessor
  std::string runtime; // the name in the runtime table
  // Enums: the cases in value order (0..N-1).
  std::vector<std::string> cases;
};

/// One op's kernel contract, resolved against its ODS definition.
struct Kernel {
  const llvm::Record *def;
  mlir::tblgen::Operator op;
  std::string name;      // runtime operator name ("rms_norm")
  std::string runtimeId; // runtime C++ identifier (OpId::RmsNorm)
  std::vector<KernelArg> ints, floats;
  std::string outputBuffer; // symbol attr naming the output buffer, if any
  int minInputs = 0, maxInputs = 0, outputs = 0, numInts = 0, numFloats = 0;
  std::vector<std::string> inputNames, outputNames;
};

/// "rms_norm" -> "RmsNorm".
std::string camelCase(llvm::StringRef snake);

/// Fails the build at the op's definition: "kernel contract of 'op': msg".
[[noreturn]] void fail(const Kernel &k, const llvm::Twine &msg);

/// The ops with a kernel contract, in declaration order. Fails the build for
/// a contract that does not fit its op, and for load-time rules
/// (Etllm_Rule) on an op without a contract.
std::vector<Kernel> collectKernels(const llvm::RecordKeeper &records);

} // namespace etllm_tblgen

#endif // ETLLM_TBLGEN_KERNELCONTRACT_H
