//===- MemoryPlan.cpp - Where the values of each method live --------------===//
#include "etllm/Lowering/MemoryPlan.h"

#include "etllm/Lowering/KernelCalls.h"
#include "etllm/Lowering/Lowering.h"
#include "etllm/runtime/memory_planner.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {

/// Planned values start at multiples of this.
static constexpr uint64_t kArenaAlignment = 64;
/// What Program::load requires of a planned value's offset.
static constexpr uint64_t kRuntimeAlignment = 16;

static uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// Views alias their source when the root storage is writable memory.
static void aliasViews(LoweredMethod &p) {
  for (ValueRec &out : p.values) {
    if (out.viewOf < 0)
      continue;
    Storage root = p.values[p.rootOf(uint32_t(out.viewOf))].storage;
    if (root == Storage::Planned || root == Storage::Buffer) {
      out.storage = Storage::Alias;
      out.aliasOf = uint32_t(out.viewOf);
    }
  }
}

/// Lifetimes over the instruction order: every value's last use, and every
/// root's end of life, the last use of any alias of it.
static void computeLifetimes(LoweredMethod &p) {
  std::vector<ValueRec> &values = p.values;
  for (size_t k = 0; k < p.instrs.size(); ++k)
    for (uint32_t v : p.instrs[k].inputs)
      values[v].lastUse = std::max<int64_t>(values[v].lastUse, k);
  for (uint32_t v : p.outputs)
    values[v].lastUse = p.instrs.size();
  for (uint32_t v = 0; v < values.size(); ++v) {
    ValueRec &root = values[p.rootOf(v)];
    root.liveEnd = std::max({root.liveEnd, values[v].lastUse, values[v].def});
  }
}

/// `a` as text for a diagnostic ("nothing" when null).
static std::string show(Attribute a) {
  if (!a)
    return "nothing";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << a;
  return s;
}

/// The op (or, for an argument, the function) a value comes from.
static Operation *originOf(const LoweredMethod &p, const ValueRec &v) {
  if (!v.value)
    return p.func;
  if (Operation *op = v.value.getDefiningOp())
    return op;
  return p.func;
}

/// A buffer read aliases the buffer's storage unless the buffer is written
/// (by a write-back copy) while a value aliasing the read is still used:
/// then the read cannot be an alias.
static LogicalResult checkBufferReads(LoweredMethod &p) {
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
    for (size_t k = size_t(std::max<int64_t>(r.def, 0));
         k < p.instrs.size() && int64_t(k) < lastUse; ++k) {
      const InstrRec &in = p.instrs[k];
      if (!in.writeBack || values[in.outputs[0]].storage != Storage::Buffer ||
          values[in.outputs[0]].buffer != r.buffer)
        continue;
      InFlightDiagnostic d =
          in.origin->emitError("buffer '")
          << r.name
          << "' is written back while an earlier read of it is still used; "
             "the read cannot alias the buffer";
      d.attachNote(originOf(p, r)->getLoc()) << "the read";
      return d;
    }
  }
  return success();
}

LogicalResult planMemory(LoweredMethod &p) {
  aliasViews(p);
  computeLifetimes(p);
  // Greedy by size over the planned roots.
  std::vector<uint32_t> planned;
  std::vector<rt::PlanRequest> requests;
  for (uint32_t v = 0; v < p.values.size(); ++v)
    if (p.values[v].storage == Storage::Planned) {
      planned.push_back(v);
      requests.push_back(
          {p.values[v].def, p.values[v].liveEnd, p.values[v].capacity});
    }
  rt::Result<rt::ArenaPlan> arena = rt::planArena(requests, kArenaAlignment);
  if (!arena.ok())
    return p.func.emitError(arena.message());
  for (size_t i = 0; i < planned.size(); ++i) {
    p.values[planned[i]].offset = arena->offsets[i];
    p.values[planned[i]].slotSize = arena->sizes[i];
  }
  p.arenaSize = arena->arenaBytes;
  return checkBufferReads(p);
}

