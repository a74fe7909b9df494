//===- MemoryPlan.h - Where the values of `forward` live --------*- C++ -*-===//
//
// Memory planning of a lowered program (Lowering.h): views share their
// source's storage when it is writable, every root value lives from its
// instruction to the last use of any alias of it, and the planned roots are
// placed in one arena by the runtime's planner (etllm/runtime/
// memory_planner.h, shared with the xnnpack delegate). A buffer read stays
// an alias of its buffer, so a write-back of the buffer while the read is
// still used is an error.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_SERIALIZE_MEMORYPLAN_H
#define ETLLM_SERIALIZE_MEMORYPLAN_H

#include "mlir/Support/LogicalResult.h"

#include <cstddef>
#include <cstdint>

namespace etllm {

class LoweredProgram;

/// What the memory planner decided (also reported by etllm-plan-memory).
struct MemoryReport {
  uint64_t arenaBytes = 0;      // planned activations
  uint64_t bufferBytes = 0;     // mutable buffers (KV caches)
  uint64_t constantBytes = 0;   // weights and constants
  uint64_t naiveArenaBytes = 0; // without reuse: the sum of all values
  size_t numValues = 0;
  size_t numInstructions = 0;
  size_t numAliases = 0;
};

/// Plans `program`: aliases, lifetimes, offsets and the arena size. Errors
/// are emitted at the offending op.
mlir::LogicalResult planMemory(LoweredProgram &program);

/// The planner's figures for `program` (planned).
MemoryReport memoryReport(const LoweredProgram &program);

} // namespace etllm

#endif // ETLLM_SERIALIZE_MEMORYPLAN_H
