//===- image.cpp - Fuzz target: PNG and JPEG images -----------------------===//
//
// runtime/image's decode (libpng, libjpeg, their error paths and the size
// limits) and, for what decodes, the preprocessing a vision encoder's input
// gets (resize down and up, a crop with padding, normalization).
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/image/preprocess.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace img = etllm::rt::image;
  img::DecodeLimits limits; // small enough that every input runs fast
  limits.maxWidth = limits.maxHeight = 4096;
  limits.maxPixels = int64_t(1) << 20;
  img::Image image;
  if (!img::decode(data, size, "fuzz", image, limits).ok())
    return 0;
  img::PreprocessConfig config;
  config.shortestEdge = 24;
  config.resample = img::Resample::Bicubic;
  config.doCenterCrop = true;
  config.cropHeight = 20;
  config.cropWidth = 30;
  img::Pixels pixels;
  (void)img::preprocess(image, config, pixels);
  return 0;
}
