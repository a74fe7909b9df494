//===- VulkanPlan.cpp - Fusion and schedule of a Vulkan subgraph ----------===//
//
// Groups the ops of an outlined function into the dispatches they become
// (VulkanPlan.h lists the fusions) and orders the groups by their
// dependences, the original order breaking ties. VulkanEmit.cpp turns each
// group into dispatches, views and slots; this file also places the arena
// and the barriers once every dispatch is known.
//
//===----------------------------------------------------------------------===//
#include "VulkanEmit.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Lowering/KernelCalls.h"
#include "etllm/runtime/memory_planner.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <queue>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::vk {

namespace {

bool isMatmul(Operation *op) { return isa<LinearOp, QLinearOp>(op); }

Value matmulInput(Operation *op) { return op->getOperand(0); }
Value matmulWeight(Operation *op) { return op->getOperand(1); }
bool hasBias(Operation *op) { return op->getNumOperands() > 2; }

/// Two matmuls whose weights can share one packed buffer.
bool sameWeightClass(Operation *a, Operation *b) {
  Type wa = matmulWeight(a).getType(), wb = matmulWeight(b).getType();
  if (isa<QWeightType>(wa) != isa<QWeightType>(wb))
    return false;
  if (auto qa = dyn_cast<QWeightType>(wa)) {
    auto qb = cast<QWeightType>(wb);
    const rt::QuantInfo a = quantInfoOf(qa), b = quantInfoOf(qb);
    return qa.getShape()[1] == qb.getShape()[1] && a.bits == b.bits &&
           a.groupSize == b.groupSize && a.symmetric == b.symmetric &&
           a.scaleType == b.scaleType;
  }
  return cast<RankedTensorType>(wa).getDimSize(1) ==
         cast<RankedTensorType>(wb).getDimSize(1);
}

Operation *singleUser(Value v) {
  if (!v.hasOneUse())
    return nullptr;
  return *v.getUsers().begin();
}

} // namespace

/// Whether `v` depends on a result of one of `ops` (through the function).
static bool dependsOn(Value v, const llvm::DenseSet<Operation *> &ops,
                      llvm::DenseMap<Operation *, bool> &memo) {
  Operation *d = v.getDefiningOp();
  if (!d)
    return false;
  if (ops.contains(d))
    return true;
  auto it = memo.find(d);
  if (it != memo.end())
    return it->second;
  memo[d] = false;
  bool r = false;
  for (Value o : d->getOperands())
    if (dependsOn(o, ops, memo)) {
      r = true;
      break;
    }
  memo[d] = r;
  return r;
}

