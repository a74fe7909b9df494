//===- MemoryPlan.cpp - Where the values of `forward` live ----------------===//
#include "etllm/Serialize/MemoryPlan.h"

#include "etllm/Serialize/Lowering.h"
#include "etllm/runtime/memory_planner.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {

/// Planned values start at multiples of this (the runtime needs 16).
static constexpr uint64_t kArenaAlignment = 64;

static uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// A buffer read aliases the buffer's storage unless the buffer is written
/// (by a write-back copy) while a value aliasing the read is still used:
/// then the read cannot be an alias.
static LogicalResult checkBufferReads(LoweredProgram &p) {
  std::vector<ValueRec> &values = p.values;
  for (uint32_t id = 0; id < values.size(); ++id) {
    ValueRec &r = values[id];
    if (r.storage != Storage::Buffer || r.def < 0)
      continue;
    bool isRead = true;
    for (const InstrRec &in : p.instrs)
      if (!in.outputs.empty() && in.outputs[0] == id)
        isRead = false; // the target of a write-back
    if (!isRead)
      continue;
    int64_t lastUse = -1;
    for (uint32_t v = 0; v < values.size(); ++v)
      if (p.rootOf(v) == id)
        lastUse = std::max(lastUse, values[v].lastUse);
    bool clobbered = false;
    for (size_t k = size_t(std::max<int64_t>(r.def, 0));
         k < p.instrs.size() && int64_t(k) < lastUse; ++k)
      if (p.instrs[k].writeBack &&
          values[p.instrs[k].outputs[0]].storage == Storage::Buffer &&
          values[p.instrs[k].outputs[0]].buffer == r.buffer)
        clobbered = true;
    if (clobbered)
      return p.instrs.empty()
                 ? failure()
                 : p.instrs.front().origin->emitError("buffer '")
                       << r.name
                       << "' is written back while an earlier read of it is "
                          "still used; the serializer cannot alias the read";
  }
  return success();
}

LogicalResult planMemory(LoweredProgram &p) {
  std::vector<ValueRec> &values = p.values;
  // Views alias their source when the root storage is writable memory.
  for (ValueRec &out : values) {
    if (out.viewOf < 0)
      continue;
    uint32_t root = p.rootOf(uint32_t(out.viewOf));
    if (values[root].storage == Storage::Planned ||
        values[root].storage == Storage::Buffer) {
      out.storage = Storage::Alias;
      out.aliasOf = uint32_t(out.viewOf);
    }
  }
  // Lifetimes: a root lives until the last use of any alias of it.
  for (size_t k = 0; k < p.instrs.size(); ++k)
    for (uint32_t v : p.instrs[k].inputs)
      values[v].lastUse = std::max<int64_t>(values[v].lastUse, k);
  for (uint32_t v : p.outputs)
    values[v].lastUse = p.instrs.size();
  std::vector<int64_t> rootEnd(values.size(), -1);
  for (uint32_t v = 0; v < values.size(); ++v) {
    uint32_t root = p.rootOf(v);
    rootEnd[root] = std::max({rootEnd[root], values[v].lastUse, values[v].def});
  }
  // Greedy by size over the planned roots.
  std::vector<uint32_t> planned;
  std::vector<rt::PlanRequest> requests;
  for (uint32_t v = 0; v < values.size(); ++v)
    if (values[v].storage == Storage::Planned) {
      planned.push_back(v);
      requests.push_back({values[v].def, rootEnd[v], values[v].capacity});
    }
  rt::Result<rt::ArenaPlan> arena = rt::planArena(requests, kArenaAlignment);
  if (!arena.ok())
    return p.forward.emitError(arena.message());
  for (size_t i = 0; i < planned.size(); ++i)
    values[planned[i]].offset = arena->offsets[i];
  p.arenaSize = arena->arenaBytes;
  return checkBufferReads(p);
}

MemoryReport memoryReport(const LoweredProgram &p) {
  MemoryReport r;
  r.arenaBytes = p.arenaSize;
  for (BufferOp b : p.buffers) {
    auto t = cast<RankedTensorType>(b.getType());
    r.bufferBytes += uint64_t(t.getNumElements()) *
                     ((t.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  }
  for (const ConstRec &c : p.constants)
    r.constantBytes += c.size;
  for (const ValueRec &v : p.values) {
    if (v.storage == Storage::Planned)
      r.naiveArenaBytes += alignUp(v.capacity, kArenaAlignment);
    if (v.storage == Storage::Alias)
      ++r.numAliases;
  }
  r.numValues = p.values.size();
  r.numInstructions = p.instrs.size();
  return r;
}

} // namespace etllm
