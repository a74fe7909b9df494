//===- ChatTemplateInfo.cpp - The chat template a program carries ---------===//
//
// Where a chat template comes from, in order: etllm-export --chat-template
// FILE; a Hugging Face directory's chat_template.jinja, tokenizer_config.json
// `chat_template` (a string, or a list of {name, template} whose "default"
// is used) or chat_template.json; a GGUF file's `tokenizer.chat_template`.
// The template is parsed and rendered on sample conversations with the
// runtime's own interpreter, so what the runtime cannot render fails here.
//
//===----------------------------------------------------------------------===//
#include "ChatTemplateInfo.h"

#include "etllm/Formats/Checkpoint.h"
#include "etllm/runtime/llm/chat_template.h"
#include "etllm/runtime/tokenizer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace etllm {
namespace {

using mlir::failure;

/// A special token in tokenizer_config.json: "text" or {"content": "text"}.
std::string tokenText(const llvm::json::Object &cfg, llvm::StringRef key) {
  const llvm::json::Value *v = cfg.get(key);
  if (!v)
    return "";
  if (auto s = v->getAsString())
    return s->str();
  if (const llvm::json::Object *o = v->getAsObject())
    if (auto c = o->getString("content"))
      return c->str();
  return "";
}

struct Found {
  std::string source, origin, bos, eos;
};

/// The `chat_template` value of a JSON object: a string, or a list of
/// {name, template} (the "default" one, else the first).
std::optional<std::string> templateField(const llvm::json::Object &obj) {
  const llvm::json::Value *v = obj.get("chat_template");
  if (!v)
    return std::nullopt;
  if (auto s = v->getAsString())
    return s->str();
  if (const llvm::json::Array *a = v->getAsArray()) {
    std::optional<std::string> first;
    for (const llvm::json::Value &e : *a)
      if (const llvm::json::Object *o = e.getAsObject())
        if (auto t = o->getString("template")) {
          if (!first)
            first = t->str();
          if (o->getString("name") == std::optional<llvm::StringRef>("default"))
            return t->str();
        }
    return first;
  }
  return std::nullopt;
}

mlir::FailureOr<std::optional<llvm::json::Value>>
readJson(mlir::ModuleOp module, const std::string &path) {
  if (!llvm::sys::fs::exists(path))
    return std::optional<llvm::json::Value>();
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return mlir::emitError(module.getLoc(), "cannot read '")
           << path << "': " << buf.getError().message();
  auto parsed = llvm::json::parse((*buf)->getBuffer());
  if (!parsed)
    return mlir::emitError(module.getLoc(), "'")
           << path
           << "' is not valid JSON: " << llvm::toString(parsed.takeError());
  return std::optional<llvm::json::Value>(std::move(*parsed));
}

mlir::FailureOr<std::optional<Found>> fromHfDirectory(mlir::ModuleOp module,
                                                      const std::string &dir) {
  Found f;
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, "tokenizer_config.json");
  auto cfg = readJson(module, p.str().str());
  if (mlir::failed(cfg))
    return failure();
  const llvm::json::Object *cfgObj = *cfg ? (*cfg)->getAsObject() : nullptr;
  if (*cfg && !cfgObj)
    return mlir::emitError(module.getLoc(), "'")
           << p << "' is not a JSON object";
  if (cfgObj) {
    f.bos = tokenText(*cfgObj, "bos_token");
    f.eos = tokenText(*cfgObj, "eos_token");
  }
  // transformers >= 4.43 writes the template to its own file.
  llvm::SmallString<256> jinja(dir);
  llvm::sys::path::append(jinja, "chat_template.jinja");
  if (llvm::sys::fs::exists(jinja)) {
    auto buf = llvm::MemoryBuffer::getFile(jinja, false, false);
    if (!buf)
      return mlir::emitError(module.getLoc(), "cannot read '")
             << jinja << "': " << buf.getError().message();
    f.source = (*buf)->getBuffer().str();
    f.origin = jinja.str().str();
    return std::optional<Found>(f);
  }
  if (cfgObj)
    if (auto t = templateField(*cfgObj)) {
      f.source = *t;
      f.origin = p.str().str() + " (chat_template)";
      return std::optional<Found>(f);
    }
  llvm::SmallString<256> cj(dir);
  llvm::sys::path::append(cj, "chat_template.json");
  auto chatJson = readJson(module, cj.str().str());
  if (mlir::failed(chatJson))
    return failure();
  if (*chatJson)
    if (const llvm::json::Object *o = (*chatJson)->getAsObject())
      if (auto t = templateField(*o)) {
        f.source = *t;
        f.origin = cj.str().str() + " (chat_template)";
        return std::optional<Found>(f);
      }
  return std::optional<Found>(f); // no template (origin empty)
}

