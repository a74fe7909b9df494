//===- image_test.cpp - Decoding, resizing, preprocess configs ------------===//
//
// Pillow's pixels themselves are the Python test's reference
// (test/Python/test_image_preprocess.py); here: what libpng and libjpeg
// give back for images made in the test, hostile inputs, crop and resize
// invariants, and the config reader's errors.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/image/image.h"
#include "etllm/runtime/image/preprocess.h"

#include <gtest/gtest.h>

#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include <cstring>
#include <random>

namespace etllm::rt::image {
namespace {

std::vector<uint8_t> randomPixels(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (auto &b : v)
    b = uint8_t(gen());
  return v;
}

/// A PNG of `pixels` (format: PNG_FORMAT_RGB, _RGBA, _GRAY).
std::vector<uint8_t> encodePng(int64_t w, int64_t h, uint32_t format,
                               const std::vector<uint8_t> &pixels) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = png_uint_32(w);
  img.height = png_uint_32(h);
  img.format = format;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&img, nullptr, &size, 0, pixels.data(),
                                        0, nullptr));
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&img, out.data(), &size, 0,
                                        pixels.data(), 0, nullptr));
  out.resize(size);
  return out;
}

std::vector<uint8_t> encodeJpeg(int64_t w, int64_t h,
                                const std::vector<uint8_t> &rgb,
                                bool progressive) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char *buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = JDIMENSION(w);
  c.image_height = JDIMENSION(h);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  if (progressive)
    jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row =
        const_cast<uint8_t *>(rgb.data()) + size_t(c.next_scanline * w * 3);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> out(buf, buf + size);
  jpeg_destroy_compress(&c);
  free(buf);
  return out;
}

TEST(Decode, PngRgbRgbaGray) {
  const int64_t w = 13, h = 7;
  const auto rgb = randomPixels(w * h * 3, 1);
  Image img;
  ASSERT_TRUE(decode(encodePng(w, h, PNG_FORMAT_RGB, rgb).data(),
                     encodePng(w, h, PNG_FORMAT_RGB, rgb).size(), "rgb.png",
                     img)
                  .ok());
  EXPECT_EQ(img.width, w);
  EXPECT_EQ(img.height, h);
  EXPECT_EQ(img.rgb, rgb);

  // RGBA: composited onto white (transformers' convert_to_rgb): opaque
  // pixels keep their color, transparent ones are white, half-transparent
  // ones in between (Pillow's test values: 200 at alpha 128 -> 227).
  auto rgba = randomPixels(w * h * 4, 2);
  for (int64_t i = 0; i < w * h; ++i)
    rgba[size_t(i * 4 + 3)] = i % 3 == 0 ? 255 : i % 3 == 1 ? 0 : 128;
  rgba[2 * 4] = 200;
  const auto rgbaPng = encodePng(w, h, PNG_FORMAT_RGBA, rgba);
  ASSERT_TRUE(decode(rgbaPng.data(), rgbaPng.size(), "rgba.png", img).ok());
  for (int64_t i = 0; i < w * h; ++i)
    for (int c = 0; c < 3; ++c) {
      const int got = img.rgb[size_t(i * 3 + c)], src = rgba[size_t(i * 4 + c)];
      if (i % 3 == 0)
        ASSERT_EQ(got, src) << i;
      else if (i % 3 == 1)
        ASSERT_EQ(got, 255) << i;
      else
        ASSERT_NEAR(got, (src * 128 + 255 * 127) / 255.0, 1.0) << i;
    }

  // Gray: replicated into R, G and B.
  const auto gray = randomPixels(w * h, 3);
  const auto grayPng = encodePng(w, h, PNG_FORMAT_GRAY, gray);
  ASSERT_TRUE(decode(grayPng.data(), grayPng.size(), "gray.png", img).ok());
  for (int64_t i = 0; i < w * h; ++i)
    for (int c = 0; c < 3; ++c)
      ASSERT_EQ(img.rgb[size_t(i * 3 + c)], gray[size_t(i)]) << i;
}

