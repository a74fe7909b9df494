//===- vision_methods.cpp - A composite model's image methods -------------===//
//
// The methods' shapes are checked once at open (the program file is
// untrusted: a method's signature may disagree with its metadata), so a
// call only copies the pixels and the features in.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/llm/vision_methods.h"
#include "etllm/runtime/llm/method_names.h"

#include <nlohmann/json.hpp>

#include <chrono>

namespace etllm::rt::llm {

namespace {

using json = nlohmann::json;

/// A non-negative integer (at most 2^30) of the program's model config.
Result<int64_t> configInt(const json &j, const char *key,
                          const std::string &path) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0 ||
      it->get<int64_t>() > (int64_t(1) << 30))
    return Error(path + ": the model config's '" + key +
                 "' is missing or out of range (a composite model's "
                 "program)");
  return it->get<int64_t>();
}

/// An optional token id of the model config: -1 when absent, else in
/// [0, vocab).
Result<int64_t> optionalToken(const json &j, const char *key, int64_t vocab,
                              const std::string &path) {
  auto it = j.find(key);
  if (it == j.end())
    return int64_t(-1);
  if (!it->is_number_integer() || it->get<int64_t>() < -1 ||
      it->get<int64_t>() >= vocab)
    return Error(path + ": the model config's '" + key +
                 "' is not a token of the vocabulary");
  return it->get<int64_t>();
}

/// An optional short string of the model config ("" when absent).
Result<std::string> optionalText(const json &j, const char *key,
                                 const std::string &path) {
  auto it = j.find(key);
  if (it == j.end())
    return std::string();
  if (!it->is_string() || it->get_ref<const std::string &>().size() > 256)
    return Error(path + ": the model config's '" + key +
                 "' is not a string of at most 256 bytes");
  return it->get<std::string>();
}

} // namespace

Error noVisionEncoder(const std::string &program, const std::string &what) {
  return Error(program + ": " + what +
               "the program has no vision encoder (images need a composite "
               "model's program, e.g. LLaVA's)");
}

Result<std::unique_ptr<VisionMethods>>
VisionMethods::open(Module &module, const std::string &path, int64_t vocab) {
  const std::vector<std::string> names = module.program().methodNames();
  bool hasEncoder = false, hasDecoder = false;
  for (const std::string &n : names) {
    hasEncoder |= n == kVisionEncoderMethod;
    hasDecoder |= n == kTextDecoderMethod;
  }
  if (!hasEncoder && !hasDecoder)
    return std::unique_ptr<VisionMethods>();
  if (hasEncoder != hasDecoder)
    return Error(path + ": a composite model's program needs both `" +
                 std::string(kVisionEncoderMethod) + "` and `" +
                 kTextDecoderMethod + "`");
  std::unique_ptr<VisionMethods> v(new VisionMethods());
  v->vocab_ = vocab;
  json config;
  try {
    config = json::parse(module.program().metadata().modelConfigJson);
  } catch (const json::exception &) {
    return Error(path + ": the model config is not JSON");
  }
  if (!config.is_object())
    return Error(path + ": the model config is not a JSON object");
  ETLLM_ASSIGN_OR_RETURN(v->imageTokenId_,
                         configInt(config, "image_token_id", path));
  ETLLM_ASSIGN_OR_RETURN(v->imageSeqLen_,
                         configInt(config, "image_seq_len", path));
  ETLLM_ASSIGN_OR_RETURN(v->imageSize_,
                         configInt(config, "vision_image_size", path));
  if (auto it = config.find("image_preprocessor");
      it != config.end() && it->is_string())
    v->preprocessor_ = it->get<std::string>();
  if (v->preprocessor_.empty())
    return Error(path + ": the model config has no image_preprocessor");
  ETLLM_ASSIGN_OR_RETURN(
      v->beginTokenId_,
      optionalToken(config, "image_begin_token_id", vocab, path));
  ETLLM_ASSIGN_OR_RETURN(
      v->endTokenId_, optionalToken(config, "image_end_token_id", vocab, path));
  ETLLM_ASSIGN_OR_RETURN(v->textBefore_,
                         optionalText(config, "image_text_before", path));
  ETLLM_ASSIGN_OR_RETURN(v->textAfter_,
                         optionalText(config, "image_text_after", path));
  ETLLM_ASSIGN_OR_RETURN(v->tileText_,
                         optionalText(config, "image_tile_text", path));
  ETLLM_ASSIGN_OR_RETURN(v->rowEndText_,
                         optionalText(config, "image_row_end_text", path));
  ETLLM_ASSIGN_OR_RETURN(v->tilesEndText_,
                         optionalText(config, "image_tiles_end_text", path));
  if (v->imageTokenId_ >= vocab)
    return Error(path + ": image_token_id " +
                 std::to_string(v->imageTokenId_) +
                 " is outside the vocabulary");

  auto enc = module.method(kVisionEncoderMethod);
  if (!enc.ok())
    return enc.error();
  auto dec = module.method(kTextDecoderMethod);
  if (!dec.ok())
    return dec.error();
  v->encoder_ = *enc;
  v->decoder_ = *dec;
  const Method &e = *v->encoder_, &d = *v->decoder_;
  const int64_t s = v->imageSize_, n = v->imageSeqLen_;
  if (e.numInputs() != 1 || e.numOutputs() != 1 ||
      e.input(0).dtype != DType::F32 || e.input(0).rank != 4 ||
      e.input(0).sizes[0] != 1 || e.input(0).sizes[1] != 3 ||
      e.input(0).sizes[2] != s || e.input(0).sizes[3] != s ||
      e.output(0).rank != 3 || e.output(0).sizes[0] != 1 ||
      e.output(0).sizes[1] != n)
    return Error(path + ": `vision_encoder` is not vision_encoder(pixels: "
                        "f32 [1, 3, " +
                 std::to_string(s) + ", " + std::to_string(s) +
                 "]) -> features [1, " + std::to_string(n) + ", hidden]");
  v->hidden_ = e.output(0).sizes[2];
  if (d.numInputs() == 2 && d.input(0).rank == 3 && d.input(0).sizes[1] < n)
    return Error(path + ": the text decoder takes at most " +
                 std::to_string(d.input(0).sizes[1]) +
                 " positions a call, fewer than one image's " +
                 std::to_string(n));
  if (d.numInputs() != 2 || d.numOutputs() != 1 || d.input(0).rank != 3 ||
      d.input(0).dtype != e.output(0).dtype ||
      d.input(0).sizes[2] != v->hidden_ || d.input(0).sizes[1] < n ||
      d.input(1).dtype != DType::I64 || d.input(1).rank != 1 ||
      d.output(0).dtype != DType::F32 || d.output(0).rank < 1 ||
      d.output(0).dim(-1) != vocab)
    return Error(path + ": `text_decoder` is not text_decoder(embeddings "
                        "[1, seq >= " +
                 std::to_string(n) + ", " + std::to_string(v->hidden_) +
                 "], positions: i64 [seq]) -> f32 logits");
  return v;
}

