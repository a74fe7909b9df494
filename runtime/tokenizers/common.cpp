//===- common.cpp - Helpers shared by all tokenizer kinds -----------------===//
//
// UTF-8, GPT-2 byte-level mapping, base64, the vocabulary table, PCRE2
// regex splitting, special-token matching and the id-level BPE model.
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include "bpe_merge.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdio>

namespace etllm::rt::tok {

//===----------------------------------------------------------------------===//
// UTF-8 and bytes.
//===----------------------------------------------------------------------===//

size_t utf8SeqLen(uint8_t lead) {
  // Indexed by the high nibble, as llama.cpp's unicode_len_utf8.
  static const uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                   1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

void splitUtf8(std::string_view text, std::vector<std::string_view> &out) {
  size_t i = 0;
  while (i < text.size()) {
    uint8_t lead = static_cast<uint8_t>(text[i]);
    size_t len = lead >= 0xF8 ? 1 : utf8SeqLen(lead);
    // A lead byte only groups the continuation bytes that really follow it,
    // so one invalid byte never swallows the next character.
    if (len > text.size() - i)
      len = 1;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<uint8_t>(text[i + k]) & 0xC0) != 0x80) {
        len = 1;
        break;
      }
    out.push_back(text.substr(i, len));
    i += len;
  }
}

bool isValidUtf8(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    uint8_t c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < len)
      return false;
    for (size_t k = 1; k < len; ++k) {
      uint8_t cc = static_cast<uint8_t>(text[i + k]);
      if ((cc & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

static int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

bool parseByteToken(std::string_view piece, uint8_t &byte) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>')
    return false;
  int hi = hexValue(piece[3]), lo = hexValue(piece[4]);
  if (hi < 0 || lo < 0)
    return false;
  byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

std::string byteTokenText(uint8_t byte) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", byte);
  return buf;
}

std::string replaceAll(std::string_view s, std::string_view from,
                       std::string_view to) {
  std::string out;
  if (from.empty())
    return std::string(s);
  out.reserve(s.size());
  size_t pos = 0;
  while (true) {
    size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) {
      out.append(s.substr(pos));
      return out;
    }
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
}

static void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {
/// GPT-2's bytes_to_unicode table and its inverse (code points < 0x144).
struct ByteLevelTables {
  std::array<std::string, 256> forward;
  std::array<int16_t, 0x144> inverse;
  ByteLevelTables() {
    inverse.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
             (b >= 0xAE && b <= 0xFF);
    };
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      uint32_t cp = printable(b) ? static_cast<uint32_t>(b)
                                 : static_cast<uint32_t>(256 + extra++);
      appendUtf8(forward[b], cp);
      inverse[cp] = static_cast<int16_t>(b);
    }
  }
};
const ByteLevelTables &byteLevelTables() {
  static const ByteLevelTables tables;
  return tables;
}
} // namespace

const std::array<std::string, 256> &byteToUnicode() {
  return byteLevelTables().forward;
}

std::string bytesToByteLevel(std::string_view bytes) {
  const auto &fwd = byteLevelTables().forward;
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes)
    out += fwd[static_cast<uint8_t>(c)];
  return out;
}

bool byteLevelToBytes(std::string_view text, std::string &out) {
  const auto &inv = byteLevelTables().inverse;
  bool allMapped = true;
  size_t i = 0;
  while (i < text.size()) {
    uint8_t c = static_cast<uint8_t>(text[i]);
    uint32_t cp = 0x110000; // "not mapped"
    size_t len = 1;
    if (c < 0x80) {
      cp = c;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < text.size() &&
               (static_cast<uint8_t>(text[i + 1]) & 0xC0) == 0x80) {
      cp = ((c & 0x1F) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3F);
      len = 2;
    } else {
      len = std::min(utf8SeqLen(c), text.size() - i);
    }
    if (cp < inv.size() && inv[cp] >= 0) {
      out.push_back(static_cast<char>(inv[cp]));
    } else {
      out.append(text.substr(i, len));
      allMapped = false;
    }
    i += len;
  }
  return allMapped;
}

bool base64Decode(std::string_view in, std::string &out) {
  if (in.size() % 4 != 0)
    return false;
  out.clear();
  out.reserve(in.size() / 4 * 3);
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    if (c == '+')
      return 62;
    if (c == '/')
      return 63;
    return -1;
  };
  for (size_t i = 0; i < in.size(); i += 4) {
    bool last = i + 4 == in.size();
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=') {
        // Padding only at the very end, and only in the last two places.
        if (!last || k < 2)
          return false;
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0)
        return false; // data after '='
      v[k] = value(c);
      if (v[k] < 0)
        return false;
    }
    uint32_t triple = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) |
                      (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out.push_back(static_cast<char>((triple >> 16) & 0xFF));
    if (pad < 2)
      out.push_back(static_cast<char>((triple >> 8) & 0xFF));
    if (pad < 1)
      out.push_back(static_cast<char>(triple & 0xFF));
  }
  return true;
}