/// The stored text of a special token, as a template expects it (llama2.c's
/// tokenizer.bin stores BOS as "\n<s>\n").
std::string pieceText(const rt::Tokenizer &tok, int32_t id) {
  if (id < 0)
    return "";
  std::string s = tok.idToPiece(id);
  size_t b = s.find_first_not_of(" \n\t");
  size_t e = s.find_last_not_of(" \n\t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

} // namespace

mlir::FailureOr<std::optional<ChatTemplateData>>
findChatTemplate(mlir::ModuleOp module, const formats::Checkpoint *ckpt,
                 const SerializeOptions &options,
                 const rt::Tokenizer *tokenizer) {
  if (options.noChatTemplate)
    return std::optional<ChatTemplateData>();
  Found f;
  bool have = false;
  // The checkpoint's own (also for the special-token text an override
  // template refers to).
  if (ckpt && ckpt->format() == "safetensors" &&
      llvm::sys::fs::is_directory(ckpt->path())) {
    auto hf = fromHfDirectory(module, ckpt->path());
    if (mlir::failed(hf))
      return failure();
    if (*hf) {
      f = **hf;
      have = !f.origin.empty();
    }
  } else if (ckpt && ckpt->format() == "gguf") {
    if (const formats::GgufValue *v =
            ckpt->metadata("tokenizer.chat_template")) {
      const std::string *s = v->toString();
      if (!s)
        return mlir::emitError(module.getLoc(), "'")
               << ckpt->path() << "': tokenizer.chat_template is not a string";
      f.source = *s;
      f.origin = ckpt->path() + " (tokenizer.chat_template)";
      have = true;
    }
    if (const formats::GgufTokenizerInfo *t = ckpt->ggufTokenizer()) {
      auto at = [&](int64_t id) {
        return id >= 0 && size_t(id) < t->tokens.size() ? t->tokens[size_t(id)]
                                                        : std::string();
      };
      f.bos = at(t->bosTokenId);
      f.eos = at(t->eosTokenId);
    }
  }
  if (!options.chatTemplatePath.empty()) {
    auto buf =
        llvm::MemoryBuffer::getFile(options.chatTemplatePath, false, false);
    if (!buf)
      return mlir::emitError(module.getLoc(), "cannot read the chat template '")
             << options.chatTemplatePath << "': " << buf.getError().message();
    f.source = (*buf)->getBuffer().str();
    f.origin = options.chatTemplatePath;
    // A tokenizer_config.json given as the template file.
    if (auto j = llvm::json::parse(f.source))
      if (const llvm::json::Object *o = j->getAsObject()) {
        auto t = templateField(*o);
        if (!t)
          return mlir::emitError(module.getLoc(), "the chat template file '")
                 << options.chatTemplatePath
                 << "' is JSON without a \"chat_template\"";
        f.source = *t;
        if (std::string b = tokenText(*o, "bos_token"); !b.empty())
          f.bos = b;
        if (std::string e = tokenText(*o, "eos_token"); !e.empty())
          f.eos = e;
      }
    have = true;
  }
  if (!have)
    return std::optional<ChatTemplateData>();
  if (tokenizer) {
    if (f.bos.empty())
      f.bos = pieceText(*tokenizer, tokenizer->bosId());
    if (f.eos.empty())
      f.eos = pieceText(*tokenizer, tokenizer->eosId());
  }

  auto tmpl = rt::llm::ChatTemplate::parse(f.source, f.origin);
  if (!tmpl.ok())
    return mlir::emitError(module.getLoc(),
                           "the chat template cannot be used: ")
           << tmpl.message()
           << " (pass --chat-template FILE to use another, or "
              "--no-chat-template)";
  // Render sample conversations: a template may reject some (Gemma rejects
  // a system message) but must accept one, and must never fail for a
  // reason of the interpreter's.
  std::vector<std::vector<rt::llm::ChatMessage>> samples = {
      {{"user", "Hello"}},
      {{"system", "You are helpful."},
       {"user", "Hello"},
       {"assistant", "Hi!"},
       {"user", "Who are you?"}},
      {{"user", "Hello"}, {"assistant", "Hi!"}, {"user", "Who are you?"}},
  };
  bool anyRendered = false;
  std::string lastRaise;
  for (const auto &messages : samples) {
    rt::llm::ChatContext ctx;
    ctx.messages = messages;
    ctx.bosToken = f.bos;
    ctx.eosToken = f.eos;
    rt::llm::RenderFailure why;
    auto out = tmpl->render(ctx, &why);
    if (out.ok()) {
      anyRendered = true;
      continue;
    }
    if (why == rt::llm::RenderFailure::Raised) {
      lastRaise = out.message();
      continue;
    }
    return mlir::emitError(module.getLoc(),
                           "the chat template cannot be rendered by etllm's "
                           "interpreter: ")
           << out.message()
           << " (pass --chat-template FILE to use another, or "
              "--no-chat-template)";
  }
  if (!anyRendered)
    return mlir::emitError(module.getLoc(),
                           "the chat template rejects every sample "
                           "conversation: ")
           << lastRaise;

  ChatTemplateData d;
  d.source = f.source;
  d.bosToken = f.bos;
  d.eosToken = f.eos;
  d.stopStrings = rt::llm::endOfTurnMarkers(f.source);
  if (!f.eos.empty() && std::find(d.stopStrings.begin(), d.stopStrings.end(),
                                  f.eos) == d.stopStrings.end())
    d.stopStrings.push_back(f.eos);
  return std::optional<ChatTemplateData>(std::move(d));
}

flatbuffers::Offset<schema::ChatTemplateInfo>
writeChatTemplateInfo(flatbuffers::FlatBufferBuilder &fb,
                      const ChatTemplateData &chat) {
  auto source = fb.CreateString(chat.source);
  auto bos = fb.CreateString(chat.bosToken);
  auto eos = fb.CreateString(chat.eosToken);
  auto stops = fb.CreateVectorOfStrings(chat.stopStrings);
  return schema::CreateChatTemplateInfo(fb, source, bos, eos, stops);
}

} // namespace etllm
