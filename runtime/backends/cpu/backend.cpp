//===- backend.cpp - The cpu delegate: init and execute -------------------===//
//
// init() verifies and prepares a blob (init.cpp). execute() binds the
// caller's tensors (counts, dtypes, ranks and shapes checked) and runs the
// nodes with the optimized kernels, falling back to the portable ones; it
// allocates nothing.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/cpu/backend.h"

#include "instance.h"

#include "etllm/runtime/profile.h"

namespace etllm::rt::cpu {

namespace {

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(Isa isa) : isa_(isaSupported(isa) ? isa : Isa::Generic) {}
  const char *id() const override { return kBackendId; }
  Span<const char *const> formerIds() const override {
    return {kFormerBackendIds, std::size(kFormerBackendIds)};
  }
  Result<std::unique_ptr<DelegateInstance>>
  init(const uint8_t *blob, size_t size,
       const std::vector<std::pair<std::string, std::string>> &compileSpecs,
       const ConstantTable &constants, ExecContext &ctx,
       MemoryBudget &budget) override;

private:
  Isa isa_;
};

Result<std::unique_ptr<DelegateInstance>> CpuBackend::init(
    const uint8_t *blob, size_t size,
    const std::vector<std::pair<std::string, std::string>> &compileSpecs,
    const ConstantTable &constants, ExecContext &ctx, MemoryBudget &budget) {
  Result<std::unique_ptr<CpuInstance>> inst =
      initInstance(isa_, blob, size, compileSpecs, constants, ctx, budget);
  if (!inst.ok())
    return inst.error();
  return std::unique_ptr<DelegateInstance>(std::move(inst.value()));
}

bool sameQuant(const Tensor &t, const Tensor &p) {
  if (p.dtype == DType::QAct)
    return (t.quant.bits == p.quant.bits || t.quant.bits == 0) &&
           t.quant.symmetric == p.quant.symmetric &&
           t.quant.perToken == p.quant.perToken;
  if (p.dtype == DType::QWeight)
    return t.quant.bits == p.quant.bits &&
           t.quant.symmetric == p.quant.symmetric &&
           t.quant.groupSize == p.quant.groupSize &&
           t.quant.scaleType == p.quant.scaleType &&
           t.quant.scheme == p.quant.scheme;
  return true;
}

/// Checks a caller tensor against the blob's description of it.
Status checkBinding(const char *what, size_t pos, const Tensor *t,
                    const ValueInfo &vi, bool isInput) {
  const std::string name = std::string(what) + " " + std::to_string(pos);
  if (!t)
    return Error("cpu: " + name + " is null");
  const Tensor &p = vi.proto;
  if (t->dtype != p.dtype)
    return Error("cpu: " + name + " is " + dtypeName(t->dtype) +
                 ", the subgraph expects " + dtypeName(p.dtype));
  if (t->rank != p.rank)
    return Error("cpu: " + name + " has rank " + std::to_string(t->rank) +
                 ", the subgraph expects " + std::to_string(p.rank));
  if (!sameQuant(*t, p))
    return Error("cpu: " + name +
                 " has other quantization parameters than the subgraph's");
  if (!isInput)
    return Status();
  for (int i = 0; i < p.rank; ++i)
    if (vi.dynamic[i] ? t->sizes[i] > p.sizes[i] : t->sizes[i] != p.sizes[i])
      return Error("cpu: " + name + " " + t->shapeString() +
                   " does not fit the subgraph's " + p.shapeString() +
                   (vi.dynamic[i] ? " (upper bounds)" : ""));
  return checkStorage("cpu", name.c_str(), *t);
}

} // namespace

