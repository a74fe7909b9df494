//===- init.cpp - Verifying and preparing a cpu blob ----------------------===//
//
// init() trusts nothing in the blob: it runs the flatbuffers verifier, then
// checks every value (dtype, shape, capacity, constant bytes against the
// packing), every node (known operator, operand counts of ops.def, indices,
// produce-before-use, packed weights only where a kernel reads them) and
// prepares each node by its kind (one function a kind: packed linear,
// packed qlinear, packed qembedding, packed moe, rope with its table); then
// the whole-graph steps: LoRA hooks fused into their qlinear, qlinear groups,
// the internal values' memory planned once (lifetimes over the node order,
// greedy by size, 64-byte aligned) and the kernels' scratch reserved.
//
//===----------------------------------------------------------------------===//
#include "instance.h"

#include "etllm/runtime/cpu/packing.h"
#include "etllm/runtime/flatbuffer_checks.h"
#include "etllm/runtime/memory_planner.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <new>
#include <tuple>

namespace etllm::rt::cpu {

std::string valueName(uint32_t v) { return "value " + std::to_string(v); }

std::string nodeName(uint32_t n, const char *op) {
  return "node " + std::to_string(n) + " (" + op + ")";
}

namespace {

/// Upper bound on the values and nodes of one blob (far beyond any real
/// subgraph; keeps the planner's quadratic pass bounded).
constexpr uint32_t kMaxValues = 1u << 16, kMaxNodes = 1u << 16;
/// Upper bound on the planned bytes of one delegate.
constexpr uint64_t kMaxArenaBytes = uint64_t(1) << 40;
constexpr size_t kPlanAlign = 64;
/// Largest scratch init reserves in the ExecContext.
constexpr size_t kMaxReservedScratch = size_t(256) << 20;

Error blobError(const std::string &msg) { return Error("cpu blob: " + msg); }

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
  // A packing's layout (a Result) gives `need`, or the error.
  auto layoutBytes = [&](const auto &l) -> Status {
    if (!l.ok())
      return blobError(what + ": " + l.message());
    need = l->totalBytes;
    return Status();
  };
  auto wrongShape = [&](const char *packingNeeds) {
    return blobError(what + ": " + packingNeeds + ", got " + p.shapeString());
  };
  switch (vi.packing) {
  case xfb::Packing::DENSE:
    need = vi.capacity;
    break;
  case xfb::Packing::QWEIGHT_NR8:
    if (!qweight2d)
      return wrongShape("QWEIGHT_NR8 packing needs a 2-D qweight");
    ETLLM_RETURN_IF_ERROR(layoutBytes(
        LegacyQWeightLayout::compute(p.sizes[0], p.sizes[1], p.quant)));
    break;
  case xfb::Packing::QWEIGHT_R16:
    if (qweight3d) { // stacked expert weights (moe)
      ETLLM_RETURN_IF_ERROR(layoutBytes(PackedQExpertsLayout::compute(
          p.sizes[0], p.sizes[1], p.sizes[2], p.quant)));
      break;
    }
    if (!qweight2d)
      return wrongShape("QWEIGHT_R16 packing needs a 2-D or 3-D qweight");
    ETLLM_RETURN_IF_ERROR(layoutBytes(
        PackedQBlockLayout::compute(p.sizes[0], p.sizes[1], p.quant)));
    break;
  case xfb::Packing::F32_NR8:
    if (p.dtype != DType::F32 || p.rank != 2)
      return wrongShape("F32_NR8 packing needs a 2-D f32 tensor");
    ETLLM_RETURN_IF_ERROR(
        layoutBytes(PackedF32Layout::computeChecked(p.sizes[0], p.sizes[1])));
    break;
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
    return Error("cpu blob: the internal values need more than " +
                 std::to_string(kMaxArenaBytes) + " bytes");
  offsets.assign(info.size(), 0);
  for (size_t i = 0; i < planned.size(); ++i)
    offsets[planned[i]] = size_t(plan->offsets[i]);
  return size_t(plan->arenaBytes);
}

/// What the packed operand at `i` of an `op` node may be (a packing is read
/// only where a kernel reads it), and the kind of node it makes.
bool packedOperandOk(OpId op, uint32_t i, const ValueInfo &vi) {
  const bool r16 = vi.packing == xfb::Packing::QWEIGHT_R16 &&
                   vi.proto.rank == 2; // 3-D: moe's expert stacks
  return (i == 1 && op == OpId::Linear &&
          vi.packing == xfb::Packing::F32_NR8) ||
         (i == 1 && op == OpId::QLinear && r16) ||
         (i == 0 && op == OpId::QEmbedding && r16) ||
         (i >= 2 && i <= 4 && op == OpId::Moe &&
          vi.packing == xfb::Packing::QWEIGHT_R16 && vi.proto.rank == 3);
}

Kind packedKind(OpId op) {
  return op == OpId::Linear       ? Kind::PackedLinear
         : op == OpId::QLinear    ? Kind::PackedQLinear
         : op == OpId::QEmbedding ? Kind::PackedQEmbedding
                                  : Kind::PackedMoe;
}

/// One init: the blob's checks, then each step of the preparation, in
/// order. Every node is read the same way (operator, operand counts,
/// indices, produce-before-use, packed operands) and then prepared by the
/// function of its kind (prepareNode).
class Init {
public:
  Init(Isa isa, const ConstantTable &constants, ExecContext &ctx,
       MemoryBudget &budget)
      : constants_(constants), ctx_(ctx), budget_(budget),
        inst_(std::make_unique<CpuInstance>()), info_(inst_->info) {
    inst_->isa = isa;
  }

