//===- lexer.h - Jinja template source to tokens ----------------*- C++ -*-===//
//
// Splits a template into data (text) and tag tokens, applying Jinja's
// whitespace rules: `-` / `+` tag modifiers, trim_blocks and lstrip_blocks
// (as Hugging Face renders), newline normalization and the dropped trailing
// newline; comments and raw blocks are resolved here.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_JINJA_LEXER_H
#define ETLLM_RUNTIME_LLM_JINJA_LEXER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace etllm::rt::llm::jinja {

/// A token kind: template text, tag delimiters, and the tokens inside tags.
enum class Tok : uint8_t {
  Data,
  VarBegin,
  VarEnd,
  BlockBegin,
  BlockEnd,
  Name,
  String,
  Int,
  Float,
  Op,
  Eof,
};

/// One token, with the line it starts on.
struct Token {
  Tok type;
  std::string text; // data, name, string value, operator
  int line = 1;
  int64_t ival = 0;
  double fval = 0;
};

/// The tokens of `source`, ending in an Eof token; fails (TemplateFail) on
/// a malformed template or more than `maxTokens` tokens.
std::vector<Token> lex(std::string_view source, size_t maxTokens);

} // namespace etllm::rt::llm::jinja

#endif // ETLLM_RUNTIME_LLM_JINJA_LEXER_H
