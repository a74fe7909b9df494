//===- memory_planner.h - Greedy arena planning -----------------*- C++ -*-===//
//
// Places values with known lifetimes in one arena so that two values alive
// at the same time never overlap: largest first (equal sizes keep their
// order), each at the lowest offset that is free for its whole lifetime,
// every size rounded up to the alignment. Intervals in, offsets out; no
// MLIR, no knowledge of programs.
//
// One planner for the whole project: the compiler's memory planning stage
// (etllm-plan-memory, which records the plan in the IR for the serializer)
// and the cpu delegate (its internal values, planned at init) both call
// it. Written here rather than taken from a library because it is small and
// the program format fixes its exact output (programs are byte-identical
// across releases for the same input).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_MEMORY_PLANNER_H
#define ETLLM_RUNTIME_MEMORY_PLANNER_H

#include "etllm/runtime/result.h"

#include <cstdint>
#include <vector>

namespace etllm::rt {

/// One value to place: alive from instruction `firstUse` through `lastUse`
/// (inclusive; `lastUse < firstUse` is read as `firstUse`), needing `size`
/// bytes (0 is planned as one aligned slot).
struct PlanRequest {
  int64_t firstUse = 0;
  int64_t lastUse = 0;
  uint64_t size = 0;
};

/// Where each request went.
struct ArenaPlan {
  std::vector<uint64_t> offsets; ///< one per request, multiples of alignment
  std::vector<uint64_t> sizes;   ///< the reserved (rounded-up) sizes
  uint64_t arenaBytes = 0;       ///< the end of the highest placed value
};

/// Plans `requests` greedily by size. `alignment` is a power of two. Fails
/// only on arithmetic overflow (sizes near 2^64).
Result<ArenaPlan> planArena(const std::vector<PlanRequest> &requests,
                            uint64_t alignment);

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_MEMORY_PLANNER_H
