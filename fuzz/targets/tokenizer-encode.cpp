//===- tokenizer-encode.cpp - Fuzz target: encode/decode arbitrary bytes --===//
//
// The real tokenizers of the shared test data, one of each kind, loaded once.
// Input byte 0 picks the tokenizer, byte 1 the options (BOS, special-token
// parsing); the rest is the text. Checks: ids in range; for the byte-level
// kinds (tiktoken, GPT-2's tokenizer.json) decoding gives the text back
// exactly; encoding never fails (the built-in regexes stay in budget). The text
// also decodes as raw ids (any int32, in range or not).
//
//===----------------------------------------------------------------------===//
#include "CheckpointFuzz.h"
#include "TokenizerFuzz.h"

#include <cstring>
#include <memory>

namespace {

struct Loaded {
  std::unique_ptr<etllm::rt::Tokenizer> tok;
  bool byteLevel; // decode(encodeOrdinary(text)) == text for any bytes
};
std::vector<Loaded> tokenizers;

void add(etllm::rt::Result<std::unique_ptr<etllm::rt::Tokenizer>> tok,
         bool byteLevel, const std::string &what) {
  if (!tok.ok()) {
    std::fprintf(stderr, "tokenizer-encode: cannot load %s: %s\n", what.c_str(),
                 tok.message().c_str());
    std::abort();
  }
  tokenizers.push_back({std::move(tok.value()), byteLevel});
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const std::string s = etllm::fuzz::sharedDir() + "/";
  for (const char *file :
       {"models/stories260K/tok512.bin", "tokenizers/llama2/tokenizer.bin",
        "tokenizers/llama2/tokenizer.model"})
    add(etllm::rt::loadTokenizer(s + file), false, file);
  add(etllm::rt::loadTokenizer(s + "tokenizers/llama3/tokenizer.model"), true,
      "llama3");
  add(etllm::rt::loadTokenizer(s + "tokenizers/gpt2/tokenizer.json"), true,
      "gpt2");
  for (const char *file :
       {"models/stories260K/stories260K.gguf",
        "models/tiny-random-llama2/llama-2-tiny-random.gguf"}) {
    etllm::formats::OpenOptions o;
    o.validateTensors = false;
    auto ckpt = etllm::formats::openCheckpoint(s + file, o);
    if (!ckpt.ok() || !(*ckpt)->ggufTokenizer()) {
      std::fprintf(stderr, "tokenizer-encode: no vocabulary in %s\n", file);
      std::abort();
    }
    add(etllm::rt::tokenizerFromVocab(
            etllm::fuzz::vocabFromGguf(*(*ckpt)->ggufTokenizer()), file),
        false, file);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || tokenizers.empty())
    return 0;
  const Loaded &l = tokenizers[data[0] % tokenizers.size()];
  const bool addBos = data[1] & 1, special = data[1] & 2;
  std::string_view text(reinterpret_cast<const char *>(data + 2), size - 2);
  const etllm::rt::Tokenizer &tok = *l.tok;
  auto ids =
      special ? tok.encode(text, addBos) : tok.encodeOrdinary(text, addBos);
  // The built-in pre-tokenizer patterns stay within the regex budget on any
  // text.
  ETLLM_FUZZ_CHECK(ids.ok());
  {
    for (int32_t id : *ids)
      ETLLM_FUZZ_CHECK(id >= 0 && id < tok.vocabSize());
    std::string back = tok.decode(*ids);
    if (l.byteLevel && !special && !addBos)
      ETLLM_FUZZ_CHECK(back == text);
  }
  // The same bytes as ids.
  std::vector<int32_t> raw(text.size() / 4);
  if (!raw.empty())
    std::memcpy(raw.data(), text.data(), raw.size() * 4);
  (void)tok.decode(raw);
  int32_t prev = tok.bosId();
  for (int32_t id : raw) {
    (void)tok.decodeToken(prev, id);
    (void)tok.idToPiece(id);
    prev = id;
  }
  return 0;
}
