//===- Lowering.cpp - Each method as the runtime's value table ------------===//
//
// Every value of a method becomes an entry of its value table: its runtime
// dtype, its upper-bound shape (dynamic dimensions at the sequence bound
// unless the op bounds them, BoundedShapeOpInterface) and its storage
// (constants and parameters in the constant segment, buffer reads in their
// buffer, tied results in their operand's storage, the rest planned). Every
// op with a kernel contract becomes a kernel call; buffer.write becomes the
// write-back copy unless the value already lives in the buffer; delegate
// calls ask their backend for a blob.
//
//===----------------------------------------------------------------------===//
#include "etllm/Lowering/Lowering.h"

#include "etllm/Lowering/ProgramConfig.h"

#include "etllm/Lowering/KernelCalls.h"
#include "etllm/Target/Backend.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {

/// The root value whose storage `id` uses in `values` (follows aliases).
static uint32_t rootIn(const std::vector<ValueRec> &values, uint32_t id) {
  while (values[id].storage == Storage::Alias)
    id = values[id].aliasOf;
  return id;
}

LoweredProgram::LoweredProgram(ModuleOp module)
    : module(module), weights(module) {}

FailureOr<uint32_t> LoweredProgram::addValue(Value v, Operation *op) {
  ValueRec r;
  FailureOr<rt::DType> dt = runtimeDType(op, v.getType());
  if (failed(dt))
    return failure();
  r.dtype = *dt;
  ArrayRef<int64_t> shape = shapeOf(v.getType());
  if (shape.size() > size_t(rt::kMaxRank))
    return op->emitError("rank ")
           << shape.size() << " exceeds the runtime's " << rt::kMaxRank;
  // Upper bounds for dynamic dimensions: the sequence bound, unless the op
  // bounds the dimension itself (BoundedShapeOpInterface).
  auto bounded = dyn_cast_or_null<BoundedShapeOpInterface>(op);
  auto operandBounds = [&](Value operand) -> ArrayRef<int64_t> {
    auto it = index.find(operand);
    if (it == index.end())
      return {};
    return values[it->second].sizes;
  };
  for (auto [i, d] : llvm::enumerate(shape)) {
    bool dyn = ShapedType::isDynamic(d);
    int64_t bound = d;
    if (dyn) {
      bound = seqBound;
      if (auto result = dyn_cast<OpResult>(v); bounded && result)
        if (std::optional<int64_t> b = bounded.getResultDimBound(
                result.getResultNumber(), i, operandBounds))
          bound = *b;
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
  r.value = v;
  uint32_t id = values.size();
  values.push_back(std::move(r));
  if (v)
    index[v] = id;
  return id;
}

FailureOr<uint32_t> LoweredProgram::lookup(Value v, Operation *user) {
  auto it = index.find(v);
  if (it == index.end())
    return user->emitError("operand is not defined before its use in `")
           << current.getSymName() << "`";
  return it->second;
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

/// A result the callee of `call` computes as an in-place update of a cache
/// it takes as an argument is that argument's storage (the delegate writes
/// the cache, as a portable kv_cache_update would). The same when planning
/// and when serializing, so the recorded plan matches.
static void tieInPlaceCacheResults(DelegateCallOp call, InstrRec &in,
                                   std::vector<ValueRec> &values) {
  auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  if (!fn || fn.getBody().empty())
    return;
  Block &body = fn.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret || ret.getNumOperands() != in.outputs.size())
    return;
  for (auto [j, r] : llvm::enumerate(ret.getOperands())) {
    auto upd = r.getDefiningOp<KvCacheUpdateOp>();
    auto arg = upd ? dyn_cast<BlockArgument>(upd.getCache()) : nullptr;
    if (!arg || arg.getOwner() != &body ||
        arg.getArgNumber() >= in.inputs.size())
      continue;
    ValueRec &out = values[in.outputs[j]];
    out.storage = Storage::Alias;
    out.aliasOf = in.inputs[arg.getArgNumber()];
  }
}

LogicalResult LoweredProgram::lowerOp(Operation *op) {
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
    // A tied result is its operand's storage, updated in place; a view's
    // result may share its source's storage (decided when planning).
    if (auto tied = dyn_cast<TiedOpInterface>(op)) {
      for (unsigned r = 0; r < in.outputs.size(); ++r)
        if (std::optional<unsigned> o = tied.getTiedResultOperandIndex(r)) {
          values[in.outputs[r]].storage = Storage::Alias;
          values[in.outputs[r]].aliasOf = in.inputs[*o];
        }
    } else if (auto view = dyn_cast<ViewLikeOpInterface>(op)) {
      values[in.outputs[0]].viewOf = index.lookup(view.getViewSource());
    }
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
        auto it = paramValue.find(g.getName());
        if (it != paramValue.end()) {
          index[g.getResult()] = it->second;
          return success();
        }
        auto decl = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
            op, g.getNameAttr());
        FailureOr<uint32_t> id = addValue(g.getResult(), op);
        if (failed(id))
          return failure();
        paramValue[g.getName()] = *id;
        // Another method's constant already holds the parameter.
        if (auto c = paramConstant.find(g.getName());
            c != paramConstant.end()) {
          values[*id].storage = Storage::Constant;
          values[*id].constant = c->second;
          values[*id].name = g.getName().str();
          return success();
        }
        ConstRec rec;
        rec.name = g.getName().str();
        rec.op = decl;
        rec.fromParameter = true;
        FailureOr<uint64_t> size = weights.byteSize(decl);
        if (failed(size))
          return failure();
        rec.size = *size;
        rec.elements = 1;
        for (int64_t d : shapeOf(decl.getType()))
          rec.elements *= uint64_t(d);
        values[*id].storage = Storage::Constant;
        values[*id].constant = constants.size();
        values[*id].name = rec.name;
        paramConstant[g.getName()] = constants.size();
        constants.push_back(std::move(rec));
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
        uint32_t root = rootIn(values, *src);
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
        target.value = Value();
        uint32_t dst = values.size();
        values.push_back(std::move(target));
        in.op = BufferWriteOp::getKernelContract().kernel;
        in.writeBack = true;
        in.inputs.push_back(*src);
        in.outputs.push_back(dst);
        instrs.push_back(std::move(in));
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
        rec.backend = backend->id().str(); // a former id becomes the id
        struct Context : DelegateContext {
          LoweredProgram &pb;
          Operation *at;
          explicit Context(LoweredProgram &pb, Operation *at)
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
          uint32_t
          addWeight(const std::string &name, uint64_t size, uint64_t elements,
                    std::function<FailureOr<std::vector<uint8_t>>()> produce)
              override {
            auto it = pb.delegateWeights.find(name);
            if (it != pb.delegateWeights.end() &&
                pb.constants[it->second].size == size)
              return it->second;
            uint32_t id = addConstant(name, size, std::move(produce));
            pb.constants[id].elements = elements;
            pb.delegateWeights[name] = id;
            return id;
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
        tieInPlaceCacheResults(call, in, values);
        instrs.push_back(std::move(in));
        return success();
      })
      .Default([&](Operation *o) -> LogicalResult { return simple(); });
}

SmallVector<func::FuncOp> methodFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> out;
  for (func::FuncOp fn : module.getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isDeclaration())
      out.push_back(fn);
  return out;
}

