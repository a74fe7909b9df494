//===- EtllmTypes.td - etllm types -------------------------*- tablegen -*-===//
#ifndef ETLLM_DIALECT_ETLLM_TYPES_TD
#define ETLLM_DIALECT_ETLLM_TYPES_TD

include "etllm/Dialect/Etllm/EtllmAttrs.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class Etllm_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Etllm_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Etllm_QWeightType : Etllm_Type<"QWeight", "qweight"> {
  let summary = "block-wise quantized weight";
  let description = [{
    A weight of logical (float) shape `shape` stored as `bits`-bit integers
    in groups of `group_size` consecutive elements along the last dimension,
    each group with its own scale (and, when asymmetric, its own offset):

    * `sym`: signed q in [-2^(b-1), 2^(b-1) - 1], `x = scale * q`
    * `asym`: unsigned q in [0, 2^b - 1], `x = scale * q + offset`

    `scale_type` (f16 or f32) is the storage type of scales and offsets.
    MLIR 19's quant dialect has per-tensor and per-axis types but no
    block-wise one, hence this type. GGUF Q8_0 is `i8, group 32, sym, f16`;
    Q4_0 is `i4, group 32, sym, f16` (with q - 8 as the signed value); Q4_1
    is `i4, group 32, asym, f16` — all represented exactly.

    Example:

    ```mlir
    !etllm.qweight<128x64, i4, group 32, sym, f16>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "unsigned":$bits,
    "int64_t":$groupSize,
    "bool":$symmetric,
    "::mlir::Type":$scaleType
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
    /// Number of groups along the last dimension.
    int64_t getNumGroups() const { return getShape().back() / getGroupSize(); }
    /// The float tensor this weight stands for.
    ::mlir::RankedTensorType getDequantizedType(::mlir::Type elementType) const;
  }];
}

def Etllm_QActType : Etllm_Type<"QAct", "qact"> {
  let summary = "dynamically quantized activation";
  let description = [{
    A float activation quantized at run time to `bits`-bit integers with one
    scale (and zero point when asymmetric) per row (`per_token`), per
    tensor, or per block of 32 consecutive values of a row (`per_block`,
    symmetric only: llama.cpp's Q8_0 activations, the last block of a row
    may be shorter). Produced by `etllm.quantize_dynamic`, consumed by
    `etllm.qlinear`. The scales are computed from the data on every run;
    nothing about them is fixed at compile time.

    Example:

    ```mlir
    !etllm.qact<1x?x64, i8, per_token, asym>
    !etllm.qact<1x?x2048, i8, per_block, sym>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "unsigned":$bits,
    "ActQuantGranularity":$granularity,
    "bool":$symmetric
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
  }];
}

// The C++ type is plain mlir::Type so that assembly formats print the full
// `!etllm.qweight<...>` rather than the stripped `<...>` form.
// `etllmRuntimeDType` is the runtime's element type of such a value (the
// DType enumerator etllm-tblgen writes into the runtime's rules).
def Etllm_QWeight : Type<CPred<"::llvm::isa<::mlir::etllm::QWeightType>($_self)">,
                         "block-quantized weight", "::mlir::Type"> {
  string etllmRuntimeDType = "QWeight";
}
def Etllm_QAct : Type<CPred<"::llvm::isa<::mlir::etllm::QActType>($_self)">,
                      "dynamically quantized activation", "::mlir::Type"> {
  string etllmRuntimeDType = "QAct";
}
def Etllm_ParamType : AnyTypeOf<[Etllm_AnyTensor, Etllm_QWeight]>;

#endif // ETLLM_DIALECT_ETLLM_TYPES_TD
