//===- GraphBuilder.cpp - Checkpoint to exported-graph IR -----------------===//
//
// Emits, op for op, what torch.export shows for the Hugging Face modeling
// code of a family of the registry in eval mode with a static KV cache. The
// model is assembled here from the block builders of Blocks/ (the family's
// spec chooses the attention, MLP and decoder-layer blocks). Each op carries
// the innermost module it came from (`etllm.module`), and the module records
// every module's class.
//
//===----------------------------------------------------------------------===//
#include "etllm/Import/GraphBuilder.h"
#include "Blocks/Blocks.h"
#include "ComposeEncoder.h"

#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/runtime/image/preprocess.h"
#include "etllm/runtime/llm/method_names.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

#include "llvm/Support/MemoryBuffer.h"

#include <filesystem>
#include <iterator>
#include <optional>

using namespace mlir;
using namespace mlir::etllm;
using namespace ::etllm::import;
using ::etllm::formats::Checkpoint;
using ::etllm::formats::ModelConfig;
using ::etllm::models::HfModule;

namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::make_error<llvm::StringError>(message,
                                             llvm::inconvertibleErrorCode());
}

/// The KV caches' types: key [1, KV, T, D] and value (MLA: the expanded
/// per-head keys [nope | rope] and values StaticCache holds).
std::pair<RankedTensorType, RankedTensorType> cacheTypes(GraphEmitter &e,
                                                         int64_t maxSeq) {
  const ModelConfig &c = e.config;
  if (c.isMla())
    return {e.tensorType({1, c.numHeads, maxSeq, c.qkHeadDim()}, e.dtype),
            e.tensorType({1, c.numHeads, maxSeq, c.vHeadDim}, e.dtype)};
  auto t = e.tensorType({1, c.numKvHeads, maxSeq, c.headDim}, e.dtype);
  return {t, t};
}

/// The decoder from the embeddings `h` on, in the <Family>Model scope the
/// caller entered: the rotary tables and masks (shared by every layer), the
/// decoder layers with the family's blocks, the final norm; then, at the
/// root, the head and the write-backs of the caches.
Value buildDecoder(GraphEmitter &e, const ::etllm::ImportOptions &options,
                   int64_t maxSeq, Value h, Value inputPos,
                   bool bidirectional = false) {
  const ModelConfig &c = e.config;
  OpBuilder &b = e.b;
  BlockSet blocks = selectBlocks(e.family.blocks);
  const int64_t T = maxSeq;
  auto [cacheType, valueCacheType] = cacheTypes(e, maxSeq);
  RotaryTables rotary = buildRotary(e, inputPos);
  // The sliding-window layers' own table, when they have their own base.
  const bool anySliding = llvm::is_contained(c.layerUsesSlidingWindow, true);
  RotaryTables rotaryLocal = c.ropeLocalTheta > 0 && anySliding
                                 ? buildRotary(e, inputPos, /*local=*/true)
                                 : rotary;
  Masks masks = buildMasks(e, inputPos, T, bidirectional);

  bool addOne = c.normAddsOne && !e.ckpt.normWeightsIncludeOne();
  for (int64_t i = 0; i < c.numLayers; ++i) {
    LayerContext layer;
    layer.index = i;
    layer.path = e.path(HfModule::Layers) + "." + std::to_string(i);
    layer.positions = inputPos;
    bool sliding =
        !c.layerUsesSlidingWindow.empty() && c.layerUsesSlidingWindow[i];
    layer.rotary = sliding ? rotaryLocal : rotary;
    layer.mask = sliding ? masks.sliding : masks.full;
    layer.cacheType = cacheType;
    layer.valueCacheType = valueCacheType;
    layer.normAddsOne = addOne;
    h = blocks.decoderLayer(e, layer, blocks, h);
  }
  h = buildFinalNorm(e, h, addOne);
  e.pathStack.pop_back(); // back at the root (the *ForCausalLM module)
  Value logits = buildLmHead(e, h, options.lastLogitsOnly);

  // The write-back copies torch.export inserts for mutated buffers.
  for (auto &[sym, value] : e.cacheWrites)
    b.create<BufferWriteOp>(e.loc, value, FlatSymbolRefAttr::get(e.ctx, sym));
  e.cacheWrites.clear();
  return logits;
}

