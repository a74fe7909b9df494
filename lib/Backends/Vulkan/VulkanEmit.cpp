//===- VulkanEmit.cpp - Groups of ops as Vulkan dispatches ----------------===//
//
// Walks the scheduled groups and writes, for each, its dispatches: the
// kernel, the variant (activation type, weight format), the slots it binds
// and the parameter block (params.h) computed from the operands' views.
// Views come from views (reshape, transpose, slice cost nothing); an operand
// in a layout its kernel cannot read is copied first. Weights are named by
// parameter, rows and format, so a weight two delegates read (the tied
// embedding and lm_head) is one program constant.
//
//===----------------------------------------------------------------------===//
#include "VulkanEmit.h"
#include "VulkanViews.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Lowering/KernelCalls.h"
#include "etllm/runtime/vulkan/packing.h"
#include "etllm/schema/vulkan_generated.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>
#include <map>
#include <numeric>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::vk {

namespace vfb = ::etllm::vulkan;
using rvk::KernelId;
using rvk::Variant;
using rvk::WeightFormat;

namespace {

/// The decoder layer an op belongs to (model.layers.N....), or -1.
int layerOf(Operation *op) {
  auto m = op->getAttrOfType<StringAttr>(EtllmDialect::kModuleAttrName);
  if (!m)
    return -1;
  llvm::StringRef s = m.getValue();
  size_t at = s.find("layers.");
  if (at == llvm::StringRef::npos)
    return -1;
  s = s.drop_front(at + 7);
  unsigned n = 0;
  if (s.consumeInteger(10, n))
    return -1;
  return int(n);
}

std::string opLabel(llvm::ArrayRef<Operation *> ops) {
  std::string s;
  for (Operation *op : ops) {
    if (!s.empty())
      s += "+";
    s += op->getName().getStringRef().drop_front(6).str(); // "etllm."
  }
  if (auto m =
          ops.front()->getAttrOfType<StringAttr>(EtllmDialect::kModuleAttrName))
    s += " " + m.getValue().str();
  return s;
}

template <typename P> std::vector<uint32_t> words(const P &p) {
  std::vector<uint32_t> w(sizeof(P) / 4);
  std::memcpy(w.data(), &p, sizeof(P));
  return w;
}

int64_t product(llvm::ArrayRef<int64_t> v) {
  int64_t n = 1;
  for (int64_t x : v)
    n *= x;
  return n;
}

class Emitter {
public:
  Emitter(func::FuncOp fn, const PlanOptions &o) : fn(fn), o(o) {
    plan.options = o;
    plan.buffers.push_back(PlanBuffer());
  }
  FailureOr<Plan> run();

private:
  func::FuncOp fn;
  PlanOptions o;
  Plan plan;
  llvm::DenseMap<Value, View> views;
  llvm::DenseMap<Value, int> cacheOfArg; // block arg -> cache buffer
  std::map<std::string, int> namedBuffers;
  std::vector<Operation *> current; // the group being emitted

  rt::DType act() const { return o.f16 ? rt::DType::F16 : rt::DType::F32; }
  uint64_t actBytes() const { return o.f16 ? 2 : 4; }

  int newSlot(uint64_t bytes, rt::DType dtype, int buffer = 0) {
    Slot s;
    s.buffer = buffer;
    s.bytes = (bytes + 3) / 4 * 4;
    s.dtype = dtype;
    plan.slots.push_back(s);
    return int(plan.slots.size() - 1);
  }
  View newView(const Shape &shape, rt::DType dtype,
               llvm::ArrayRef<int> order = {}) {
    const uint64_t n = uint64_t(product(shape.sizes));
    return contiguousView(newSlot(n * rt::elementSize(dtype), dtype), shape,
                          order);
  }
  FailureOr<Shape> shapeOf(Value v, Operation *diag) {
    std::optional<Shape> s = shapeOfType(v.getType(), o.seqBound);
    if (!s)
      return diag->emitError("vulkan: unsupported type ") << v.getType();
    return *s;
  }
  FailureOr<View> viewOf(Value v) {
    auto it = views.find(v);
    if (it == views.end()) {
      Operation *at = v.getDefiningOp() ? v.getDefiningOp() : fn.getOperation();
      return at->emitError("vulkan: this value has no storage in the plan");
    }
    return it->second;
  }
  int dispatch(KernelId k, uint32_t variant, std::vector<int> slots,
               std::vector<uint32_t> params, const std::string &label) {
    PlanDispatch d;
    d.kernel = k;
    d.variant = variant;
    d.slots = std::move(slots);
    d.params = std::move(params);
    d.label = label;
    for (Operation *op : current)
      d.layer = std::max(d.layer, layerOf(op));
    plan.dispatches.push_back(std::move(d));
    const int id = int(plan.dispatches.size() - 1);
    for (Operation *op : current)
      plan.opDispatches[op].push_back(id);
    return id;
  }

