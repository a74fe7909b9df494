//===- EtllmBase.td - etllm dialect definition -------------*- tablegen -*-===//
//
// The etllm dialect models an exported transformer (LLM) graph at several
// levels, from what torch.export captures of a Hugging Face model (level A)
// down to quantized (level C) and partitioned (level D) programs.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_DIALECT_ETLLM_BASE_TD
#define ETLLM_DIALECT_ETLLM_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Etllm_Dialect : Dialect {
  let name = "etllm";
  let cppNamespace = "::mlir::etllm";
  let summary = "Exported LLM graphs, from ATen-like ops to delegate calls";
  let description = [{
    One dialect, several levels:

    * **Level A, the exported graph**: ATen-like core ops as torch.export
      shows them for a Hugging Face decoder-only model in eval mode (attention,
      RMSNorm and RoPE decomposed), named parameters (`etllm.parameter`:
      external weights, name + type, no bytes), mutable buffers
      (`etllm.buffer`: the KV caches) updated functionally and written back
      with `etllm.buffer.write`, and module boundaries kept as the discardable
      attribute `etllm.module` (the innermost module path of each op) plus
      the module attribute `etllm.module_classes` (path -> class name).
    * **Level B, device-friendly**: `rms_norm`, `layer_norm`, `rope`, `sdpa`
      and the in-place `kv_cache.update`.
    * **Level C, quantized**: block-wise quantized weights
      (`!etllm.qweight`), `qlinear`, `qembedding`, dynamic activation
      quantization (`quantize_dynamic`, `!etllm.qact`).
    * **Level D, partitioned**: `delegate.call` into a subgraph a backend
      compiles.

    Tensors are builtin ranked tensors; the sequence dimension is dynamic
    (`?`) so that one program serves prefill and decode. Result types are
    inferred from operands and attributes; a printed result type may be more
    precise than the inferred one (a static size where inference gives `?`).
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasOperationAttrVerify = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let extraClassDeclaration = [{
    void registerTypes();

    /// Discardable attribute naming the innermost module instance an op came
    /// from, e.g. "model.layers.3.self_attn".
    static constexpr ::llvm::StringLiteral kModuleAttrName = "etllm.module";
    /// Module attribute: dictionary module path -> module class name.
    static constexpr ::llvm::StringLiteral kModuleClassesAttrName =
        "etllm.module_classes";
    /// Module attribute: the checkpoint parameters are read from.
    static constexpr ::llvm::StringLiteral kCheckpointAttrName =
        "etllm.checkpoint";
    /// Module attribute: the llama.cpp mmproj GGUF a composite model's
    /// vision tower and projector are read from, beside the checkpoint.
    static constexpr ::llvm::StringLiteral kMmprojAttrName = "etllm.mmproj";
    /// Module attribute: the safetensors file of a composed vision
    /// encoder's weights (`model.vision_encoder`), read beside the
    /// checkpoint under "vision_tower.".
    static constexpr ::llvm::StringLiteral kVisionWeightsAttrName =
        "etllm.vision_weights";
    /// Module attribute: LoRA adapters merged into the parameters when the
    /// serializer reads them, in order: an array of
    /// {path = "...", scale = <f64>} dictionaries.
    static constexpr ::llvm::StringLiteral kLoraAttrName = "etllm.lora";
    /// Module attribute: the largest rank of a LoRA adapter applied at run
    /// time to the program's etllm.lora hooks (an i64 in 1..1024).
    static constexpr ::llvm::StringLiteral kLoraMaxRankAttrName =
        "etllm.lora_max_rank";
    /// Module attribute: the model configuration (#etllm.model_config).
    /// Discardable attribute of an etllm.linear: the largest |x| its input
    /// took over the calibration text (etllm-calibrate), f64; what
    /// etllm-quantize's static activations (int8-static) take the scale
    /// from.
    static constexpr ::llvm::StringLiteral kActAbsMaxAttrName =
        "etllm.act_absmax";
    /// Module attribute: {file = "...", samples = N : i64, tokens = T :
    /// i64}, the text etllm-calibrate ran on (a program input: its hash is
    /// in the provenance).
    static constexpr ::llvm::StringLiteral kCalibrationAttrName =
        "etllm.calibration";
    /// Module attribute: {chunk = C : i64, sinks = S : i64} when some KV
    /// caches are rings (etllm-kv-ring): every call carries at most C
    /// tokens, and with S > 0 generation goes on past max_seq_len.
    static constexpr ::llvm::StringLiteral kKvRingAttrName = "etllm.kv_ring";
    static constexpr ::llvm::StringLiteral kModelConfigAttrName =
        "etllm.model_config";
    /// Function attribute on outlined delegate subgraphs: the backend id.
    static constexpr ::llvm::StringLiteral kBackendAttrName = "etllm.backend";
  }];
}

class Etllm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Etllm_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// A ranked tensor of one of `types`. etllm-tblgen reads `types` into the
// runtime's rules (ops.def: the element types a kernel call's value may
// have), so the operands and results of ops with a kernel contract use this
// class (or Etllm_QWeight, Etllm_QAct, AnyTypeOf them) instead of
// RankedTensorOf, whose element types TableGen does not keep.
class Etllm_TensorOf<list<Type> types> : RankedTensorOf<types> {
  list<Type> etllmElementTypes = types;
}

def Etllm_FloatElement : AnyTypeOf<[F16, BF16, F32]>;
def Etllm_FloatTensor : Etllm_TensorOf<[F16, BF16, F32]>;
def Etllm_IndexTensor : Etllm_TensorOf<[I32, I64]>;
def Etllm_BoolTensor : Etllm_TensorOf<[I1]>;
def Etllm_NumTensor : Etllm_TensorOf<[F16, BF16, F32, I32, I64]>;
def Etllm_AnyTensor : Etllm_TensorOf<[F16, BF16, F32, I1, I8, I32, I64]>;

// A 64-bit signless integer attribute read back as int64_t (upstream I64Attr
// returns uint64_t, which silently breaks negative dimensions).
def Etllm_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
    "64-bit signless integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

#endif // ETLLM_DIALECT_ETLLM_BASE_TD
