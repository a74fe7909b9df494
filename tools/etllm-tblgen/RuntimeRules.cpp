//===- RuntimeRules.cpp - The load-time rules of a kernel call ------------===//
//
// Resolves one op's load-time rules against its ODS definition: a slot per
// operand and result (the kernel call's inputs and outputs, in order), the
// element types each may have (its type constraint), equal element types and
// ranks (the upstream same-type traits), and the Etllm_Rule annotations
// (ranks, axes, minimums, float ranges, named checks).
//
//===----------------------------------------------------------------------===//
#include "RuntimeRules.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Record.h"

#include <algorithm>
#include <map>
#include <set>

using llvm::formatv;
using llvm::Record;
using llvm::StringRef;

namespace etllm_tblgen {

const char *const kRuntimeRulesDoc =
    R"(// ETLLM_OP_VALUE(Name, Slot, "name", Role, Arity, Flag)
//   Operand or result Slot of the operator (inputs first, in order, then
//   outputs), named as in ODS. Role Input or Output; Arity One, Optional
//   (present as integer attribute Flag says, or, with Flag -1, when the
//   call has more inputs than the required ones) or Variadic (one or
//   more). The rules refer to values by slot.
// ETLLM_OP_RULE(Name, Kind, A, B, N)
//   A load-time rule, checked in order (the comment says what it checks).
//   On slots A and B: ElementTypes (every value of A has an element type
//   in the DType set N), SameElementType (every value of A and of B has
//   the element type of the first value of B), Rank (every value of A has
//   rank N), MinRank (at least N), RankOf (rank of the first value of B +
//   N), MinRankOf (at least the rank of the first value of B). On integer
//   attribute A: IntMin (at least N; a List: each element), IntNonZero,
//   Axis (a dimension of the first value of slot B, in [-rank, rank); N 1:
//   rank 0 counts as 1; a List: each element, no dimension twice),
//   LengthIsRank (the List has the rank of slot B's first value entries),
//   LengthIsCount (as many entries as slot B has values). On float
//   attribute A: FloatNotNaN, FloatFinite, FloatNonNegative (finite, >= 0).
// ETLLM_OP_CHECK(Name, Check)
//   A check the rules cannot say: check<Check> in runtime/core/verify_ops.cpp
//   (the runtime does not compile without it).)";

namespace {

/// The runtime's DType enumerators in enum order, and the ODS element types
/// (def names) that map to them.
const char *const kDTypes[] = {"F32", "F16", "BF16", "I64",     "I32",
                               "I8",  "U8",  "Bool", "QWeight", "QAct"};
const std::map<std::string, std::string> kElementDTypes = {
    {"F32", "F32"}, {"F16", "F16"}, {"BF16", "BF16"}, {"I64", "I64"},
    {"I32", "I32"}, {"I8", "I8"},   {"I1", "Bool"}};

enum class Arity { One, Optional, Variadic };

struct Slot {
  std::string name;    // ODS operand/result (a write-back: the buffer attr)
  std::string display; // the runtime table's name
  bool output = false;
  Arity arity = Arity::One;
  int flag = -1;                // Optional: its has_ flag's integer index
  std::set<std::string> dtypes; // runtime DType enumerators
  bool anyDType = false;
};

struct Rule {
  std::string kind;
  int a = 0, b = 0;
  std::string n = "0"; // an integer or a DType set expression
  std::string doc;
  bool operator==(const Rule &o) const {
    return kind == o.kind && a == o.a && b == o.b && n == o.n;
  }
};

/// The order rules are checked in: ranks (what axes and lengths are
/// relative to), attribute shapes and ranges, element types, equal element
/// types, named checks.
int phase(StringRef kind) {
  return llvm::StringSwitch<int>(kind)
      .Cases("Rank", "MinRank", "RankOf", "MinRankOf", 0)
      .Cases("LengthIsRank", "LengthIsCount", 1)
      .Cases("IntMin", "IntNonZero", "Axis", 2)
      .Cases("FloatNotNaN", "FloatFinite", "FloatNonNegative", 3)
      .Case("ElementTypes", 4)
      .Case("SameElementType", 5)
      .Default(6);
}

class Resolver {
public:
  explicit Resolver(const Kernel &k) : k(k) {}