TEST(Decode, JpegBaselineAndProgressive) {
  const int64_t w = 40, h = 24;
  std::vector<uint8_t> rgb(size_t(w * h * 3));
  for (int64_t y = 0; y < h; ++y) // smooth, so that q95 stays close
    for (int64_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        rgb[size_t((y * w + x) * 3 + c)] = uint8_t(x * 3 + y * 2 + c * 30);
  for (bool progressive : {false, true}) {
    const auto jpg = encodeJpeg(w, h, rgb, progressive);
    Image img;
    ASSERT_TRUE(decode(jpg.data(), jpg.size(), "a.jpg", img).ok());
    EXPECT_EQ(img.width, w);
    EXPECT_EQ(img.height, h);
    int worst = 0;
    for (size_t i = 0; i < rgb.size(); ++i)
      worst = std::max(worst, std::abs(int(img.rgb[i]) - int(rgb[i])));
    EXPECT_LE(worst, 16) << "progressive " << progressive;
  }
}

/// Every bad input is one error naming the input, never a crash.
TEST(Decode, HostileInputs) {
  Image img;
  auto expectError = [&](const std::vector<uint8_t> &bytes,
                         const std::string &what, const DecodeLimits &l = {}) {
    Status st = decode(bytes.data(), bytes.size(), "bad.img", img, l);
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_NE(st.message().find("bad.img"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  };
  expectError({}, "unknown signature");
  expectError({'G', 'I', 'F', '8', '9', 'a'}, "unknown signature");

  const auto rgb = randomPixels(30 * 20 * 3, 4);
  const auto png = encodePng(30, 20, PNG_FORMAT_RGB, rgb);
  for (size_t cut : {size_t(8), size_t(20), png.size() / 2, png.size() - 5})
    expectError(std::vector<uint8_t>(png.begin(), png.begin() + long(cut)),
                "not a valid PNG");
  DecodeLimits small;
  small.maxPixels = 100;
  expectError(png, "more than the limit", small);
  // A header claiming 100000 x 100000 pixels (CRC fixed up): refused
  // before any row is allocated.
  auto huge = png;
  const uint8_t dims[8] = {0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0};
  std::memcpy(huge.data() + 16, dims, 8);
  const uint32_t crc = uint32_t(crc32(0, huge.data() + 12, 17));
  const uint8_t crcBytes[4] = {uint8_t(crc >> 24), uint8_t(crc >> 16),
                               uint8_t(crc >> 8), uint8_t(crc)};
  std::memcpy(huge.data() + 29, crcBytes, 4);
  expectError(huge, "limit");

  const auto jpg = encodeJpeg(30, 20, rgb, false);
  expectError(std::vector<uint8_t>(jpg.begin(), jpg.begin() + 3),
              "not a valid JPEG");
  expectError(
      std::vector<uint8_t>(jpg.begin(), jpg.begin() + long(jpg.size() / 2)),
      "not a valid JPEG");
  auto flipped = jpg;
  for (size_t i = jpg.size() / 2; i < jpg.size() / 2 + 40; ++i)
    flipped[i] ^= 0x5a;
  Status st = decode(flipped.data(), flipped.size(), "bad.img", img);
  if (!st.ok()) { // corrupt entropy data is refused when libjpeg notices it
    EXPECT_NE(st.message().find("bad.img"), std::string::npos);
  }
  expectError(jpg, "more than the limit", small);

  EXPECT_FALSE(load("/nonexistent/x.png", img).ok());
}

TEST(Resize, IdentityAndConstants) {
  Image img;
  img.width = 17;
  img.height = 11;
  img.rgb = randomPixels(17 * 11 * 3, 5);
  EXPECT_EQ(resize(img, 17, 11, Resample::Bicubic).rgb, img.rgb);
  Image flat;
  flat.width = 37;
  flat.height = 23;
  flat.rgb.assign(37 * 23 * 3, 0);
  for (size_t i = 0; i < flat.rgb.size(); i += 3) {
    flat.rgb[i] = 10;
    flat.rgb[i + 1] = 128;
    flat.rgb[i + 2] = 250;
  }
  // A constant image stays constant (the weights sum to one) at any size.
  for (Resample r : {Resample::Lanczos, Resample::Bilinear, Resample::Bicubic})
    for (auto [w, h] : {std::pair<int64_t, int64_t>{5, 9},
                        {37, 7},
                        {80, 23},
                        {100, 61},
                        {1, 1}}) {
      const Image out = resize(flat, w, h, r);
      ASSERT_EQ(out.width, w);
      ASSERT_EQ(out.height, h);
      for (size_t i = 0; i < out.rgb.size(); i += 3)
        ASSERT_TRUE(out.rgb[i] == 10 && out.rgb[i + 1] == 128 &&
                    out.rgb[i + 2] == 250)
            << w << "x" << h;
    }
}

/// Pillow 13's order of the two passes: vertical first only when the height
/// shrinks by more than twice what the width shrinks.
TEST(Resize, PassOrder) {
  EXPECT_TRUE(resizesHorizontallyFirst(300, 300, 200, 199));  // 101 <= 200
  EXPECT_FALSE(resizesHorizontallyFirst(300, 300, 250, 100)); // 200 > 100
  EXPECT_FALSE(resizesHorizontallyFirst(200, 317, 224, 224)); // 93 > -48
  EXPECT_TRUE(resizesHorizontallyFirst(100, 100, 130, 120));  // grows
  EXPECT_TRUE(resizesHorizontallyFirst(200, 300, 150, 200));  // 100 = 100
}

TEST(CenterCrop, CropAndPad) {
  Image img;
  img.width = 5;
  img.height = 4;
  for (int i = 0; i < 20 * 3; ++i)
    img.rgb.push_back(uint8_t(i));
  const Image c = centerCrop(img, 3, 2);
  // top = (4 - 2) // 2 = 1, left = (5 - 3) // 2 = 1.
  EXPECT_EQ(c.rgb[0], img.rgb[size_t((1 * 5 + 1) * 3)]);
  EXPECT_EQ(c.rgb.back(), img.rgb[size_t((2 * 5 + 3) * 3 + 2)]);
  // Larger than the image: zero padding around it, placed at
  // ceil((new - old) / 2).
  const Image p = centerCrop(img, 8, 6);
  EXPECT_EQ(p.rgb[0], 0);
  EXPECT_EQ(p.rgb[size_t((1 * 8 + 2) * 3)], img.rgb[0]);
}

TEST(PreprocessConfig, ReadsAndRefuses) {
  PreprocessConfig c;
  ASSERT_TRUE(parsePreprocessorConfig(
                  R"({"do_resize": true, "size": {"shortest_edge": 224},
                      "resample": 3, "do_center_crop": true,
                      "crop_size": {"height": 224, "width": 224},
                      "rescale_factor": 0.00392156862745098,
                      "image_mean": [0.48145466, 0.4578275, 0.40821073],
                      "image_std": [0.26862954, 0.26130258, 0.27577711]})",
                  "clip.json", c)
                  .ok());
  EXPECT_EQ(c.shortestEdge, 224);
  EXPECT_EQ(c.resample, Resample::Bicubic);
  EXPECT_TRUE(c.doCenterCrop);
  EXPECT_EQ(c.cropWidth, 224);
  EXPECT_FLOAT_EQ(c.mean[2], 0.40821073f);

  auto refuse = [](const std::string &text, const std::string &key) {
    PreprocessConfig c;
    Status st = parsePreprocessorConfig(text, "p.json", c);
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_NE(st.message().find("p.json"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
  };
  refuse("[1]", "JSON object");
  refuse("{", "JSON object");
  refuse(R"({"size": {"shortest_edge": 224}, "resample": 4})", "resample");
  refuse(R"({"size": {"shortest_edge": 224}, "resample": 0})", "resample");
  refuse(R"({"size": {"shortest_edge": 0}})", "shortest_edge");
  refuse(R"({"size": {"shortest_edge": 224, "longest_edge": 512}})",
         "longest_edge");
  refuse(R"({"size": {"height": 224}})", "size");
  refuse(R"({"size": {"height": 224, "width": 99999999}})", "size.width");
  // Each side allowed, the area not: 16384 x 16384 floats would be 3 GiB.
  refuse(R"({"size": {"height": 16384, "width": 16384}})",
         "more than the limit");
  refuse(R"({"do_resize": false, "do_center_crop": true,
             "crop_size": {"height": 8000, "width": 8000}})",
         "crop_size");
  refuse(R"({"do_resize": false, "do_center_crop": true})", "crop_size");
  refuse(R"({"do_resize": false, "image_std": [1, 0, 1]})", "image_std");
  refuse(R"({"do_resize": false, "image_mean": [1, 2]})", "image_mean");
  refuse(R"({"do_resize": false, "rescale_factor": -1})", "rescale_factor");
  refuse(R"({"do_resize": "yes"})", "do_resize");
  refuse(R"({"do_resize": false, "do_image_splitting": true})",
         "do_image_splitting");
  refuse(R"({"size": {"longest_edge": 512}})", "max_image_size");
  // Splitting bounded before any pixel: 4097 / 16 = 257 tiles a side.
  refuse(R"({"size": {"longest_edge": 4096},
             "max_image_size": {"longest_edge": 16},
             "do_image_splitting": true})",
         "more than the limit of 256");
}

