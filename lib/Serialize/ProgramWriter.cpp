//===- ProgramWriter.cpp - IR to program file (.pte) ----------------------===//
//
// 1. Lower `forward` to a value table and instruction list (ops.def names).
// 2. Bound every dynamic dimension (max_seq_len) to size planned memory.
// 3. Decide storage: constants, mutable buffers, aliases (views and in-place
//    cache updates share their operand's storage), planned activations.
// 4. Plan the arena: lifetimes over the instruction order, greedy by size.
// 5. Write header + flatbuffer + segments, weights streamed one at a time.
//
//===----------------------------------------------------------------------===//
#include "etllm/Serialize/ProgramWriter.h"

#include "ChatTemplateInfo.h"
#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Formats/Checkpoint.h"
#include "etllm/Serialize/KernelCalls.h"
#include "etllm/Serialize/Streaming.h"
#include "etllm/Serialize/WeightStore.h"
#include "etllm/Target/Backend.h"
#include "etllm/runtime/program.h"
#include "etllm/runtime/tensor.h"
#include "etllm/runtime/tokenizer.h"
#include "etllm/schema/program_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace mlir::etllm;
namespace fbs = ::etllm::schema;
namespace rt = ::etllm::rt;

namespace etllm {
namespace {

constexpr uint64_t kAlign = 64;
/// Constant bytes produced ahead of the writer at most (besides the one it
/// waits for).
constexpr uint64_t kMaxBufferedConstantBytes = uint64_t(256) << 20;

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

enum class Storage { Planned, Constant, Buffer, Alias };

struct ValueRec {
  rt::DType dtype = rt::DType::F32;
  SmallVector<int64_t> sizes; // upper bounds
  SmallVector<bool> dynamic;
  Storage storage = Storage::Planned;
  uint64_t offset = 0, capacity = 0;
  uint32_t constant = 0, buffer = 0, aliasOf = 0;
  rt::QuantInfo quant;
  std::string name;
  int64_t def = -1, lastUse = -1;
  bool isOutput = false;
};

struct InstrRec {
  std::string op;
  SmallVector<uint32_t> inputs, outputs;
  SmallVector<int64_t> ints;
  SmallVector<double> floats;
  int delegate = -1;
  Operation *origin = nullptr;
};

struct ConstRec {
  std::string name;
  uint64_t size = 0;
  uint64_t offset = 0; // within the constant segment
  Operation *op = nullptr;
  std::vector<uint8_t> inlineData; // small constants, produced eagerly
  bool fromParameter = false;
  /// Backend-added constants (packed weights), produced when written.
  std::function<FailureOr<std::vector<uint8_t>>()> produce;
};

struct DelegateRec {
  std::string backend;
  std::vector<uint8_t> blob;
  std::vector<std::pair<std::string, std::string>> specs;
};

/// Builds the program: value table, instructions, constants, plan.
class ProgramBuilder {
public:
  ProgramBuilder(ModuleOp module) : module(module), weights(module) {}

  LogicalResult build(bool materializeDelegates);
  LogicalResult write(const SerializeOptions &options, llvm::raw_ostream &os);
  MemoryReport report() const;