uint32_t LoweredMethod::rootOf(uint32_t id) const { return rootIn(values, id); }

LoweredMethod *LoweredProgram::method(llvm::StringRef name) {
  for (LoweredMethod &m : methods)
    if (m.func.getSymName() == name)
      return &m;
  return nullptr;
}

LogicalResult LoweredProgram::lower(bool materializeDelegates) {
  SmallVector<func::FuncOp> fns = methodFunctions(module);
  if (fns.empty())
    return module.emitError("the module has no public function (a method: "
                            "`forward`, or `prefill` and `decode`)");
  ProgramConfig config = readProgramConfig(module);
  if (config.ringChunk > 0 &&
      (config.ringChunk > config.maxSeqLen ||
       config.ringSinks >= config.maxSeqLen))
    return module.emitError("the ring KV caches' chunk ")
           << config.ringChunk << " and sinks " << config.ringSinks
           << " do not fit the context of " << config.maxSeqLen << " ("
           << config.maxSeqLenSource << ")";
  seqBound = config.callBound();
  for (auto b : module.getOps<BufferOp>()) {
    bufferIndex[b.getSymName()] = buffers.size();
    buffers.push_back(b);
  }
  methods.reserve(fns.size());
  for (func::FuncOp fn : fns) {
    // Lowered into `working`, then moved into its record.
    working = LoweredMethod();
    current = fn;
    paramValue.clear();
    if (failed(lowerMethod(materializeDelegates, config)))
      return failure();
    methods.push_back(std::move(working));
  }
  working = LoweredMethod();
  return success();
}

LogicalResult LoweredProgram::lowerMethod(bool materializeDelegates,
                                          const ProgramConfig &config) {
  if (!current.getBody().hasOneBlock())
    return current.emitError("`")
           << current.getSymName() << "` must have a single block";
  Block &body = current.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    FailureOr<uint32_t> id = addValue(arg, current);
    if (failed(id))
      return failure();
    if (seqBound <= 0 && llvm::is_contained(values[*id].dynamic, true))
      return current.emitError("dynamic dimensions need a bound: set ")
             << config.maxSeqLenSource;
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
      tieInPlaceCacheResults(cast<DelegateCallOp>(op), in, values);
      instrs.push_back(std::move(in));
      continue;
    }
    if (failed(lowerOp(&op)))
      return failure();
  }
  return success();
}

} // namespace etllm
