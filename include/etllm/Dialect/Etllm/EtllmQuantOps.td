//===- EtllmQuantOps.td - levels C and D -------------------*- tablegen -*-===//
//
// Part of EtllmOps.td, which includes it in place (the order of the ops
// is the order of ops.def and of the op reference); not included
// anywhere else.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_DIALECT_ETLLM_QUANTOPS_TD
#define ETLLM_DIALECT_ETLLM_QUANTOPS_TD

//===----------------------------------------------------------------------===//
// Level C: quantization
//===----------------------------------------------------------------------===//

def Etllm_QuantizeDynamicOp : Etllm_Op<"quantize_dynamic",
    [Pure, Etllm_Kernel<"quantize_dynamic">]> {
  let summary = "quantize an activation with scales computed at run time";
  let description = [{
    Per-token (one scale per row of the last dimension) or per-tensor, to
    the integer width, granularity and symmetry of the result type.
    Asymmetric: `q = clamp(round(x / s) + zp)` with s and zp from the row's
    min and max (min and max include 0); symmetric: `s = absmax / 127`.

    ```mlir
    %qa = etllm.quantize_dynamic %x : tensor<1x?x64xf32>
        -> !etllm.qact<1x?x64, i8, per_token, asym>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$input);
  let results = (outs Etllm_QAct:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Etllm_QuantizeStaticOp : Etllm_Op<"quantize_static",
    [Pure, Etllm_Kernel<"quantize_static", [], [Etllm_Float<"scale">]>,
     Etllm_Finite<"scale">, Etllm_MinRank<"input", 1>]> {
  let summary = "quantize an activation with a scale fixed at export";
  let description = [{
    Static activation quantization, as NPUs run it: the scale comes from
    calibration (`etllm-calibrate` records the largest |x| the input took
    on a text, `scale = absmax / 127`), not from the values at run time.
    `q = clamp(round_half_even(x / scale), -127, 127)`: values beyond the
    calibrated range saturate. The result is a per-tensor symmetric int8
    activation (every row carries the one scale, zero point 0), which
    `etllm.qlinear` takes like a dynamic one.

    ```mlir
    %qa = etllm.quantize_static %x scale 0.0125 : tensor<1x?x64xf32>
        -> !etllm.qact<1x?x64, i8, per_tensor, sym>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$input, F64Attr:$scale);
  let results = (outs Etllm_QAct:$result);
  let assemblyFormat = "$input `scale` $scale attr-dict `:` type($input) `->` "
                       "type($result)";
  let hasVerifier = 1;
}

def Etllm_QLinearOp : Etllm_Op<"qlinear",
    [Pure, Etllm_Kernel<"qlinear", [], [], "QLinear">]> {
  let summary = "linear with a block-quantized weight";
  let description = [{
    `y = x dequant(W)^T + b`. `input` is a float tensor (weight-only
    quantization, e.g. int4 with fp32 activations) or an `!etllm.qact`
    (dynamically quantized activations, e.g. 8da4w: the product is computed
    on integers and rescaled). The result element type is printed.

    ```mlir
    %y = etllm.qlinear %x, %w : (tensor<1x?x64xf32>,
        !etllm.qweight<128x64, i4, group 32, sym, f32>) -> tensor<1x?x128xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Etllm_FloatTensor, Etllm_QAct]>:$input,
                       Etllm_QWeight:$weight,
                       Optional<Etllm_FloatTensor>:$bias);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Etllm_LoraOp : Etllm_Op<"lora",
    [Pure, Etllm_Kernel<"lora", [Etllm_Int<"hook">]>,
     Etllm_Min<"hook", 0>, Etllm_MinRank<"input", 1>,
     Etllm_RankOf<"input", "base">, Etllm_RankOf<"result", "base">,
     Etllm_SameElementType<["base", "result"]>]> {
  let summary = "a LoRA hook: base + sum of s * B (A input) over the "
                "adapters applied at run time";
  let description = [{
    A point where adapters loaded at run time (docs/LoRA.md) add their
    low-rank update to a linear layer's output: `result = base + sum_i s_i *
    B_i (A_i input)` over the adapters applied to hook `hook` of the
    program, where `input` is the linear's float input ([..., in]) and
    `base` its output ([..., out]). With no adapter applied the result is
    `base`, bit for bit. `target` is the linear's module path
    (`model.layers.3.self_attn.q_proj`): adapters bind to hooks by it.
    Inserted by `etllm-lora-hooks`; the serializer writes the program's hook
    table (index, target, in and out features) from these ops.

    ```mlir
    %y2 = etllm.lora %x, %y {hook = 0 : i64,
        target = "model.layers.0.self_attn.q_proj"}
        : (tensor<1x?x64xf32>, tensor<1x?x128xf32>) -> tensor<1x?x128xf32>
    ```
  }];
  let arguments = (ins Etllm_TensorOf<[F32]>:$input,
                       Etllm_TensorOf<[F32]>:$base,
                       Etllm_I64Attr:$hook, StrAttr:$target);
  let results = (outs Etllm_TensorOf<[F32]>:$result);
  let assemblyFormat = "$input `,` $base attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Etllm_QEmbeddingOp : Etllm_Op<"qembedding",
    [Pure, Etllm_Kernel<"qembedding", [], [], "QEmbedding">]> {
  let summary = "row lookup in a block-quantized table";
  let description = [{
    ```mlir
    %h = etllm.qembedding %w, %tokens : (!etllm.qweight<512x64, i8, group 64, sym, f32>,
        tensor<1x?xi64>) -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins Etllm_QWeight:$weight, Etllm_IndexTensor:$indices);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat =
      "$weight `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Etllm_DequantizeOp : Etllm_Op<"dequantize",
    [Pure, Etllm_Kernel<"dequantize">]> {
  let summary = "the float tensor a quantized weight stands for";
  let description = [{
    ```mlir
    %f = etllm.dequantize %w : !etllm.qweight<128x64, i4, group 32, sym, f16>
        -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins Etllm_QWeight:$input);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Level D: delegation
//===----------------------------------------------------------------------===//

def Etllm_DelegateCallOp : Etllm_Op<"delegate.call",
    [CallOpInterface, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemRead<Etllm_BufferResource>,
                    MemWrite<Etllm_BufferResource>]>]> {
  let summary = "run a subgraph on a backend";
  let description = [{
    Calls the outlined function `callee` (marked `etllm.backend`), which the
    backend named `backend` compiles into its blob at serialization. Until
    then the callee is ordinary IR, so the program still runs (and can be
    compared) on portable kernels.

    ```mlir
    %y = etllm.delegate.call "cpu" @cpu_0(%x)
        : (tensor<1x?x64xf32>) -> tensor<1x?x128xf32>
    ```
  }];
  let arguments = (ins StrAttr:$backend, FlatSymbolRefAttr:$callee,
                       Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = "$backend $callee `(` $args `)` attr-dict `:` "
                       "functional-type($args, results)";
  let extraClassDeclaration = [{
    ::mlir::CallInterfaceCallable getCallableForCallee() {
      return getCalleeAttr();
    }
    void setCalleeFromCallable(::mlir::CallInterfaceCallable callee) {
      setCalleeAttr(::llvm::cast<::mlir::FlatSymbolRefAttr>(
          callee.get<::mlir::SymbolRefAttr>()));
    }
    ::mlir::Operation::operand_range getArgOperands() { return getArgs(); }
    ::mlir::MutableOperandRange getArgOperandsMutable() {
      return getArgsMutable();
    }
  }];
}

#endif // ETLLM_DIALECT_ETLLM_QUANTOPS_TD
