//===- EtllmOps.cpp - etllm type inference and verifiers: levels A, D -----===//
//
// Result types are inferred from operands and attributes (ODS
// InferTypeOpAdaptor); the verifiers here check only what inference cannot.
// Level B (fused ops) is in EtllmFusedOps.cpp, level C (quantization) in
// EtllmQuantOps.cpp, what they share in OpInference.h. The op classes are
// defined here (GET_OP_CLASSES).
//
//===----------------------------------------------------------------------===//
#include "OpInference.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <limits>

using namespace mlir;
using namespace mlir::etllm;
using namespace mlir::etllm::detail;

//===----------------------------------------------------------------------===//
// Parameters, buffers, constants
//===----------------------------------------------------------------------===//

LogicalResult ParameterOp::verify() {
  Type type = getType();
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    if (!tensor.hasStaticShape())
      return emitOpError("parameter type must have a static shape, got ")
             << type;
  }
  if (std::optional<ElementsAttr> value = getValue()) {
    auto valueType = cast<ShapedType>(value->getType());
    if (auto qweight = dyn_cast<QWeightType>(type)) {
      if (qweight.isGgml())
        return emitOpError("a ")
               << stringifyQWeightScheme(qweight.getScheme())
               << " weight keeps a GGUF's blocks: it has no inline value";
      if (valueType.getShape() != qweight.getShape() ||
          !isa<FloatType>(valueType.getElementType()))
        return emitOpError("inline value of a quantized parameter must be a "
                           "float tensor of shape ")
               << shapeStr(qweight.getShape());
    } else if (valueType != type) {
      return emitOpError("inline value type ")
             << valueType << " does not match the parameter type " << type;
    }
    if (getSource())
      return emitOpError("has both an inline value and a checkpoint source");
  }
  if (std::optional<ArrayAttr> stack = getStack()) {
    ArrayRef<int64_t> shape = weightShape(type);
    if (getValue() || getSource())
      return emitOpError("a stacked parameter has no inline value or source");
    if (stack->empty() || shape.empty() ||
        shape.front() != int64_t(stack->size()))
      return emitOpError("stack of ")
             << stack->size() << " tensors does not match the leading "
             << "dimension of " << type;
  }
  if (std::optional<int64_t> heads = getQkPermuteHeads()) {
    ArrayRef<int64_t> shape = weightShape(type);
    if (*heads <= 0 || shape.empty() || shape[0] % (2 * *heads) != 0)
      return emitOpError("qk_permute_heads ")
             << *heads << " must divide the rows " << shape.front()
             << " into heads of even size";
  }
  return success();
}

/// Checks that `name`, used by `user`, declares a DeclOp (a parameter or a
/// buffer) of the type `used` that the user reads or writes (its `usedWhat`:
/// result, value).
template <typename DeclOp>
static LogicalResult
verifyDeclUse(Operation *user, SymbolTableCollection &symbols,
              FlatSymbolRefAttr name, Type used, StringRef usedWhat) {
  // The declaring op's own name: buffer for etllm.buffer.
  StringRef what = DeclOp::getOperationName().split('.').second;
  auto decl = symbols.lookupNearestSymbolFrom<DeclOp>(user, name);
  if (!decl)
    return user->emitOpError("refers to unknown ") << what << " " << name;
  if (decl.getType() != used)
    return user->emitOpError()
           << usedWhat << " type " << used << " does not match " << what
           << " type " << decl.getType();
  return success();
}

LogicalResult ParameterGetOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyDeclUse<ParameterOp>(*this, symbols, getNameAttr(), getType(),
                                    "result");
}

LogicalResult BufferOp::verify() {
  if (auto q = dyn_cast<QActType>(getType()))
    return verifyKvCacheLayout(*this, q);
  auto tensor = cast<RankedTensorType>(getType());
  if (!tensor.hasStaticShape())
    return emitOpError("buffer type must have a static shape, got ") << tensor;
  return success();
}

LogicalResult BufferReadOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyDeclUse<BufferOp>(*this, symbols, getNameAttr(), getType(),
                                 "result");
}

LogicalResult BufferWriteOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyDeclUse<BufferOp>(*this, symbols, getNameAttr(),
                                 getValue().getType(), "value");
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