  Result<std::unique_ptr<CpuInstance>>
  run(const uint8_t *blob, size_t size,
      const std::vector<std::pair<std::string, std::string>> &compileSpecs) {
    ETLLM_RETURN_IF_ERROR(verifyBlob(blob, size, compileSpecs));
    ETLLM_RETURN_IF_ERROR(readValues());
    inst_->nodes.resize(numNodes_);
    for (uint32_t n = 0; n < numNodes_; ++n)
      ETLLM_RETURN_IF_ERROR(readNode(n));
    noteGatherTables();
    for (uint32_t i = 0; i < uint32_t(outputPos_.size()); ++i)
      if (info_[uint32_t(outputPos_[i])].producer < 0)
        return blobError("output " + std::to_string(i) + " (" +
                         valueName(uint32_t(outputPos_[i])) +
                         ") is never produced");
    ETLLM_RETURN_IF_ERROR(fuseLoraHooks());
    groupQLinears();
    for (Node &node : inst_->nodes)
      if (node.op == OpId::Rope)
        ETLLM_RETURN_IF_ERROR(prepareRope(node));
    ETLLM_RETURN_IF_ERROR(planAndBind());
    ETLLM_RETURN_IF_ERROR(reserveScratch());
    for (int v : inputPos_)
      inst_->inputValues.push_back(uint32_t(v));
    for (int v : outputPos_)
      inst_->outputValues.push_back(uint32_t(v));
    return std::move(inst_);
  }

private:
  const ConstantTable &constants_;
  ExecContext &ctx_;
  MemoryBudget &budget_;
  std::unique_ptr<CpuInstance> inst_;
  std::vector<ValueInfo> &info_;
  const flatbuffers::Vector<flatbuffers::Offset<xfb::Value>> *values_ = nullptr;
  const flatbuffers::Vector<flatbuffers::Offset<xfb::Node>> *fnodes_ = nullptr;
  uint32_t numValues_ = 0, numNodes_ = 0;
  std::vector<int> inputPos_, outputPos_; // value per call position
  // Constant values used as a gather table (input 0 of embedding,
  // qembedding) and in any other way, to tell the runtime which tables a
  // call reads one row of rather than in full. (Two values may name one
  // program constant: a tied embedding's table is also the output layer's
  // weight.)
  std::vector<uint32_t> gatherOnly_, fullIndices_;
  std::vector<std::pair<uint32_t, int64_t>> expertStacks_; // value, top_k