/// A public function `name` of `inputs` returning `result`, its entry block
/// the insertion point.
func::FuncOp beginMethod(GraphEmitter &e, StringRef name,
                         ArrayRef<Type> inputs, Type result) {
  OpBuilder &b = e.b;
  b.setInsertionPointToEnd(e.module.getBody());
  auto fn = b.create<func::FuncOp>(e.loc, name,
                                   b.getFunctionType(inputs, {result}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  return fn;
}

/// The model's methods, block by block: the KV-cache buffers, `forward`
/// (token ids and positions to logits) and, for a composite model (LLaVA,
/// Gemma 3, SmolVLM), `vision_encoder` (pixels to image features in the
/// decoder's hidden size), `token_embedding` (ids to embeddings) and
/// `text_decoder` (embeddings and positions to logits: forward without its
/// embedding, over the same caches and weights).
LogicalResult buildModel(GraphEmitter &e, const ::etllm::ImportOptions &options,
                         int64_t maxSeq) {
  const ModelConfig &c = e.config;
  OpBuilder &b = e.b;
  Type i64 = b.getI64Type(), f32 = b.getF32Type();
  const int64_t V = c.vocabSize, dyn = ShapedType::kDynamic;

  // Mutable buffers: one K and one V cache per layer.
  b.setInsertionPointToEnd(e.module.getBody());
  auto [cacheType, valueCacheType] = cacheTypes(e, maxSeq);
  for (int64_t i = 0; i < c.numLayers; ++i) {
    b.create<BufferOp>(e.loc, e.path(HfModule::Attention, i) + ".k_cache",
                       cacheType);
    b.create<BufferOp>(e.loc, e.path(HfModule::Attention, i) + ".v_cache",
                       valueCacheType);
  }

  auto tokensType = e.tensorType({1, dyn}, i64);
  auto posType = e.tensorType({dyn}, i64);
  int64_t outSeq = options.lastLogitsOnly ? 1 : dyn;
  auto logitsType = e.tensorType({1, outSeq, V}, f32);
  // The <Family>Model scope, which buildDecoder leaves before the lm_head.
  std::string model = e.path(HfModule::Model);
  auto enterModel = [&] {
    e.pathStack.push_back(model);
    e.moduleClasses[model] = e.cls("Model");
  };

  func::FuncOp fn = beginMethod(e, ::etllm::rt::llm::kForwardMethod,
                                {tokensType, posType}, logitsType);
  enterModel();
  Value h = buildEmbedding(e, fn.getArgument(0));
  b.create<func::ReturnOp>(
      e.loc, buildDecoder(e, options, maxSeq, h, fn.getArgument(1)));

  if (c.hasVision()) {
    const int64_t S = c.visionImageSize;
    // A traced encoder (vision_arch module) is composed in afterwards.
    if (c.visionArch != "module") {
      fn = beginMethod(
          e, ::etllm::rt::llm::kVisionEncoderMethod,
          {e.tensorType({1, 3, S, S}, f32)},
          e.tensorType({1, c.imageSeqLen, c.hiddenSize}, e.dtype));
      b.create<func::ReturnOp>(e.loc,
                               buildVisionEncoder(e, fn.getArgument(0)));
    }
    // token_embedding: forward's embedding alone (ids to the embeddings
    // text_decoder takes; Gemma's scaled), for callers that assemble the
    // decoder's input themselves.
    fn = beginMethod(e, ::etllm::rt::llm::kTokenEmbeddingMethod, {tokensType},
                     e.tensorType({1, dyn, c.hiddenSize}, e.dtype));
    enterModel();
    b.create<func::ReturnOp>(e.loc, buildEmbedding(e, fn.getArgument(0)));
    e.pathStack.pop_back();
    fn = beginMethod(e, ::etllm::rt::llm::kTextDecoderMethod,
                     {e.tensorType({1, dyn, c.hiddenSize}, e.dtype), posType},
                     logitsType);
    enterModel();
    // Gemma 3: the image a call holds attends to itself both ways.
    b.create<func::ReturnOp>(
        e.loc, buildDecoder(e, options, maxSeq, fn.getArgument(0),
                            fn.getArgument(1), c.imageBidirectional));
  }
  return success(e.error.empty());
}

/// model.image_preprocessor's text, checked by the runtime's parser (what
/// the runner will apply) and to give `side` x `side` pixels, the composed
/// encoder's input.
llvm::Expected<std::string> readImagePreprocessor(const std::string &path,
                                                  int64_t side) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return makeError(path + ": model.image_preprocessor: " +
                     buffer.getError().message());
  if ((*buffer)->getBufferSize() > (1u << 20))
    return makeError(path + ": model.image_preprocessor: larger than 1 MiB");
  std::string text = (*buffer)->getBuffer().str();
  ::etllm::rt::image::PreprocessConfig pre;
  if (::etllm::rt::Status st =
          ::etllm::rt::image::parsePreprocessorConfig(text, path, pre);
      !st.ok())
    return makeError(st.message());
  int64_t h = 0, w = 0;
  if (pre.doCenterCrop) {
    h = pre.cropHeight;
    w = pre.cropWidth;
  } else if (pre.doResize && pre.resizeHeight > 0) {
    h = pre.resizeHeight;
    w = pre.resizeWidth;
  }
  if (h != side || w != side)
    return makeError(
        path + ": model.image_preprocessor gives " +
        (h > 0 ? std::to_string(w) + " x " + std::to_string(h)
               : std::string("images of the input's aspect")) +
        " pixels; the vision encoder takes " + std::to_string(side) + " x " +
        std::to_string(side) + " (a fixed size or a center crop)");
  return text;
}

// The typed `#etllm.model_config` of a ModelConfig, read back by passes
// (source swap) and copied into the program file: buildModelConfigAttr(ctx,
// c, maxSeqLen, dtype), generated from etllm/Models/ModelConfig.td (each
// field's value, the mla and moe groups when the model has them).
#define GET_MODEL_CONFIG_ATTR_BUILDER
#include "etllm/Dialect/Etllm/EtllmModelConfig.inc"

} // namespace

