//===- AtenImporter.cpp - ATen graph to exported-graph IR -----------------===//
//
// Maps the nodes of a traced ATen graph (JSON, docs/Python.md) to level-A
// etllm ops. Result types come from the trace (the shapes torch computed,
// with the sequence-length dimension dynamic) and every op is verified as it
// is created, so a mapping that disagrees with the op's own type inference
// is an error naming the node, never a crash. The graph description comes
// from a file as far as this code is concerned: every field, index, rank and
// size is checked.
//
//===----------------------------------------------------------------------===//
#include "etllm/Import/AtenImporter.h"

#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Formats/Checkpoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::etllm;
using json = nlohmann::json;

namespace {

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxRank = 8;
/// Largest inline constant or parameter value (elements); bigger tensors
/// belong in the checkpoint.
constexpr int64_t kMaxInlineElements = 1 << 16;

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::make_error<llvm::StringError>(message,
                                             llvm::inconvertibleErrorCode());
}

/// A size in terms of the one dynamic size S: coef * S + off (coef 0: a
/// static size).
struct SymDim {
  int64_t coef = 0, off = 0;
  bool isStatic() const { return coef == 0; }
  bool operator==(const SymDim &o) const {
    return coef == o.coef && off == o.off;
  }
  std::string str() const {
    if (coef == 0)
      return std::to_string(off);
    std::string s = coef == 1 ? "S" : std::to_string(coef) + "*S";
    if (off > 0)
      s += "+" + std::to_string(off);
    else if (off < 0)
      s += std::to_string(off);
    return s;
  }
};
using SymShape = SmallVector<SymDim, 4>;

