//===- KernelContract.cpp - The op contract as etllm-tblgen reads it ------===//
#include "KernelContract.h"

#include "mlir/TableGen/Attribute.h"
#include "mlir/TableGen/Operator.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"

using llvm::Record;
using llvm::RecordKeeper;
using llvm::StringRef;
using mlir::tblgen::Operator;

namespace etllm_tblgen {

std::string camelCase(StringRef snake) {
  std::string out;
  bool up = true;
  for (char c : snake) {
    if (c == '_') {
      up = true;
      continue;
    }
    out += up ? llvm::toUpper(c) : c;
    up = false;
  }
  return out;
}

/// The EnumAttrInfo behind an ODS attribute (an I32EnumAttr used directly or
/// wrapped in a dialect EnumAttr), or null.
static const Record *enumInfoOf(const mlir::tblgen::Attribute &attr) {
  const Record &def = attr.getDef();
  if (def.isSubClassOf("EnumAttrInfo"))
    return &def;
  if (const llvm::RecordVal *v = def.getValue("enum"))
    if (auto *di = llvm::dyn_cast<llvm::DefInit>(v->getValue()))
      if (di->getDef()->isSubClassOf("EnumAttrInfo"))
        return di->getDef();
  return nullptr;
}

static const mlir::tblgen::NamedAttribute *findAttr(const Operator &op,
                                                    StringRef name) {
  for (const mlir::tblgen::NamedAttribute &a : op.getAttributes())
    if (a.name == name)
      return &a;
  return nullptr;
}

static const mlir::tblgen::NamedTypeConstraint *findOperand(const Operator &op,
                                                            StringRef name) {
  for (int i = 0, e = op.getNumOperands(); i < e; ++i)
    if (op.getOperand(i).name == name)
      return &op.getOperand(i);
  return nullptr;
}

[[noreturn]] void fail(const Kernel &k, const llvm::Twine &msg) {
  llvm::PrintFatalError(k.def->getLoc(), "kernel contract of '" +
                                             k.op.getOperationName() +
                                             "': " + msg);
}

static KernelArg resolveArg(const Kernel &k, const Record *argDef,
                            bool isFloat) {
  KernelArg arg;
  arg.name = argDef->getValueAsString("name").str();
  StringRef kind = argDef->getValueAsString("kind");
  if (kind == "Value")
    arg.kind = ArgKind::Value;
  else if (kind == "Enum")
    arg.kind = ArgKind::Enum;
  else if (kind == "Flag")
    arg.kind = ArgKind::Flag;
  else if (kind == "Input")
    arg.kind = ArgKind::Input;
  else if (kind == "List")
    arg.kind = ArgKind::List;
  else if (kind == "Float")
    arg.kind = ArgKind::Float;
  else
    fail(k, "unknown argument kind '" + kind + "'");
  if (isFloat != (arg.kind == ArgKind::Float))
    fail(k, "'" + arg.name + "' is listed with the " +
                (isFloat ? "float" : "integer") +
                " attributes but is not of that kind");
  arg.getter = k.op.getGetterName(arg.name);
  arg.runtime = arg.name;

  if (arg.kind == ArgKind::Input) {
    const mlir::tblgen::NamedTypeConstraint *operand =
        findOperand(k.op, arg.name);
    if (!operand || !operand->isOptional())
      fail(k, "Etllm_Has<\"" + arg.name + "\"> needs an Optional<> operand '" +
                  arg.name + "'");
    arg.runtime = "has_" + arg.name;
    return arg;
  }
  const mlir::tblgen::NamedAttribute *named = findAttr(k.op, arg.name);
  if (!named)
    fail(k, "no attribute '" + arg.name + "'");
  mlir::tblgen::Attribute attr = named->attr;
  mlir::tblgen::Attribute base = attr.getBaseAttr();
  StringRef ret = attr.getReturnType().trim();
  auto need = [&](bool ok, const char *what) {
    if (!ok)
      fail(k, "attribute '" + arg.name + "' (" + attr.getDefName() +
                  ") is not " + what);
  };
  switch (arg.kind) {
  case ArgKind::Flag:
    need(ret == "bool", "a unit or bool attribute");
    break;
  case ArgKind::Value:
    need(!attr.isOptional() && (ret == "int64_t" || ret == "uint64_t" ||
                                ret == "int32_t" || ret == "uint32_t"),
         "a non-optional integer attribute");
    break;
  case ArgKind::List:
    need(!attr.isOptional() && ret == "::llvm::ArrayRef<int64_t>",
         "a non-optional i64 array attribute");
    break;
  case ArgKind::Float:
    need(!attr.isOptional() && ret == "::llvm::APFloat",
         "a non-optional float attribute");
    break;
  case ArgKind::Enum: {
    const Record *info = enumInfoOf(base);
    need(info && !attr.isOptional(), "a non-optional enum attribute");
    mlir::tblgen::EnumAttr e(info);
    std::vector<mlir::tblgen::EnumAttrCase> cases = e.getAllCases();
    arg.cases.resize(cases.size());
    for (const mlir::tblgen::EnumAttrCase &c : cases) {
      int64_t v = c.getValue();
      if (v < 0 || v >= int64_t(cases.size()) || !arg.cases[v].empty())
        fail(k, "enum '" + e.getEnumClassName() +
                    "' must number its cases 0..N-1 (the runtime checks "
                    "the range)");
      arg.cases[v] = c.getSymbol().str();
    }
    break;
  }
  case ArgKind::Input:
    break;
  }
  return arg;
}

/// The ops with a kernel contract, in declaration order.
std::vector<Kernel> collectKernels(const RecordKeeper &records) {
  std::vector<Record *> defs = records.getAllDerivedDefinitions("Op");
  llvm::sort(defs, [](const Record *a, const Record *b) {
    return a->getID() < b->getID();
  });
  std::vector<Kernel> kernels;
  llvm::StringSet<> names;
  for (const Record *def : defs) {
    const Record *contract = nullptr;
    for (const Record *t : def->getValueAsListOfDefs("traits"))
      if (t->isSubClassOf("Etllm_Kernel"))
        contract = t;
    if (!contract) {
      for (const Record *t : def->getValueAsListOfDefs("traits"))
        if (t->isSubClassOf("Etllm_Rule"))
          llvm::PrintFatalError(def->getLoc(),
                                "'" + Operator(*def).getOperationName() +
                                    "' declares a load-time rule (" +
                                    t->getValueAsString("trait") +
                                    ") but no kernel contract (Etllm_Kernel)");
      continue;
    }
    Kernel k{def, Operator(*def)};
    k.name = contract->getValueAsString("etllmKernelName").str();
    k.runtimeId = contract->getValueAsString("etllmKernelRuntimeId").str();
    if (k.runtimeId.empty())
      k.runtimeId = camelCase(k.name);
    k.outputBuffer =
        contract->getValueAsString("etllmKernelOutputBuffer").str();
    if (!names.insert(k.name).second)
      fail(k, "kernel name '" + k.name + "' is declared by another op too");
    for (const Record *a : contract->getValueAsListOfDefs("etllmKernelInts"))
      k.ints.push_back(resolveArg(k, a, /*isFloat=*/false));
    for (const Record *a : contract->getValueAsListOfDefs("etllmKernelFloats"))
      k.floats.push_back(resolveArg(k, a, /*isFloat=*/true));

    // Inputs and outputs follow the operands and results; a variadic one
    // counts as one or more.
    bool variadicIn = false, anyInputFlag = false;
    int optionalWithoutFlag = 0;
    for (int i = 0, e = k.op.getNumOperands(); i < e; ++i) {
      const mlir::tblgen::NamedTypeConstraint &o = k.op.getOperand(i);
      if (o.isVariadicOfVariadic())
        fail(k, "variadic-of-variadic operands have no kernel convention");
      k.inputNames.push_back(o.name.str() + (o.isOptional()   ? "?"
                                             : o.isVariadic() ? "..."
                                                              : ""));
      if (o.isOptional()) {
        ++k.maxInputs;
        bool flagged = llvm::any_of(k.ints, [&](const KernelArg &a) {
          return a.kind == ArgKind::Input && a.name == o.name;
        });
        anyInputFlag |= flagged;
        optionalWithoutFlag += !flagged;
      } else if (o.isVariadic()) {
        variadicIn = true;
        ++k.minInputs;
      } else {
        ++k.minInputs;
        ++k.maxInputs;
      }
    }
    if (variadicIn)
      k.maxInputs = -1;
    if (anyInputFlag && optionalWithoutFlag)
      fail(k, "either every optional operand has an Etllm_Has<> flag or "
              "none does (the runtime counts inputs from the flags)");
    bool variadicOut = false;
    for (int i = 0, e = k.op.getNumResults(); i < e; ++i) {
      const mlir::tblgen::NamedTypeConstraint &r = k.op.getResult(i);
      if (r.isOptional())
        fail(k, "optional results have no kernel convention");
      variadicOut |= r.isVariadic();
      k.outputNames.push_back(r.name.str() + (r.isVariadic() ? "..." : ""));
      ++k.outputs;
    }
    if (!k.outputBuffer.empty()) {
      const mlir::tblgen::NamedAttribute *a = findAttr(k.op, k.outputBuffer);
      if (!a || !a->attr.isSymbolRefAttr() || k.op.getNumResults() != 0)
        fail(k, "a write-back kernel has no results and names its buffer "
                "with a symbol attribute, not '" +
                    k.outputBuffer + "'");
      k.outputs = 1;
      k.outputNames.push_back("@" + k.outputBuffer);
    }
    if (variadicOut)
      k.outputs = -1;
    if (k.outputs == 0)
      fail(k, "a kernel has at least one output");
    for (size_t i = 0; i < k.ints.size(); ++i)
      if (k.ints[i].kind == ArgKind::List && i + 1 != k.ints.size())
        fail(k, "only the last integer attribute can be a list");
    k.numInts = !k.ints.empty() && k.ints.back().kind == ArgKind::List
                    ? -1
                    : int(k.ints.size());
    k.numFloats = int(k.floats.size());
    kernels.push_back(std::move(k));
  }
  return kernels;
}
} // namespace etllm_tblgen