namespace etllm {
llvm::Expected<OwningOpRef<ModuleOp>>
buildExportedGraph(MLIRContext *context, const Checkpoint &checkpoint,
                   const ImportOptions &options) {
  context->getOrLoadDialect<EtllmDialect>();
  context->getOrLoadDialect<func::FuncDialect>();
  if (!checkpoint.hasConfig())
    return makeError(checkpoint.path() +
                     ": no model configuration (a bare safetensors file "
                     "needs its config.json next to it)");
  const ModelConfig &c = checkpoint.config();
  if (::etllm::rt::Status st = ::etllm::formats::validate(c); !st.ok())
    return makeError(checkpoint.path() + ": " + st.message());

  Builder builder(context);
  Type dtype;
  if (options.dtype == "float32")
    dtype = builder.getF32Type();
  else if (options.dtype == "float16")
    dtype = builder.getF16Type();
  else if (options.dtype == "bfloat16")
    dtype = builder.getBF16Type();
  else
    return makeError("model.dtype: unknown dtype '" + options.dtype +
                     "' (float32, float16 or bfloat16)");

  int64_t maxSeq = options.maxSeqLen;
  if (maxSeq == 0)
    maxSeq =
        std::min<int64_t>(c.maxPositionEmbeddings > 0 ? c.maxPositionEmbeddings
                                                      : kDefaultMaxSeqLen,
                          kDefaultMaxSeqLen);
  if (maxSeq <= 0 || maxSeq > (int64_t(1) << 24))
    return makeError("model.max_seq_len: " + std::to_string(maxSeq) +
                     " is out of range (1 .. 16777216)");

  // model.vision_encoder: a traced encoder composed with the decoder; the
  // config gains its vision fields from the encoder's IR and the options.
  ModelConfig composed = c;
  std::optional<import::TracedEncoder> encoder;
  if (!options.visionEncoder.empty()) {
    if (c.hasVision())
      return makeError("model.vision_encoder: " + checkpoint.path() +
                       " has a vision encoder already");
    if (options.imagePreprocessor.empty())
      return makeError("model.vision_encoder needs model.image_preprocessor "
                       "(the image processor's preprocessor_config.json)");
    auto loaded = import::loadTracedEncoder(context, options.visionEncoder,
                                            c.hiddenSize);
    if (!loaded)
      return loaded.takeError();
    encoder = std::move(*loaded);
    auto text = readImagePreprocessor(options.imagePreprocessor,
                                      encoder->imageSize);
    if (!text)
      return text.takeError();
    composed.multimodalType = "custom";
    composed.visionArch = "module";
    composed.visionImageSize = encoder->imageSize;
    composed.imageSeqLen = encoder->seqLen;
    composed.imageTokenId = std::max<int64_t>(options.imageTokenId, 0);
    composed.imagePreprocessor = *text;
    if (::etllm::rt::Status st = ::etllm::formats::validate(composed);
        !st.ok())
      return makeError(options.visionEncoder + ": " + st.message());
  }
  if (composed.hasVision() && composed.imageSeqLen > maxSeq)
    return makeError("model.max_seq_len: " + std::to_string(maxSeq) +
                     " is shorter than one image's " +
                     std::to_string(composed.imageSeqLen) + " positions");
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(context));
  GraphEmitter emitter(context, *module, checkpoint, composed,
                       *::etllm::formats::familyOf(c), dtype);
  if (failed(buildModel(emitter, options, maxSeq)))
    return makeError(emitter.error);
  SmallVector<NamedAttribute> encoderClasses;
  if (encoder) {
    import::composeEncoder(*module, *encoder, dtype, encoderClasses);
    if (!encoder->weights.empty()) {
      std::error_code wec;
      std::string abs =
          std::filesystem::absolute(encoder->weights, wec).lexically_normal();
      (*module)->setAttr(
          EtllmDialect::kVisionWeightsAttrName,
          builder.getStringAttr(wec ? encoder->weights : abs));
    }
  }

