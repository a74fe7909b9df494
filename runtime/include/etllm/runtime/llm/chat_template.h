//===- chat_template.h - Chat templates (a Jinja subset) -------*- C++ -*-===//
//
// Models ship their chat format as a Jinja template (Hugging Face
// tokenizer_config.json `chat_template`, GGUF `tokenizer.chat_template`).
// Debian has no C++ Jinja library (and the runtime links no Python), so the
// runtime carries a small interpreter of the Jinja subset chat templates use:
// a lexer (with Jinja's whitespace control, and the trim_blocks /
// lstrip_blocks settings Hugging Face renders with), a parser to an AST, and
// an evaluator with Python value semantics. It covers the templates of every
// family etllm imports (Llama 2/3/3.1/3.2, Mistral, Qwen2/2.5/3, Phi-3,
// Gemma/Gemma2), which test/ChatTemplate renders against jinja2
// byte for byte:
//   statements  if/elif/else, for (tuple targets, `if` filter, else, loop.*),
//               set (names, tuples, namespace attributes, set blocks),
//               break/continue, generation blocks, comments;
//   expressions literals (strings, numbers, lists, dicts, tuples), names,
//               attributes, subscripts, slices, calls, filters, tests,
//               + - * / // % ** ~, comparisons, in / not in, and/or/not,
//               conditional expressions;
//   globals     range, namespace, dict, raise_exception, strftime_now;
//   filters     the Jinja built-ins templates use (trim, length, tojson as
//               transformers defines it, join, selectattr, map, default...);
//   methods     the Python str/dict methods templates call (strip, split,
//               startswith, items, get, ...).
// Anything else (macros, includes, call blocks) is an error at parse time.
//
// Templates come from the internet: the source size, nesting depth, output
// size and number of evaluation steps are bounded, and every failure is an
// Error value (never a crash, an exception or unbounded work).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_CHAT_TEMPLATE_H
#define ETLLM_RUNTIME_LLM_CHAT_TEMPLATE_H

#include "etllm/runtime/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace etllm::rt::llm {

/// Bounds on the work a template may do.
struct TemplateLimits {
  /// Bytes of template source.
  size_t maxSourceBytes = 1 << 20;
  /// Nesting of blocks and expressions (parser and evaluator recursion).
  int maxDepth = 100;
  /// Bytes of output, and of any single string or list built on the way.
  size_t maxOutputBytes = 8 << 20;
  /// Evaluation steps (expression nodes, statements, loop iterations).
  uint64_t maxSteps = 20'000'000;
};

/// One message of a conversation.
struct ChatMessage {
  std::string role;
  std::string content;
};

/// The variables a chat template is rendered with (what transformers'
/// apply_chat_template passes: messages, add_generation_prompt, the special
/// tokens, tools=None, documents=None).
struct ChatContext {
  std::vector<ChatMessage> messages;
  bool addGenerationPrompt = true;
  std::string bosToken, eosToken;
};

/// Why a render failed.
enum class RenderFailure {
  None,
  /// The template itself called raise_exception (it rejects the
  /// conversation, e.g. "System role not supported").
  Raised,
  /// The interpreter cannot evaluate the template (unknown filter, type
  /// error, a limit reached, ...).
  Unsupported,
};

/// A parsed chat template (immutable; renders may run on several threads).
class ChatTemplate {
public:
  /// Parses `source`; errors name `name`, the line and the problem.
  static Result<ChatTemplate> parse(std::string_view source,
                                    const std::string &name,
                                    const TemplateLimits &limits = {});

  /// Renders a conversation.
  Result<std::string> render(const ChatContext &context,
                             RenderFailure *failure = nullptr) const;

  /// Renders with the top-level variables of a JSON object (any JSON
  /// values: messages with tool calls, date_string, enable_thinking, ...).
  Result<std::string> renderJson(std::string_view contextJson,
                                 RenderFailure *failure = nullptr) const;

  const std::string &source() const;

  struct Program; // the AST (chat_template.cpp)

private:
  std::shared_ptr<const Program> program_;
};

/// End-of-turn markers of the chat formats etllm knows (<|im_end|>,
/// <|eot_id|>, <end_of_turn>, <|end|>, ...): those that appear in
/// `templateSource`. Generation in a chat stops at them.
std::vector<std::string> endOfTurnMarkers(std::string_view templateSource);

} // namespace etllm::rt::llm

#endif // ETLLM_RUNTIME_LLM_CHAT_TEMPLATE_H
