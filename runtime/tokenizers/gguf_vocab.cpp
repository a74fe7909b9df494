//===- gguf_vocab.cpp - Vocabularies carried as GGUF metadata -------------===//
//
// tokenizer.ggml.model "llama": SentencePiece-style BPE as llama.cpp's
// llm_tokenizer_spm, on the spmMerge core shared with llama2.c. Differences
// from llama2.c, kept deliberately:
//  - spaces are escaped to "▁", and a space is prepended (add_space_prefix)
//    to a text run that starts the input or follows a special token;
//  - initial symbols are UTF-8 characters (by lead byte), kept as text even
//    when no token: only symbols left unmerged at the end fall back to
//    their <0xNN> byte tokens (then unk);
//  - only normal and user-defined tokens are merge results (SentencePiece
//    never produces control/byte/unused pieces from text).
// tokenizer.ggml.model "gpt2": byte-level BPE with explicit merges on the
// BpeModel core shared with tiktoken and Hugging Face; the pre-tokenizer
// regex is chosen by tokenizer.ggml.pre.
//
// Special tokens: `encode` matches the text of control, unknown and
// user-defined tokens (llama.cpp parse_special=true); `encodeOrdinary` only
// user-defined ones (parse_special=false).
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include "bpe_merge.h"

#include <algorithm>
#include <cmath>

namespace etllm::rt::tok {
namespace {

// tokenizer.ggml.token_type values.
enum TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

bool isNormal(int32_t type) { return type == kNormal || type == kUndefined; }

/// Checks what both vocabulary models need; fills `types` (inferred when the
/// metadata has none).
Status validateCommon(const EmbeddedVocab &v, const std::string &where,
                      std::vector<int32_t> &types) {
  const size_t n = v.tokens.size();
  if (n == 0)
    return Error(where + "tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(kMaxVocab))
    return Error(where + "tokenizer.ggml.tokens: more than " +
                 std::to_string(kMaxVocab) + " tokens");
  if (!v.scores.empty() && v.scores.size() != n)
    return Error(where + "tokenizer.ggml.scores has " +
                 std::to_string(v.scores.size()) + " entries for " +
                 std::to_string(n) + " tokens");
  if (!v.types.empty() && v.types.size() != n)
    return Error(where + "tokenizer.ggml.token_type has " +
                 std::to_string(v.types.size()) + " entries for " +
                 std::to_string(n) + " tokens");
  for (size_t i = 0; i < v.scores.size(); ++i)
    if (std::isnan(v.scores[i]))
      return Error(where + "tokenizer.ggml.scores: the score of token " +
                   std::to_string(i) + " is NaN");
  for (size_t i = 0; i < v.types.size(); ++i)
    if (v.types[i] < kUndefined || v.types[i] > kByte)
      return Error(
          where + "tokenizer.ggml.token_type: token " + std::to_string(i) +
          " has invalid type " + std::to_string(v.types[i]) + " (expected " +
          std::to_string(kUndefined) + ".." + std::to_string(kByte) + ")");
  const std::pair<const char *, int32_t> specials[] = {
      {"tokenizer.ggml.bos_token_id", v.bos},
      {"tokenizer.ggml.eos_token_id", v.eos},
      {"tokenizer.ggml.unknown_token_id", v.unk},
      {"tokenizer.ggml.padding_token_id", v.pad},
      {"tokenizer.ggml.eot_token_id", v.eot}};
  for (const auto &[key, id] : specials)
    if (id < -1 || id >= static_cast<int64_t>(n))
      return Error(where + key + ": token id " + std::to_string(id) +
                   " is out of range for " + std::to_string(n) + " tokens");
  for (size_t i = 0; i < n; ++i)
    if (v.tokens[i].size() > static_cast<size_t>(kMaxTokenBytes))
      return Error(where + "tokenizer.ggml.tokens: token " + std::to_string(i) +
                   " is longer than " + std::to_string(kMaxTokenBytes) +
                   " bytes");

  types = v.types;
  if (types.empty()) {
    types.assign(n, kNormal);
    uint8_t b;
    for (size_t i = 0; i < n; ++i)
      if (parseByteToken(v.tokens[i], b))
        types[i] = kByte;
    for (int32_t id : {v.bos, v.eos, v.eot, v.pad})
      if (id >= 0)
        types[id] = kControl;
    if (v.unk >= 0)
      types[v.unk] = kUnknown;
  }
  return Status::success();
}

/// Special-token matchers: all (parse_special) and user-defined only.
void buildMatchers(const EmbeddedVocab &v, const std::vector<int32_t> &types,
                   SpecialMatcher &all, SpecialMatcher &userDefined) {
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    int32_t t = types[i];
    if (t == kControl || t == kUnknown || t == kUserDefined)
      all.add(v.tokens[i], static_cast<int32_t>(i));
    if (t == kUserDefined)
      userDefined.add(v.tokens[i], static_cast<int32_t>(i));
  }
}

/// EOS, EOT, and control tokens with conventional end-of-turn names.
std::vector<int32_t> stopIdsOf(const EmbeddedVocab &v,
                               const std::vector<int32_t> &types) {
  std::vector<int32_t> ids;
  auto add = [&](int32_t id) {
    if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end())
      ids.push_back(id);
  };
  add(v.eos);
  add(v.eot);
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (types[i] != kControl)
      continue;
    const std::string &t = v.tokens[i];
    if (t == "<|eot_id|>" || t == "<|eom_id|>" || t == "<|im_end|>" ||
        t == "<end_of_turn>" || t == "<|end|>")
      add(static_cast<int32_t>(i));
  }
  return ids;
}