  /// The format, identifier, alignment, flatbuffers Verifier and counts.
  Status verifyBlob(
      const uint8_t *blob, size_t size,
      const std::vector<std::pair<std::string, std::string>> &compileSpecs) {
    // The blob must start 8-aligned (programs align segments to 64), and
    // so must the elements of its vectors of 8-byte values (sizes, ints:
    // [long]; floats: [double]), or reading them is a misaligned load.
    const std::string bad = checkDelegateBlob(
        blob, size, compileSpecs, "EXN1", "an", xfb::GraphBufferHasIdentifier,
        xfb::VerifyGraphBuffer);
    if (!bad.empty())
      return blobError(bad);
    const xfb::Graph *graph = xfb::GetGraph(blob);
    values_ = graph->values();
    fnodes_ = graph->nodes();
    numValues_ = values_ ? values_->size() : 0;
    numNodes_ = fnodes_ ? fnodes_->size() : 0;
    if (numValues_ > kMaxValues || numNodes_ > kMaxNodes)
      return blobError("too many values or nodes");
    for (uint32_t v = 0; v < numValues_; ++v)
      if (values_->Get(v) && !aligned8(values_->Get(v)->sizes()))
        return blobError(valueName(v) + ": sizes are not 8-byte aligned");
    for (uint32_t n = 0; n < numNodes_; ++n)
      if (fnodes_->Get(n) && (!aligned8(fnodes_->Get(n)->ints()) ||
                              !aligned8(fnodes_->Get(n)->floats())))
        return blobError("node " + std::to_string(n) +
                         ": ints or floats are not 8-byte aligned");
    return Status();
  }

  /// Every value's description; the call positions of inputs and outputs;
  /// the constants' bytes.
  Status readValues() {
    info_.resize(numValues_);
    inst_->tensors.resize(numValues_);
    uint32_t numIn = 0, numOut = 0;
    for (uint32_t v = 0; v < numValues_; ++v) {
      ETLLM_RETURN_IF_ERROR(readValue(v, values_->Get(v), info_[v]));
      ValueInfo &vi = info_[v];
      if (vi.packing != xfb::Packing::DENSE &&
          vi.kind != xfb::ValueKind::CONSTANT)
        return blobError(valueName(v) + ": only constants can be packed");
      if (vi.kind == xfb::ValueKind::INPUT)
        ++numIn;
      else if (vi.kind == xfb::ValueKind::OUTPUT)
        ++numOut;
    }
    inputPos_.assign(numIn, -1);
    outputPos_.assign(numOut, -1);
    for (uint32_t v = 0; v < numValues_; ++v) {
      ValueInfo &vi = info_[v];
      if (vi.kind == xfb::ValueKind::INPUT ||
          vi.kind == xfb::ValueKind::OUTPUT) {
        std::vector<int> &pos =
            vi.kind == xfb::ValueKind::INPUT ? inputPos_ : outputPos_;
        if (vi.index >= pos.size())
          return blobError(valueName(v) + ": " + kindName(vi.kind) + " index " +
                           std::to_string(vi.index) + " is out of range (" +
                           std::to_string(pos.size()) + " " +
                           kindName(vi.kind) + "s)");
        if (pos[vi.index] >= 0)
          return blobError(valueName(v) + ": " + kindName(vi.kind) + " index " +
                           std::to_string(vi.index) + " is also used by " +
                           valueName(uint32_t(pos[vi.index])));
        pos[vi.index] = int(v);
      } else if (vi.kind == xfb::ValueKind::CONSTANT) {
        ETLLM_RETURN_IF_ERROR(checkConstant(
            v, vi, constants_, inst_->tensors[v], inst_->converted, budget_));
      }
    }
    return Status();
  }

  /// Node `n`: its operator and the operand counts of ops.def.
  Result<const OpInfo *> readOperator(uint32_t n, const xfb::Node *fn) {
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
    // The integer attributes' contract (ops.def: enums and flags in range,
    // optional inputs as the has_* flags say), as the program's own kernel
    // calls are checked when it loads.
    Status attrs = checkIntAttrs(op->id, nin,
                                 {nints ? fn->ints()->data() : nullptr, nints});
    if (!attrs.ok())
      return blobError(what + ": " + attrs.message());
    return op;
  }

  /// Value `v`, named by `slot` ("node 3 (silu): input 0"), is in range.
  Status checkValueIndex(const std::string &slot, uint32_t v) const {
    if (v >= numValues_)
      return blobError(slot + " refers to " + valueName(v) + " of " +
                       std::to_string(numValues_));
    return Status();
  }