std::string quoteForError(std::string_view text, size_t max) {
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    }
  }
  if (text.size() > max)
    out += "...";
  out += "'";
  return out;
}

//===----------------------------------------------------------------------===//
// PieceTable.
//===----------------------------------------------------------------------===//

int32_t PieceTable::assign(std::vector<std::string> pieces, Duplicates policy) {
  pieces_ = std::move(pieces);
  index_.clear();
  index_.reserve(pieces_.size());
  int32_t firstDuplicate = -1;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const std::string &p = pieces_[i];
    if (p.empty())
      continue;
    auto [it, inserted] = index_.emplace(p, static_cast<int32_t>(i));
    if (!inserted) {
      if (firstDuplicate < 0)
        firstDuplicate = static_cast<int32_t>(i);
      if (policy == Duplicates::LastWins)
        it->second = static_cast<int32_t>(i);
    }
  }
  return firstDuplicate;
}

const std::string &PieceTable::piece(int32_t id) const {
  static const std::string kEmpty;
  if (id < 0 || id >= size())
    return kEmpty;
  return pieces_[id];
}

//===----------------------------------------------------------------------===//
// Regex.
//===----------------------------------------------------------------------===//

const char *const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

const char *const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2's tokenizer.json Split regex (llama.cpp's pre-tokenizer "qwen2"):
// Llama 3's, with every digit its own piece.
const char *const kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// SmolLM's (llama.cpp's pre-tokenizer "smollm"; HF: Digits with
// individual_digits, then ByteLevel's GPT-2 regex): every digit its own
// piece, then GPT-2's pattern within the pieces between digits. As one
// pattern: GPT-2's without ` ?\p{N}+` (a digit is always alone), and its
// `\s+(?!\S)` ending at a digit as at the end of a piece.
const char *const kSmolLmPattern =
    R"(\p{N}|'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+)";

Regex::~Regex() {
  if (code_)
    pcre2_code_free(static_cast<pcre2_code *>(code_));
}

Result<std::shared_ptr<const Regex>>
Regex::compile(std::string_view pattern, std::string what, bool literal) {
  // PCRE2_LITERAL admits no PCRE2_UCP (it changes nothing in a literal,
  // and pcre2_compile refuses the pair as "invalid option bits").
  uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
                     (literal ? PCRE2_LITERAL : PCRE2_UCP);
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  pcre2_code *code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                    pattern.size(), options, &errorCode, &errorOffset, nullptr);
  if (!code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(errorCode, buf, sizeof(buf));
    return Error("cannot compile regex " + quoteForError(pattern, 80) +
                 " at offset " + std::to_string(errorOffset) + ": " +
                 reinterpret_cast<const char *>(buf));
  }
  // JIT is an optimisation only: without it pcre2_match interprets. Both
  // honour the match limit.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::shared_ptr<Regex> re(new Regex());
  re->code_ = code;
  re->pattern_ = std::string(pattern);
  re->what_ = std::move(what);
  return std::shared_ptr<const Regex>(std::move(re));
}

namespace {
/// One pcre2_match at `pos` within the budget (see kRegexFreeSteps): the
/// first try is free up to kRegexFreeSteps steps, retries double the limit
/// and are charged.
int boundedMatch(const pcre2_code *code, std::string_view text, size_t pos,
                 pcre2_match_data *md, pcre2_match_context *mc,
                 MatchBudget &budget) {
  const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  uint64_t limit = kRegexFreeSteps;
  for (;;) {
    pcre2_set_match_limit(mc, static_cast<uint32_t>(limit));
    int rc =
        pcre2_match(code, subject, text.size(), pos, PCRE2_NOTEMPTY, md, mc);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) // the interpreter uses the heap
      rc = pcre2_match(code, subject, text.size(), pos,
                       PCRE2_NOTEMPTY | PCRE2_NO_JIT, md, mc);
    if (limit > kRegexFreeSteps)
      budget.remaining -= std::min(budget.remaining, limit);
    if (rc != PCRE2_ERROR_MATCHLIMIT)
      return rc;
    if (2 * limit > budget.remaining || 2 * limit > UINT32_MAX)
      return rc;
    limit *= 2;
  }
}
} // namespace

