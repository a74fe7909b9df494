//===- hf_json.cpp - Hugging Face tokenizer.json (BPE models) -------------===//
//
// Supported: model type "BPE" (vocab + merges, byte_fallback, unk_token,
// fuse_unk, ignore_merges), with the pipelines that BPE checkpoints use:
//  - byte-level (GPT-2): pre_tokenizer ByteLevel (its regex), or Sequence
//    [Split(Regex), ByteLevel(use_regex=false)] as Llama 3; decoder
//    ByteLevel;
//  - metaspace (Llama 2 / Mistral style): pre_tokenizer Metaspace, or the
//    older normalizer Sequence[Prepend("▁"), Replace(" ", "▁")] with decoder
//    Sequence[Replace("▁", " "), ByteFallback, Fuse, Strip].
// added_tokens are matched whole in the raw text before normalization
// (leftmost, longest). "truncation", "padding" and a BPE "dropout" are
// training/batching options and are ignored. Anything else (WordPiece,
// Unigram, NFC normalizers, ...) is a clear error rather than a silent
// mis-tokenization.
//
// BOS is the first SpecialToken of a TemplateProcessing post-processor;
// tokenizer.json has no EOS field, so EOS and the stop ids are found by the
// conventional special-token names (see kEosNames / kStopNames).
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace etllm::rt::tok {
namespace {

using json = nlohmann::json;

/// Thrown while walking the JSON, caught in loadHuggingFace (never escapes).
struct BadJson : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string &msg) { throw BadJson(msg); }

const json *member(const json &obj, const char *key) {
  if (!obj.is_object())
    return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    return nullptr;
  return &*it;
}

/// Member `key` of `obj` (at `path`) as a T, `dflt` when absent or null;
/// fails unless `(v.*isT)()` ("must be `what`").
template <typename T>
T getMember(const json &obj, const char *key, const std::string &path, T dflt,
            bool (json::*isT)() const noexcept, const char *what) {
  const json *v = member(obj, key);
  if (!v)
    return dflt;
  if (!(v->*isT)())
    fail(path + "." + key + " must be " + what);
  return v->get<T>();
}

std::string getString(const json &obj, const char *key, const std::string &path,
                      const std::string &dflt = std::string()) {
  return getMember(obj, key, path, dflt, &json::is_string, "a string");
}

bool getBool(const json &obj, const char *key, const std::string &path,
             bool dflt) {
  return getMember(obj, key, path, dflt, &json::is_boolean, "a boolean");
}

int64_t getInt(const json &obj, const char *key, const std::string &path,
               int64_t dflt) {
  return getMember(obj, key, path, dflt, &json::is_number_integer,
                   "an integer");
}

std::string typeOf(const json &obj, const std::string &path) {
  if (!obj.is_object())
    fail(path + " must be an object");
  std::string t = getString(obj, "type", path);
  if (t.empty())
    fail(path + " has no \"type\"");
  return t;
}

/// Split/Replace patterns: {"String": s} or {"Regex": r}.
std::string getPattern(const json &obj, const std::string &path,
                       bool &isRegex) {
  const json *p = member(obj, "pattern");
  if (!p || !p->is_object())
    fail(path + ".pattern must be an object {\"String\"|\"Regex\": ...}");
  if (const json *s = member(*p, "String"); s && s->is_string()) {
    isRegex = false;
    return s->get<std::string>();
  }
  if (const json *r = member(*p, "Regex"); r && r->is_string()) {
    isRegex = true;
    return r->get<std::string>();
  }
  fail(path + ".pattern must hold a \"String\" or \"Regex\" string");
}

enum class Prepend { Always, First, Never };

Prepend getPrependScheme(const json &obj, const std::string &path) {
  if (member(obj, "prepend_scheme")) {
    std::string s = getString(obj, "prepend_scheme", path);
    if (s == "always")
      return Prepend::Always;
    if (s == "first")
      return Prepend::First;
    if (s == "never")
      return Prepend::Never;
    fail(path + ".prepend_scheme " + quoteForError(s) + " is not supported");
  }
  // Older files: add_prefix_space (default true).
  return getBool(obj, "add_prefix_space", path, true) ? Prepend::Always
                                                      : Prepend::Never;
}

struct NormStep {
  enum Kind { Prepend, Replace } kind;
  std::string a, b;
};

struct PreStep {
  enum Kind { ByteLevel, Split, Metaspace } kind;
  // ByteLevel
  bool addPrefixSpace = false;
  std::shared_ptr<const Regex> regex; // ByteLevel(use_regex) or Split
  // Split
  enum Behavior {
    Isolated,
    Removed,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous
  } behavior = Isolated;
  bool invert = false;
  // Metaspace
  std::string replacement;
  tok::Prepend prepend = tok::Prepend::Always;
  bool split = true;
};

struct DecStep {
  enum Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind;
  std::string a, b; // Replace: pattern, content; Strip: content; Metaspace
  int64_t start = 0, stop = 0;
  tok::Prepend prepend = tok::Prepend::Always;
};

/// The parsed tokenizer.json.
struct HfConfig {
  /// The file's name, for errors at encode time.
  std::string name;
  BpeModel model;
  std::vector<NormStep> normalizers;
  std::vector<PreStep> preTokenizers;
  std::vector<DecStep> decoders;
  struct Added {
    std::string content;
    bool special;
  };
  std::unordered_map<int32_t, Added> added; // added_tokens by id
  SpecialMatcher matcher;                   // all added tokens, by content
  int32_t vocabSize = 0;
  int32_t bos = -1, eos = -1;
  std::vector<int32_t> stops;
};

// Conventional names; tokenizer.json itself does not say which is EOS.
const char *const kEosNames[] = {"</s>",  "<|end_of_text|>", "<|endoftext|>",
                                 "<eos>", "<|im_end|>",      "<|end|>"};
const char *const kStopNames[] = {
    "<|eot_id|>", "<|eom_id|>",    "<|im_end|>",      "<end_of_turn>",
    "<|end|>",    "<|endoftext|>", "<|end_of_text|>", "</s>"};

class HfTokenizer final : public SpecialTextTokenizer {
public:
  explicit HfTokenizer(HfConfig cfg) : c_(std::move(cfg)) {}

  TokenizerKind kind() const override { return TokenizerKind::HuggingFace; }

  std::string decodeToken(int32_t prev, int32_t token) const override {
    std::vector<std::string> toks;
    if (!tokenText(token, toks))
      return "";
    bool first = prev < 0 || prev == c_.bos;
    return runDecoders(std::move(toks), first);
  }

  std::string decode(const std::vector<int32_t> &ids) const override {
    std::vector<std::string> toks;
    for (int32_t id : ids)
      tokenText(id, toks);
    return runDecoders(std::move(toks), /*first=*/true);
  }

  int32_t vocabSize() const override { return c_.vocabSize; }
  int32_t bosId() const override { return c_.bos; }
  int32_t eosId() const override { return c_.eos; }
  std::vector<int32_t> stopIds() const override { return c_.stops; }
  std::string idToPiece(int32_t id) const override {
    if (auto it = c_.added.find(id); it != c_.added.end())
      return it->second.content;
    return c_.model.pieces.piece(id);
  }
  int32_t pieceToId(std::string_view piece) const override {
    int32_t id = c_.matcher.find(piece);
    return id >= 0 ? id : c_.model.pieces.find(piece);
  }

private:
  /// Appends the text the decoders see for `id`; false for special tokens
  /// (skipped, as skip_special_tokens=True) and invalid ids.
  bool tokenText(int32_t id, std::vector<std::string> &toks) const {
    if (id < 0 || id >= c_.vocabSize)
      return false;
    if (auto it = c_.added.find(id); it != c_.added.end()) {
      if (it->second.special)
        return false;
      toks.push_back(it->second.content);
      return true;
    }
    const std::string &p = c_.model.pieces.piece(id);
    if (p.empty())
      return false;
    toks.push_back(p);
    return true;
  }

  /// Applies the decoder chain. `first`: the tokens start the sequence (so
  /// Strip and Metaspace's prefix removal apply); when streaming a single
  /// token, only right after BOS.
  std::string runDecoders(std::vector<std::string> toks, bool first) const {
    for (const DecStep &d : c_.decoders) {
      switch (d.kind) {
      case DecStep::ByteLevel: {
        std::string joined;
        for (const std::string &t : toks)
          byteLevelToBytes(t, joined);
        toks.assign(1, std::move(joined));
        break;
      }
      case DecStep::Replace:
        for (std::string &t : toks)
          t = replaceAll(t, d.a, d.b);
        break;
      case DecStep::ByteFallback:
        for (std::string &t : toks) {
          uint8_t byte;
          if (parseByteToken(t, byte))
            t.assign(1, static_cast<char>(byte));
        }
        break;
      case DecStep::Fuse: {
        std::string joined;
        for (const std::string &t : toks)
          joined += t;
        toks.assign(1, std::move(joined));
        break;
      }
      case DecStep::Strip:
        if (!first)
          break;
        for (std::string &t : toks) {
          int64_t n = 0;
          while (n < d.start && t.compare(0, d.a.size(), d.a) == 0 &&
                 !t.empty()) {
            t.erase(0, d.a.size());
            ++n;
          }
          n = 0;
          while (n < d.stop && t.size() >= d.a.size() &&
                 t.compare(t.size() - d.a.size(), d.a.size(), d.a) == 0 &&
                 !t.empty()) {
            t.erase(t.size() - d.a.size());
            ++n;
          }
        }
        break;
      case DecStep::Metaspace:
        for (size_t i = 0; i < toks.size(); ++i) {
          toks[i] = replaceAll(toks[i], d.a, " ");
          if (i == 0 && first && d.prepend != tok::Prepend::Never &&
              !toks[i].empty() && toks[i][0] == ' ')
            toks[i].erase(0, 1);
        }
        break;
      }
    }
    std::string out;
    for (const std::string &t : toks)
      out += t;
    return out;
  }

  /// Normalizes and pre-tokenizes one run of plain text (between added
  /// tokens); `atStart`: the run begins the input.
  Status encodeRun(std::string_view run, bool atStart,
                   std::vector<int32_t> &ids, MatchBudget &budget) const {
    std::string s(run);
    for (const NormStep &n : c_.normalizers) {
      if (n.kind == NormStep::Prepend) {
        if (!s.empty())
          s.insert(0, n.a);
      } else {
        s = replaceAll(s, n.a, n.b);
      }
    }
    if (s.empty())
      return Status();
    std::vector<std::string> pieces{std::move(s)};
    std::vector<std::string> next;
    std::vector<Regex::Span> spans;
    for (const PreStep &p : c_.preTokenizers) {
      next.clear();
      for (size_t pi = 0; pi < pieces.size(); ++pi) {
        std::string &piece = pieces[pi];
        switch (p.kind) {
        case PreStep::ByteLevel: {
          if (p.addPrefixSpace && (piece.empty() || piece[0] != ' '))
            piece.insert(0, " ");
          std::vector<std::string_view> words;
          if (p.regex)
            ETLLM_RETURN_IF_ERROR(p.regex->splitIsolated(piece, words, budget));
          else
            words.push_back(piece);
          for (std::string_view w : words)
            next.push_back(bytesToByteLevel(w));
          break;
        }
        case PreStep::Split:
          spans.clear();
          ETLLM_RETURN_IF_ERROR(p.regex->spans(piece, spans, budget));
          splitByBehavior(piece, spans, p, next);
          break;
        case PreStep::Metaspace: {
          std::string t = replaceAll(piece, " ", p.replacement);
          bool startsWith =
              t.compare(0, p.replacement.size(), p.replacement) == 0;
          if (!startsWith &&
              (p.prepend == tok::Prepend::Always ||
               (p.prepend == tok::Prepend::First && atStart && pi == 0)))
            t.insert(0, p.replacement);
          if (!p.split) {
            next.push_back(std::move(t));
            break;
          }
          // Split before every replacement (MergedWithNext): each piece
          // but the first starts with the replacement.
          size_t begin = 0;
          while (begin < t.size()) {
            size_t hit = t.find(p.replacement, begin + 1);
            if (hit == std::string::npos)
              hit = t.size();
            next.push_back(t.substr(begin, hit - begin));
            begin = hit;
          }
          break;
        }
        }
      }
      pieces.swap(next);
    }
    for (const std::string &piece : pieces)
      c_.model.encodeWord(piece, ids);
    return Status();
  }

  static void splitByBehavior(const std::string &piece,
                              const std::vector<Regex::Span> &spans,
                              const PreStep &p, std::vector<std::string> &out) {
    // `delim`: the span is a delimiter (a match, or a gap when inverted).
    std::string pending; // MergedWithNext: delimiter waiting for its piece
    bool lastWasDelim = false;
    for (const Regex::Span &s : spans) {
      std::string text = piece.substr(s.begin, s.end - s.begin);
      bool delim = s.isMatch != p.invert;
      switch (p.behavior) {
      case PreStep::Isolated:
        out.push_back(std::move(text));
        break;
      case PreStep::Removed:
        if (!delim)
          out.push_back(std::move(text));
        break;
      case PreStep::MergedWithPrevious:
        if (delim && !out.empty() && !lastWasDelim)
          out.back() += text;
        else
          out.push_back(std::move(text));
        break;
      case PreStep::MergedWithNext:
        if (delim) {
          if (!pending.empty())
            out.push_back(std::move(pending));
          pending = std::move(text);
        } else {
          out.push_back(pending + text);
          pending.clear();
        }
        break;
      case PreStep::Contiguous:
        if (delim && lastWasDelim && !out.empty())
          out.back() += text;
        else
          out.push_back(std::move(text));
        break;
      }
      lastWasDelim = delim;
    }
    if (!pending.empty())
      out.push_back(std::move(pending));
  }

  Result<std::vector<int32_t>> encodeImpl(std::string_view text, bool addBos,
                                          bool parseSpecial) const override {
    std::vector<int32_t> ids;
    if (addBos && c_.bos >= 0)
      ids.push_back(c_.bos);
    std::vector<SpecialMatcher::Part> parts;
    if (parseSpecial)
      c_.matcher.split(text, parts);
    else if (!text.empty())
      parts.push_back({text, -1});
    // Normalizers may grow the text (Prepend, Replace) and byte-level
    // mapping doubles it: the budget counts twice the input.
    MatchBudget budget(2 * text.size());
    for (const SpecialMatcher::Part &part : parts) {
      if (part.id >= 0)
        ids.push_back(part.id);
      else
        ETLLM_RETURN_IF_ERROR(
            encodeRun(part.text, part.text.data() == text.data(), ids, budget));
    }
    return ids;
  }

  HfConfig c_;
};

//===----------------------------------------------------------------------===//
// Parsing.
//===----------------------------------------------------------------------===//

/// Calls parse(element, its path, c) for each element of the array `key`
/// of the "Sequence" object `j` at `path`.
void parseSequence(const json &j, const char *key, const std::string &path,
                   HfConfig &c,
                   void (*parse)(const json &, const std::string &,
                                 HfConfig &)) {
  const json *list = member(j, key);
  if (!list || !list->is_array())
    fail(path + "." + key + " must be an array");
  for (size_t i = 0; i < list->size(); ++i)
    parse((*list)[i], path + "." + key + "[" + std::to_string(i) + "]", c);
}

void parseNormalizer(const json &n, const std::string &path, HfConfig &c) {
  std::string type = typeOf(n, path);
  if (type == "Sequence") {
    parseSequence(n, "normalizers", path, c, parseNormalizer);
  } else if (type == "Prepend") {
    c.normalizers.push_back(
        {NormStep::Prepend, getString(n, "prepend", path), {}});
  } else if (type == "Replace") {
    bool isRegex = false;
    std::string pattern = getPattern(n, path, isRegex);
    if (isRegex || pattern.empty())
      fail(path + ": Replace with a regex or empty pattern is not supported");
    c.normalizers.push_back(
        {NormStep::Replace, pattern, getString(n, "content", path)});
  } else {
    fail(path + ": normalizer type " + quoteForError(type) +
         " is not supported (supported: Sequence, Prepend, Replace)");
  }
}

std::shared_ptr<const Regex> compileOrFail(std::string_view pattern,
                                           const std::string &path,
                                           bool literal, const HfConfig &c) {
  auto re =
      Regex::compile(pattern, c.name + ": tokenizer.json: " + path, literal);
  if (!re.ok())
    fail(path + ": " + re.message());
  return std::move(re).value();
}

void parsePreTokenizer(const json &p, const std::string &path, HfConfig &c) {
  std::string type = typeOf(p, path);
  if (type == "Sequence") {
    parseSequence(p, "pretokenizers", path, c, parsePreTokenizer);
    return;
  }
  PreStep step;
  if (type == "ByteLevel") {
    step.kind = PreStep::ByteLevel;
    step.addPrefixSpace = getBool(p, "add_prefix_space", path, true);
    if (getBool(p, "use_regex", path, true))
      step.regex = compileOrFail(kGpt2Pattern, path, false, c);
  } else if (type == "Split") {
    step.kind = PreStep::Split;
    bool isRegex = false;
    std::string pattern = getPattern(p, path, isRegex);
    if (pattern.empty())
      fail(path + ": empty Split pattern");
    step.regex = compileOrFail(pattern, path, !isRegex, c);
    std::string behavior = getString(p, "behavior", path, "Isolated");
    if (behavior == "Isolated")
      step.behavior = PreStep::Isolated;
    else if (behavior == "Removed")
      step.behavior = PreStep::Removed;
    else if (behavior == "MergedWithPrevious")
      step.behavior = PreStep::MergedWithPrevious;
    else if (behavior == "MergedWithNext")
      step.behavior = PreStep::MergedWithNext;
    else if (behavior == "Contiguous")
      step.behavior = PreStep::Contiguous;
    else
      fail(path + ": Split behavior " + quoteForError(behavior) +
           " is not supported");
    step.invert = getBool(p, "invert", path, false);
  } else if (type == "Metaspace") {
    step.kind = PreStep::Metaspace;
    step.replacement =
        getString(p, "replacement", path, std::string(kSpmSpace));
    if (step.replacement.empty())
      fail(path + ": empty Metaspace replacement");
    step.prepend = getPrependScheme(p, path);
    step.split = getBool(p, "split", path, true);
  } else {
    fail(path + ": pre_tokenizer type " + quoteForError(type) +
         " is not supported (supported: Sequence, ByteLevel, Split, "
         "Metaspace)");
  }
  c.preTokenizers.push_back(std::move(step));
}

void parseDecoder(const json &d, const std::string &path, HfConfig &c) {
  std::string type = typeOf(d, path);
  DecStep step;
  if (type == "Sequence") {
    parseSequence(d, "decoders", path, c, parseDecoder);
    return;
  }
  if (type == "ByteLevel") {
    step.kind = DecStep::ByteLevel;
  } else if (type == "Replace") {
    step.kind = DecStep::Replace;
    bool isRegex = false;
    step.a = getPattern(d, path, isRegex);
    if (isRegex || step.a.empty())
      fail(path + ": Replace with a regex or empty pattern is not supported");
    step.b = getString(d, "content", path);
  } else if (type == "ByteFallback") {
    step.kind = DecStep::ByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecStep::Fuse;
  } else if (type == "Strip") {
    step.kind = DecStep::Strip;
    step.a = getString(d, "content", path, " ");
    if (step.a.empty())
      fail(path + ": empty Strip content");
    step.start = getInt(d, "start", path, 0);
    step.stop = getInt(d, "stop", path, 0);
  } else if (type == "Metaspace") {
    step.kind = DecStep::Metaspace;
    step.a = getString(d, "replacement", path, std::string(kSpmSpace));
    if (step.a.empty())
      fail(path + ": empty Metaspace replacement");
    step.prepend = getPrependScheme(d, path);
  } else {
    fail(path + ": decoder type " + quoteForError(type) +
         " is not supported (supported: Sequence, ByteLevel, Replace, "
         "ByteFallback, Fuse, Strip, Metaspace)");
  }
  c.decoders.push_back(std::move(step));
}

/// The id of the first SpecialToken of a TemplateProcessing "single" template
/// (searching a Sequence of processors), or -1.
int32_t templateBos(const json &pp, const HfConfig &c) {
  if (!pp.is_object())
    return -1;
  auto type = pp.find("type");
  if (type == pp.end() || !type->is_string())
    return -1;
  if (*type == "Sequence") {
    if (const json *list = member(pp, "processors"); list && list->is_array())
      for (const json &p : *list)
        if (int32_t id = templateBos(p, c); id >= 0)
          return id;
    return -1;
  }
  if (*type != "TemplateProcessing")
    return -1;
  const json *single = member(pp, "single");
  if (!single || !single->is_array() || single->empty())
    return -1;
  const json *st = member((*single)[0], "SpecialToken");
  if (!st)
    return -1;
  const json *name = member(*st, "id");
  if (!name || !name->is_string())
    return -1;
  std::string text = name->get<std::string>();
  if (const json *specials = member(pp, "special_tokens")) {
    if (const json *entry = member(*specials, text.c_str())) {
      if (const json *ids = member(*entry, "ids");
          ids && ids->is_array() && !ids->empty() &&
          (*ids)[0].is_number_integer()) {
        int64_t id = (*ids)[0].get<int64_t>();
        if (id >= 0 && id < c.vocabSize)
          return static_cast<int32_t>(id);
      }
    }
  }
  int32_t id = c.matcher.find(text);
  return id >= 0 ? id : c.model.pieces.find(text);
}

void parseModel(const json &m, HfConfig &c) {
  const std::string path = "model";
  if (!m.is_object())
    fail("\"model\" must be an object");
  std::string type = getString(m, "type", path);
  if (type.empty() && member(m, "merges"))
    type = "BPE"; // old files omit the type
  if (type != "BPE")
    fail("model type " + quoteForError(type) +
         " is not supported (only BPE; WordPiece, WordLevel and Unigram "
         "are not)");
  if (!getString(m, "continuing_subword_prefix", path).empty() ||
      !getString(m, "end_of_word_suffix", path).empty())
    fail("model.continuing_subword_prefix / end_of_word_suffix are not "
         "supported");

  const json *vocab = member(m, "vocab");
  if (!vocab || !vocab->is_object())
    fail("model.vocab must be an object {token: id}");
  if (vocab->empty())
    fail("model.vocab is empty");
  if (vocab->size() > static_cast<size_t>(kMaxVocab))
    fail("model.vocab has more than " + std::to_string(kMaxVocab) + " tokens");
  std::vector<std::string> pieces;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it->is_number_integer())
      fail("model.vocab[" + quoteForError(it.key()) +
           "] must be an integer id");
    int64_t id = it->get<int64_t>();
    if (id < 0 || id > static_cast<int64_t>(2 * vocab->size() + 1024))
      fail("model.vocab[" + quoteForError(it.key()) +
           "] = " + std::to_string(id) + " is out of range for " +
           std::to_string(vocab->size()) + " tokens");
    if (it.key().empty())
      fail("model.vocab has an empty token");
    if (static_cast<size_t>(id) >= pieces.size())
      pieces.resize(static_cast<size_t>(id) + 1);
    if (!pieces[id].empty())
      fail("model.vocab: id " + std::to_string(id) + " is used by both " +
           quoteForError(pieces[id]) + " and " + quoteForError(it.key()));
    pieces[id] = it.key();
  }
  c.model.pieces.assign(std::move(pieces));
  c.model.mode = BpeModel::Mode::MergeTable;

  const json *merges = member(m, "merges");
  if (merges && !merges->is_array())
    fail("model.merges must be an array");
  if (merges) {
    for (size_t i = 0; i < merges->size(); ++i) {
      const json &e = (*merges)[i];
      const std::string at = "model.merges[" + std::to_string(i) + "]";
      std::string_view left, right;
      std::string line, l, r;
      if (e.is_string()) {
        line = e.get<std::string>();
        if (!splitMergeLine(line, left, right))
          fail(at + " " + quoteForError(line) + " is not \"left right\"");
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() &&
                 e[1].is_string()) {
        l = e[0].get<std::string>();
        r = e[1].get<std::string>();
        left = l;
        right = r;
      } else {
        fail(at + " must be \"left right\" or [left, right]");
      }
      std::string problem =
          c.model.addMerge(left, right, static_cast<int32_t>(i));
      if (!problem.empty())
        fail(at + " " + problem);
    }
  }

  c.model.ignoreMerges = getBool(m, "ignore_merges", path, false);
  c.model.byteFallback = getBool(m, "byte_fallback", path, false);
  c.model.fuseUnk = getBool(m, "fuse_unk", path, false);
  if (c.model.byteFallback)
    c.model.findByteTokens();
  std::string unk = getString(m, "unk_token", path);
  if (!unk.empty()) {
    c.model.unk = c.model.pieces.find(unk);
    if (c.model.unk < 0)
      fail("model.unk_token " + quoteForError(unk) +
           " is not in the vocabulary");
  }
}