  /// Input `i` (value `v`) of node `n`: produced before, packed only where
  /// the operator reads a packing (which sets the node's kind); a constant
  /// is noted as read in full, as a gather table or as an expert stack.
  Status readInput(uint32_t n, const xfb::Node *fn, const std::string &what,
                   Node &node, uint32_t i) {
    const uint32_t v = fn->inputs()->Get(i);
    const std::string slot = what + ": input " + std::to_string(i);
    ETLLM_RETURN_IF_ERROR(checkValueIndex(slot, v));
    ValueInfo &vi = info_[v];
    const bool external =
        vi.kind == xfb::ValueKind::INPUT || vi.kind == xfb::ValueKind::CONSTANT;
    if (!external && vi.producer < 0)
      return blobError(slot + " (" + valueName(v) +
                       ") is used before it is produced");
    if (vi.packing != xfb::Packing::DENSE) {
      if (!packedOperandOk(node.op, i, vi))
        return blobError(slot + " (" + valueName(v) +
                         ") is a packed constant, which this operator "
                         "cannot read");
      node.kind = packedKind(node.op);
    }
    vi.lastUse = int(n);
    node.values.push_back(v);
    if (vi.kind == xfb::ValueKind::CONSTANT) {
      const bool gather =
          i == 0 && (node.op == OpId::Embedding || node.op == OpId::QEmbedding);
      // A moe's packed expert stack: a decode step reads its top_k experts
      // (checked with the node).
      const bool experts = i >= 2 && i <= 4 && node.op == OpId::Moe &&
                           vi.packing == xfb::Packing::QWEIGHT_R16 &&
                           fn->ints() && fn->ints()->size() > 0;
      if (gather)
        gatherOnly_.push_back(v);
      else if (experts)
        expertStacks_.push_back({v, fn->ints()->Get(0)});
      else
        fullIndices_.push_back(vi.index);
    }
    return Status();
  }

  /// Output `i` of node `n`: an internal or output value, produced once.
  Status readOutput(uint32_t n, const xfb::Node *fn, const std::string &what,
                    Node &node, uint32_t i) {
    const uint32_t v = fn->outputs()->Get(i);
    const std::string slot = what + ": output " + std::to_string(i);
    ETLLM_RETURN_IF_ERROR(checkValueIndex(slot, v));
    ValueInfo &vi = info_[v];
    if (vi.kind == xfb::ValueKind::INPUT || vi.kind == xfb::ValueKind::CONSTANT)
      return blobError(slot + " writes " + valueName(v) + ", an " +
                       kindName(vi.kind));
    if (vi.producer >= 0)
      return blobError(slot + " (" + valueName(v) +
                       ") is already produced by node " +
                       std::to_string(vi.producer));
    vi.producer = int(n);
    vi.lastUse = std::max(vi.lastUse, int(n));
    node.values.push_back(v);
    return Status();
  }

  /// Node `n`, read and then prepared by its kind.
  Status readNode(uint32_t n) {
    const xfb::Node *fn = fnodes_->Get(n);
    Result<const OpInfo *> op = readOperator(n, fn);
    if (!op.ok())
      return op.error();
    const std::string what = nodeName(n, (*op)->name);
    Node &node = inst_->nodes[n];
    node.op = (*op)->id;
    node.numInputs = fn->inputs() ? fn->inputs()->size() : 0;
    for (uint32_t i = 0; i < node.numInputs; ++i)
      ETLLM_RETURN_IF_ERROR(readInput(n, fn, what, node, i));
    const uint32_t nout = fn->outputs() ? fn->outputs()->size() : 0;
    for (uint32_t i = 0; i < nout; ++i)
      ETLLM_RETURN_IF_ERROR(readOutput(n, fn, what, node, i));
    if (fn->ints())
      node.ints.assign(fn->ints()->begin(), fn->ints()->end());
    if (fn->floats())
      node.floats.assign(fn->floats()->begin(), fn->floats()->end());
    node.args.assign(node.values.size(), nullptr);
    return prepareNode(what, node, fn);
  }

  // One function per node kind ---------------------------------------------

  /// The dispatch: what init checks and prepares for a node of each kind
  /// (Rope is chosen later, by prepareRope).
  Status prepareNode(const std::string &what, Node &node, const xfb::Node *fn) {
    switch (node.kind) {
    case Kind::Dense:
    case Kind::Rope:
      return Status();
    case Kind::PackedLinear:
      return preparePackedLinear(what, node);
    case Kind::PackedQLinear:
      return preparePackedQLinear(what, node);
    case Kind::PackedQEmbedding:
      return preparePackedQEmbedding(what, node);
    case Kind::PackedMoe:
      return preparePackedMoe(what, node, fn);
    }
    return blobError(what + ": unknown node kind");
  }

  /// A linear over an F32_NR8 weight: its input, bias and output.
  Status preparePackedLinear(const std::string &what, const Node &node) {
    return checkPackedNode(what, node, info_);
  }

