//===- image.h - Images for vision encoders: decode, resize, crop -*- C++
//-*-===//
//
// What a multimodal program's image input needs before its vision encoder:
// PNG and JPEG decoding (libpng, libjpeg: images come from the internet, so
// every size is checked and a bad file is one error naming it), and the
// steps of a Hugging Face image processor's PIL backend, byte for byte:
// Pillow's resampling (its fixed-point coefficients and rounding), the
// center crop, and the float rescale and normalization (preprocess.h).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_IMAGE_IMAGE_H
#define ETLLM_RUNTIME_IMAGE_IMAGE_H

#include "etllm/runtime/result.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace etllm::rt::image {

/// An 8-bit RGB image: rows top to bottom, pixels R, G, B interleaved
/// (transformers' convert_to_rgb: gray and palettes expanded, transparency
/// composited onto white).
struct Image {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> rgb; // height * width * 3
};

/// Bounds on what decoding may allocate, checked against the header before
/// any pixel is read.
struct DecodeLimits {
  int64_t maxWidth = 16384;
  int64_t maxHeight = 16384;
  int64_t maxPixels = int64_t(64) << 20;
};

/// Decodes the PNG or JPEG (told apart by their signatures) in
/// [data, data + size); `name` names the input in every error. 8-bit and
/// 16-bit PNG (16-bit: the high byte, as Pillow keeps it for RGB), gray,
/// gray + alpha, RGB, RGBA and palettes, transparency over white; baseline
/// and progressive JPEG, YCbCr and gray (CMYK is refused, and so is
/// corrupt data libjpeg would only warn about).
Status decode(const uint8_t *data, size_t size, const std::string &name,
              Image &out, const DecodeLimits &limits = {});

/// Reads and decodes the file at `path`.
Status load(const std::string &path, Image &out,
            const DecodeLimits &limits = {});

/// Pillow's resampling filters (Image.Resampling) that resize() does.
enum class Resample : uint8_t { Lanczos, Bilinear, Bicubic };

/// Resample from a preprocessor config's `resample` (Pillow's codes: 1
/// lanczos, 2 bilinear, 3 bicubic); other filters are refused.
Status resampleFromPil(int64_t code, Resample &out);

/// `in` resized to width x height as Pillow's Image.resize does for an RGB
/// image (no box, no reducing gap): the same bytes, with Pillow 13's order
/// of the two passes (resizesHorizontallyFirst). Sizes of at least 1.
Image resize(const Image &in, int64_t width, int64_t height, Resample filter);

/// Whether Pillow 13 resizes inW x inH to w x h horizontally first: unless
/// the height shrinks by more than twice what the width shrinks (Pillow 12
/// and older always go horizontally first; both orders round to 8 bits in
/// between, so the bytes differ where the orders do).
bool resizesHorizontallyFirst(int64_t inWidth, int64_t inHeight, int64_t width,
                              int64_t height);

/// The center width x height of `in` as transformers' center_crop takes it
/// (top = (H - h) // 2, left = (W - w) // 2); where `in` is smaller the
/// rest is zero, placed as center_crop pads.
Image centerCrop(const Image &in, int64_t width, int64_t height);

} // namespace etllm::rt::image

#endif // ETLLM_RUNTIME_IMAGE_IMAGE_H