Result<const float *> VisionMethods::prefill(const ImagePixels &image,
                                             int64_t pos, double *encodeMs,
                                             int64_t tile) {
  if (tile >= int64_t(image.tiles.size()))
    return Error("the image has no tile " + std::to_string(tile));
  const std::vector<float> &chw =
      tile < 0 ? image.chw : image.tiles[size_t(tile)];
  if (image.height != imageSize_ || image.width != imageSize_ ||
      int64_t(chw.size()) != 3 * imageSize_ * imageSize_)
    return Error("the image's pixels are " + std::to_string(image.width) +
                 " x " + std::to_string(image.height) +
                 "; the vision encoder takes " + std::to_string(imageSize_) +
                 " x " + std::to_string(imageSize_));
  auto t0 = std::chrono::steady_clock::now();
  const int64_t pixelSizes[4] = {1, 3, imageSize_, imageSize_};
  ETLLM_RETURN_IF_ERROR(
      encoder_->setInput(0, DType::F32, pixelSizes, 4, chw.data()));
  ETLLM_RETURN_IF_ERROR(encoder_->execute());
  if (encodeMs)
    *encodeMs = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
  const Tensor &features = encoder_->output(0);
  positions_.resize(size_t(imageSeqLen_));
  for (int64_t i = 0; i < imageSeqLen_; ++i)
    positions_[size_t(i)] = pos + i;
  const int64_t featureSizes[3] = {1, imageSeqLen_, hidden_};
  ETLLM_RETURN_IF_ERROR(decoder_->setInput(0, features.dtype, featureSizes, 3,
                                           features.data));
  ETLLM_RETURN_IF_ERROR(
      decoder_->setInput(1, DType::I64, &imageSeqLen_, 1, positions_.data()));
  ETLLM_RETURN_IF_ERROR(decoder_->execute());
  const Tensor &out = decoder_->output(0);
  if (out.dtype != DType::F32 || out.rank < 1 || out.dim(-1) != vocab_)
    return Error("the text decoder's output is not f32 logits over the "
                 "vocabulary");
  return out.ptr<float>() + (out.numel() - vocab_);
}

uint64_t VisionMethods::plannedBytes() const {
  return encoder_->plannedBytes() + decoder_->plannedBytes();
}

} // namespace etllm::rt::llm
