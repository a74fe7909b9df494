//===- verify_ops.cpp - Load-time checks of every kernel call -------------===//
//
// Program::load checks each KernelCall against the operator table
// (ops.def, generated from the ops' ODS contracts: the operand and attribute
// counts, then checkIntAttrs: enums and flags in range, the input count the
// has_* flags imply) and then here against what the table cannot say: axes
// against the operands' ranks, ranges of the plain integer and float
// attributes, and the element types and ranks the portable kernels (the
// reference every optimized kernel falls back to) accept. Attribute names in
// the errors come from the table. Everything that does not depend on the
// run-time sizes of dynamic dimensions is checked when the program loads, so a
// corrupt program is refused before any instruction runs; the kernels keep
// their own checks of sizes, which only exist at run time.
//
// The switch has no default: an operator added to ops.def without a case
// here is a -Wswitch warning (and a program using it is refused: see the
// end of the function).
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/verify_ops.h"

#include <cmath>
#include <string>

namespace etllm::rt {

namespace {

struct Ctx {
  const OpInfo &op;
  const std::vector<ValueDesc> &in;
  const std::vector<ValueDesc> &out;
  const int64_t *ints;
  size_t nints;
  const double *floats;
  size_t nfloats;

  Status bad(const std::string &what) const { return Error(what); }

  /// "NAME (integer attribute I)" from ops.def; a List entry names every
  /// later integer ("dims[1]").
  std::string iname(size_t i) const {
    Span<const IntAttrInfo> attrs = intAttrs(op.id);
    std::string name = "?";
    for (size_t k = 0; k < attrs.size; ++k) {
      if (attrs[k].kind == IntAttrKind::List && k <= i) {
        name = std::string(attrs[k].name) + "[" + std::to_string(i - k) + "]";
        break;
      }
      if (k == i) {
        name = attrs[k].name;
        break;
      }
    }
    return name + " (integer attribute " + std::to_string(i) + ")";
  }
  std::string fname(size_t i) const {
    Span<const char *const> names = floatAttrNames(op.id);
    return std::string(i < names.size ? names[i] : "?") + " (float attribute " +
           std::to_string(i) + ")";
  }

