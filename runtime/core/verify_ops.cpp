//===- verify_ops.cpp - Load-time checks of every kernel call -------------===//
//
// Program::load checks each KernelCall against the operator table (ops.def,
// generated from the ops' ODS: the operand and attribute counts, then
// checkIntAttrs: enums and flags in range, the input count the has_* flags
// imply) and then here against the operator's load-time rules, generated
// into the same table from the same ODS (etllm-tblgen, see
// tools/etllm-tblgen/RuntimeRules.cpp): the element types of each operand
// and result (its type constraint), equal element types and ranks (the
// same-type traits), and the ranks, axes, minimums and float ranges the ops
// declare with Etllm_Rule annotations. This file interprets the rules; it
// names no operator, so a new op needs no edit here. The few checks no rule
// can say are named by the op in ODS (Etllm_RuntimeCheck<"name">) and
// written below as check<Name>: a name without its function does not
// compile.
//
// Everything that does not depend on the run-time sizes of dynamic
// dimensions is checked when the program loads, so a corrupt program is
// refused before any instruction runs; the kernels keep their own checks of
// sizes, which only exist at run time.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/verify_ops.h"

#include "op_tables.h"

#include <cmath>
#include <string>

namespace etllm::rt {

namespace {

//===----------------------------------------------------------------------===//
// Named checks (Etllm_RuntimeCheck)
//===----------------------------------------------------------------------===//

/// At most one -1 (the size inferred from the element count) in the
/// operator's list attribute (reshape's target shape).
Status checkOneInferredSize(const KernelCallDesc &c) {
  Span<const IntAttrInfo> attrs = intAttrs(c.op.id);
  size_t list = 0;
  while (list < attrs.size && attrs[list].kind != IntAttrKind::List)
    ++list;
  if (list == attrs.size)
    return Error("one_inferred_size: the operator has no list attribute");
  int inferred = 0;
  for (size_t i = list; i < c.ints.size; ++i)
    inferred += c.ints[i] == -1;
  if (inferred > 1)
    return Error("more than one -1 in " + std::string(attrs[list].name));
  return Status();
}

//===----------------------------------------------------------------------===//
// The tables of ops.def
//===----------------------------------------------------------------------===//

// Each table ends with an entry of OpId::NumOps (no table is empty).
enum ValueRole : bool { Input = false, Output = true };

const OpId kValueOps[] = {
#define ETLLM_OP_VALUE(Name, Slot, Str, Role, Arity, Flag) OpId::Name,
#include "etllm/runtime/ops.def"
    OpId::NumOps};
const OpValueInfo kValues[] = {
#define ETLLM_OP_VALUE(Name, Slot, Str, Role, Arity, Flag)                     \
  {Str, Role, ValueArity::Arity, Flag},
#include "etllm/runtime/ops.def"
    {"", false, ValueArity::One, -1}};

const OpId kRuleOps[] = {
#define ETLLM_OP_RULE(Name, Kind, A, B, N) OpId::Name,
#include "etllm/runtime/ops.def"
    OpId::NumOps};
#define ETLLM_DT(T) (int64_t(1) << int(DType::T))
const OpRule kRules[] = {
#define ETLLM_OP_RULE(Name, Kind, A, B, N) {RuleKind::Kind, A, B, N},
#include "etllm/runtime/ops.def"
    {RuleKind::Rank, 0, 0, 0}};
#undef ETLLM_DT

const OpId kCheckOps[] = {
#define ETLLM_OP_CHECK(Name, Check) OpId::Name,
#include "etllm/runtime/ops.def"
    OpId::NumOps};
const OpCheckInfo kChecks[] = {
#define ETLLM_OP_CHECK(Name, Check) {#Check, &check##Check},
#include "etllm/runtime/ops.def"
    {"", nullptr}};

using detail::entriesOf;

//===----------------------------------------------------------------------===//
// The interpreter
//===----------------------------------------------------------------------===//

std::string str(int64_t v) { return std::to_string(v); }

/// "f32, f16 or bf16": the DTypes of a set.
std::string dtypeList(int64_t set) {
  std::string out;
  int left = 0;
  for (int d = 0; d < kNumDTypes; ++d)
    left += (set >> d) & 1;
  for (int d = 0; d < kNumDTypes; ++d) {
    if (!((set >> d) & 1))
      continue;
    out += dtypeName(DType(d));
    --left;
    out += left > 1 ? ", " : left == 1 ? " or " : "";
  }
  return out;
}

class Call {
public:
  Call(const KernelCallDesc &c)
      : c(c), values(opValues(c.op.id)), first(values.size),
        count(values.size) {}