template <typename Adaptor>
static LogicalResult inferBinary(std::optional<Location> loc, Adaptor adaptor,
                                 Type resultElement,
                                 SmallVectorImpl<Type> &inferred) {
  auto lhs = tensorOf(adaptor.getLhs());
  auto rhs = tensorOf(adaptor.getRhs());
  if (!lhs || !rhs)
    return failure();
  if (lhs.getElementType() != rhs.getElementType())
    return fail(loc, "operand element types differ: ", lhs.getElementType(),
                " vs ", rhs.getElementType());
  auto shape = broadcast(lhs.getShape(), rhs.getShape());
  if (failed(shape))
    return fail(loc, "shapes ", shapeStr(lhs.getShape()), " and ",
                shapeStr(rhs.getShape()), " do not broadcast");
  inferred.push_back(RankedTensorType::get(
      *shape, resultElement ? resultElement : lhs.getElementType()));
  return success();
}

#define ETLLM_BINARY_INFER(OP, ELEMENT)                                        \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,      \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferBinary(loc, adaptor, ELEMENT, inferred);                       \
  }                                                                            \
  ETLLM_COMPATIBLE_RETURN_TYPES(OP)

ETLLM_BINARY_INFER(AddOp, Type())
ETLLM_BINARY_INFER(SubOp, Type())
ETLLM_BINARY_INFER(MulOp, Type())
ETLLM_BINARY_INFER(DivOp, Type())
ETLLM_BINARY_INFER(PowOp, Type())
ETLLM_BINARY_INFER(MaximumOp, Type())
ETLLM_BINARY_INFER(MinimumOp, Type())
ETLLM_BINARY_INFER(LogicalAndOp, Type())
ETLLM_BINARY_INFER(LogicalOrOp, Type())
ETLLM_BINARY_INFER(EqOp, IntegerType::get(context, 1))
ETLLM_BINARY_INFER(NeOp, IntegerType::get(context, 1))
ETLLM_BINARY_INFER(LtOp, IntegerType::get(context, 1))
ETLLM_BINARY_INFER(LeOp, IntegerType::get(context, 1))
ETLLM_BINARY_INFER(GtOp, IntegerType::get(context, 1))
ETLLM_BINARY_INFER(GeOp, IntegerType::get(context, 1))

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto c = tensorOf(adaptor.getCondition());
  auto t = tensorOf(adaptor.getOnTrue());
  auto f = tensorOf(adaptor.getOnFalse());
  if (t.getElementType() != f.getElementType())
    return fail(loc, "on_true and on_false element types differ: ",
                t.getElementType(), " vs ", f.getElementType());
  auto s1 = broadcast(c.getShape(), t.getShape());
  FailureOr<SmallVector<int64_t>> s2 =
      succeeded(s1) ? broadcast(*s1, f.getShape()) : s1;
  if (failed(s2))
    return fail(loc, "shapes ", shapeStr(c.getShape()), ", ",
                shapeStr(t.getShape()), " and ", shapeStr(f.getShape()),
                " do not broadcast");
  inferred.push_back(RankedTensorType::get(*s2, t.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(WhereOp)

LogicalResult MaskedFillOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  auto mask = tensorOf(adaptor.getMask());
  auto shape = broadcast(in.getShape(), mask.getShape());
  if (failed(shape) || shape->size() != size_t(in.getRank()))
    return fail(loc, "mask shape ", shapeStr(mask.getShape()),
                " does not broadcast to the input shape ",
                shapeStr(in.getShape()));
  inferred.push_back(RankedTensorType::get(*shape, in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(MaskedFillOp)

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

template <typename Adaptor>
static LogicalResult inferReduce(std::optional<Location> loc, Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  int64_t rank = in.getRank();
  llvm::SmallSet<int64_t, 4> reduced;
  for (int64_t d : adaptor.getDims()) {
    FailureOr<int64_t> nd = normalizeDim(d, rank);
    if (failed(nd))
      return fail(loc, "dimension ", d, " is out of range for rank ", rank);
    if (!reduced.insert(*nd).second)
      return fail(loc, "dimension ", d, " is reduced twice");
  }
  if (reduced.empty())
    return fail(loc, "expected at least one dimension to reduce");
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced.contains(i))
      shape.push_back(in.getDimSize(i));
    else if (adaptor.getKeepdim())
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

#define ETLLM_REDUCE_INFER(OP)                                                 \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferReduce(loc, adaptor, inferred);                                \
  }                                                                            \
  ETLLM_COMPATIBLE_RETURN_TYPES(OP)

ETLLM_REDUCE_INFER(SumOp)
ETLLM_REDUCE_INFER(MeanOp)
ETLLM_REDUCE_INFER(AmaxOp)

LogicalResult SoftmaxOp::verify() {
  if (failed(normalizeDim(getDim(), getType().getRank())))
    return emitOpError("dimension ")
           << getDim() << " is out of range for rank " << getType().getRank();
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and lookups
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto a = tensorOf(adaptor.getLhs());
  auto b = tensorOf(adaptor.getRhs());
  if (a.getRank() < 2 || b.getRank() < 2)
    return fail(loc, "operands must have rank >= 2");
  if (a.getElementType() != b.getElementType())
    return fail(loc, "operand element types differ: ", a.getElementType(),
                " vs ", b.getElementType());
  ArrayRef<int64_t> as = a.getShape(), bs = b.getShape();
  if (failed(mergeDim(as.back(), bs[bs.size() - 2])))
    return fail(loc, "contracting dimensions differ: ", shapeStr(as), " x ",
                shapeStr(bs));
  auto batch = broadcast(as.drop_back(2), bs.drop_back(2));
  if (failed(batch))
    return fail(loc, "batch dimensions of ", shapeStr(as), " and ",
                shapeStr(bs), " do not broadcast");
  SmallVector<int64_t> shape = *batch;
  shape.push_back(as[as.size() - 2]);
  shape.push_back(bs.back());
  inferred.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(MatmulOp)

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto x = tensorOf(adaptor.getInput());
  auto w = tensorOf(adaptor.getWeight());
  if (x.getRank() < 1 || w.getRank() != 2)
    return fail(loc, "expected input of rank >= 1 and a weight of rank 2");
  if (x.getElementType() != w.getElementType())
    return fail(loc,
                "input and weight element types differ: ", x.getElementType(),
                " vs ", w.getElementType());
  if (failed(mergeDim(x.getShape().back(), w.getDimSize(1))))
    return fail(loc, "input features ", x.getShape().back(),
                " do not match weight ", shapeStr(w.getShape()));
  if (Value bias = adaptor.getBias()) {
    auto b = tensorOf(bias);
    if (b.getRank() != 1 || failed(mergeDim(b.getDimSize(0), w.getDimSize(0))))
      return fail(loc, "bias shape ", shapeStr(b.getShape()),
                  " does not match the ", w.getDimSize(0), " output features");
    if (b.getElementType() != x.getElementType())
      return fail(loc, "bias element type ", b.getElementType(),
                  " differs from the input's");
  }
  SmallVector<int64_t> shape(x.getShape());
  shape.back() = w.getDimSize(0);
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(LinearOp)

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto w = tensorOf(adaptor.getWeight());
  auto idx = tensorOf(adaptor.getIndices());
  if (w.getRank() != 2)
    return fail(loc, "embedding table must have rank 2, got ", w.getRank());
  SmallVector<int64_t> shape(idx.getShape());
  shape.push_back(w.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, w.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(EmbeddingOp)

//===----------------------------------------------------------------------===//
// Tensor creation
//===----------------------------------------------------------------------===//

LogicalResult ArangeOp::verify() {
  auto type = cast<RankedTensorType>(getType());
  if (getStep() == 0)
    return emitOpError("step must not be zero");
  int64_t span = getEnd() - getStart();
  int64_t step = getStep();
  int64_t count = (span > 0) == (step > 0) && span != 0
                      ? (span + step + (step > 0 ? -1 : 1)) / step
                      : 0;
  if (type.getRank() != 1 || type.getDimSize(0) != count)
    return emitOpError("result must be tensor<")
           << count << "x...>, got " << type;
  return success();
}

LogicalResult FullOp::verify() {
  if (!cast<RankedTensorType>(getType()).hasStaticShape())
    return emitOpError("result must have a static shape (use full_like for "
                       "a dynamic one)");
  return success();
}

/// triu and tril: the input (of the result's type) is at least a matrix.
static LogicalResult verifyTriangular(Operation *op) {
  if (cast<RankedTensorType>(op->getResult(0).getType()).getRank() < 2)
    return op->emitOpError("input must have rank >= 2");
  return success();
}

LogicalResult TriuOp::verify() { return verifyTriangular(*this); }

LogicalResult TrilOp::verify() { return verifyTriangular(*this); }

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  auto d0 = normalizeDim(adaptor.getDim0(), in.getRank());
  auto d1 = normalizeDim(adaptor.getDim1(), in.getRank());
  if (failed(d0) || failed(d1))
    return fail(loc, "dimensions ", adaptor.getDim0(), ", ", adaptor.getDim1(),
                " are out of range for rank ", in.getRank());
  SmallVector<int64_t> shape(in.getShape());
  std::swap(shape[*d0], shape[*d1]);
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(TransposeOp)

LogicalResult PermuteOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> dims = adaptor.getDims();
  if (int64_t(dims.size()) != in.getRank())
    return fail(loc, "permutation has ", dims.size(),
                " entries for an input of rank ", in.getRank());
  SmallVector<bool> seen(in.getRank(), false);
  SmallVector<int64_t> shape;
  for (int64_t d : dims) {
    FailureOr<int64_t> nd = normalizeDim(d, in.getRank());
    if (failed(nd) || seen[*nd])
      return fail(loc, "dims ", shapeStr(dims), " are not a permutation");
    seen[*nd] = true;
    shape.push_back(in.getDimSize(*nd));
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(PermuteOp)

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> target = adaptor.getShape();
  int64_t inferIndex = -1;
  int64_t known = 1;
  for (auto [i, d] : llvm::enumerate(target)) {
    if (d == -1) {
      if (inferIndex >= 0)
        return fail(loc, "shape ", shapeStr(target), " has more than one -1");
      inferIndex = i;
    } else if (d < 0) {
      return fail(loc, "invalid size ", d, " in shape");
    } else {
      known *= d;
    }
  }
  SmallVector<int64_t> shape(target);
  if (in.hasStaticShape()) {
    int64_t numel = in.getNumElements();
    if (inferIndex >= 0) {
      if (known == 0 || numel % known != 0)
        return fail(loc, "cannot reshape ", shapeStr(in.getShape()), " to ",
                    shapeStr(target));
      shape[inferIndex] = numel / known;
    } else if (known != numel) {
      return fail(loc, "cannot reshape ", shapeStr(in.getShape()), " (", numel,
                  " elements) to ", shapeStr(target));
    }
  } else {
    if (inferIndex < 0)
      return fail(loc, "reshape of a dynamic shape needs one -1 in ",
                  shapeStr(target));
    shape[inferIndex] = kDyn;
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(ReshapeOp)

// A reshape is a view: the result is the input's storage, reinterpreted.
Value ReshapeOp::getViewSource() { return getInput(); }

// The dynamic size a reshape infers (its -1) is the element count over the
// sizes it knows.
std::optional<int64_t> ReshapeOp::getResultDimBound(
    unsigned, unsigned, function_ref<ArrayRef<int64_t>(Value)> operandBounds) {
  int64_t numel = 1, known = 1;
  for (int64_t s : operandBounds(getInput()))
    numel *= s;
  for (int64_t s : getShape())
    if (s != -1)
      known *= s;
  return known ? numel / known : 0;
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  FailureOr<int64_t> d = checkedDim(loc, adaptor.getDim(), in.getRank() + 1);
  if (failed(d))
    return failure();
  SmallVector<int64_t> shape(in.getShape());
  shape.insert(shape.begin() + *d, 1);
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(UnsqueezeOp)

Value UnsqueezeOp::getViewSource() { return getInput(); }

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  FailureOr<int64_t> d = checkedDim(loc, adaptor.getDim(), in.getRank());
  if (failed(d))
    return failure();
  if (in.getDimSize(*d) != 1 && !in.isDynamicDim(*d))
    return fail(loc, "dimension ", adaptor.getDim(), " has size ",
                in.getDimSize(*d), ", not 1");
  SmallVector<int64_t> shape(in.getShape());
  shape.erase(shape.begin() + *d);
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(SqueezeOp)

Value SqueezeOp::getViewSource() { return getInput(); }

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> target = adaptor.getShape();
  int64_t extra = int64_t(target.size()) - in.getRank();
  if (extra < 0)
    return fail(loc, "expand shape ", shapeStr(target),
                " has fewer dimensions than the input ",
                shapeStr(in.getShape()));
  SmallVector<int64_t> shape;
  for (auto [i, t] : llvm::enumerate(target)) {
    if (int64_t(i) < extra) {
      if (t < 0)
        return fail(loc, "new leading dimension ", i, " cannot be -1");
      shape.push_back(t);
      continue;
    }
    int64_t d = in.getDimSize(i - extra);
    if (t == -1) {
      shape.push_back(d);
    } else if (t < 0) {
      return fail(loc, "invalid size ", t, " in expand shape");
    } else if (d == 1 || ShapedType::isDynamic(d) || d == t) {
      shape.push_back(t);
    } else {
      return fail(loc, "cannot expand dimension of size ", d, " to ", t);
    }
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(ExpandOp)

/// The length of a PyTorch slice of a dimension of size `size` (may be
/// dynamic: then only a few cases are statically known).
static int64_t sliceLength(int64_t size, int64_t start, int64_t end,
                           int64_t step) {
  if (ShapedType::isDynamic(size)) {
    // x[-1:] of a non-empty dynamic dimension (sequence lengths are >= 1).
    if (start == -1 && end >= std::numeric_limits<int64_t>::max() / 2 &&
        step == 1)
      return 1;
    return kDyn;
  }
  auto clamp = [&](int64_t v) {
    if (v < 0)
      v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  int64_t s = clamp(start), e = clamp(end);
  if (e <= s)
    return 0;
  return (e - s + step - 1) / step;
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  FailureOr<int64_t> d = checkedDim(loc, adaptor.getDim(), in.getRank());
  if (failed(d))
    return failure();
  if (adaptor.getStep() <= 0)
    return fail(loc, "step must be positive, got ", adaptor.getStep());
  SmallVector<int64_t> shape(in.getShape());
  shape[*d] = sliceLength(shape[*d], adaptor.getStart(), adaptor.getEnd(),
                          adaptor.getStep());
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(SliceOp)

LogicalResult CatOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  if (adaptor.getInputs().empty())
    return fail(loc, "expected at least one input");
  auto first = tensorOf(adaptor.getInputs().front());
  FailureOr<int64_t> d = checkedDim(loc, adaptor.getDim(), first.getRank());
  if (failed(d))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : adaptor.getInputs().drop_front()) {
    auto t = tensorOf(v);
    if (t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType())
      return fail(loc, "inputs must have the same rank and element type");
    for (int64_t i = 0; i < t.getRank(); ++i) {
      if (i == *d) {
        shape[i] = ShapedType::isDynamic(shape[i]) || t.isDynamicDim(i)
                       ? kDyn
                       : shape[i] + t.getDimSize(i);
        continue;
      }
      FailureOr<int64_t> m = mergeDim(shape[i], t.getDimSize(i));
      if (failed(m))
        return fail(loc, "input shapes ", shapeStr(first.getShape()), " and ",
                    shapeStr(t.getShape()), " differ outside dimension ", *d);
      shape[i] = *m;
    }
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(CatOp)

// Along the concatenated dimension, the bound is the sum of the inputs'.
std::optional<int64_t>
CatOp::getResultDimBound(unsigned, unsigned dim,
                         function_ref<ArrayRef<int64_t>(Value)> operandBounds) {
  int64_t rank = getType().getRank();
  if (int64_t(dim) != (getDim() < 0 ? getDim() + rank : getDim()))
    return std::nullopt;
  int64_t bound = 0;
  for (Value in : getInputs()) {
    ArrayRef<int64_t> b = operandBounds(in);
    if (dim >= b.size())
      return std::nullopt;
    bound += b[dim];
  }
  return bound;
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  FailureOr<int64_t> d = checkedDim(loc, adaptor.getDim(), in.getRank());
  if (failed(d))
    return failure();
  int64_t total = 0;
  for (int64_t s : adaptor.getSizes()) {
    if (s < 0)
      return fail(loc, "split sizes must be non-negative");
    total += s;
  }
  if (!in.isDynamicDim(*d) && total != in.getDimSize(*d))
    return fail(loc, "split sizes ", shapeStr(adaptor.getSizes()), " sum to ",
                total, ", not the dimension size ", in.getDimSize(*d));
  for (int64_t s : adaptor.getSizes()) {
    SmallVector<int64_t> shape(in.getShape());
    shape[*d] = s;
    inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  }
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(SplitOp)

LogicalResult IndexSelectOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  auto idx = tensorOf(adaptor.getIndex());
  FailureOr<int64_t> d = checkedDim(loc, adaptor.getDim(), in.getRank());
  if (failed(d))
    return failure();
  if (idx.getRank() != 1)
    return fail(loc, "index must have rank 1, got ", idx.getRank());
  SmallVector<int64_t> shape(in.getShape());
  shape[*d] = idx.getDimSize(0);
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(IndexSelectOp)

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  auto idx = tensorOf(adaptor.getIndex());
  if (failed(checkedDim(loc, adaptor.getDim(), in.getRank())))
    return failure();
  if (idx.getRank() != in.getRank())
    return fail(loc, "index rank ", idx.getRank(),
                " differs from the input rank ", in.getRank());
  inferred.push_back(
      RankedTensorType::get(idx.getShape(), in.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(GatherOp)

LogicalResult mlir::etllm::detail::inferIndexWrite(
    std::optional<Location> loc, RankedTensorType in, RankedTensorType idx,
    RankedTensorType src, int64_t dim, SmallVectorImpl<Type> &inferred) {
  FailureOr<int64_t> d = checkedDim(loc, dim, in.getRank());
  if (failed(d))
    return failure();
  if (idx.getRank() != 1)
    return fail(loc, "index must have rank 1, got ", idx.getRank());
  if (src.getRank() != in.getRank() ||
      src.getElementType() != in.getElementType())
    return fail(loc, "source must have the input's rank and element type");
  for (int64_t i = 0; i < in.getRank(); ++i) {
    int64_t expected = i == *d ? idx.getDimSize(0) : in.getDimSize(i);
    if (failed(mergeDim(expected, src.getDimSize(i))))
      return fail(loc, "source shape ", shapeStr(src.getShape()),
                  " does not match input ", shapeStr(in.getShape()),
                  " with dimension ", *d, " indexed by ",
                  shapeStr(idx.getShape()));
  }
  inferred.push_back(in);
  return success();
}

LogicalResult IndexCopyOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferIndexWrite(
      loc, tensorOf(adaptor.getInput()), tensorOf(adaptor.getIndex()),
      tensorOf(adaptor.getSource()), adaptor.getDim(), inferred);
}
ETLLM_COMPATIBLE_RETURN_TYPES(IndexCopyOp)

LogicalResult IndexPutOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  return inferIndexWrite(
      loc, tensorOf(adaptor.getInput()), tensorOf(adaptor.getIndex()),
      tensorOf(adaptor.getValues()), adaptor.getDim(), inferred);
}
ETLLM_COMPATIBLE_RETURN_TYPES(IndexPutOp)

//===----------------------------------------------------------------------===//
// Level D
//===----------------------------------------------------------------------===//

LogicalResult DelegateCallOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto fn =
      symbols.lookupNearestSymbolFrom<func::FuncOp>(*this, getCalleeAttr());
  if (!fn)
    return emitOpError("refers to unknown function ") << getCalleeAttr();
  FunctionType type = fn.getFunctionType();
  if (!llvm::equal(type.getInputs(), getArgs().getTypes()) ||
      !llvm::equal(type.getResults(), getResultTypes()))
    return emitOpError("type does not match the callee's ") << type;
  auto backend = fn->getAttrOfType<StringAttr>(EtllmDialect::kBackendAttrName);
  if (!backend || backend.getValue() != getBackend())
    return emitOpError("callee ")
           << getCalleeAttr() << " is not marked "
           << EtllmDialect::kBackendAttrName << " = \"" << getBackend() << "\"";
  return success();
}

#define GET_OP_CLASSES
#include "etllm/Dialect/Etllm/EtllmOps.cpp.inc"