  ModuleOp module;
  WeightStore weights;
  func::FuncOp forward;
  std::vector<ValueRec> values;
  std::vector<InstrRec> instrs;
  std::vector<ConstRec> constants;
  std::vector<DelegateRec> delegates;
  std::vector<BufferOp> buffers;
  std::vector<uint32_t> inputs, outputs;
  uint64_t arenaSize = 0;
  int64_t seqBound = 0;
  llvm::DenseMap<Value, uint32_t> index;
  llvm::StringMap<uint32_t> paramConstant, bufferIndex;

private:
  FailureOr<uint32_t> addValue(Value v, Operation *op);
  FailureOr<uint32_t> lookup(Value v, Operation *user);
  LogicalResult lowerOp(Operation *op);
  LogicalResult planBufferReads();
  void plan();
  FailureOr<std::vector<uint8_t>> constantBytes(ConstRec &c);
};

FailureOr<uint32_t> ProgramBuilder::addValue(Value v, Operation *op) {
  ValueRec r;
  FailureOr<rt::DType> dt = runtimeDType(op, v.getType());
  if (failed(dt))
    return failure();
  r.dtype = *dt;
  ArrayRef<int64_t> shape = shapeOf(v.getType());
  if (shape.size() > size_t(rt::kMaxRank))
    return op->emitError("rank ")
           << shape.size() << " exceeds the runtime's " << rt::kMaxRank;
  // Upper bounds for dynamic dimensions.
  for (auto [i, d] : llvm::enumerate(shape)) {
    bool dyn = ShapedType::isDynamic(d);
    int64_t bound = d;
    if (dyn) {
      bound = seqBound;
      if (auto cat = dyn_cast_or_null<CatOp>(op)) {
        int64_t dim =
            cat.getDim() < 0 ? cat.getDim() + shape.size() : cat.getDim();
        if (int64_t(i) == dim) {
          bound = 0;
          for (Value in : cat.getInputs())
            bound += values[index.lookup(in)].sizes[i];
        }
      } else if (auto reshape = dyn_cast_or_null<ReshapeOp>(op)) {
        const ValueRec &in = values[index.lookup(reshape.getInput())];
        int64_t numel = 1, known = 1;
        for (int64_t s : in.sizes)
          numel *= s;
        for (int64_t s : reshape.getShape())
          if (s != -1)
            known *= s;
        bound = known ? numel / known : 0;
      }
    }
    r.sizes.push_back(bound);
    r.dynamic.push_back(dyn);
  }
  r.quant = quantInfoOf(v.getType());
  auto bytes =
      rt::storageBytes(r.dtype, r.sizes.data(), r.sizes.size(), r.quant);
  if (!bytes.ok())
    return op->emitError("value cannot be stored: ") << bytes.message();
  r.capacity = *bytes;
  r.def = int64_t(instrs.size());
  StringRef path = getModulePath(op);
  r.name = path.str();
  uint32_t id = values.size();
  values.push_back(std::move(r));
  if (v)
    index[v] = id;
  return id;
}

FailureOr<uint32_t> ProgramBuilder::lookup(Value v, Operation *user) {
  auto it = index.find(v);
  if (it == index.end())
    return user->emitError("operand is not defined before its use in ")
           << "`forward`";
  return it->second;
}

/// The root value whose storage `id` uses.
static uint32_t rootOf(const std::vector<ValueRec> &values, uint32_t id) {
  while (values[id].storage == Storage::Alias)
    id = values[id].aliasOf;
  return id;
}

FailureOr<std::vector<uint8_t>> ProgramBuilder::constantBytes(ConstRec &c) {
  if (c.produce)
    return c.produce();
  if (!c.fromParameter)
    return c.inlineData;
  return weights.materialize(cast<ParameterOp>(c.op));
}

/// The bytes of a small dense constant in the runtime dtype.
static FailureOr<std::vector<uint8_t>>
denseBytes(Operation *op, ElementsAttr attr, rt::DType dt) {
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return op->emitError("only dense constants can be serialized");
  int64_t n = dense.getNumElements();
  std::vector<uint8_t> out(n * std::max<size_t>(rt::elementSize(dt), 1));
  auto put = [&](int64_t i, const void *p, size_t s) {
    std::memcpy(out.data() + i * s, p, s);
  };
  if (isa<FloatType>(dense.getElementType())) {
    int64_t i = 0;
    for (APFloat v : dense.getValues<APFloat>()) {
      if (dt == rt::DType::F32) {
        float f = v.convertToFloat();
        put(i, &f, 4);
      } else {
        uint16_t h = uint16_t(v.bitcastToAPInt().getZExtValue());
        put(i, &h, 2);
      }
      ++i;
    }
    return out;
  }
  int64_t i = 0;
  for (APInt v : dense.getValues<APInt>()) {
    int64_t s =
        v.getBitWidth() == 1 ? int64_t(v.getZExtValue()) : v.getSExtValue();
    switch (dt) {
    case rt::DType::I64:
      put(i, &s, 8);
      break;
    case rt::DType::I32: {
      int32_t x = int32_t(s);
      put(i, &x, 4);
      break;
    }
    case rt::DType::I8:
    case rt::DType::Bool: {
      int8_t x = int8_t(s);
      put(i, &x, 1);
      break;
    }
    default:
      return op->emitError("unsupported constant element type");
    }
    ++i;
  }
  return out;
}

LogicalResult ProgramBuilder::lowerOp(Operation *op) {
  InstrRec in;
  in.origin = op;
  auto operand = [&](Value v) -> LogicalResult {
    FailureOr<uint32_t> id = lookup(v, op);
    if (failed(id))
      return failure();
    in.inputs.push_back(*id);
    return success();
  };
  auto result = [&](Value v) -> LogicalResult {
    FailureOr<uint32_t> id = addValue(v, op);
    if (failed(id))
      return failure();
    in.outputs.push_back(*id);
    return success();
  };
  // A kernel call: name and attributes from describeKernelCall.
  auto simple = [&]() -> LogicalResult {
    FailureOr<KernelCall> call = describeKernelCall(op);
    if (failed(call))
      return op->emitError("cannot serialize this operation");
    in.op = call->op;
    in.ints = call->ints;
    in.floats = call->floats;
    for (Value v : op->getOperands())
      if (failed(operand(v)))
        return failure();
    for (Value v : op->getResults())
      if (failed(result(v)))
        return failure();
    instrs.push_back(std::move(in));
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // Values without instructions.
      .Case([&](ConstantOp c) -> LogicalResult {
        FailureOr<uint32_t> id = addValue(c.getResult(), op);
        if (failed(id))
          return failure();
        ConstRec rec;
        rec.name = "constant." + std::to_string(constants.size());
        rec.op = op;
        FailureOr<std::vector<uint8_t>> bytes =
            denseBytes(op, c.getValue(), values[*id].dtype);
        if (failed(bytes))
          return failure();
        rec.inlineData = std::move(*bytes);
        rec.size = rec.inlineData.size();
        values[*id].storage = Storage::Constant;
        values[*id].constant = constants.size();
        constants.push_back(std::move(rec));
        return success();
      })
      .Case([&](ParameterGetOp g) -> LogicalResult {
        auto it = paramConstant.find(g.getName());
        if (it != paramConstant.end()) {
          index[g.getResult()] = it->second;
          return success();
        }
        auto decl = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
            op, g.getNameAttr());
        FailureOr<uint32_t> id = addValue(g.getResult(), op);
        if (failed(id))
          return failure();
        ConstRec rec;
        rec.name = g.getName().str();
        rec.op = decl;
        rec.fromParameter = true;
        FailureOr<uint64_t> size = weights.byteSize(decl);
        if (failed(size))
          return failure();
        rec.size = *size;
        values[*id].storage = Storage::Constant;
        values[*id].constant = constants.size();
        values[*id].name = rec.name;
        constants.push_back(std::move(rec));
        paramConstant[g.getName()] = *id;
        return success();
      })
      .Case([&](BufferReadOp r) -> LogicalResult {
        FailureOr<uint32_t> id = addValue(r.getResult(), op);
        if (failed(id))
          return failure();
        values[*id].storage = Storage::Buffer;
        values[*id].buffer = bufferIndex.lookup(r.getName());
        values[*id].name = r.getName().str();
        return success();
      })
      .Case([&](BufferWriteOp w) -> LogicalResult {
        FailureOr<uint32_t> src = lookup(w.getValue(), op);
        if (failed(src))
          return failure();
        uint32_t buf = bufferIndex.lookup(w.getName());
        uint32_t root = rootOf(values, *src);
        if (values[root].storage == Storage::Buffer &&
            values[root].buffer == buf)
          return success(); // already in the buffer (in-place update)
        // The write-back target: a value stored in the buffer.
        ValueRec target = values[*src];
        target.storage = Storage::Buffer;
        target.buffer = buf;
        target.def = instrs.size();
        target.lastUse = -1;
        target.isOutput = false;
        target.name = w.getName().str();
        uint32_t dst = values.size();
        values.push_back(std::move(target));
        in.op = "copy";
        in.inputs.push_back(*src);
        in.outputs.push_back(dst);
        instrs.push_back(std::move(in));
        return success();
      })
      .Case([&](KvCacheUpdateOp u) -> LogicalResult {
        if (failed(simple()))
          return failure();
        // The result is the cache operand's storage, updated in place.
        ValueRec &r = values[instrs.back().outputs[0]];
        r.storage = Storage::Alias;
        r.aliasOf = instrs.back().inputs[0];
        return success();
      })
      .Case([&](DelegateCallOp call) -> LogicalResult {
        const BackendCompiler *backend = findBackendCompiler(call.getBackend());
        if (!backend)
          return call.emitError("no backend '")
                 << call.getBackend() << "' is registered";
        auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            op, call.getCalleeAttr());
        DelegateRec rec;
        rec.backend = call.getBackend().str();
        struct Context : DelegateContext {
          ProgramBuilder &pb;
          Operation *at;
          explicit Context(ProgramBuilder &pb, Operation *at)
              : pb(pb), at(at) {}
          WeightStore &weights() override { return pb.weights; }
          int64_t dynamicDimBound() const override { return pb.seqBound; }
          uint32_t addConstant(const std::string &name, uint64_t size,
                               std::function<FailureOr<std::vector<uint8_t>>()>
                                   produce) override {
            ConstRec c;
            c.name = name;
            c.size = size;
            c.op = at;
            c.produce = std::move(produce);
            pb.constants.push_back(std::move(c));
            return pb.constants.size() - 1;
          }
        } context(*this, op);
        if (failed(backend->serialize(fn, context, rec.blob, rec.specs)))
          return failure();
        in.delegate = delegates.size();
        delegates.push_back(std::move(rec));
        for (Value v : call.getArgs())
          if (failed(operand(v)))
            return failure();
        for (Value v : call.getResults())
          if (failed(result(v)))
            return failure();
        instrs.push_back(std::move(in));
        return success();
      })
      .Default([&](Operation *o) -> LogicalResult { return simple(); });
}

/// A buffer read aliases the buffer's storage unless the buffer is written
/// (by a write-back copy) while a value aliasing the read is still used:
/// then the read becomes a planned copy.
LogicalResult ProgramBuilder::planBufferReads() {
  for (uint32_t id = 0; id < values.size(); ++id) {
    ValueRec &r = values[id];
    if (r.storage != Storage::Buffer || r.def < 0)
      continue;
    bool isRead = true;
    for (const InstrRec &in : instrs)
      if (!in.outputs.empty() && in.outputs[0] == id)
        isRead = false; // the target of a write-back
    if (!isRead)
      continue;
    int64_t lastUse = -1;
    for (uint32_t v = 0; v < values.size(); ++v)
      if (rootOf(values, v) == id)
        lastUse = std::max(lastUse, values[v].lastUse);
    bool clobbered = false;
    for (size_t k = size_t(std::max<int64_t>(r.def, 0));
         k < instrs.size() && int64_t(k) < lastUse; ++k)
      if (instrs[k].op == "copy" &&
          values[instrs[k].outputs[0]].storage == Storage::Buffer &&
          values[instrs[k].outputs[0]].buffer == r.buffer)
        clobbered = true;
    if (clobbered)
      return instrs.empty()
                 ? failure()
                 : instrs.front().origin->emitError("buffer '")
                       << r.name
                       << "' is written back while an earlier read of it is "
                          "still used; the serializer cannot alias the read";
  }
  return success();
}

void ProgramBuilder::plan() {
  // Views alias their input when the root storage is writable memory.
  for (InstrRec &in : instrs) {
    if (in.op != "reshape" && in.op != "squeeze" && in.op != "unsqueeze")
      continue;
    ValueRec &out = values[in.outputs[0]];
    uint32_t root = rootOf(values, in.inputs[0]);
    if (values[root].storage == Storage::Planned ||
        values[root].storage == Storage::Buffer) {
      out.storage = Storage::Alias;
      out.aliasOf = in.inputs[0];
    }
  }
  // Lifetimes: a root lives until the last use of any alias of it.
  for (size_t k = 0; k < instrs.size(); ++k)
    for (uint32_t v : instrs[k].inputs)
      values[v].lastUse = std::max<int64_t>(values[v].lastUse, k);
  for (uint32_t v : outputs)
    values[v].lastUse = instrs.size();
  std::vector<int64_t> rootEnd(values.size(), -1);
  for (uint32_t v = 0; v < values.size(); ++v) {
    uint32_t root = rootOf(values, v);
    rootEnd[root] = std::max({rootEnd[root], values[v].lastUse, values[v].def});
  }
  // Greedy by size over planned roots.
  std::vector<uint32_t> planned;
  for (uint32_t v = 0; v < values.size(); ++v)
    if (values[v].storage == Storage::Planned)
      planned.push_back(v);
  std::stable_sort(planned.begin(), planned.end(), [&](uint32_t a, uint32_t b) {
    return values[a].capacity > values[b].capacity;
  });
  struct Placed {
    int64_t start, end;
    uint64_t offset, size;
  };
  std::vector<Placed> placed;
  arenaSize = 0;
  for (uint32_t v : planned) {
    ValueRec &r = values[v];
    int64_t start = r.def, end = std::max(rootEnd[v], r.def);
    uint64_t size = alignUp(std::max<uint64_t>(r.capacity, 1), kAlign);
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const Placed &p : placed)
      if (p.start <= end && start <= p.end)
        busy.push_back({p.offset, p.offset + p.size});
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (auto [b, e] : busy) {
      if (offset + size <= b)
        break;
      offset = std::max(offset, e);
    }
    r.offset = offset;
    placed.push_back({start, end, offset, size});
    arenaSize = std::max(arenaSize, offset + size);
  }
}

