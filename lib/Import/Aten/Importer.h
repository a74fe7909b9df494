//===- Importer.h - State and helpers of the ATen graph importer-*- C++ -*-===//
//
// The ATen graph importer (importAtenGraph, docs/Python.md) maps the nodes of
// a captured ATen graph (JSON) to level-A etllm ops. This header is private
// to lib/Import/Aten: the `Importer` (the state of one import and the helpers
// every operator mapping uses: typed argument readers, result types from the
// capture's shapes, op emission with verification) and the registration
// function of each operator category, one file each.
//
// Result types come from the capture (the shapes torch computed, with the
// sequence-length dimension dynamic) and every op is verified as it is
// created, so a mapping that disagrees with the op's own type inference is
// an error naming the node, never a crash. The graph description comes from
// a file as far as this code is concerned: every field, index, rank and size
// is checked.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_IMPORT_ATEN_IMPORTER_H
#define ETLLM_LIB_IMPORT_ATEN_IMPORTER_H

#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Formats/Checkpoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace mlir::etllm::aten {

using json = nlohmann::json;

inline constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kMaxRank = 8;
/// Largest inline constant or parameter value (elements); bigger tensors
/// belong in the checkpoint.
inline constexpr int64_t kMaxInlineElements = 1 << 16;

inline llvm::Error makeError(const llvm::Twine &message) {
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

inline std::string shapeStr(ArrayRef<SymDim> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

inline RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// A Python number: a JSON number or boolean, or {"float": "inf" | "-inf" |
/// "nan"} (JSON has no infinities).
inline std::optional<double> asNumber(const json &j) {
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
inline bool isFloatNumber(const json &j) {
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
  /// An optional integer argument (`dflt` when it is absent or None).
  FailureOr<int64_t> optionalIntArg(const char *name, int64_t dflt) {
    if (isNone(name))
      return dflt;
    return intArg(name);
  }
  /// An optional number argument (`dflt` when it is absent or None).
  FailureOr<double> optionalNumberArg(const char *name, double dflt) {
    if (isNone(name))
      return dflt;
    return numberArg(name);
  }
  /// An optional tensor argument (a null value when it is absent or None).
  FailureOr<Value> optionalTensorArg(const char *name) {
    if (isNone(name))
      return Value();
    return tensorArg(name);
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
  /// The operands `lhs` and `rhs`, read in that order, as tensors of `et`.
  FailureOr<std::pair<Value, Value>> operandPair(const char *lhs,
                                                 const char *rhs, Type et) {
    FailureOr<Value> l = operand(lhs, et);
    if (failed(l))
      return failure();
    FailureOr<Value> r = operand(rhs, et);
    if (failed(r))
      return failure();
    return std::make_pair(*l, *r);
  }
  /// An optional operand (a null value when it is absent or None).
  FailureOr<Value> optionalOperand(const char *name, Type et) {
    if (isNone(name))
      return Value();
    return operand(name, et);
  }

  LogicalResult setResult(Value v) {
    if (!v)
      return failure();
    nodeValues[nodeName] = {v};
    if (!lastResultShape.empty() || typeOf(v).getRank() == 0)
      symShapes[v] = lastResultShape;
    return success();
  }
  /// The current node's result is `v` itself (an alias: no op, and `v` keeps
  /// its own trace shape); a problem recorded on the way (a result type the
  /// node may lack) is dropped.
  LogicalResult setAlias(Value v) {
    diagText.clear();
    nodeValues[nodeName] = {v};
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

using H = Importer::Handler;
using HandlerTable = llvm::StringMap<H>;

/// A mapping of a node with a tensor input: it receives the node's result
/// type (its trace shape in Importer::lastResultShape) and that tensor.
using TensorHandler = LogicalResult (*)(Importer &I, RankedTensorType rt,
                                        Value x);

/// The handler that reads the result type and the tensor argument `name`
/// (each refused with the Importer's error when missing or malformed), in
/// that order, and then maps the node with `f`.
inline H withTensor(TensorHandler f, const char *name = "self") {
  return [f, name](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    FailureOr<Value> x = I.tensorArg(name);
    if (failed(x))
      return failure();
    return f(I, *rt, *x);
  };
}

/// The same with the tensor-or-number argument `name` converted to the
/// result's element type (Importer::operand).
inline H withOperand(TensorHandler f, const char *name = "self") {
  return [f, name](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    FailureOr<Value> x = I.operand(name, rt->getElementType());
    if (failed(x))
      return failure();
    return f(I, *rt, *x);
  };
}

/// The operator mappings of each category (one file each), added to the
/// importer's table by ATen target name.
void registerShapeHandlers(HandlerTable &t);
void registerElementwiseHandlers(HandlerTable &t);
void registerReductionHandlers(HandlerTable &t);
void registerLinalgHandlers(HandlerTable &t);
void registerCreationHandlers(HandlerTable &t);
void registerIndexingHandlers(HandlerTable &t);

/// The typed `#etllm.model_config` of a captured module from the keys the
/// caller gave: the attribute's parameter names, its groups' flat beside
/// them (ModelConfig.cpp). An unknown key, a wrong JSON type or a config the
/// verifier refuses sets `error`.
FailureOr<ModelConfigAttr> modelConfigAttr(Builder &b, const json &cfg,
                                           std::string &error);

} // namespace mlir::etllm::aten

#endif // ETLLM_LIB_IMPORT_ATEN_IMPORTER_H
