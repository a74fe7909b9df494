//===- Emission.h - The program file: header, flatbuffer, segments --------===//
#ifndef ETLLM_LIB_SERIALIZE_EMISSION_H
#define ETLLM_LIB_SERIALIZE_EMISSION_H

#include "etllm/Serialize/ProgramWriter.h"

namespace etllm {

class LoweredProgram;

/// Writes `program` (lowered, memory planned) as a program file to `os`.
/// Errors are emitted as diagnostics.
mlir::LogicalResult emitProgram(LoweredProgram &program,
                                const SerializeOptions &options,
                                llvm::raw_ostream &os);

} // namespace etllm

#endif // ETLLM_LIB_SERIALIZE_EMISSION_H