  std::error_code ec;
  std::string absPath =
      std::filesystem::absolute(checkpoint.path(), ec).lexically_normal();
  SmallVector<NamedAttribute> classes;
  for (auto &entry : emitter.moduleClasses)
    classes.push_back(builder.getNamedAttr(
        entry.getKey(), builder.getStringAttr(entry.getValue())));
  classes.append(encoderClasses.begin(), encoderClasses.end());
  (*module)->setAttr(EtllmDialect::kCheckpointAttrName,
                     builder.getStringAttr(ec ? checkpoint.path() : absPath));
  if (!options.mmproj.empty()) {
    std::error_code mec;
    std::string abs =
        std::filesystem::absolute(options.mmproj, mec).lexically_normal();
    (*module)->setAttr(EtllmDialect::kMmprojAttrName,
                       builder.getStringAttr(mec ? options.mmproj : abs));
  }
  if (!options.lora.empty()) {
    SmallVector<Attribute> adapters;
    for (const ::etllm::formats::LoraSpec &spec : options.lora) {
      auto adapter =
          ::etllm::formats::LoraAdapter::open(spec.path, &checkpoint);
      if (!adapter.ok())
        return makeError(adapter.message());
      if (::etllm::rt::Status st = (*adapter)->checkAgainst(checkpoint);
          !st.ok())
        return makeError(st.message());
      std::error_code aec;
      std::string abs =
          std::filesystem::absolute(spec.path, aec).lexically_normal();
      adapters.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr("path",
                                builder.getStringAttr(aec ? spec.path : abs)),
           builder.getNamedAttr("scale",
                                builder.getF64FloatAttr(spec.scale))}));
    }
    (*module)->setAttr(EtllmDialect::kLoraAttrName,
                       builder.getArrayAttr(adapters));
  }
  setModelConfig(*module, buildModelConfigAttr(context, composed, maxSeq,
                                               options.dtype));
  (*module)->setAttr(EtllmDialect::kModuleClassesAttrName,
                     builder.getDictionaryAttr(classes));
  if (failed(verify(*module)))
    return makeError("internal error: the imported graph does not verify");
  return module;
}
} // namespace etllm