/// What both GGUF kinds share: the token types, BOS (added when asked and
/// the metadata allows), EOS, the stop ids, and encode's split at special
/// tokens (all of them; encodeOrdinary: the user-defined ones only).
class GgufTokenizer : public SpecialTextTokenizer {
public:
  int32_t bosId() const override { return bos_; }
  int32_t eosId() const override { return eos_; }
  std::vector<int32_t> stopIds() const override { return stops_; }

protected:
  GgufTokenizer(const EmbeddedVocab &v, std::vector<int32_t> types)
      : types_(std::move(types)), bos_(v.bos), eos_(v.eos), addBos_(v.addBos) {
    buildMatchers(v, types_, all_, userDefined_);
    stops_ = stopIdsOf(v, types_);
  }

  /// Appends the ids of the split text (special tokens: their ids).
  virtual Status encodeSplit(std::string_view text,
                             const std::vector<SpecialMatcher::Part> &parts,
                             std::vector<int32_t> &ids) const = 0;

  std::vector<int32_t> types_;
  int32_t bos_, eos_;

private:
  Result<std::vector<int32_t>> encodeImpl(std::string_view text, bool addBos,
                                          bool parseSpecial) const final {
    std::vector<int32_t> ids;
    if (addBos && addBos_ && bos_ >= 0)
      ids.push_back(bos_);
    std::vector<SpecialMatcher::Part> parts;
    (parseSpecial ? all_ : userDefined_).split(text, parts);
    ETLLM_RETURN_IF_ERROR(encodeSplit(text, parts, ids));
    return ids;
  }

  bool addBos_;
  SpecialMatcher all_, userDefined_;
  std::vector<int32_t> stops_;
};

//===----------------------------------------------------------------------===//
// "llama": SentencePiece-style BPE.
//===----------------------------------------------------------------------===//

class GgufSpmTokenizer final : public GgufTokenizer {
public:
  GgufSpmTokenizer(const EmbeddedVocab &v, std::vector<int32_t> types)
      : GgufTokenizer(v, std::move(types)), scores_(v.scores), unk_(v.unk),
        addSpacePrefix_(v.addSpacePrefix) {
    scores_.resize(v.tokens.size(), 0.0f);
    // llama.cpp's token_to_id map: a repeated text resolves to its last id.
    (void)pieces_.assign(v.tokens, PieceTable::Duplicates::LastWins);
    for (int b = 0; b < 256; ++b) {
      int32_t id = pieces_.find(byteTokenText(static_cast<uint8_t>(b)));
      byteTokens_[b] = id >= 0 && types_[id] == kByte ? id : -1;
    }
  }

  TokenizerKind kind() const override { return TokenizerKind::GgufSpm; }

  std::string decodeToken(int32_t prev, int32_t token) const override {
    if (token < 0 || token >= vocabSize())
      return "";
    const std::string &piece = pieces_.piece(token);
    switch (types_[token]) {
    case kNormal:
    case kUndefined: {
      std::string text = replaceAll(piece, kSpmSpace, " ");
      if (prev == bos_ && addSpacePrefix_ && !text.empty() && text[0] == ' ')
        text.erase(0, 1);
      return text;
    }
    case kUserDefined:
      return piece;
    case kByte: {
      uint8_t b;
      return parseByteToken(piece, b) ? std::string(1, static_cast<char>(b))
                                      : std::string();
    }
    case kUnknown:
      return "\xe2\x96\x85"; // "▅", as llama.cpp prints unknown tokens
    default:
      return ""; // control, unused
    }
  }