LogicalResult ProgramBuilder::build(bool materializeDelegates) {
  forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("the module has no `forward` function");
  if (!forward.getBody().hasOneBlock())
    return forward.emitError("`forward` must have a single block");
  seqBound = 0;
  if (ModelConfigAttr cfg = getModelConfig(module))
    seqBound = cfg.getMaxSeqLen();
  for (auto b : module.getOps<BufferOp>()) {
    bufferIndex[b.getSymName()] = buffers.size();
    buffers.push_back(b);
  }
  Block &body = forward.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    if (seqBound <= 0 &&
        llvm::any_of(shapeOf(arg.getType()), ShapedType::isDynamic))
      return forward.emitError("dynamic dimensions need a bound: set "
                               "max_seq_len in the module's ")
             << EtllmDialect::kModelConfigAttrName;
    FailureOr<uint32_t> id = addValue(arg, forward);
    if (failed(id))
      return failure();
    values[*id].name = "input." + std::to_string(arg.getArgNumber());
    inputs.push_back(*id);
  }
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands()) {
        FailureOr<uint32_t> id = lookup(v, &op);
        if (failed(id))
          return failure();
        outputs.push_back(*id);
        values[*id].isOutput = true;
      }
      continue;
    }
    if (isa<DelegateCallOp>(op) && !materializeDelegates) {
      // Planning only: account for the call's results.
      InstrRec in;
      in.origin = &op;
      in.delegate = 0;
      for (Value v : op.getOperands()) {
        FailureOr<uint32_t> id = lookup(v, &op);
        if (failed(id))
          return failure();
        in.inputs.push_back(*id);
      }
      for (Value v : op.getResults()) {
        FailureOr<uint32_t> id = addValue(v, &op);
        if (failed(id))
          return failure();
        in.outputs.push_back(*id);
      }
      instrs.push_back(std::move(in));
      continue;
    }
    if (failed(lowerOp(&op)))
      return failure();
  }
  plan();
  return planBufferReads();
}

