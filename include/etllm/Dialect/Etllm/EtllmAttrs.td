//===- EtllmAttrs.td - etllm enums and attributes ----------*- tablegen -*-===//
#ifndef ETLLM_DIALECT_ETLLM_ATTRS_TD
#define ETLLM_DIALECT_ETLLM_ATTRS_TD

include "etllm/Dialect/Etllm/EtllmBase.td"

def Etllm_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU formulation", [
      I32EnumAttrCase<"none", 0>,  // exact: x * Phi(x), with erf
      I32EnumAttrCase<"tanh", 1>,  // tanh approximation (gelu_pytorch_tanh)
    ]> {
  let cppNamespace = "::mlir::etllm";
  let genSpecializedAttr = 0;
}
def Etllm_GeluApproximationAttr
    : EnumAttr<Etllm_Dialect, Etllm_GeluApproximation, "gelu_approx"> {
  let assemblyFormat = "`<` $value `>`";
}

def Etllm_RopeConvention : I32EnumAttr<"RopeConvention",
    "which dimensions of a head RoPE rotates together", [
      // Pairs (i, i + d/2): Hugging Face rotate_half (GPT-NeoX style).
      I32EnumAttrCase<"rotate_half", 0>,
      // Pairs (2i, 2i + 1): Meta's original, llama2.c and GGUF llama.
      I32EnumAttrCase<"interleaved", 1>,
      // Pairs (2i, 2i + 1) of the input, written to (i, i + r/2) of the
      // result: DeepSeek's q_pe/k_pe, de-interleaved by
      // view(.., r/2, 2).transpose(-1, -2) and then rotated by rotate_half.
      I32EnumAttrCase<"deinterleave_rotate_half", 2>,
    ]> {
  let cppNamespace = "::mlir::etllm";
  let genSpecializedAttr = 0;
}
def Etllm_RopeConventionAttr
    : EnumAttr<Etllm_Dialect, Etllm_RopeConvention, "rope_convention"> {
  let assemblyFormat = "`<` $value `>`";
}

def Etllm_ActQuantGranularity : I32EnumAttr<"ActQuantGranularity",
    "granularity of dynamic activation quantization", [
      I32EnumAttrCase<"per_token", 0>,   // one scale per row (last dim)
      I32EnumAttrCase<"per_tensor", 1>,  // one scale for the whole tensor
      I32EnumAttrCase<"per_block", 2>,   // one scale per 32 values of a row
    ]> {
  let cppNamespace = "::mlir::etllm";
  let genSpecializedAttr = 0;
}

def Etllm_QWeightScheme : I32EnumAttr<"QWeightScheme",
    "how a block-quantized weight codes its values", [
      // bits-bit values in groups along a row, a scale (and an offset) per
      // group; GGUF Q4_0, Q4_1 and Q8_0 are exactly this.
      I32EnumAttrCase<"affine", 0>,
      // ggml's block formats, kept as a GGUF stores them
      // (runtime/include/etllm/runtime/ggml_blocks.h).
      I32EnumAttrCase<"q5_0", 1>,  // 32 values, f16 d: d (q - 16), 5-bit q
      I32EnumAttrCase<"q5_1", 2>,  // 32 values, f16 d, m: d q + m
      I32EnumAttrCase<"q4_k", 3>,  // 256: f16 d, dmin; 6-bit scale, min per 32
      I32EnumAttrCase<"q5_k", 4>,  // as q4_k with 5-bit q
      I32EnumAttrCase<"q6_k", 5>,  // 256: f16 d, int8 scale per 16, 6-bit q
    ]> {
  let cppNamespace = "::mlir::etllm";
  let genSpecializedAttr = 0;
  // The values are the program schema's QScheme (runtime/schema/program.fbs,
  // etllm::rt::QScheme): lib/Lowering/KernelCalls.cpp checks the count at
  // build time, serialize.QWeightSchemes every name.
}

def Etllm_RouterScoring : I32EnumAttr<"RouterScoring",
    "how a mixture-of-experts router turns its logits into scores", [
      I32EnumAttrCase<"softmax", 0>,  // softmax over the experts (Mixtral, Qwen, DeepSeek-V2)
      I32EnumAttrCase<"sigmoid", 1>,  // sigmoid of each logit (DeepSeek-V3)
    ]> {
  let cppNamespace = "::mlir::etllm";
  let genSpecializedAttr = 0;
}
def Etllm_RouterScoringAttr
    : EnumAttr<Etllm_Dialect, Etllm_RouterScoring, "router_scoring"> {
  let assemblyFormat = "`<` $value `>`";
}

def Etllm_RouterSelection : I32EnumAttr<"RouterSelection",
    "how a mixture-of-experts router selects its experts", [
      // top_k over every (biased) score
      I32EnumAttrCase<"greedy", 0>,
      // groups ranked by their best (biased) score (DeepSeek-V2)
      I32EnumAttrCase<"group_limited_greedy", 1>,
      // groups ranked by the sum of their two best biased scores (DeepSeek-V3)
      I32EnumAttrCase<"noaux_tc", 2>,
    ]> {
  let cppNamespace = "::mlir::etllm";
  let genSpecializedAttr = 0;
}
def Etllm_RouterSelectionAttr
    : EnumAttr<Etllm_Dialect, Etllm_RouterSelection, "router_selection"> {
  let assemblyFormat = "`<` $value `>`";
}

include "etllm/Dialect/Etllm/EtllmModelConfig.td"

#endif // ETLLM_DIALECT_ETLLM_ATTRS_TD