// Idefics3's splitting: the longest side to 64, each side up to whole tiles
// of 32, the tiles row by row and the global image (SmolVLM's processor;
// test/Python/test_smolvlm.py compares the pixels with transformers').
TEST(ImagePreprocess, SplitsIntoTilesAndAGlobalImage) {
  PreprocessConfig c;
  ASSERT_TRUE(parsePreprocessorConfig(
                  R"({"size": {"longest_edge": 64},
                      "max_image_size": {"longest_edge": 32},
                      "do_image_splitting": true, "resample": 1})",
                  "p.json", c)
                  .ok());
  struct Case {
    int64_t w, h, rows, cols;
  };
  // 100 x 50 -> 64 x 32 -> 64 x 32 (2 tiles); 30 x 90 -> 22 x 64 -> 32 x 64;
  // 20 x 20 -> 64 x 64 (4 tiles); 40 x 30 -> 64 x 48 -> 64 x 64.
  for (Case k : {Case{100, 50, 1, 2}, Case{30, 90, 2, 1}, Case{20, 20, 2, 2},
                 Case{40, 30, 2, 2}}) {
    Image img;
    img.width = k.w;
    img.height = k.h;
    img.rgb.resize(size_t(k.w * k.h * 3));
    for (size_t i = 0; i < img.rgb.size(); ++i)
      img.rgb[i] = uint8_t(i * 37 % 251);
    Pixels px;
    ASSERT_TRUE(preprocess(img, c, px).ok());
    EXPECT_EQ(px.rows, k.rows) << k.w << "x" << k.h;
    EXPECT_EQ(px.cols, k.cols) << k.w << "x" << k.h;
    ASSERT_EQ(px.tiles.size(), size_t(k.rows * k.cols));
    EXPECT_EQ(px.height, 32);
    EXPECT_EQ(px.width, 32);
    EXPECT_EQ(px.chw.size(), size_t(3 * 32 * 32));
    for (const std::vector<float> &t : px.tiles)
      EXPECT_EQ(t.size(), px.chw.size());
  }
  // Without splitting: the global image alone.
  c.doImageSplitting = false;
  Image img;
  img.width = 100;
  img.height = 50;
  img.rgb.assign(size_t(100 * 50 * 3), 9);
  Pixels px;
  ASSERT_TRUE(preprocess(img, c, px).ok());
  EXPECT_EQ(px.rows * px.cols, 0);
  EXPECT_TRUE(px.tiles.empty());
  EXPECT_EQ(px.chw.size(), size_t(3 * 32 * 32));
}