  /// ints[i] is an axis of a tensor of `rank` (negative counts from the
  /// end): in [-rank, rank).
  Status axis(size_t i, int rank) const {
    if (ints[i] < -int64_t(rank) || ints[i] >= int64_t(rank))
      return bad(iname(i) + " " + std::to_string(ints[i]) +
                 " is out of range for rank " + std::to_string(rank));
    return Status();
  }
  Status atLeast(size_t i, int64_t min) const {
    if (ints[i] < min)
      return bad(iname(i) + " must be at least " + std::to_string(min) +
                 ", got " + std::to_string(ints[i]));
    return Status();
  }
  /// floats[i] is not NaN (and finite unless `infOk`), at least `min`.
  Status real(size_t i, bool infOk = false, double min = -INFINITY) const {
    double v = floats[i];
    if (std::isnan(v) || (!infOk && std::isinf(v)) || v < min)
      return bad(fname(i) + " " + std::to_string(v) +
                 (std::isnan(v) || std::isinf(v) ? " is not finite"
                                                 : " is out of range"));
    return Status();
  }
  Status dtype(const ValueDesc &v, bool ok, const char *what) const {
    if (!ok)
      return bad(std::string(what) + " has element type " + dtypeName(v.dtype));
    return Status();
  }
  Status sameDType(const ValueDesc &a, const ValueDesc &b, const char *what,
                   const char *other) const {
    if (a.dtype != b.dtype)
      return bad(std::string(what) + " is " + dtypeName(a.dtype) + " but " +
                 other + " is " + dtypeName(b.dtype));
    return Status();
  }
  Status rank(const ValueDesc &v, int want, const char *what) const {
    if (v.rank != want)
      return bad(std::string(what) + " has rank " + std::to_string(v.rank) +
                 ", expected " + std::to_string(want));
    return Status();
  }
  Status index(const ValueDesc &v, const char *what) const {
    return dtype(v, v.dtype == DType::I64 || v.dtype == DType::I32,
                 (std::string(what) + " (indices, i64 or i32)").c_str());
  }
  Status numInts(size_t want) const {
    if (nints != want)
      return bad(std::to_string(nints) + " integer attributes, expected " +
                 std::to_string(want));
    return Status();
  }
};

/// Reduction dims: ints[1..], each an axis, no axis twice.
Status reductionDims(const Ctx &c) {
  if (c.nints < 1)
    return c.bad("no keepdim attribute");
  int rank = c.in[0].rank == 0 ? 1 : c.in[0].rank;
  uint32_t seen = 0;
  for (size_t i = 1; i < c.nints; ++i) {
    ETLLM_RETURN_IF_ERROR(c.axis(i, rank));
    int d = int(c.ints[i] < 0 ? c.ints[i] + rank : c.ints[i]);
    if (seen & (1u << d))
      return c.bad(c.iname(i) + ": dimension " + std::to_string(c.ints[i]) +
                   " is reduced twice");
    seen |= 1u << d;
  }
  return Status();
}

} // namespace

Status verifyKernelCall(const OpInfo &op, const std::vector<ValueDesc> &in,
                        const std::vector<ValueDesc> &out, const int64_t *ints,
                        size_t nints, const double *floats, size_t nfloats) {
  Ctx c{op, in, out, ints, nints, floats, nfloats};
  // Program::load has checked the counts against ops.def already; these
  // are the contracts beyond the counts.
  const ValueDesc &o = out[0];
  switch (op.id) {
  case OpId::Neg:
  case OpId::Abs:
  case OpId::Rsqrt:
  case OpId::Sqrt:
  case OpId::Exp:
  case OpId::Log:
  case OpId::Cos:
  case OpId::Sin:
  case OpId::Tanh:
  case OpId::Sigmoid:
  case OpId::Silu:
  case OpId::Relu:
  case OpId::Copy:
    return c.sameDType(o, in[0], "the output", "the input");
  case OpId::Gelu: // approximate: the table's Enum
    return c.sameDType(o, in[0], "the output", "the input");
  case OpId::LogicalNot:
    return c.dtype(o, o.dtype == DType::Bool || o.dtype == in[0].dtype,
                   "the output");
  case OpId::Convert:
    return c.dtype(o, o.dtype != DType::QWeight && o.dtype != DType::QAct,
                   "the output");

  case OpId::Add:
  case OpId::Sub:
  case OpId::Mul:
  case OpId::Div:
  case OpId::Pow:
  case OpId::Maximum:
  case OpId::Minimum:
    ETLLM_RETURN_IF_ERROR(c.sameDType(in[1], in[0], "input 1", "input 0"));
    return c.sameDType(o, in[0], "the output", "input 0");
  case OpId::LogicalAnd:
  case OpId::LogicalOr:
    ETLLM_RETURN_IF_ERROR(c.sameDType(in[1], in[0], "input 1", "input 0"));
    return c.dtype(o, o.dtype == DType::Bool || o.dtype == in[0].dtype,
                   "the output");
  case OpId::Eq:
  case OpId::Ne:
  case OpId::Lt:
  case OpId::Le:
  case OpId::Gt:
  case OpId::Ge:
    ETLLM_RETURN_IF_ERROR(c.sameDType(in[1], in[0], "input 1", "input 0"));
    return c.dtype(o, o.dtype == DType::Bool, "the output (bool)");
  case OpId::Where:
    ETLLM_RETURN_IF_ERROR(
        c.dtype(in[0], in[0].dtype == DType::Bool, "the condition (bool)"));
    ETLLM_RETURN_IF_ERROR(c.sameDType(in[2], in[1], "input 2", "input 1"));
    return c.sameDType(o, in[1], "the output", "input 1");
  case OpId::MaskedFill:
    ETLLM_RETURN_IF_ERROR(
        c.dtype(in[1], in[1].dtype == DType::Bool, "the mask (bool)"));
    ETLLM_RETURN_IF_ERROR(c.real(0, /*infOk=*/true));
    return c.sameDType(o, in[0], "the output", "input 0");

  case OpId::Sum:
  case OpId::Mean:
  case OpId::Amax:
    return reductionDims(c);
  case OpId::Softmax:
    return c.axis(0, in[0].rank == 0 ? 1 : in[0].rank);

  case OpId::Matmul:
  case OpId::Linear:
    return Status();
  case OpId::Embedding:
    return c.index(in[1], "input 1");

  case OpId::Arange:
    if (ints[2] == 0)
      return c.bad(c.iname(2) + " must not be 0");
    return Status();
  case OpId::Full:
  case OpId::FullLike:
    return c.real(0, /*infOk=*/true);
  case OpId::Triu:
  case OpId::Tril:
    return Status();

  case OpId::Transpose:
    ETLLM_RETURN_IF_ERROR(c.axis(0, in[0].rank));
    return c.axis(1, in[0].rank);
  case OpId::Permute: {
    ETLLM_RETURN_IF_ERROR(c.numInts(size_t(in[0].rank)));
    uint32_t seen = 0;
    for (size_t i = 0; i < nints; ++i) {
      ETLLM_RETURN_IF_ERROR(c.axis(i, in[0].rank));
      int d = int(ints[i] < 0 ? ints[i] + in[0].rank : ints[i]);
      if (seen & (1u << d))
        return c.bad(c.iname(i) + ": not a permutation (" +
                     std::to_string(ints[i]) + " twice)");
      seen |= 1u << d;
    }
    return c.rank(o, in[0].rank, "the output");
  }
  case OpId::Reshape: {
    ETLLM_RETURN_IF_ERROR(c.numInts(size_t(o.rank)));
    int inferred = 0;
    for (size_t i = 0; i < nints; ++i) {
      ETLLM_RETURN_IF_ERROR(c.atLeast(i, -1));
      inferred += ints[i] == -1;
    }
    if (inferred > 1)
      return c.bad("more than one -1 in the target shape");
    return c.sameDType(o, in[0], "the output", "the input");
  }
  case OpId::Unsqueeze:
    ETLLM_RETURN_IF_ERROR(c.axis(0, in[0].rank + 1));
    return c.rank(o, in[0].rank + 1, "the output");
  case OpId::Squeeze:
    if (in[0].rank == 0)
      return ints[0] == 0 || ints[0] == -1
                 ? Status()
                 : c.bad(c.iname(0) + " " + std::to_string(ints[0]) +
                         " is out of range for rank 0");
    return c.axis(0, in[0].rank);
  case OpId::Expand:
    ETLLM_RETURN_IF_ERROR(c.numInts(size_t(o.rank)));
    if (nints < size_t(in[0].rank))
      return c.bad(std::to_string(nints) + " sizes for an input of rank " +
                   std::to_string(in[0].rank));
    for (size_t i = 0; i < nints; ++i)
      ETLLM_RETURN_IF_ERROR(c.atLeast(i, -1));
    return c.sameDType(o, in[0], "the output", "the input");
  case OpId::Slice:
    ETLLM_RETURN_IF_ERROR(c.axis(0, in[0].rank));
    ETLLM_RETURN_IF_ERROR(c.atLeast(3, 1));
    return c.sameDType(o, in[0], "the output", "the input");
  case OpId::Cat:
    ETLLM_RETURN_IF_ERROR(c.axis(0, in[0].rank));
    for (size_t i = 0; i < in.size(); ++i) {
      ETLLM_RETURN_IF_ERROR(c.sameDType(in[i], o, "an input", "the output"));
      ETLLM_RETURN_IF_ERROR(c.rank(in[i], o.rank, "an input"));
    }
    return Status();
  case OpId::Split:
    if (nints < 2 || out.size() != nints - 1)
      return c.bad(std::to_string(out.size()) + " outputs for " +
                   std::to_string(nints < 1 ? 0 : nints - 1) + " sizes");
    ETLLM_RETURN_IF_ERROR(c.axis(0, in[0].rank));
    for (size_t i = 1; i < nints; ++i)
      ETLLM_RETURN_IF_ERROR(c.atLeast(i, 0));
    for (const ValueDesc &v : out)
      ETLLM_RETURN_IF_ERROR(c.sameDType(v, in[0], "an output", "the input"));
    return Status();
  case OpId::IndexSelect:
  case OpId::Gather:
    ETLLM_RETURN_IF_ERROR(c.axis(0, in[0].rank));
    return c.index(in[1], "input 1");
  case OpId::IndexCopy:
    ETLLM_RETURN_IF_ERROR(c.axis(0, in[0].rank));
    ETLLM_RETURN_IF_ERROR(c.index(in[1], "input 1"));
    return c.sameDType(o, in[0], "the output", "input 0");
  case OpId::IndexPut:
    ETLLM_RETURN_IF_ERROR(c.axis(0, in[0].rank));
    ETLLM_RETURN_IF_ERROR(c.index(in[1], "input 1"));
    return c.sameDType(o, in[0], "the output", "input 0");

  case OpId::RmsNorm:
    ETLLM_RETURN_IF_ERROR(c.real(0, false, 0.0));
    return c.real(1);
  case OpId::LayerNorm: // has_weight/has_bias: the table's Input flags
    return c.real(0, false, 0.0);
  case OpId::Rope: // convention: the table's Enum
    ETLLM_RETURN_IF_ERROR(c.real(0));
    ETLLM_RETURN_IF_ERROR(c.rank(in[0], 4, "input 0"));
    ETLLM_RETURN_IF_ERROR(c.rank(in[1], 1, "the positions"));
    ETLLM_RETURN_IF_ERROR(c.index(in[1], "the positions"));
    ETLLM_RETURN_IF_ERROR(c.rank(in[2], 1, "inv_freq"));
    return c.dtype(in[2], isFloat(in[2].dtype), "inv_freq");
  case OpId::Sdpa: // has_mask/has_positions/causal: the table's flags
    ETLLM_RETURN_IF_ERROR(c.atLeast(3, 0));
    ETLLM_RETURN_IF_ERROR(c.real(0));
    ETLLM_RETURN_IF_ERROR(c.real(1, false, 0.0));
    for (int i = 0; i < 3; ++i)
      ETLLM_RETURN_IF_ERROR(c.rank(in[i], 4, "q, k and v"));
    return Status();
  case OpId::KvCacheUpdate:
    ETLLM_RETURN_IF_ERROR(c.axis(0, in[0].rank));
    ETLLM_RETURN_IF_ERROR(c.index(in[1], "the positions"));
    ETLLM_RETURN_IF_ERROR(c.sameDType(in[2], in[0], "the value", "the cache"));
    return c.sameDType(o, in[0], "the output", "the cache");

  case OpId::Lora:
    ETLLM_RETURN_IF_ERROR(
        c.dtype(in[0], in[0].dtype == DType::F32, "the input (f32)"));
    ETLLM_RETURN_IF_ERROR(
        c.dtype(in[1], in[1].dtype == DType::F32, "the base (f32)"));
    ETLLM_RETURN_IF_ERROR(c.sameDType(o, in[1], "the output", "the base"));
    if (in[0].rank < 1 || in[0].rank != in[1].rank)
      return c.bad("the input and the base must have one rank >= 1");
    if (ints[0] < 0)
      return c.bad(c.iname(0) + " must not be negative");
    return Status();

  case OpId::QuantizeDynamic:
    return c.dtype(o, o.dtype == DType::QAct, "the output (qact)");
  case OpId::QLinear:
    return c.dtype(in[1], in[1].dtype == DType::QWeight,
                   "the weight (qweight)");
  case OpId::QEmbedding:
    ETLLM_RETURN_IF_ERROR(
        c.dtype(in[0], in[0].dtype == DType::QWeight, "the table (qweight)"));
    return c.index(in[1], "input 1");
  case OpId::Dequantize:
    return c.dtype(in[0], in[0].dtype == DType::QWeight, "the input (qweight)");

  case OpId::TopK:
    ETLLM_RETURN_IF_ERROR(c.atLeast(0, 1));
    if (in[0].rank < 1)
      return c.bad("the input has rank 0");
    ETLLM_RETURN_IF_ERROR(c.axis(1, in[0].rank));
    ETLLM_RETURN_IF_ERROR(c.sameDType(o, in[0], "the values", "the input"));
    return c.dtype(out[1], out[1].dtype == DType::I64, "the indices (i64)");

  case OpId::Moe: {
    // top_k, n_group and topk_group against the router's experts are run
    // time checks (the kernel's); here what the operands' types fix.
    ETLLM_RETURN_IF_ERROR(c.atLeast(0, 1));
    ETLLM_RETURN_IF_ERROR(c.atLeast(3, 1));
    ETLLM_RETURN_IF_ERROR(c.atLeast(4, 1));
    if (in[0].rank < 1)
      return c.bad("the input has rank 0");
    ETLLM_RETURN_IF_ERROR(c.sameDType(o, in[0], "the result", "the input"));
    ETLLM_RETURN_IF_ERROR(c.rank(in[1], 2, "the router"));
    ETLLM_RETURN_IF_ERROR(c.dtype(in[1], isFloat(in[1].dtype), "the router"));
    const char *names[] = {"the gate", "the up", "the down"};
    for (int i = 0; i < 3; ++i) {
      ETLLM_RETURN_IF_ERROR(c.rank(in[size_t(2 + i)], 3, names[i]));
      ETLLM_RETURN_IF_ERROR(
          c.dtype(in[size_t(2 + i)],
                  isFloat(in[size_t(2 + i)].dtype) ||
                      in[size_t(2 + i)].dtype == DType::QWeight,
                  names[i]));
    }
    if (in.size() > 5) {
      ETLLM_RETURN_IF_ERROR(c.rank(in[5], 1, "the score bias"));
      ETLLM_RETURN_IF_ERROR(
          c.dtype(in[5], in[5].dtype == DType::F32, "the score bias (f32)"));
    }
    ETLLM_RETURN_IF_ERROR(c.real(0, /*infOk=*/false, 0.0));
    return c.real(1, /*infOk=*/false, 0.0);
  }

  case OpId::NumOps:
    break;
  }
  return c.bad("operator '" + std::string(op.name) +
               "' has no load-time contract in verify_ops.cpp");
}

} // namespace etllm::rt