std::string shapeStr(ArrayRef<SymDim> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A Python number: a JSON number or boolean, or {"float": "inf" | "-inf" |
/// "nan"} (JSON has no infinities).
std::optional<double> asNumber(const json &j) {
  if (j.is_boolean())
    return j.get<bool>() ? 1.0 : 0.0;
  if (j.is_number())
    return j.get<double>();
  if (j.is_object() && j.size() == 1 && j.contains("float") &&
      j["float"].is_string()) {
    std::string s = j["float"].get<std::string>();
    if (s == "inf")
      return std::numeric_limits<double>::infinity();
    if (s == "-inf")
      return -std::numeric_limits<double>::infinity();
    if (s == "nan")
      return std::numeric_limits<double>::quiet_NaN();
  }
  return std::nullopt;
}
bool isFloatNumber(const json &j) {
  return j.is_number_float() || (j.is_object() && j.contains("float"));
}

/// A tensor declaration: a forward input, a parameter, a mutable buffer or
/// an inline constant.
struct Decl {
  enum Kind { Input, Parameter, Buffer, Constant } kind;
  RankedTensorType type;
  SymShape shape;
  Value input;        // Input: the block argument
  ElementsAttr value; // Constant (and inline parameters)
};

class Importer {
public:
  Importer(MLIRContext *ctx, std::string source)
      : ctx(ctx), b(ctx), loc(UnknownLoc::get(ctx)), source(std::move(source)) {
  }

  llvm::Expected<OwningOpRef<ModuleOp>> run(const json &root);

  using Handler = std::function<LogicalResult(Importer &, const json &)>;
  static const llvm::StringMap<Handler> &handlers();

  //===--------------------------------------------------------------------===//
  // State
  //===--------------------------------------------------------------------===//
  MLIRContext *ctx;
  OpBuilder b;
  Location loc;
  std::string source;
  OwningOpRef<ModuleOp> module;
  func::FuncOp fn;
  std::map<std::string, Decl> decls;
  /// Results of each imported node (null entries: outputs not mapped).
  std::map<std::string, SmallVector<Value, 1>> nodeValues;
  /// The trace's shape of every value that has one.
  llvm::DenseMap<Value, SymShape> symShapes;
  /// Nodes that failed or depend on one that failed (no second message).
  std::set<std::string> poisoned;
  /// target -> module paths where it is not supported.
  std::map<std::string, std::vector<std::string>> unsupported;
  /// Other errors, one per node, in graph order.
  std::vector<std::string> problems;
  /// The node being imported.
  const json *node = nullptr;
  std::string nodeName, target, modulePath;
  std::string diagText;
  bool poisonedUse = false;

  //===--------------------------------------------------------------------===//
  // Errors
  //===--------------------------------------------------------------------===//
  /// A failure that converts to LogicalResult and to any FailureOr<T>.
  struct Failed {
    operator LogicalResult() const { return failure(); }
    template <typename T> operator FailureOr<T>() const { return failure(); }
  };
  /// Records a problem with the current node and fails.
  Failed fail(const llvm::Twine &message) {
    if (diagText.empty())
      diagText = message.str();
    return {};
  }
  std::string where() const {
    return modulePath.empty() ? std::string("(top level)") : modulePath;
  }

  //===--------------------------------------------------------------------===//
  // Types
  //===--------------------------------------------------------------------===//
  FailureOr<Type> elementType(const json &j, const std::string &what) {
    if (!j.is_string())
      return fail(what + ": dtype is not a string");
    std::string s = j.get<std::string>();
    if (s == "float32")
      return Type(b.getF32Type());
    if (s == "float16")
      return Type(b.getF16Type());
    if (s == "bfloat16")
      return Type(b.getBF16Type());
    if (s == "int64")
      return Type(b.getI64Type());
    if (s == "int32")
      return Type(b.getI32Type());
    if (s == "int8")
      return Type(b.getI8Type());
    if (s == "bool")
      return Type(b.getI1Type());
    return fail(what + ": dtype '" + s +
                "' is not supported (float32, float16, bfloat16, int64, "
                "int32, int8, bool)");
  }

  FailureOr<SymDim> symDim(const json &j, const std::string &what) {
    if (j.is_number_integer())
      return SymDim{0, j.get<int64_t>()};
    if (j.is_object() && j.size() == 1 && j.contains("sym")) {
      const json &s = j["sym"];
      if (s.is_array() && s.size() == 2 && s[0].is_number_integer() &&
          s[1].is_number_integer()) {
        int64_t c = s[0].get<int64_t>(), o = s[1].get<int64_t>();
        if (std::abs(c) <= (int64_t(1) << 32) &&
            std::abs(o) <= (int64_t(1) << 40))
          return SymDim{c, o};
      }
    }
    return fail(what + " is not an integer or {\"sym\": [coef, offset]}");
  }

  /// A shape from the trace; dimensions must be static or exactly S + c
  /// (c <= 0): anything else would outgrow the planned bound.
  FailureOr<SymShape> shapeOf(const json &j, const std::string &what) {
    if (!j.is_array())
      return fail(what + ": shape is not an array");
    if (j.size() > size_t(kMaxRank))
      return fail(what + ": rank " + std::to_string(j.size()) +
                  " exceeds the limit of " + std::to_string(kMaxRank));
    SymShape s;
    for (const json &d : j) {
      FailureOr<SymDim> sd = symDim(d, what + ": a dimension");
      if (failed(sd))
        return failure();
      if (sd->isStatic() && (sd->off < 0 || sd->off > (int64_t(1) << 40)))
        return fail(what + ": invalid dimension " + std::to_string(sd->off));
      if (!sd->isStatic() && (sd->coef != 1 || sd->off > 0))
        return fail(what + ": dimension " + sd->str() +
                    " grows faster than the sequence length S; only S - c "
                    "and static sizes fit the planned bound");
      s.push_back(*sd);
    }
    return s;
  }

  RankedTensorType tensorType(ArrayRef<SymDim> shape, Type et) {
    SmallVector<int64_t> dims;
    for (const SymDim &d : shape)
      dims.push_back(d.isStatic() ? d.off : ShapedType::kDynamic);
    return RankedTensorType::get(dims, et);
  }

  /// The type of result `i` of the current node, from its metadata.
  FailureOr<RankedTensorType> resultType(size_t i = 0) {
    const json *meta = node->contains("meta") ? &(*node)["meta"] : nullptr;
    if (!meta || !meta->is_array() || i >= meta->size() || (*meta)[i].is_null())
      return fail("no shape recorded for result " + std::to_string(i));
    const json &m = (*meta)[i];
    if (!m.is_object() || !m.contains("shape") || !m.contains("dtype"))
      return fail("result " + std::to_string(i) +
                  ": metadata needs 'shape' and 'dtype'");
    FailureOr<SymShape> s = shapeOf(m["shape"], "result " + std::to_string(i));
    if (failed(s))
      return failure();
    FailureOr<Type> et = elementType(m["dtype"], "result " + std::to_string(i));
    if (failed(et))
      return failure();
    lastResultShape = *s;
    return tensorType(*s, *et);
  }
  SymShape lastResultShape;

  //===--------------------------------------------------------------------===//
  // Arguments
  //===--------------------------------------------------------------------===//
  const json *arg(const char *name) {
    const json &args = (*node)["args"];
    auto it = args.find(name);
    return it == args.end() ? nullptr : &*it;
  }
  static bool isRef(const json &j) {
    return j.is_object() && j.size() == 1 &&
           (j.contains("node") || j.contains("tensor"));
  }
  bool isNone(const char *name) {
    const json *a = arg(name);
    return !a || a->is_null();
  }

  /// The value a reference names (emitting parameter/buffer reads at the
  /// use, in the current module).
  FailureOr<Value> valueOf(const json &ref, const std::string &what) {
    if (!isRef(ref))
      return fail(what + " is not a tensor");
    if (ref.contains("node")) {
      if (!ref["node"].is_string())
        return fail(what + ": node reference is not a string");
      std::string n = ref["node"].get<std::string>();
      if (poisoned.count(n)) {
        poisonedUse = true;
        return failure();
      }
      auto it = nodeValues.find(n);
      if (it == nodeValues.end())
        return fail(what + " refers to node '" + n +
                    "', which is not defined before it");
      if (it->second.size() != 1 || !it->second[0])
        return fail(what + " refers to node '" + n +
                    "', which does not produce one tensor");
      return it->second[0];
    }
    if (!ref["tensor"].is_string())
      return fail(what + ": tensor reference is not a string");
    std::string n = ref["tensor"].get<std::string>();
    auto it = decls.find(n);
    if (it == decls.end())
      return fail(what + " refers to undeclared tensor '" + n + "'");
    Decl &d = it->second;
    Value v;
    switch (d.kind) {
    case Decl::Input:
      v = d.input;
      break;
    case Decl::Parameter:
      v = emit<ParameterGetOp>(d.type, FlatSymbolRefAttr::get(ctx, n));
      break;
    case Decl::Buffer:
      v = emit<BufferReadOp>(d.type, FlatSymbolRefAttr::get(ctx, n));
      break;
    case Decl::Constant:
      v = emit<ConstantOp>(d.type, d.value);
      break;
    }
    if (!v)
      return failure();
    symShapes[v] = d.shape;
    return v;
  }

  /// The element type of the tensor a reference names (null if none),
  /// without emitting anything.
  Type elementTypeOfRef(const json &ref) {
    if (!isRef(ref))
      return Type();
    if (ref.contains("node") && ref["node"].is_string()) {
      auto it = nodeValues.find(ref["node"].get<std::string>());
      if (it != nodeValues.end() && it->second.size() == 1 && it->second[0])
        return typeOf(it->second[0]).getElementType();
      return Type();
    }
    if (ref["tensor"].is_string()) {
      auto it = decls.find(ref["tensor"].get<std::string>());
      if (it != decls.end())
        return it->second.type.getElementType();
    }
    return Type();
  }

  FailureOr<Value> tensorArg(const char *name) {
    const json *a = arg(name);
    if (!a)
      return fail(std::string("argument '") + name + "' is missing");
    return valueOf(*a, std::string("argument '") + name + "'");
  }
  FailureOr<SmallVector<Value>> tensorListArg(const char *name,
                                              bool allowNone = false) {
    const json *a = arg(name);
    if (!a || !a->is_array())
      return fail(std::string("argument '") + name + "' is not a list");
    SmallVector<Value> out;
    for (const json &e : *a) {
      if (allowNone && e.is_null()) {
        out.push_back(Value());
        continue;
      }
      FailureOr<Value> v =
          valueOf(e, std::string("an element of argument '") + name + "'");
      if (failed(v))
        return failure();
      out.push_back(*v);
    }
    return out;
  }
  FailureOr<SymDim> symArg(const char *name) {
    const json *a = arg(name);
    if (!a)
      return fail(std::string("argument '") + name + "' is missing");
    return symDim(*a, std::string("argument '") + name + "'");
  }
  FailureOr<int64_t> intArg(const char *name) {
    FailureOr<SymDim> d = symArg(name);
    if (failed(d))
      return failure();
    if (!d->isStatic())
      return fail(std::string("argument '") + name + "' is " + d->str() +
                  ": it depends on the sequence length S, which this op "
                  "does not support");
    return d->off;
  }
  FailureOr<SmallVector<SymDim>> symListArg(const char *name) {
    const json *a = arg(name);
    if (!a || !a->is_array())
      return fail(std::string("argument '") + name +
                  "' is not a list of integers");
    if (a->size() > size_t(kMaxRank))
      return fail(std::string("argument '") + name + "' has more than " +
                  std::to_string(kMaxRank) + " entries");
    SmallVector<SymDim> out;
    for (const json &e : *a) {
      FailureOr<SymDim> d =
          symDim(e, std::string("an entry of argument '") + name + "'");
      if (failed(d))
        return failure();
      out.push_back(*d);
    }
    return out;
  }
  FailureOr<SmallVector<int64_t>> intListArg(const char *name) {
    FailureOr<SmallVector<SymDim>> l = symListArg(name);
    if (failed(l))
      return failure();
    SmallVector<int64_t> out;
    for (const SymDim &d : *l) {
      if (!d.isStatic())
        return fail(std::string("argument '") + name + "' has the entry " +
                    d.str() +
                    ", which depends on the sequence length S; this op needs "
                    "static sizes (derive the tensor from an input instead)");
      out.push_back(d.off);
    }
    return out;
  }
  /// A dims list (int or list of ints; null or empty: all).
  FailureOr<SmallVector<int64_t>> dimsArg(const char *name, int64_t rank) {
    const json *a = arg(name);
    SmallVector<int64_t> out;
    if (!a || a->is_null() || (a->is_array() && a->empty())) {
      for (int64_t i = 0; i < rank; ++i)
        out.push_back(i);
      return out;
    }
    if (a->is_number_integer())
      out.push_back(a->get<int64_t>());
    else {
      FailureOr<SmallVector<int64_t>> l = intListArg(name);
      if (failed(l))
        return failure();
      out = *l;
    }
    for (int64_t &d : out) {
      FailureOr<int64_t> n = normDim(d, rank);
      if (failed(n))
        return failure();
      d = *n;
    }
    return out;
  }
  FailureOr<double> numberArg(const char *name) {
    const json *a = arg(name);
    if (a)
      if (std::optional<double> v = asNumber(*a))
        return *v;
    return fail(std::string("argument '") + name + "' is not a number");
  }
  bool boolArg(const char *name, bool dflt) {
    const json *a = arg(name);
    return a && a->is_boolean() ? a->get<bool>() : dflt;
  }
  std::string stringArg(const char *name, const std::string &dflt) {
    const json *a = arg(name);
    return a && a->is_string() ? a->get<std::string>() : dflt;
  }
  /// An optional dtype argument ({"dtype": "float32"} or null).
  FailureOr<Type> dtypeArg(const char *name) {
    const json *a = arg(name);
    if (!a || a->is_null())
      return Type();
    if (!a->is_object() || !a->contains("dtype"))
      return fail(std::string("argument '") + name + "' is not a dtype");
    return elementType((*a)["dtype"], std::string("argument '") + name + "'");
  }

  /// A dimension argument normalized for `rank` (`dflt` when it is absent
  /// or None).
  FailureOr<int64_t> dimArg(const char *name, int64_t rank,
                            std::optional<int64_t> dflt = std::nullopt) {
    if (isNone(name)) {
      if (!dflt)
        return fail(std::string("argument '") + name + "' is missing");
      return normDim(*dflt, rank);
    }
    FailureOr<int64_t> d = intArg(name);
    if (failed(d))
      return failure();
    return normDim(*d, rank);
  }

  FailureOr<int64_t> normDim(int64_t d, int64_t rank) {
    int64_t r = std::max<int64_t>(rank, 1);
    if (d < -r || d >= r)
      return fail("dimension " + std::to_string(d) +
                  " is out of range for rank " + std::to_string(rank));
    return d < 0 ? d + r : d;
  }

  //===--------------------------------------------------------------------===//
  // Emission
  //===--------------------------------------------------------------------===//
  /// Creates an op (result type given), tags it with the module path and
  /// verifies it; null (with the verifier's message recorded) on failure.
  template <typename OpTy, typename... Args> Value emit(Args &&...args) {
    Operation *op = b.create<OpTy>(loc, std::forward<Args>(args)...);
    if (!modulePath.empty())
      setModulePath(op, modulePath);
    std::string diag;
    {
      ScopedDiagnosticHandler h(ctx, [&](Diagnostic &d) {
        if (diag.empty())
          diag = d.str();
        return success();
      });
      if (failed(mlir::verify(op, /*verifyRecursively=*/false))) {
        op->erase();
        fail("'" + OpTy::getOperationName().str() +
             "' rejects the mapping: " + diag);
        return Value();
      }
    }
    return op->getNumResults() ? op->getResult(0) : Value();
  }

  /// The trace's shape of `v`, or its static type's when it has none.
  SymShape symShapeOf(Value v) {
    auto it = symShapes.find(v);
    if (it != symShapes.end() &&
        int64_t(it->second.size()) == typeOf(v).getRank())
      return it->second;
    SymShape s;
    for (int64_t d : typeOf(v).getShape())
      s.push_back(ShapedType::isDynamic(d) ? SymDim{1, 0} : SymDim{0, d});
    return s;
  }

  Value convert(Value v, Type et) {
    if (!v || typeOf(v).getElementType() == et)
      return v;
    Value c = emit<ConvertOp>(typeOf(v).clone(et), v);
    if (c)
      symShapes[c] = symShapeOf(v);
    return c;
  }

  /// A rank-0 constant of element type `et`.
  Value scalar(double v, Type et) {
    auto type = RankedTensorType::get({}, et);
    Attribute a;
    if (isa<FloatType>(et))
      a = FloatAttr::get(et, v);
    else if (et.isInteger(1))
      a = IntegerAttr::get(et, v != 0);
    else {
      if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 9.0e18) {
        fail("the scalar " + std::to_string(v) +
             " does not fit the integer tensor it combines with");
        return Value();
      }
      a = IntegerAttr::get(et, int64_t(v));
    }
    return emit<ConstantOp>(type, DenseElementsAttr::get(type, a));
  }

  /// An argument that is a tensor or a Python number, as a tensor of `et`.
  FailureOr<Value> operand(const char *name, Type et) {
    const json *a = arg(name);
    if (!a)
      return fail(std::string("argument '") + name + "' is missing");
    if (std::optional<double> n = asNumber(*a)) {
      Value s = scalar(*n, et);
      if (!s)
        return failure();
      return s;
    }
    FailureOr<Value> v = tensorArg(name);
    if (failed(v))
      return failure();
    Value c = convert(*v, et);
    if (!c)
      return failure();
    return c;
  }

  LogicalResult setResult(Value v) {
    if (!v)
      return failure();
    nodeValues[nodeName] = {v};
    if (!lastResultShape.empty() || typeOf(v).getRank() == 0)
      symShapes[v] = lastResultShape;
    return success();
  }
  LogicalResult setResults(SmallVector<Value, 1> vs) {
    nodeValues[nodeName] = std::move(vs);
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Sizes with S
  //===--------------------------------------------------------------------===//
  /// A view's target shape as reshape wants it: static sizes, and one -1 for
  /// the size that depends on S (or was -1 in the trace).
  FailureOr<SmallVector<int64_t>> reshapeTarget(ArrayRef<SymDim> size) {
    SmallVector<int64_t> out;
    int inferred = 0;
    for (const SymDim &d : size) {
      if (d.isStatic() && d.off == -1) {
        out.push_back(-1);
        ++inferred;
      } else if (d.isStatic()) {
        if (d.off < 0)
          return fail("view size " + shapeStr(size) + " has a negative entry");
        out.push_back(d.off);
      } else {
        out.push_back(-1);
        ++inferred;
      }
    }
    if (inferred > 1)
      return fail("view size " + shapeStr(size) +
                  " has more than one size that depends on the sequence "
                  "length S");
    return out;
  }

  /// `v` broadcast (etllm.expand) to `want`. A size that follows S must
  /// already be `v`'s: expand cannot make a dynamic size out of a static
  /// one.
  Value broadcastTo(Value v, ArrayRef<SymDim> want, const std::string &what) {
    SymShape in = symShapeOf(v);
    if (ArrayRef<SymDim>(in) == want)
      return v;
    int64_t lead = int64_t(want.size()) - int64_t(in.size());
    if (lead < 0) {
      fail(what + ": broadcasting to fewer dimensions");
      return Value();
    }
    SmallVector<int64_t> target;
    for (auto [i, d] : llvm::enumerate(want)) {
      int64_t j = int64_t(i) - lead;
      if (d.isStatic()) {
        target.push_back(d.off);
      } else if (j >= 0 && in[j] == d) {
        target.push_back(-1);
      } else {
        fail(what + ": broadcasting to the size " + d.str() +
             ", which depends on the sequence length S, from a dimension of "
             "size " +
             (j >= 0 ? in[j].str() : std::string("(new)")) +
             ": broadcast a tensor that already has that size (e.g. "
             "expand_as)");
        return Value();
      }
    }
    Value e = emit<ExpandOp>(tensorType(want, typeOf(v).getElementType()), v,
                             b.getDenseI64ArrayAttr(target));
    if (e)
      symShapes[e] = SymShape(want.begin(), want.end());
    return e;
  }

  /// A reshape of `v` to the current node's result shape.
  Value reshapeTo(Value v, RankedTensorType type, ArrayRef<SymDim> shape) {
    SmallVector<int64_t> target;
    bool dyn = false;
    for (const SymDim &d : shape) {
      if (!d.isStatic()) {
        if (dyn) {
          fail("shape " + shapeStr(shape) +
               " has more than one size that depends on S");
          return Value();
        }
        dyn = true;
        target.push_back(-1);
      } else {
        target.push_back(d.off);
      }
    }
    if (typeOf(v).getShape() == type.getShape() && !dyn)
      return v;
    return emit<ReshapeOp>(type.clone(typeOf(v).getElementType()), v,
                           b.getDenseI64ArrayAttr(target));
  }

  LogicalResult importNode(const json &n);
  LogicalResult declare(const json &t,
                        const ::etllm::formats::Checkpoint *ckpt);
};

//===----------------------------------------------------------------------===//
// Handlers
//===----------------------------------------------------------------------===//

using H = Importer::Handler;

template <typename OpTy> H unary() {
  return [](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    FailureOr<Value> x = I.operand("self", rt->getElementType());
    if (failed(x))
      return failure();
    return I.setResult(I.emit<OpTy>(*rt, *x));
  };
}

/// add/sub with alpha: lhs op alpha * rhs, in the result's element type.
template <typename OpTy>
H binary(const char *lhs = "self", const char *rhs = "other",
         bool reversed = false) {
  return [=](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    Type et = rt->getElementType();
    FailureOr<Value> a = I.operand(lhs, et);
    if (failed(a))
      return failure();
    FailureOr<Value> c = I.operand(rhs, et);
    if (failed(c))
      return failure();
    Value x = *a, y = *c;
    if (const json *alpha = I.arg("alpha"); alpha && !alpha->is_null()) {
      FailureOr<double> al = I.numberArg("alpha");
      if (failed(al))
        return failure();
      if (*al != 1.0) {
        Value s = I.scalar(*al, et);
        if (!s)
          return failure();
        // alpha scales `other` (for rsub: `self`, the subtrahend).
        Value &scaled = reversed ? x : y;
        scaled = I.emit<MulOp>(typeOf(scaled), scaled, s);
        if (!scaled)
          return failure();
      }
    }
    if (reversed)
      std::swap(x, y);
    return I.setResult(I.emit<OpTy>(*rt, x, y));
  };
}

/// The element type both operands of a comparison are converted to.
Type promoteForCompare(Importer &I, const json *a, const json *c) {
  auto typeOfArg = [&](const json *j) -> Type {
    return j ? I.elementTypeOfRef(*j) : Type();
  };
  Type ta = typeOfArg(a), tc = typeOfArg(c);
  bool scalarFloat = (a && isFloatNumber(*a)) || (c && isFloatNumber(*c));
  Type t = ta ? ta : tc;
  if (ta && tc && ta != tc) {
    if (isa<FloatType>(ta) != isa<FloatType>(tc))
      t = isa<FloatType>(ta) ? ta : tc;
    else
      t = isa<FloatType>(ta) ? Type(I.b.getF32Type()) : Type(I.b.getI64Type());
  }
  if (t && !isa<FloatType>(t) && scalarFloat)
    t = I.b.getF32Type();
  if (t && t.isInteger(1))
    t = I.b.getI64Type(); // booleans compare as integers
  return t;
}

template <typename OpTy> H compare() {
  return [](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    Type t = promoteForCompare(I, I.arg("self"), I.arg("other"));
    if (!t)
      return I.poisonedUse ? failure() : I.fail("comparison without a tensor");
    FailureOr<Value> a = I.operand("self", t);
    if (failed(a))
      return failure();
    FailureOr<Value> c = I.operand("other", t);
    if (failed(c))
      return failure();
    return I.setResult(I.emit<OpTy>(*rt, *a, *c));
  };
}

template <typename OpTy> H logical() {
  return [](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    if (!rt->getElementType().isInteger(1))
      return I.fail("only boolean logical/bitwise ops are supported");
    FailureOr<Value> a = I.operand("self", rt->getElementType());
    if (failed(a))
      return failure();
    FailureOr<Value> c = I.operand("other", rt->getElementType());
    if (failed(c))
      return failure();
    return I.setResult(I.emit<OpTy>(*rt, *a, *c));
  };
}

/// Ops that return their input (aliases, copies, eval-mode no-ops).
H identity(const char *input = "self") {
  return [=](Importer &I, const json &) -> LogicalResult {
    FailureOr<Value> x = I.tensorArg(input);
    if (failed(x))
      return failure();
    FailureOr<RankedTensorType> rt = I.resultType();
    if (succeeded(rt) && rt->getElementType() != typeOf(*x).getElementType())
      return I.fail("changes the element type");
    I.diagText.clear();
    I.nodeValues[I.nodeName] = {*x};
    return success();
  };
}

template <typename OpTy> H reduce() {
  return [](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    FailureOr<Value> x = I.operand("self", rt->getElementType());
    if (failed(x))
      return failure();
    FailureOr<SmallVector<int64_t>> dims =
        I.dimsArg("dim", typeOf(*x).getRank());
    if (failed(dims))
      return failure();
    bool keep = I.boolArg("keepdim", false);
    return I.setResult(I.emit<OpTy>(*rt, *x, I.b.getDenseI64ArrayAttr(*dims),
                                    keep ? I.b.getUnitAttr() : UnitAttr()));
  };
}

/// view, _unsafe_view, _reshape_alias, reshape.
LogicalResult viewOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<SymDim>> size = I.symListArg("size");
  if (failed(size))
    return failure();
  FailureOr<SmallVector<int64_t>> target = I.reshapeTarget(*size);
  if (failed(target))
    return failure();
  return I.setResult(
      I.emit<ReshapeOp>(*rt, *x, I.b.getDenseI64ArrayAttr(*target)));
}

LogicalResult expandOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<SymDim>> size = I.symListArg("size");
  if (failed(size))
    return failure();
  // -1 keeps the input's size.
  SymShape in = I.symShapeOf(*x), want(size->begin(), size->end());
  int64_t lead = int64_t(want.size()) - int64_t(in.size());
  for (auto [i, d] : llvm::enumerate(want))
    if (d.isStatic() && d.off == -1) {
      if (int64_t(i) < lead)
        return I.fail("expand with -1 for a new dimension");
      d = in[i - lead];
    }
  return I.setResult(I.broadcastTo(*x, want, "expand"));
}

