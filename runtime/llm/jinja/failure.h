//===- failure.h - How the Jinja interpreter fails --------------*- C++ -*-===//
//
// Inside the interpreter a failure is thrown as a TemplateFail, and the
// chat-template API (chat_template.cpp) turns it into an Error value;
// nothing else throws out of the interpreter.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_JINJA_FAILURE_H
#define ETLLM_RUNTIME_LLM_JINJA_FAILURE_H

#include "etllm/runtime/llm/chat_template.h"

#include <string>

namespace etllm::rt::llm::jinja {

/// A failed parse or render: why, and the message.
struct TemplateFail {
  RenderFailure kind;
  std::string message;
};

/// Fails what the interpreter cannot evaluate, naming the template line.
[[noreturn]] inline void unsupported(int line, const std::string &msg) {
  throw TemplateFail{RenderFailure::Unsupported,
                     "line " + std::to_string(line) + ": " + msg};
}

/// Fails a template the lexer or parser cannot read.
[[noreturn]] inline void syntaxError(int line, const std::string &msg) {
  unsupported(line, msg);
}

} // namespace etllm::rt::llm::jinja

#endif // ETLLM_RUNTIME_LLM_JINJA_FAILURE_H