  /// `v` copied into a contiguous slot of its shape.
  View copied(const View &v) {
    Shape s;
    s.dyn = v.dyn;
    for (int d = 0; d < v.rank; ++d)
      s.sizes.push_back(v.sizes[d]);
    const rt::DType dt = plan.slots[size_t(v.slot)].dtype;
    View out = newView(s, dt);
    rvk::CopyParams p = copyParams(v, out);
    const bool f16 = dt == rt::DType::F16;
    dispatch(KernelId::Copy, Variant::copy(f16, f16), {v.slot, out.slot},
             words(p), "copy for " + opLabel(current));
    return out;
  }
  /// `v` as rows (copied when it is not: a contiguous copy of a shape
  /// legality admitted always is).
  FailureOr<std::pair<View, Rows>> asRows(View v) {
    if (std::optional<Rows> r = rowsOf(v))
      return std::make_pair(v, *r);
    v = copied(v);
    if (std::optional<Rows> r = rowsOf(v))
      return std::make_pair(v, *r);
    return current.front()->emitError(
        "vulkan: an operand's rows have no layout the kernels read");
  }
  FailureOr<std::pair<View, Flat>> asFlat(View v) {
    if (std::optional<Flat> f = flatOf(v))
      return std::make_pair(v, *f);
    v = copied(v);
    if (std::optional<Flat> f = flatOf(v))
      return std::make_pair(v, *f);
    return current.front()->emitError(
        "vulkan: an operand has no contiguous layout the kernels read");
  }
  /// Indices and positions are whole inputs (never copied: the copy
  /// kernel moves floats).
  FailureOr<std::pair<View, Flat>> indexFlat(Value v, Operation *user) {
    FailureOr<View> view = viewOf(v);
    if (failed(view))
      return failure();
    std::optional<Flat> f = flatOf(*view);
    if (!f || plan.slots[size_t(view->slot)].dtype != rt::DType::I32)
      return user->emitError("vulkan: indices must be a contiguous input");
    return std::make_pair(*view, *f);
  }
  /// A [1, heads, seq, head] view with contiguous heads (copied if not).
  View asHeads(View v) {
    if (v.rank == 4 && (v.sizes[3] == 1 || v.strides[3] == 1))
      return v;
    return copied(v);
  }

  int bufferSlot(int buffer) {
    auto &b = plan.buffers[size_t(buffer)];
    for (auto [i, s] : llvm::enumerate(plan.slots))
      if (s.buffer == buffer)
        return int(i);
    const rt::DType dt = b.kind == PlanBuffer::Cache ? act() : rt::DType::F32;
    return newSlot(b.bytes, dt, buffer);
  }
  int namedBuffer(PlanBuffer b) {
    auto it = namedBuffers.find(b.name);
    if (it != namedBuffers.end())
      return it->second;
    plan.buffers.push_back(std::move(b));
    const int id = int(plan.buffers.size() - 1);
    namedBuffers[plan.buffers.back().name] = id;
    return id;
  }
  /// An f32 parameter (a bias, a norm weight) as a buffer.
  FailureOr<int> floatsBuffer(Value v) {
    auto get = v.getDefiningOp<ParameterGetOp>();
    auto t = cast<RankedTensorType>(v.getType());
    if (!get)
      return v.getDefiningOp()->emitError("vulkan: expected a parameter");
    PlanBuffer b;
    b.kind = PlanBuffer::Floats;
    b.floatsParam = get.getName().str();
    b.bytes = uint64_t(t.getNumElements()) * 4;
    b.name = "vulkan/" + b.floatsParam + "@f32";
    return bufferSlot(namedBuffer(std::move(b)));
  }
  /// Rows of `parts` (param, begin, end) packed in `format` as one buffer.
  int weightBuffer(WeightFormat format, std::vector<WeightPart> parts,
                   int64_t cols) {
    PlanBuffer b;
    b.kind = PlanBuffer::Weight;
    b.format = format;
    b.cols = cols;
    std::string name;
    for (const WeightPart &p : parts) {
      b.rows += p.rowEnd - p.rowBegin;
      if (!name.empty())
        name += "+";
      name += p.param;
      if (p.rowBegin != 0 || p.rowEnd != fullRows[p.param])
        name += llvm::formatv("[{0}:{1}]", p.rowBegin, p.rowEnd).str();
    }
    static const char *suffix[] = {"@f32", "@f16", "@q4"};
    b.name = "vulkan/" + name + suffix[int(format)];
    b.parts = std::move(parts);
    b.bytes = rvk::weightBytes(format, b.rows, cols);
    return bufferSlot(namedBuffer(std::move(b)));
  }
  std::map<std::string, int64_t> fullRows;
  std::map<std::pair<const void *, float>, int> ropeTables;