Status CpuInstance::execute(Span<Tensor *const> inputs,
                            Span<Tensor *const> outputs, ExecContext &ctx) {
  if (inputs.size != inputValues.size() || outputs.size != outputValues.size())
    return Error("cpu: the subgraph takes " +
                 std::to_string(inputValues.size()) + " inputs and " +
                 std::to_string(outputValues.size()) + " outputs, got " +
                 std::to_string(inputs.size) + " and " +
                 std::to_string(outputs.size));
  for (size_t i = 0; i < inputs.size; ++i) {
    const uint32_t v = inputValues[i];
    ETLLM_RETURN_IF_ERROR(checkBinding("input", i, inputs[i], info[v], true));
    bound[v] = inputs[i];
  }
  for (size_t i = 0; i < outputs.size; ++i) {
    const uint32_t v = outputValues[i];
    ETLLM_RETURN_IF_ERROR(
        checkBinding("output", i, outputs[i], info[v], false));
    bound[v] = outputs[i];
  }
  KernelArgs groupArgs[kMaxQLinearGroup];
  const QDotWeight *groupWeights[kMaxQLinearGroup];
  OpProfile *profile = ctx.profile();
  for (size_t n = 0; n < nodes.size(); ++n) {
    Node &node = nodes[n];
    if (node.inGroup)
      continue; // run with its group's first node
    const int64_t t0 = profile ? profileNowNs() : 0;
    bool ran = true; // false: a LoRA hook its qlinear ran
    auto argsOf = [&](Node &nd) {
      for (size_t i = 0; i < nd.values.size(); ++i)
        nd.args[i] = bound[nd.values[i]];
      KernelArgs a;
      a.inputs = {nd.args.data(), nd.numInputs};
      a.outputs = {nd.args.data() + nd.numInputs,
                   nd.args.size() - nd.numInputs};
      a.ints = {nd.ints.data(), nd.ints.size()};
      a.floats = {nd.floats.data(), nd.floats.size()};
      a.ctx = &ctx;
      return a;
    };
    KernelArgs a = argsOf(node);
    Status st;
    switch (node.kind) {
    case Kind::PackedLinear:
      st = linearPacked(a, isa);
      break;
    case Kind::PackedQLinear: {
      LoraFused fused[kMaxQLinearGroup];
      LoraFused *fusedOf[kMaxQLinearGroup] = {};
      size_t used = 0;
      for (int g = 0; g < node.group; ++g) {
        Node &q = nodes[n + size_t(g)];
        groupArgs[g] = g == 0 ? a : argsOf(q);
        groupWeights[g] = &q.qweight;
        if (q.lora < 0)
          continue;
        Node &lora = nodes[size_t(q.lora)];
        lora.loraDone = loraFusedPrepare(
            isa, ctx, *bound[lora.values[0]], q.qweight.l.n, lora.ints[0],
            loraCoefficients.data() + used, loraCoefficients.size() - used,
            fused[g]);
        if (lora.loraDone && fused[g].hook) {
          fusedOf[g] = &fused[g];
          used += fused[g].floats;
        }
      }
      st = qlinearGroupRun(groupArgs, groupWeights, size_t(node.group), isa,
                           fusedOf);
      break;
    }
    case Kind::PackedQEmbedding:
      st = qembeddingRun(a, node.qweight);
      break;
    case Kind::PackedMoe:
      st = moeRun(a, isa, *node.moe);
      break;
    case Kind::Rope: {
      bool handled = false;
      st = ropeKernel(a, isa, node.rope, handled);
      if (!handled)
        st = runDense(node.op, a, isa);
      break;
    }
    case Kind::Dense:
      ran = !node.loraDone; // else a fused lora hook its qlinear has added
      if (ran)
        st = runDense(node.op, a, isa);
      break;
    }
    if (profile && ran)
      profile->add(OpProfile::Where::Delegate, node.op, profileNowNs() - t0,
                   node.kind == Kind::PackedQLinear ? uint32_t(node.group)
                                                    : 1u);
    if (!st.ok())
      return Error("cpu " + nodeName(uint32_t(n), opInfo(node.op).name) + ": " +
                   st.message());
  }
  return Status();
}

std::shared_ptr<Backend> makeCpuBackend(Isa isa) {
  return std::make_shared<CpuBackend>(isa);
}

size_t plannedBytes(const DelegateInstance &instance) {
  const auto *x = dynamic_cast<const CpuInstance *>(&instance);
  return x ? x->arenaBytes : 0;
}

void registerCpuBackend() { registerBackend(makeCpuBackend()); }

} // namespace etllm::rt::cpu