MemoryReport ProgramBuilder::report() const {
  MemoryReport r;
  r.arenaBytes = arenaSize;
  for (BufferOp b : buffers) {
    auto t = cast<RankedTensorType>(b.getType());
    r.bufferBytes += uint64_t(t.getNumElements()) *
                     ((t.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  }
  for (const ConstRec &c : constants)
    r.constantBytes += c.size;
  for (const ValueRec &v : values) {
    if (v.storage == Storage::Planned)
      r.naiveArenaBytes += alignUp(v.capacity, kAlign);
    if (v.storage == Storage::Alias)
      ++r.numAliases;
  }
  r.numValues = values.size();
  r.numInstructions = instrs.size();
  return r;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// The model configuration attribute as JSON.
std::string configJson(ModuleOp module) {
  ModelConfigAttr cfg = getModelConfig(module);
  return cfg ? cfg.toJson() : "{}";
}

LogicalResult ProgramBuilder::write(const SerializeOptions &options,
                                    llvm::raw_ostream &os) {
  // Constant segment layout.
  uint64_t constBytes = 0;
  for (ConstRec &c : constants) {
    c.offset = constBytes;
    constBytes = alignUp(constBytes + c.size, kAlign);
  }

  // The embedded tokenizer: a file given by the user, or a GGUF vocabulary.
  std::unique_ptr<llvm::MemoryBuffer> tokenizerFile;
  std::unique_ptr<rt::Tokenizer> embeddedTokenizer;
  std::string tokenizerKind;
  if (!options.tokenizerPath.empty()) {
    auto buf = llvm::MemoryBuffer::getFile(options.tokenizerPath, false, false);
    if (!buf)
      return module.emitError("cannot read the tokenizer '")
             << options.tokenizerPath << "': " << buf.getError().message();
    tokenizerFile = std::move(*buf);
    auto tok = rt::loadTokenizerFromBuffer(
        reinterpret_cast<const uint8_t *>(tokenizerFile->getBufferStart()),
        tokenizerFile->getBufferSize(), options.tokenizerPath);
    if (!tok.ok())
      return module.emitError(tok.message());
    tokenizerKind = rt::tokenizerKindName((*tok)->kind());
    embeddedTokenizer = std::move(tok.value());
  }

  // The inputs are hashed (over their mapped bytes) and the constants
  // produced on every core while the flatbuffer is built; the constants are
  // written in order as they come (Streaming.h).
  const formats::Checkpoint *ckpt = nullptr;
  if (module->hasAttr(EtllmDialect::kCheckpointAttrName))
    ckpt = weights.checkpoint(module);
  InputHasher hasher;
  std::vector<size_t> fileHashes;
  size_t tokenizerHash = 0;
  if (options.hashInputs) {
    if (ckpt)
      for (const auto &f : ckpt->files())
        fileHashes.push_back(hasher.add(f->data(), f->size()));
    if (tokenizerFile)
      tokenizerHash = hasher.add(
          reinterpret_cast<const uint8_t *>(tokenizerFile->getBufferStart()),
          tokenizerFile->getBufferSize());
    hasher.start();
  }
  std::vector<uint64_t> constSizes;
  for (const ConstRec &c : constants)
    constSizes.push_back(c.size);
  OrderedProducer producer(
      module.getContext(), std::move(constSizes),
      options.threads ? options.threads : defaultProducerThreads(),
      kMaxBufferedConstantBytes,
      [this](size_t i) { return constantBytes(constants[i]); });

  // Segments: 0 = constants, then delegate blobs, then the tokenizer file.
  flatbuffers::FlatBufferBuilder fb(1 << 20);
  std::vector<std::pair<uint64_t, uint64_t>> segs;
  uint64_t segCursor = 0;
  auto addSegment = [&](uint64_t size) {
    segs.push_back({segCursor, size});
    segCursor = alignUp(segCursor + size, kAlign);
    return uint32_t(segs.size() - 1);
  };
  uint32_t constSeg = addSegment(constBytes);
  std::vector<uint32_t> delegateSegs;
  for (DelegateRec &d : delegates)
    delegateSegs.push_back(addSegment(d.blob.size()));
  int32_t tokSeg =
      tokenizerFile ? int32_t(addSegment(tokenizerFile->getBufferSize())) : -1;

  // Values.
  std::vector<flatbuffers::Offset<fbs::Tensor>> fbValues;
  for (const ValueRec &v : values) {
    flatbuffers::Offset<fbs::QuantParams> q = 0;
    if (v.dtype == rt::DType::QWeight || v.dtype == rt::DType::QAct)
      q = fbs::CreateQuantParams(fb, v.quant.bits, v.quant.symmetric,
                                 static_cast<fbs::DType>(v.quant.scaleType),
                                 v.quant.groupSize, v.quant.perToken);
    std::vector<int64_t> sizes(v.sizes.begin(), v.sizes.end());
    std::vector<uint8_t> dyn(v.dynamic.begin(), v.dynamic.end());
    fbs::StorageKind kind = fbs::StorageKind::PLANNED;
    switch (v.storage) {
    case Storage::Planned:
      kind = fbs::StorageKind::PLANNED;
      break;
    case Storage::Constant:
      kind = fbs::StorageKind::CONSTANT;
      break;
    case Storage::Buffer:
      kind = fbs::StorageKind::BUFFER;
      break;
    case Storage::Alias:
      kind = fbs::StorageKind::ALIAS;
      break;
    }
    auto sizesVec = fb.CreateVector(sizes);
    auto dynVec = fb.CreateVector(dyn);
    auto name = fb.CreateString(v.name);
    fbs::TensorBuilder tb(fb);
    tb.add_dtype(static_cast<fbs::DType>(v.dtype));
    tb.add_sizes(sizesVec);
    tb.add_dynamic_dims(dynVec);
    tb.add_storage(kind);
    tb.add_arena(0);
    tb.add_offset(v.offset);
    tb.add_capacity(v.capacity);
    tb.add_constant(v.constant);
    tb.add_buffer(v.buffer);
    tb.add_alias_of(v.aliasOf);
    if (!q.IsNull())
      tb.add_quant(q);
    tb.add_name(name);
    fbValues.push_back(tb.Finish());
  }
  std::vector<flatbuffers::Offset<fbs::InstructionEntry>> fbInstrs;
  for (const InstrRec &in : instrs) {
    std::vector<uint32_t> ins(in.inputs.begin(), in.inputs.end());
    std::vector<uint32_t> outs(in.outputs.begin(), in.outputs.end());
    if (in.delegate >= 0) {
      auto dc = fbs::CreateDelegateCall(fb, in.delegate, fb.CreateVector(ins),
                                        fb.CreateVector(outs));
      fbInstrs.push_back(fbs::CreateInstructionEntry(
          fb, fbs::Instruction::DelegateCall, dc.Union()));
      continue;
    }
    std::vector<int64_t> ints(in.ints.begin(), in.ints.end());
    std::vector<double> floats(in.floats.begin(), in.floats.end());
    auto kc = fbs::CreateKernelCall(
        fb, fb.CreateString(in.op), fb.CreateVector(ins), fb.CreateVector(outs),
        fb.CreateVector(ints), fb.CreateVector(floats));
    fbInstrs.push_back(fbs::CreateInstructionEntry(
        fb, fbs::Instruction::KernelCall, kc.Union()));
  }
  std::vector<uint64_t> arenas = {arenaSize};
  auto method = fbs::CreateMethod(
      fb, fb.CreateString("forward"), fb.CreateVector(fbValues),
      fb.CreateVector(inputs), fb.CreateVector(outputs),
      fb.CreateVector(fbInstrs), fb.CreateVector(arenas));

  std::vector<flatbuffers::Offset<fbs::Buffer>> fbBuffers;
  for (BufferOp b : buffers) {
    auto t = cast<RankedTensorType>(b.getType());
    FailureOr<rt::DType> dt = runtimeDType(b, t);
    if (failed(dt))
      return failure();
    std::vector<int64_t> sizes(t.getShape().begin(), t.getShape().end());
    auto bytes = rt::storageBytes(*dt, sizes.data(), sizes.size(), {});
    fbBuffers.push_back(fbs::CreateBuffer(
        fb, fb.CreateString(b.getSymName().str()), static_cast<fbs::DType>(*dt),
        fb.CreateVector(sizes), bytes.ok() ? *bytes : 0));
  }
  std::vector<flatbuffers::Offset<fbs::Constant>> fbConsts;
  for (const ConstRec &c : constants)
    fbConsts.push_back(fbs::CreateConstant(fb, fb.CreateString(c.name),
                                           constSeg, c.offset, c.size));
  std::vector<flatbuffers::Offset<fbs::Segment>> fbSegs;
  for (auto [off, size] : segs)
    fbSegs.push_back(fbs::CreateSegment(fb, off, size));
  std::vector<flatbuffers::Offset<fbs::Delegate>> fbDelegates;
  for (size_t i = 0; i < delegates.size(); ++i) {
    std::vector<flatbuffers::Offset<fbs::KeyValue>> specs;
    for (auto &[k, v] : delegates[i].specs)
      specs.push_back(
          fbs::CreateKeyValue(fb, fb.CreateString(k), fb.CreateString(v)));
    fbDelegates.push_back(
        fbs::CreateDelegate(fb, fb.CreateString(delegates[i].backend),
                            delegateSegs[i], fb.CreateVector(specs)));
  }

  // Metadata.
  ModelConfigAttr cfg = getModelConfig(module);
  int64_t vocab = 0, maxSeq = seqBound, bos = -1;
  std::vector<int64_t> eos;
  if (cfg) {
    vocab = cfg.getVocabSize();
    bos = cfg.getBosTokenId();
    eos.assign(cfg.getEosTokenIds().begin(), cfg.getEosTokenIds().end());
  }
  flatbuffers::Offset<fbs::TokenizerInfo> tokInfo = 0;
  if (tokenizerFile) {
    auto kind = fb.CreateString(tokenizerKind);
    auto name =
        fb.CreateString(llvm::sys::path::filename(options.tokenizerPath).str());
    fbs::TokenizerInfoBuilder tb(fb);
    tb.add_kind(kind);
    tb.add_file_segment(tokSeg);
    tb.add_file_name(name);
    tb.add_bos_id(bos);
    tb.add_eos_id(eos.empty() ? -1 : eos.front());
    tokInfo = tb.Finish();
  } else if (ckpt && ckpt->ggufTokenizer()) {
    const formats::GgufTokenizerInfo &t = *ckpt->ggufTokenizer();
    auto kind = fb.CreateString(t.model == "llama"  ? "gguf-llama"
                                : t.model == "gpt2" ? "gguf-gpt2"
                                                    : "gguf-" + t.model);
    auto pre = fb.CreateString(t.pre);
    auto tokens = fb.CreateVectorOfStrings(t.tokens);
    auto scores = fb.CreateVector(t.scores);
    auto types = fb.CreateVector(t.tokenTypes);
    auto merges = fb.CreateVectorOfStrings(t.merges);
    fbs::TokenizerInfoBuilder tb(fb);
    tb.add_kind(kind);
    tb.add_pre(pre);
    tb.add_tokens(tokens);
    tb.add_scores(scores);
    tb.add_token_types(types);
    tb.add_merges(merges);
    tb.add_bos_id(t.bosTokenId);
    tb.add_eos_id(t.eosTokenId);
    tb.add_unk_id(t.unknownTokenId);
    tb.add_pad_id(t.paddingTokenId);
    tb.add_eot_id(t.eotTokenId);
    tb.add_add_bos(t.addBosToken.value_or(true));
    tb.add_add_space_prefix(t.addSpacePrefix.value_or(true));
    tokInfo = tb.Finish();
  }
  // Inputs are recorded by file name (never the directory they came from, so
  // a program does not leak the exporter's paths and the same inputs give the
  // same bytes wherever they are) and content hash.
  auto inputName = [](const std::string &path) {
    return llvm::sys::path::filename(path).str();
  };
  std::vector<flatbuffers::Offset<fbs::KeyValue>> inputsKv;
  if (ckpt)
    for (size_t i = 0; i < ckpt->files().size(); ++i)
      inputsKv.push_back(fbs::CreateKeyValue(
          fb, fb.CreateString(inputName(ckpt->files()[i]->path())),
          fb.CreateString(options.hashInputs
                              ? "sha256:" + hasher.hex(fileHashes[i])
                              : std::string())));
  if (!options.tokenizerPath.empty())
    inputsKv.push_back(fbs::CreateKeyValue(
        fb, fb.CreateString(inputName(options.tokenizerPath)),
        fb.CreateString(options.hashInputs
                            ? "sha256:" + hasher.hex(tokenizerHash)
                            : std::string())));
  auto prov = fbs::CreateProvenance(
      fb, fb.CreateString(ETLLM_VERSION), fb.CreateString(options.pipeline),
      fb.CreateString(options.configYaml),
      fb.CreateVectorOfStrings(options.stages), fb.CreateVector(inputsKv));
  FailureOr<std::optional<ChatTemplateData>> chat =
      findChatTemplate(module, ckpt, options, embeddedTokenizer.get());
  if (failed(chat))
    return failure();
  flatbuffers::Offset<fbs::ChatTemplateInfo> chatInfo =
      *chat ? writeChatTemplateInfo(fb, **chat) : 0;
  auto meta = fbs::CreateMetadata(fb, fb.CreateString(configJson(module)),
                                  vocab, maxSeq, bos, fb.CreateVector(eos),
                                  tokInfo, prov, chatInfo);
  std::vector<flatbuffers::Offset<fbs::Method>> methods = {method};
  auto program = fbs::CreateProgram(
      fb, /*version=*/rt::kProgramFormatVersion, fb.CreateVector(methods),
      fb.CreateVector(fbBuffers), fb.CreateVector(fbConsts),
      fb.CreateVector(fbSegs), fb.CreateVector(fbDelegates), meta);
  fbs::FinishProgramBuffer(fb, program);

  // Header.
  rt::FileHeader h{};
  std::memcpy(h.magic, rt::kProgramMagic, 8);
  h.version = rt::kProgramFormatVersion;
  h.headerSize = sizeof(rt::FileHeader);
  h.flatbufferOffset = sizeof(rt::FileHeader);
  h.flatbufferSize = fb.GetSize();
  h.segmentAlignment = kAlign;
  h.segmentBase = alignUp(h.flatbufferOffset + h.flatbufferSize, kAlign);
  h.segmentDataSize = segCursor;
  uint64_t written = 0;
  auto emit = [&](const void *p, size_t n) {
    os.write(static_cast<const char *>(p), n);
    written += n;
  };
  auto padTo = [&](uint64_t target) {
    static const char zeros[kAlign] = {};
    while (written < target) {
      size_t n = std::min<uint64_t>(kAlign, target - written);
      emit(zeros, n);
    }
  };
  emit(&h, sizeof h);
  emit(fb.GetBufferPointer(), fb.GetSize());
  padTo(h.segmentBase);
  // Constants, written in order as the producer hands them over.
  uint64_t doneBytes = 0;
  if (options.progressBytes)
    options.progressBytes(0, constBytes);
  for (ConstRec &c : constants) {
    padTo(h.segmentBase + segs[constSeg].first + c.offset);
    FailureOr<std::vector<uint8_t>> bytes = producer.next();
    if (failed(bytes))
      return failure();
    if (bytes->size() != c.size)
      return c.op->emitError("internal error: materialized ")
             << bytes->size() << " bytes, planned " << c.size;
    emit(bytes->data(), bytes->size());
    doneBytes += c.size;
    if (options.progress && constBytes)
      options.progress(double(doneBytes) / double(constBytes));
    if (options.progressBytes)
      options.progressBytes(doneBytes, constBytes);
  }
  for (size_t i = 0; i < delegates.size(); ++i) {
    padTo(h.segmentBase + segs[delegateSegs[i]].first);
    emit(delegates[i].blob.data(), delegates[i].blob.size());
  }
  if (tokenizerFile) {
    padTo(h.segmentBase + segs[tokSeg].first);
    emit(tokenizerFile->getBufferStart(), tokenizerFile->getBufferSize());
  }
  padTo(h.segmentBase + h.segmentDataSize);
  os.flush();
  return success();
}

} // namespace

LogicalResult writeProgram(ModuleOp module, const SerializeOptions &options,
                           llvm::raw_ostream &os, MemoryReport *report) {
  ProgramBuilder builder(module);
  builder.weights.useCheckpoint(options.checkpoint);
  if (failed(builder.build(/*materializeDelegates=*/true)))
    return failure();
  if (report)
    *report = builder.report();
  return builder.write(options, os);
}

FailureOr<MemoryReport> planProgramMemory(ModuleOp module) {
  ProgramBuilder builder(module);
  if (failed(builder.build(/*materializeDelegates=*/false)))
    return failure();
  return builder.report();
}

} // namespace etllm
