//===- sentencepiece.cpp - SentencePiece models via libsentencepiece ------===//
//
// Encoding and whole-sequence decoding are libsentencepiece's own (so every
// model type and normalizer it supports works). decodeToken, for streaming,
// follows llama2.c run.c: "▁" becomes " ", the leading space is dropped
// after BOS, and byte pieces <0xNN> become the byte.
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include <sentencepiece_processor.h>

#include <exception>

namespace etllm::rt::tok {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
public:
  explicit SentencePieceTokenizer(
      std::unique_ptr<sentencepiece::SentencePieceProcessor> sp)
      : sp_(std::move(sp)), size_(sp_->GetPieceSize()) {}

  TokenizerKind kind() const override { return TokenizerKind::SentencePiece; }

  Result<std::vector<int32_t>> encode(std::string_view text,
                                      bool addBos) const override {
    std::vector<int> pieces;
    auto status = sp_->Encode(text, &pieces);
    if (!status.ok())
      return Error(std::string("sentencepiece encode failed: ") +
                   status.ToString());
    std::vector<int32_t> ids;
    ids.reserve(pieces.size() + 1);
    if (addBos && bosId() >= 0)
      ids.push_back(bosId());
    ids.insert(ids.end(), pieces.begin(), pieces.end());
    return ids;
  }

  std::string decodeToken(int32_t prev, int32_t token) const override {
    if (!valid(token) || sp_->IsControl(token) || sp_->IsUnused(token))
      return "";
    if (sp_->IsUnknown(token))
      return " \xE2\x81\x87 "; // SentencePiece's surface for unknown: " ⁇ "
    const std::string &piece = sp_->IdToPiece(token);
    uint8_t byte;
    if (sp_->IsByte(token) && parseByteToken(piece, byte))
      return std::string(1, static_cast<char>(byte));
    std::string text = replaceAll(piece, kSpmSpace, " ");
    if (prev == bosId() && !text.empty() && text[0] == ' ')
      text.erase(0, 1);
    return text;
  }

  std::string decode(const std::vector<int32_t> &ids) const override {
    std::vector<int> valid;
    valid.reserve(ids.size());
    for (int32_t id : ids)
      if (this->valid(id))
        valid.push_back(id);
    std::string out;
    if (!sp_->Decode(valid, &out).ok())
      return Tokenizer::decode(ids);
    return out;
  }

  int32_t vocabSize() const override { return size_; }
  int32_t bosId() const override { return sp_->bos_id(); }
  int32_t eosId() const override { return sp_->eos_id(); }
  std::string idToPiece(int32_t id) const override {
    return valid(id) ? sp_->IdToPiece(id) : std::string();
  }
  int32_t pieceToId(std::string_view piece) const override {
    // PieceToId answers unk_id for unknown text; only exact pieces count.
    int id = sp_->PieceToId(piece);
    return valid(id) && sp_->IdToPiece(id) == piece ? id : -1;
  }

private:
  bool valid(int32_t id) const { return id >= 0 && id < size_; }

  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  int32_t size_;
};

} // namespace

Result<TokenizerPtr> loadSentencePiece(const uint8_t *data, size_t size,
                                       const std::string &name) {
  try {
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    auto status = sp->LoadFromSerializedProto(
        std::string_view(reinterpret_cast<const char *>(data), size));
    if (!status.ok()) {
      // libsentencepiece reports bytes that are no ModelProto as an internal
      // error quoting its own source line; say what it means.
      std::string why = status.message();
      if (why.find("ParseFromArray") != std::string::npos)
        return Error(name + ": not a SentencePiece model (the bytes do not "
                            "parse as a SentencePiece ModelProto)");
      return Error(name + ": invalid SentencePiece model: " + why);
    }
    const int n = sp->GetPieceSize();
    if (n <= 0)
      return Error(name + ": invalid SentencePiece model: no pieces");
    if (n > kMaxVocab)
      return Error(name +
                   ": invalid SentencePiece model: " + std::to_string(n) +
                   " pieces, more than " + std::to_string(kMaxVocab));
    const std::pair<const char *, int> specials[] = {
        {"bos", sp->bos_id()}, {"eos", sp->eos_id()}, {"unk", sp->unk_id()}};
    for (const auto &[field, id] : specials)
      if (id < -1 || id >= n)
        return Error(name + ": invalid SentencePiece model: " + field + " id " +
                     std::to_string(id) + " is out of range for " +
                     std::to_string(n) + " pieces");
    for (int i = 0; i < n; ++i)
      if (sp->IdToPiece(i).size() > static_cast<size_t>(kMaxTokenBytes))
        return Error(name + ": invalid SentencePiece model: piece " +
                     std::to_string(i) + " is longer than " +
                     std::to_string(kMaxTokenBytes) + " bytes");
    return TokenizerPtr(
        std::make_unique<SentencePieceTokenizer>(std::move(sp)));
  } catch (const std::exception &e) {
    return Error(name + ": SentencePiece model: " + e.what());
  }
}

} // namespace etllm::rt::tok
