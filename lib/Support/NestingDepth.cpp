//===- NestingDepth.cpp - Bounds on the nesting of textual input ----------===//
//
// Hand-written because MLIR's lexer is private to its parser library; the
// scan only needs to know strings, comments and brackets, which MLIR's
// syntax fixes (docs/LangRef: string literals are "..." with backslash
// escapes, comments run from // to the end of the line).
//
//===----------------------------------------------------------------------===//
#include "etllm/Support/NestingDepth.h"

namespace etllm {

std::optional<NestingViolation> findIrNestingViolation(std::string_view text,
                                                       unsigned limit) {
  unsigned depth = 0;
  size_t line = 1, lineStart = 0;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"':
      // A string literal: skip to its closing quote (an unterminated one
      // runs to the end; the parser reports it).
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < n)
          ++i;
        if (text[i] == '\n') {
          ++line;
          lineStart = i + 1;
        }
      }
      break;
    case '/':
      if (i + 1 < n && text[i + 1] == '/')
        while (i + 1 < n && text[i + 1] != '\n')
          ++i;
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      if (c == '<' && i + 1 < n && text[i + 1] == '=')
        break;
      if (++depth > limit) {
        NestingViolation v;
        v.offset = i;
        v.line = line;
        v.column = i - lineStart + 1;
        v.limit = limit;
        return v;
      }
      break;
    case '>':
      if ((i > 0 && text[i - 1] == '-') || (i + 1 < n && text[i + 1] == '='))
        break;
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      // Unbalanced closers cannot bank credit for later openers.
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

std::string describeIrNestingViolation(const NestingViolation &v,
                                       std::string_view name) {
  return std::string(name) + ":" + std::to_string(v.line) + ":" +
         std::to_string(v.column) + ": error: IR nested deeper than " +
         std::to_string(v.limit) +
         " levels of brackets ((, [, {, <) is refused before parsing";
}

} // namespace etllm
