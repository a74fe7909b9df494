//===- vision_methods.h - A composite model's image methods -----*- C++ -*-===//
//
// A composite model's program (LLaVA, Gemma 3, SmolVLM, a composed
// encoder: etllm-export of a vision tower + a decoder) has, beside
// `forward`, `vision_encoder` (float pixels [1, 3, S, S] to image features
// [1, N, hidden]), `token_embedding` and `text_decoder` (embeddings
// [1, seq, hidden] and positions to logits, over forward's KV caches and
// weights). VisionMethods finds and checks the two it uses and feeds one
// image's (or one tile's) features at its positions; the Runner places them
// at the prompt's image placeholders, with the text and tokens the
// metadata says the model's processor puts around an image. What the
// model's image processor does (resize, crop, split into tiles, normalize)
// is recorded in the program's metadata; etllm/runtime/image applies it
// before pixels reach here.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_VISION_METHODS_H
#define ETLLM_RUNTIME_LLM_VISION_METHODS_H

#include "etllm/runtime/program.h"
#include "etllm/runtime/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace etllm::rt::llm {

/// Where an image goes in a prompt's text.
inline constexpr const char kImagePlaceholder[] = "<image>";

/// Float pixels an image processor made: [3, height, width], row-major
/// (etllm/runtime/image/preprocess.h's Pixels).
struct ImagePixels {
  int64_t height = 0, width = 0;
  std::vector<float> chw;
  /// An image split into tiles (SmolVLM's processor): rows x cols tiles of
  /// height x width, row by row; `chw` is then the global image.
  int64_t rows = 0, cols = 0;
  std::vector<std::vector<float>> tiles;
};

/// The error for images given to a program without a vision encoder,
/// naming the program (and, after it, `what` asked: "--image: ").
Error noVisionEncoder(const std::string &program,
                      const std::string &what = "");

class VisionMethods {
public:
  /// The image methods of `module`, checked against each other and the
  /// metadata's image fields (image_token_id, image_seq_len,
  /// vision_image_size, image_preprocessor; the optional
  /// image_begin_token_id, image_end_token_id, image_text_before and
  /// image_text_after); null when the program has no
  /// `vision_encoder`. `vocab` is forward's.
  static Result<std::unique_ptr<VisionMethods>>
  open(Module &module, const std::string &path, int64_t vocab);

  /// Encodes `image` (its tile `tile`, -1: its only or global image) and
  /// feeds its features at positions pos ..
  /// pos + imageSeqLen() - 1; the last position's logits, valid until the
  /// next call. `encodeMs` gets the encoder's time.
  Result<const float *> prefill(const ImagePixels &image, int64_t pos,
                                double *encodeMs, int64_t tile = -1);

  int64_t imageTokenId() const { return imageTokenId_; }
  /// The tokens around an image's features (Gemma 3's boi/eoi); -1: none.
  int64_t imageBeginTokenId() const { return beginTokenId_; }
  int64_t imageEndTokenId() const { return endTokenId_; }
  /// The text the model's processor puts before and after an image (outside
  /// its begin and end tokens; Gemma 3: "\n\n").
  const std::string &textBefore() const { return textBefore_; }
  const std::string &textAfter() const { return textAfter_; }
  /// An image split into tiles (SmolVLM): the text before each tile
  /// ("{row}" and "{col}" its 1-based place), after each row of tiles and
  /// after the last row (before the global image's textBefore()).
  const std::string &tileText() const { return tileText_; }
  const std::string &rowEndText() const { return rowEndText_; }
  const std::string &tilesEndText() const { return tilesEndText_; }
  /// Positions (and placeholder tokens) one image takes.
  int64_t imageSeqLen() const { return imageSeqLen_; }
  /// The side of the square pixels the encoder takes.
  int64_t imageSize() const { return imageSize_; }
  /// preprocessor_config.json as exported.
  const std::string &preprocessorJson() const { return preprocessor_; }
  uint64_t plannedBytes() const;

private:
  Method *encoder_ = nullptr, *decoder_ = nullptr;
  int64_t imageTokenId_ = 0, imageSeqLen_ = 0, imageSize_ = 0, hidden_ = 0,
          vocab_ = 0, beginTokenId_ = -1, endTokenId_ = -1;
  std::string preprocessor_, textBefore_, textAfter_, tileText_, rowEndText_,
      tilesEndText_;
  std::vector<int64_t> positions_;
};

} // namespace etllm::rt::llm

#endif // ETLLM_RUNTIME_LLM_VISION_METHODS_H
