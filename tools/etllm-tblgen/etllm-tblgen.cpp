//===- etllm-tblgen.cpp - The op contract's TableGen backends -------------===//
//
// Every etllm op the runtime executes declares its kernel contract once, in
// its ODS definition (`Etllm_Kernel<...>` in EtllmInterfaces.td): the runtime
// operator's name and how each integer and float attribute of the kernel call
// is derived from the op. Two generators read those declarations:
//
//   -gen-etllm-kernel-defs        the ops' KernelOpInterface methods and the
//                                 table of contracts (compiled into the
//                                 dialect; the serializer asks the interface)
//   -gen-etllm-runtime-op-table   runtime/include/etllm/runtime/ops.def, the
//                                 runtime's operator table (committed, since
//                                 the runtime builds without LLVM; the build
//                                 fails when the committed copy differs)
//
// The runtime table is append-only (program files store operator names):
// given the committed table (--previous-op-table), the generator keeps its
// order, appends operators that are new, and refuses to drop one or to
// change an existing one's argument convention.
//
// Written on MLIR's TableGen library (mlir::tblgen::Operator), like the
// backends of mlir-tblgen and IREE's VM opcode tables.
//
//===----------------------------------------------------------------------===//
#include "mlir/TableGen/Attribute.h"
#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <optional>
#include <string>
#include <vector>

using llvm::formatv;
using llvm::Record;
using llvm::RecordKeeper;
using llvm::StringRef;
using mlir::tblgen::Operator;

static llvm::cl::opt<std::string> previousOpTable(
    "previous-op-table",
    llvm::cl::desc("The committed ops.def whose order the generated runtime "
                   "table keeps (append-only)"),
    llvm::cl::value_desc("path"));

