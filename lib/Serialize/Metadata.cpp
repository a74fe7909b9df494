//===- Metadata.cpp - The program's metadata table ------------------------===//
#include "Metadata.h"

#include "ChatTemplateInfo.h"
#include "etllm/Lowering/ProgramConfig.h"

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/GgufEmbeddedVocab.h"
#include "etllm/Formats/Lora.h"
#include "etllm/Lowering/Lowering.h"
#include "etllm/Lowering/WeightStore.h"
#include "etllm/runtime/tokenizer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::etllm;
namespace fbs = ::etllm::schema;

namespace etllm {

FailureOr<EmbeddedTokenizer> loadTokenizer(ModuleOp module,
                                           const SerializeOptions &options) {
  EmbeddedTokenizer t;
  if (!options.tokenizerPath.empty()) {
    auto buf = llvm::MemoryBuffer::getFile(options.tokenizerPath, false, false);
    if (!buf)
      return module.emitError("cannot read the tokenizer '")
             << options.tokenizerPath << "': " << buf.getError().message();
    t.file = std::move(*buf);
    auto tok = rt::loadTokenizerFromBuffer(
        reinterpret_cast<const uint8_t *>(t.file->getBufferStart()),
        t.file->getBufferSize(), options.tokenizerPath);
    if (!tok.ok())
      return module.emitError(tok.message());
    t.kind = rt::tokenizerKindName((*tok)->kind());
    t.tokenizer = std::move(tok.value());
  }
  return t;
}

/// The GGUF vocabulary a program embeds is checked as a --tokenizer file
/// is: the runtime builds its tokenizer from it (the model, the token
/// types, the scores' and types' lengths, the special ids, the merges),
/// and it must have one token per row of the token embedding, so that a
/// bad vocabulary fails the export, not the first run.
static LogicalResult checkEmbeddedVocab(ModuleOp module,
                                        const formats::Checkpoint &ckpt,
                                        const formats::GgufTokenizerInfo &t,
                                        int64_t vocabSize) {
  if (int64_t(t.tokens.size()) != vocabSize)
    return module.emitError()
           << ckpt.path() << ": tokenizer.ggml.tokens has " << t.tokens.size()
           << " tokens, but the model's vocabulary (the token embedding's "
              "rows) is "
           << vocabSize << "; pass --tokenizer to embed another tokenizer file";
  rt::EmbeddedVocab v = formats::embeddedVocab(t);
  // A pre-tokenizer this runtime lacks (qwen2, deepseek-llm, ...) is no
  // fault of the file, and the program still runs with etllm-run
  // --tokenizer: the rest of the vocabulary is checked with the default.
  if (v.model == "gpt2" && !rt::isSupportedGgufPre(v.pre))
    v.pre.clear();
  auto tok = rt::tokenizerFromVocab(v, ckpt.path() + " (embedded vocabulary)");
  if (!tok.ok())
    return module.emitError(tok.message());
  return success();
}

FailureOr<flatbuffers::Offset<fbs::Metadata>>
buildMetadata(flatbuffers::FlatBufferBuilder &fb, LoweredProgram &p,
              const SerializeOptions &options,
              const EmbeddedTokenizer &tokenizer, int32_t tokenizerSegment,
              const std::function<std::string(size_t)> &digest) {
  ModuleOp module = p.module;
  ProgramConfig config = readProgramConfig(module);
  flatbuffers::Offset<fbs::TokenizerInfo> tokInfo = 0;
  const formats::Checkpoint *ckpt = nullptr;
  if (module->hasAttr(EtllmDialect::kCheckpointAttrName)) {
    ckpt = p.weights.checkpoint(module);
    if (!ckpt)
      return failure();
  }
  if (tokenizer.file) {
    auto kind = fb.CreateString(tokenizer.kind);
    auto name =
        fb.CreateString(llvm::sys::path::filename(options.tokenizerPath).str());
    fbs::TokenizerInfoBuilder tb(fb);
    tb.add_kind(kind);
    tb.add_file_segment(tokenizerSegment);
    tb.add_file_name(name);
    tb.add_bos_id(config.bosTokenId);
    tb.add_eos_id(config.eosTokenIds.empty() ? -1 : config.eosTokenIds.front());
    tokInfo = tb.Finish();
  } else if (ckpt && ckpt->ggufTokenizer()) {
    const formats::GgufTokenizerInfo &t = *ckpt->ggufTokenizer();
    if (failed(checkEmbeddedVocab(module, *ckpt, t, config.vocabSize)))
      return failure();
    // The runtime's tokenizer kind is the GGUF tokenizer model's name,
    // prefixed (gguf-llama, gguf-gpt2, ...): no list of names here.
    auto kind = fb.CreateString("gguf-" + t.model);
    auto pre = fb.CreateString(t.pre);
    auto tokens = fb.CreateVectorOfStrings(t.tokens);
    auto scores = fb.CreateVector(t.scores);
    auto types = fb.CreateVector(t.tokenTypes);
    auto merges = fb.CreateVectorOfStrings(t.merges);
    fbs::TokenizerInfoBuilder tb(fb);
    tb.add_kind(kind);
    tb.add_pre(pre);
    tb.add_tokens(tokens);
    tb.add_scores(scores);
    tb.add_token_types(types);
    tb.add_merges(merges);
    tb.add_bos_id(t.bosTokenId);
    tb.add_eos_id(t.eosTokenId);
    tb.add_unk_id(t.unknownTokenId);
    tb.add_pad_id(t.paddingTokenId);
    tb.add_eot_id(t.eotTokenId);
    tb.add_add_bos(t.addBosToken.value_or(true));
    tb.add_add_space_prefix(t.addSpacePrefix.value_or(true));
    tokInfo = tb.Finish();
  }
  // Inputs are recorded by file name (never the directory they came from, so
  // a program does not leak the exporter's paths and the same inputs give the
  // same bytes wherever they are) and content hash.
  auto inputName = [](const std::string &path) {
    return llvm::sys::path::filename(path).str();
  };
  std::vector<flatbuffers::Offset<fbs::KeyValue>> inputsKv;
  size_t input = 0;
  auto addInput = [&](const std::string &path) {
    std::string hash =
        options.hashInputs ? "sha256:" + digest(input) : std::string();
    ++input;
    inputsKv.push_back(fbs::CreateKeyValue(fb, fb.CreateString(inputName(path)),
                                           fb.CreateString(hash)));
  };
  if (ckpt)
    for (const auto &f : ckpt->files())
      addInput(f->path());
  if (!options.tokenizerPath.empty())
    addInput(options.tokenizerPath);
  if (module->hasAttr(EtllmDialect::kLoraAttrName)) {
    FailureOr<const std::vector<WeightStore::Adapter> *> adapters =
        p.weights.loraAdapters(module);
    if (failed(adapters))
      return failure();
    for (const WeightStore::Adapter &a : **adapters)
      for (const std::string &f : a.adapter->files())
        addInput(f);
  }
  if (std::string f = calibrationFile(module); !f.empty())
    addInput(f);
  auto prov = fbs::CreateProvenance(
      fb, fb.CreateString(ETLLM_VERSION), fb.CreateString(options.pipeline),
      fb.CreateString(options.configYaml),
      fb.CreateVectorOfStrings(options.stages), fb.CreateVector(inputsKv));
  FailureOr<std::optional<ChatTemplateData>> chat =
      findChatTemplate(module, ckpt, options, tokenizer.tokenizer.get());
  if (failed(chat))
    return failure();
  flatbuffers::Offset<fbs::ChatTemplateInfo> chatInfo =
      *chat ? writeChatTemplateInfo(fb, **chat) : 0;
  flatbuffers::Offset<fbs::KvRing> ring =
      config.ringChunk > 0
          ? fbs::CreateKvRing(fb, config.ringChunk, config.ringSinks)
          : 0;
  return fbs::CreateMetadata(fb, fb.CreateString(modelConfigJson(module)),
                             config.vocabSize, config.maxSeqLen,
                             config.bosTokenId,
                             fb.CreateVector(config.eosTokenIds), tokInfo, prov,
                             chatInfo, ring);
}

} // namespace etllm