LogicalResult sliceOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  FailureOr<int64_t> dim = I.dimArg("dim", typeOf(*x).getRank(), 0);
  if (failed(dim))
    return failure();
  int64_t start = 0, end = kEnd, step = 1;
  if (!I.isNone("start")) {
    FailureOr<int64_t> s = I.intArg("start");
    if (failed(s))
      return failure();
    start = *s;
  }
  if (!I.isNone("end")) {
    FailureOr<SymDim> e = I.symArg("end");
    if (failed(e))
      return failure();
    if (e->isStatic())
      end = e->off;
    else if (I.symShapeOf(*x)[*dim] == *e)
      end = kEnd; // up to the (dynamic) end
    else
      return I.fail("slice end " + e->str() +
                    " depends on the sequence length S but is not the size "
                    "of the sliced dimension");
  }
  if (!I.isNone("step")) {
    FailureOr<int64_t> s = I.intArg("step");
    if (failed(s))
      return failure();
    step = *s;
  }
  return I.setResult(I.emit<SliceOp>(*rt, *x, *dim, start, end, step));
}

LogicalResult selectOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  FailureOr<int64_t> dim = I.dimArg("dim", typeOf(*x).getRank());
  if (failed(dim))
    return failure();
  FailureOr<int64_t> index = I.intArg("index");
  if (failed(index))
    return failure();
  SmallVector<int64_t> s(typeOf(*x).getShape());
  s[*dim] = 1;
  Value sl =
      I.emit<SliceOp>(RankedTensorType::get(s, rt->getElementType()), *x, *dim,
                      *index, *index == -1 ? kEnd : *index + 1, int64_t(1));
  if (!sl)
    return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.emit<SqueezeOp>(*rt, sl, I.b.getI64IntegerAttr(*dim)));
}

LogicalResult transposeOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  int64_t d0 = 0, d1 = 1;
  if (I.arg("dim0")) {
    FailureOr<int64_t> a = I.intArg("dim0"), c = I.intArg("dim1");
    if (failed(a) || failed(c))
      return failure();
    FailureOr<int64_t> na = I.normDim(*a, rank), nc = I.normDim(*c, rank);
    if (failed(na) || failed(nc))
      return failure();
    d0 = *na;
    d1 = *nc;
  } else if (rank < 2) { // aten.t of a vector
    I.nodeValues[I.nodeName] = {*x};
    return success();
  }
  return I.setResult(I.emit<TransposeOp>(*rt, *x, I.b.getI64IntegerAttr(d0),
                                         I.b.getI64IntegerAttr(d1)));
}

LogicalResult permuteOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<int64_t>> dims =
      I.dimsArg("dims", typeOf(*x).getRank());
  if (failed(dims))
    return failure();
  return I.setResult(
      I.emit<PermuteOp>(*rt, *x, I.b.getDenseI64ArrayAttr(*dims)));
}

LogicalResult unsqueezeOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  FailureOr<int64_t> nd = I.dimArg("dim", typeOf(*x).getRank() + 1);
  if (failed(nd))
    return failure();
  return I.setResult(I.emit<UnsqueezeOp>(*rt, *x, I.b.getI64IntegerAttr(*nd)));
}

