//===- TokenizerFuzz.h - What the tokenizer targets do with a tokenizer -*- C++
//-*-===//
#ifndef ETLLM_FUZZ_TOKENIZERFUZZ_H
#define ETLLM_FUZZ_TOKENIZERFUZZ_H

#include "FuzzSupport.h"

#include "etllm/runtime/tokenizer.h"

#include <algorithm>

namespace etllm::fuzz {

/// Encodes `text` both ways, checks every id is in range, and decodes the
/// result, token by token and whole.
inline void exerciseText(const rt::Tokenizer &tok, std::string_view text,
                         bool addBos) {
  const int32_t n = tok.vocabSize();
  ETLLM_FUZZ_CHECK(n > 0);
  for (bool ordinary : {false, true}) {
    auto ids =
        ordinary ? tok.encodeOrdinary(text, addBos) : tok.encode(text, addBos);
    if (!ids.ok())
      continue;
    for (int32_t id : *ids)
      ETLLM_FUZZ_CHECK(id >= 0 && id < n);
    int32_t prev = tok.bosId();
    for (int32_t id : *ids) {
      (void)tok.decodeToken(prev, id);
      prev = id;
    }
    (void)tok.decode(*ids);
  }
}

/// Everything a freshly loaded (fuzzed) tokenizer offers: its ids and
/// pieces, decoding of every id (and out-of-range ones), and encoding.
inline void exerciseLoaded(const rt::Tokenizer &tok) {
  const int32_t n = tok.vocabSize();
  ETLLM_FUZZ_CHECK(n > 0);
  ETLLM_FUZZ_CHECK(tok.bosId() >= -1 && tok.bosId() < n);
  ETLLM_FUZZ_CHECK(tok.eosId() >= -1 && tok.eosId() < n);
  for (int32_t id : tok.stopIds())
    ETLLM_FUZZ_CHECK(id >= 0 && id < n);
  const int32_t limit = std::min<int32_t>(n, 4096);
  std::vector<int32_t> all;
  for (int32_t id = -2; id < limit + 2; ++id) {
    std::string piece = tok.idToPiece(id);
    if (id >= 0 && id < n && !piece.empty()) {
      int32_t back = tok.pieceToId(piece);
      ETLLM_FUZZ_CHECK(back >= 0 && back < n);
    }
    (void)tok.decodeToken(tok.bosId(), id);
    all.push_back(id);
  }
  (void)tok.decode(all);
  exerciseText(tok, "Hello world! Once upon a time, 12345 \xe2\x96\x81 <s></s>",
               true);
  exerciseText(tok, std::string_view("\xff\xfe\0\x80 x", 6), false);
}

/// Loads `data` as `kind` (and by detection) and exercises what loads.
inline void fuzzTokenizerFile(const uint8_t *data, size_t size,
                              rt::TokenizerKind kind) {
  auto tok = rt::loadTokenizerFromBuffer(data, size, "fuzz.tok", kind);
  note(tok.ok() ? "loaded " + std::to_string((*tok)->vocabSize()) + " tokens"
                : tok.message());
  if (tok.ok())
    exerciseLoaded(**tok);
  auto detected = rt::loadTokenizerFromBuffer(data, size, "fuzz.tok");
  if (detected.ok())
    exerciseLoaded(**detected);
}

} // namespace etllm::fuzz

#endif // ETLLM_FUZZ_TOKENIZERFUZZ_H
