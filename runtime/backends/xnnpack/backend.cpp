//===- backend.cpp - The xnnpack delegate: verify, plan, execute
//-----------===//
//
// init() trusts nothing in the blob: it runs the flatbuffers verifier, then
// checks every value (dtype, shape, capacity, constant bytes against the
// packing), every node (known operator, operand counts of ops.def, indices,
// produce-before-use, packed weights only where a kernel reads them) and
// plans the internal values' memory once (lifetimes over the node order,
// greedy by size, 64-byte aligned). execute() binds the caller's tensors
// (counts, dtypes, ranks and shapes checked) and runs the nodes with the
// optimized kernels, falling back to the portable ones; it allocates
// nothing.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/xnnpack/backend.h"

#include "internal.h"
#include "moe.h"
#include "qdot.h"

#include "etllm/runtime/memory_planner.h"
#include "etllm/runtime/profile.h"
#include "etllm/runtime/xnnpack/packing.h"
#include "etllm/schema/xnnpack_generated.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <new>
#include <tuple>

namespace etllm::rt::xnnpack {

namespace xfb = ::etllm::xnnpack;

namespace {

/// Upper bound on the values and nodes of one blob (far beyond any real
/// subgraph; keeps the planner's quadratic pass bounded).
constexpr uint32_t kMaxValues = 1u << 16, kMaxNodes = 1u << 16;
/// Upper bound on the planned bytes of one delegate.
constexpr uint64_t kMaxArenaBytes = uint64_t(1) << 40;
constexpr size_t kPlanAlign = 64;
/// Largest scratch init reserves in the ExecContext.
constexpr size_t kMaxReservedScratch = size_t(256) << 20;

enum class Kind {
  Dense,
  PackedLinear,
  PackedQLinear,
  PackedQEmbedding,
  PackedMoe, // gate, up and down packed per expert (moe.cpp)
  Rope       // with a table built at init (else Dense)
};

/// What init learned about one blob value.
struct ValueInfo {
  xfb::ValueKind kind = xfb::ValueKind::INTERNAL;
  xfb::Packing packing = xfb::Packing::DENSE;
  uint32_t index = 0;
  Tensor proto; // dtype, upper-bound shape, quant
  bool dynamic[kMaxRank] = {};
  size_t capacity = 0; // bytes of the upper-bound shape
  int producer = -1;   // node index
  int lastUse = -1;    // node index
};

struct Node {
  OpId op = OpId::NumOps;
  Kind kind = Kind::Dense;
  QDotWeight qweight;              // PackedQLinear: the weight, checked at init
  const RopeTable *rope = nullptr; // Rope: the table built at init
  std::shared_ptr<MoeExperts> moe; // PackedMoe: the experts, checked at init
  /// PackedQLinear: this node and the next group - 1 ones read the same
  /// input and run as one (qlinearGroupRun); the others are skipped.
  int group = 1;
  bool inGroup = false;
  /// PackedQLinear: the lora node fused into this one (-1: none); it
  /// writes that node's output, which the lora node then reads in place.
  int lora = -1;
  /// A lora node fused into its qlinear: whether this execution's qlinear
  /// added the hook (else the node runs, in place).
  bool loraDone = false;
  std::vector<uint32_t> values; // inputs, then outputs
  size_t numInputs = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<Tensor *> args; // refreshed by execute
};

class XnnpackInstance final : public DelegateInstance {
public:
  Status execute(Span<Tensor *const> inputs, Span<Tensor *const> outputs,
                 ExecContext &ctx) override;