  std::vector<std::string> lines() {
    collectSlots();
    for (size_t s = 0; s < slots.size(); ++s)
      if (!slots[s].anyDType)
        add({"ElementTypes", int(s), 0, dtypeSet(slots[s].dtypes),
             "element type of " + slots[s].name + ": " +
                 dtypeList(slots[s].dtypes)});
    for (const Record *t : k.def->getValueAsListOfDefs("traits"))
      trait(t);
    std::stable_sort(rules.begin(), rules.end(),
                     [](const Rule &x, const Rule &y) {
                       return phase(x.kind) < phase(y.kind);
                     });
    std::vector<std::string> out;
    for (size_t s = 0; s < slots.size(); ++s) {
      const Slot &v = slots[s];
      out.push_back(formatv("ETLLM_OP_VALUE({0}, {1}, \"{2}\", {3}, {4}, {5})",
                            k.runtimeId, s, v.display,
                            v.output ? "Output" : "Input",
                            v.arity == Arity::One        ? "One"
                            : v.arity == Arity::Optional ? "Optional"
                                                         : "Variadic",
                            v.flag)
                        .str());
    }
    for (const Rule &r : rules)
      out.push_back(formatv("ETLLM_OP_RULE({0}, {1}, {2}, {3}, {4}) // {5}",
                            k.runtimeId, r.kind, r.a, r.b, r.n, r.doc)
                        .str());
    for (const std::string &c : checks)
      out.push_back(formatv("ETLLM_OP_CHECK({0}, {1})", k.runtimeId, c).str());
    return out;
  }

private:
  const Kernel &k;
  std::vector<Slot> slots;
  std::vector<Rule> rules;
  std::vector<std::string> checks;

  void add(Rule r) {
    if (!llvm::is_contained(rules, r))
      rules.push_back(std::move(r));
  }

  /// The DTypes of `dtypes` in enum order, as "ETLLM_DT(F32) | ..." or, with
  /// `plain`, as "F32, ...".
  static std::string dtypeSet(const std::set<std::string> &dtypes,
                              bool plain = false) {
    std::vector<std::string> terms;
    for (const char *d : kDTypes)
      if (dtypes.count(d))
        terms.push_back(plain ? std::string(d)
                              : std::string("ETLLM_DT(") + d + ")");
    return llvm::join(terms, plain ? ", " : " | ");
  }
  static std::string dtypeList(const std::set<std::string> &dtypes) {
    return dtypeSet(dtypes, /*plain=*/true);
  }

  /// The element types a value of type constraint `t` may have.
  void addDTypes(const Slot &slot, const Record *t, Slot &out) {
    if (t->isSubClassOf("Optional") || t->isSubClassOf("Variadic"))
      return addDTypes(slot, t->getValueAsDef("baseType"), out);
    if (t->getValue("etllmElementTypes")) {
      for (const Record *e : t->getValueAsListOfDefs("etllmElementTypes")) {
        auto it = kElementDTypes.find(e->getName().str());
        if (e->getName() == "AnyType")
          out.anyDType = true;
        else if (it != kElementDTypes.end())
          out.dtypes.insert(it->second);
        else
          fail(k, "'" + slot.name + "' may have element type " + e->getName() +
                      ", which has no runtime DType");
      }
      return;
    }
    if (t->getValue("etllmRuntimeDType")) {
      out.dtypes.insert(t->getValueAsString("etllmRuntimeDType").str());
      return;
    }
    if (t->isSubClassOf("AnyTypeOf")) {
      for (const Record *a : t->getValueAsListOfDefs("allowedTypes"))
        addDTypes(slot, a, out);
      return;
    }
    // Upstream's tensors of any element type (their element types are not
    // kept as a field either, but there is nothing to check).
    if (llvm::is_contained<StringRef>({"AnyType", "AnyTensor", "AnyRankedTensor"},
                           t->getName())) {
      out.anyDType = true;
      return;
    }
    fail(k, "the element types of '" + slot.name + "' (" + t->getName() +
                ") are not readable for the runtime's rules: use "
                "Etllm_TensorOf<[...]> (or Etllm_QWeight, Etllm_QAct, "
                "AnyTypeOf them)");
  }

