//===- preprocess.h - An image processor's steps, as its config says -*- C++
//-*-===//
//
// The preprocessing a Hugging Face image processor (its PIL backend: CLIP,
// SigLIP and the processors built on them) applies before the vision
// encoder, configured by its preprocessor_config.json: resize (to a
// shortest edge keeping the aspect ratio, or to a fixed size), center crop,
// rescale and normalize; the result is float32 channels-first pixels equal
// to the processor's `pixel_values` (the same float operations).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_IMAGE_PREPROCESS_H
#define ETLLM_RUNTIME_IMAGE_PREPROCESS_H

#include "etllm/runtime/image/image.h"

namespace etllm::rt::image {

/// preprocessor_config.json's keys (transformers' names); the defaults are
/// transformers' BaseImageProcessor defaults where the config is silent.
struct PreprocessConfig {
  bool doResize = true;
  int64_t shortestEdge = 0;                  // size.shortest_edge, or
  int64_t resizeHeight = 0, resizeWidth = 0; // size.height / size.width, or
  // Idefics3's (SmolVLM's) processor without image splitting: the longest
  // side to size.longest_edge (the other kept in proportion, rounded up to
  // even, the result at most 4096 a side), then the square of
  // max_image_size.longest_edge.
  int64_t longestEdge = 0, squareSide = 0;
  // With do_image_splitting (Idefics3 / SmolVLM), after the longest-edge
  // resize: each side up to a multiple of the square's side (the other in
  // proportion), tiles of the square's side, row by row, and the whole
  // resized to the square as the global image (none when one tile).
  bool doImageSplitting = false;
  Resample resample = Resample::Bilinear;
  bool doCenterCrop = false;
  int64_t cropHeight = 0, cropWidth = 0;
  bool doRescale = true;
  double rescaleFactor = 1.0 / 255.0;
  bool doNormalize = true;
  float mean[3] = {0.5f, 0.5f, 0.5f};
  float std[3] = {0.5f, 0.5f, 0.5f};
};

/// Reads a preprocessor_config.json's text; `name` names it in errors. A
/// key with a value this code does not implement (another resample filter,
/// a size with both shortest and longest edges, image splitting) is
/// refused naming the key and the value.
Status parsePreprocessorConfig(const std::string &text, const std::string &name,
                               PreprocessConfig &out);

/// The pixels: [3][H][W] float32, and H and W. An image split into tiles
/// (do_image_splitting) has rows x cols tiles of the same H x W, row by
/// row, and `chw` is its global image; rows = cols = 0 otherwise.
struct Pixels {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<float> chw;
  int64_t rows = 0, cols = 0;
  std::vector<std::vector<float>> tiles;
};

/// The config's steps on `img`, in the processor's order.
Status preprocess(const Image &img, const PreprocessConfig &config,
                  Pixels &out);

/// Decodes the PNG or JPEG at `path` and applies the processor
/// configuration `configText` (preprocessor_config.json's text; errors name
/// it `configName`): what a vision encoder's caller does with a file.
Status loadForModel(const std::string &path, const std::string &configText,
                    const std::string &configName, Pixels &out,
                    const DecodeLimits &limits = {});

} // namespace etllm::rt::image

#endif // ETLLM_RUNTIME_IMAGE_PREPROCESS_H