HfConfig parseConfig(const json &j, const std::string &name) {
  HfConfig c;
  c.name = name;
  if (!j.is_object())
    fail("top level must be a JSON object");
  const json *model = member(j, "model");
  if (!model)
    fail("no \"model\" (a JSON file, but not a Hugging Face tokenizer.json)");

  if (const json *n = member(j, "normalizer"))
    parseNormalizer(*n, "normalizer", c);
  if (const json *p = member(j, "pre_tokenizer"))
    parsePreTokenizer(*p, "pre_tokenizer", c);
  if (const json *d = member(j, "decoder"))
    parseDecoder(*d, "decoder", c);
  parseModel(*model, c);

  int64_t maxId = c.model.pieces.size() - 1;
  std::vector<std::pair<int64_t, const json *>> added;
  if (const json *list = member(j, "added_tokens")) {
    if (!list->is_array())
      fail("added_tokens must be an array");
    for (size_t i = 0; i < list->size(); ++i) {
      const json &t = (*list)[i];
      const std::string at = "added_tokens[" + std::to_string(i) + "]";
      if (!t.is_object())
        fail(at + " must be an object");
      int64_t id = getInt(t, "id", at, -1);
      std::string content = getString(t, "content", at);
      if (id < 0 || id >= kMaxVocab ||
          id > static_cast<int64_t>(c.model.pieces.size() + 2 * list->size() +
                                    1024))
        fail(at + ".id " + std::to_string(id) + " is missing or out of range");
      if (content.empty())
        fail(at + ".content is missing or empty");
      added.emplace_back(id, &t);
      maxId = std::max(maxId, id);
    }
  }
  c.vocabSize = static_cast<int32_t>(maxId + 1);
  for (auto &[id, t] : added) {
    std::string content = getString(*t, "content", "added_tokens");
    bool special = getBool(*t, "special", "added_tokens", false);
    c.matcher.add(content, static_cast<int32_t>(id));
    c.added[static_cast<int32_t>(id)] = {std::move(content), special};
  }

  if (const json *pp = member(j, "post_processor"))
    c.bos = templateBos(*pp, c);
  auto findAdded = [&](const char *name) { return c.matcher.find(name); };
  for (const char *name : kEosNames)
    if (c.eos < 0)
      c.eos = findAdded(name);
  if (c.eos >= 0)
    c.stops.push_back(c.eos);
  for (const char *name : kStopNames) {
    int32_t id = findAdded(name);
    if (id >= 0 &&
        std::find(c.stops.begin(), c.stops.end(), id) == c.stops.end())
      c.stops.push_back(id);
  }
  return c;
}