std::vector<Group> groupOps(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, int> groupOf;
  auto add = [&](Group g) {
    for (Operation *op : g.ops)
      groupOf[op] = int(groups.size());
    groups.push_back(std::move(g));
  };
  // Swiglu: mul(silu(x Wg^T), x Wu^T).
  for (Operation &op : body) {
    auto mul = dyn_cast<MulOp>(op);
    if (!mul)
      continue;
    for (int side = 0; side < 2; ++side) {
      auto silu = mul->getOperand(side).getDefiningOp<SiluOp>();
      Operation *up = mul->getOperand(1 - side).getDefiningOp();
      Operation *gate = silu ? silu.getInput().getDefiningOp() : nullptr;
      if (!silu || !gate || !up || gate == up || !isMatmul(gate) ||
          !isMatmul(up) || hasBias(gate) || hasBias(up) ||
          singleUser(gate->getResult(0)) != silu.getOperation() ||
          singleUser(silu.getResult()) != mul.getOperation() ||
          singleUser(up->getResult(0)) != mul.getOperation() ||
          matmulInput(gate) != matmulInput(up) || !sameWeightClass(gate, up) ||
          groupOf.count(gate) || groupOf.count(up) ||
          gate->getResult(0).getType() != up->getResult(0).getType())
        continue;
      add({Group::Swiglu, {gate, up, silu, mul}});
      break;
    }
  }
  // A linear whose only reader is a residual add.
  for (Operation &op : body) {
    if (!isa<AddOp>(op) || groupOf.count(&op))
      continue;
    for (int side = 0; side < 2; ++side) {
      Operation *mm = op.getOperand(side).getDefiningOp();
      Value r = op.getOperand(1 - side);
      if (!mm || !isMatmul(mm) || groupOf.count(mm) ||
          singleUser(mm->getResult(0)) != &op ||
          r.getType() != op.getResult(0).getType() ||
          mm->getResult(0).getType() != r.getType())
        continue;
      add({Group::MatmulAdd, {mm, &op}});
      break;
    }
  }
  // Linears of one input: one matmul over the concatenated weights.
  for (Operation &op : body) {
    if (!isMatmul(&op) || groupOf.count(&op))
      continue;
    Group g{hasBias(&op) ? Group::Single : Group::Concat, {&op}};
    if (g.kind == Group::Concat)
      for (Operation *user : matmulInput(&op).getUsers())
        if (user != &op && isMatmul(user) && !groupOf.count(user) &&
            !hasBias(user) && user->getBlock() == &body &&
            sameWeightClass(&op, user) &&
            cast<RankedTensorType>(user->getResult(0).getType()).getRank() ==
                cast<RankedTensorType>(op.getResult(0).getType()).getRank())
          g.ops.push_back(user);
    // In the function's order.
    std::sort(g.ops.begin(), g.ops.end(),
              [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    if (g.ops.size() == 1)
      g.kind = Group::Single;
    add(std::move(g));
  }
  // RoPE and cache writes of one positions value: up to three jobs a
  // dispatch, none depending on another.
  {
    Group current{Group::Rope, {}};
    Value positions;
    llvm::DenseSet<Operation *> members;
    llvm::DenseMap<Operation *, bool> memo;
    auto flush = [&]() {
      if (!current.ops.empty())
        add(current);
      current.ops.clear();
      members.clear();
      memo.clear();
    };
    for (Operation &op : body) {
      Value input, pos;
      llvm::SmallVector<Operation *, 2> job;
      if (auto rope = dyn_cast<RopeOp>(op)) {
        auto upd =
            dyn_cast_or_null<KvCacheUpdateOp>(singleUser(rope.getResult()));
        job.push_back(rope);
        if (upd && upd.getValue() == rope.getResult() &&
            upd.getPositions() == rope.getPositions())
          job.push_back(upd);
        input = rope.getInput();
        pos = rope.getPositions();
      } else if (auto upd = dyn_cast<KvCacheUpdateOp>(op)) {
        if (groupOf.count(upd) || members.contains(upd))
          continue;
        if (auto r = upd.getValue().getDefiningOp<RopeOp>();
            r && singleUser(r.getResult()) == upd.getOperation())
          continue; // with its rope
        job.push_back(upd);
        input = upd.getValue();
        pos = upd.getPositions();
      } else {
        continue;
      }
      // Jobs of a dispatch: counted in ROPE jobs (a rope and its cache
      // write are one).
      const size_t jobs = [&] {
        size_t n = 0;
        for (Operation *m : current.ops)
          n += !(isa<KvCacheUpdateOp>(m) &&
                 m->getOperand(2).getDefiningOp<RopeOp>() &&
                 members.contains(m->getOperand(2).getDefiningOp()));
        return n;
      }();
      memo.clear(); // (the members changed since the last question)
      // The ropes of a dispatch share one table.
      bool otherTable = false;
      if (auto rope = dyn_cast<RopeOp>(op))
        for (Operation *m : current.ops)
          if (auto r = dyn_cast<RopeOp>(m))
            otherTable |= r.getInvFreq() != rope.getInvFreq() ||
                          r.getConvention() != rope.getConvention() ||
                          r.getAttentionScaling() != rope.getAttentionScaling();
      if (current.ops.empty() || pos != positions || jobs == 3 || otherTable ||
          dependsOn(input, members, memo))
        flush();
      positions = pos;
      for (Operation *m : job) {
        current.ops.push_back(m);
        members.insert(m);
      }
    }
    flush();
  }
  // Everything else: one op a group (views included; they dispatch
  // nothing unless a copy is needed).
  for (Operation &op : body.without_terminator())
    if (!groupOf.count(&op) && !isa<ParameterGetOp, ConstantOp>(op))
      add({Group::Single, {&op}});
  return groups;
}

std::vector<int> scheduleGroups(func::FuncOp fn,
                                const std::vector<Group> &groups) {
  llvm::DenseMap<Operation *, int> groupOf, position;
  int pos = 0;
  for (Operation &op : fn.getBody().front())
    position[&op] = pos++;
  for (auto [i, g] : llvm::enumerate(groups))
    for (Operation *op : g.ops)
      groupOf[op] = int(i);
  std::vector<int> first(groups.size(), INT32_MAX), pending(groups.size(), 0);
  std::vector<std::vector<int>> dependents(groups.size());
  for (auto [i, g] : llvm::enumerate(groups)) {
    llvm::DenseSet<int> deps;
    for (Operation *op : g.ops) {
      first[i] = std::min(first[i], position[op]);
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp())
          if (auto it = groupOf.find(d);
              it != groupOf.end() && it->second != int(i))
            deps.insert(it->second);
    }
    pending[i] = int(deps.size());
    for (int d : deps)
      dependents[size_t(d)].push_back(int(i));
  }
  auto later = [&](int a, int b) {
    return first[size_t(a)] > first[size_t(b)];
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (size_t i = 0; i < groups.size(); ++i)
    if (pending[i] == 0)
      ready.push(int(i));
  std::vector<int> order;
  while (!ready.empty()) {
    int g = ready.top();
    ready.pop();
    order.push_back(g);
    for (int d : dependents[size_t(g)])
      if (--pending[size_t(d)] == 0)
        ready.push(d);
  }
  return order; // shorter than groups: a cycle (the caller reports it)
}

LogicalResult placeArenaAndBarriers(Plan &plan, Operation *diag) {
  // Lifetimes: the dispatches that touch each slot; inputs from the start,
  // outputs to the end.
  const int n = int(plan.dispatches.size());
  for (auto [i, d] : llvm::enumerate(plan.dispatches))
    for (int s : d.slots) {
      Slot &slot = plan.slots[size_t(s)];
      if (slot.first < 0)
        slot.first = int(i);
      slot.last = int(i);
    }
  std::vector<int> planned;
  std::vector<rt::PlanRequest> requests;
  for (auto [i, s] : llvm::enumerate(plan.slots)) {
    if (s.buffer != 0)
      continue;
    int first = s.input || s.first < 0 ? 0 : s.first;
    int last = s.output || s.last < 0 ? std::max(n - 1, 0) : s.last;
    planned.push_back(int(i));
    requests.push_back({first, last, s.bytes});
  }
  auto arena = rt::planArena(requests, rvk::kBindingAlign);
  if (!arena.ok())
    return diag->emitError("vulkan: planning the arena: ") << arena.message();
  for (size_t k = 0; k < planned.size(); ++k)
    plan.slots[size_t(planned[k])].offset = arena->offsets[k];
  plan.arenaBytes = std::max<uint64_t>(arena->arenaBytes, rvk::kBindingAlign);
  plan.buffers[0].bytes = plan.arenaBytes;

  // Barriers (format.h's rule, the one the runtime checks).
  std::vector<rvk::Access> pending;
  plan.barriers = 0;
  for (auto [i, d] : llvm::enumerate(plan.dispatches)) {
    std::vector<rvk::Access> accesses;
    for (auto [k, s] : llvm::enumerate(d.slots)) {
      const Slot &slot = plan.slots[size_t(s)];
      accesses.push_back(
          {uint32_t(slot.buffer), slot.offset, slot.offset + slot.bytes,
           rvk::writesBinding(d.kernel, d.variant, uint32_t(k))});
    }
    d.barrier = i > 0 && rvk::needsBarrier(pending, accesses);
    if (d.barrier) {
      pending.clear();
      ++plan.barriers;
    }
    pending.insert(pending.end(), accesses.begin(), accesses.end());
  }
  return success();
}

std::vector<std::string> Plan::describe() const {
  std::vector<std::string> lines;
  auto slotText = [&](int s) {
    const Slot &slot = slots[size_t(s)];
    const PlanBuffer &b = buffers[size_t(slot.buffer)];
    switch (b.kind) {
    case PlanBuffer::Arena:
      return llvm::formatv("arena[{0}+{1}]", slot.offset, slot.bytes).str();
    case PlanBuffer::Weight:
    case PlanBuffer::Floats:
      return "const(" + b.name + ")";
    case PlanBuffer::Cache:
      return llvm::formatv("cache{0}", slot.buffer).str();
    case PlanBuffer::RopeTable:
      return b.name;
    }
    return std::string("?");
  };
  for (auto [i, d] : llvm::enumerate(dispatches)) {
    std::string line =
        llvm::formatv("{0}: {1}", i, rvk::kernelInfo(d.kernel).name);
    if (d.kernel == rvk::KernelId::Matmul ||
        d.kernel == rvk::KernelId::Embedding) {
      static const char *formats[] = {"f32", "f16", "q4"};
      line += std::string(" w") + formats[int(rvk::Variant::format(d.variant))];
    }
    if (d.kernel == rvk::KernelId::Matmul) {
      rvk::MatmulParams p;
      std::memcpy(&p, d.params.data(), sizeof(p));
      if (p.epilogue & ETLLM_VK_EPILOGUE_SWIGLU)
        line += " swiglu";
      if (p.epilogue & ETLLM_VK_EPILOGUE_RESIDUAL)
        line += " +residual";
      if (p.epilogue & ETLLM_VK_EPILOGUE_BIAS)
        line += " +bias";
      line += llvm::formatv(" n={0} k={1}", p.n, p.k).str();
    }
    if (d.kernel == rvk::KernelId::Rope)
      line += llvm::formatv(" jobs={0}", rvk::Variant::jobs(d.variant)).str();
    line +=
        (d.variant & rvk::Variant::kActF16) && d.kernel != rvk::KernelId::Copy
            ? " f16"
            : "";
    if (d.barrier)
      line += " barrier";
    if (d.layer >= 0)
      line += llvm::formatv(" layer={0}", d.layer).str();
    line += " (" + d.label + ")";
    for (int s : d.slots)
      line += " " + slotText(s);
    lines.push_back(std::move(line));
  }
  return lines;
}

} // namespace etllm::vk
