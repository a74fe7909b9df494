//===- memory_planner.cpp - Greedy arena planning -------------------------===//
#include "etllm/runtime/memory_planner.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace etllm::rt {

Result<ArenaPlan> planArena(const std::vector<PlanRequest> &requests,
                            uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)))
    return Error("memory planner: alignment " + std::to_string(alignment) +
                 " is not a power of two");
  ArenaPlan plan;
  plan.offsets.assign(requests.size(), 0);
  plan.sizes.assign(requests.size(), 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    uint64_t size = std::max<uint64_t>(requests[i].size, 1);
    if (size > UINT64_MAX - (alignment - 1))
      return Error("memory planner: a value of " + std::to_string(size) +
                   " bytes cannot be aligned");
    plan.sizes[i] = (size + alignment - 1) & ~(alignment - 1);
  }
  // Largest first; equal sizes keep their order.
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return requests[a].size > requests[b].size;
  });
  auto lastOf = [&](size_t i) {
    return std::max(requests[i].lastUse, requests[i].firstUse);
  };
  std::vector<size_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy; // [begin, end)
  for (size_t v : order) {
    const int64_t first = requests[v].firstUse, last = lastOf(v);
    const uint64_t size = plan.sizes[v];
    // The ranges of placed values alive at the same time, by offset.
    busy.clear();
    for (size_t u : placed)
      if (requests[u].firstUse <= last && first <= lastOf(u))
        busy.push_back({plan.offsets[u], plan.offsets[u] + plan.sizes[u]});
    std::sort(busy.begin(), busy.end());
    // The lowest gap that holds the value.
    uint64_t offset = 0;
    for (const auto &[begin, end] : busy) {
      if (offset <= begin && size <= begin - offset) // no overflow
        break;
      offset = std::max(offset, end);
    }
    if (offset > UINT64_MAX - size)
      return Error("memory planner: the arena would exceed 2^64 bytes");
    plan.offsets[v] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
    placed.push_back(v);
  }
  return plan;
}

} // namespace etllm::rt