/// Parses `data` into a DOM, refusing nesting deeper than kMaxJsonDepth while
/// parsing (nlohmann's parser is iterative, but the walks over
/// normalizer/pre_tokenizer/decoder/post_processor recurse, and their path
/// strings grow with the depth). The callback sees each container as it
/// opens, so a deep file fails before its DOM exists.
json parseBounded(const uint8_t *data, size_t size) {
  json::parser_callback_t bound = [](int depth, json::parse_event_t event,
                                     json &) {
    if ((event == json::parse_event_t::object_start ||
         event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      fail("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
           " levels (tokenizer.json files nest fewer than 10)");
    return true;
  };
  return json::parse(data, data + size, bound);
}

} // namespace

Result<TokenizerPtr> loadHuggingFace(const uint8_t *data, size_t size,
                                     const std::string &name) {
  const std::string where = name + ": tokenizer.json: ";
  try {
    json j = parseBounded(data, size);
    return TokenizerPtr(std::make_unique<HfTokenizer>(parseConfig(j, name)));
  } catch (const BadJson &e) {
    return Error(where + e.what());
  } catch (const json::exception &e) {
    return Error(where + "invalid JSON: " + e.what());
  } catch (const std::exception &e) {
    return Error(where + e.what());
  }
}

} // namespace etllm::rt::tok
