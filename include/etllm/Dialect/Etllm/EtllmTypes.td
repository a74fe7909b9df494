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

    The other GGUF block formats cannot be written that way without losing
    bits (Q5_0 and Q5_1 have 5-bit values; Q4_K, Q5_K and Q6_K super-blocks
    of 256 values with 6-bit or int8 scales of an f16 scale), so the type
    names them instead: `!etllm.qweight<shape, q4_k>` is a weight kept in
    ggml's Q4_K blocks, bit for bit (scheme `q5_0`, `q5_1`, `q4_k`, `q5_k`,
    `q6_k`; the last dimension a multiple of the block, 32 or 256). Its
    bits, group, symmetry and scale type are those the scheme implies (5, 4
    or 6 bits; 32 values per scale, 16 for Q6_K; symmetric for Q5_0 and
    Q6_K; f16) and are not printed.

    Example:

    ```mlir
    !etllm.qweight<128x64, i4, group 32, sym, f16>
    !etllm.qweight<640x2048, q6_k>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "unsigned":$bits,
    "int64_t":$groupSize,
    "bool":$symmetric,
    "::mlir::Type":$scaleType,
    "::mlir::etllm::QWeightScheme":$scheme
  );
  let builders = [
    // An affine weight.
    TypeBuilder<(ins "::llvm::ArrayRef<int64_t>":$shape, "unsigned":$bits,
                     "int64_t":$groupSize, "bool":$symmetric,
                     "::mlir::Type":$scaleType), [{
      return $_get($_ctxt, shape, bits, groupSize, symmetric, scaleType,
                   ::mlir::etllm::QWeightScheme::affine);
    }]>,
    // A weight of a ggml scheme, with the parameters it implies.
    TypeBuilder<(ins "::llvm::ArrayRef<int64_t>":$shape,
                     "::mlir::etllm::QWeightScheme":$scheme)>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// A ggml block scheme (not affine).
    bool isGgml() const {
      return getScheme() != ::mlir::etllm::QWeightScheme::affine;
    }
    /// Values per block of a ggml scheme (32 or 256), 0 when affine.
    int64_t getGgmlBlockValues() const;
    int64_t getRank() const { return getShape().size(); }
    /// Number of groups along the last dimension.
    int64_t getNumGroups() const { return getShape().back() / getGroupSize(); }
    /// The float tensor this weight stands for.
    ::mlir::RankedTensorType getDequantizedType(::mlir::Type elementType) const;
  }];
}

def Etllm_QActType : Etllm_Type<"QAct", "qact"> {
  let summary = "quantized activation";
  let description = [{
    A float activation quantized to `bits`-bit integers with one scale (and
    zero point when asymmetric) per row (`per_token`), per tensor, or per
    block of 32 consecutive values of a row (`per_block`, symmetric only:
    llama.cpp's Q8_0 activations, the last block of a row may be shorter).
    Produced by `etllm.quantize_dynamic`, whose scales are computed from the
    data on every run, or by `etllm.quantize_static` (per tensor,
    symmetric), whose one scale was fixed at export by calibration; consumed
    by `etllm.qlinear`. The layout stores a scale per row either way.

    A quantized KV cache (`model.kv_cache_dtype: int8`) is a buffer of this
    type: `[B, Hkv, T, D]`, `per_token`, `sym`, static, so that each row is
    one token's entry of one head with its own scale. `etllm.kv_cache.update`
    quantizes the rows it writes (the bytes `quantize_dynamic` gives them)
    and `etllm.sdpa` reads keys and values as `scale * q`.

    Example:

    ```mlir
    !etllm.qact<1x?x64, i8, per_token, asym>
    !etllm.qact<1x?x2048, i8, per_block, sym>
    !etllm.qact<1x4x512x8, i8, per_token, sym>   // an int8 KV cache
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
    /// The float tensor of the same shape (what the values stand for).
    ::mlir::RankedTensorType getDequantizedType(::mlir::Type elementType) const;
    /// Whether this type can hold a KV cache ([B, Hkv, T, D], static,
    /// per token, symmetric, 8-bit); otherwise `why` says what is missing.
    bool isKvCacheLayout(std::string *why = nullptr) const;
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
// What a mutable buffer holds: a tensor, or a quantized KV cache (int8
// entries with one scale per token and head, `QActType::isKvCacheLayout`).
def Etllm_BufferType : AnyTypeOf<[Etllm_AnyTensor, Etllm_QAct]>;
// The keys and values `etllm.sdpa` reads: float, or a quantized KV cache.
def Etllm_KvType : AnyTypeOf<[Etllm_FloatTensor, Etllm_QAct]>;

#endif // ETLLM_DIALECT_ETLLM_TYPES_TD