  /// The format of a weight operand (legality admitted it).
  WeightFormat formatOf(Value w) {
    if (auto q = dyn_cast<QWeightType>(w.getType());
        q && rvk::q4Supports(quantInfoOf(q), q.getShape()[1]))
      return WeightFormat::Q4;
    // Floats, and quantized weights the Q4 layout does not hold
    // (dequantized at export).
    return o.f16 ? WeightFormat::F16 : WeightFormat::F32;
  }
  /// Rows of a weight [rows, cols] per binding (`pair`: rows counted twice,
  /// the swiglu's gate and up).
  int64_t rowsPerChunk(WeightFormat f, int64_t rows, int64_t cols, int pair) {
    const uint64_t perRow = std::max<uint64_t>(1, rvk::weightBytes(f, 1, cols));
    int64_t r = int64_t(o.maxBindingBytes / (perRow * uint64_t(pair)));
    while (r > 1 && rvk::weightBytes(f, r * pair, cols) > o.maxBindingBytes)
      --r;
    return std::max<int64_t>(1, std::min(r, rows));
  }
  std::string paramOf(Value w) {
    auto get = w.getDefiningOp<ParameterGetOp>();
    std::string name = get.getName().str();
    fullRows[name] = shapeOfValue(w)[0];
    return name;
  }
  llvm::ArrayRef<int64_t> shapeOfValue(Value w) {
    return ::etllm::shapeOf(w.getType());
  }

