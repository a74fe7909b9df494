//===- tokenizer.cpp - Tokenizer base class and format detection ----------===//
#include "internal.h"

#include "etllm/runtime/mapped_file.h"

#include <cctype>

namespace etllm::rt {

using namespace tok;

Tokenizer::~Tokenizer() = default;

const char *tokenizerKindName(TokenizerKind kind) {
  switch (kind) {
  case TokenizerKind::Llama2c:
    return "llama2c";
  case TokenizerKind::SentencePiece:
    return "sentencepiece";
  case TokenizerKind::Tiktoken:
    return "tiktoken";
  case TokenizerKind::HuggingFace:
    return "huggingface";
  case TokenizerKind::GgufSpm:
    return "gguf-spm";
  case TokenizerKind::GgufBpe:
    return "gguf-bpe";
  }
  return "unknown";
}

Result<std::vector<int32_t>> Tokenizer::encodeOrdinary(std::string_view text,
                                                       bool addBos) const {
  return encode(text, addBos);
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids) const {
  std::string out;
  int32_t prev = bosId();
  for (int32_t id : ids) {
    out += decodeToken(prev, id);
    prev = id;
  }
  return out;
}

std::vector<int32_t> Tokenizer::stopIds() const {
  std::vector<int32_t> ids;
  if (eosId() >= 0)
    ids.push_back(eosId());
  return ids;
}

namespace tok {

bool looksLikeJson(const uint8_t *data, size_t size) {
  // '{' then '"' or '}' (whitespace allowed): a llama2.c file whose
  // max_token_length happens to be 123 ('{') does not qualify.
  auto isSpace = [](uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  };
  size_t i = 0;
  if (size >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF)
    i = 3; // UTF-8 BOM
  while (i < size && isSpace(data[i]))
    ++i;
  if (i >= size || data[i] != '{')
    return false;
  ++i;
  while (i < size && isSpace(data[i]))
    ++i;
  return i < size && (data[i] == '"' || data[i] == '}');
}

bool looksLikeTiktoken(const uint8_t *data, size_t size) {
  // First line: base64 characters, one space, decimal digits.
  size_t i = 0;
  size_t b64 = 0;
  while (i < size && (std::isalnum(data[i]) || data[i] == '+' ||
                      data[i] == '/' || data[i] == '=')) {
    ++i;
    ++b64;
  }
  if (b64 == 0 || i >= size || data[i] != ' ')
    return false;
  ++i;
  size_t digits = 0;
  while (i < size && data[i] >= '0' && data[i] <= '9') {
    ++i;
    ++digits;
  }
  if (digits == 0)
    return false;
  return i == size || data[i] == '\n' || data[i] == '\r';
}

} // namespace tok

static Result<TokenizerPtr> loadDetected(const uint8_t *data, size_t size,
                                         const std::string &name) {
  if (size == 0)
    return Error(name + ": empty file (not a tokenizer)");
  if (looksLikeJson(data, size))
    return loadHuggingFace(data, size, name);
  if (looksLikeTiktoken(data, size))
    return loadTiktoken(data, size, name);
  // Binary: llama2.c's layout is checked strictly to the last byte, so it is
  // tried first; a SentencePiece protobuf never tiles that way.
  auto l2c = loadLlama2c(data, size, name);
  if (l2c.ok())
    return l2c;
  auto spm = loadSentencePiece(data, size, name);
  if (spm.ok())
    return spm;
  return Error(name +
               ": not a recognized tokenizer file; tried: Hugging Face "
               "tokenizer.json (not a JSON object), tiktoken ranks (first line "
               "is not 'base64 rank'), llama2.c tokenizer.bin (" +
               l2c.message() + "), SentencePiece model (" + spm.message() +
               ")");
}

Result<std::unique_ptr<Tokenizer>> loadTokenizer(const std::string &path) {
  auto file = MappedFile::open(path);
  if (!file.ok())
    return file.error();
  return loadTokenizerFromBuffer((*file)->data(), (*file)->size(), path);
}

Result<std::unique_ptr<Tokenizer>>
loadTokenizerFromBuffer(const uint8_t *data, size_t size,
                        const std::string &name) {
  if (!data && size > 0)
    return Error(name + ": null buffer");
  return loadDetected(data, size, name);
}

Result<std::unique_ptr<Tokenizer>>
loadTokenizerFromBuffer(const uint8_t *data, size_t size,
                        const std::string &name, TokenizerKind kind) {
  if (!data && size > 0)
    return Error(name + ": null buffer");
  if (size == 0)
    return Error(name + ": empty file (not a tokenizer)");
  switch (kind) {
  case TokenizerKind::Llama2c:
    return loadLlama2c(data, size, name);
  case TokenizerKind::SentencePiece:
    return loadSentencePiece(data, size, name);
  case TokenizerKind::Tiktoken:
    return loadTiktoken(data, size, name);
  case TokenizerKind::HuggingFace:
    return loadHuggingFace(data, size, name);
  case TokenizerKind::GgufSpm:
  case TokenizerKind::GgufBpe:
    break;
  }
  return Error(name + ": a " + tokenizerKindName(kind) +
               " vocabulary is GGUF metadata, not a file: use "
               "tokenizerFromVocab");
}

Result<std::unique_ptr<Tokenizer>>
tokenizerFromVocab(const EmbeddedVocab &vocab, const std::string &name) {
  if (vocab.model == "llama")
    return makeGgufSpm(vocab, name);
  if (vocab.model == "gpt2")
    return makeGgufBpe(vocab, name);
  return Error(name + ": unsupported tokenizer.ggml.model " +
               quoteForError(vocab.model) +
               " (supported: \"llama\", \"gpt2\")");
}

} // namespace etllm::rt