  void collectSlots() {
    for (int i = 0, e = k.op.getNumOperands(); i < e; ++i) {
      const mlir::tblgen::NamedTypeConstraint &o = k.op.getOperand(i);
      Slot s;
      s.name = s.display = o.name.str();
      s.arity = o.isOptional()   ? Arity::Optional
                : o.isVariadic() ? Arity::Variadic
                                 : Arity::One;
      for (size_t a = 0; a < k.ints.size(); ++a)
        if (k.ints[a].kind == ArgKind::Input && k.ints[a].name == o.name)
          s.flag = int(a);
      addDTypes(s, &o.constraint.getDef(), s);
      slots.push_back(std::move(s));
    }
    for (int i = 0, e = k.op.getNumResults(); i < e; ++i) {
      const mlir::tblgen::NamedTypeConstraint &r = k.op.getResult(i);
      Slot s;
      s.name = s.display = r.name.str();
      s.output = true;
      s.arity = r.isVariadic() ? Arity::Variadic : Arity::One;
      addDTypes(s, &r.constraint.getDef(), s);
      slots.push_back(std::move(s));
    }
    if (!k.outputBuffer.empty()) {
      Slot s;
      s.name = k.outputBuffer;
      s.display = "@" + k.outputBuffer;
      s.output = true;
      s.anyDType = true; // the buffer's declaration says; rules may add more
      slots.push_back(std::move(s));
    }
    // The runtime places inputs by these rules; refuse what it could not.
    int variadic[2] = {0, 0}, unflagged = 0, optional = 0;
    for (const Slot &s : slots) {
      variadic[s.output] += s.arity == Arity::Variadic;
      optional += s.arity == Arity::Optional;
      unflagged += s.arity == Arity::Optional && s.flag < 0;
    }
    if (variadic[0] > 1 || variadic[1] > 1 || (variadic[0] && optional) ||
        unflagged > 1)
      fail(k, "the runtime cannot place the inputs of an op with more than "
              "one variadic operand (or result), a variadic and an optional "
              "operand, or two optional operands without Etllm_Has<> flags");
  }

  int slotOf(StringRef name) const {
    for (size_t s = 0; s < slots.size(); ++s)
      if (slots[s].name == name)
        return int(s);
    fail(k, "a load-time rule names '" + name +
                "', which is no operand or result of the op");
  }

  /// The index of the contract's integer attribute `name`, which must be a
  /// plain integer or (with `list`) an Etllm_Each list; with `listOnly`,
  /// only a list.
  int intAttr(StringRef name, bool listOnly = false) const {
    for (size_t i = 0; i < k.ints.size(); ++i) {
      const KernelArg &a = k.ints[i];
      if (a.name != name || a.kind == ArgKind::Input)
        continue;
      bool ok = listOnly ? a.kind == ArgKind::List
                         : a.kind == ArgKind::Value || a.kind == ArgKind::List;
      if (!ok)
        fail(k, "a load-time rule on integer attribute '" + name +
                    "' needs an " +
                    (listOnly ? "Etllm_Each" : "Etllm_Int or Etllm_Each") +
                    " attribute of the kernel contract");
      return int(i);
    }
    fail(k, "a load-time rule names '" + name +
                "', which is no integer attribute of the kernel contract");
  }

  int floatAttr(StringRef name) const {
    for (size_t i = 0; i < k.floats.size(); ++i)
      if (k.floats[i].name == name)
        return int(i);
    fail(k, "a load-time rule names '" + name +
                "', which is no float attribute of the kernel contract");
  }

  /// Equal element types (and, with `rank`, ranks) for the slots of `names`.
  void group(const std::vector<int> &members, bool dtype, bool rank,
             const std::string &why) {
    if (members.size() < 2)
      return;
    // The reference is a value that is not variadic when there is one.
    int ref = members.front();
    for (int m : members)
      if (slots[m].arity != Arity::Variadic) {
        ref = m;
        break;
      }
    if (slots[ref].arity == Arity::Variadic) {
      if (dtype)
        add({"SameElementType", ref, ref, "0",
             "one element type for " + slots[ref].name + " (" + why + ")"});
      if (rank)
        add({"RankOf", ref, ref, "0",
             "one rank for " + slots[ref].name + " (" + why + ")"});
    }
    for (int m : members) {
      if (m == ref)
        continue;
      std::string pair = slots[m].name + " and " + slots[ref].name;
      if (dtype)
        add({"SameElementType", m, ref, "0",
             "one element type for " + pair + " (" + why + ")"});
      if (rank)
        add({"RankOf", m, ref, "0", "one rank for " + pair + " (" + why + ")"});
    }
  }

  std::vector<int> slotsNamed(const std::vector<StringRef> &names) const {
    std::vector<int> out;
    for (StringRef n : names)
      out.push_back(slotOf(n));
    return out;
  }

