//===- chat_template.cpp - Chat templates on the Jinja interpreter --------===//
//
// Why a Jinja interpreter of our own: Debian packages no C++ Jinja library
// (minja and jinja2cpp are not in bookworm) and the runtime must not embed
// Python, yet every chat model ships its format as a Jinja template. The
// subset in jinja/ is what the chat templates of the families etllm imports
// use; its behaviour is Jinja 3.1's as transformers configures it
// (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with
// loop controls, its own `tojson`, `raise_exception` and `strftime_now`),
// checked byte for byte against jinja2 by test/ChatTemplate.
//
// The interpreter, by job (runtime/llm/jinja/): lexer (source to tokens,
// with the whitespace rules), parser (tokens to the ast.h tree), value
// (Python value semantics) and json (tojson, JSON contexts), evaluator
// (walks the tree), and builtins.def, the one table of the globals,
// filters, tests and methods that the parser checks names against and the
// evaluator calls (filters.cpp, tests.cpp, methods.cpp). This file is the
// chat-template API on top: parse, render a conversation or a JSON context,
// and turn the interpreter's TemplateFail into Error values; nothing throws
// out of it.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/llm/chat_template.h"

#include "jinja/evaluator.h"
#include "jinja/failure.h"
#include "jinja/json.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/value.h"

#include <nlohmann/json.hpp>

#include <new>

namespace etllm::rt::llm {

using jinja::TemplateFail;
using jinja::Value;

struct ChatTemplate::Program {
  std::string source, name;
  TemplateLimits limits;
  jinja::Body body;
};

namespace {

Value contextValue(const ChatContext &c) {
  std::vector<Value> messages;
  for (const ChatMessage &m : c.messages)
    messages.push_back(
        jinja::makeDict({{"role", Value::string(m.role)},
                         {"content", Value::string(m.content)}}));
  return jinja::makeDict({
      {"messages", Value::makeList(std::move(messages))},
      {"tools", Value::none()},
      {"documents", Value::none()},
      {"add_generation_prompt", Value::boolean(c.addGenerationPrompt)},
      {"bos_token", Value::string(c.bosToken)},
      {"eos_token", Value::string(c.eosToken)},
  });
}

Result<std::string> renderValue(const ChatTemplate::Program &prog,
                                Value globals, RenderFailure *failure) {
  if (failure)
    *failure = RenderFailure::None;
  try {
    jinja::Evaluator ev(prog.body, prog.limits, std::move(globals));
    return ev.run();
  } catch (const TemplateFail &f) {
    if (failure)
      *failure = f.kind;
    if (f.kind == RenderFailure::Raised)
      return Error(
          prog.name +
          ": the chat template rejects the conversation: " + f.message);
    return Error(prog.name + ": " + f.message);
  } catch (const std::bad_alloc &) {
    if (failure)
      *failure = RenderFailure::Unsupported;
    return Error(prog.name + ": out of memory while rendering the template");
  }
}

} // namespace

Result<ChatTemplate> ChatTemplate::parse(std::string_view source,
                                         const std::string &name,
                                         const TemplateLimits &limits) {
  if (source.size() > limits.maxSourceBytes)
    return Error(
        name + ": the chat template is " + std::to_string(source.size()) +
        " bytes, more than the limit " + std::to_string(limits.maxSourceBytes));
  auto prog = std::make_shared<Program>();
  prog->source = std::string(source);
  prog->name = name;
  prog->limits = limits;
  try {
    prog->body =
        jinja::parse(jinja::lex(source, /*maxTokens=*/limits.maxSourceBytes),
                     limits.maxDepth);
  } catch (const TemplateFail &f) {
    return Error(name + ": " + f.message);
  } catch (const std::bad_alloc &) {
    return Error(name + ": out of memory while parsing the template");
  }
  ChatTemplate t;
  t.program_ = std::move(prog);
  return t;
}

const std::string &ChatTemplate::source() const { return program_->source; }

Result<std::string> ChatTemplate::render(const ChatContext &context,
                                         RenderFailure *failure) const {
  return renderValue(*program_, contextValue(context), failure);
}

Result<std::string> ChatTemplate::renderJson(std::string_view contextJson,
                                             RenderFailure *failure) const {
  if (failure)
    *failure = RenderFailure::Unsupported;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(
      contextJson, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Error(program_->name + ": the render context is not a JSON object");
  Value globals;
  try {
    globals = jinja::fromJson(j, 0);
  } catch (const TemplateFail &f) {
    return Error(program_->name + ": " + f.message);
  }
  return renderValue(*program_, std::move(globals), failure);
}

std::vector<std::string> endOfTurnMarkers(std::string_view templateSource) {
  // The end-of-turn markers of the chat formats in the families etllm
  // imports (ChatML, Llama 3, Gemma, Phi-3) and a few common others.
  static const char *kMarkers[] = {"<|im_end|>",
                                   "<|eot_id|>",
                                   "<|eom_id|>",
                                   "<end_of_turn>",
                                   "<|end|>",
                                   "<|endoftext|>",
                                   "<|END_OF_TURN_TOKEN|>",
                                   "<|end_of_text|>"};
  std::vector<std::string> out;
  for (const char *m : kMarkers)
    if (templateSource.find(m) != std::string_view::npos)
      out.push_back(m);
  return out;
}

} // namespace etllm::rt::llm
