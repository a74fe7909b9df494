//===- llama2c.cpp - karpathy/llama2.c tokenizer.bin ----------------------===//
//
// Format: u32 max_token_length, then vocab_size entries of
// {f32 score, i32 len, len bytes}, to the end of the file (the vocabulary
// size is not stored). Pieces are SentencePiece pieces with "▁" already
// turned into " "; ids 3..258 are the byte tokens <0x00>..<0xFF>.
//
// Encoding follows run.c's encode() exactly, on the SentencePiece-BPE core
// (spmMerge) also used by GGUF "llama" vocabularies. What llama2.c does
// differently from llama.cpp's SPM tokenizer, and so does here:
//  - a dummy-prefix token " " is looked up and prepended when the text is
//    non-empty (no "▁" escaping: the pieces hold plain spaces);
//  - the text is split into run.c's code points (a byte plus up to three
//    following continuation bytes); a code point that is no token becomes
//    its byte tokens (byte + 3) right away, before merging;
//  - merging concatenates the stored piece texts (so a byte token merges as
//    the text "<0xNN>") and accepts any token with score > -1e10;
//  - the text is taken with its exact length (run.c stops at a NUL byte).
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include "bpe_merge.h"

#include <cmath>
#include <cstring>

namespace etllm::rt::tok {
namespace {

class Llama2cTokenizer final : public Tokenizer {
public:
  Llama2cTokenizer(PieceTable pieces, std::vector<float> scores,
                   std::string name)
      : pieces_(std::move(pieces)), scores_(std::move(scores)),
        name_(std::move(name)) {}

  TokenizerKind kind() const override { return TokenizerKind::Llama2c; }

  Result<std::vector<int32_t>> encode(std::string_view text,
                                      bool addBos) const override {
    // Working text = the concatenated piece texts of the initial symbols.
    std::string work;
    std::vector<SpmSymbol> syms;
    work.reserve(text.size() + 8);
    syms.reserve(text.size() + 1);
    auto pushToken = [&](int32_t id) {
      const std::string &p = pieces_.piece(id);
      syms.push_back({static_cast<uint32_t>(work.size()),
                      static_cast<uint32_t>(p.size()), id});
      work += p;
    };

    if (!text.empty()) {
      int32_t dummyPrefix = pieces_.find(" ");
      if (dummyPrefix >= 0)
        pushToken(dummyPrefix);
    }
    size_t i = 0;
    while (i < text.size()) {
      size_t start = i++;
      while (i < text.size() &&
             (static_cast<uint8_t>(text[i]) & 0xC0) == 0x80 && i - start < 4)
        ++i;
      std::string_view cp = text.substr(start, i - start);
      int32_t id = pieces_.find(cp);
      if (id >= 0) {
        pushToken(id);
        continue;
      }
      for (char c : cp) {
        int32_t byteId = static_cast<uint8_t>(c) + 3;
        if (byteId >= vocabSize())
          return Error(name_ + ": llama2.c tokenizer.bin: no byte token for " +
                       "byte " + std::to_string(static_cast<uint8_t>(c)) +
                       ", which the text needs (the byte tokens are ids " +
                       "3..258; the vocabulary has " +
                       std::to_string(vocabSize()) + " entries)");
        pushToken(byteId);
      }
    }

    spmMerge(
        work, syms,
        [&](std::string_view s) -> std::optional<std::pair<float, int32_t>> {
          int32_t id = pieces_.find(s);
          if (id < 0 || !(scores_[id] > -1e10f))
            return std::nullopt;
          return std::make_pair(scores_[id], id);
        });

    std::vector<int32_t> ids;
    ids.reserve(syms.size() + 1);
    if (addBos && bosId() >= 0)
      ids.push_back(bosId());
    for (const SpmSymbol &s : syms)
      ids.push_back(s.id);
    return ids;
  }

  std::string decodeToken(int32_t prev, int32_t token) const override {
    if (token < 0 || token >= vocabSize() || token == bosId() ||
        token == eosId())
      return "";
    std::string_view piece = pieces_.piece(token);
    // run.c: following BOS, the leading space of the piece is dropped.
    if (prev == bosId() && !piece.empty() && piece[0] == ' ')
      piece.remove_prefix(1);
    uint8_t byte;
    if (parseByteToken(piece, byte))
      return std::string(1, static_cast<char>(byte));
    return std::string(piece);
  }

  int32_t vocabSize() const override { return pieces_.size(); }
  int32_t bosId() const override { return vocabSize() > 1 ? 1 : -1; }
  int32_t eosId() const override { return vocabSize() > 2 ? 2 : -1; }
  std::string idToPiece(int32_t id) const override { return pieces_.piece(id); }
  int32_t pieceToId(std::string_view piece) const override {
    return pieces_.find(piece);
  }

private:
  PieceTable pieces_;
  std::vector<float> scores_;
  std::string name_; // the file, for errors
};

uint32_t readU32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

} // namespace

Result<TokenizerPtr> loadLlama2c(const uint8_t *data, size_t size,
                                 const std::string &name) {
  const std::string where = name + ": llama2.c tokenizer.bin: ";
  if (size < 4)
    return Error(where + "file too short (" + std::to_string(size) +
                 " bytes) for the u32 max_token_length header");
  uint32_t maxLen = readU32(data);
  if (maxLen == 0 || maxLen > kMaxTokenBytes)
    return Error(where + "implausible max_token_length " +
                 std::to_string(maxLen) + " (expected 1.." +
                 std::to_string(kMaxTokenBytes) + ")");

  std::vector<std::string> pieces;
  std::vector<float> scores;
  size_t off = 4;
  while (off < size) {
    const std::string entry = "entry " + std::to_string(pieces.size()) +
                              " (offset " + std::to_string(off) + "): ";
    if (pieces.size() >= static_cast<size_t>(kMaxVocab))
      return Error(where + "more than " + std::to_string(kMaxVocab) +
                   " entries");
    if (size - off < 8)
      return Error(where + entry + "truncated: " + std::to_string(size - off) +
                   " bytes left, an entry header needs 8");
    float score;
    std::memcpy(&score, data + off, 4); // IEEE little-endian, as run.c
    int32_t len = static_cast<int32_t>(readU32(data + off + 4));
    if (std::isnan(score))
      return Error(where + entry + "score is NaN");
    if (len < 0)
      return Error(where + entry + "negative length " + std::to_string(len));
    if (static_cast<uint32_t>(len) > maxLen)
      return Error(where + entry + "length " + std::to_string(len) +
                   " exceeds max_token_length " + std::to_string(maxLen));
    if (static_cast<size_t>(len) > size - off - 8)
      return Error(where + entry + "length " + std::to_string(len) +
                   " runs past the end of the file (" +
                   std::to_string(size - off - 8) + " bytes left)");
    pieces.emplace_back(reinterpret_cast<const char *>(data + off + 8),
                        static_cast<size_t>(len));
    scores.push_back(score);
    off += 8 + static_cast<size_t>(len);
  }
  if (pieces.empty())
    return Error(where + "no vocabulary entries after the header");

  PieceTable table;
  // run.c binary-searches a sorted copy; with duplicate texts any one may be
  // found. Take the first.
  (void)table.assign(std::move(pieces), PieceTable::Duplicates::FirstWins);
  return TokenizerPtr(std::make_unique<Llama2cTokenizer>(
      std::move(table), std::move(scores), name));
}

} // namespace etllm::rt::tok