  std::vector<int> allSlots(bool inputsOnly) const {
    std::vector<int> out;
    for (size_t s = 0; s < slots.size(); ++s)
      if (!inputsOnly || !slots[s].output)
        out.push_back(int(s));
    return out;
  }

  void trait(const Record *t) {
    StringRef name = t->getName();
    if (name == "SameOperandsAndResultType")
      return group(allSlots(false), true, true, name.str());
    if (name == "SameOperandsAndResultElementType")
      return group(allSlots(false), true, false, name.str());
    if (name == "SameOperandsAndResultShape")
      return group(allSlots(false), false, true, name.str());
    if (name == "SameTypeOperands")
      return group(allSlots(true), true, true, name.str());
    if (name == "SameOperandsElementType")
      return group(allSlots(true), true, false, name.str());
    if (name == "SameOperandsShape")
      return group(allSlots(true), false, true, name.str());
    for (const char *cls : {"AllTypesMatch", "AllElementTypesMatch",
                            "AllRanksMatch", "AllShapesMatch"})
      if (t->isSubClassOf(cls)) {
        std::vector<StringRef> names = t->getValueAsListOfStrings("values");
        bool types = StringRef(cls) == "AllTypesMatch";
        bool elements = StringRef(cls) == "AllElementTypesMatch";
        return group(slotsNamed(names), types || elements, !elements, cls);
      }
    if (t->isSubClassOf("Etllm_Rule"))
      annotation(t);
  }

  void annotation(const Record *t) {
    StringRef kind = t->getValueAsString("etllmRule");
    std::vector<StringRef> values = t->getValueAsListOfStrings("etllmValues");
    StringRef attr = t->getValueAsString("etllmAttr");
    int64_t n = t->getValueAsInt("etllmInt");
    // The trait's text in the op reference is "runtime: <doc>".
    std::string doc = t->getValueAsString("trait").str();
    doc = doc.substr(doc.find(':') + 2);
    auto need = [&](size_t numValues) {
      if (values.size() != numValues)
        fail(k, "malformed load-time rule '" + doc + "'");
    };
    if (kind == "Rank" || kind == "MinRank") {
      need(1);
      if (n < 0)
        fail(k, "a rank is not negative: '" + doc + "'");
      return add({kind.str(), slotOf(values[0]), 0, std::to_string(n), doc});
    }
    if (kind == "RankOf" || kind == "MinRankOf") {
      need(2);
      return add({kind.str(), slotOf(values[0]), slotOf(values[1]),
                  std::to_string(n), doc});
    }
    if (kind == "SameElementType") {
      if (values.size() < 2)
        fail(k, "Etllm_SameElementType needs two values or more");
      return group(slotsNamed(values), true, false, "Etllm_SameElementType");
    }
    if (kind == "IntMin")
      return add({kind.str(), intAttr(attr), 0, std::to_string(n), doc});
    if (kind == "IntNonZero")
      return add({kind.str(), intAttr(attr), 0, "0", doc});
    if (kind == "Axis") {
      need(1);
      return add({kind.str(), intAttr(attr), slotOf(values[0]),
                  std::to_string(n), doc});
    }
    if (kind == "LengthIsRank" || kind == "LengthIsCount") {
      need(1);
      int s = slotOf(values[0]);
      if (kind == "LengthIsCount" && slots[s].arity != Arity::Variadic)
        fail(k, "Etllm_LengthIsCount needs a variadic value, not '" +
                    values[0] + "'");
      return add({kind.str(), intAttr(attr, /*listOnly=*/true), s, "0", doc});
    }
    if (kind == "FloatNotNaN" || kind == "FloatFinite" ||
        kind == "FloatNonNegative")
      return add({kind.str(), floatAttr(attr), 0, "0", doc});
    if (kind == "Check") {
      if (attr.empty() || !llvm::all_of(attr, [](char c) {
            return llvm::isLower(c) || llvm::isDigit(c) || c == '_';
          }))
        fail(k, "Etllm_RuntimeCheck<\"" + attr +
                    "\">: a check's name is snake_case ([a-z0-9_]+)");
      checks.push_back(camelCase(attr));
      return;
    }
    fail(k, "unknown load-time rule kind '" + kind + "'");
  }
};

} // namespace

std::vector<std::string> runtimeRuleLines(const Kernel &k) {
  return Resolver(k).lines();
}

} // namespace etllm_tblgen
