//===- tiktoken.cpp - tiktoken rank files (Llama 3) -----------------------===//
//
// Format: one "base64(token bytes) rank" line per mergeable token; the rank
// is the token id. Encoding is tiktoken's: split with the Llama 3
// pre-tokenizer regex, look each piece up whole, else merge its bytes by
// rank (BpeModel in TokenRank mode, shared with Hugging Face and GGUF).
//
// The special tokens are not in the file. As Meta's Llama 3 tokenizer.py
// does, 256 of them follow the mergeable ranks: <|begin_of_text|> (BOS),
// <|end_of_text|> (EOS), ..., <|eom_id|>, <|eot_id|>, ..., then
// <|reserved_special_token_N|>; with the Llama 3 file that is ids
// 128000..128255.
//
//===----------------------------------------------------------------------===//
#include "internal.h"

namespace etllm::rt::tok {
namespace {

/// Meta llama-models' Llama 3 special tokens, in id order after the ranks.
std::vector<std::string> llama3SpecialTokens() {
  std::vector<std::string> names = {
      "<|begin_of_text|>",
      "<|end_of_text|>",
      "<|reserved_special_token_0|>",
      "<|reserved_special_token_1|>",
      "<|finetune_right_pad_id|>",
      "<|step_id|>",
      "<|start_header_id|>",
      "<|end_header_id|>",
      "<|eom_id|>", // end of message
      "<|eot_id|>", // end of turn
      "<|python_tag|>",
      "<|image|>",
  };
  constexpr size_t kNumSpecial = 256;
  for (size_t i = 0; names.size() < kNumSpecial; ++i)
    names.push_back("<|reserved_special_token_" + std::to_string(2 + i) + "|>");
  return names;
}
constexpr int32_t kBosOffset = 0, kEosOffset = 1, kEomOffset = 8,
                  kEotOffset = 9;

class TiktokenTokenizer final : public SpecialTextTokenizer {
public:
  TiktokenTokenizer(BpeModel model, std::shared_ptr<const Regex> regex)
      : model_(std::move(model)), regex_(std::move(regex)),
        base_(model_.pieces.size()), specials_(llama3SpecialTokens()) {
    for (size_t i = 0; i < specials_.size(); ++i)
      matcher_.add(specials_[i], base_ + static_cast<int32_t>(i));
  }

  TokenizerKind kind() const override { return TokenizerKind::Tiktoken; }

  std::string decodeToken(int32_t prev, int32_t token) const override {
    if (token < 0 || token >= base_)
      return ""; // special tokens (and out-of-range ids) print nothing
    return model_.pieces.piece(token);
  }

  int32_t vocabSize() const override {
    return base_ + static_cast<int32_t>(specials_.size());
  }
  int32_t bosId() const override { return base_ + kBosOffset; }
  int32_t eosId() const override { return base_ + kEosOffset; }
  std::vector<int32_t> stopIds() const override {
    return {base_ + kEosOffset, base_ + kEomOffset, base_ + kEotOffset};
  }
  std::string idToPiece(int32_t id) const override {
    if (id >= base_ && id < vocabSize())
      return specials_[id - base_];
    return model_.pieces.piece(id);
  }
  int32_t pieceToId(std::string_view piece) const override {
    int32_t id = matcher_.find(piece);
    return id >= 0 ? id : model_.pieces.find(piece);
  }

private:
  Result<std::vector<int32_t>> encodeImpl(std::string_view text, bool addBos,
                                          bool parseSpecial) const override {
    std::vector<int32_t> ids;
    if (addBos)
      ids.push_back(bosId());
    std::vector<SpecialMatcher::Part> parts;
    if (parseSpecial)
      matcher_.split(text, parts);
    else if (!text.empty())
      parts.push_back({text, -1});
    MatchBudget budget(text.size());
    ETLLM_RETURN_IF_ERROR(
        encodeParts(parts, *regex_, model_, /*byteLevel=*/false, budget, ids));
    return ids;
  }

  BpeModel model_;
  std::shared_ptr<const Regex> regex_;
  int32_t base_;
  std::vector<std::string> specials_;
  SpecialMatcher matcher_;
};

} // namespace

Result<TokenizerPtr> loadTiktoken(const uint8_t *data, size_t size,
                                  const std::string &name) {
  const std::string where = name + ": tiktoken ranks: ";
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::vector<std::string> byRank;
  std::vector<int64_t> lineOfRank;
  size_t pos = 0, lineNo = 0, count = 0;
  std::string token;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos)
      eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++lineNo;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty())
      continue;
    const std::string at = where + "line " + std::to_string(lineNo) + ": ";
    size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0)
      return Error(at + "expected 'base64 rank', got " + quoteForError(line));
    std::string_view b64 = line.substr(0, space);
    std::string_view rankText = line.substr(space + 1);
    if (rankText.empty() || rankText.size() > 9 ||
        rankText.find_first_not_of("0123456789") != std::string_view::npos)
      return Error(at + "rank " + quoteForError(rankText) +
                   " is not a non-negative integer below 10^9");
    int64_t rank = std::stoll(std::string(rankText));
    if (rank >= kMaxVocab)
      return Error(at + "rank " + std::to_string(rank) + " exceeds the limit " +
                   std::to_string(kMaxVocab - 1));
    if (!base64Decode(b64, token))
      return Error(at + "invalid base64 " + quoteForError(b64));
    if (token.empty())
      return Error(at + "empty token");
    if (token.size() > static_cast<size_t>(kMaxTokenBytes))
      return Error(at + "token of " + std::to_string(token.size()) +
                   " bytes exceeds the limit");
    if (static_cast<size_t>(rank) >= byRank.size()) {
      // Ranks are ids: keep the table proportional to the file.
      if (rank > static_cast<int64_t>(2 * (count + 1) + 1024))
        return Error(at + "rank " + std::to_string(rank) +
                     " is far beyond the number of tokens (ranks must be "
                     "dense ids)");
      byRank.resize(static_cast<size_t>(rank) + 1);
      lineOfRank.resize(static_cast<size_t>(rank) + 1, 0);
    }
    if (lineOfRank[rank] != 0)
      return Error(at + "duplicate rank " + std::to_string(rank) +
                   " (first on line " + std::to_string(lineOfRank[rank]) + ")");
    lineOfRank[rank] = static_cast<int64_t>(lineNo);
    byRank[rank] = token;
    ++count;
  }
  if (count == 0)
    return Error(where + "no ranks in the file");

  BpeModel model;
  model.mode = BpeModel::Mode::TokenRank;
  model.ignoreMerges = true; // tiktoken looks a piece up whole first
  int32_t dup = model.pieces.assign(std::move(byRank));
  if (dup >= 0)
    return Error(where + "rank " + std::to_string(dup) + " (line " +
                 std::to_string(lineOfRank[dup]) + ") repeats the token " +
                 quoteForError(model.pieces.piece(dup)) + " of rank " +
                 std::to_string(model.pieces.find(model.pieces.piece(dup))));
  for (int b = 0; b < 256; ++b) {
    char c = static_cast<char>(b);
    if (model.pieces.find(std::string_view(&c, 1)) < 0)
      return Error(where + "no rank for the single byte " + std::to_string(b) +
                   " (byte-level BPE needs all 256)");
  }
  auto regex = Regex::compile(kLlama3Pattern, name + ": Llama 3 pre-tokenizer");
  if (!regex.ok())
    return Error(name + ": Llama 3 pre-tokenizer: " + regex.message());
  return TokenizerPtr(
      std::make_unique<TiktokenTokenizer>(std::move(model), std::move(*regex)));
}

} // namespace etllm::rt::tok
