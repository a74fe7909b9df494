//===- parser.h - Jinja tokens to a syntax tree -----------------*- C++ -*-===//
//
// Builds the statements of a template from its tokens: if/elif/else, for
// (tuple targets, a loop filter, else), set (names, tuples, namespace
// attributes, set blocks with a filter), break/continue, generation blocks;
// Jinja's expression grammar with filters, tests, calls, subscripts and
// slices. Anything else (macros, includes, call blocks, an unknown filter or
// test) is a syntax error naming the line.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_JINJA_PARSER_H
#define ETLLM_RUNTIME_LLM_JINJA_PARSER_H

#include "ast.h"
#include "lexer.h"

#include <vector>

namespace etllm::rt::llm::jinja {

/// The statements of a template; fails (TemplateFail) on a syntax error or
/// nesting deeper than `maxDepth`.
Body parse(std::vector<Token> tokens, int maxDepth);

} // namespace etllm::rt::llm::jinja

#endif // ETLLM_RUNTIME_LLM_JINJA_PARSER_H