  /// A qlinear over a QWEIGHT_R16 weight: its operands and the weight's
  /// block layout.
  Status preparePackedQLinear(const std::string &what, Node &node) {
    ETLLM_RETURN_IF_ERROR(checkPackedNode(what, node, info_));
    return prepareQWeight(what, node, inst_->tensors[node.values[1]]);
  }

  /// A qembedding over a QWEIGHT_R16 table: the table's block layout.
  Status preparePackedQEmbedding(const std::string &what, Node &node) {
    return prepareQWeight(what, node, inst_->tensors[node.values[0]]);
  }

  Status prepareQWeight(const std::string &what, Node &node,
                        const Tensor &weight) {
    Result<QDotWeight> w = qdotWeight(weight);
    if (!w.ok())
      return blobError(what + ": " + w.message());
    node.qweight = *w;
    return Status();
  }

  /// A moe over packed expert stacks.
  Status preparePackedMoe(const std::string &what, Node &node,
                          const xfb::Node *fn) {
    return checkMoeNode(what, node, fn, info_, inst_->tensors);
  }

  /// A rope whose inv_freq is a constant f32 vector gets a table of its
  /// positions up to the positions' bound (max_seq_len), shared by the
  /// nodes of one (inv_freq, scaling, bound); the others stay dense.
  Status prepareRope(Node &node) {
    if (node.values.size() != 4 || node.floats.size() != 1)
      return Status();
    const ValueInfo &fi = info_[node.values[2]];
    const ValueInfo &pi = info_[node.values[1]];
    if (fi.kind != xfb::ValueKind::CONSTANT || pi.proto.rank != 1)
      return Status();
    const auto key =
        std::make_tuple(fi.index, node.floats[0], pi.proto.sizes[0]);
    size_t t = 0;
    while (t < inst_->ropeKeys.size() && inst_->ropeKeys[t] != key)
      ++t;
    if (t == inst_->ropeKeys.size()) {
      // The table holds min(bound, 2^20) positions of R cos/sin pairs.
      const Tensor &freq = inst_->tensors[node.values[2]];
      if (freq.dtype != DType::F32 || freq.rank != 1)
        return Status(); // not an f32 vector: the portable kernel reports it
      uint64_t tableBytes = 0;
      if (__builtin_mul_overflow(
              uint64_t(std::min<int64_t>(pi.proto.sizes[0], kRopeMaxPositions)),
              uint64_t(freq.sizes[0]) * 2 * sizeof(float), &tableBytes))
        tableBytes = UINT64_MAX;
      ETLLM_RETURN_IF_ERROR(budget_.reserve(
          tableBytes, blobError("the RoPE table of " +
                                nodeName(uint32_t(&node - inst_->nodes.data()),
                                         opName(OpId::Rope)))
                          .message()));
      auto table = std::make_unique<RopeTable>();
      if (!table->build(freq, float(node.floats[0]), pi.proto.sizes[0]).ok())
        return Status(); // not an f32 vector: the portable kernel reports it
      inst_->ropeTables.push_back(std::move(table));
      inst_->ropeKeys.push_back(key);
    }
    node.kind = Kind::Rope;
    node.rope = inst_->ropeTables[t].get();
    return Status();
  }

  /// The scratch a node's kernel needs at the upper-bound shapes (0: none
  /// reserved at init).
  size_t scratchBytes(const Node &node) const {
    switch (node.kind) {
    case Kind::PackedQLinear: {
      const Tensor &x = info_[node.values[0]].proto;
      const int64_t M = prodSizes(x.sizes, 0, x.rank - 1);
      return qlinearPackedScratch(inst_->isa, &ctx_, M, node.qweight.l, x);
    }
    case Kind::PackedMoe: {
      if (node.ints.empty())
        return 0;
      // (A bound past the reservation limit, e.g. a prefill of the whole
      // context, grows on first use instead of dropping the others'.)
      const Tensor &x = info_[node.values[0]].proto;
      const size_t bytes = moeScratchBytes(
          &ctx_, prodSizes(x.sizes, 0, x.rank - 1), node.ints[0], *node.moe);
      return bytes <= kMaxReservedScratch ? bytes : 0;
    }
    case Kind::Dense: {
      if (node.op != OpId::Sdpa || node.values.size() < 4)
        return 0;
      const Tensor &q = info_[node.values[0]].proto;
      const Tensor &k = info_[node.values[1]].proto;
      const Tensor &v = info_[node.values[2]].proto;
      if (q.rank != 4 || v.rank != 4)
        return 0;
      return sdpaScratchBytes(&ctx_, q.sizes[0], q.sizes[1], q.sizes[2],
                              v.sizes[1], v.sizes[2], q.sizes[3], v.sizes[3],
                              k.dtype == DType::QAct);
    }
    default:
      return 0;
    }
  }

