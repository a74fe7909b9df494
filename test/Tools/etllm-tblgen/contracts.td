// The op contract's generators on a small dialect.
// RUN: etllm-tblgen -gen-etllm-runtime-op-table -I %etllm_src/include -I %mlir_include %s | FileCheck %s --check-prefix=FRESH
// RUN: etllm-tblgen -gen-etllm-runtime-op-table -I %etllm_src/include -I %mlir_include %s --previous-op-table=%S/Inputs/previous-ops.def | FileCheck %s --check-prefix=KEEP
// RUN: etllm-tblgen -gen-etllm-runtime-op-table -I %etllm_src/include -I %mlir_include %s -DADD_THIRD --previous-op-table=%S/Inputs/previous-ops.def | FileCheck %s --check-prefix=APPEND
// RUN: not etllm-tblgen -gen-etllm-runtime-op-table -I %etllm_src/include -I %mlir_include %s -DREMOVE_FIRST --previous-op-table=%S/Inputs/previous-ops.def 2>&1 | FileCheck %s --check-prefix=REMOVED
// RUN: not etllm-tblgen -gen-etllm-runtime-op-table -I %etllm_src/include -I %mlir_include %s -DCHANGE_FIRST --previous-op-table=%S/Inputs/previous-ops.def 2>&1 | FileCheck %s --check-prefix=CHANGED
// RUN: not etllm-tblgen -gen-etllm-runtime-op-table -I %etllm_src/include -I %mlir_include %s -DBAD_HAS 2>&1 | FileCheck %s --check-prefix=BADHAS
// RUN: not etllm-tblgen -gen-etllm-runtime-op-table -I %etllm_src/include -I %mlir_include %s -DBAD_ENUM 2>&1 | FileCheck %s --check-prefix=BADENUM
// RUN: not etllm-tblgen -gen-etllm-runtime-op-table -I %etllm_src/include -I %mlir_include %s -DBAD_RULE 2>&1 | FileCheck %s --check-prefix=BADRULE
// RUN: not etllm-tblgen -gen-etllm-runtime-op-table -I %etllm_src/include -I %mlir_include %s -DBAD_TYPE 2>&1 | FileCheck %s --check-prefix=BADTYPE
// RUN: etllm-tblgen -gen-etllm-kernel-defs -I %etllm_src/include -I %mlir_include %s | FileCheck %s --check-prefix=DEFS

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "etllm/Dialect/Etllm/EtllmInterfaces.td"

def Test_Dialect : Dialect {
  let name = "test";
  let cppNamespace = "::test";
}
class Test_Op<string mnemonic, list<Trait> traits = []>
    : Op<Test_Dialect, mnemonic, traits>;

def Test_Mode : I32EnumAttr<"Mode", "", [I32EnumAttrCase<"a", 0>]> {
  let cppNamespace = "::test";
}

// A tensor whose element types the runtime's rules can read (as
// Etllm_TensorOf in EtllmBase.td).
class Test_TensorOf<list<Type> types> : RankedTensorOf<types> {
  list<Type> etllmElementTypes = types;
}