  LogicalResult inputs();
  LogicalResult outputs();
  LogicalResult emitGroup(const Group &g);
  LogicalResult emitView(Operation *op);
  LogicalResult emitMatmuls(const Group &g);
  LogicalResult emitRmsNorm(RmsNormOp op);
  LogicalResult emitSoftmax(SoftmaxOp op);
  LogicalResult emitElementwise(Operation *op);
  LogicalResult emitEmbedding(Operation *op);
  LogicalResult emitRope(const Group &g);
  LogicalResult emitSdpa(SdpaOp op);
};

LogicalResult Emitter::inputs() {
  Block &body = fn.getBody().front();
  for (BlockArgument a : body.getArguments()) {
    FailureOr<Shape> s = shapeOf(a, fn);
    if (failed(s))
      return failure();
    PlanIo io;
    io.sizes.assign(s->sizes.begin(), s->sizes.end());
    io.dyn = s->dyn;
    auto t = cast<RankedTensorType>(a.getType());
    KvCacheUpdateOp update;
    for (Operation *user : a.getUsers())
      if (auto u = dyn_cast<KvCacheUpdateOp>(user); u && u.getCache() == a)
        update = u;
    if (update) { // a cache held in device memory
      PlanBuffer b;
      b.kind = PlanBuffer::Cache;
      b.bytes = uint64_t(t.getNumElements()) * actBytes();
      b.name = llvm::formatv("cache{0}", a.getArgNumber()).str();
      plan.buffers.push_back(b);
      io.role = uint8_t(vfb::IoRole::CACHE);
      io.buffer = int(plan.buffers.size() - 1);
      io.slot = bufferSlot(io.buffer);
      views[a] = contiguousView(io.slot, *s);
      plan.inputs.push_back(io);
      continue;
    }
    if (t.getElementType().isF32()) {
      io.role = uint8_t(vfb::IoRole::ACTIVATION);
      io.deviceDtype = act();
      View v = newView(*s, act());
      plan.slots[size_t(v.slot)].input = true;
      io.slot = v.slot;
      views[a] = v;
      plan.inputs.push_back(io);
      continue;
    }
    if (!t.getElementType().isInteger(64) && !t.getElementType().isInteger(32))
      return fn.emitError("vulkan: argument ")
             << a.getArgNumber() << " has an unsupported type " << t;
    io.dtype =
        t.getElementType().isInteger(64) ? rt::DType::I64 : rt::DType::I32;
    io.deviceDtype = rt::DType::I32;
    // Positions (rope, cache rows, causal masks) or indices (embedding).
    int64_t posBound = INT64_MAX, idxBound = INT64_MAX;
    for (OpOperand &use : a.getUses()) {
      Operation *u = use.getOwner();
      if (auto r = dyn_cast<RopeOp>(u); r && r.getPositions() == a)
        posBound = std::min(posBound, o.seqBound);
      if (auto k = dyn_cast<KvCacheUpdateOp>(u); k && k.getPositions() == a)
        posBound = std::min<int64_t>(
            posBound,
            cast<RankedTensorType>(k.getCache().getType()).getDimSize(2));
      if (auto sd = dyn_cast<SdpaOp>(u); sd && sd.getPositions() == a)
        posBound = std::min(posBound, o.seqBound);
      if (isa<EmbeddingOp, QEmbeddingOp>(u))
        idxBound = std::min(idxBound, shapeOfValue(u->getOperand(0))[0]);
    }
    if (posBound != INT64_MAX && idxBound != INT64_MAX)
      return fn.emitError("vulkan: argument ")
             << a.getArgNumber() << " is both positions and indices";
    io.role = uint8_t(posBound != INT64_MAX ? vfb::IoRole::POSITIONS
                                            : vfb::IoRole::INDICES);
    io.indexBound = posBound != INT64_MAX   ? posBound
                    : idxBound != INT64_MAX ? idxBound
                                            : INT32_MAX;
    View v = newView(*s, rt::DType::I32);
    plan.slots[size_t(v.slot)].input = true;
    io.slot = v.slot;
    views[a] = v;
    plan.inputs.push_back(io);
  }
  return success();
}

LogicalResult Emitter::outputs() {
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  current = {ret};
  for (Value v : ret.getOperands()) {
    FailureOr<View> view = viewOf(v);
    FailureOr<Shape> s = shapeOf(v, ret);
    if (failed(view) || failed(s))
      return failure();
    PlanIo io;
    io.sizes.assign(s->sizes.begin(), s->sizes.end());
    io.dyn = s->dyn;
    const Slot &slot = plan.slots[size_t(view->slot)];
    if (plan.buffers[size_t(slot.buffer)].kind == PlanBuffer::Cache) {
      io.role = uint8_t(vfb::IoRole::CACHE);
      io.buffer = slot.buffer;
      io.slot = view->slot;
      plan.outputs.push_back(io);
      continue;
    }
    if (!cast<RankedTensorType>(v.getType()).getElementType().isF32())
      return ret.emitError("vulkan: only f32 results are supported");
    View out = *view;
    const uint64_t need =
        uint64_t(product(s->sizes)) * rt::elementSize(slot.dtype);
    if (slot.buffer != 0 || !isWholeContiguous(out) ||
        slot.bytes != (need + 3) / 4 * 4)
      out = copied(out);
    plan.slots[size_t(out.slot)].output = true;
    io.role = uint8_t(vfb::IoRole::ACTIVATION);
    io.deviceDtype = plan.slots[size_t(out.slot)].dtype;
    io.slot = out.slot;
    plan.outputs.push_back(io);
  }
  return success();
}

LogicalResult Emitter::emitView(Operation *op) {
  FailureOr<View> in = viewOf(op->getOperand(0));
  FailureOr<Shape> to = shapeOf(op->getResult(0), op);
  if (failed(in) || failed(to))
    return failure();
  std::optional<View> r;
  if (auto t = dyn_cast<TransposeOp>(op)) {
    const int rank = in->rank;
    int d0 = int(t.getDim0() < 0 ? t.getDim0() + rank : t.getDim0());
    int d1 = int(t.getDim1() < 0 ? t.getDim1() + rank : t.getDim1());
    r = transposeView(*in, d0, d1);
  } else if (auto s = dyn_cast<SliceOp>(op)) {
    r = sliceView(*in, int(s.getDim()), s.getStart(), s.getEnd(), s.getStep(),
                  o.seqBound);
  } else {
    r = reshapeView(*in, *to);
    if (!r) // not expressible on this layout: on a contiguous copy
      r = reshapeView(copied(*in), *to);
  }
  if (!r)
    return op->emitError("vulkan: this view cannot be planned");
  views[op->getResult(0)] = *r;
  return success();
}

LogicalResult Emitter::emitMatmuls(const Group &g) {
  Operation *first = g.ops.front();
  Value x = first->getOperand(0);
  FailureOr<View> xv = viewOf(x);
  if (failed(xv))
    return failure();
  auto xr = asRows(*xv);
  if (failed(xr))
    return failure();
  auto [xView, xRows] = *xr;
  // The members (weights in order) and the value the dispatch produces.
  llvm::SmallVector<Operation *, 3> members;
  Value result, residual, bias;
  if (g.kind == Group::Swiglu) {
    members = {g.ops[0], g.ops[1]};
    result = g.ops[3]->getResult(0);
  } else if (g.kind == Group::MatmulAdd) {
    members = {g.ops[0]};
    result = g.ops[1]->getResult(0);
    residual = g.ops[1]->getOperand(0) == first->getResult(0)
                   ? g.ops[1]->getOperand(1)
                   : g.ops[1]->getOperand(0);
  } else {
    members.assign(g.ops.begin(), g.ops.end());
    result = first->getResult(0);
  }
  if (g.kind != Group::Concat && first->getNumOperands() > 2)
    bias = first->getOperand(2);
  const WeightFormat fmt = formatOf(first->getOperand(1));
  const int64_t K = shapeOfValue(first->getOperand(1))[1];
  std::vector<int64_t> ns;
  int64_t N = 0;
  for (Operation *m : members)
    ns.push_back(shapeOfValue(m->getOperand(1))[0]);
  N = g.kind == Group::Swiglu
          ? ns[0]
          : std::accumulate(ns.begin(), ns.end(), int64_t(0));
  // The output: [lead..., N] (f32 when it only leaves the delegate).
  FailureOr<Shape> rs = shapeOf(result, first);
  if (failed(rs))
    return failure();
  Shape outShape = *rs;
  outShape.sizes.back() = N;
  const bool onlyReturned =
      result.hasOneUse() && isa<func::ReturnOp>(*result.getUsers().begin());
  const bool outF32 = o.f16 && onlyReturned;
  View out = newView(outShape, outF32 ? rt::DType::F32 : act());
  Rows yRows = *rowsOf(out);
  Rows rRows;
  int rSlot = xView.slot;
  if (residual) {
    FailureOr<View> rv = viewOf(residual);
    if (failed(rv))
      return failure();
    auto rr = asRows(*rv);
    if (failed(rr))
      return failure();
    rRows = rr->second;
    rSlot = rr->first.slot;
  }
  int bSlot = xView.slot;
  if (bias) {
    FailureOr<int> b = floatsBuffer(bias);
    if (failed(b))
      return failure();
    bSlot = *b;
  }
  uint32_t epilogue = (residual ? ETLLM_VK_EPILOGUE_RESIDUAL : 0) |
                      (bias ? ETLLM_VK_EPILOGUE_BIAS : 0) |
                      (g.kind == Group::Swiglu ? ETLLM_VK_EPILOGUE_SWIGLU : 0);
  const int pair = g.kind == Group::Swiglu ? 2 : 1;
  const int64_t perChunk = rowsPerChunk(fmt, N, K, pair);
  for (int64_t c0 = 0; c0 < N; c0 += perChunk) {
    const int64_t c1 = std::min(N, c0 + perChunk);
    std::vector<WeightPart> parts;
    if (g.kind == Group::Swiglu) {
      parts.push_back({paramOf(members[0]->getOperand(1)), c0, c1});
      parts.push_back({paramOf(members[1]->getOperand(1)), c0, c1});
    } else {
      int64_t at = 0;
      for (auto [m, n] : llvm::zip(members, ns)) {
        const int64_t b = std::max(c0, at), e = std::min(c1, at + n);
        if (b < e)
          parts.push_back({paramOf(m->getOperand(1)), b - at, e - at});
        at += n;
      }
    }
    const int w = weightBuffer(fmt, parts, K);
    rvk::MatmulParams p{};
    p.m0 = uint32_t(xRows.m0);
    p.mS = uint32_t(xRows.mS);
    p.n = uint32_t(c1 - c0);
    p.k = uint32_t(K);
    p.xOff = int32_t(xRows.off);
    p.xOffS = int32_t(xRows.offS);
    p.xStride = uint32_t(xRows.stride);
    p.epilogue = epilogue;
    p.yOff = int32_t(yRows.off + c0);
    p.yOffS = int32_t(yRows.offS);
    p.yStride = uint32_t(yRows.stride);
    p.wScaleOff = uint32_t(rvk::q4ScaleWord((c1 - c0) * pair, K));
    p.rOff = int32_t(rRows.off + c0);
    p.rOffS = int32_t(rRows.offS);
    p.rStride = uint32_t(rRows.stride);
    p.bOff = uint32_t(c0);
    dispatch(KernelId::Matmul, Variant::matmul(o.f16, fmt, outF32),
             {xView.slot, w, out.slot, rSlot, bSlot}, words(p), opLabel(g.ops));
  }
  if (g.kind == Group::Concat) {
    int64_t at = 0;
    for (auto [m, n] : llvm::zip(members, ns)) {
      std::optional<View> col =
          sliceView(out, out.rank - 1, at, at + n, 1, o.seqBound);
      views[m->getResult(0)] = *col;
      at += n;
    }
  } else {
    views[result] = out;
  }
  return success();
}

LogicalResult Emitter::emitRmsNorm(RmsNormOp op) {
  FailureOr<View> xv = viewOf(op.getInput());
  FailureOr<Shape> s = shapeOf(op.getResult(), op);
  if (failed(xv) || failed(s))
    return failure();
  auto xr = asRows(*xv);
  if (failed(xr))
    return failure();
  auto [xView, xRows] = *xr;
  View out = newView(*s, act());
  Rows yRows = *rowsOf(out);
  int wSlot = xView.slot;
  if (op.getWeight()) {
    FailureOr<int> w = floatsBuffer(op.getWeight());
    if (failed(w))
      return failure();
    wSlot = *w;
  }
  rvk::RmsNormParams p{};
  p.m0 = uint32_t(xRows.m0);
  p.mS = uint32_t(xRows.mS);
  p.d = uint32_t(xRows.cols);
  p.hasWeight = op.getWeight() ? 1 : 0;
  p.xOff = int32_t(xRows.off);
  p.xOffS = int32_t(xRows.offS);
  p.xStride = uint32_t(xRows.stride);
  p.eps = float(op.getEps().convertToDouble());
  p.yOff = int32_t(yRows.off);
  p.yOffS = int32_t(yRows.offS);
  p.yStride = uint32_t(yRows.stride);
  p.weightOffset = float(op.getWeightOffset().convertToDouble());
  dispatch(KernelId::RmsNorm, o.f16 ? Variant::kActF16 : 0u,
           {xView.slot, wSlot, out.slot}, words(p), opLabel({op}));
  views[op.getResult()] = out;
  return success();
}

LogicalResult Emitter::emitSoftmax(SoftmaxOp op) {
  FailureOr<View> xv = viewOf(op.getInput());
  FailureOr<Shape> s = shapeOf(op.getResult(), op);
  if (failed(xv) || failed(s))
    return failure();
  auto xr = asRows(*xv);
  if (failed(xr))
    return failure();
  auto [xView, xRows] = *xr;
  View out = newView(*s, act());
  Rows yRows = *rowsOf(out);
  rvk::SoftmaxParams p{};
  p.m0 = uint32_t(xRows.m0);
  p.mS = uint32_t(xRows.mS);
  p.d = uint32_t(xRows.cols);
  p.xOff = int32_t(xRows.off);
  p.xOffS = int32_t(xRows.offS);
  p.xStride = uint32_t(xRows.stride);
  p.yOff = int32_t(yRows.off);
  p.yOffS = int32_t(yRows.offS);
  p.yStride = uint32_t(yRows.stride);
  dispatch(KernelId::Softmax, o.f16 ? Variant::kActF16 : 0u,
           {xView.slot, out.slot}, words(p), opLabel({op}));
  views[op.getResult()] = out;
  return success();
}

LogicalResult Emitter::emitElementwise(Operation *op) {
  FailureOr<View> av = viewOf(op->getOperand(0));
  FailureOr<Shape> s = shapeOf(op->getResult(0), op);
  if (failed(av) || failed(s))
    return failure();
  auto af = asFlat(*av);
  if (failed(af))
    return failure();
  auto [aView, aFlat] = *af;
  rvk::ElementwiseParams p{};
  p.n0 = uint32_t(aFlat.n0);
  p.nS = uint32_t(aFlat.nS);
  p.aOff = int32_t(aFlat.off);
  p.aOffS = int32_t(aFlat.offS);
  int bSlot = aView.slot;
  p.op = isa<AddOp>(op)   ? ETLLM_VK_ELEMENTWISE_ADD
         : isa<SubOp>(op) ? ETLLM_VK_ELEMENTWISE_SUB
         : isa<MulOp>(op) ? ETLLM_VK_ELEMENTWISE_MUL
                          : ETLLM_VK_ELEMENTWISE_SILU;
  if (op->getNumOperands() > 1) {
    Value b = op->getOperand(1);
    if (auto c = b.getDefiningOp<ConstantOp>();
        c && cast<RankedTensorType>(b.getType()).getRank() == 0) {
      auto dense = cast<DenseElementsAttr>(c.getValue());
      p.bScalar = 1;
      p.scalar = (*dense.getValues<APFloat>().begin()).convertToFloat();
    } else {
      FailureOr<View> bv = viewOf(b);
      if (failed(bv))
        return failure();
      auto bf = asFlat(*bv);
      if (failed(bf))
        return failure();
      bSlot = bf->first.slot;
      p.bOff = int32_t(bf->second.off);
      p.bOffS = int32_t(bf->second.offS);
    }
  }
  View out = newView(*s, act());
  Flat yFlat = *flatOf(out);
  p.yOff = int32_t(yFlat.off);
  p.yOffS = int32_t(yFlat.offS);
  dispatch(KernelId::Elementwise, o.f16 ? Variant::kActF16 : 0u,
           {aView.slot, bSlot, out.slot}, words(p), opLabel({op}));
  views[op->getResult(0)] = out;
  return success();
}

LogicalResult Emitter::emitEmbedding(Operation *op) {
  Value table = op->getOperand(0), indices = op->getOperand(1);
  auto ifl = indexFlat(indices, op);
  FailureOr<Shape> s = shapeOf(op->getResult(0), op);
  if (failed(ifl) || failed(s))
    return failure();
  auto [iView, iFlat] = *ifl;
  View out = newView(*s, act());
  Rows yRows = *rowsOf(out);
  const WeightFormat fmt = formatOf(table);
  const int64_t V = shapeOfValue(table)[0], D = shapeOfValue(table)[1];
  const int64_t perChunk = rowsPerChunk(fmt, V, D, 1);
  const std::string param = paramOf(table);
  for (int64_t r0 = 0; r0 < V; r0 += perChunk) {
    const int64_t r1 = std::min(V, r0 + perChunk);
    const int w = weightBuffer(fmt, {{param, r0, r1}}, D);
    rvk::EmbeddingParams p{};
    p.m0 = uint32_t(iFlat.n0);
    p.mS = uint32_t(iFlat.nS);
    p.d = uint32_t(D);
    p.rowBegin = uint32_t(r0);
    p.rows = uint32_t(r1 - r0);
    p.wScaleOff = uint32_t(rvk::q4ScaleWord(r1 - r0, D));
    p.iOff = int32_t(iFlat.off);
    p.iOffS = int32_t(iFlat.offS);
    p.yOff = int32_t(yRows.off);
    p.yOffS = int32_t(yRows.offS);
    p.yStride = uint32_t(yRows.stride);
    dispatch(KernelId::Embedding, Variant::embedding(o.f16, fmt),
             {iView.slot, w, out.slot}, words(p), opLabel({op}));
  }
  views[op->getResult(0)] = out;
  return success();
}

LogicalResult Emitter::emitRope(const Group &g) {
  Operation *first = g.ops.front();
  Value positions = first->getOperand(1);
  auto pf = indexFlat(positions, first);
  if (failed(pf))
    return failure();
  auto [pView, pFlat] = *pf;
  if (pFlat.off || pFlat.offS)
    return first->emitError("vulkan: the positions must be a whole input");
  rvk::RopeParams p{};
  p.tableRows = 1;
  int tableSlot = pView.slot; // (unread when no job rotates)
  std::vector<int> slots = {pView.slot, tableSlot};
  rvk::RopeJob *jobs[3] = {&p.job0, &p.job1, &p.job2};
  uint32_t n = 0;
  llvm::DenseSet<Operation *> done;
  for (Operation *op : g.ops) {
    if (done.contains(op))
      continue;
    Value src;
    bool rotate = false;
    KvCacheUpdateOp into;
    Value result;
    if (auto r = dyn_cast<RopeOp>(op)) {
      src = r.getInput();
      rotate = true;
      result = r.getResult();
      if (r.getResult().hasOneUse())
        if (auto u =
                dyn_cast<KvCacheUpdateOp>(*r.getResult().getUsers().begin());
            u && llvm::is_contained(g.ops, u.getOperation())) {
          into = u;
          done.insert(u);
        }
      // The table (the group's ropes share it; every group with the same
      // frequencies and scaling reads one).
      if (p.r == 0) {
        auto freqT = cast<RankedTensorType>(r.getInvFreq().getType());
        auto get = r.getInvFreq().getDefiningOp<ParameterGetOp>();
        DenseElementsAttr data =
            get ? DenseElementsAttr()
                : cast<DenseElementsAttr>(
                      r.getInvFreq().getDefiningOp<ConstantOp>().getValue());
        const void *key = get ? get.getNameAttr().getAsOpaquePointer()
                              : data.getAsOpaquePointer();
        const float scaling = float(r.getAttentionScaling().convertToDouble());
        auto known = ropeTables.find({key, scaling});
        int buffer;
        if (known != ropeTables.end()) {
          buffer = known->second;
        } else {
          PlanBuffer b;
          b.kind = PlanBuffer::RopeTable;
          b.tableRows = o.seqBound;
          b.scaling = scaling;
          b.bytes = uint64_t(o.seqBound) * uint64_t(freqT.getDimSize(0)) * 8;
          if (get)
            b.floatsParam = get.getName().str();
          else
            b.floatsData = data;
          b.name = llvm::formatv("rope_table{0}", ropeTables.size()).str();
          plan.buffers.push_back(b);
          buffer = int(plan.buffers.size() - 1);
          ropeTables[{key, scaling}] = buffer;
        }
        tableSlot = bufferSlot(buffer);
        slots[1] = tableSlot;
        p.r = uint32_t(freqT.getDimSize(0));
        p.convention = uint32_t(r.getConvention());
        p.tableRows = uint32_t(o.seqBound);
      }
    } else {
      into = cast<KvCacheUpdateOp>(op);
      src = into.getValue();
    }
    FailureOr<View> sv = viewOf(src);
    if (failed(sv))
      return failure();
    View s = asHeads(*sv);
    rvk::RopeJob &j = *jobs[n++];
    j.heads = uint32_t(s.sizes[1]);
    j.d = uint32_t(s.sizes[3]);
    j.rotate = rotate;
    j.srcOff = int32_t(s.off);
    j.srcOffS = int32_t(s.offS);
    j.srcStrideH = uint32_t(s.strides[1]);
    j.srcStrideS = uint32_t(s.strides[2]);
    View dst;
    if (into) {
      FailureOr<View> cv = viewOf(into.getCache());
      if (failed(cv))
        return failure();
      if (plan.buffers[size_t(plan.slots[size_t(cv->slot)].buffer)].kind !=
          PlanBuffer::Cache)
        return into.emitError("vulkan: the cache is not in device memory");
      dst = *cv;
      j.toCache = 1;
      j.dstRows = uint32_t(dst.sizes[2]);
      views[into.getResult()] = dst;
    } else {
      FailureOr<Shape> rs = shapeOf(result, op);
      if (failed(rs))
        return failure();
      dst = newView(*rs, act());
      views[result] = dst;
    }
    j.dstOff = uint32_t(dst.off);
    j.dstStrideH = uint32_t(dst.strides[1]);
    j.dstStrideS = uint32_t(dst.strides[2]);
    slots.push_back(s.slot);
    slots.push_back(dst.slot);
  }
  p.jobs = n;
  dispatch(KernelId::Rope, Variant::rope(o.f16, n), slots, words(p),
           opLabel(g.ops));
  return success();
}

LogicalResult Emitter::emitSdpa(SdpaOp op) {
  FailureOr<View> qv = viewOf(op.getQuery()), kv = viewOf(op.getKey()),
                  vv = viewOf(op.getValue());
  FailureOr<Shape> s = shapeOf(op.getResult(), op);
  if (failed(qv) || failed(kv) || failed(vv) || failed(s))
    return failure();
  View q = asHeads(*qv), k = asHeads(*kv), v = asHeads(*vv);
  int posSlot = q.slot;
  if (op.getPositions()) {
    auto pf = indexFlat(op.getPositions(), op);
    if (failed(pf))
      return failure();
    auto [pView, pFlat] = *pf;
    if (pFlat.off || pFlat.offS)
      return op.emitError("vulkan: the positions must be a whole input");
    posSlot = pView.slot;
  }
  // Token-major ([1, S, H, Dv]) when a transpose back follows.
  llvm::SmallVector<int, 4> order;
  if (op.getResult().hasOneUse())
    if (auto t = dyn_cast<TransposeOp>(*op.getResult().getUsers().begin());
        t && ((t.getDim0() == 1 && t.getDim1() == 2) ||
              (t.getDim0() == 2 && t.getDim1() == 1)))
      order = {0, 2, 1, 3};
  View out = newView(*s, act(), order);
  const int64_t H = q.sizes[1], T = k.sizes[2], Dv = v.sizes[3];
  const uint32_t chunk =
      uint32_t(ETLLM_VK_SDPA_THREADS * ((T + 64 * 32 - 1) / (64 * 32)));
  const uint32_t splits = rvk::sdpaSplits(uint64_t(T), chunk);
  const int part =
      newSlot(uint64_t(H) * splits * uint64_t(Dv + 2) * 4, rt::DType::F32);
  rvk::SdpaParams p{};
  p.heads = uint32_t(H);
  p.kvHeads = uint32_t(k.sizes[1]);
  p.d = uint32_t(q.sizes[3]);
  p.dv = uint32_t(Dv);
  p.qOff = int32_t(q.off);
  p.qOffS = int32_t(q.offS);
  p.qStrideH = uint32_t(q.strides[1]);
  p.qStrideS = uint32_t(q.strides[2]);
  p.oOff = int32_t(out.off);
  p.oOffS = int32_t(out.offS);
  p.oStrideH = uint32_t(out.strides[1]);
  p.oStrideS = uint32_t(out.strides[2]);
  p.kOff = uint32_t(k.off);
  p.kStrideH = uint32_t(k.strides[1]);
  p.kStrideT = uint32_t(k.strides[2]);
  p.vOff = uint32_t(v.off);
  p.vStrideH = uint32_t(v.strides[1]);
  p.vStrideT = uint32_t(v.strides[2]);
  p.t = uint32_t(T);
  p.causal = op.getCausal() ? 1 : 0;
  p.hasPositions = op.getPositions() ? 1 : 0;
  p.window = uint32_t(op.getSlidingWindow());
  p.scale = float(op.getScale().convertToDouble());
  p.softcap = float(op.getSoftcap().convertToDouble());
  p.splits = splits;
  p.chunk = chunk;
  p.maxSplitRows = uint32_t(H);
  const uint32_t variant = o.f16 ? Variant::kActF16 : 0u;
  dispatch(KernelId::Sdpa, variant,
           {posSlot, q.slot, k.slot, v.slot, out.slot, part}, words(p),
           opLabel({op}));
  rvk::SdpaCombineParams c{};
  c.heads = uint32_t(H);
  c.dv = uint32_t(Dv);
  c.splits = splits;
  c.oOff = p.oOff;
  c.oOffS = p.oOffS;
  c.oStrideH = p.oStrideH;
  c.oStrideS = p.oStrideS;
  dispatch(KernelId::SdpaCombine, variant, {part, out.slot}, words(c),
           opLabel({op}) + " (split-KV combine)");
  views[op.getResult()] = out;
  return success();
}

LogicalResult Emitter::emitGroup(const Group &g) {
  current.assign(g.ops.begin(), g.ops.end());
  if (g.kind == Group::Rope)
    return emitRope(g);
  if (g.kind != Group::Single || isa<LinearOp, QLinearOp>(g.ops.front()))
    return emitMatmuls(g);
  Operation *op = g.ops.front();
  if (isa<ReshapeOp, TransposeOp, SliceOp, UnsqueezeOp, SqueezeOp>(op))
    return emitView(op);
  if (auto n = dyn_cast<RmsNormOp>(op))
    return emitRmsNorm(n);
  if (auto s = dyn_cast<SoftmaxOp>(op))
    return emitSoftmax(s);
  if (isa<AddOp, SubOp, MulOp, SiluOp>(op))
    return emitElementwise(op);
  if (isa<EmbeddingOp, QEmbeddingOp>(op))
    return emitEmbedding(op);
  if (auto a = dyn_cast<SdpaOp>(op))
    return emitSdpa(a);
  if (isa<RopeOp, KvCacheUpdateOp>(op))
    return emitRope(Group{Group::Rope, {op}});
  return op->emitError("vulkan cannot run this operation");
}

FailureOr<Plan> Emitter::run() {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("vulkan: a subgraph has one block");
  if (failed(inputs()))
    return failure();
  std::vector<Group> groups = groupOps(fn);
  std::vector<int> order = scheduleGroups(fn, groups);
  if (order.size() != groups.size())
    return fn.emitError("vulkan: the fused groups depend on each other in a "
                        "cycle");
  for (int g : order)
    if (failed(emitGroup(groups[size_t(g)])))
      return failure();
  if (failed(outputs()))
    return failure();
  int layers = 0;
  for (const PlanDispatch &d : plan.dispatches)
    layers = std::max(layers, d.layer + 1);
  plan.numLayers = layers;
  if (failed(placeArenaAndBarriers(plan, fn)))
    return failure();
  return std::move(plan);
}

} // namespace

FailureOr<Plan> planFunction(func::FuncOp fn, const PlanOptions &options) {
  return Emitter(fn, options).run();
}

} // namespace etllm::vk