LogicalResult squeezeOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  SymShape in = I.symShapeOf(*x);
  SmallVector<int64_t> dims;
  if (I.arg("dim")) {
    FailureOr<SmallVector<int64_t>> d = I.dimsArg("dim", in.size());
    if (failed(d))
      return failure();
    for (int64_t k : *d)
      if (in[k] == SymDim{0, 1})
        dims.push_back(k); // squeezing a non-1 dimension is a no-op
  } else {
    for (auto [k, d] : llvm::enumerate(in))
      if (d == SymDim{0, 1})
        dims.push_back(k);
  }
  Value v = *x;
  SmallVector<int64_t> shape(typeOf(v).getShape());
  for (int64_t k : llvm::reverse(dims)) {
    shape.erase(shape.begin() + k);
    v = I.emit<SqueezeOp>(RankedTensorType::get(shape, rt->getElementType()), v,
                          I.b.getI64IntegerAttr(k));
    if (!v)
      return failure();
  }
  if (typeOf(v).getRank() != rt->getRank())
    return I.fail("squeeze result rank differs from the trace");
  I.lastResultShape = outShape;
  return I.setResult(v);
}

LogicalResult catOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<SmallVector<Value>> xs = I.tensorListArg("tensors");
  if (failed(xs))
    return failure();
  if (xs->empty())
    return I.fail("cat of no tensors");
  FailureOr<int64_t> nd = I.dimArg("dim", rt->getRank(), 0);
  if (failed(nd))
    return failure();
  SmallVector<Value> ins;
  for (Value x : *xs) {
    Value c = I.convert(x, rt->getElementType());
    if (!c)
      return failure();
    ins.push_back(c);
  }
  return I.setResult(I.emit<CatOp>(*rt, ins, I.b.getI64IntegerAttr(*nd)));
}

LogicalResult stackOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  FailureOr<SmallVector<Value>> xs = I.tensorListArg("tensors");
  if (failed(xs))
    return failure();
  if (xs->empty())
    return I.fail("stack of no tensors");
  FailureOr<int64_t> nd = I.dimArg("dim", rt->getRank(), 0);
  if (failed(nd))
    return failure();
  SmallVector<Value> ins;
  for (Value x : *xs) {
    Value c = I.convert(x, rt->getElementType());
    if (!c)
      return failure();
    SmallVector<int64_t> s(typeOf(c).getShape());
    s.insert(s.begin() + *nd, 1);
    Value u =
        I.emit<UnsqueezeOp>(RankedTensorType::get(s, rt->getElementType()), c,
                            I.b.getI64IntegerAttr(*nd));
    if (!u)
      return failure();
    ins.push_back(u);
  }
  I.lastResultShape = outShape;
  return I.setResult(I.emit<CatOp>(*rt, ins, I.b.getI64IntegerAttr(*nd)));
}

/// split.Tensor, split_with_sizes, unbind: a tuple of pieces.
LogicalResult splitOp(Importer &I, const json &) {
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  FailureOr<int64_t> nd = I.dimArg("dim", xt.getRank(), 0);
  if (failed(nd))
    return failure();
  int64_t size = xt.getDimSize(*nd);
  if (ShapedType::isDynamic(size))
    return I.fail("split along a dimension that depends on the sequence "
                  "length S");
  SmallVector<int64_t> sizes;
  bool unbind = I.target == "aten.unbind.int";
  constexpr int64_t kMaxPieces = 4096;
  if (unbind && size > kMaxPieces)
    return I.fail("unbind into more than " + std::to_string(kMaxPieces) +
                  " pieces");
  if (unbind) {
    sizes.assign(size, 1);
  } else if (I.arg("split_sizes")) {
    FailureOr<SmallVector<int64_t>> l = I.intListArg("split_sizes");
    if (failed(l))
      return failure();
    sizes = *l;
  } else {
    FailureOr<int64_t> each = I.intArg("split_size");
    if (failed(each))
      return failure();
    if (*each <= 0)
      return I.fail("split size must be positive");
    if (size / *each >= kMaxPieces)
      return I.fail("split into more than " + std::to_string(kMaxPieces) +
                    " pieces");
    for (int64_t at = 0; at < size; at += *each)
      sizes.push_back(std::min(*each, size - at));
  }
  int64_t total = 0;
  SmallVector<Type> types;
  for (int64_t s : sizes) {
    if (s < 0)
      return I.fail("negative split size");
    total += s;
    SmallVector<int64_t> shape(xt.getShape());
    shape[*nd] = s;
    types.push_back(RankedTensorType::get(shape, xt.getElementType()));
  }
  if (total != size || sizes.empty() || int64_t(sizes.size()) > kMaxPieces)
    return I.fail("split sizes do not add up to the dimension's " +
                  std::to_string(size));
  Operation *op =
      I.b.create<SplitOp>(I.loc, types, *x, I.b.getI64IntegerAttr(*nd),
                          I.b.getDenseI64ArrayAttr(sizes));
  if (!I.modulePath.empty())
    setModulePath(op, I.modulePath);
  if (failed(mlir::verify(op, false))) {
    op->erase();
    return I.fail("'etllm.split' rejects the mapping");
  }
  SmallVector<Value, 1> results(op->getResults().begin(),
                                op->getResults().end());
  if (unbind)
    for (Value &r : results) {
      SmallVector<int64_t> shape(typeOf(r).getShape());
      shape.erase(shape.begin() + *nd);
      r = I.emit<SqueezeOp>(RankedTensorType::get(shape, xt.getElementType()),
                            r, I.b.getI64IntegerAttr(*nd));
      if (!r)
        return failure();
    }
  return I.setResults(std::move(results));
}

LogicalResult getitemOp(Importer &I, const json &) {
  const json *self = I.arg("self");
  if (!self || !self->is_object() || !self->contains("node") ||
      !(*self)["node"].is_string())
    return I.fail("getitem of something that is not a node");
  std::string src = (*self)["node"].get<std::string>();
  if (I.poisoned.count(src)) {
    I.poisonedUse = true;
    return failure();
  }
  auto it = I.nodeValues.find(src);
  if (it == I.nodeValues.end())
    return I.fail("getitem of node '" + src + "', which is not defined before");
  FailureOr<int64_t> idx = I.intArg("index");
  if (failed(idx))
    return failure();
  if (*idx < 0 || *idx >= int64_t(it->second.size()))
    return I.fail("getitem index " + std::to_string(*idx) + " out of range");
  Value v = it->second[*idx];
  if (!v)
    return I.fail("output " + std::to_string(*idx) + " of node '" + src +
                  "' is not supported (only its first output is)");
  FailureOr<RankedTensorType> rt = I.resultType();
  if (succeeded(rt))
    I.symShapes[v] = I.lastResultShape;
  I.diagText.clear();
  I.nodeValues[I.nodeName] = {v};
  return success();
}

LogicalResult toCopyOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  if (typeOf(*x).getElementType() == rt->getElementType()) {
    I.nodeValues[I.nodeName] = {*x};
    return success();
  }
  return I.setResult(I.emit<ConvertOp>(*rt, *x));
}

/// aten.copy (functional copy_): `src` broadcast into `self`'s shape and
/// dtype.
LogicalResult copyOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  FailureOr<Value> dst = I.tensorArg("self");
  if (failed(dst))
    return failure();
  FailureOr<Value> src = I.tensorArg("src");
  if (failed(src))
    return failure();
  Value v = I.convert(*src, rt->getElementType());
  if (!v)
    return failure();
  v = I.broadcastTo(v, outShape, "copy");
  I.lastResultShape = outShape;
  return I.setResult(v);
}

LogicalResult mmOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> a = I.operand("self", rt->getElementType());
  if (failed(a))
    return failure();
  FailureOr<Value> c =
      I.operand(I.arg("mat2") ? "mat2" : "other", rt->getElementType());
  if (failed(c))
    return failure();
  if (typeOf(*a).getRank() < 2 || typeOf(*c).getRank() < 2)
    return I.fail("matmul of a vector (rank 1) is not supported");
  return I.setResult(I.emit<MatmulOp>(*rt, *a, *c));
}

/// addmm(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b).
LogicalResult addmmOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  Type et = rt->getElementType();
  FailureOr<Value> bias = I.operand("self", et);
  FailureOr<Value> a = I.operand("mat1", et);
  FailureOr<Value> c = I.operand("mat2", et);
  if (failed(bias) || failed(a) || failed(c))
    return failure();
  FailureOr<double> beta =
      I.isNone("beta") ? FailureOr<double>(1.0) : I.numberArg("beta");
  FailureOr<double> alpha =
      I.isNone("alpha") ? FailureOr<double>(1.0) : I.numberArg("alpha");
  if (failed(beta) || failed(alpha))
    return failure();
  Value m = I.emit<MatmulOp>(*rt, *a, *c);
  if (!m)
    return failure();
  Value bv = *bias;
  if (*alpha != 1.0)
    if (!(m = I.emit<MulOp>(*rt, m, I.scalar(*alpha, et))))
      return failure();
  if (*beta != 1.0)
    if (!(bv = I.emit<MulOp>(typeOf(bv), bv, I.scalar(*beta, et))))
      return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.emit<AddOp>(*rt, m, bv));
}

LogicalResult linearOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  Type et = rt->getElementType();
  FailureOr<Value> x = I.operand("input", et);
  FailureOr<Value> w = I.operand("weight", et);
  if (failed(x) || failed(w))
    return failure();
  Value bias;
  if (!I.isNone("bias")) {
    FailureOr<Value> bv = I.operand("bias", et);
    if (failed(bv))
      return failure();
    bias = *bv;
  }
  return I.setResult(I.emit<LinearOp>(*rt, *x, *w, bias));
}

LogicalResult embeddingOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> w = I.tensorArg("weight");
  FailureOr<Value> idx = I.tensorArg("indices");
  if (failed(w) || failed(idx))
    return failure();
  return I.setResult(I.emit<EmbeddingOp>(*rt, *w, *idx));
}

LogicalResult softmaxOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  FailureOr<int64_t> d = I.intArg("dim");
  if (failed(d))
    return failure();
  Value s = I.emit<SoftmaxOp>(typeOf(*x), *x, I.b.getI64IntegerAttr(*d));
  if (!s)
    return failure();
  if (I.target == "aten._log_softmax.default")
    s = I.emit<LogOp>(typeOf(s), s);
  I.lastResultShape = outShape;
  return I.setResult(I.convert(s, rt->getElementType()));
}