namespace {

/// How one kernel attribute is derived from the op.
enum class ArgKind { Value, Enum, Flag, Input, List, Float };

struct KernelArg {
  ArgKind kind;
  std::string name;    // the ODS attribute or operand
  std::string getter;  // its C++ accessor
  std::string runtime; // the name in the runtime table
  // Enums: the cases in value order (0..N-1).
  std::vector<std::string> cases;
};

/// One op's kernel contract, resolved against its ODS definition.
struct Kernel {
  const Record *def;
  Operator op;
  std::string name;      // runtime operator name ("rms_norm")
  std::string runtimeId; // runtime C++ identifier (OpId::RmsNorm)
  std::vector<KernelArg> ints, floats;
  std::string outputBuffer; // symbol attr naming the output buffer, if any
  int minInputs = 0, maxInputs = 0, outputs = 0, numInts = 0, numFloats = 0;
  std::vector<std::string> inputNames, outputNames;
};

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
const Record *enumInfoOf(const mlir::tblgen::Attribute &attr) {
  const Record &def = attr.getDef();
  if (def.isSubClassOf("EnumAttrInfo"))
    return &def;
  if (const llvm::RecordVal *v = def.getValue("enum"))
    if (auto *di = llvm::dyn_cast<llvm::DefInit>(v->getValue()))
      if (di->getDef()->isSubClassOf("EnumAttrInfo"))
        return di->getDef();
  return nullptr;
}

const mlir::tblgen::NamedAttribute *findAttr(const Operator &op,
                                             StringRef name) {
  for (const mlir::tblgen::NamedAttribute &a : op.getAttributes())
    if (a.name == name)
      return &a;
  return nullptr;
}

const mlir::tblgen::NamedTypeConstraint *findOperand(const Operator &op,
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

KernelArg resolveArg(const Kernel &k, const Record *argDef, bool isFloat) {
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
    if (!contract)
      continue;
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

//===----------------------------------------------------------------------===//
// -gen-etllm-kernel-defs
//===----------------------------------------------------------------------===//

std::string qualifiedClass(const Kernel &k) {
  return k.op.getQualCppClassName();
}

bool emitKernelDefs(const RecordKeeper &records, llvm::raw_ostream &os) {
  llvm::emitSourceFileHeader("etllm kernel contracts (KernelOpInterface)", os,
                             records);
  std::vector<Kernel> kernels = collectKernels(records);
  os << "#ifdef GET_KERNEL_CONTRACT_DEFS\n#undef GET_KERNEL_CONTRACT_DEFS\n\n";
  for (const Kernel &k : kernels) {
    std::string cls = qualifiedClass(k);
    os << formatv("// {0} -> {1}\n", k.op.getOperationName(), k.name);
    os << formatv("const ::mlir::etllm::KernelContract &{0}::"
                  "getKernelContract() {{\n"
                  "  static const ::mlir::etllm::KernelContract contract = "
                  "{{\"{1}\", \"{2}\", {3}, {4}, {5}, {6}, {7}, {8}};\n"
                  "  return contract;\n}\n",
                  cls, k.op.getOperationName(), k.name, k.minInputs,
                  k.maxInputs, k.outputs, k.numInts, k.numFloats,
                  k.outputBuffer.empty() ? "false" : "true");
    os << formatv("void {0}::appendKernelAttributes("
                  "::llvm::SmallVectorImpl<int64_t> &ints, "
                  "::llvm::SmallVectorImpl<double> &floats) {{\n",
                  cls);
    if (k.ints.empty())
      os << "  (void)ints;\n";
    if (k.floats.empty())
      os << "  (void)floats;\n";
    for (const KernelArg &a : k.ints) {
      switch (a.kind) {
      case ArgKind::Value:
      case ArgKind::Enum:
        os << formatv("  ints.push_back(static_cast<int64_t>({0}()));\n",
                      a.getter);
        break;
      case ArgKind::Flag:
      case ArgKind::Input:
        os << formatv("  ints.push_back({0}() ? 1 : 0);\n", a.getter);
        break;
      case ArgKind::List:
        os << formatv("  for (int64_t v : {0}())\n    ints.push_back(v);\n",
                      a.getter);
        break;
      case ArgKind::Float:
        break;
      }
    }
    for (const KernelArg &a : k.floats)
      os << formatv("  floats.push_back({0}().convertToDouble());\n", a.getter);
    os << "}\n\n";
  }
  os << "#endif // GET_KERNEL_CONTRACT_DEFS\n\n";

  os << "#ifdef GET_KERNEL_CONTRACT_LIST\n#undef GET_KERNEL_CONTRACT_LIST\n";
  for (const Kernel &k : kernels)
    os << formatv("&{0}::getKernelContract,\n", qualifiedClass(k));
  os << "#endif // GET_KERNEL_CONTRACT_LIST\n";
  return false;
}

//===----------------------------------------------------------------------===//
// -gen-etllm-runtime-op-table
//===----------------------------------------------------------------------===//

/// One operator's entries in the table: the fields of its ETLLM_OP line
/// after the C++ name, and of its ETLLM_OP_INT / ETLLM_OP_FLOAT lines after
/// the C++ name and index. This is its argument convention.
struct TableEntry {
  std::string name;
  std::vector<std::string> op;
  std::vector<std::vector<std::string>> ints, floats;
};

/// The fields of `ETLLM_X(a, b, ...)` (no commas inside fields).
std::vector<std::string> fieldsOf(StringRef line) {
  line = line.drop_until([](char c) { return c == '('; }).drop_front();
  line = line.take_until([](char c) { return c == ')'; });
  llvm::SmallVector<StringRef> parts;
  line.split(parts, ',');
  std::vector<std::string> out;
  for (StringRef p : parts)
    out.push_back(p.trim().str());
  return out;
}

/// The committed table, in order.
std::vector<TableEntry> readPreviousTable() {
  std::vector<TableEntry> entries;
  if (previousOpTable.empty())
    return entries;
  auto buf = llvm::MemoryBuffer::getFile(previousOpTable);
  if (!buf)
    return entries; // first generation
  llvm::SmallVector<StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    line = line.trim();
    bool isOp = line.starts_with("ETLLM_OP(");
    bool isInt = line.starts_with("ETLLM_OP_INT(");
    bool isFloat = line.starts_with("ETLLM_OP_FLOAT(");
    if (!isOp && !isInt && !isFloat)
      continue;
    std::vector<std::string> f = fieldsOf(line);
    auto malformed = [&] {
      llvm::PrintFatalError(previousOpTable + ": malformed entry '" + line +
                            "'");
    };
    if (isOp) {
      if (f.size() != 7 || f[1].size() < 2 || f[1].front() != '"')
        malformed();
      TableEntry e;
      e.name = f[1].substr(1, f[1].size() - 2);
      e.op.assign(f.begin() + 1, f.end());
      entries.push_back(std::move(e));
      continue;
    }
    if (entries.empty() || f.size() < 3)
      malformed();
    (isInt ? entries.back().ints : entries.back().floats)
        .emplace_back(f.begin() + 2, f.end());
  }
  return entries;
}

/// The table entry the contract of `k` generates.
TableEntry entryOf(const Kernel &k) {
  TableEntry e;
  e.name = k.name;
  e.op = {"\"" + k.name + "\"",        std::to_string(k.minInputs),
          std::to_string(k.maxInputs), std::to_string(k.outputs),
          std::to_string(k.numInts),   std::to_string(k.numFloats)};
  for (const KernelArg &a : k.ints) {
    const char *kind = "Value";
    int64_t max = 0;
    switch (a.kind) {
    case ArgKind::Enum:
      kind = "Enum";
      max = int64_t(a.cases.size()) - 1;
      break;
    case ArgKind::Flag:
      kind = "Flag";
      max = 1;
      break;
    case ArgKind::Input:
      kind = "Input";
      max = 1;
      break;
    case ArgKind::List:
      kind = "List";
      break;
    default:
      break;
    }
    e.ints.push_back({"\"" + a.runtime + "\"", kind, std::to_string(max)});
  }
  for (const KernelArg &a : k.floats)
    e.floats.push_back({"\"" + a.runtime + "\""});
  return e;
}

/// Whether `now` reads every program written with `before` the same way:
/// the same counts and attributes; an enum may gain cases.
bool sameConvention(const TableEntry &before, const TableEntry &now) {
  if (before.op != now.op || before.floats != now.floats ||
      before.ints.size() != now.ints.size())
    return false;
  for (size_t i = 0; i < now.ints.size(); ++i) {
    const std::vector<std::string> &b = before.ints[i], &n = now.ints[i];
    if (b.size() != 3 || b[0] != n[0] || b[1] != n[1])
      return false;
    if (b[2] != n[2] && (n[1] != "Enum" || std::stoll(n[2]) < std::stoll(b[2])))
      return false;
  }
  return true;
}

std::string joined(const std::vector<std::string> &v) {
  return llvm::join(v, ", ");
}

bool emitRuntimeOpTable(const RecordKeeper &records, llvm::raw_ostream &os) {
  std::vector<Kernel> kernels = collectKernels(records);
  // The committed order first, then the new operators in declaration order.
  std::vector<const Kernel *> order;
  llvm::StringSet<> placed;
  for (const TableEntry &before : readPreviousTable()) {
    auto k = llvm::find_if(
        kernels, [&](const Kernel &k) { return k.name == before.name; });
    if (k == kernels.end())
      llvm::PrintFatalError(
          "operator '" + before.name + "' is in " + previousOpTable +
          " but no op declares it (Etllm_Kernel<\"" + before.name +
          "\">): the table is append-only because program files store "
          "operator names; keep an op that declares it");
    if (!sameConvention(before, entryOf(*k)))
      fail(*k, "the argument convention of runtime operator '" + k->name +
                   "' differs from " + previousOpTable +
                   ": programs written before would be misread; give the new "
                   "convention a new operator name (an enum may only gain "
                   "cases)");
    order.push_back(&*k);
    placed.insert(before.name);
  }
  for (const Kernel &k : kernels)
    if (!placed.contains(k.name))
      order.push_back(&k);

  os << R"(//===- ops.def - The runtime operator table ---------------------*- C++ -*-===//
//
// GENERATED from the kernel contracts of the ops in
// include/etllm/Dialect/Etllm/*.td (Etllm_Kernel) by
// `etllm-tblgen -gen-etllm-runtime-op-table`. Do not edit: change the .td
// files, then run `cmake --build build --target etllm-update-ops-def`. The
// compiler build fails while this committed copy differs from the generated
// one; the runtime builds from it without LLVM.
//
// Every operator a program can call, with its argument convention. Append
// only: program files store operator names, so the generator keeps this
// file's order, appends new operators at the end and refuses to drop an
// operator or to change an existing one's convention (an enum may gain
// cases).
//
// ETLLM_OP(Name, "name", MinInputs, MaxInputs, Outputs, NumInts, NumFloats)
//   Inputs/outputs are value indices; -1 as MaxInputs/Outputs/NumInts means
//   "variadic" (at least the minimum; at least one output).
// ETLLM_OP_INT(Name, Index, "attr", Kind, Max)
//   Integer attribute Index of the operator. Kind Value: any integer;
//   Enum: in [0, Max]; Flag: 0 or 1; Input: 0 or 1, whether the optional
//   input it names is present (present optional inputs follow the required
//   ones, in order, so MinInputs + the Input flags is the input count);
//   List: this and every later integer, one per element.
// ETLLM_OP_FLOAT(Name, Index, "attr")
//   Float attribute Index of the operator.
//
//===----------------------------------------------------------------------===//

#ifndef ETLLM_OP
#define ETLLM_OP(Name, Str, MinIn, MaxIn, Outs, Ints, Floats)
#endif
#ifndef ETLLM_OP_INT
#define ETLLM_OP_INT(Name, Index, Str, Kind, Max)
#endif
#ifndef ETLLM_OP_FLOAT
#define ETLLM_OP_FLOAT(Name, Index, Str)
#endif
)";
  for (const Kernel *k : order) {
    TableEntry e = entryOf(*k);
    os << formatv("\n// {0}: {1}\n//   in: {2}; out: {3}\n",
                  k->op.getOperationName(), k->op.getSummary().trim(),
                  k->inputNames.empty() ? "-" : joined(k->inputNames),
                  joined(k->outputNames));
    os << formatv("ETLLM_OP({0}, {1})\n", k->runtimeId, joined(e.op));
    for (size_t i = 0; i < e.ints.size(); ++i) {
      const KernelArg &a = k->ints[i];
      if (a.kind == ArgKind::Enum) {
        std::vector<std::string> cases;
        for (size_t c = 0; c < a.cases.size(); ++c)
          cases.push_back(formatv("{0} = {1}", a.cases[c], c).str());
        os << formatv("//   {0}: {1}\n", a.runtime, joined(cases));
      }
      os << formatv("ETLLM_OP_INT({0}, {1}, {2})\n", k->runtimeId, i,
                    joined(e.ints[i]));
    }
    for (size_t i = 0; i < e.floats.size(); ++i)
      os << formatv("ETLLM_OP_FLOAT({0}, {1}, {2})\n", k->runtimeId, i,
                    joined(e.floats[i]));
  }
  os << "\n#undef ETLLM_OP\n#undef ETLLM_OP_INT\n#undef ETLLM_OP_FLOAT\n";
  return false;
}

mlir::GenRegistration
    genKernelDefs("gen-etllm-kernel-defs",
                  "Generate the etllm ops' KernelOpInterface methods",
                  emitKernelDefs);
mlir::GenRegistration
    genRuntimeOpTable("gen-etllm-runtime-op-table",
                      "Generate the runtime operator table (ops.def)",
                      emitRuntimeOpTable);

} // namespace

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
