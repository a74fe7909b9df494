//===- chat.cpp - A conversation with a chat model ------------------------===//
#include "etllm/runtime/llm/chat.h"

#include <algorithm>

namespace etllm::rt::llm {

std::string ChatTurn::toJson() const {
  std::string j = stats.toJson();
  j.pop_back(); // '}'
  j += ",\"turn\":" + std::to_string(turn) +
       ",\"reprefilled\":" + (reprefilled ? "true" : "false") + "}";
  return j;
}

Result<std::unique_ptr<ChatSession>>
ChatSession::create(Runner &runner, const ChatOptions &options) {
  const ChatTemplateMetadata &md = runner.program().metadata().chat;
  std::string source =
      options.templateSource.empty() ? md.source : options.templateSource;
  if (source.empty())
    return Error(runner.program().name() +
                 ": the program carries no chat template (export it from a "
                 "model that has one, or with etllm-export --chat-template "
                 "FILE; or give etllm-run --chat-template FILE)");
  auto tmpl = ChatTemplate::parse(source, options.templateSource.empty()
                                              ? "the program's chat template"
                                              : "the chat template");
  if (!tmpl.ok())
    return tmpl.error();
  std::unique_ptr<ChatSession> s(new ChatSession(runner, *tmpl));
  const Tokenizer &tok = runner.tokenizer();
  s->bosToken_ = md.bosToken;
  s->eosToken_ = md.eosToken;
  // End of a reply: the template's end-of-turn markers, as token ids when
  // the vocabulary has them, else as text.
  std::vector<std::string> stops = md.stopStrings;
  for (const std::string &m : endOfTurnMarkers(source))
    if (std::find(stops.begin(), stops.end(), m) == stops.end())
      stops.push_back(m);
  for (const std::string &m : stops) {
    int32_t id = tok.pieceToId(m);
    if (id >= 0)
      s->stopIds_.push_back(id);
    else if (m != s->eosToken_) // EOS ends generation as an id already
      s->stopStrings_.push_back(m);
  }
  s->systemPrompt_ = options.systemPrompt;
  s->reuse_ = options.reuseKvCache;
  s->reset();
  // A template that cannot take the system message says so now.
  std::vector<ChatMessage> probe = s->messages_;
  probe.push_back({"user", "Hello"});
  auto r = s->render(probe);
  if (!r.ok())
    return r.error();
  return s;
}

void ChatSession::reset() {
  messages_.clear();
  images_.clear();
  if (!systemPrompt_.empty())
    messages_.push_back({"system", systemPrompt_});
  cachedText_.clear();
  runner_.resetCache();
  turns_ = 0;
}

Result<std::string>
ChatSession::render(const std::vector<ChatMessage> &messages) const {
  ChatContext ctx;
  ctx.messages = messages;
  ctx.addGenerationPrompt = true;
  ctx.bosToken = bosToken_;
  ctx.eosToken = eosToken_;
  return tmpl_.render(ctx);
}

Result<std::vector<int32_t>>
ChatSession::encode(const std::string &text) const {
  const Tokenizer &tok = runner_.tokenizer();
  TokenizerKind kind = tok.kind();
  if (kind != TokenizerKind::Llama2c && kind != TokenizerKind::SentencePiece)
    return tok.encode(text, /*addBos=*/false); // matches special-token text
  // These kinds never match special text: BOS and EOS as the template
  // writes them become their ids here.
  std::vector<std::pair<std::string, int32_t>> specials;
  if (!bosToken_.empty() && tok.bosId() >= 0)
    specials.push_back({bosToken_, tok.bosId()});
  if (!eosToken_.empty() && tok.eosId() >= 0)
    specials.push_back({eosToken_, tok.eosId()});
  std::vector<int32_t> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best = std::string::npos;
    const std::pair<std::string, int32_t> *which = nullptr;
    for (const auto &sp : specials) {
      size_t at = text.find(sp.first, pos);
      if (at < best) {
        best = at;
        which = &sp;
      }
    }
    size_t end = best == std::string::npos ? text.size() : best;
    if (end > pos) {
      auto ids = tok.encode(std::string_view(text).substr(pos, end - pos),
                            /*addBos=*/false);
      if (!ids.ok())
        return ids.error();
      out.insert(out.end(), ids->begin(), ids->end());
    }
    if (!which)
      break;
    out.push_back(which->second);
    pos = best + which->first.size();
  }
  return out;
}

Result<ChatTurn>
ChatSession::send(const std::string &userMessage,
                  const GenerationConfig &config,
                  const std::function<void(const std::string &)> &onText) {
  return send(userMessage, {}, config, onText);
}

namespace {
size_t countPlaceholders(const std::string &text) {
  size_t n = 0;
  for (size_t at = text.find(kImagePlaceholder); at != std::string::npos;
       at = text.find(kImagePlaceholder, at + 1))
    ++n;
  return n;
}
} // namespace