LogicalResult geluOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.operand("self", rt->getElementType());
  if (failed(x))
    return failure();
  std::string approx = I.stringArg("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return I.fail("gelu approximate='" + approx + "' is not supported");
  return I.setResult(I.emit<GeluOp>(
      *rt, *x,
      GeluApproximationAttr::get(I.ctx, approx == "tanh"
                                            ? GeluApproximation::tanh
                                            : GeluApproximation::none)));
}

LogicalResult clampOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  Type et = rt->getElementType();
  FailureOr<Value> x = I.operand("self", et);
  if (failed(x))
    return failure();
  Value v = *x;
  bool isMin = I.target == "aten.clamp_min.default",
       isMax = I.target == "aten.clamp_max.default";
  const char *lo = isMin ? "min" : isMax ? nullptr : "min";
  const char *hi = isMax ? "max" : isMin ? nullptr : "max";
  if (lo && !I.isNone(lo)) {
    FailureOr<Value> l = I.operand(lo, et);
    if (failed(l) || !(v = I.emit<MaximumOp>(*rt, v, *l)))
      return failure();
  }
  if (hi && !I.isNone(hi)) {
    FailureOr<Value> h = I.operand(hi, et);
    if (failed(h) || !(v = I.emit<MinimumOp>(*rt, v, *h)))
      return failure();
  }
  return I.setResult(v);
}

LogicalResult reciprocalOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.operand("self", rt->getElementType());
  if (failed(x))
    return failure();
  Value one = I.scalar(1.0, rt->getElementType());
  if (!one)
    return failure();
  return I.setResult(I.emit<DivOp>(*rt, one, *x));
}

LogicalResult whereOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  Type et = rt->getElementType();
  FailureOr<Value> c = I.tensorArg("condition");
  if (failed(c))
    return failure();
  FailureOr<Value> a = I.operand("self", et);
  FailureOr<Value> o = I.operand("other", et);
  if (failed(a) || failed(o))
    return failure();
  if (!typeOf(*c).getElementType().isInteger(1))
    return I.fail("where with a non-boolean condition");
  return I.setResult(I.emit<WhereOp>(*rt, *c, *a, *o));
}

LogicalResult maskedFillOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  Type et = rt->getElementType();
  FailureOr<Value> x = I.operand("self", et);
  FailureOr<Value> m = I.tensorArg("mask");
  if (failed(x) || failed(m))
    return failure();
  const json *value = I.arg("value");
  if (value && asNumber(*value)) {
    FailureOr<double> v = I.numberArg("value");
    if (failed(v))
      return failure();
    return I.setResult(
        I.emit<MaskedFillOp>(*rt, *x, *m, I.b.getF64FloatAttr(*v)));
  }
  FailureOr<Value> v = I.operand("value", et);
  if (failed(v))
    return failure();
  return I.setResult(I.emit<WhereOp>(*rt, *m, *v, *x));
}

LogicalResult arangeOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  int64_t start = 0, step = 1;
  if (I.arg("start")) {
    FailureOr<int64_t> s = I.intArg("start");
    if (failed(s))
      return failure();
    start = *s;
  }
  FailureOr<int64_t> end = I.intArg("end");
  if (failed(end))
    return failure();
  if (I.arg("step") && !I.isNone("step")) {
    FailureOr<int64_t> s = I.intArg("step");
    if (failed(s))
      return failure();
    step = *s;
  }
  return I.setResult(I.emit<ArangeOp>(*rt, I.b.getI64IntegerAttr(start),
                                      I.b.getI64IntegerAttr(*end),
                                      I.b.getI64IntegerAttr(step)));
}

/// full, zeros, ones, new_zeros, new_ones, new_full, empty, new_empty.
LogicalResult fullOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  if (!rt->hasStaticShape())
    return I.fail("creates a tensor whose size depends on the sequence "
                  "length S; derive it from an input instead (e.g. "
                  "zeros_like, full_like)");
  FailureOr<SmallVector<int64_t>> size = I.intListArg("size");
  if (failed(size))
    return failure();
  double value = 0;
  StringRef t(I.target);
  if (t.contains("ones"))
    value = 1;
  else if (t.contains("full")) {
    FailureOr<double> v = I.numberArg("fill_value");
    if (failed(v))
      return failure();
    value = *v;
  }
  return I.setResult(I.emit<FullOp>(*rt, I.b.getF64FloatAttr(value)));
}

/// zeros_like, ones_like, full_like, empty_like.
LogicalResult fullLikeOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  double value = 0;
  StringRef t(I.target);
  if (t.contains("ones"))
    value = 1;
  else if (t.contains("full")) {
    FailureOr<double> v = I.numberArg("fill_value");
    if (failed(v))
      return failure();
    value = *v;
  }
  return I.setResult(I.emit<FullLikeOp>(*rt, *x, I.b.getF64FloatAttr(value)));
}

LogicalResult scalarTensorOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<double> v = I.numberArg("s");
  if (failed(v))
    return failure();
  return I.setResult(I.scalar(*v, rt->getElementType()));
}

template <typename OpTy> LogicalResult triOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  int64_t diag = 0;
  if (!I.isNone("diagonal")) {
    FailureOr<int64_t> d = I.intArg("diagonal");
    if (failed(d))
      return failure();
    diag = *d;
  }
  return I.setResult(I.emit<OpTy>(*rt, *x, I.b.getI64IntegerAttr(diag)));
}

LogicalResult indexSelectOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  FailureOr<Value> idx = I.tensorArg("index");
  if (failed(x) || failed(idx))
    return failure();
  FailureOr<int64_t> nd = I.dimArg("dim", typeOf(*x).getRank());
  if (failed(nd))
    return failure();
  return I.setResult(
      I.emit<IndexSelectOp>(*rt, *x, I.b.getI64IntegerAttr(*nd), *idx));
}

/// aten.index.Tensor with one index tensor (advanced indexing on one
/// dimension): a 1-D index is index_select; an N-D index on dimension 0 is
/// index_select of the flattened index, reshaped.
LogicalResult indexOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<Value>> indices = I.tensorListArg("indices", true);
  if (failed(indices))
    return failure();
  int64_t dim = -1;
  Value idx;
  for (auto [i, v] : llvm::enumerate(*indices))
    if (v) {
      if (idx)
        return I.fail("indexing with more than one index tensor");
      idx = v;
      dim = i;
    }
  if (!idx)
    return I.fail("indexing without an index tensor");
  if (dim >= typeOf(*x).getRank())
    return I.fail("more indices than dimensions");
  Type it = typeOf(idx).getElementType();
  if (!it.isInteger(64) && !it.isInteger(32))
    return I.fail("indexing with a boolean mask is not supported");
  auto xt = typeOf(*x);
  if (typeOf(idx).getRank() == 1)
    return I.setResult(
        I.emit<IndexSelectOp>(*rt, *x, I.b.getI64IntegerAttr(dim), idx));
  if (dim != 0)
    return I.fail("an index tensor of rank > 1 on a dimension other than 0");
  SymShape idxShape = I.symShapeOf(idx);
  int64_t n = 1;
  bool dyn = false;
  for (const SymDim &d : idxShape) {
    if (!d.isStatic())
      dyn = true;
    else
      n *= d.off;
  }
  auto flatType = RankedTensorType::get({dyn ? ShapedType::kDynamic : n}, it);
  Value flat = I.emit<ReshapeOp>(flatType, idx, I.b.getDenseI64ArrayAttr({-1}));
  if (!flat)
    return failure();
  SmallVector<int64_t> selShape(xt.getShape());
  selShape[0] = flatType.getDimSize(0);
  Value sel = I.emit<IndexSelectOp>(
      RankedTensorType::get(selShape, xt.getElementType()), *x,
      I.b.getI64IntegerAttr(0), flat);
  if (!sel)
    return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.reshapeTo(sel, *rt, outShape));
}

/// index_put with one index tensor after leading Nones.
LogicalResult indexPutOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<Value>> indices = I.tensorListArg("indices", true);
  if (failed(indices))
    return failure();
  int64_t dim = -1;
  Value idx;
  for (auto [i, v] : llvm::enumerate(*indices))
    if (v) {
      if (idx)
        return I.fail("index_put with more than one index tensor (write the "
                      "update as x.index_put_([None, ..., idx], v) or "
                      "index_copy_)");
      idx = v;
      dim = i;
    }
  if (!idx || typeOf(idx).getRank() != 1)
    return I.fail("index_put needs exactly one 1-D index tensor");
  if (dim >= typeOf(*x).getRank())
    return I.fail("index_put with more indices than dimensions");
  FailureOr<Value> vals = I.operand("values", rt->getElementType());
  if (failed(vals))
    return failure();
  // values broadcast to the input's shape with `dim` replaced by the index.
  SymShape want = I.symShapeOf(*x);
  want[dim] = I.symShapeOf(idx)[0];
  Value v = I.broadcastTo(*vals, want, "index_put values");
  if (!v)
    return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.emit<IndexPutOp>(
      *rt, *x, I.b.getI64IntegerAttr(dim), idx, v,
      I.boolArg("accumulate", false) ? I.b.getUnitAttr() : UnitAttr()));
}

LogicalResult indexCopyOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  FailureOr<Value> idx = I.tensorArg("index");
  if (failed(x) || failed(idx))
    return failure();
  FailureOr<Value> src = I.operand("source", rt->getElementType());
  if (failed(src))
    return failure();
  FailureOr<int64_t> nd = I.dimArg("dim", typeOf(*x).getRank());
  if (failed(nd))
    return failure();
  return I.setResult(
      I.emit<IndexCopyOp>(*rt, *x, I.b.getI64IntegerAttr(*nd), *idx, *src));
}

LogicalResult gatherOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  FailureOr<Value> idx = I.tensorArg("index");
  if (failed(x) || failed(idx))
    return failure();
  FailureOr<int64_t> nd = I.dimArg("dim", typeOf(*x).getRank());
  if (failed(nd))
    return failure();
  return I.setResult(
      I.emit<GatherOp>(*rt, *x, I.b.getI64IntegerAttr(*nd), *idx));
}