  Isa isa = Isa::Generic;
  std::vector<ValueInfo> info;
  std::vector<Tensor> tensors; // own tensors (internal, constant)
  std::vector<Tensor *> bound; // per value: the tensor nodes use
  std::vector<uint32_t> inputValues, outputValues; // by call position
  std::vector<Node> nodes;
  /// Weights converted at init (legacy QWEIGHT_NR8 constants).
  std::vector<std::vector<uint8_t>> converted;
  /// RoPE tables, one per (inv_freq constant, scaling, bound).
  std::vector<std::unique_ptr<RopeTable>> ropeTables;
  std::vector<std::tuple<uint32_t, double, int64_t>> ropeKeys;
  std::unique_ptr<uint8_t[]> arena;
  size_t arenaBytes = 0;
  /// The coefficients of the fused LoRA hooks of one qlinear group.
  std::vector<float> loraCoefficients;
};

/// Floats of coefficients the fused LoRA hooks of one qlinear group may
/// take (the sum of their adapters' ranks; beyond it the lora nodes run on
/// their own).
constexpr size_t kLoraFusedFloats = 8192;

std::string valueName(uint32_t v) { return "value " + std::to_string(v); }

std::string nodeName(uint32_t n, const char *op) {
  return "node " + std::to_string(n) + " (" + op + ")";
}

Error blobError(const std::string &msg) {
  return Error("xnnpack blob: " + msg);
}

const char *kindName(xfb::ValueKind k) {
  switch (k) {
  case xfb::ValueKind::INTERNAL:
    return "internal";
  case xfb::ValueKind::INPUT:
    return "input";
  case xfb::ValueKind::OUTPUT:
    return "output";
  case xfb::ValueKind::CONSTANT:
    return "constant";
  }
  return "?";
}

/// Checks one value's description and fills `vi` (not the constant data).
Status readValue(uint32_t v, const xfb::Value *val, ValueInfo &vi) {
  const std::string what = valueName(v);
  if (!val)
    return blobError(what + " is missing");
  if (val->dtype() >= kNumDTypes)
    return blobError(what + ": invalid dtype " + std::to_string(val->dtype()));
  const DType dtype = static_cast<DType>(val->dtype());
  const uint32_t rank = val->sizes() ? val->sizes()->size() : 0;
  if (rank > uint32_t(kMaxRank))
    return blobError(what + ": rank " + std::to_string(rank) + " > " +
                     std::to_string(kMaxRank));
  if (val->dynamic_dims() && val->dynamic_dims()->size() != rank)
    return blobError(what + ": dynamic_dims has " +
                     std::to_string(val->dynamic_dims()->size()) +
                     " entries for rank " + std::to_string(rank));
  if (uint8_t(val->kind()) > uint8_t(xfb::ValueKind::CONSTANT))
    return blobError(what + ": invalid kind " +
                     std::to_string(unsigned(val->kind())));
  if (uint8_t(val->packing()) > uint8_t(xfb::Packing::QWEIGHT_R16))
    return blobError(what + ": invalid packing " +
                     std::to_string(unsigned(val->packing())));
  vi.kind = val->kind();
  vi.packing = val->packing();
  vi.index = val->index();
  Tensor &t = vi.proto;
  t.dtype = dtype;
  t.rank = int32_t(rank);
  for (uint32_t i = 0; i < rank; ++i) {
    const int64_t s = val->sizes()->Get(i);
    if (s < 0)
      return blobError(what + ": negative size " + std::to_string(s));
    t.sizes[i] = s;
    vi.dynamic[i] = val->dynamic_dims() && val->dynamic_dims()->Get(i) != 0;
  }
  if (dtype == DType::QWeight || dtype == DType::QAct) {
    if (val->scale_dtype() >= kNumDTypes)
      return blobError(what + ": invalid scale dtype");
    t.quant.bits = val->bits();
    t.quant.groupSize = val->group_size();
    t.quant.symmetric = val->symmetric();
    t.quant.scaleType = static_cast<DType>(val->scale_dtype());
    t.quant.perToken = val->per_token();
    t.quant.scheme = static_cast<QScheme>(val->scheme());
    if (dtype == DType::QAct && t.quant.scheme != QScheme::Affine)
      return blobError(what + ": quantized activations have no scheme");
    if (dtype == DType::QAct && t.quant.bits != 8)
      return blobError(what + ": quantized activations must be 8-bit, not " +
                       std::to_string(unsigned(t.quant.bits)));
    if (dtype == DType::QAct)
      t.quant.scaleType = DType::F32;
  }
  Result<size_t> bytes = storageBytes(dtype, t.sizes, t.rank, t.quant);
  if (!bytes.ok())
    return blobError(what + " " + t.shapeString() + ": " + bytes.message());
  vi.capacity = *bytes;
  return Status();
}

/// Checks a constant's bytes against its value description. A legacy
/// QWEIGHT_NR8 weight is converted (into `converted`) to QWEIGHT_R16, or to
/// a dense QWeight when its group has no block layout; vi.packing becomes
/// the packing the nodes read.
Status checkConstant(uint32_t v, ValueInfo &vi, const ConstantTable &constants,
                     Tensor &t, std::vector<std::vector<uint8_t>> &converted,
                     MemoryBudget &budget) {
  const std::string what =
      valueName(v) + " (constant " + std::to_string(vi.index) + ")";
  for (int i = 0; i < vi.proto.rank; ++i)
    if (vi.dynamic[i])
      return blobError(what + ": constants cannot have dynamic dimensions");
  auto c = constants.get(vi.index);
  if (!c.ok())
    return blobError(what + ": " + c.message());
  const uint8_t *data = c->first;
  const size_t size = c->second;
  size_t need = 0;
  const Tensor &p = vi.proto;
  const bool qweight2d = p.dtype == DType::QWeight && p.rank == 2;
  const bool qweight3d = p.dtype == DType::QWeight && p.rank == 3;
  switch (vi.packing) {
  case xfb::Packing::DENSE:
    need = vi.capacity;
    break;
  case xfb::Packing::QWEIGHT_NR8: {
    if (!qweight2d)
      return blobError(what +
                       ": QWEIGHT_NR8 packing needs a 2-D qweight, "
                       "got " +
                       p.shapeString());
    Result<LegacyQWeightLayout> l =
        LegacyQWeightLayout::compute(p.sizes[0], p.sizes[1], p.quant);
    if (!l.ok())
      return blobError(what + ": " + l.message());
    need = l->totalBytes;
    break;
  }
  case xfb::Packing::QWEIGHT_R16: {
    if (qweight3d) { // stacked expert weights (moe)
      Result<PackedQExpertsLayout> l = PackedQExpertsLayout::compute(
          p.sizes[0], p.sizes[1], p.sizes[2], p.quant);
      if (!l.ok())
        return blobError(what + ": " + l.message());
      need = l->totalBytes;
      break;
    }
    if (!qweight2d)
      return blobError(what +
                       ": QWEIGHT_R16 packing needs a 2-D or 3-D qweight, "
                       "got " +
                       p.shapeString());
    Result<PackedQBlockLayout> l =
        PackedQBlockLayout::compute(p.sizes[0], p.sizes[1], p.quant);
    if (!l.ok())
      return blobError(what + ": " + l.message());
    need = l->totalBytes;
    break;
  }
  case xfb::Packing::F32_NR8: {
    if (p.dtype != DType::F32 || p.rank != 2)
      return blobError(what +
                       ": F32_NR8 packing needs a 2-D f32 tensor, "
                       "got " +
                       p.shapeString());
    Result<PackedF32Layout> l =
        PackedF32Layout::computeChecked(p.sizes[0], p.sizes[1]);
    if (!l.ok())
      return blobError(what + ": " + l.message());
    need = l->totalBytes;
    break;
  }
  }
  if (size != need)
    return blobError(what + " " + p.shapeString() + ": holds " +
                     std::to_string(size) + " bytes, the " +
                     (vi.packing == xfb::Packing::DENSE ? "shape" : "packing") +
                     " needs " + std::to_string(need));
  if (need > 0 && (!data || reinterpret_cast<uintptr_t>(data) % 4 != 0))
    return blobError(what + ": data is missing or misaligned");
  t = p;
  t.data = const_cast<uint8_t *>(data); // never written: not a node output
  t.capacity = size;
  if (vi.packing == xfb::Packing::QWEIGHT_NR8) {
    // Programs written before QWEIGHT_R16: back to QWeightLayout with the
    // legacy layout's f32 scales (lossless), then into the block layout.
    // Both copies come out of the memory budget (the plain one is freed
    // when the packed one exists, but both exist at once).
    QuantInfo plainQuant = p.quant;
    plainQuant.scaleType = DType::F32;
    Result<size_t> plainBytes =
        storageBytes(DType::QWeight, p.sizes, p.rank, plainQuant);
    if (!plainBytes.ok())
      return blobError(what + ": " + plainBytes.message());
    uint64_t convertBytes = *plainBytes;
    if (PackedQBlockLayout::supports(p.sizes[1], plainQuant)) {
      Result<PackedQBlockLayout> l =
          PackedQBlockLayout::compute(p.sizes[0], p.sizes[1], plainQuant);
      if (!l.ok())
        return blobError(what + ": " + l.message());
      if (__builtin_add_overflow(convertBytes, uint64_t(l->totalBytes),
                                 &convertBytes))
        convertBytes = UINT64_MAX;
    }
    ETLLM_RETURN_IF_ERROR(budget.reserve(
        convertBytes,
        blobError(what + ": converting the legacy weight").message()));
    Result<std::vector<uint8_t>> plain =
        unpackLegacyQWeight(data, size, p.sizes[0], p.sizes[1], p.quant);
    if (!plain.ok())
      return blobError(what + ": " + plain.message());
    t.quant.scaleType = DType::F32;
    vi.packing = xfb::Packing::DENSE;
    if (PackedQBlockLayout::supports(p.sizes[1], t.quant)) {
      Result<std::vector<uint8_t>> packed = packQBlocks(
          plain->data(), plain->size(), p.sizes[0], p.sizes[1], t.quant);
      if (!packed.ok())
        return blobError(what + ": " + packed.message());
      converted.push_back(std::move(packed.value()));
      vi.packing = xfb::Packing::QWEIGHT_R16;
    } else {
      converted.push_back(std::move(plain.value()));
    }
    t.data = converted.back().data();
    t.capacity = converted.back().size();
    vi.proto.quant.scaleType = DType::F32;
  }
  return Status();
}

/// Static checks of the packed linear/qlinear nodes' other operands.
Status checkPackedNode(const std::string &what, const Node &n,
                       const std::vector<ValueInfo> &info) {
  const Tensor &x = info[n.values[0]].proto;
  const Tensor &w = info[n.values[1]].proto;
  const Tensor &out = info[n.values[n.numInputs]].proto;
  if (n.kind == Kind::PackedLinear && x.dtype != DType::F32)
    return blobError(what + ": a packed linear needs an f32 input, not " +
                     dtypeName(x.dtype));
  if (n.kind == Kind::PackedQLinear && x.dtype != DType::F32 &&
      x.dtype != DType::QAct)
    return blobError(what +
                     ": a packed qlinear needs an f32 or qact input, "
                     "not " +
                     dtypeName(x.dtype));
  if (out.dtype != DType::F32)
    return blobError(what + ": the output must be f32, not " +
                     dtypeName(out.dtype));
  const ValueInfo &xi = info[n.values[0]];
  if (x.rank < 1 ||
      (!xi.dynamic[x.rank - 1] && x.sizes[x.rank - 1] != w.sizes[1]))
    return blobError(what + ": input " + x.shapeString() +
                     " does not match the weight " + w.shapeString());
  if (n.numInputs > 2) {
    const ValueInfo &b = info[n.values[2]];
    if (b.proto.dtype != DType::F32 || b.proto.rank != 1 ||
        b.proto.sizes[0] != w.sizes[0])
      return blobError(what + ": bias " + b.proto.shapeString() +
                       " does not match " + std::to_string(w.sizes[0]) +
                       " output features");
  }
  return Status();
}

/// Checks a moe node whose experts are packed (all three, per expert, and
/// fitting the input and router) and sets node.moe.
Status checkMoeNode(const std::string &what, Node &n, const xfb::Node *fn,
                    const std::vector<ValueInfo> &info,
                    const std::vector<Tensor> &tensors) {
  auto experts = std::make_shared<MoeExperts>();
  QDotExperts *parts[] = {&experts->gate, &experts->up, &experts->down};
  for (size_t i = 2; i <= 4; ++i) {
    if (info[n.values[i]].packing != xfb::Packing::QWEIGHT_R16)
      return blobError(what + ": gate, up and down must all be packed");
    Result<QDotExperts> w = qdotExperts(tensors[n.values[i]]);
    if (!w.ok())
      return blobError(what + ": " + w.message());
    *parts[i - 2] = *w;
  }
  Status st = checkMoeExperts(*experts);
  if (!st.ok())
    return blobError(what + ": " + st.message());
  if (fn->moe_activations() > uint8_t(MoeActivations::Int8Token))
    return blobError(what + ": invalid moe_activations " +
                     std::to_string(unsigned(fn->moe_activations())));
  experts->acts = MoeActivations(fn->moe_activations());
  const ValueInfo &xi = info[n.values[0]];
  const Tensor &x = xi.proto, &out = info[n.values[n.numInputs]].proto;
  const int64_t D = experts->gate.l.expert.k;
  if (x.dtype != DType::F32 || out.dtype != DType::F32 || x.rank < 1 ||
      (!xi.dynamic[x.rank - 1] && x.sizes[x.rank - 1] != D))
    return blobError(what + ": a packed moe needs an f32 input [..., " +
                     std::to_string(D) + "] and output, got " +
                     x.shapeString());
  n.moe = std::move(experts);
  return Status();
}

/// Plans the internal values' memory with the runtime's planner (the one
/// the compiler's memory planning stage uses). Returns the arena size.
Result<size_t> planMemory(std::vector<ValueInfo> &info,
                          std::vector<size_t> &offsets) {
  std::vector<uint32_t> planned;
  std::vector<PlanRequest> requests;
  for (uint32_t v = 0; v < info.size(); ++v)
    if (info[v].kind == xfb::ValueKind::INTERNAL && info[v].producer >= 0 &&
        info[v].capacity > 0) {
      planned.push_back(v);
      requests.push_back({info[v].producer, info[v].lastUse, info[v].capacity});
    }
  Result<ArenaPlan> plan = planArena(requests, kPlanAlign);
  if (!plan.ok() || plan->arenaBytes > kMaxArenaBytes)
    return Error("xnnpack blob: the internal values need more than " +
                 std::to_string(kMaxArenaBytes) + " bytes");
  offsets.assign(info.size(), 0);
  for (size_t i = 0; i < planned.size(); ++i)
    offsets[planned[i]] = size_t(plan->offsets[i]);
  return size_t(plan->arenaBytes);
}

class XnnpackBackend final : public Backend {
public:
  explicit XnnpackBackend(Isa isa)
      : isa_(isaSupported(isa) ? isa : Isa::Generic) {}
  const char *id() const override { return kBackendId; }
  Result<std::unique_ptr<DelegateInstance>>
  init(const uint8_t *blob, size_t size,
       const std::vector<std::pair<std::string, std::string>> &compileSpecs,
       const ConstantTable &constants, ExecContext &ctx,
       MemoryBudget &budget) override;

private:
  Isa isa_;
};

Result<std::unique_ptr<DelegateInstance>> XnnpackBackend::init(
    const uint8_t *blob, size_t size,
    const std::vector<std::pair<std::string, std::string>> &compileSpecs,
    const ConstantTable &constants, ExecContext &ctx, MemoryBudget &budget) {
  for (const auto &kv : compileSpecs)
    if (kv.first == "format" && kv.second != "EXN1")
      return blobError("unsupported format '" + kv.second +
                       "' (EXN1 expected)");
  if (!blob || size < 8 || !xfb::GraphBufferHasIdentifier(blob))
    return blobError("not an EXN1 blob (missing file identifier)");
  // The Verifier checks alignment relative to the blob's start, and not
  // the elements of vectors (sizes, ints: [long]; floats: [double]): the
  // blob must start 8-aligned (programs align segments to 64) and those
  // vectors' elements must be 8-aligned, or reading them is a misaligned
  // load (undefined behaviour).
  if (reinterpret_cast<uintptr_t>(blob) % 8)
    return blobError("the blob is not 8-byte aligned in the program file");
  flatbuffers::Verifier verifier(blob, size);
  if (!xfb::VerifyGraphBuffer(verifier))
    return blobError("the flatbuffer is malformed or truncated");
  const xfb::Graph *graph = xfb::GetGraph(blob);
  const auto *values = graph->values();
  const auto *fnodes = graph->nodes();
  const uint32_t numValues = values ? values->size() : 0;
  const uint32_t numNodes = fnodes ? fnodes->size() : 0;
  if (numValues > kMaxValues || numNodes > kMaxNodes)
    return blobError("too many values or nodes");
  auto aligned8 = [](const auto *v) {
    return !v || v->size() == 0 || // empty vectors are not aligned
           reinterpret_cast<uintptr_t>(v->data()) % 8 == 0;
  };
  for (uint32_t v = 0; v < numValues; ++v)
    if (values->Get(v) && !aligned8(values->Get(v)->sizes()))
      return blobError(valueName(v) + ": sizes are not 8-byte aligned");
  for (uint32_t n = 0; n < numNodes; ++n)
    if (fnodes->Get(n) && (!aligned8(fnodes->Get(n)->ints()) ||
                           !aligned8(fnodes->Get(n)->floats())))
      return blobError("node " + std::to_string(n) +
                       ": ints or floats are not 8-byte aligned");

  auto inst = std::make_unique<XnnpackInstance>();
  inst->isa = isa_;
  std::vector<ValueInfo> &info = inst->info;
  info.resize(numValues);
  inst->tensors.resize(numValues);
  std::vector<int> inputPos, outputPos; // value per call position, -1 unset
  uint32_t numIn = 0, numOut = 0;
  for (uint32_t v = 0; v < numValues; ++v) {
    ETLLM_RETURN_IF_ERROR(readValue(v, values->Get(v), info[v]));
    ValueInfo &vi = info[v];
    if (vi.packing != xfb::Packing::DENSE &&
        vi.kind != xfb::ValueKind::CONSTANT)
      return blobError(valueName(v) + ": only constants can be packed");
    if (vi.kind == xfb::ValueKind::INPUT)
      ++numIn;
    else if (vi.kind == xfb::ValueKind::OUTPUT)
      ++numOut;
  }
  inputPos.assign(numIn, -1);
  outputPos.assign(numOut, -1);
  for (uint32_t v = 0; v < numValues; ++v) {
    ValueInfo &vi = info[v];
    if (vi.kind == xfb::ValueKind::INPUT || vi.kind == xfb::ValueKind::OUTPUT) {
      std::vector<int> &pos =
          vi.kind == xfb::ValueKind::INPUT ? inputPos : outputPos;
      if (vi.index >= pos.size())
        return blobError(valueName(v) + ": " + kindName(vi.kind) + " index " +
                         std::to_string(vi.index) + " is out of range (" +
                         std::to_string(pos.size()) + " " + kindName(vi.kind) +
                         "s)");
      if (pos[vi.index] >= 0)
        return blobError(valueName(v) + ": " + kindName(vi.kind) + " index " +
                         std::to_string(vi.index) + " is also used by " +
                         valueName(uint32_t(pos[vi.index])));
      pos[vi.index] = int(v);
    } else if (vi.kind == xfb::ValueKind::CONSTANT) {
      ETLLM_RETURN_IF_ERROR(checkConstant(v, vi, constants, inst->tensors[v],
                                          inst->converted, budget));
    }
  }

  // Nodes. Constant values used as a gather table (input 0 of embedding,
  // qembedding) and in any other way, to tell the runtime which tables a
  // call reads one row of rather than in full.
  // (Two values may name one program constant: a tied embedding's table is
  // also the output layer's weight.)
  std::vector<uint32_t> gatherOnly, fullIndices;
  std::vector<std::pair<uint32_t, int64_t>> expertStacks; // value, top_k
  inst->nodes.resize(numNodes);
  for (uint32_t n = 0; n < numNodes; ++n) {
    const xfb::Node *fn = fnodes->Get(n);
    const flatbuffers::String *opName = fn ? fn->op() : nullptr;
    if (!opName)
      return blobError("node " + std::to_string(n) + " has no operator");
    const OpInfo *op = findOp(opName->c_str(), opName->size());
    if (!op)
      return blobError("node " + std::to_string(n) + ": unknown operator '" +
                       opName->str() + "'");
    const std::string what = nodeName(n, op->name);
    const uint32_t nin = fn->inputs() ? fn->inputs()->size() : 0;
    const uint32_t nout = fn->outputs() ? fn->outputs()->size() : 0;
    const uint32_t nints = fn->ints() ? fn->ints()->size() : 0;
    const uint32_t nfloats = fn->floats() ? fn->floats()->size() : 0;
    if (int64_t(nin) < op->minInputs ||
        (op->maxInputs >= 0 && int64_t(nin) > op->maxInputs))
      return blobError(what + ": " + std::to_string(nin) +
                       " inputs (ops.def: " + std::to_string(op->minInputs) +
                       ".." +
                       (op->maxInputs < 0 ? std::string("any")
                                          : std::to_string(op->maxInputs)) +
                       ")");
    if (op->outputs >= 0 ? int64_t(nout) != op->outputs : nout < 1)
      return blobError(what + ": " + std::to_string(nout) +
                       " outputs (ops.def: " +
                       (op->outputs < 0 ? std::string("at least 1")
                                        : std::to_string(op->outputs)) +
                       ")");
    if (op->numInts >= 0 && int64_t(nints) != op->numInts)
      return blobError(what + ": " + std::to_string(nints) +
                       " integer attributes, expected " +
                       std::to_string(op->numInts));
    if (int64_t(nfloats) != op->numFloats)
      return blobError(what + ": " + std::to_string(nfloats) +
                       " float attributes, expected " +
                       std::to_string(op->numFloats));
    Node &node = inst->nodes[n];
    node.op = op->id;
    node.numInputs = nin;
    for (uint32_t i = 0; i < nin; ++i) {
      const uint32_t v = fn->inputs()->Get(i);
      if (v >= numValues)
        return blobError(what + ": input " + std::to_string(i) + " refers to " +
                         valueName(v) + " of " + std::to_string(numValues));
      ValueInfo &vi = info[v];
      const bool external = vi.kind == xfb::ValueKind::INPUT ||
                            vi.kind == xfb::ValueKind::CONSTANT;
      if (!external && vi.producer < 0)
        return blobError(what + ": input " + std::to_string(i) + " (" +
                         valueName(v) + ") is used before it is produced");
      if (vi.packing != xfb::Packing::DENSE) {
        const bool r16 = vi.packing == xfb::Packing::QWEIGHT_R16 &&
                         vi.proto.rank == 2; // 3-D: moe's expert stacks
        const bool ok =
            (i == 1 && op->id == OpId::Linear &&
             vi.packing == xfb::Packing::F32_NR8) ||
            (i == 1 && op->id == OpId::QLinear && r16) ||
            (i == 0 && op->id == OpId::QEmbedding && r16) ||
            (i >= 2 && i <= 4 && op->id == OpId::Moe &&
             vi.packing == xfb::Packing::QWEIGHT_R16 && vi.proto.rank == 3);
        if (!ok)
          return blobError(what + ": input " + std::to_string(i) + " (" +
                           valueName(v) +
                           ") is a packed constant, which this operator "
                           "cannot read");
        node.kind = op->id == OpId::Linear       ? Kind::PackedLinear
                    : op->id == OpId::QLinear    ? Kind::PackedQLinear
                    : op->id == OpId::QEmbedding ? Kind::PackedQEmbedding
                                                 : Kind::PackedMoe;
      }
      vi.lastUse = int(n);
      node.values.push_back(v);
      if (vi.kind == xfb::ValueKind::CONSTANT) {
        const bool gather =
            i == 0 && (op->id == OpId::Embedding || op->id == OpId::QEmbedding);
        // A moe's packed expert stack: a decode step reads its top_k
        // experts (checked with the node below).
        const bool experts = i >= 2 && i <= 4 && op->id == OpId::Moe &&
                             vi.packing == xfb::Packing::QWEIGHT_R16 &&
                             nints > 0;
        if (gather)
          gatherOnly.push_back(v);
        else if (experts)
          expertStacks.push_back({v, fn->ints()->Get(0)});
        else
          fullIndices.push_back(vi.index);
      }
    }
    for (uint32_t i = 0; i < nout; ++i) {
      const uint32_t v = fn->outputs()->Get(i);
      if (v >= numValues)
        return blobError(what + ": output " + std::to_string(i) +
                         " refers to " + valueName(v) + " of " +
                         std::to_string(numValues));
      ValueInfo &vi = info[v];
      if (vi.kind == xfb::ValueKind::INPUT ||
          vi.kind == xfb::ValueKind::CONSTANT)
        return blobError(what + ": output " + std::to_string(i) + " writes " +
                         valueName(v) + ", an " + kindName(vi.kind));
      if (vi.producer >= 0)
        return blobError(what + ": output " + std::to_string(i) + " (" +
                         valueName(v) + ") is already produced by node " +
                         std::to_string(vi.producer));
      vi.producer = int(n);
      vi.lastUse = std::max(vi.lastUse, int(n));
      node.values.push_back(v);
    }
    if (nints)
      node.ints.assign(fn->ints()->begin(), fn->ints()->end());
    if (nfloats)
      node.floats.assign(fn->floats()->begin(), fn->floats()->end());
    node.args.assign(node.values.size(), nullptr);
    if (node.kind == Kind::PackedLinear || node.kind == Kind::PackedQLinear)
      ETLLM_RETURN_IF_ERROR(checkPackedNode(what, node, info));
    if (node.kind == Kind::PackedMoe)
      ETLLM_RETURN_IF_ERROR(checkMoeNode(what, node, fn, info, inst->tensors));
    if (node.kind == Kind::PackedQLinear ||
        node.kind == Kind::PackedQEmbedding) {
      Result<QDotWeight> w = qdotWeight(
          inst->tensors[node.values[node.kind == Kind::PackedQLinear ? 1 : 0]]);
      if (!w.ok())
        return blobError(what + ": " + w.message());
      node.qweight = *w;
    }
  }
  std::sort(fullIndices.begin(), fullIndices.end());
  for (uint32_t v : gatherOnly) {
    const ValueInfo &vi = info[v];
    if (!std::binary_search(fullIndices.begin(), fullIndices.end(), vi.index) &&
        vi.proto.rank >= 1 && vi.proto.sizes[0] > 0)
      constants.noteGatherTable(vi.index, uint64_t(vi.proto.sizes[0]));
  }
  // Expert stacks [E, N, K] read top_k experts per step: noted as tables of
  // E / top_k "rows" (one read per step; exact when top_k divides E, else
  // an upper bound).
  for (auto [v, topK] : expertStacks) {
    const ValueInfo &vi = info[v];
    const int64_t E = vi.proto.rank == 3 ? vi.proto.sizes[0] : 0;
    if (!std::binary_search(fullIndices.begin(), fullIndices.end(), vi.index) &&
        E > 0 && topK >= 1 && topK <= E)
      constants.noteGatherTable(vi.index, uint64_t(E / topK));
  }
  for (uint32_t i = 0; i < numOut; ++i)
    if (info[uint32_t(outputPos[i])].producer < 0)
      return blobError("output " + std::to_string(i) + " (" +
                       valueName(uint32_t(outputPos[i])) +
                       ") is never produced");

  // A lora node over a packed qlinear's output, its only reader, runs in
  // the qlinear's parallel loop on a single row (loraFusedPrepare): the
  // qlinear writes the lora node's output, which the lora node updates in
  // place when the fused path does not apply. The hook's input must be
  // ready before the qlinear (and its group) runs.
  {
    bool anyFused = false;
    std::vector<uint32_t> readers(numValues, 0);
    for (const Node &node : inst->nodes)
      for (size_t i = 0; i < node.numInputs; ++i)
        ++readers[node.values[i]];
    for (size_t l = 0; l < inst->nodes.size(); ++l) {
      Node &lora = inst->nodes[l];
      if (lora.op != OpId::Lora || lora.kind != Kind::Dense ||
          lora.numInputs != 2 || lora.values.size() != 3 ||
          lora.ints.size() != 1)
        continue;
      const uint32_t x = lora.values[0], base = lora.values[1],
                     out = lora.values[2];
      ValueInfo &bi = info[base];
      const ValueInfo &xi = info[x], &oi = info[out];
      if (bi.kind != xfb::ValueKind::INTERNAL || bi.producer < 0 ||
          readers[base] != 1 || x == base || xi.producer >= bi.producer ||
          xi.proto.dtype != DType::F32 || bi.proto.dtype != DType::F32 ||
          oi.proto.dtype != DType::F32 || oi.proto.rank != bi.proto.rank ||
          oi.capacity < bi.capacity)
        continue;
      Node &q = inst->nodes[size_t(bi.producer)];
      if (q.kind != Kind::PackedQLinear || q.lora >= 0 ||
          q.values.size() != q.numInputs + 1 ||
          q.values[q.numInputs] != base)
        continue;
      q.values[q.numInputs] = out;
      info[out].producer = bi.producer;
      bi.producer = bi.lastUse = -1; // no longer written or read
      lora.values[1] = out;
      q.lora = int(l);
      anyFused = true;
    }
    if (anyFused) {
      ETLLM_RETURN_IF_ERROR(budget.reserve(
          kLoraFusedFloats * sizeof(float),
          blobError("the fused LoRA hooks' coefficients").message()));
      inst->loraCoefficients.assign(kLoraFusedFloats, 0.0f);
    }
  }

  // Consecutive packed qlinears of one input (q, k, v; gate, up) run as one
  // group: one parallel loop, the input prepared once. The members run at
  // the same time, so none reads what another writes (no input of one, nor
  // of a lora hook fused into one, is produced in the group) and their
  // outputs live until the group's end (the planner gives them distinct
  // memory even when one is never read).
  auto readsOnlyEarlier = [&](const Node &node, size_t lead) {
    for (size_t i = 0; i < node.numInputs; ++i)
      if (info[node.values[i]].producer >= int(lead))
        return false;
    return node.lora < 0 ||
           info[inst->nodes[size_t(node.lora)].values[0]].producer < int(lead);
  };
  for (size_t n = 0; n < inst->nodes.size();) {
    Node &lead = inst->nodes[n];
    size_t e = n + 1;
    if (lead.kind == Kind::PackedQLinear && readsOnlyEarlier(lead, n))
      while (e < inst->nodes.size() && e - n < size_t(kMaxQLinearGroup) &&
             inst->nodes[e].kind == Kind::PackedQLinear &&
             inst->nodes[e].values[0] == lead.values[0] &&
             inst->nodes[e].qweight.l.k == lead.qweight.l.k &&
             readsOnlyEarlier(inst->nodes[e], n))
        ++e;
    lead.group = int(e - n);
    for (size_t m = n; m < e; ++m) {
      inst->nodes[m].inGroup = m > n;
      for (size_t o = inst->nodes[m].numInputs;
           o < inst->nodes[m].values.size(); ++o) {
        ValueInfo &vi = info[inst->nodes[m].values[o]];
        vi.lastUse = std::max(vi.lastUse, int(e - 1));
      }
    }
    n = e;
  }

  // RoPE tables (positions up to the positions' bound: max_seq_len), for
  // the rope nodes whose inv_freq is a constant.
  for (Node &node : inst->nodes) {
    if (node.op != OpId::Rope || node.values.size() != 4 ||
        node.floats.size() != 1)
      continue;
    const ValueInfo &fi = info[node.values[2]];
    const ValueInfo &pi = info[node.values[1]];
    if (fi.kind != xfb::ValueKind::CONSTANT || pi.proto.rank != 1)
      continue;
    const auto key =
        std::make_tuple(fi.index, node.floats[0], pi.proto.sizes[0]);
    size_t t = 0;
    while (t < inst->ropeKeys.size() && inst->ropeKeys[t] != key)
      ++t;
    if (t == inst->ropeKeys.size()) {
      // The table holds min(bound, 2^20) positions of R cos/sin pairs.
      const Tensor &freq = inst->tensors[node.values[2]];
      if (freq.dtype != DType::F32 || freq.rank != 1)
        continue; // not an f32 vector: the portable kernel reports it
      uint64_t tableBytes = 0;
      if (__builtin_mul_overflow(
              uint64_t(std::min<int64_t>(pi.proto.sizes[0], kRopeMaxPositions)),
              uint64_t(freq.sizes[0]) * 2 * sizeof(float), &tableBytes))
        tableBytes = UINT64_MAX;
      ETLLM_RETURN_IF_ERROR(budget.reserve(
          tableBytes,
          blobError("the RoPE table of " +
                    nodeName(uint32_t(&node - inst->nodes.data()), "rope"))
              .message()));
      auto table = std::make_unique<RopeTable>();
      if (!table
               ->build(inst->tensors[node.values[2]], float(node.floats[0]),
                       pi.proto.sizes[0])
               .ok())
        continue; // not an f32 vector: the portable kernel reports it
      inst->ropeTables.push_back(std::move(table));
      inst->ropeKeys.push_back(key);
    }
    node.kind = Kind::Rope;
    node.rope = inst->ropeTables[t].get();
  }

  // Memory plan.
  std::vector<size_t> offsets;
  Result<size_t> arenaBytes = planMemory(info, offsets);
  if (!arenaBytes.ok())
    return arenaBytes.error();
  inst->arenaBytes = *arenaBytes;
  // The arena is sized by the blob: it comes out of the memory budget
  // before it is allocated (ModuleOptions::maxMemory).
  ETLLM_RETURN_IF_ERROR(
      budget.reserve(uint64_t(inst->arenaBytes) + 64,
                     blobError("the internal values' arena").message()));
  inst->arena.reset(new (std::nothrow) uint8_t[inst->arenaBytes + 64]);
  if (!inst->arena)
    return Error("xnnpack: cannot allocate " +
                 std::to_string(inst->arenaBytes) +
                 " bytes for the internal values");
  uint8_t *base = reinterpret_cast<uint8_t *>(
      (reinterpret_cast<uintptr_t>(inst->arena.get()) + 63) & ~uintptr_t(63));
  inst->bound.assign(numValues, nullptr);
  for (uint32_t v = 0; v < numValues; ++v) {
    ValueInfo &vi = info[v];
    if (vi.kind == xfb::ValueKind::INTERNAL) {
      Tensor &t = inst->tensors[v];
      t = vi.proto;
      t.data = base + offsets[v];
      t.capacity = vi.capacity;
    }
    if (vi.kind == xfb::ValueKind::INTERNAL ||
        vi.kind == xfb::ValueKind::CONSTANT)
      inst->bound[v] = &inst->tensors[v];
  }
  // Reserve the scratch the packed qlinear nodes need at the upper-bound
  // shapes (the context is the one execute() gets: the Module's), so that
  // execute does not grow it.
  size_t scratch = 0;
  for (const Node &node : inst->nodes) {
    if (node.kind != Kind::PackedQLinear)
      continue;
    const Tensor &x = info[node.values[0]].proto;
    const int64_t M = prodSizes(x.sizes, 0, x.rank - 1);
    scratch = std::max(scratch,
                       qlinearPackedScratch(isa_, &ctx, M, node.qweight.l, x));
  }
  for (const Node &node : inst->nodes) {
    if (node.kind != Kind::PackedMoe || node.ints.empty())
      continue;
    // (A bound past the reservation limit, e.g. a prefill of the whole
    // context, grows on first use instead of dropping the others'.)
    const Tensor &x = info[node.values[0]].proto;
    const size_t bytes = moeScratchBytes(
        &ctx, prodSizes(x.sizes, 0, x.rank - 1), node.ints[0], *node.moe);
    if (bytes <= kMaxReservedScratch)
      scratch = std::max(scratch, bytes);
  }
  for (const Node &node : inst->nodes) {
    if (node.op != OpId::Sdpa || node.values.size() < 4)
      continue;
    const Tensor &q = info[node.values[0]].proto;
    const Tensor &v = info[node.values[2]].proto;
    if (q.rank == 4 && v.rank == 4)
      scratch = std::max(scratch,
                         sdpaScratchBytes(q.sizes[0], q.sizes[1], q.sizes[2],
                                          v.sizes[1], v.sizes[2], v.sizes[3]));
  }
  // ExecContext::scratch cannot report an allocation failure: only reserve
  // sane sizes up front (larger ones grow on first use, as in portable).
  // The reservation comes out of the memory budget.
  if (scratch > 0 && scratch <= kMaxReservedScratch) {
    ETLLM_RETURN_IF_ERROR(budget.reserve(
        scratch, blobError("the scratch of the packed kernels").message()));
    ctx.scratch(scratch);
  }
  for (int v : inputPos)
    inst->inputValues.push_back(uint32_t(v));
  for (int v : outputPos)
    inst->outputValues.push_back(uint32_t(v));
  return std::unique_ptr<DelegateInstance>(std::move(inst));
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
    return Error("xnnpack: " + name + " is null");
  const Tensor &p = vi.proto;
  if (t->dtype != p.dtype)
    return Error("xnnpack: " + name + " is " + dtypeName(t->dtype) +
                 ", the subgraph expects " + dtypeName(p.dtype));
  if (t->rank != p.rank)
    return Error("xnnpack: " + name + " has rank " + std::to_string(t->rank) +
                 ", the subgraph expects " + std::to_string(p.rank));
  if (!sameQuant(*t, p))
    return Error("xnnpack: " + name +
                 " has other quantization parameters than the subgraph's");
  if (!isInput)
    return Status();
  for (int i = 0; i < p.rank; ++i)
    if (vi.dynamic[i] ? t->sizes[i] > p.sizes[i] : t->sizes[i] != p.sizes[i])
      return Error("xnnpack: " + name + " " + t->shapeString() +
                   " does not fit the subgraph's " + p.shapeString() +
                   (vi.dynamic[i] ? " (upper bounds)" : ""));
  return checkStorage("xnnpack", name.c_str(), *t);
}

Status XnnpackInstance::execute(Span<Tensor *const> inputs,
                                Span<Tensor *const> outputs, ExecContext &ctx) {
  if (inputs.size != inputValues.size() || outputs.size != outputValues.size())
    return Error("xnnpack: the subgraph takes " +
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
      return Error("xnnpack " + nodeName(uint32_t(n), opInfo(node.op).name) +
                   ": " + st.message());
  }
  return Status();
}

} // namespace

std::shared_ptr<Backend> makeXnnpackBackend(Isa isa) {
  return std::make_shared<XnnpackBackend>(isa);
}

size_t plannedBytes(const DelegateInstance &instance) {
  const auto *x = dynamic_cast<const XnnpackInstance *>(&instance);
  return x ? x->arenaBytes : 0;
}

void registerXnnpackBackend() { registerBackend(makeXnnpackBackend()); }

} // namespace etllm::rt::xnnpack