  /// Where each slot's values are among the call's inputs and outputs.
  Status place() {
    for (bool output : {false, true}) {
      const std::vector<ValueDesc> &have = output ? c.outputs : c.inputs;
      size_t required = 0, flagged = 0, open = 0;
      for (size_t s = 0; s < values.size; ++s) {
        const OpValueInfo &v = values[s];
        if (v.output != output)
          continue;
        if (v.arity == ValueArity::One)
          ++required;
        else if (v.arity == ValueArity::Optional && v.flag >= 0)
          flagged += present(v);
        else
          ++open; // a variadic one, or an optional one without a flag
      }
      if (have.size() < required + flagged)
        return Error(str(have.size()) + (output ? " outputs" : " inputs") +
                     ", expected at least " + str(required + flagged));
      size_t extra = have.size() - required - flagged;
      if (!open && extra)
        return Error(str(have.size()) + (output ? " outputs" : " inputs") +
                     ", expected " + str(required + flagged));
      size_t at = 0;
      for (size_t s = 0; s < values.size; ++s) {
        const OpValueInfo &v = values[s];
        if (v.output != output)
          continue;
        size_t n = 1;
        if (v.arity == ValueArity::Variadic)
          n = extra;
        else if (v.arity == ValueArity::Optional)
          n = v.flag >= 0 ? present(v) : (extra > 0 ? 1 : 0);
        first[s] = at;
        count[s] = n;
        at += n;
      }
    }
    return Status();
  }

  /// The integer attributes the table fixes (those before a List) exist.
  Status intCount() const {
    Span<const IntAttrInfo> attrs = intAttrs(c.op.id);
    size_t fixed = 0;
    while (fixed < attrs.size && attrs[fixed].kind != IntAttrKind::List)
      ++fixed;
    if (c.ints.size < fixed)
      return Error(str(c.ints.size) +
                   " integer attributes, expected at least " + str(fixed));
    return Status();
  }

  Status check(const OpRule &r) const {
    switch (r.kind) {
    case RuleKind::ElementTypes:
      for (size_t k = 0; k < count[r.a]; ++k) {
        unsigned d = unsigned(at(r.a, k).dtype);
        if (d >= 64 || !((r.n >> d) & 1))
          return Error(vname(r.a, k) + " has element type " +
                       dtypeName(at(r.a, k).dtype) + ", expected " +
                       dtypeList(r.n));
      }
      return Status();
    case RuleKind::SameElementType:
      if (!count[r.b])
        return Status();
      for (int s : {r.b, r.a})
        for (size_t k = 0; k < count[s]; ++k)
          if (at(s, k).dtype != at(r.b, 0).dtype)
            return Error(vname(s, k) + " is " + dtypeName(at(s, k).dtype) +
                         " but " + vname(r.b, 0) + " is " +
                         dtypeName(at(r.b, 0).dtype));
      return Status();
    case RuleKind::Rank:
    case RuleKind::MinRank:
      for (size_t k = 0; k < count[r.a]; ++k) {
        int rank = at(r.a, k).rank;
        if (r.kind == RuleKind::Rank ? rank != r.n : rank < r.n)
          return Error(
              vname(r.a, k) + " has rank " + str(rank) + ", expected " +
              (r.kind == RuleKind::Rank ? "" : "at least ") + str(r.n));
      }
      return Status();
    case RuleKind::RankOf:
    case RuleKind::MinRankOf: {
      if (!count[r.b])
        return Status();
      int64_t want = int64_t(at(r.b, 0).rank) + r.n;
      for (size_t k = 0; k < count[r.a]; ++k) {
        int rank = at(r.a, k).rank;
        if (r.kind == RuleKind::RankOf ? rank != want : rank < want)
          return Error(vname(r.a, k) + " has rank " + str(rank) +
                       ", expected " +
                       (r.kind == RuleKind::RankOf ? "" : "at least ") +
                       str(want) + " (the rank of " + vname(r.b, 0) +
                       (r.n ? " + " + str(r.n) : "") + ")");
      }
      return Status();
    }
    case RuleKind::IntMin:
    case RuleKind::IntNonZero:
      for (size_t i = r.a; i < intEnd(r.a); ++i) {
        if (r.kind == RuleKind::IntMin && c.ints[i] < r.n)
          return Error(iname(i) + " must be at least " + str(r.n) + ", got " +
                       str(c.ints[i]));
        if (r.kind == RuleKind::IntNonZero && c.ints[i] == 0)
          return Error(iname(i) + " must not be 0");
      }
      return Status();
    case RuleKind::Axis:
      return axes(r);
    case RuleKind::LengthIsRank:
    case RuleKind::LengthIsCount: {
      if (r.kind == RuleKind::LengthIsRank && !count[r.b])
        return Status();
      size_t have = c.ints.size - size_t(r.a);
      size_t want = r.kind == RuleKind::LengthIsRank ? size_t(at(r.b, 0).rank)
                                                     : count[r.b];
      if (have != want)
        return Error(std::string(intAttrs(c.op.id)[r.a].name) + " has " +
                     str(have) + " entries, expected " + str(want) +
                     (r.kind == RuleKind::LengthIsRank
                          ? " (the rank of " + vname(r.b, 0) + ")"
                          : " (one per value of " +
                                std::string(values[r.b].name) + ")"));
      return Status();
    }
    case RuleKind::FloatNotNaN:
      return real(r.a, /*infOk=*/true);
    case RuleKind::FloatFinite:
      return real(r.a, /*infOk=*/false);
    case RuleKind::FloatNonNegative:
      return real(r.a, /*infOk=*/false, 0.0);
    }
    return Error("unknown rule kind " + str(int(r.kind)));
  }

private:
  const KernelCallDesc &c;
  Span<const OpValueInfo> values;
  std::vector<size_t> first, count; // per slot