/// native_layer_norm -> (layer_norm, mean, rstd); only the first is mapped.
LogicalResult layerNormOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType(0);
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("input");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<int64_t>> ns = I.intListArg("normalized_shape");
  if (failed(ns))
    return failure();
  auto xt = typeOf(*x);
  if (ns->size() != 1 || xt.getRank() < 1 ||
      xt.getShape().back() != ns->front())
    return I.fail("layer_norm over more than the last dimension");
  Value w, bias;
  if (!I.isNone("weight")) {
    FailureOr<Value> v = I.tensorArg("weight");
    if (failed(v))
      return failure();
    w = *v;
  }
  if (!I.isNone("bias")) {
    FailureOr<Value> v = I.tensorArg("bias");
    if (failed(v))
      return failure();
    bias = *v;
  }
  FailureOr<double> eps = I.numberArg("eps");
  if (failed(eps))
    return failure();
  Value y = I.emit<LayerNormOp>(*rt, *x, w, bias, I.b.getF64FloatAttr(*eps));
  if (!y)
    return failure();
  I.symShapes[y] = I.lastResultShape;
  return I.setResults({y, Value(), Value()});
}

/// var.correction: sum((x - mean)^2) / (N - correction).
LogicalResult varOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  Type et = rt->getElementType();
  FailureOr<Value> x = I.operand("self", et);
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  FailureOr<SmallVector<int64_t>> dims = I.dimsArg("dim", xt.getRank());
  if (failed(dims))
    return failure();
  double correction = 1;
  if (!I.isNone("correction")) {
    FailureOr<double> c = I.numberArg("correction");
    if (failed(c))
      return failure();
    correction = *c;
  }
  int64_t n = 1;
  SmallVector<int64_t> keptShape(xt.getShape());
  for (int64_t d : *dims) {
    if (xt.isDynamicDim(d))
      return I.fail("variance over a dimension that depends on S");
    n *= xt.getDimSize(d);
    keptShape[d] = 1;
  }
  auto keptType = RankedTensorType::get(keptShape, et);
  auto dimsAttr = I.b.getDenseI64ArrayAttr(*dims);
  Value mean = I.emit<MeanOp>(keptType, *x, dimsAttr, I.b.getUnitAttr());
  if (!mean)
    return failure();
  Value diff = I.emit<SubOp>(xt, *x, mean);
  if (!diff)
    return failure();
  Value sq = I.emit<MulOp>(xt, diff, diff);
  if (!sq)
    return failure();
  bool keep = I.boolArg("keepdim", false);
  Value sum =
      I.emit<SumOp>(*rt, sq, dimsAttr, keep ? I.b.getUnitAttr() : UnitAttr());
  if (!sum)
    return failure();
  Value denom = I.scalar(double(n) - correction, et);
  if (!denom)
    return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.emit<DivOp>(*rt, sum, denom));
}

/// A 2-D convolution whose stride equals its kernel (patch embedding), as
/// patchify (reshape + permute) and a linear layer.
LogicalResult convolutionOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("input");
  FailureOr<Value> w = I.tensorArg("weight");
  if (failed(x) || failed(w))
    return failure();
  auto xt = typeOf(*x), wt = typeOf(*w);
  FailureOr<SmallVector<int64_t>> stride = I.intListArg("stride");
  FailureOr<SmallVector<int64_t>> padding = I.intListArg("padding");
  FailureOr<SmallVector<int64_t>> dilation = I.intListArg("dilation");
  FailureOr<int64_t> groups = I.intArg("groups");
  if (failed(stride) || failed(padding) || failed(dilation) || failed(groups))
    return failure();
  if (xt.getRank() != 4 || wt.getRank() != 4 || !xt.hasStaticShape())
    return I.fail("only 2-D convolutions of static shape are supported");
  int64_t B = xt.getDimSize(0), C = xt.getDimSize(1), Hh = xt.getDimSize(2),
          W = xt.getDimSize(3), O = wt.getDimSize(0), kh = wt.getDimSize(2),
          kw = wt.getDimSize(3);
  bool patchify = !I.boolArg("transposed", false) && *groups == 1 &&
                  wt.getDimSize(1) == C &&
                  *stride == SmallVector<int64_t>{kh, kw} &&
                  llvm::all_of(*padding, [](int64_t p) { return p == 0; }) &&
                  llvm::all_of(*dilation, [](int64_t d) { return d == 1; }) &&
                  kh > 0 && kw > 0 && Hh % kh == 0 && W % kw == 0;
  if (!patchify)
    return I.fail("only patch-embedding convolutions (stride == kernel size, "
                  "no padding, dilation 1, groups 1) are supported");
  Type et = rt->getElementType();
  int64_t ph = Hh / kh, pw = W / kw, K = C * kh * kw;
  auto ty = [&](ArrayRef<int64_t> s) { return RankedTensorType::get(s, et); };
  auto arr = [&](ArrayRef<int64_t> s) { return I.b.getDenseI64ArrayAttr(s); };
  Value v = I.emit<ReshapeOp>(ty({B, C, ph, kh, pw, kw}), *x,
                              arr({B, C, ph, kh, pw, kw}));
  if (!v || !(v = I.emit<PermuteOp>(ty({B, ph, pw, C, kh, kw}), v,
                                    arr({0, 2, 4, 1, 3, 5}))))
    return failure();
  if (!(v = I.emit<ReshapeOp>(ty({B, ph * pw, K}), v, arr({B, ph * pw, K}))))
    return failure();
  Value wf = I.emit<ReshapeOp>(ty({O, K}), *w, arr({O, K}));
  if (!wf)
    return failure();
  Value bias;
  if (!I.isNone("bias")) {
    FailureOr<Value> bv = I.tensorArg("bias");
    if (failed(bv))
      return failure();
    bias = *bv;
  }
  if (!(v = I.emit<LinearOp>(ty({B, ph * pw, O}), v, wf, bias)))
    return failure();
  if (!(v = I.emit<ReshapeOp>(ty({B, ph, pw, O}), v, arr({B, ph, pw, O}))))
    return failure();
  return I.setResult(I.emit<PermuteOp>(*rt, v, arr({0, 3, 1, 2})));
}

} // namespace

