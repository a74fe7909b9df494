//===- EtllmOps.td - etllm operations ----------------------*- tablegen -*-===//
#ifndef ETLLM_DIALECT_ETLLM_OPS_TD
#define ETLLM_DIALECT_ETLLM_OPS_TD

include "etllm/Dialect/Etllm/EtllmInterfaces.td"
include "etllm/Dialect/Etllm/EtllmTypes.td"
include "etllm/Dialect/Etllm/EtllmPlanAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

// The state of every `etllm.buffer` (KV caches). Reads and writes of
// buffers are ordered through this resource.
def Etllm_BufferResource : Resource<"::mlir::etllm::BufferResource">;

//===----------------------------------------------------------------------===//
// Parameters, buffers, constants (level A)
//===----------------------------------------------------------------------===//

def Etllm_ParameterOp : Etllm_Op<"parameter", [Symbol]> {
  let summary = "declares a named parameter (an external weight)";
  let description = [{
    Declares a model weight by name and type. The bytes are not in the IR:
    they stay in the checkpoint named by the module attribute
    `etllm.checkpoint` (tensor `source`, default: the parameter's own name)
    until the serializer copies them, converted to `type`, into the program
    file. `qk_permute_heads` records that the stored rows are in the
    interleaved-pair RoPE order of GGUF/llama2.c and are permuted to the
    Hugging Face rotate-half order for this many heads. A `!etllm.qweight`
    type means the serializer quantizes (or, for already-quantized GGUF
    blocks of the same scheme, repacks exactly).

    `source_dtype` is the element type the checkpoint stores the tensor in
    (`F16`, `Q4_0`, ...: the names of etllm::formats::dtypeName), recorded
    at import so that passes can choose exact schemes for already-quantized
    weights without opening the checkpoint again.

    `stack` lists checkpoint tensors that are stacked along a new leading
    dimension to make the parameter (a mixture-of-experts layer's experts,
    [E, ...] from E tensors of the trailing shape), in that order; it
    replaces `source`.

    Small tests may give the value inline instead (`= dense<...>`).

    Example:

    ```mlir
    etllm.parameter @model.layers.0.self_attn.q_proj.weight : tensor<64x64xf32>
        {qk_permute_heads = 8 : i64, source = "blk.0.attn_q.weight",
         source_dtype = "Q4_0"}
    etllm.parameter @w : tensor<2xf32> = dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<Etllm_ParamType>:$type,
    OptionalAttr<ElementsAttr>:$value,
    OptionalAttr<StrAttr>:$source,
    OptionalAttr<Etllm_I64Attr>:$qk_permute_heads,
    OptionalAttr<StrAttr>:$source_dtype,
    OptionalAttr<StrArrayAttr>:$stack
  );
  let assemblyFormat = "$sym_name `:` $type (`=` $value^)? attr-dict";
  let hasVerifier = 1;
  let builders = [
    // A parameter that is not stacked.
    OpBuilder<(ins "::llvm::StringRef":$sym_name, "::mlir::Type":$type,
                   "::mlir::ElementsAttr":$value, "::mlir::StringAttr":$source,
                   "::mlir::IntegerAttr":$qk_permute_heads,
                   "::mlir::StringAttr":$source_dtype), [{
      build($_builder, $_state, sym_name, type, value, source,
            qk_permute_heads, source_dtype, ::mlir::ArrayAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// The checkpoint tensor name this parameter reads.
    ::llvm::StringRef getSourceName() {
      return getSource() ? *getSource() : getSymName();
    }
  }];
}

def Etllm_ParameterGetOp : Etllm_Op<"parameter.get",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the value of a parameter";
  let description = [{
    Example:

    ```mlir
    %w = etllm.parameter.get @model.embed_tokens.weight : tensor<512x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Etllm_ParamType:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Etllm_BufferOp : Etllm_Op<"buffer", [Symbol]> {
  let summary = "declares a mutable buffer (e.g. a KV cache)";
  let description = [{
    Persistent state that lives across calls of the program, zero at load.
    Read with `etllm.buffer.read`, written with `etllm.buffer.write` (the
    exported graph's write-back copy) or in place by `etllm.kv_cache.update`.
    A quantized KV cache (`etllm-quantize-kv-cache`) is a `!etllm.qact`
    buffer: int8 entries with one scale per token and head, only updated in
    place and read by `etllm.sdpa`.

    Example:

    ```mlir
    etllm.buffer @model.layers.0.self_attn.k_cache : tensor<1x4x512x8xf32>
    etllm.buffer @model.layers.0.self_attn.v_cache : !etllm.qact<1x4x512x8, i8, per_token, sym>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Etllm_BufferType>:$type);
  let assemblyFormat = "$sym_name `:` $type attr-dict";
  let hasVerifier = 1;
}

def Etllm_BufferReadOp : Etllm_Op<"buffer.read",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemRead<Etllm_BufferResource>]>]> {
  let summary = "the current value of a mutable buffer";
  let description = [{
    The value aliases the buffer's storage: an in-place update of the value
    (`etllm.kv_cache.update`) updates the buffer.

    ```mlir
    %k = etllm.buffer.read @model.layers.0.self_attn.k_cache : tensor<1x4x512x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Etllm_BufferType:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Etllm_BufferWriteOp : Etllm_Op<"buffer.write",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     Etllm_WriteBackKernel<"copy", "name">,
     Etllm_SameElementType<["value", "name"]>, Etllm_RankOf<"name", "value">,
     MemoryEffects<[MemWrite<Etllm_BufferResource>]>]> {
  let summary = "writes a whole value back into a mutable buffer";
  let description = [{
    The write-back copy torch.export inserts for every mutated buffer.
    `etllm-kv-cache-in-place` removes it when the value already lives in the
    buffer's storage.

    ```mlir
    etllm.buffer.write %k2 to @model.layers.0.self_attn.k_cache : tensor<1x4x512x8xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$value, FlatSymbolRefAttr:$name);
  let assemblyFormat = "$value `to` $name attr-dict `:` type($value)";
  let hasCanonicalizer = 1;
}

def Etllm_ConstantOp : Etllm_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let description = [{
    Small constants only (masks, scalars, RoPE frequency tables); weights are
    `etllm.parameter`s.

    ```mlir
    %c = etllm.constant dense<1.0e-05> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let builders = [OpBuilder<(ins "::mlir::ElementsAttr":$value),
    [{ build($_builder, $_state, value.getType(), value); }]>];
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

class Etllm_UnaryOp<string mnemonic, string opSummary,
                    Type T = Etllm_FloatTensor, list<Trait> traits = []>
    : Etllm_Op<mnemonic, !listconcat(traits,
          [Pure, SameOperandsAndResultType, Etllm_Kernel<mnemonic>])> {
  let summary = opSummary;
  let description = "Element-wise `" # mnemonic # "`.\n\n```mlir\n%y = etllm."
    # mnemonic # " %x : tensor<1x?x64xf32>\n```";
  let arguments = (ins T:$input);
  let results = (outs T:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Etllm_NegOp : Etllm_UnaryOp<"neg", "negation", Etllm_NumTensor> {
  let hasFolder = 1;
}
def Etllm_AbsOp : Etllm_UnaryOp<"abs", "absolute value", Etllm_NumTensor>;
def Etllm_RsqrtOp : Etllm_UnaryOp<"rsqrt", "reciprocal square root">;
def Etllm_SqrtOp : Etllm_UnaryOp<"sqrt", "square root">;
def Etllm_ExpOp : Etllm_UnaryOp<"exp", "exponential">;
def Etllm_LogOp : Etllm_UnaryOp<"log", "natural logarithm">;
def Etllm_CosOp : Etllm_UnaryOp<"cos", "cosine">;
def Etllm_SinOp : Etllm_UnaryOp<"sin", "sine">;
def Etllm_TanhOp : Etllm_UnaryOp<"tanh", "hyperbolic tangent">;
def Etllm_SigmoidOp : Etllm_UnaryOp<"sigmoid", "logistic sigmoid">;
def Etllm_SiluOp : Etllm_UnaryOp<"silu", "x * sigmoid(x)">;
def Etllm_ReluOp : Etllm_UnaryOp<"relu", "max(x, 0)">;

def Etllm_GeluOp : Etllm_Op<"gelu", [Pure, SameOperandsAndResultType,
    Etllm_Kernel<"gelu", [Etllm_Enum<"approximate">]>]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `approximate = none` is x * Phi(x) with erf; `tanh` is the tanh
    approximation (Hugging Face `gelu_pytorch_tanh`, used by Gemma).

    ```mlir
    %y = etllm.gelu %x approximate <tanh> : tensor<1x?x172xf32>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$input,
    DefaultValuedAttr<Etllm_GeluApproximationAttr,
                      "::mlir::etllm::GeluApproximation::none">:$approximate);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat =
      "$input (`approximate` $approximate^)? attr-dict `:` type($result)";
}

def Etllm_LogicalNotOp : Etllm_UnaryOp<"logical_not", "boolean not",
                                       Etllm_BoolTensor>;

class Etllm_BinaryOp<string mnemonic, string opSummary,
                     Type T = Etllm_NumTensor, list<Trait> traits = []>
    : Etllm_Op<mnemonic, !listconcat(traits,
          [Pure, InferTypeOpAdaptorWithIsCompatible,
           AllElementTypesMatch<["lhs", "rhs", "result"]>,
           Etllm_Kernel<mnemonic>])> {
  let summary = opSummary;
  let description = "Element-wise `" # mnemonic # "` with NumPy-style "
    # "broadcasting; both operands have the same element type.\n\n```mlir\n"
    # "%z = etllm." # mnemonic # " %x, %y : (tensor<1x?x64xf32>, "
    # "tensor<64xf32>) -> tensor<1x?x64xf32>\n```";
  let arguments = (ins T:$lhs, T:$rhs);
  let results = (outs T:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Etllm_AddOp : Etllm_BinaryOp<"add", "addition", Etllm_NumTensor,
                                 [Commutative]> { let hasFolder = 1; }
def Etllm_SubOp : Etllm_BinaryOp<"sub", "subtraction"> { let hasFolder = 1; }
def Etllm_MulOp : Etllm_BinaryOp<"mul", "multiplication", Etllm_NumTensor,
                                 [Commutative]> { let hasFolder = 1; }
def Etllm_DivOp : Etllm_BinaryOp<"div", "true division"> { let hasFolder = 1; }
def Etllm_PowOp : Etllm_BinaryOp<"pow", "power", Etllm_FloatTensor>;
def Etllm_MaximumOp : Etllm_BinaryOp<"maximum", "element-wise maximum">;
def Etllm_MinimumOp : Etllm_BinaryOp<"minimum", "element-wise minimum">;
def Etllm_LogicalAndOp : Etllm_BinaryOp<"logical_and", "boolean and",
                                        Etllm_BoolTensor>;
def Etllm_LogicalOrOp : Etllm_BinaryOp<"logical_or", "boolean or",
                                       Etllm_BoolTensor>;

class Etllm_CompareOp<string mnemonic, string opSummary>
    : Etllm_Op<mnemonic, [Pure, InferTypeOpAdaptorWithIsCompatible,
                          AllElementTypesMatch<["lhs", "rhs"]>,
                          Etllm_Kernel<mnemonic>]> {
  let summary = opSummary;
  let description = "Element-wise comparison `" # mnemonic # "` with "
    # "broadcasting; the result is i1.\n\n```mlir\n%m = etllm." # mnemonic
    # " %a, %b : (tensor<512xi64>, tensor<?x1xi64>) -> tensor<?x512xi1>\n```";
  let arguments = (ins Etllm_NumTensor:$lhs, Etllm_NumTensor:$rhs);
  let results = (outs Etllm_BoolTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Etllm_EqOp : Etllm_CompareOp<"eq", "equal">;
def Etllm_NeOp : Etllm_CompareOp<"ne", "not equal">;
def Etllm_LtOp : Etllm_CompareOp<"lt", "less than">;
def Etllm_LeOp : Etllm_CompareOp<"le", "less than or equal">;
def Etllm_GtOp : Etllm_CompareOp<"gt", "greater than">;
def Etllm_GeOp : Etllm_CompareOp<"ge", "greater than or equal">;

def Etllm_WhereOp : Etllm_Op<"where",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["on_true", "on_false", "result"]>,
     Etllm_Kernel<"where">]> {
  let summary = "select by condition, with broadcasting";
  let description = [{
    `result[i] = condition[i] ? on_true[i] : on_false[i]`, broadcasting all
    three operands.

    ```mlir
    %mask = etllm.where %m, %ninf, %zero
        : (tensor<?x512xi1>, tensor<f32>, tensor<f32>) -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Etllm_BoolTensor:$condition, Etllm_AnyTensor:$on_true,
                       Etllm_AnyTensor:$on_false);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "$condition `,` $on_true `,` $on_false attr-dict `:` "
                       "functional-type(operands, results)";
}

def Etllm_MaskedFillOp : Etllm_Op<"masked_fill",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     Etllm_Kernel<"masked_fill", [], [Etllm_Float<"value">]>,
     Etllm_NotNaN<"value">]> {
  let summary = "replace elements where a mask is true";
  let description = [{
    `result = mask ? value : input`; the mask broadcasts to the input.

    ```mlir
    %y = etllm.masked_fill %x, %m, -3.4028234663852886e+38
        : (tensor<1x8x?x512xf32>, tensor<?x512xi1>) -> tensor<1x8x?x512xf32>
    ```
  }];
  let arguments = (ins Etllm_NumTensor:$input, Etllm_BoolTensor:$mask,
                       F64Attr:$value);
  let results = (outs Etllm_NumTensor:$result);
  let assemblyFormat = "$input `,` $mask `,` $value attr-dict `:` "
                       "functional-type(operands, results)";
}

def Etllm_ConvertOp : Etllm_Op<"convert",
    [Pure, SameOperandsAndResultShape, Etllm_Kernel<"convert">]> {
  let summary = "element type conversion (torch .to(dtype))";
  let description = [{
    Float to float rounds to nearest even; float to integer truncates toward
    zero; i1 converts to 0/1.

    ```mlir
    %y = etllm.convert %x : tensor<1x?x64xf16> -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

class Etllm_ReduceOp<string mnemonic, string opSummary>
    : Etllm_Op<mnemonic, [Pure, InferTypeOpAdaptorWithIsCompatible,
        AllElementTypesMatch<["input", "result"]>,
        Etllm_Kernel<mnemonic, [Etllm_Flag<"keepdim">, Etllm_Each<"dims">]>,
        Etllm_Axis<"dims", "input", /*scalarIsVector=*/1>]> {
  let summary = opSummary;
  let description = "`" # mnemonic # "` over `dims` (negative dims count "
    # "from the end); `keepdim` keeps them as size 1.\n\n```mlir\n%m = etllm."
    # mnemonic # " %x dims [-1] keepdim : tensor<1x?x64xf32> -> "
    # "tensor<1x?x1xf32>\n```";
  let arguments = (ins Etllm_NumTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs Etllm_NumTensor:$result);
  let assemblyFormat = "$input `dims` $dims (`keepdim` $keepdim^)? attr-dict "
                       "`:` type($input) `->` type($result)";
}

def Etllm_SumOp : Etllm_ReduceOp<"sum", "sum">;
def Etllm_MeanOp : Etllm_ReduceOp<"mean", "arithmetic mean">;
def Etllm_AmaxOp : Etllm_ReduceOp<"amax", "maximum">;

def Etllm_TopKOp : Etllm_Op<"topk", [Pure, InferTypeOpAdaptorWithIsCompatible,
    AllElementTypesMatch<["input", "values"]>,
    Etllm_Kernel<"topk", [Etllm_Int<"k">, Etllm_Int<"dim">], [], "TopK">,
    Etllm_Min<"k", 1>, Etllm_MinRank<"input", 1>, Etllm_Axis<"dim", "input">]> {
  let summary = "the k largest entries along one dimension, with their indices";
  let description = [{
    `values` holds the `k` largest entries of `input` along `dim` (default
    the last), largest first, and `indices` their positions along `dim`:
    `torch.topk(input, k, dim)` (largest, sorted). Equal entries keep their
    order (the lower index first) and NaN counts as the largest, so the
    result is deterministic. A Mixture-of-Experts router picks its experts
    with it. `k` is at least 1; at run time, at most the size of `dim`.

    ```mlir
    %w, %e = etllm.topk %probs k 2 : tensor<1x?x8xf32> -> tensor<1x?x2xf32>, tensor<1x?x2xi64>
    ```
  }];
  let arguments = (ins Etllm_NumTensor:$input, Etllm_I64Attr:$k,
                       DefaultValuedAttr<Etllm_I64Attr, "-1">:$dim);
  let results = (outs Etllm_NumTensor:$values, Etllm_TensorOf<[I64]>:$indices);
  let assemblyFormat = "$input `k` $k (`dim` $dim^)? attr-dict `:` "
                       "type($input) `->` type(results)";
  // Shape inference with the helpers of lib/Dialect/Etllm/EtllmOps.cpp, where the
  // op definitions are compiled.
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      auto in = tensorOf(adaptor.getInput());
      if (in.getRank() < 1)
        return fail(loc, "input must have rank >= 1");
      ::mlir::FailureOr<int64_t> d =
          checkedDim(loc, adaptor.getDim(), in.getRank());
      if (::mlir::failed(d))
        return ::mlir::failure();
      int64_t k = adaptor.getK(), size = in.getDimSize(*d);
      if (k < 1 || (!::mlir::ShapedType::isDynamic(size) && k > size))
        return fail(loc, "k = ", k, " is out of range for a dimension of size ",
                    size);
      ::llvm::SmallVector<int64_t> shape(in.getShape());
      shape[*d] = k;
      inferred.push_back(
          ::mlir::RankedTensorType::get(shape, in.getElementType()));
      inferred.push_back(::mlir::RankedTensorType::get(
          shape, ::mlir::IntegerType::get(context, 64)));
      return ::mlir::success();
    }
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l,
                                            ::mlir::TypeRange r) {
      return compatibleTypes(l, r);
    }
  }];
}

def Etllm_SoftmaxOp : Etllm_Op<"softmax", [Pure, SameOperandsAndResultType,
    Etllm_Kernel<"softmax", [Etllm_Int<"dim">]>,
    Etllm_Axis<"dim", "input", /*scalarIsVector=*/1>]> {
  let summary = "softmax along one dimension";
  let description = [{
    Computed in float32 whatever the element type (as
    `softmax(dim, dtype=torch.float32)` in Hugging Face attention).

    ```mlir
    %p = etllm.softmax %s dim -1 : tensor<1x8x?x512xf32>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$input, Etllm_I64Attr:$dim);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and lookups
//===----------------------------------------------------------------------===//

def Etllm_MatmulOp : Etllm_Op<"matmul",
    [Pure, InferTypeOpAdaptorWithIsCompatible, Etllm_Kernel<"matmul">]> {
  let summary = "matrix product with batch broadcasting (torch.matmul, bmm)";
  let description = [{
    Both operands have rank >= 2; leading (batch) dimensions broadcast.

    ```mlir
    %s = etllm.matmul %q, %kt : (tensor<1x8x?x8xf32>, tensor<1x8x8x512xf32>)
        -> tensor<1x8x?x512xf32>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$lhs, Etllm_FloatTensor:$rhs);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Etllm_LinearOp : Etllm_Op<"linear",
    [Pure, InferTypeOpAdaptorWithIsCompatible, Etllm_Kernel<"linear">]> {
  let summary = "y = x W^T + b (torch.nn.functional.linear)";
  let description = [{
    `weight` is [out_features, in_features]; `bias` is [out_features].

    ```mlir
    %y = etllm.linear %x, %w : (tensor<1x?x64xf32>, tensor<128x64xf32>)
        -> tensor<1x?x128xf32>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$input, Etllm_FloatTensor:$weight,
                       Optional<Etllm_FloatTensor>:$bias);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

def Etllm_EmbeddingOp : Etllm_Op<"embedding",
    [Pure, InferTypeOpAdaptorWithIsCompatible, Etllm_Kernel<"embedding">]> {
  let summary = "row lookup: result[..., :] = weight[indices[...], :]";
  let description = [{
    ```mlir
    %h = etllm.embedding %w, %tokens : (tensor<512x64xf32>, tensor<1x?xi64>)
        -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$weight, Etllm_IndexTensor:$indices);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat =
      "$weight `,` $indices attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Tensor creation
//===----------------------------------------------------------------------===//

def Etllm_ArangeOp : Etllm_Op<"arange", [Pure,
    Etllm_Kernel<"arange",
                 [Etllm_Int<"start">, Etllm_Int<"end">, Etllm_Int<"step">]>,
    Etllm_NonZero<"step">]> {
  let summary = "the sequence start, start + step, ... (< end)";
  let description = [{
    ```mlir
    %pos = etllm.arange 0 to 512 : tensor<512xi64>
    %idx = etllm.arange 0 to 8 step 2 : tensor<4xf32>
    ```
  }];
  let arguments = (ins Etllm_I64Attr:$start, Etllm_I64Attr:$end,
                       DefaultValuedAttr<Etllm_I64Attr, "1">:$step);
  let results = (outs Etllm_NumTensor:$result);
  let assemblyFormat =
      "$start `to` $end (`step` $step^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Etllm_FullOp : Etllm_Op<"full",
    [Pure, Etllm_Kernel<"full", [], [Etllm_Float<"value">]>,
     Etllm_NotNaN<"value">]> {
  let summary = "a statically shaped tensor filled with one value";
  let description = [{
    ```mlir
    %z = etllm.full 0.0 : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Etllm_FullLikeOp : Etllm_Op<"full_like", [Pure, SameOperandsAndResultShape,
    Etllm_Kernel<"full_like", [], [Etllm_Float<"value">]>,
    Etllm_NotNaN<"value">]> {
  let summary = "a tensor shaped like the input, filled with one value";
  let description = [{
    ```mlir
    %o = etllm.full_like %x, 1.0 : tensor<1x?xi64> -> tensor<1x?xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, F64Attr:$value);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat =
      "$input `,` $value attr-dict `:` type($input) `->` type($result)";
}

def Etllm_TriuOp : Etllm_Op<"triu", [Pure, SameOperandsAndResultType,
    Etllm_Kernel<"triu", [Etllm_Int<"diagonal">]>]> {
  let summary = "upper triangle of the last two dims (zero elsewhere)";
  let description = [{
    Keeps elements with `col - row >= diagonal`.

    ```mlir
    %u = etllm.triu %m diagonal 1 : tensor<512x512xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input,
                       DefaultValuedAttr<Etllm_I64Attr, "0">:$diagonal);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat =
      "$input (`diagonal` $diagonal^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Etllm_TrilOp : Etllm_Op<"tril", [Pure, SameOperandsAndResultType,
    Etllm_Kernel<"tril", [Etllm_Int<"diagonal">]>]> {
  let summary = "lower triangle of the last two dims (zero elsewhere)";
  let description = [{
    Keeps elements with `col - row <= diagonal`.

    ```mlir
    %l = etllm.tril %m : tensor<512x512xi1>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input,
                       DefaultValuedAttr<Etllm_I64Attr, "0">:$diagonal);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat =
      "$input (`diagonal` $diagonal^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Etllm_TransposeOp : Etllm_Op<"transpose",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     AllRanksMatch<["input", "result"]>,
     Etllm_Kernel<"transpose", [Etllm_Int<"dim0">, Etllm_Int<"dim1">]>,
     Etllm_Axis<"dim0", "input">, Etllm_Axis<"dim1", "input">]> {
  let summary = "swap two dimensions";
  let description = [{
    ```mlir
    %t = etllm.transpose %x 1, 2 : tensor<1x?x8x8xf32> -> tensor<1x8x?x8xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, Etllm_I64Attr:$dim0, Etllm_I64Attr:$dim1);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "$input $dim0 `,` $dim1 attr-dict `:` type($input) "
                       "`->` type($result)";
  let hasFolder = 1;
}

def Etllm_PermuteOp : Etllm_Op<"permute",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     AllRanksMatch<["input", "result"]>,
     Etllm_Kernel<"permute", [Etllm_Each<"dims">]>,
     Etllm_LengthIsRank<"dims", "input">, Etllm_Axis<"dims", "input">]> {
  let summary = "reorder dimensions: result dim i = input dim dims[i]";
  let description = [{
    ```mlir
    %p = etllm.permute %x [0, 2, 1, 3] : tensor<1x?x8x8xf32> -> tensor<1x8x?x8xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat =
      "$input $dims attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Etllm_ReshapeOp : Etllm_Op<"reshape",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     Etllm_Kernel<"reshape", [Etllm_Each<"shape">]>,
     Etllm_LengthIsRank<"shape", "result">, Etllm_Min<"shape", -1>,
     Etllm_RuntimeCheck<"one_inferred_size">,
     DeclareOpInterfaceMethods<ViewLikeOpInterface>,
     DeclareOpInterfaceMethods<Etllm_BoundedShapeOpInterface>]> {
  let summary = "same elements, new shape (view/reshape)";
  let description = [{
    `shape` may hold one -1: that size is inferred from the element count
    (it is the dynamic dimension when the input has one).

    ```mlir
    %r = etllm.reshape %x [1, -1, 8, 8] : tensor<1x?x64xf32> -> tensor<1x?x8x8xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat =
      "$input $shape attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Etllm_UnsqueezeOp : Etllm_Op<"unsqueeze",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     Etllm_Kernel<"unsqueeze", [Etllm_Int<"dim">]>,
     Etllm_RankOf<"result", "input", 1>, Etllm_Axis<"dim", "result">,
     DeclareOpInterfaceMethods<ViewLikeOpInterface>]> {
  let summary = "insert a size-1 dimension";
  let description = [{
    ```mlir
    %u = etllm.unsqueeze %x dim 1 : tensor<1x?xf32> -> tensor<1x1x?xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, Etllm_I64Attr:$dim);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat =
      "$input `dim` $dim attr-dict `:` type($input) `->` type($result)";
}

def Etllm_SqueezeOp : Etllm_Op<"squeeze",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     Etllm_Kernel<"squeeze", [Etllm_Int<"dim">]>,
     Etllm_Axis<"dim", "input", /*scalarIsVector=*/1>,
     DeclareOpInterfaceMethods<ViewLikeOpInterface>]> {
  let summary = "remove a size-1 dimension";
  let description = [{
    ```mlir
    %s = etllm.squeeze %x dim 1 : tensor<1x1x?xf32> -> tensor<1x?xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, Etllm_I64Attr:$dim);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat =
      "$input `dim` $dim attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Etllm_ExpandOp : Etllm_Op<"expand",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     Etllm_Kernel<"expand", [Etllm_Each<"shape">]>,
     Etllm_LengthIsRank<"shape", "result">, Etllm_MinRankOf<"result", "input">,
     Etllm_Min<"shape", -1>]> {
  let summary = "broadcast size-1 dimensions to a larger size";
  let description = [{
    `shape` has at least the input's rank; -1 keeps the input's size, and
    new leading dimensions may be added.

    ```mlir
    %e = etllm.expand %x [1, 4, 2, -1, 8] : tensor<1x4x1x512x8xf32>
        -> tensor<1x4x2x512x8xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat =
      "$input $shape attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Etllm_SliceOp : Etllm_Op<"slice",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     AllRanksMatch<["input", "result"]>,
     Etllm_Kernel<"slice", [Etllm_Int<"dim">, Etllm_Int<"start">, Etllm_Int<"end">,
                      Etllm_Int<"step">]>,
     Etllm_Axis<"dim", "input">, Etllm_Min<"step", 1>]> {
  let summary = "elements start, start + step, ... (< end) of one dimension";
  let description = [{
    PyTorch semantics: negative `start`/`end` count from the end and both are
    clamped to the dimension; `step` > 0.

    ```mlir
    %h = etllm.slice %x dim 3 [0 : 4] : tensor<1x8x?x8xf32> -> tensor<1x8x?x4xf32>
    %l = etllm.slice %x dim 1 [-1 : 9223372036854775807] : tensor<1x?x512xf32>
        -> tensor<1x1x512xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, Etllm_I64Attr:$dim, Etllm_I64Attr:$start,
                       Etllm_I64Attr:$end, DefaultValuedAttr<Etllm_I64Attr, "1">:$step);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "$input `dim` $dim ` ` `[` $start `:` $end (`:` $step^)? `]`"
                       " attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Etllm_CatOp : Etllm_Op<"cat", [Pure, InferTypeOpAdaptorWithIsCompatible,
    Etllm_Kernel<"cat", [Etllm_Int<"dim">]>,
    Etllm_Axis<"dim", "inputs">, Etllm_SameElementType<["inputs", "result"]>,
    Etllm_RankOf<"inputs", "result">,
    DeclareOpInterfaceMethods<Etllm_BoundedShapeOpInterface>]> {
  let summary = "concatenate along one dimension";
  let description = [{
    ```mlir
    %c = etllm.cat %a, %b dim -1 : (tensor<1x8x?x4xf32>, tensor<1x8x?x4xf32>)
        -> tensor<1x8x?x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Etllm_AnyTensor>:$inputs, Etllm_I64Attr:$dim);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat =
      "$inputs `dim` $dim attr-dict `:` functional-type($inputs, results)";
  let hasFolder = 1;
}

def Etllm_SplitOp : Etllm_Op<"split",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     Etllm_Kernel<"split", [Etllm_Int<"dim">, Etllm_Each<"sizes">]>,
     Etllm_LengthIsCount<"sizes", "results">, Etllm_Axis<"dim", "input">,
     Etllm_Min<"sizes", 0>, Etllm_SameElementType<["input", "results"]>,
     Etllm_RankOf<"results", "input">]> {
  let summary = "split one dimension into pieces of the given sizes";
  let description = [{
    ```mlir
    %q, %k, %v = etllm.split %qkv dim 2 [64, 32, 32]
        : tensor<1x?x128xf32> -> (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>)
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, Etllm_I64Attr:$dim,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Etllm_AnyTensor>:$results);
  let assemblyFormat = "$input `dim` $dim $sizes attr-dict `:` type($input) "
                       "`->` type($results)";
}

def Etllm_IndexSelectOp : Etllm_Op<"index_select",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     Etllm_Kernel<"index_select", [Etllm_Int<"dim">]>,
     Etllm_Axis<"dim", "input">]> {
  let summary = "select entries of one dimension by a 1-D index";
  let description = [{
    ```mlir
    %r = etllm.index_select %x dim 0, %idx : (tensor<512x64xf32>, tensor<?xi64>)
        -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, Etllm_I64Attr:$dim,
                       Etllm_IndexTensor:$index);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "$input `dim` $dim `,` $index attr-dict `:` "
                       "functional-type(operands, results)";
}

def Etllm_GatherOp : Etllm_Op<"gather",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "result"]>,
     Etllm_Kernel<"gather", [Etllm_Int<"dim">]>,
     Etllm_Axis<"dim", "input">]> {
  let summary = "torch.gather: result[i][j] = input[i][index[i][j]] (dim 1)";
  let description = [{
    `index` has the input's rank; the result has the index's shape.

    ```mlir
    %g = etllm.gather %x dim 1, %idx : (tensor<4x8xf32>, tensor<4x2xi64>)
        -> tensor<4x2xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, Etllm_I64Attr:$dim,
                       Etllm_IndexTensor:$index);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "$input `dim` $dim `,` $index attr-dict `:` "
                       "functional-type(operands, results)";
}

def Etllm_IndexCopyOp : Etllm_Op<"index_copy",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "source", "result"]>,
     AllRanksMatch<["input", "source", "result"]>,
     Etllm_Kernel<"index_copy", [Etllm_Int<"dim">]>,
     Etllm_Axis<"dim", "input">]> {
  let summary = "functional index_copy: a copy of input with slices replaced";
  let description = [{
    `result = input; result.select(dim, index[i]) = source.select(dim, i)`.
    The exported graph's static KV-cache update
    (`k_cache.index_copy_(2, cache_position, k)` after functionalization).

    ```mlir
    %k2 = etllm.index_copy %k dim 2, %pos, %new
        : (tensor<1x4x512x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x512x8xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, Etllm_I64Attr:$dim,
                       Etllm_IndexTensor:$index, Etllm_AnyTensor:$source);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "$input `dim` $dim `,` $index `,` $source attr-dict `:` "
                       "functional-type(operands, results)";
}

def Etllm_IndexPutOp : Etllm_Op<"index_put",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     AllElementTypesMatch<["input", "values", "result"]>,
     AllRanksMatch<["input", "values", "result"]>,
     Etllm_Kernel<"index_put", [Etllm_Int<"dim">, Etllm_Flag<"accumulate">]>,
     Etllm_Axis<"dim", "input">]> {
  let summary = "functional index_put along one dimension";
  let description = [{
    `input[..., index, ...] = values` (or `+=` with `accumulate`) where the
    index applies to dimension `dim`; `values` has the input's shape with
    that dimension replaced by the index length.

    ```mlir
    %v2 = etllm.index_put %v dim 2, %pos, %new
        : (tensor<1x4x512x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x512x8xf32>
    ```
  }];
  let arguments = (ins Etllm_AnyTensor:$input, Etllm_I64Attr:$dim,
                       Etllm_IndexTensor:$index, Etllm_AnyTensor:$values,
                       UnitAttr:$accumulate);
  let results = (outs Etllm_AnyTensor:$result);
  let assemblyFormat = "$input `dim` $dim `,` $index `,` $values "
                       "(`accumulate` $accumulate^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

// Level B (fused, device-friendly ops), then levels C (quantization) and
// D (delegation), each in a file of its own.
include "etllm/Dialect/Etllm/EtllmFusedOps.td"
include "etllm/Dialect/Etllm/EtllmQuantOps.td"

#endif // ETLLM_DIALECT_ETLLM_OPS_TD