/// A gray 1-pixel-wide image of `height` rows, and what preprocessing it
/// with `c` says.
std::string refusal(int64_t height, const PreprocessConfig &c) {
  Image img;
  img.width = 1;
  img.height = height;
  img.rgb.assign(size_t(height * 3), 7);
  Pixels px;
  Status st = preprocess(img, c, px);
  return st.ok() ? "" : st.message();
}

/// Sizes each within its bound but not their product: refused before
/// anything is allocated.
TEST(Preprocess, AreasAreBounded) {
  PreprocessConfig area;
  area.shortestEdge = 4096; // 4096 x 16384
  EXPECT_NE(refusal(4, area).find("more than the limit"), std::string::npos);
  // 16000 x 1000 is within the output limit; the intermediate bound counts
  // the horizontal-first image, 16000 x 16384 from 1 x 16384 (conservative:
  // Pillow 13 would shrink vertically first here).
  PreprocessConfig wide;
  wide.resizeHeight = 1000;
  wide.resizeWidth = 16000;
  EXPECT_NE(refusal(16384, wide).find("intermediate"), std::string::npos);
}

TEST(Preprocess, ChannelsFirstRescaledNormalized) {
  Image img;
  img.width = 2;
  img.height = 1;
  img.rgb = {0, 51, 255, 255, 102, 0};
  PreprocessConfig c;
  c.doResize = false;
  c.mean[0] = 0.5f;
  c.std[0] = 0.25f;
  Pixels px;
  ASSERT_TRUE(preprocess(img, c, px).ok());
  ASSERT_EQ(px.chw.size(), 6u);
  EXPECT_FLOAT_EQ(px.chw[0], (0.0f - 0.5f) / 0.25f); // R of pixel 0
  EXPECT_FLOAT_EQ(px.chw[1], (1.0f - 0.5f) / 0.25f); // R of pixel 1
  EXPECT_FLOAT_EQ(px.chw[2], (0.2f - 0.5f) / 0.5f);  // G of pixel 0
  EXPECT_FLOAT_EQ(px.chw[5], (0.0f - 0.5f) / 0.5f);  // B of pixel 1
}

} // namespace
} // namespace etllm::rt::image