// Declaration order: first, second (third when added).
#ifndef REMOVE_FIRST
#ifdef CHANGE_FIRST
def Test_FirstOp : Test_Op<"first", [Etllm_Kernel<"first">]> {
#else
def Test_FirstOp : Test_Op<"first", [Etllm_Kernel<"first", [Etllm_Int<"dim">]>,
                                     Etllm_Axis<"dim", "input">]> {
#endif
  let summary = "the first op";
  let arguments = (ins AnyTensor:$input, I64Attr:$dim);
  let results = (outs AnyTensor:$result);
}
#endif

def Test_SecondOp : Test_Op<"second", [AttrSizedOperandSegments,
    AllElementTypesMatch<["input", "result"]>,
    Etllm_Kernel<"second", [Etllm_Has<"bias">, Etllm_Enum<"mode">,
                            Etllm_Each<"dims">], [Etllm_Float<"eps">]>,
    Etllm_Rank<"input", 2>, Etllm_LengthIsRank<"dims", "input">,
    Etllm_NonNegative<"eps">]> {
  let summary = "the second op";
  let arguments = (ins Test_TensorOf<[F32, I64]>:$input, Optional<AnyTensor>:$bias,
                       Test_Mode:$mode, DenseI64ArrayAttr:$dims, F64Attr:$eps);
  let results = (outs AnyTensor:$result);
}

#ifdef ADD_THIRD
def Test_ThirdOp : Test_Op<"third", [Etllm_Kernel<"third_kernel", [Etllm_Flag<"fast">]>]> {
  let summary = "the third op";
  let arguments = (ins Variadic<AnyTensor>:$inputs, UnitAttr:$fast);
  let results = (outs Variadic<AnyTensor>:$results);
}
#endif

#ifdef BAD_HAS
def Test_BadHasOp : Test_Op<"bad_has", [Etllm_Kernel<"bad_has", [Etllm_Has<"input">]>]> {
  let arguments = (ins AnyTensor:$input);
  let results = (outs AnyTensor:$result);
}
#endif

#ifdef BAD_ENUM
def Test_BadEnumOp : Test_Op<"bad_enum", [Etllm_Kernel<"bad_enum", [Etllm_Enum<"dim">]>]> {
  let arguments = (ins AnyTensor:$input, I64Attr:$dim);
  let results = (outs AnyTensor:$result);
}
#endif

#ifdef BAD_RULE
def Test_BadRuleOp : Test_Op<"bad_rule", [Etllm_Kernel<"bad_rule">,
                                          Etllm_Rank<"weight", 2>]> {
  let arguments = (ins AnyTensor:$input);
  let results = (outs AnyTensor:$result);
}
#endif

#ifdef BAD_TYPE
def Test_BadTypeOp : Test_Op<"bad_type", [Etllm_Kernel<"bad_type">]> {
  let arguments = (ins I64Tensor:$input);
  let results = (outs AnyTensor:$result);
}
#endif

// Without a committed table: declaration order, counts from the operands.
// FRESH: // test.first: the first op
// FRESH-NEXT: //   in: input; out: result
// FRESH-NEXT: ETLLM_OP(First, "first", 1, 1, 1, 1, 0)
// FRESH-NEXT: ETLLM_OP_INT(First, 0, "dim", Value, 0)
// The load-time rules: a slot per operand and result, then the rules.
// FRESH-NEXT: ETLLM_OP_VALUE(First, 0, "input", Input, One, -1)
// FRESH-NEXT: ETLLM_OP_VALUE(First, 1, "result", Output, One, -1)
// FRESH-NEXT: ETLLM_OP_RULE(First, Axis, 0, 0, 0) // dim is a dimension of input
// FRESH: ETLLM_OP(Second, "second", 1, 2, 1, -1, 1)
// FRESH-NEXT: ETLLM_OP_INT(Second, 0, "has_bias", Input, 1)
// FRESH-NEXT: //   mode: a = 0
// FRESH-NEXT: ETLLM_OP_INT(Second, 1, "mode", Enum, 0)
// FRESH-NEXT: ETLLM_OP_INT(Second, 2, "dims", List, 0)
// FRESH-NEXT: ETLLM_OP_FLOAT(Second, 0, "eps")
// FRESH-NEXT: ETLLM_OP_VALUE(Second, 0, "input", Input, One, -1)
// FRESH-NEXT: ETLLM_OP_VALUE(Second, 1, "bias", Input, Optional, 0)
// FRESH-NEXT: ETLLM_OP_VALUE(Second, 2, "result", Output, One, -1)
// Ranks, then attribute lengths and ranges, then element types (the type
// constraint; AnyTensor has none), then the same-type trait.
// FRESH-NEXT: ETLLM_OP_RULE(Second, Rank, 0, 0, 2) // rank(input) = 2
// FRESH-NEXT: ETLLM_OP_RULE(Second, LengthIsRank, 2, 0, 0) // len(dims) = rank(input)
// FRESH-NEXT: ETLLM_OP_RULE(Second, FloatNonNegative, 0, 0, 0) // eps finite, >= 0
// FRESH-NEXT: ETLLM_OP_RULE(Second, ElementTypes, 0, 0, ETLLM_DT(F32) | ETLLM_DT(I64)) // element type of input: F32, I64
// FRESH-NEXT: ETLLM_OP_RULE(Second, SameElementType, 2, 0, 0) // one element type for result and input (AllElementTypesMatch)
// FRESH-NOT: ETLLM_OP_RULE(Second

// The committed order is kept, whatever the .td order.
// KEEP: ETLLM_OP(Second, "second"
// KEEP: ETLLM_OP(First, "first"
// KEEP-NOT: ETLLM_OP(

// A new operator goes at the end.
// APPEND: ETLLM_OP(Second, "second"
// APPEND: ETLLM_OP(First, "first"
// APPEND: //   in: inputs...; out: results...
// APPEND-NEXT: ETLLM_OP(ThirdKernel, "third_kernel", 1, -1, -1, 1, 0)
// APPEND-NEXT: ETLLM_OP_INT(ThirdKernel, 0, "fast", Flag, 1)

// An operator programs may name is never dropped...
// REMOVED: error: operator 'first' is in {{.*}}previous-ops.def but no op declares it
// ...and its argument convention never changes.
// CHANGED: error: kernel contract of 'test.first': the argument convention of runtime operator 'first' differs from {{.*}}previous-ops.def

// Contracts are checked against the op.
// BADHAS: error: kernel contract of 'test.bad_has': Etllm_Has<"input"> needs an Optional<> operand 'input'
// BADENUM: error: kernel contract of 'test.bad_enum': attribute 'dim' (I64Attr) is not a non-optional enum attribute
// A load-time rule names an operand the op lacks; a type constraint whose
// element types the generator cannot read.
// BADRULE: error: kernel contract of 'test.bad_rule': a load-time rule names 'weight', which is no operand or result of the op
// BADTYPE: error: kernel contract of 'test.bad_type': the element types of 'input' (I64Tensor) are not readable

// The interface methods.
// DEFS-LABEL: // test.second -> second
// DEFS: static const ::mlir::etllm::KernelContract contract = {"test.second", "second", 1, 2, 1, -1, 1, false};
// DEFS: void ::test::SecondOp::appendKernelAttributes(
// DEFS-NEXT: ints.push_back(getBias() ? 1 : 0);
// DEFS-NEXT: ints.push_back(static_cast<int64_t>(getMode()));
// DEFS-NEXT: for (int64_t v : getDims())
// DEFS-NEXT: ints.push_back(v);
// DEFS-NEXT: floats.push_back(getEps().convertToDouble());
// DEFS: #ifdef GET_KERNEL_CONTRACT_LIST
// DEFS-NEXT: #undef GET_KERNEL_CONTRACT_LIST
// DEFS-NEXT: &::test::FirstOp::getKernelContract,
// DEFS-NEXT: &::test::SecondOp::getKernelContract,