const llvm::StringMap<Importer::Handler> &Importer::handlers() {
  static const llvm::StringMap<Handler> table = [] {
    llvm::StringMap<Handler> t;
    // Aliases, copies and eval-mode no-ops.
    for (const char *n :
         {"aten.detach.default", "aten.clone.default", "aten.alias.default",
          "aten.lift_fresh_copy.default", "aten.contiguous.default"})
      t[n] = identity();
    t["aten._to_copy.default"] = toCopyOp;
    t["aten.copy.default"] = copyOp;
    t["getitem"] = getitemOp;
    // Element-wise.
    t["aten.neg.default"] = unary<NegOp>();
    t["aten.abs.default"] = unary<AbsOp>();
    t["aten.rsqrt.default"] = unary<RsqrtOp>();
    t["aten.sqrt.default"] = unary<SqrtOp>();
    t["aten.exp.default"] = unary<ExpOp>();
    t["aten.log.default"] = unary<LogOp>();
    t["aten.cos.default"] = unary<CosOp>();
    t["aten.sin.default"] = unary<SinOp>();
    t["aten.tanh.default"] = unary<TanhOp>();
    t["aten.sigmoid.default"] = unary<SigmoidOp>();
    t["aten.silu.default"] = unary<SiluOp>();
    t["aten.relu.default"] = unary<ReluOp>();
    t["aten.gelu.default"] = geluOp;
    t["aten.reciprocal.default"] = reciprocalOp;
    t["aten.clamp.default"] = clampOp;
    t["aten.clamp_min.default"] = clampOp;
    t["aten.clamp_max.default"] = clampOp;
    t["aten.logical_not.default"] = [](Importer &I,
                                       const json &) -> LogicalResult {
      FailureOr<RankedTensorType> rt = I.resultType();
      if (failed(rt))
        return failure();
      FailureOr<Value> x = I.tensorArg("self");
      if (failed(x))
        return failure();
      Value b = typeOf(*x).getElementType().isInteger(1)
                    ? *x
                    : Value(I.emit<NeOp>(
                          *rt, *x, I.scalar(0.0, typeOf(*x).getElementType())));
      if (!b)
        return failure();
      return I.setResult(I.emit<LogicalNotOp>(*rt, b));
    };
    t["aten.bitwise_not.default"] = [](Importer &I,
                                       const json &) -> LogicalResult {
      FailureOr<RankedTensorType> rt = I.resultType();
      if (failed(rt))
        return failure();
      if (!rt->getElementType().isInteger(1))
        return I.fail("bitwise_not of a non-boolean tensor");
      FailureOr<Value> x = I.tensorArg("self");
      if (failed(x))
        return failure();
      return I.setResult(I.emit<LogicalNotOp>(*rt, *x));
    };
    for (const char *n : {"aten.add.Tensor", "aten.add.Scalar"})
      t[n] = binary<AddOp>();
    for (const char *n : {"aten.sub.Tensor", "aten.sub.Scalar"})
      t[n] = binary<SubOp>();
    for (const char *n : {"aten.rsub.Scalar", "aten.rsub.Tensor"})
      t[n] = binary<SubOp>("self", "other", /*reversed=*/true);
    for (const char *n : {"aten.mul.Tensor", "aten.mul.Scalar"})
      t[n] = binary<MulOp>();
    for (const char *n : {"aten.div.Tensor", "aten.div.Scalar"})
      t[n] = binary<DivOp>();
    t["aten.pow.Tensor_Scalar"] = binary<PowOp>("self", "exponent");
    t["aten.pow.Tensor_Tensor"] = binary<PowOp>("self", "exponent");
    t["aten.maximum.default"] = binary<MaximumOp>();
    t["aten.minimum.default"] = binary<MinimumOp>();
    t["aten.logical_and.default"] = logical<LogicalAndOp>();
    t["aten.logical_or.default"] = logical<LogicalOrOp>();
    t["aten.bitwise_and.Tensor"] = logical<LogicalAndOp>();
    t["aten.bitwise_or.Tensor"] = logical<LogicalOrOp>();
    for (auto [name, h] : std::initializer_list<std::pair<const char *, H>>{
             {"eq", compare<EqOp>()},
             {"ne", compare<NeOp>()},
             {"lt", compare<LtOp>()},
             {"le", compare<LeOp>()},
             {"gt", compare<GtOp>()},
             {"ge", compare<GeOp>()}}) {
      t[std::string("aten.") + name + ".Tensor"] = h;
      t[std::string("aten.") + name + ".Scalar"] = h;
    }
    for (const char *n : {"aten.where.self", "aten.where.ScalarSelf",
                          "aten.where.ScalarOther", "aten.where.Scalar"})
      t[n] = whereOp;
    t["aten.masked_fill.Scalar"] = maskedFillOp;
    t["aten.masked_fill.Tensor"] = maskedFillOp;
    // Reductions and normalizations.
    t["aten.mean.dim"] = reduce<MeanOp>();
    t["aten.mean.default"] = reduce<MeanOp>();
    t["aten.sum.dim_IntList"] = reduce<SumOp>();
    t["aten.sum.default"] = reduce<SumOp>();
    t["aten.amax.default"] = reduce<AmaxOp>();
    t["aten.var.correction"] = varOp;
    t["aten._softmax.default"] = softmaxOp;
    t["aten._log_softmax.default"] = softmaxOp;
    t["aten.native_layer_norm.default"] = layerNormOp;
    // Linear algebra and lookups.
    t["aten.mm.default"] = mmOp;
    t["aten.bmm.default"] = mmOp;
    t["aten.matmul.default"] = mmOp;
    t["aten.addmm.default"] = addmmOp;
    t["aten.linear.default"] = linearOp;
    t["aten.embedding.default"] = embeddingOp;
    t["aten.index_select.default"] = indexSelectOp;
    t["aten.index.Tensor"] = indexOp;
    t["aten.index_put.default"] = indexPutOp;
    t["aten.index_copy.default"] = indexCopyOp;
    t["aten.gather.default"] = gatherOp;
    t["aten.convolution.default"] = convolutionOp;
    // Creation.
    for (const char *n :
         {"aten.arange.default", "aten.arange.start", "aten.arange.start_step"})
      t[n] = arangeOp;
    for (const char *n : {"aten.full.default", "aten.zeros.default",
                          "aten.ones.default", "aten.new_zeros.default",
                          "aten.new_ones.default", "aten.new_full.default",
                          "aten.new_empty.default", "aten.empty.memory_format"})
      t[n] = fullOp;
    for (const char *n : {"aten.zeros_like.default", "aten.ones_like.default",
                          "aten.full_like.default", "aten.empty_like.default"})
      t[n] = fullLikeOp;
    t["aten.scalar_tensor.default"] = scalarTensorOp;
    t["aten.triu.default"] = triOp<TriuOp>;
    t["aten.tril.default"] = triOp<TrilOp>;
    // Shapes.
    for (const char *n :
         {"aten.view.default", "aten._unsafe_view.default",
          "aten._reshape_alias.default", "aten.reshape.default"})
      t[n] = viewOp;
    t["aten.expand.default"] = expandOp;
    t["aten.slice.Tensor"] = sliceOp;
    t["aten.select.int"] = selectOp;
    t["aten.t.default"] = transposeOp;
    t["aten.transpose.int"] = transposeOp;
    t["aten.permute.default"] = permuteOp;
    t["aten.unsqueeze.default"] = unsqueezeOp;
    t["aten.squeeze.dim"] = squeezeOp;
    t["aten.squeeze.default"] = squeezeOp;
    t["aten.cat.default"] = catOp;
    t["aten.stack.default"] = stackOp;
    t["aten.split.Tensor"] = splitOp;
    t["aten.split_with_sizes.default"] = splitOp;
    t["aten.unbind.int"] = splitOp;
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

namespace {

/// The model configuration attribute (`etllm.model_config`) from the
/// description's `model_config` object: the one place this importer makes
/// it. Strings, booleans, integers, floats, integer lists (eos_token_ids)
/// and boolean lists (layer_sliding_window) are kept; anything else is an
/// error naming the key.
/// The typed `#etllm.model_config` of a traced module from the keys the
/// caller gave (the attribute's parameter names; absent keys keep their
/// defaults). An unknown key or a value of the wrong JSON type is an error
/// naming the key.
FailureOr<ModelConfigAttr> modelConfigAttr(Builder &b, const json &cfg,
                                           std::string &error) {
  if (!cfg.is_object()) {
    error = "model_config must be an object";
    return failure();
  }
  std::string architecture, modelType, dtype;
  int64_t hidden = 0, intermediate = 0, layers = 0, heads = 0, kvHeads = 0,
          headDim = 0, vocab = 0, maxSeq = 0, rotary = 0, window = 0, bos = -1,
          qLora = 0, kvLora = 0, qkNope = 0, vHead = 0;
  double eps = 0, theta = 0, scale = 0, attnCap = 0, finalCap = 0;
  bool tied = false;
  SmallVector<int64_t> eos;
  SmallVector<bool> layerWindow;
  auto wrong = [&](const std::string &k, const char *what) {
    error = "model_config key '" + k + "' must be " + what;
    return failure();
  };
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    const std::string &k = it.key();
    const json &v = it.value();
    auto str = [&](std::string &out) -> LogicalResult {
      if (!v.is_string())
        return wrong(k, "a string");
      out = v.get<std::string>();
      return success();
    };
    auto integer = [&](int64_t &out) -> LogicalResult {
      if (!v.is_number_integer())
        return wrong(k, "an integer");
      out = v.get<int64_t>();
      return success();
    };
    auto number = [&](double &out) -> LogicalResult {
      if (!v.is_number())
        return wrong(k, "a number");
      out = v.get<double>();
      return success();
    };
    LogicalResult ok = success();
    if (k == "architecture")
      ok = str(architecture);
    else if (k == "model_type")
      ok = str(modelType);
    else if (k == "dtype")
      ok = str(dtype);
    else if (k == "hidden_size")
      ok = integer(hidden);
    else if (k == "intermediate_size")
      ok = integer(intermediate);
    else if (k == "num_hidden_layers")
      ok = integer(layers);
    else if (k == "num_attention_heads")
      ok = integer(heads);
    else if (k == "num_key_value_heads")
      ok = integer(kvHeads);
    else if (k == "head_dim")
      ok = integer(headDim);
    else if (k == "vocab_size")
      ok = integer(vocab);
    else if (k == "max_seq_len")
      ok = integer(maxSeq);
    else if (k == "rotary_dim")
      ok = integer(rotary);
    else if (k == "sliding_window")
      ok = integer(window);
    else if (k == "bos_token_id")
      ok = integer(bos);
    else if (k == "q_lora_rank")
      ok = integer(qLora);
    else if (k == "kv_lora_rank")
      ok = integer(kvLora);
    else if (k == "qk_nope_head_dim")
      ok = integer(qkNope);
    else if (k == "v_head_dim")
      ok = integer(vHead);
    else if (k == "rms_norm_eps")
      ok = number(eps);
    else if (k == "rope_theta")
      ok = number(theta);
    else if (k == "attention_scale")
      ok = number(scale);
    else if (k == "attn_logit_softcapping")
      ok = number(attnCap);
    else if (k == "final_logit_softcapping")
      ok = number(finalCap);
    else if (k == "tie_word_embeddings") {
      if (!v.is_boolean())
        return wrong(k, "a boolean");
      tied = v.get<bool>();
    } else if (k == "eos_token_ids") {
      if (!v.is_array() ||
          !llvm::all_of(v, [](const json &e) { return e.is_number_integer(); }))
        return wrong(k, "a list of integers");
      for (const json &e : v)
        eos.push_back(e.get<int64_t>());
    } else if (k == "layer_sliding_window") {
      if (!v.is_array() ||
          !llvm::all_of(v, [](const json &e) { return e.is_boolean(); }))
        return wrong(k, "a list of booleans");
      for (const json &e : v)
        layerWindow.push_back(e.get<bool>());
    } else {
      error = "model_config has no key '" + k +
              "' (the keys are the parameters of #etllm.model_config: see "
              "docs/generated/EtllmDialect.md)";
      return failure();
    }
    if (failed(ok))
      return failure();
  }
  return ModelConfigAttr::get(
      b.getContext(), architecture, modelType, dtype, hidden, intermediate,
      layers, heads, kvHeads, headDim, vocab, maxSeq, rotary,
      llvm::APFloat(eps), llvm::APFloat(theta), llvm::APFloat(scale), window,
      llvm::APFloat(attnCap), llvm::APFloat(finalCap), tied, bos, eos,
      layerWindow, qLora, kvLora, qkNope, vHead, /*numExperts=*/0,
      /*numExpertsPerTok=*/0,
      /*moeIntermediateSize=*/0, /*sharedExpertIntermediateSize=*/0,
      /*normTopkProb=*/false, /*moeScoring=*/"", /*moeTopkMethod=*/"",
      /*nGroup=*/0, /*topkGroup=*/0, llvm::APFloat(0.0),
      /*layerMoe=*/ArrayRef<bool>(), /*ropeLocalTheta=*/llvm::APFloat(0.0));
}

} // namespace

LogicalResult Importer::declare(const json &t,
                                const ::etllm::formats::Checkpoint *ckpt) {
  if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
      !t.contains("kind") || !t["kind"].is_string() || !t.contains("shape") ||
      !t.contains("dtype"))
    return fail("a tensor declaration needs 'name', 'kind', 'shape' and "
                "'dtype'");
  std::string name = t["name"].get<std::string>();
  std::string kind = t["kind"].get<std::string>();
  std::string what = "tensor '" + name + "'";
  if (name.empty() || name.size() > 1024)
    return fail("a tensor declaration has an empty or too long name");
  if (decls.count(name))
    return fail(what + " is declared twice");
  FailureOr<SymShape> shape = shapeOf(t["shape"], what);
  if (failed(shape))
    return failure();
  FailureOr<Type> et = elementType(t["dtype"], what);
  if (failed(et))
    return failure();
  Decl d;
  d.shape = *shape;
  d.type = tensorType(*shape, *et);
  bool isStatic = d.type.hasStaticShape();
  auto inlineValue = [&]() -> LogicalResult {
    const json &data = t["data"];
    int64_t n = 1;
    for (int64_t dim : d.type.getShape()) {
      if (dim > kMaxInlineElements || n * dim > kMaxInlineElements)
        return fail(what + ": inline values of more than " +
                    std::to_string(kMaxInlineElements) +
                    " elements (put it in the checkpoint)");
      n *= dim;
    }
    if (!data.is_array() || int64_t(data.size()) != n)
      return fail(what + ": 'data' must be a list of " + std::to_string(n) +
                  " numbers");
    SmallVector<Attribute> elems;
    for (const json &e : data) {
      std::optional<double> n = asNumber(e);
      if (!n)
        return fail(what + ": 'data' holds a value that is not a number");
      double v = *n;
      if (isa<FloatType>(*et)) {
        elems.push_back(FloatAttr::get(*et, v));
      } else {
        if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 9.0e18)
          return fail(what + ": 'data' holds a non-integer for an integer "
                             "tensor");
        elems.push_back(IntegerAttr::get(*et, int64_t(v)));
      }
    }
    d.value = DenseElementsAttr::get(d.type, elems);
    return success();
  };
  b.setInsertionPoint(fn);
  if (kind == "input") {
    d.kind = Decl::Input;
    SmallVector<Type> ins(fn.getArgumentTypes());
    ins.push_back(d.type);
    fn.setType(b.getFunctionType(ins, {}));
    d.input = fn.getBody().front().addArgument(d.type, loc);
  } else if (kind == "parameter") {
    d.kind = Decl::Parameter;
    if (!isStatic)
      return fail(what + ": a parameter needs a static shape");
    // The checkpoint tensor's storage type, for the quantize pass (exact
    // GGUF blocks), as the graph builder records it.
    StringAttr sourceDtype;
    if (t.contains("data")) {
      if (failed(inlineValue()))
        return failure();
    } else if (!ckpt) {
      return fail(what + ": a parameter without inline 'data' needs the "
                         "graph's 'checkpoint'");
    } else {
      const ::etllm::formats::TensorRef *ref = ckpt->find(name);
      if (!ref)
        return fail(what + " is not in the checkpoint " + ckpt->path());
      if (ref->shape != std::vector<int64_t>(d.type.getShape().begin(),
                                             d.type.getShape().end()))
        return fail(
            what + " has shape " + ::etllm::formats::shapeToString(ref->shape) +
            " in the checkpoint " + ckpt->path() + ", not " + shapeStr(*shape));
      sourceDtype = b.getStringAttr(::etllm::formats::dtypeName(ref->dtype));
    }
    b.create<ParameterOp>(loc, name, d.type, d.value, StringAttr(),
                          IntegerAttr(), sourceDtype);
  } else if (kind == "buffer") {
    d.kind = Decl::Buffer;
    if (!isStatic)
      return fail(what + ": a buffer needs a static shape");
    b.create<BufferOp>(loc, name, d.type);
  } else if (kind == "constant") {
    d.kind = Decl::Constant;
    if (!isStatic)
      return fail(what + ": a constant needs a static shape");
    if (failed(inlineValue()))
      return failure();
  } else {
    return fail(what + ": unknown kind '" + kind +
                "' (input, parameter, buffer, constant)");
  }
  decls.emplace(name, std::move(d));
  return success();
}