//===----------------------------------------------------------------------===//
// The plan in the IR
//===----------------------------------------------------------------------===//

/// The operand of the op defining `v` whose value is `target`, if any.
static std::optional<unsigned>
operandHolding(const LoweredMethod &p, const ValueRec &v, uint32_t target) {
  Operation *op = v.value ? v.value.getDefiningOp() : nullptr;
  if (!op)
    return std::nullopt;
  for (OpOperand &o : op->getOpOperands()) {
    auto it = p.index.find(o.get());
    if (it != p.index.end() && it->second == target)
      return o.getOperandNumber();
  }
  return std::nullopt;
}

void recordPlan(const LoweredProgram &program, LoweredMethod &p) {
  MLIRContext *ctx = p.func.getContext();
  func::FuncOp fn = p.func;
  fn.walk([](Operation *op) { op->removeAttr(kPlanAttrName); });
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    fn.removeArgAttr(i, kPlanAttrName);

  auto entryOf = [&](uint32_t id) -> Attribute {
    const ValueRec &v = p.values[id];
    if (v.storage == Storage::Planned)
      return MemorySlotAttr::get(ctx, /*arena=*/0, v.offset, v.slotSize, v.def,
                                 v.liveEnd);
    if (v.storage == Storage::Alias)
      if (std::optional<unsigned> o = operandHolding(p, v, v.aliasOf))
        return MemoryAliasAttr::get(ctx, *o);
    return UnitAttr::get(ctx);
  };
  for (BlockArgument arg : fn.getArguments())
    if (auto it = p.index.find(arg); it != p.index.end())
      fn.setArgAttr(arg.getArgNumber(), kPlanAttrName, entryOf(it->second));
  for (Operation &op : fn.getBody().front()) {
    SmallVector<Attribute> entries;
    bool any = false;
    for (Value r : op.getResults()) {
      auto it = p.index.find(r);
      Attribute e =
          it == p.index.end() ? UnitAttr::get(ctx) : entryOf(it->second);
      any |= !isa<UnitAttr>(e);
      entries.push_back(e);
    }
    if (any)
      op.setAttr(kPlanAttrName, ArrayAttr::get(ctx, entries));
  }

  MemoryReport report = memoryReport(program, &p);
  Builder b(ctx);
  auto i64 = [&](uint64_t v) { return b.getI64IntegerAttr(int64_t(v)); };
  fn->setAttr(
      kMemoryAttrName,
      b.getDictionaryAttr({
          b.getNamedAttr("arena_bytes", i64(report.arenaBytes)),
          b.getNamedAttr("buffer_bytes", i64(report.bufferBytes)),
          b.getNamedAttr("constant_bytes", i64(report.constantBytes)),
          b.getNamedAttr("naive_arena_bytes", i64(report.naiveArenaBytes)),
          b.getNamedAttr("aliases", i64(report.numAliases)),
      }));
}

namespace {
/// Reads the recorded plan of one lowered program and checks it.
class PlanReader {
public:
  explicit PlanReader(LoweredMethod &p) : p(p) {}
  FailureOr<bool> read();

private:
  LoweredMethod &p;
  std::vector<MemorySlotAttr> slots; // per value

  InFlightDiagnostic stale(const ValueRec &v) {
    return originOf(p, v)->emitError("stale memory plan: ");
  }
  static constexpr const char *kRerun =
      "; run etllm-plan-memory again after the last transformation";
  FailureOr<Attribute> recorded(const ValueRec &v);
  LogicalResult takeStorage(uint32_t id);
  LogicalResult checkSlot(uint32_t id, uint64_t arenaBytes);
  LogicalResult checkOverlaps();
};
} // namespace