  // Whole-graph steps ------------------------------------------------------

  /// Tells the runtime which constants a call reads only rows of.
  void noteGatherTables() {
    std::sort(fullIndices_.begin(), fullIndices_.end());
    for (uint32_t v : gatherOnly_) {
      const ValueInfo &vi = info_[v];
      if (!std::binary_search(fullIndices_.begin(), fullIndices_.end(),
                              vi.index) &&
          vi.proto.rank >= 1 && vi.proto.sizes[0] > 0)
        constants_.noteGatherTable(vi.index, uint64_t(vi.proto.sizes[0]));
    }
    // Expert stacks [E, N, K] read top_k experts per step: noted as tables
    // of E / top_k "rows" (one read per step; exact when top_k divides E,
    // else an upper bound).
    for (auto [v, topK] : expertStacks_) {
      const ValueInfo &vi = info_[v];
      const int64_t E = vi.proto.rank == 3 ? vi.proto.sizes[0] : 0;
      if (!std::binary_search(fullIndices_.begin(), fullIndices_.end(),
                              vi.index) &&
          E > 0 && topK >= 1 && topK <= E)
        constants_.noteGatherTable(vi.index, uint64_t(E / topK));
    }
  }

  /// A lora node over a packed qlinear's output, its only reader, runs in
  /// the qlinear's parallel loop on a single row (loraFusedPrepare): the
  /// qlinear writes the lora node's output, which the lora node updates in
  /// place when the fused path does not apply. The hook's input must be
  /// ready before the qlinear (and its group) runs.
  Status fuseLoraHooks() {
    std::vector<Node> &nodes = inst_->nodes;
    bool anyFused = false;
    std::vector<uint32_t> readers(numValues_, 0);
    for (const Node &node : nodes)
      for (size_t i = 0; i < node.numInputs; ++i)
        ++readers[node.values[i]];
    for (size_t l = 0; l < nodes.size(); ++l) {
      Node &lora = nodes[l];
      if (lora.op != OpId::Lora || lora.kind != Kind::Dense ||
          lora.numInputs != 2 || lora.values.size() != 3 ||
          lora.ints.size() != 1)
        continue;
      const uint32_t x = lora.values[0], base = lora.values[1],
                     out = lora.values[2];
      ValueInfo &bi = info_[base];
      const ValueInfo &xi = info_[x], &oi = info_[out];
      if (bi.kind != xfb::ValueKind::INTERNAL || bi.producer < 0 ||
          readers[base] != 1 || x == base || xi.producer >= bi.producer ||
          xi.proto.dtype != DType::F32 || bi.proto.dtype != DType::F32 ||
          oi.proto.dtype != DType::F32 || oi.proto.rank != bi.proto.rank ||
          oi.capacity < bi.capacity)
        continue;
      Node &q = nodes[size_t(bi.producer)];
      if (q.kind != Kind::PackedQLinear || q.lora >= 0 ||
          q.values.size() != q.numInputs + 1 || q.values[q.numInputs] != base)
        continue;
      q.values[q.numInputs] = out;
      info_[out].producer = bi.producer;
      bi.producer = bi.lastUse = -1; // no longer written or read
      lora.values[1] = out;
      q.lora = int(l);
      anyFused = true;
    }
    if (!anyFused)
      return Status();
    ETLLM_RETURN_IF_ERROR(budget_.reserve(
        kLoraFusedFloats * sizeof(float),
        blobError("the fused LoRA hooks' coefficients").message()));
    inst_->loraCoefficients.assign(kLoraFusedFloats, 0.0f);
    return Status();
  }