MatchBudget::~MatchBudget() {
  pcre2_match_data_free(static_cast<pcre2_match_data *>(matchData_));
  pcre2_match_context_free(static_cast<pcre2_match_context *>(matchContext_));
}

Status Regex::spans(std::string_view text, std::vector<Span> &out,
                    MatchBudget &budget) const {
  auto *code = static_cast<pcre2_code *>(code_);
  if (!budget.matchContext_) {
    // One pair of offsets is all splitting reads, whatever the pattern.
    budget.matchData_ = pcre2_match_data_create(1, nullptr);
    auto *mc = pcre2_match_context_create(nullptr);
    budget.matchContext_ = mc;
    if (!budget.matchData_ || !mc)
      return Error(what_ + ": out of memory for regex matching");
    pcre2_set_depth_limit(mc, kRegexDepthLimit);
    pcre2_set_heap_limit(mc, kRegexHeapLimitKiB);
  }
  auto *md = static_cast<pcre2_match_data *>(budget.matchData_);
  auto *mc = static_cast<pcre2_match_context *>(budget.matchContext_);
  size_t pos = 0;
  while (pos < text.size()) {
    int rc = boundedMatch(code, text, pos, md, mc, budget);
    if (rc == PCRE2_ERROR_NOMATCH)
      break; // the rest is one gap
    if (rc < 0) {
      std::string why;
      if (rc == PCRE2_ERROR_MATCHLIMIT)
        why = "needs more than the " + std::to_string(budget.total) +
              " matching steps allowed for " + std::to_string(text.size()) +
              " bytes of text (PCRE2 match limit)";
      else if (rc == PCRE2_ERROR_DEPTHLIMIT)
        why = "backtracks deeper than " + std::to_string(kRegexDepthLimit) +
              " levels (PCRE2 depth limit)";
      else if (rc == PCRE2_ERROR_HEAPLIMIT)
        why = "needs more than " + std::to_string(kRegexHeapLimitKiB / 1024) +
              " MiB to match (PCRE2 heap limit)";
      else {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(rc, buf, sizeof(buf));
        why = std::string("failed: ") + reinterpret_cast<const char *>(buf);
      }
      return Error(what_ + ": regex " + quoteForError(pattern_, 80) + " " +
                   why + ", at byte " + std::to_string(pos) +
                   " of the text; the pattern backtracks too much to be a "
                   "tokenizer's");
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t begin = ov[0], end = ov[1];
    if (begin < pos || end <= begin || end > text.size())
      break; // cannot happen with these options; never loop forever
    if (begin > pos)
      out.push_back({pos, begin, false});
    out.push_back({begin, end, true});
    pos = end;
  }
  if (pos < text.size())
    out.push_back({pos, text.size(), false});
  return Status();
}

Status Regex::splitIsolated(std::string_view text,
                            std::vector<std::string_view> &out,
                            MatchBudget &budget) const {
  std::vector<Span> sp;
  ETLLM_RETURN_IF_ERROR(spans(text, sp, budget));
  for (const Span &s : sp)
    out.push_back(text.substr(s.begin, s.end - s.begin));
  return Status();
}

//===----------------------------------------------------------------------===//
// SpecialMatcher.
//===----------------------------------------------------------------------===//

void SpecialMatcher::add(std::string text, int32_t id) {
  if (text.empty())
    return;
  auto it = index_.find(text);
  if (it != index_.end()) {
    it->second = id;
    return;
  }
  storage_.push_back(std::move(text));
  const std::string &stored = storage_.back();
  index_.emplace(stored, id);
  firstByte_[static_cast<uint8_t>(stored[0])] = true;
  if (std::find(lengths_.begin(), lengths_.end(), stored.size()) ==
      lengths_.end()) {
    lengths_.push_back(stored.size());
    std::sort(lengths_.rbegin(), lengths_.rend());
  }
}

void SpecialMatcher::split(std::string_view text,
                           std::vector<Part> &out) const {
  size_t plainStart = 0, i = 0;
  while (i < text.size()) {
    if (firstByte_[static_cast<uint8_t>(text[i])]) {
      bool matched = false;
      for (size_t len : lengths_) {
        if (len > text.size() - i)
          continue;
        auto it = index_.find(text.substr(i, len));
        if (it == index_.end())
          continue;
        if (i > plainStart)
          out.push_back({text.substr(plainStart, i - plainStart), -1});
        out.push_back({text.substr(i, len), it->second});
        i += len;
        plainStart = i;
        matched = true;
        break;
      }
      if (matched)
        continue;
    }
    ++i;
  }
  if (plainStart < text.size())
    out.push_back({text.substr(plainStart), -1});
}

//===----------------------------------------------------------------------===//
// BpeModel.
//===----------------------------------------------------------------------===//

static uint64_t pairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
         static_cast<uint32_t>(right);
}

