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
//                                 fails when the committed copy differs),
//                                 with each operator's load-time rules
//                                 (RuntimeRules.cpp)
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
#include "KernelContract.h"
#include "RuntimeRules.h"

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
using namespace etllm_tblgen;

static llvm::cl::opt<std::string> previousOpTable(
    "previous-op-table",
    llvm::cl::desc("The committed ops.def whose order the generated runtime "
                   "table keeps (append-only)"),
    llvm::cl::value_desc("path"));

namespace {

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
// What Program::load checks of a call beyond its counts, from the op's ODS
// (type constraints, same-type traits, Etllm_Rule annotations); these lines
// are not part of the argument convention:
)";
  os << kRuntimeRulesDoc;
  os << R"(
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
#ifndef ETLLM_OP_VALUE
#define ETLLM_OP_VALUE(Name, Slot, Str, Role, Arity, Flag)
#endif
#ifndef ETLLM_OP_RULE
#define ETLLM_OP_RULE(Name, Kind, A, B, N)
#endif
#ifndef ETLLM_OP_CHECK
#define ETLLM_OP_CHECK(Name, Check)
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
    for (const std::string &line : runtimeRuleLines(*k))
      os << line << "\n";
  }
  os << "\n#undef ETLLM_OP\n#undef ETLLM_OP_INT\n#undef ETLLM_OP_FLOAT\n"
        "#undef ETLLM_OP_VALUE\n#undef ETLLM_OP_RULE\n#undef ETLLM_OP_CHECK\n";
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
