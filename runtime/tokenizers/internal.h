//===- internal.h - Shared pieces of the tokenizer library ------*- C++ -*-===//
//
// Not installed: used only by runtime/tokenizers/*.cpp. Holds the helpers
// every tokenizer kind shares (UTF-8, the GPT-2 byte<->unicode map, base64,
// PCRE2 pre-tokenizer regexes, special-token matching, the vocabulary table
// and the id-level BPE model) and the per-kind factory functions.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_TOKENIZERS_INTERNAL_H
#define ETLLM_RUNTIME_TOKENIZERS_INTERNAL_H

#include "etllm/runtime/tokenizer.h"

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace etllm::rt::tok {

//===----------------------------------------------------------------------===//
// Limits applied to every file, so hostile sizes fail cleanly.
//===----------------------------------------------------------------------===//

/// Largest vocabulary (number of ids) any loader accepts.
constexpr int64_t kMaxVocab = 1 << 24;
/// Largest single token text, in bytes.
constexpr int64_t kMaxTokenBytes = 1 << 16;
/// Deepest nesting of objects and arrays in a tokenizer.json.
constexpr int kMaxJsonDepth = 64;

//===----------------------------------------------------------------------===//
// UTF-8 and byte helpers.
//===----------------------------------------------------------------------===//

/// Length of the UTF-8 sequence that starts with `lead`, from the lead byte
/// alone (1 for continuation/invalid bytes), as llama.cpp's unicode_len_utf8.
size_t utf8SeqLen(uint8_t lead);

/// Splits `text` into UTF-8 characters by lead-byte length, as llama.cpp
/// does for valid text. A lead byte not followed by its continuation bytes,
/// and any other invalid byte, becomes a one-byte "character", so the pieces
/// always concatenate back to `text` and invalid input cannot swallow the
/// next valid character.
void splitUtf8(std::string_view text, std::vector<std::string_view> &out);

/// True when `text` is well-formed UTF-8.
bool isValidUtf8(std::string_view text);

/// Parses "<0xNN>" (exactly, hex case-insensitive) into its byte.
bool parseByteToken(std::string_view piece, uint8_t &byte);

/// "<0xNN>" with upper-case hex, as SentencePiece names byte pieces.
std::string byteTokenText(uint8_t byte);

/// Replaces every occurrence of `from` (non-empty) in `s` with `to`.
std::string replaceAll(std::string_view s, std::string_view from,
                       std::string_view to);

/// The SentencePiece whitespace marker "▁" (U+2581).
inline constexpr std::string_view kSpmSpace = "\xe2\x96\x81";

/// GPT-2's bytes_to_unicode: the printable stand-in character (UTF-8) of
/// every byte.
const std::array<std::string, 256> &byteToUnicode();

/// Maps raw bytes to GPT-2 byte-level text.
std::string bytesToByteLevel(std::string_view bytes);

/// Maps GPT-2 byte-level text back to raw bytes. Characters outside the
/// byte-level alphabet are copied unchanged (their UTF-8); returns false if
/// any such character was seen.
bool byteLevelToBytes(std::string_view text, std::string &out);

/// Strict RFC 4648 base64 (with '=' padding) decode.
bool base64Decode(std::string_view in, std::string &out);

/// "'text'" with control and non-ASCII bytes escaped, cut at `max` bytes, for
/// error messages about untrusted data.
std::string quoteForError(std::string_view text, size_t max = 40);

//===----------------------------------------------------------------------===//
// Vocabulary table.
//===----------------------------------------------------------------------===//

/// Token texts indexed by id, with O(1) lookup by text. Ids whose text is
/// empty are holes (not findable). Movable, not copyable: the index holds
/// views into the stored strings.
class PieceTable {
public:
  PieceTable() = default;
  PieceTable(PieceTable &&) = default;
  PieceTable &operator=(PieceTable &&) = default;
  PieceTable(const PieceTable &) = delete;
  PieceTable &operator=(const PieceTable &) = delete;

  /// How a text that appears under two ids is looked up.
  enum class Duplicates { FirstWins, LastWins };
  /// Takes `pieces` (id = position) and builds the index. Returns the id of
  /// the first duplicate text seen, or -1.
  int32_t assign(std::vector<std::string> pieces,
                 Duplicates policy = Duplicates::FirstWins);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  /// -1 when `text` is no token.
  int32_t find(std::string_view text) const {
    auto it = index_.find(text);
    return it == index_.end() ? -1 : it->second;
  }
  /// The text of `id` ("" when out of range).
  const std::string &piece(int32_t id) const;

private:
  std::vector<std::string> pieces_;
  std::unordered_map<std::string_view, int32_t> index_;
};

//===----------------------------------------------------------------------===//
// Regex pre-tokenization (PCRE2, UTF + UCP, invalid UTF-8 tolerated).
//===----------------------------------------------------------------------===//

/// GPT-2's pre-tokenizer pattern (also HF ByteLevel's use_regex pattern).
extern const char *const kGpt2Pattern;
/// Llama 3's (tiktoken cl100k-style) pre-tokenizer pattern.
extern const char *const kLlama3Pattern;
extern const char *const kQwen2Pattern;
/// SmolLM's (digits alone, then GPT-2's pattern between them).
extern const char *const kSmolLmPattern;

/// The regex work one encode call may do. Tokenizer files bring their own
/// patterns (tokenizer.json Split), and a backtracking pattern can cost
/// exponential time in the length of a word, so matching is bounded:
///  - every pcre2_match call may take kRegexFreeSteps steps (PCRE2's match
///    limit counts them) without charge, so ordinary text costs nothing;
///  - a call that needs more is retried with the limit doubled, each try
///    charged to the budget, which holds kRegexBudgetBase plus
///    kRegexBudgetPerByte per byte of the text being encoded;
///  - the interpreter's backtracking depth and heap are capped too
///    (kRegexDepthLimit, kRegexHeapLimitKiB).
/// So encoding does at most about kRegexFreeSteps + 4 kRegexBudgetPerByte
/// steps per byte plus a constant (a few microseconds per byte), and a pattern
/// that needs more fails the encode call with an error naming the tokenizer
/// file and the pattern.
inline constexpr uint32_t kRegexFreeSteps = 1000;
inline constexpr uint64_t kRegexBudgetBase = 1000000;
inline constexpr uint64_t kRegexBudgetPerByte = 256;
inline constexpr uint32_t kRegexDepthLimit = 100000;
inline constexpr uint32_t kRegexHeapLimitKiB = 64 * 1024;

/// What is left of one encode call's regex budget (see kRegexFreeSteps), and
/// the PCRE2 match data and context its matches share.
class MatchBudget {
public:
  explicit MatchBudget(size_t textBytes)
      : remaining(kRegexBudgetBase + kRegexBudgetPerByte * textBytes),
        total(remaining) {}
  ~MatchBudget();
  MatchBudget(const MatchBudget &) = delete;
  MatchBudget &operator=(const MatchBudget &) = delete;

  uint64_t remaining;
  const uint64_t total;

private:
  friend class Regex;
  void *matchData_ = nullptr;    // pcre2_match_data_8
  void *matchContext_ = nullptr; // pcre2_match_context_8
};

/// A compiled PCRE2 pattern. Immutable and shareable between threads.
class Regex {
public:
  ~Regex();
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;

  /// Compiles `pattern` (UTF, UCP, MATCH_INVALID_UTF; JIT when available).
  /// `literal` compiles it as a literal string. `what` names the pattern in
  /// matching errors (file and place, e.g. "x.json: tokenizer.json:
  /// pre_tokenizer"); compile errors are returned without it, for the caller
  /// to prefix.
  static Result<std::shared_ptr<const Regex>>
  compile(std::string_view pattern, std::string what, bool literal = false);

  /// One piece of a split: a match of the pattern or the text between two.
  struct Span {
    size_t begin, end;
    bool isMatch;
  };
  /// All non-empty matches of the pattern and the non-empty gaps between
  /// them, in order (they tile `text`). Fails, naming the pattern, when
  /// matching exceeds `budget` or PCRE2's depth or heap limit.
  Status spans(std::string_view text, std::vector<Span> &out,
               MatchBudget &budget) const;

  /// Appends the pieces of `text` split as HF "Isolated" (= tiktoken's
  /// findall, plus gaps, which only invalid UTF-8 can leave).
  Status splitIsolated(std::string_view text,
                       std::vector<std::string_view> &out,
                       MatchBudget &budget) const;

private:
  Regex() = default;
  void *code_ = nullptr; // pcre2_code_8
  std::string pattern_, what_;
};

//===----------------------------------------------------------------------===//
// Special-token matching.
//===----------------------------------------------------------------------===//

/// Finds special-token texts inside input text (leftmost, then longest).
class SpecialMatcher {
public:
  /// Registers `text` (non-empty) as token `id`; later ids win on equal text.
  void add(std::string text, int32_t id);
  bool empty() const { return index_.empty(); }
  /// The id registered for exactly `text`, -1 when none.
  int32_t find(std::string_view text) const {
    auto it = index_.find(text);
    return it == index_.end() ? -1 : it->second;
  }

  /// A piece of split input: plain text (id < 0) or a special token.
  struct Part {
    std::string_view text;
    int32_t id;
  };
  /// Splits `text` into plain runs and special tokens, in order.
  void split(std::string_view text, std::vector<Part> &out) const;

private:
  std::deque<std::string> storage_; // element addresses never change
  std::unordered_map<std::string_view, int32_t> index_;
  std::vector<size_t> lengths_; // distinct lengths, longest first
  std::array<bool, 256> firstByte_{};
};

//===----------------------------------------------------------------------===//
// The id-level BPE model shared by tiktoken, Hugging Face and GGUF gpt2.
//===----------------------------------------------------------------------===//

/// A BPE vocabulary and its merge ranking. Words arrive in "model space":
/// raw bytes for tiktoken, GPT-2 byte-level text for byte-level models,
/// "▁"-escaped text for metaspace models.
struct BpeModel {
  /// How adjacent symbols are ranked for merging.
  enum class Mode {
    /// Explicit merges: a pair (left id, right id) has a rank and a result.
    /// Initial symbols are the UTF-8 characters of the word.
    MergeTable,
    /// tiktoken: two adjacent byte runs merge when their concatenation is a
    /// token, ranked by that token's rank (= id). Initial symbols are bytes.
    TokenRank,
  };

  PieceTable pieces;
  Mode mode = Mode::MergeTable;
  /// (left << 32 | right) -> {rank, result id}; MergeTable mode.
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;
  /// Look the whole word up before merging (tiktoken, HF ignore_merges).
  bool ignoreMerges = false;
  /// Characters missing from the vocabulary become their <0xNN> tokens.
  bool byteFallback = false;
  /// Id for characters that cannot be represented (-1: drop them).
  int32_t unk = -1;
  /// Collapse runs of unk into one (HF fuse_unk).
  bool fuseUnk = false;
  /// <0xNN> token ids (byteFallback), -1 when absent.
  std::array<int32_t, 256> byteTokens;

  BpeModel() { byteTokens.fill(-1); }

  /// Adds merge rule number `rank`, `left right` -> `left+right`, given as
  /// token texts. A pair already present keeps its first (better) rank.
  /// Returns "" or, when a text is no token, what is wrong (for an Error).
  std::string addMerge(std::string_view left, std::string_view right,
                       int32_t rank);

  /// Fills byteTokens from the "<0xNN>" pieces.
  void findByteTokens();

  /// Appends the ids of one pre-tokenized word.
  void encodeWord(std::string_view word, std::vector<int32_t> &out) const;
};

/// Appends the ids of `parts`: a special token's id, or the BPE words of a
/// plain run, split as regex's Isolated pieces (within `budget`) and, when
/// `byteLevel`, mapped to GPT-2 byte-level text first.
Status encodeParts(const std::vector<SpecialMatcher::Part> &parts,
                   const Regex &regex, const BpeModel &model, bool byteLevel,
                   MatchBudget &budget, std::vector<int32_t> &ids);

/// Parses one "a b" merge line of merges.txt / GGUF / old tokenizer.json:
/// split at the first space after the first byte (so "Ġ Ġ" and "  x" work).
bool splitMergeLine(std::string_view line, std::string_view &left,
                    std::string_view &right);

//===----------------------------------------------------------------------===//
// Per-kind factories (each in its own .cpp).
//===----------------------------------------------------------------------===//

using TokenizerPtr = std::unique_ptr<Tokenizer>;

/// A tokenizer whose encodeOrdinary is its encode without matching the text
/// of special tokens: both are encodeImpl.
class SpecialTextTokenizer : public Tokenizer {
public:
  Result<std::vector<int32_t>> encode(std::string_view text,
                                      bool addBos) const final {
    return encodeImpl(text, addBos, /*parseSpecial=*/true);
  }
  Result<std::vector<int32_t>> encodeOrdinary(std::string_view text,
                                              bool addBos) const final {
    return encodeImpl(text, addBos, /*parseSpecial=*/false);
  }

protected:
  /// encode (parseSpecial) or encodeOrdinary (not).
  virtual Result<std::vector<int32_t>>
  encodeImpl(std::string_view text, bool addBos, bool parseSpecial) const = 0;
};

Result<TokenizerPtr> loadLlama2c(const uint8_t *data, size_t size,
                                 const std::string &name);
Result<TokenizerPtr> loadSentencePiece(const uint8_t *data, size_t size,
                                       const std::string &name);
Result<TokenizerPtr> loadTiktoken(const uint8_t *data, size_t size,
                                  const std::string &name);
Result<TokenizerPtr> loadHuggingFace(const uint8_t *data, size_t size,
                                     const std::string &name);
Result<TokenizerPtr> makeGgufSpm(const EmbeddedVocab &vocab,
                                 const std::string &name);
Result<TokenizerPtr> makeGgufBpe(const EmbeddedVocab &vocab,
                                 const std::string &name);

/// Cheap content sniffing for kind detection.
bool looksLikeJson(const uint8_t *data, size_t size);
bool looksLikeTiktoken(const uint8_t *data, size_t size);

} // namespace etllm::rt::tok

#endif // ETLLM_RUNTIME_TOKENIZERS_INTERNAL_H