std::string BpeModel::addMerge(std::string_view left, std::string_view right,
                               int32_t rank) {
  int32_t l = pieces.find(left), r = pieces.find(right);
  if (l < 0)
    return "references unknown token " + quoteForError(left);
  if (r < 0)
    return "references unknown token " + quoteForError(right);
  std::string joined = std::string(left) + std::string(right);
  int32_t result = pieces.find(joined);
  if (result < 0)
    return "produces " + quoteForError(joined) +
           ", which is not in the vocabulary";
  merges.emplace(pairKey(l, r), std::make_pair(rank, result));
  return std::string();
}

void BpeModel::findByteTokens() {
  for (int b = 0; b < 256; ++b)
    byteTokens[b] = pieces.find(byteTokenText(static_cast<uint8_t>(b)));
}

bool splitMergeLine(std::string_view line, std::string_view &left,
                    std::string_view &right) {
  if (line.size() < 3)
    return false;
  size_t sp = line.find(' ', 1);
  if (sp == std::string_view::npos || sp + 1 >= line.size())
    return false;
  left = line.substr(0, sp);
  right = line.substr(sp + 1);
  return right.find(' ') == std::string_view::npos;
}

Status encodeParts(const std::vector<SpecialMatcher::Part> &parts,
                   const Regex &regex, const BpeModel &model, bool byteLevel,
                   MatchBudget &budget, std::vector<int32_t> &ids) {
  std::vector<std::string_view> words;
  for (const SpecialMatcher::Part &part : parts) {
    if (part.id >= 0) {
      ids.push_back(part.id);
      continue;
    }
    words.clear();
    ETLLM_RETURN_IF_ERROR(regex.splitIsolated(part.text, words, budget));
    for (std::string_view w : words) {
      if (byteLevel)
        model.encodeWord(bytesToByteLevel(w), ids);
      else
        model.encodeWord(w, ids);
    }
  }
  return Status();
}

void BpeModel::encodeWord(std::string_view word,
                          std::vector<int32_t> &out) const {
  if (word.empty())
    return;
  if (ignoreMerges) {
    int32_t whole = pieces.find(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }

  if (mode == Mode::TokenRank) {
    // Symbols are byte runs of `word`; a pair merges when the run it spans
    // is a token, the token's rank (its id) ordering the merges.
    struct Run {
      uint32_t begin, len;
    };
    std::vector<Run> runs(word.size());
    for (size_t i = 0; i < word.size(); ++i)
      runs[i] = {static_cast<uint32_t>(i), 1};
    mergeBestPairs(runs,
                   [&](const Run &l,
                       const Run &r) -> std::optional<std::pair<int32_t, Run>> {
                     int32_t id =
                         pieces.find(word.substr(l.begin, l.len + r.len));
                     if (id < 0)
                       return std::nullopt;
                     return std::make_pair(id, Run{l.begin, l.len + r.len});
                   });
    for (const Run &r : runs) {
      int32_t id = pieces.find(word.substr(r.begin, r.len));
      if (id < 0)
        id = unk; // only a single byte missing from the vocabulary
      if (id >= 0)
        out.push_back(id);
    }
    return;
  }

  std::vector<std::string_view> chars;
  splitUtf8(word, chars);
  std::vector<int32_t> syms;
  syms.reserve(chars.size());
  auto pushUnk = [&]() {
    if (unk < 0)
      return;
    if (fuseUnk && !syms.empty() && syms.back() == unk)
      return;
    syms.push_back(unk);
  };
  for (std::string_view c : chars) {
    int32_t id = pieces.find(c);
    if (id >= 0) {
      syms.push_back(id);
      continue;
    }
    if (byteFallback) {
      bool all = true;
      for (char b : c)
        all = all && byteTokens[static_cast<uint8_t>(b)] >= 0;
      if (all) {
        for (char b : c)
          syms.push_back(byteTokens[static_cast<uint8_t>(b)]);
        continue;
      }
    }
    pushUnk();
  }
  mergeBestPairs(
      syms,
      [&](int32_t l, int32_t r) -> std::optional<std::pair<int32_t, int32_t>> {
        auto it = merges.find(pairKey(l, r));
        if (it == merges.end())
          return std::nullopt;
        return it->second;
      });
  out.insert(out.end(), syms.begin(), syms.end());
}

} // namespace etllm::rt::tok