  int32_t vocabSize() const override { return pieces_.size(); }
  std::string idToPiece(int32_t id) const override { return pieces_.piece(id); }
  int32_t pieceToId(std::string_view piece) const override {
    return pieces_.find(piece);
  }

private:
  std::optional<std::pair<float, int32_t>>
  mergeable(std::string_view text) const {
    int32_t id = pieces_.find(text);
    if (id < 0 || !(isNormal(types_[id]) || types_[id] == kUserDefined))
      return std::nullopt;
    return std::make_pair(scores_[id], id);
  }

  /// llm_tokenizer_spm_session::tokenize on one escaped text run.
  void encodeRun(std::string work, std::vector<int32_t> &ids) const {
    work = replaceAll(work, " ", kSpmSpace);
    std::vector<std::string_view> chars;
    splitUtf8(work, chars);
    std::vector<SpmSymbol> syms;
    syms.reserve(chars.size());
    for (std::string_view c : chars) {
      auto hit = mergeable(c);
      syms.push_back({static_cast<uint32_t>(c.data() - work.data()),
                      static_cast<uint32_t>(c.size()), hit ? hit->second : -1});
    }
    spmMerge(work, syms, [this](std::string_view s) { return mergeable(s); });
    for (const SpmSymbol &s : syms) {
      if (s.id >= 0) {
        ids.push_back(s.id);
        continue;
      }
      // Not a token: its bytes as <0xNN> tokens, else unk.
      for (uint32_t k = 0; k < s.len; ++k) {
        int32_t b = byteTokens_[static_cast<uint8_t>(work[s.begin + k])];
        if (b >= 0)
          ids.push_back(b);
        else if (unk_ >= 0)
          ids.push_back(unk_);
      }
    }
  }

  Status encodeSplit(std::string_view text,
                     const std::vector<SpecialMatcher::Part> &parts,
                     std::vector<int32_t> &ids) const override {
    bool prevSpecial = true; // the input start counts as "after special"
    for (const SpecialMatcher::Part &part : parts) {
      if (part.id >= 0) {
        ids.push_back(part.id);
        prevSpecial = true;
        continue;
      }
      std::string work;
      if (addSpacePrefix_ && prevSpecial)
        work = " ";
      work.append(part.text);
      encodeRun(std::move(work), ids);
      prevSpecial = false;
    }
    return Status();
  }

  PieceTable pieces_;
  std::vector<float> scores_;
  std::array<int32_t, 256> byteTokens_;
  int32_t unk_;
  bool addSpacePrefix_;
};

//===----------------------------------------------------------------------===//
// "gpt2": byte-level BPE with merges.
//===----------------------------------------------------------------------===//

class GgufBpeTokenizer final : public GgufTokenizer {
public:
  GgufBpeTokenizer(const EmbeddedVocab &v, std::vector<int32_t> types,
                   BpeModel model, std::shared_ptr<const Regex> regex)
      : GgufTokenizer(v, std::move(types)), model_(std::move(model)),
        regex_(std::move(regex)) {}

  TokenizerKind kind() const override { return TokenizerKind::GgufBpe; }

  std::string decodeToken(int32_t prev, int32_t token) const override {
    if (token < 0 || token >= vocabSize())
      return "";
    const std::string &piece = model_.pieces.piece(token);
    switch (types_[token]) {
    case kNormal:
    case kUndefined: {
      std::string bytes;
      byteLevelToBytes(piece, bytes);
      return bytes;
    }
    case kUserDefined:
      return piece;
    default:
      return ""; // control, unknown, unused, byte
    }
  }

  int32_t vocabSize() const override { return model_.pieces.size(); }
  std::string idToPiece(int32_t id) const override {
    return model_.pieces.piece(id);
  }
  int32_t pieceToId(std::string_view piece) const override {
    return model_.pieces.find(piece);
  }

private:
  Status encodeSplit(std::string_view text,
                     const std::vector<SpecialMatcher::Part> &parts,
                     std::vector<int32_t> &ids) const override {
    MatchBudget budget(text.size());
    return encodeParts(parts, *regex_, model_, /*byteLevel=*/true, budget, ids);
  }