  size_t present(const OpValueInfo &v) const {
    return size_t(v.flag) < c.ints.size && c.ints[v.flag] != 0 ? 1 : 0;
  }

  const ValueDesc &at(int slot, size_t k) const {
    const OpValueInfo &v = values[slot];
    return (v.output ? c.outputs : c.inputs)[first[slot] + k];
  }

  /// "name (input 2)", "inputs[1] (input 1)".
  std::string vname(int slot, size_t k) const {
    const OpValueInfo &v = values[slot];
    return std::string(v.name) +
           (v.arity == ValueArity::Variadic ? "[" + str(k) + "]" : "") + " (" +
           (v.output ? "output " : "input ") + str(first[slot] + k) + ")";
  }

  /// The end of integer attribute `a`: a + 1, or all the rest for a List.
  size_t intEnd(int a) const {
    Span<const IntAttrInfo> attrs = intAttrs(c.op.id);
    return size_t(a) < attrs.size && attrs[a].kind == IntAttrKind::List
               ? c.ints.size
               : size_t(a) + 1;
  }

  /// "NAME (integer attribute I)"; a List entry names every later integer
  /// ("dims[1]").
  std::string iname(size_t i) const {
    Span<const IntAttrInfo> attrs = intAttrs(c.op.id);
    std::string name = "?";
    for (size_t k = 0; k < attrs.size; ++k) {
      if (attrs[k].kind == IntAttrKind::List && k <= i) {
        name = std::string(attrs[k].name) + "[" + str(int64_t(i - k)) + "]";
        break;
      }
      if (k == i) {
        name = attrs[k].name;
        break;
      }
    }
    return name + " (integer attribute " + str(int64_t(i)) + ")";
  }

  std::string fname(size_t i) const {
    Span<const char *const> names = floatAttrNames(c.op.id);
    return std::string(i < names.size ? names[i] : "?") + " (float attribute " +
           str(int64_t(i)) + ")";
  }

  /// Float attribute i is not NaN (and finite unless `infOk`), at least
  /// `min`.
  Status real(size_t i, bool infOk, double min = -INFINITY) const {
    double v = c.floats[i];
    if (std::isnan(v) || (!infOk && std::isinf(v)) || v < min)
      return Error(fname(i) + " " + std::to_string(v) +
                   (std::isnan(v) || std::isinf(v) ? " is not finite"
                                                   : " is out of range"));
    return Status();
  }

  /// Integer attribute r.a (each element of a List, none twice) is a
  /// dimension of slot r.b's first value.
  Status axes(const OpRule &r) const {
    if (!count[r.b])
      return Status();
    int64_t rank = at(r.b, 0).rank;
    if (r.n && rank == 0)
      rank = 1; // a scalar counts as a vector of one
    std::vector<bool> seen(size_t(rank), false);
    for (size_t i = r.a; i < intEnd(r.a); ++i) {
      int64_t d = c.ints[i];
      if (d < -rank || d >= rank)
        return Error(iname(i) + " " + str(d) + " is out of range for rank " +
                     str(rank));
      size_t norm = size_t(d < 0 ? d + rank : d);
      if (seen[norm])
        return Error(iname(i) + ": dimension " + str(d) + " appears twice");
      seen[norm] = true;
    }
    return Status();
  }
};

} // namespace

Span<const OpValueInfo> opValues(OpId id) {
  return entriesOf(kValueOps, kValues, id);
}

Span<const OpRule> opRules(OpId id) { return entriesOf(kRuleOps, kRules, id); }

Span<const OpCheckInfo> opChecks(OpId id) {
  return entriesOf(kCheckOps, kChecks, id);
}

Status verifyKernelCall(const OpInfo &op, const std::vector<ValueDesc> &in,
                        const std::vector<ValueDesc> &out, const int64_t *ints,
                        size_t nints, const double *floats, size_t nfloats) {
  // Program::load has checked the counts against ops.def already; these
  // are the contracts beyond the counts.
  KernelCallDesc desc{op, in, out, {ints, nints}, {floats, nfloats}};
  Call call(desc);
  ETLLM_RETURN_IF_ERROR(call.intCount());
  ETLLM_RETURN_IF_ERROR(call.place());
  for (const OpRule &r : opRules(op.id))
    ETLLM_RETURN_IF_ERROR(call.check(r));
  for (const OpCheckInfo &check : opChecks(op.id))
    ETLLM_RETURN_IF_ERROR(check.fn(desc));
  return Status();
}

} // namespace etllm::rt