LogicalResult Importer::importNode(const json &n) {
  node = &n;
  diagText.clear();
  poisonedUse = false;
  if (!n.is_object() || !n.contains("name") || !n["name"].is_string() ||
      !n.contains("target") || !n["target"].is_string() ||
      !n.contains("args") || !n["args"].is_object()) {
    nodeName = "?";
    target = "?";
    modulePath.clear();
    problems.push_back("a node needs 'name', 'target' and an 'args' object");
    return failure();
  }
  nodeName = n["name"].get<std::string>();
  target = n["target"].get<std::string>();
  modulePath = n.contains("module") && n["module"].is_string()
                   ? n["module"].get<std::string>()
                   : "";
  lastResultShape.clear();
  if (nodeValues.count(nodeName) || poisoned.count(nodeName)) {
    problems.push_back("node '" + nodeName + "' is defined twice");
    return failure();
  }
  auto it = handlers().find(target);
  if (it == handlers().end()) {
    auto &paths = unsupported[target];
    if (!llvm::is_contained(paths, where()))
      paths.push_back(where());
    poisoned.insert(nodeName);
    return failure();
  }
  b.setInsertionPointToEnd(&fn.getBody().front());
  if (failed(it->second(*this, n))) {
    poisoned.insert(nodeName);
    if (!poisonedUse || !diagText.empty())
      problems.push_back(
          target + " (node '" + nodeName + "' at " + where() + "): " +
          (diagText.empty() ? std::string("cannot be mapped") : diagText));
    return failure();
  }
  return success();
}

llvm::Expected<OwningOpRef<ModuleOp>> Importer::run(const json &root) {
  ctx->getOrLoadDialect<EtllmDialect>();
  ctx->getOrLoadDialect<func::FuncDialect>();
  if (!root.is_object() || root.value("format", "") != "etllm.aten_graph")
    return makeError(source + ": not an ATen graph description (no "
                              "\"format\": \"etllm.aten_graph\")");
  if (!root.contains("version") || root["version"] != 1)
    return makeError(source + ": unsupported ATen graph version (expected 1)");
  for (const char *key : {"tensors", "nodes", "outputs"})
    if (!root.contains(key) || !root[key].is_array())
      return makeError(source + ": '" + key + "' must be a list");

  module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  fn = b.create<func::FuncOp>(loc, "forward", b.getFunctionType({}, {}));
  fn.addEntryBlock();

  // The checkpoint holding the parameters (opened to check them).
  std::unique_ptr<::etllm::formats::Checkpoint> ckpt;
  if (root.contains("checkpoint") && !root["checkpoint"].is_null()) {
    if (!root["checkpoint"].is_string())
      return makeError(source + ": 'checkpoint' is not a string");
    std::string path = root["checkpoint"].get<std::string>();
    ::etllm::formats::OpenOptions oo;
    oo.validateTensors = false;
    auto opened = ::etllm::formats::openCheckpoint(path, oo);
    if (!opened.ok())
      return makeError(source + ": " + opened.message());
    ckpt = std::move(opened.value());
    (*module)->setAttr(EtllmDialect::kCheckpointAttrName,
                       b.getStringAttr(path));
  }
  node = &root;
  for (const json &t : root["tensors"])
    if (failed(declare(t, ckpt.get())))
      return makeError(source + ": " + diagText);

  for (const json &n : root["nodes"])
    (void)importNode(n);

  // Outputs and write-backs.
  node = &root;
  nodeName.clear();
  modulePath.clear();
  b.setInsertionPointToEnd(&fn.getBody().front());
  SmallVector<Value> outputs;
  bool outputsOk = true;
  for (const json &o : root["outputs"]) {
    diagText.clear();
    poisonedUse = false;
    FailureOr<Value> v = valueOf(o, "an output");
    if (failed(v)) {
      outputsOk = false;
      if (!poisonedUse)
        problems.push_back("output: " + diagText);
      continue;
    }
    outputs.push_back(*v);
  }
  if (root.contains("buffer_writes")) {
    if (!root["buffer_writes"].is_array())
      return makeError(source + ": 'buffer_writes' must be a list");
    for (const json &w : root["buffer_writes"]) {
      diagText.clear();
      poisonedUse = false;
      if (!w.is_object() || !w.contains("buffer") || !w["buffer"].is_string() ||
          !w.contains("value")) {
        problems.push_back("a buffer write needs 'buffer' and 'value'");
        continue;
      }
      std::string name = w["buffer"].get<std::string>();
      auto it = decls.find(name);
      if (it == decls.end() || it->second.kind != Decl::Buffer) {
        problems.push_back("buffer write to '" + name +
                           "', which is not a declared buffer");
        continue;
      }
      FailureOr<Value> v = valueOf(w["value"], "the value written to " + name);
      if (failed(v)) {
        if (!poisonedUse)
          problems.push_back("buffer write: " + diagText);
        continue;
      }
      if (typeOf(*v).getShape() != it->second.type.getShape()) {
        problems.push_back("the value written to buffer '" + name +
                           "' has a different shape than the buffer");
        continue;
      }
      Value val = convert(*v, it->second.type.getElementType());
      if (val)
        b.create<BufferWriteOp>(loc, val, FlatSymbolRefAttr::get(ctx, name));
    }
  }

  if (!unsupported.empty() || !problems.empty() || !outputsOk) {
    std::string msg = source + ": the graph has operations etllm cannot map";
    if (!unsupported.empty()) {
      msg += "\n  not supported:";
      size_t listed = 0;
      for (auto &[t, paths] : unsupported) {
        if (++listed > 50) {
          msg += "\n    ... and " + std::to_string(unsupported.size() - 50) +
                 " more operators";
          break;
        }
        msg += "\n    " + t + " at ";
        for (size_t i = 0; i < paths.size() && i < 8; ++i)
          msg += (i ? ", " : "") + paths[i];
        if (paths.size() > 8)
          msg += " and " + std::to_string(paths.size() - 8) + " more";
      }
    }
    if (!problems.empty()) {
      msg += "\n  not mapped:";
      for (size_t i = 0; i < problems.size() && i < 20; ++i)
        msg += "\n    " + problems[i];
      if (problems.size() > 20)
        msg +=
            "\n    ... and " + std::to_string(problems.size() - 20) + " more";
    }
    return makeError(msg);
  }
  SmallVector<Type> resultTypes;
  for (Value v : outputs)
    resultTypes.push_back(v.getType());
  fn.setType(b.getFunctionType(fn.getArgumentTypes(), resultTypes));
  b.create<func::ReturnOp>(loc, outputs);

  // Module attributes.
  if (root.contains("module_classes")) {
    const json &mc = root["module_classes"];
    if (!mc.is_object())
      return makeError(source + ": 'module_classes' must be an object");
    SmallVector<NamedAttribute> classes;
    for (auto it = mc.begin(); it != mc.end(); ++it) {
      if (!it.value().is_string() || it.key().empty())
        return makeError(source + ": 'module_classes' maps paths to class "
                                  "names (strings)");
      classes.push_back(b.getNamedAttr(
          it.key(), b.getStringAttr(it.value().get<std::string>())));
    }
    (*module)->setAttr(EtllmDialect::kModuleClassesAttrName,
                       b.getDictionaryAttr(classes));
  }
  if (root.contains("model_config") && !root["model_config"].is_null()) {
    if (!root["model_config"].is_object())
      return makeError(source + ": 'model_config' must be an object");
    std::string err;
    FailureOr<ModelConfigAttr> cfg =
        modelConfigAttr(b, root["model_config"], err);
    if (failed(cfg))
      return makeError(source + ": " + err);
    setModelConfig(*module, *cfg);
  }
  std::string diag;
  ScopedDiagnosticHandler h(ctx, [&](Diagnostic &d) {
    llvm::raw_string_ostream os(diag);
    os << "\n  " << d;
    return success();
  });
  if (failed(verify(*module)))
    return makeError(source + ": the imported graph does not verify:" + diag);
  return std::move(module);
}

namespace etllm {

llvm::Expected<OwningOpRef<ModuleOp>> importAtenGraph(MLIRContext *context,
                                                      llvm::StringRef text,
                                                      llvm::StringRef source) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception &e) {
    return makeError(source + ": invalid JSON: " + e.what());
  }
  Importer importer(context, source.str());
  return importer.run(root);
}

std::vector<std::string> supportedAtenOps() {
  std::vector<std::string> out;
  for (auto &e : Importer::handlers())
    if (e.getKey() != "getitem")
      out.push_back(e.getKey().str());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace etllm