Result<ChatTurn>
ChatSession::send(const std::string &userMessage,
                  const std::vector<ImagePixels> &newImages,
                  const GenerationConfig &config,
                  const std::function<void(const std::string &)> &onText) {
  std::string message = userMessage;
  if (!newImages.empty() && countPlaceholders(message) == 0) {
    std::string marks;
    for (size_t i = 0; i < newImages.size(); ++i)
      marks += std::string(kImagePlaceholder) + "\n";
    message = marks + message;
  }
  if (!newImages.empty() && countPlaceholders(message) != newImages.size())
    return Error("the message has " +
                 std::to_string(countPlaceholders(message)) + " " +
                 kImagePlaceholder + " placeholders for " +
                 std::to_string(newImages.size()) + " images");
  std::vector<ChatMessage> next = messages_;
  next.push_back({"user", message});
  auto rendered = render(next);
  if (!rendered.ok())
    return rendered.error();
  std::vector<ImagePixels> images = images_;
  images.insert(images.end(), newImages.begin(), newImages.end());
  ChatTurn turn;
  std::vector<int32_t> tokens;
  if (!reuse_) {
    runner_.resetCache();
    cachedText_.clear();
  }
  const std::vector<int32_t> &cached = runner_.cachedTokens();
  size_t cachedBefore = cached.size();
  // Text, or (a conversation with images) its pieces around the images'
  // placeholders, as this session tokenizes text.
  std::vector<Runner::ImageAt> imageAt;
  auto tokenize = [&](const std::string &text, size_t firstImage,
                      size_t offset) -> Result<std::vector<int32_t>> {
    if (images.empty())
      return encode(text);
    const size_t count = countPlaceholders(text);
    if (firstImage + count != images.size())
      return Error("the conversation has " +
                   std::to_string(firstImage + count) + " " +
                   kImagePlaceholder + " placeholders for " +
                   std::to_string(images.size()) + " images");
    std::vector<Runner::ImageGrid> grids;
    for (size_t i = 0; i < count; ++i)
      grids.push_back({images[firstImage + i].rows,
                       images[firstImage + i].cols});
    auto p = runner_.tokenizeWithImages(
        text, grids, /*addBos=*/false,
        [&](const std::string &piece) { return encode(piece); });
    if (!p.ok())
      return p.error();
    for (const Runner::ImagePrompt::Chunk &c : p->chunks)
      imageAt.push_back(
          {offset + c.at, &images[firstImage + c.image], c.tile});
    return std::move(p->tokens);
  };
  if (!cached.empty() &&
      rendered->compare(0, cachedText_.size(), cachedText_) == 0) {
    const std::string suffix = rendered->substr(cachedText_.size());
    auto more = tokenize(suffix, images.size() - countPlaceholders(suffix),
                         cached.size());
    if (!more.ok())
      return more.error();
    tokens = cached;
    tokens.insert(tokens.end(), more->begin(), more->end());
  } else {
    auto all = tokenize(*rendered, 0, 0);
    if (!all.ok())
      return all.error();
    tokens = std::move(*all);
    turn.reprefilled = !cached.empty();
  }
  int64_t maxSeq = runner_.maxSeqLen();
  // The conversation outgrew the context: shift it as the runner shifts a
  // full context (contextShiftDrop; room for one generated token, and the
  // new message's last token kept); the runner prefills what follows the
  // kept start again.
  bool shifted = false;
  if (int64_t(tokens.size()) >= maxSeq && config.shiftContext &&
      images.empty()) {
    const size_t sink = std::min(
        size_t(std::max<int32_t>(config.sinkTokens, 0)), tokens.size());
    if (size_t drop = contextShiftDrop(
            tokens.size(), sink, int64_t(tokens.size()) - maxSeq + 1, 1)) {
      tokens.erase(tokens.begin() + sink, tokens.begin() + sink + drop);
      shifted = true;
    }
  }
  if (int64_t(tokens.size()) >= maxSeq)
    return Error("the context is full: the conversation needs " +
                 std::to_string(tokens.size()) +
                 " tokens with this message and the model's context "
                 "(max_seq_len) is " +
                 std::to_string(maxSeq) + "; start a new conversation");
  GenerationConfig cfg = config;
  cfg.stopIds.insert(cfg.stopIds.end(), stopIds_.begin(), stopIds_.end());
  cfg.stopStrings.insert(cfg.stopStrings.end(), stopStrings_.begin(),
                         stopStrings_.end());
  std::string reply;
  // (With images the runner does not shift a full context either.)
  if (!images.empty())
    cfg.shiftContext = false;
  auto stats = runner_.continueWith(tokens, imageAt, cfg,
                                    [&](const std::string &s) {
                                      reply += s;
                                      onText(s);
                                    });
  if (!stats.ok()) {
    // The KV cache no longer matches any text we know.
    cachedText_.clear();
    runner_.resetCache();
    return stats.error();
  }
  if (turn.reprefilled && stats->cachedTokens == int64_t(cachedBefore))
    turn.reprefilled = false; // differed only after the cached part
  // The cache holds `tokens` and the generated tokens fed back after them.
  const Tokenizer &tok = runner_.tokenizer();
  const std::vector<int32_t> &now = runner_.cachedTokens();
  cachedText_ = *rendered;
  if (stats->contextShifts == 0) {
    for (size_t k = tokens.size(); k < now.size(); ++k)
      cachedText_ += tok.decodeToken(now[k - 1], now[k]);
  } else {
    // The context shifted: the cache now holds its first tokens and a tail
    // of the conversation. The generated tokens fed back (all but the last
    // sampled one, unless that was an end of turn) end the cache; the next
    // turn's text starts after them.
    const size_t fed = stats->generatedTokens == 0 ? 0
                       : stats->stopReason == "eos"
                           ? size_t(stats->generatedTokens)
                           : size_t(stats->generatedTokens - 1);
    if (fed < now.size()) {
      for (size_t k = now.size() - fed; k < now.size(); ++k)
        cachedText_ += tok.decodeToken(now[k - 1], now[k]);
    } else {
      // The reply outgrew the kept context: only its end is cached, and
      // its last token (when not fed back) is not.
      cachedText_ += reply;
    }
  }
  messages_ = std::move(next);
  messages_.push_back({"assistant", reply});
  images_ = std::move(images);
  turn.stats = std::move(*stats);
  turn.stats.contextShifts += shifted;
  turn.turn = ++turns_;
  turn.reply = std::move(reply);
  turn.prompt = *rendered;
  return turn;
}

} // namespace etllm::rt::llm