  /// Consecutive packed qlinears of one input (q, k, v; gate, up) run as
  /// one group: one parallel loop, the input prepared once. The members run
  /// at the same time, so none reads what another writes (no input of one,
  /// nor of a lora hook fused into one, is produced in the group) and their
  /// outputs live until the group's end (the planner gives them distinct
  /// memory even when one is never read).
  void groupQLinears() {
    std::vector<Node> &nodes = inst_->nodes;
    auto readsOnlyEarlier = [&](const Node &node, size_t lead) {
      for (size_t i = 0; i < node.numInputs; ++i)
        if (info_[node.values[i]].producer >= int(lead))
          return false;
      return node.lora < 0 ||
             info_[nodes[size_t(node.lora)].values[0]].producer < int(lead);
    };
    for (size_t n = 0; n < nodes.size();) {
      Node &lead = nodes[n];
      size_t e = n + 1;
      if (lead.kind == Kind::PackedQLinear && readsOnlyEarlier(lead, n))
        while (e < nodes.size() && e - n < size_t(kMaxQLinearGroup) &&
               nodes[e].kind == Kind::PackedQLinear &&
               nodes[e].values[0] == lead.values[0] &&
               nodes[e].qweight.l.k == lead.qweight.l.k &&
               readsOnlyEarlier(nodes[e], n))
          ++e;
      lead.group = int(e - n);
      for (size_t m = n; m < e; ++m) {
        nodes[m].inGroup = m > n;
        for (size_t o = nodes[m].numInputs; o < nodes[m].values.size(); ++o) {
          ValueInfo &vi = info_[nodes[m].values[o]];
          vi.lastUse = std::max(vi.lastUse, int(e - 1));
        }
      }
      n = e;
    }
  }

  /// Plans the internal values into one arena (out of the memory budget)
  /// and binds the internal and constant values' tensors.
  Status planAndBind() {
    std::vector<size_t> offsets;
    Result<size_t> arenaBytes = planMemory(info_, offsets);
    if (!arenaBytes.ok())
      return arenaBytes.error();
    inst_->arenaBytes = *arenaBytes;
    // The arena is sized by the blob: it comes out of the memory budget
    // before it is allocated (ModuleOptions::maxMemory).
    ETLLM_RETURN_IF_ERROR(
        budget_.reserve(uint64_t(inst_->arenaBytes) + 64,
                        blobError("the internal values' arena").message()));
    inst_->arena.reset(new (std::nothrow) uint8_t[inst_->arenaBytes + 64]);
    if (!inst_->arena)
      return Error("cpu: cannot allocate " + std::to_string(inst_->arenaBytes) +
                   " bytes for the internal values");
    uint8_t *base = reinterpret_cast<uint8_t *>(
        (reinterpret_cast<uintptr_t>(inst_->arena.get()) + 63) &
        ~uintptr_t(63));
    inst_->bound.assign(numValues_, nullptr);
    for (uint32_t v = 0; v < numValues_; ++v) {
      ValueInfo &vi = info_[v];
      if (vi.kind == xfb::ValueKind::INTERNAL) {
        Tensor &t = inst_->tensors[v];
        t = vi.proto;
        t.data = base + offsets[v];
        t.capacity = vi.capacity;
      }
      if (vi.kind == xfb::ValueKind::INTERNAL ||
          vi.kind == xfb::ValueKind::CONSTANT)
        inst_->bound[v] = &inst_->tensors[v];
    }
    return Status();
  }

  /// Reserves the scratch the nodes' kernels need at the upper-bound shapes
  /// (the context is the one execute() gets: the Module's), so that execute
  /// does not grow it. ExecContext::scratch cannot report an allocation
  /// failure: only sane sizes are reserved up front (larger ones grow on
  /// first use, as in portable). The reservation comes out of the memory
  /// budget.
  Status reserveScratch() {
    size_t scratch = 0;
    for (const Node &node : inst_->nodes)
      scratch = std::max(scratch, scratchBytes(node));
    if (scratch > 0 && scratch <= kMaxReservedScratch) {
      ETLLM_RETURN_IF_ERROR(budget_.reserve(
          scratch, blobError("the scratch of the packed kernels").message()));
      ctx_.scratch(scratch);
    }
    return Status();
  }
};

} // namespace

Result<std::unique_ptr<CpuInstance>> initInstance(
    Isa isa, const uint8_t *blob, size_t size,
    const std::vector<std::pair<std::string, std::string>> &compileSpecs,
    const ConstantTable &constants, ExecContext &ctx, MemoryBudget &budget) {
  return Init(isa, constants, ctx, budget).run(blob, size, compileSpecs);
}

} // namespace etllm::rt::cpu