  BpeModel model_;
  std::shared_ptr<const Regex> regex_;
};

} // namespace

Result<TokenizerPtr> makeGgufSpm(const EmbeddedVocab &v,
                                 const std::string &name) {
  const std::string where = name + ": GGUF vocabulary (llama): ";
  std::vector<int32_t> types;
  ETLLM_RETURN_IF_ERROR(validateCommon(v, where, types));
  uint8_t b;
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i] == kByte && !parseByteToken(v.tokens[i], b))
      return Error(where + "tokenizer.ggml.token_type: token " +
                   std::to_string(i) + " " + quoteForError(v.tokens[i]) +
                   " has type BYTE but is not <0xNN>");
  return TokenizerPtr(std::make_unique<GgufSpmTokenizer>(v, std::move(types)));
}

namespace {

/// The GGUF `tokenizer.ggml.pre` names this reader knows (as llama.cpp
/// spells them), each with its pre-tokenizer regex and whether it ignores
/// merges. The one list: lookup and the error message both read it.
struct BpePre {
  const char *name;
  const char *const *pattern;
  bool ignoreMerges;
};
const BpePre kBpePres[] = {
    {"default", &kGpt2Pattern, false},
    {"gpt-2", &kGpt2Pattern, false},
    {"gpt2", &kGpt2Pattern, false},
    // Llama 3: llama.cpp (and HF's ignore_merges) ignore the merges.
    {"llama-bpe", &kLlama3Pattern, true},
    {"llama3", &kLlama3Pattern, true},
    {"llama-v3", &kLlama3Pattern, true},
    // Qwen2, Qwen2.5, Qwen3 and DeepSeek-R1's Qwen distills.
    {"qwen2", &kQwen2Pattern, false},
    {"deepseek-r1-qwen", &kQwen2Pattern, false},
    // SmolLM, SmolLM2.
    {"smollm", &kSmolLmPattern, false},
};

/// The entry of a name (an empty name is "default"), or null.
const BpePre *bpePreTokenizer(std::string_view pre) {
  if (pre.empty())
    pre = "default";
  for (const BpePre &p : kBpePres)
    if (pre == p.name)
      return &p;
  return nullptr;
}

std::string knownBpePres() {
  std::string list;
  for (const BpePre &p : kBpePres)
    list += (list.empty() ? "" : ", ") + std::string(p.name);
  return list;
}

} // namespace

Result<TokenizerPtr> makeGgufBpe(const EmbeddedVocab &v,
                                 const std::string &name) {
  const std::string where = name + ": GGUF vocabulary (gpt2): ";
  std::vector<int32_t> types;
  ETLLM_RETURN_IF_ERROR(validateCommon(v, where, types));

  const BpePre *preTok = bpePreTokenizer(v.pre);
  if (!preTok)
    return Error(where + "unsupported tokenizer.ggml.pre " +
                 quoteForError(v.pre) + " (supported: " + knownBpePres() + ")");
  const char *pattern = *preTok->pattern;
  const bool ignoreMerges = preTok->ignoreMerges;
  if (v.merges.empty())
    return Error(where + "tokenizer.ggml.merges is empty");

  BpeModel model;
  model.mode = BpeModel::Mode::MergeTable;
  model.ignoreMerges = ignoreMerges;
  model.unk = v.unk;
  (void)model.pieces.assign(v.tokens, PieceTable::Duplicates::LastWins);
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string at =
        "merge " + std::to_string(i) + " " + quoteForError(v.merges[i]) + ": ";
    std::string_view left, right;
    if (!splitMergeLine(v.merges[i], left, right))
      return Error(where + at + "not \"left right\"");
    std::string problem = model.addMerge(left, right, static_cast<int32_t>(i));
    if (!problem.empty())
      return Error(where + at + problem);
  }
  auto regex = Regex::compile(pattern, where + "pre-tokenizer");
  if (!regex.ok())
    return Error(where + "pre-tokenizer: " + regex.message());
  return TokenizerPtr(std::make_unique<GgufBpeTokenizer>(
      v, std::move(types), std::move(model), std::move(*regex)));
}

} // namespace etllm::rt::tok

namespace etllm::rt {

bool isSupportedGgufPre(std::string_view pre) {
  return tok::bpePreTokenizer(pre) != nullptr;
}

} // namespace etllm::rt
