//===- tokenizer.h - Text <-> token ids for the etllm runtime ---*- C++ -*-===//
//
// One interface over the tokenizer formats that LLM checkpoints ship with:
// llama2.c tokenizer.bin, SentencePiece models, tiktoken rank files, Hugging
// Face tokenizer.json, and vocabularies embedded as GGUF metadata.
//
// Tokenizer files come from the internet: loading never crashes or throws on
// malformed bytes, it returns an Error naming the file and the problem.
// Encoding arbitrary bytes (including invalid UTF-8) never crashes.
//
// Special-token text: `encode` recognizes the text of special tokens (e.g.
// "<|eot_id|>") for the kinds that define them (tiktoken, Hugging Face
// added_tokens, GGUF control/user-defined tokens), as chat templates need;
// `encodeOrdinary` treats such text as plain text (use it for untrusted
// input). The llama2.c and SentencePiece kinds never match special text.
//
// Decoding: control/special tokens (BOS, EOS, <|eot_id|>, ...) decode to the
// empty string; `idToPiece` gives their stored text.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_TOKENIZER_H
#define ETLLM_RUNTIME_TOKENIZER_H

#include "etllm/runtime/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace etllm::rt {

/// The tokenizer formats the runtime understands.
enum class TokenizerKind {
  Llama2c,       ///< karpathy/llama2.c tokenizer.bin (score-greedy BPE).
  SentencePiece, ///< SentencePiece ModelProto (via libsentencepiece).
  Tiktoken,      ///< tiktoken ranks file (Llama 3), byte-level BPE.
  HuggingFace,   ///< Hugging Face tokenizer.json with a BPE model.
  GgufSpm,       ///< GGUF-embedded vocabulary, tokenizer.ggml.model=llama.
  GgufBpe,       ///< GGUF-embedded vocabulary, tokenizer.ggml.model=gpt2.
};

/// A stable lower-case name of `kind` ("llama2c", "sentencepiece", ...).
const char *tokenizerKindName(TokenizerKind kind);

/// Converts text to token ids and back. Implementations are immutable after
/// loading, so one instance may be used from several threads at once.
class Tokenizer {
public:
  virtual ~Tokenizer();

  /// The format this tokenizer was loaded from.
  virtual TokenizerKind kind() const = 0;

  /// Token ids for `text`; BOS prepended when addBos (and the tokenizer has
  /// one). The text of special tokens is recognized (see the file comment).
  virtual Result<std::vector<int32_t>> encode(std::string_view text,
                                              bool addBos) const = 0;

  /// Like encode, but the text of special tokens is encoded as plain text.
  /// The default forwards to encode (kinds without special-token matching).
  virtual Result<std::vector<int32_t>> encodeOrdinary(std::string_view text,
                                                      bool addBos) const;

  /// Bytes of `token` when it follows `prev` (for streaming output). For the
  /// llama2.c and SentencePiece kinds, a leading space is stripped when prev
  /// is BOS (as llama2.c run.c does); byte tokens <0xNN> become the raw byte;
  /// byte-level BPE tokens map back to raw bytes (may be a partial UTF-8
  /// sequence — callers concatenate). Out-of-range ids decode to "".
  virtual std::string decodeToken(int32_t prev, int32_t token) const = 0;

  /// Decodes a whole sequence (what the test vectors' decode direction
  /// checks). The default concatenates decodeToken(previous id, id), with the
  /// first token treated as following BOS.
  virtual std::string decode(const std::vector<int32_t> &ids) const;

  /// Number of ids (valid ids are 0 .. vocabSize()-1).
  virtual int32_t vocabSize() const = 0;
  /// Beginning-of-sequence id, -1 when none.
  virtual int32_t bosId() const = 0;
  /// End-of-sequence id, -1 when none.
  virtual int32_t eosId() const = 0;

  /// Ids that end generation (EOS, plus e.g. <|eot_id|> for Llama 3).
  virtual std::vector<int32_t> stopIds() const;

  /// The stored text of `id` as it appears in the vocabulary (e.g. "▁Hello",
  /// "<0x0A>", "Ġworld", "<|eot_id|>"); "" for out-of-range ids.
  virtual std::string idToPiece(int32_t id) const = 0;

  /// The id whose stored text is exactly `piece`, -1 when none.
  virtual int32_t pieceToId(std::string_view piece) const = 0;
};

/// Loads a tokenizer file; its kind is detected from the content, NOT the
/// extension: HF tokenizer.json (JSON object with "model"), tiktoken ranks
/// (lines "base64 rank"), SentencePiece ModelProto (protobuf), llama2.c
/// tokenizer.bin (u32 max_token_length then vocab entries). A file that fits
/// no format is a clear error naming the file and what was tried.
Result<std::unique_ptr<Tokenizer>> loadTokenizer(const std::string &path);

/// Same, from bytes in memory (the program file embeds tokenizer files).
/// `name` is used in error messages. The bytes are not retained.
Result<std::unique_ptr<Tokenizer>>
loadTokenizerFromBuffer(const uint8_t *data, size_t size,
                        const std::string &name);

/// Optional explicit kind (skips detection); returns an error if the bytes
/// don't parse as that kind. The GGUF kinds cannot be loaded from a buffer
/// (use tokenizerFromVocab).
Result<std::unique_ptr<Tokenizer>>
loadTokenizerFromBuffer(const uint8_t *data, size_t size,
                        const std::string &name, TokenizerKind kind);

/// A vocabulary carried as GGUF metadata (tokenizer.ggml.*), as the program
/// file stores it.
struct EmbeddedVocab {
  /// tokenizer.ggml.model: "llama" (SentencePiece-style) or "gpt2"
  /// (byte-level BPE).
  std::string model;
  /// tokenizer.ggml.pre, e.g. "default", "llama-bpe", "gpt-2" (empty =
  /// default).
  std::string pre;
  /// tokenizer.ggml.tokens.
  std::vector<std::string> tokens;
  /// tokenizer.ggml.scores (may be empty for gpt2).
  std::vector<float> scores;
  /// tokenizer.ggml.token_type (1 normal, 2 unknown, 3 control, 4 user
  /// defined, 5 unused, 6 byte); may be empty.
  std::vector<int32_t> types;
  /// tokenizer.ggml.merges ("a b"), gpt2 only.
  std::vector<std::string> merges;
  /// Special ids (-1 = none).
  int32_t bos = -1, eos = -1, unk = -1, pad = -1, eot = -1;
  /// tokenizer.ggml.add_bos_token: encode(text, true) adds BOS only if set.
  bool addBos = true;
  /// tokenizer.ggml.add_space_prefix (llama spm).
  bool addSpacePrefix = true;
};

/// Builds a tokenizer from a GGUF-embedded vocabulary. Inconsistent metadata
/// (sizes, ids out of range, merges naming unknown tokens, unknown `pre`) is
/// an Error naming `name` and the problem.
Result<std::unique_ptr<Tokenizer>>
tokenizerFromVocab(const EmbeddedVocab &vocab, const std::string &name);

/// Whether tokenizerFromVocab has the byte-level BPE pre-tokenizer named by
/// a GGUF `tokenizer.ggml.pre` ("" and "default" included).
bool isSupportedGgufPre(std::string_view pre);

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_TOKENIZER_H
