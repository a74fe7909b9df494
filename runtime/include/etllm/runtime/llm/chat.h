//===- chat.h - A conversation with a chat model ---------------*- C++ -*-===//
//
// A ChatSession renders the conversation with the model's chat template
// (embedded in the program at export, see chat_template.h), feeds the model
// only the tokens that are not in its KV cache yet, and streams the reply
// until an end-of-turn token or string of the template.
//
// Every turn renders the whole conversation. When the new rendering extends
// the text already in the KV cache (the previous prompt and the reply the
// model produced), only the new suffix is tokenized and prefilled. When it
// does not (a template that rewrites earlier turns, e.g. Qwen3 dropping old
// reasoning), the whole rendering is tokenized and the KV cache is reused
// only up to the first differing token (ChatTurn::reprefilled says so).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_CHAT_H
#define ETLLM_RUNTIME_LLM_CHAT_H

#include "etllm/runtime/llm/chat_template.h"
#include "etllm/runtime/llm/runner.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace etllm::rt::llm {

struct ChatOptions {
  /// A system message that starts the conversation (empty: none).
  std::string systemPrompt;
  /// A template source to use instead of the program's own.
  std::string templateSource;
  /// Keep the KV cache across turns (false: prefill the whole conversation
  /// every turn; for checking that reuse changes nothing).
  bool reuseKvCache = true;
};

/// What one turn did.
struct ChatTurn {
  Stats stats;
  /// 1 for the first reply.
  int64_t turn = 0;
  /// The rendering did not extend the cached text: tokens after the first
  /// difference were prefilled again.
  bool reprefilled = false;
  /// The whole conversation as the template rendered it for this turn,
  /// ending with the generation prompt: the text the model continues.
  std::string prompt;
  /// The reply text (what was streamed).
  std::string reply;
  /// stats.toJson() with "turn" and "reprefilled" added.
  std::string toJson() const;
};

class ChatSession {
public:
  /// Errors: the program has no chat template (and none is given), the
  /// template cannot be parsed, or it rejects the system message.
  static Result<std::unique_ptr<ChatSession>>
  create(Runner &runner, const ChatOptions &options);

  /// One turn: adds the user's message, generates the reply (streamed to
  /// `onText`) and adds it. A conversation that no longer fits the context
  /// shifts when config.shiftContext is set (its start and its latest part
  /// stay, as the runner shifts a full context; Stats::contextShifts counts
  /// it); otherwise, or when even that cannot make room, it is an error that
  /// leaves the conversation unchanged.
  Result<ChatTurn> send(const std::string &userMessage,
                        const GenerationConfig &config,
                        const std::function<void(const std::string &)> &onText);
  /// A turn with images (a composite model's program): each goes at the
  /// message's next kImagePlaceholder, or, when it has none, the message
  /// starts with one "<image>\n" per image. The images stay part of the
  /// conversation (a turn that feeds the conversation again feeds them);
  /// a conversation with images does not shift its context.
  Result<ChatTurn> send(const std::string &userMessage,
                        const std::vector<ImagePixels> &images,
                        const GenerationConfig &config,
                        const std::function<void(const std::string &)> &onText);

  /// Back to the start (the system message only), KV cache emptied.
  void reset();

  const std::vector<ChatMessage> &messages() const { return messages_; }
  /// Tokens in the KV cache.
  int64_t contextTokens() const {
    return int64_t(runner_.cachedTokens().size());
  }

private:
  ChatSession(Runner &runner, ChatTemplate tmpl)
      : runner_(runner), tmpl_(tmpl) {}
  Result<std::vector<int32_t>> encode(const std::string &text) const;
  Result<std::string> render(const std::vector<ChatMessage> &messages) const;

  Runner &runner_;
  ChatTemplate tmpl_;
  std::string bosToken_, eosToken_;
  std::vector<int32_t> stopIds_;
  std::vector<std::string> stopStrings_;
  std::vector<ChatMessage> messages_;
  /// The conversation's images, in order (their placeholders in messages_).
  std::vector<ImagePixels> images_;
  std::string systemPrompt_;
  bool reuse_ = true;
  /// The text whose tokens are in the KV cache.
  std::string cachedText_;
  int64_t turns_ = 0;
};

} // namespace etllm::rt::llm

#endif // ETLLM_RUNTIME_LLM_CHAT_H