/// The entry recorded for `v` (null when none).
FailureOr<Attribute> PlanReader::recorded(const ValueRec &v) {
  if (auto arg = dyn_cast<BlockArgument>(v.value))
    return p.func.getArgAttr(arg.getArgNumber(), kPlanAttrName);
  auto result = cast<OpResult>(v.value);
  Operation *op = result.getOwner();
  Attribute attr = op->getAttr(kPlanAttrName);
  if (!attr)
    return Attribute();
  auto entries = dyn_cast<ArrayAttr>(attr);
  if (!entries || entries.size() != op->getNumResults())
    return op->emitError("malformed memory plan: ")
           << kPlanAttrName << " must hold one entry per result ("
           << op->getNumResults() << "), got " << attr;
  return entries[result.getResultNumber()];
}

/// Takes the storage the plan records for value `id`, when the interfaces
/// allow it: tied results alias their operand, views may alias a writable
/// source, everything else planned has a slot.
LogicalResult PlanReader::takeStorage(uint32_t id) {
  ValueRec &v = p.values[id];
  FailureOr<Attribute> e = recorded(v);
  if (failed(e))
    return failure();
  switch (v.storage) {
  case Storage::Constant:
  case Storage::Buffer:
    if (*e && !isa<UnitAttr>(*e))
      return stale(v) << "the value is stored in "
                      << (v.storage == Storage::Constant
                              ? "the constant segment"
                              : "a mutable buffer")
                      << ", not " << show(*e) << kRerun;
    return success();
  case Storage::Alias: {
    std::optional<unsigned> tied = operandHolding(p, v, v.aliasOf);
    auto alias = dyn_cast_or_null<MemoryAliasAttr>(*e);
    if (!alias || !tied || alias.getOperand() != *tied)
      return stale(v) << "the result is tied to operand "
                      << (tied ? int64_t(*tied) : -1)
                      << " (#etllm.alias<operand "
                      << (tied ? int64_t(*tied) : -1) << ">), the plan says "
                      << show(*e) << kRerun;
    return success();
  }
  case Storage::Planned:
    break;
  }
  if (auto alias = dyn_cast_or_null<MemoryAliasAttr>(*e)) {
    std::optional<unsigned> source =
        v.viewOf < 0 ? std::nullopt : operandHolding(p, v, uint32_t(v.viewOf));
    if (!source || alias.getOperand() != *source)
      return stale(v) << "only a view or a tied result can alias an operand, "
                         "not "
                      << show(alias) << kRerun;
    Storage root = p.values[p.rootOf(uint32_t(v.viewOf))].storage;
    if (root != Storage::Planned && root != Storage::Buffer)
      return stale(v) << "a view of read-only storage cannot alias it"
                      << kRerun;
    v.storage = Storage::Alias;
    v.aliasOf = uint32_t(v.viewOf);
    return success();
  }
  auto slot = dyn_cast_or_null<MemorySlotAttr>(*e);
  if (!slot)
    return stale(v) << "the value has no slot (the plan says " << show(*e)
                    << ")" << kRerun;
  slots[id] = slot;
  return success();
}

LogicalResult PlanReader::checkSlot(uint32_t id, uint64_t arenaBytes) {
  ValueRec &v = p.values[id];
  MemorySlotAttr s = slots[id];
  if (s.getArena() != 0)
    return stale(v) << "arena " << s.getArena()
                    << " does not exist (a program has one arena)";
  if (s.getOffset() % kRuntimeAlignment)
    return stale(v) << "offset " << s.getOffset() << " is not a multiple of "
                    << kRuntimeAlignment;
  if (s.getSize() < v.capacity)
    return stale(v) << "the slot holds " << s.getSize()
                    << " bytes, the value needs " << v.capacity << kRerun;
  if (s.getOffset() > arenaBytes || s.getSize() > arenaBytes - s.getOffset())
    return stale(v) << "the slot [" << s.getOffset() << ", +" << s.getSize()
                    << ") lies outside the arena of " << arenaBytes << " bytes";
  if (s.getLiveBegin() > v.def || s.getLiveEnd() < v.liveEnd)
    return stale(v) << "the slot is live over [" << s.getLiveBegin() << ", "
                    << s.getLiveEnd() << "], the value over [" << v.def << ", "
                    << v.liveEnd << "]" << kRerun;
  v.offset = s.getOffset();
  v.slotSize = s.getSize();
  return success();
}

/// No two values alive at the same time share a byte.
LogicalResult PlanReader::checkOverlaps() {
  std::vector<uint32_t> planned;
  for (uint32_t v = 0; v < p.values.size(); ++v)
    if (p.values[v].storage == Storage::Planned)
      planned.push_back(v);
  std::sort(planned.begin(), planned.end(), [&](uint32_t a, uint32_t b) {
    return p.values[a].offset < p.values[b].offset;
  });
  for (size_t i = 0; i < planned.size(); ++i) {
    const ValueRec &a = p.values[planned[i]];
    for (size_t j = i + 1; j < planned.size(); ++j) {
      const ValueRec &b = p.values[planned[j]];
      if (b.offset >= a.offset + a.slotSize)
        break;
      if (a.def > b.liveEnd || b.def > a.liveEnd)
        continue;
      const ValueRec &later = a.def > b.def ? a : b;
      const ValueRec &earlier = a.def > b.def ? b : a;
      uint64_t end = std::min(a.offset + a.slotSize, b.offset + b.slotSize);
      InFlightDiagnostic d = originOf(p, later)->emitError("memory plan: ")
                             << "the value shares arena bytes [" << b.offset
                             << ", " << end
                             << ") with a value that is still live";
      d.attachNote(originOf(p, earlier)->getLoc()) << "the live value";
      return d;
    }
  }
  return success();
}

FailureOr<bool> PlanReader::read() {
  func::FuncOp fn = p.func;
  Attribute memory = fn->getAttr(kMemoryAttrName);
  if (!memory)
    return false;
  auto dict = dyn_cast<DictionaryAttr>(memory);
  auto arena = dict ? dict.getAs<IntegerAttr>("arena_bytes") : IntegerAttr();
  if (!arena || arena.getInt() < 0)
    return fn.emitError("malformed memory plan: ")
           << kMemoryAttrName << " needs a non-negative arena_bytes";
  slots.assign(p.values.size(), MemorySlotAttr());
  for (uint32_t id = 0; id < p.values.size(); ++id)
    if (p.values[id].value && failed(takeStorage(id)))
      return failure();
  computeLifetimes(p);
  for (uint32_t id = 0; id < p.values.size(); ++id)
    if (p.values[id].storage == Storage::Planned &&
        failed(checkSlot(id, uint64_t(arena.getInt()))))
      return failure();
  if (failed(checkOverlaps()) || failed(checkBufferReads(p)))
    return failure();
  p.arenaSize = uint64_t(arena.getInt());
  return true;
}

FailureOr<bool> readPlan(LoweredMethod &p) { return PlanReader(p).read(); }

MemoryReport memoryReport(const LoweredProgram &program,
                          const LoweredMethod *only) {
  MemoryReport r;
  for (BufferOp b : program.buffers) {
    FailureOr<rt::DType> dt = runtimeDType(b, b.getType());
    ArrayRef<int64_t> shape = shapeOf(b.getType());
    rt::Result<size_t> bytes =
        failed(dt) ? rt::Result<size_t>(rt::Error("no dtype"))
                   : rt::storageBytes(*dt, shape.data(), int(shape.size()),
                                      quantInfoOf(b.getType()));
    r.bufferBytes += bytes.ok() ? uint64_t(*bytes) : 0;
  }
  for (const ConstRec &c : program.constants)
    r.constantBytes += c.size;
  for (const LoweredMethod &p : program.methods) {
    if (only && &p != only)
      continue;
    r.arenaBytes += p.arenaSize;
    for (const ValueRec &v : p.values) {
      if (v.storage == Storage::Planned)
        r.naiveArenaBytes += alignUp(v.capacity, kArenaAlignment);
      if (v.storage == Storage::Alias)
        ++r.numAliases;
    }
    r.numValues += p.values.size();
    r.numInstructions += p.instrs.size();
  }
  return r;
}

} // namespace etllm
