//===- decode.cpp - PNG and JPEG to 8-bit RGB
//------------------------------===//
//
// libpng and libjpeg (Debian's libpng16 and libjpeg62-turbo), the libraries
// Pillow decodes with, asked for what transformers' convert_to_rgb gives:
// gray and palettes expanded, 16-bit samples cut to their high byte, and
// transparency (an alpha channel or a tRNS chunk) composited onto white
// with Pillow's alpha_composite arithmetic. Both libraries report errors by
// longjmp: the calls that may jump live in functions whose objects outlive the
// jump (nothing is destroyed between setjmp and longjmp), and the message is
// copied into a fixed buffer before the jump.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/image/image.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include <jpeglib.h>
#include <png.h>

namespace etllm::rt::image {
namespace {

/// A library's error: the message, and where to jump.
struct Jump {
  std::jmp_buf env;
  char message[JMSG_LENGTH_MAX > 256 ? JMSG_LENGTH_MAX : 256] = {};
};

/// Whether a header's w x h is outside `limits`; if so, sets overLimit and
/// keeps the sizes in `out` for checkSize's message.
bool overLimits(int64_t w, int64_t h, const DecodeLimits &limits, Image &out,
                bool &overLimit) {
  if (w > 0 && h > 0 && w <= limits.maxWidth && h <= limits.maxHeight &&
      w * h <= limits.maxPixels)
    return false;
  overLimit = true;
  out.width = w;
  out.height = h;
  return true;
}

Status checkSize(const std::string &name, int64_t w, int64_t h,
                 const DecodeLimits &limits) {
  if (w <= 0 || h <= 0)
    return Error(name + ": the image has no pixels (" + std::to_string(w) +
                 " x " + std::to_string(h) + ")");
  if (w > limits.maxWidth || h > limits.maxHeight || w * h > limits.maxPixels)
    return Error(name + ": the image is " + std::to_string(w) + " x " +
                 std::to_string(h) + " pixels, more than the limit (" +
                 std::to_string(limits.maxWidth) + " x " +
                 std::to_string(limits.maxHeight) + ", " +
                 std::to_string(limits.maxPixels) + " pixels)");
  return Status();
}

/// A decoder's result as one Status: a header over the limits, a library
/// error, or the image (moved to `out`).
Status outcome(const std::string &name, const char *format, bool ok,
               bool overLimit, const Jump &jump, const DecodeLimits &limits,
               Image &img, Image &out) {
  if (overLimit)
    return checkSize(name, img.width, img.height, limits);
  if (!ok)
    return Error(name + ": not a valid " + format + ": " + jump.message);
  out = std::move(img);
  return Status();
}

//===----------------------------------------------------------------------===//
// PNG
//===----------------------------------------------------------------------===//

struct PngInput {
  const uint8_t *data;
  size_t size;
  size_t pos;
};

void pngRead(png_structp png, png_bytep out, png_size_t n) {
  auto *in = static_cast<PngInput *>(png_get_io_ptr(png));
  if (n > in->size - in->pos)
    png_error(png, "the file ends early");
  std::memcpy(out, in->data + in->pos, n);
  in->pos += n;
}

[[noreturn]] void pngError(png_structp png, png_const_charp msg) {
  auto *jump = static_cast<Jump *>(png_get_error_ptr(png));
  std::snprintf(jump->message, sizeof jump->message, "%s", msg);
  std::longjmp(jump->env, 1);
}

void pngWarning(png_structp, png_const_charp) {}

/// An RGBA pixel over opaque white, as Pillow's alpha_composite computes it
/// (integer arithmetic with 7 extra bits, divisions by 255 rounded by its
/// shift trick).
void overWhite(const uint8_t *rgba, uint8_t *rgb) {
  const uint32_t a = rgba[3];
  if (a == 0) {
    rgb[0] = rgb[1] = rgb[2] = 255;
    return;
  }
  constexpr uint32_t kBits = 7;
  const uint32_t outa255 = a * 255 + 255 * (255 - a);
  const uint32_t coef1 = a * 255 * 255 * (1u << kBits) / outa255;
  const uint32_t coef2 = 255 * (1u << kBits) - coef1;
  auto div255 = [](uint32_t v) { return ((v >> 8) + v) >> 8; };
  for (int c = 0; c < 3; ++c) {
    const uint32_t t = rgba[c] * coef1 + 255 * coef2;
    rgb[c] = uint8_t(div255(t + (0x80u << kBits)) >> kBits);
  }
}

/// The PNG's header, then its rows into out (sized here; with alpha, into
/// `rgba` first). Returns false (with jump.message) on a libpng error or a
/// header over the limits (overLimit set).
bool readPng(png_structp png, png_infop info, Jump &jump, PngInput &in,
             const DecodeLimits &limits, Image &out,
             std::vector<png_bytep> &rows, std::vector<uint8_t> &rgba,
             bool &overLimit) {
  if (setjmp(jump.env))
    return false;
  png_set_read_fn(png, &in, pngRead);
  // The header's size is checked against `limits` below, before any row
  // is allocated (libpng's own limit, 1,000,000 a side, stays as well).
  png_set_chunk_malloc_max(png, 8 << 20);
  png_read_info(png, info);
  const int64_t w = png_get_image_width(png, info);
  const int64_t h = png_get_image_height(png, info);
  if (overLimits(w, h, limits, out, overLimit))
    return false;
  const int colorType = png_get_color_type(png, info);
  if (png_get_bit_depth(png, info) == 16)
    png_set_strip_16(png);
  if (colorType == PNG_COLOR_TYPE_PALETTE)
    png_set_palette_to_rgb(png);
  if (colorType == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS))
    png_set_tRNS_to_alpha(png);
  if (colorType == PNG_COLOR_TYPE_GRAY ||
      colorType == PNG_COLOR_TYPE_GRAY_ALPHA)
    png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int channels = png_get_channels(png, info);
  if ((channels != 3 && channels != 4) || png_get_bit_depth(png, info) != 8 ||
      png_get_rowbytes(png, info) != png_size_t(w) * png_size_t(channels))
    png_error(png, "an unexpected pixel layout after conversion to RGB");
  out.width = w;
  out.height = h;
  out.rgb.resize(size_t(w * h * 3));
  uint8_t *dst = out.rgb.data();
  if (channels == 4) {
    rgba.resize(size_t(w * h * 4));
    dst = rgba.data();
  }
  rows.resize(size_t(h));
  for (int64_t y = 0; y < h; ++y)
    rows[size_t(y)] = dst + size_t(y * w * channels);
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  if (channels == 4)
    for (int64_t i = 0; i < w * h; ++i)
      overWhite(rgba.data() + size_t(i * 4), out.rgb.data() + size_t(i * 3));
  return true;
}

Status decodePng(const uint8_t *data, size_t size, const std::string &name,
                 Image &out, const DecodeLimits &limits) {
  Jump jump;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &jump,
                                           pngError, pngWarning);
  if (!png)
    return Error(name + ": cannot start the PNG decoder");
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return Error(name + ": cannot start the PNG decoder");
  }
  PngInput in{data, size, 0};
  std::vector<png_bytep> rows;
  std::vector<uint8_t> rgba;
  bool overLimit = false;
  Image img;
  const bool ok =
      readPng(png, info, jump, in, limits, img, rows, rgba, overLimit);
  png_destroy_read_struct(&png, &info, nullptr);
  return outcome(name, "PNG", ok, overLimit, jump, limits, img, out);
}

//===----------------------------------------------------------------------===//
// JPEG
//===----------------------------------------------------------------------===//

/// Progressive JPEGs may hold any number of scans, each a pass over the
/// whole image (a decoding bomb): more than this many is refused, as
/// libjpeg-turbo's own tools do (TJFLAG_LIMITSCANS).
constexpr int kMaxScans = 500;

struct JpegErrors {
  jpeg_error_mgr mgr;
  Jump *jump;
};

[[noreturn]] void jpegErrorExit(j_common_ptr cinfo) {
  auto *err = reinterpret_cast<JpegErrors *>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->jump->message);
  std::longjmp(err->jump->env, 1);
}

/// A warning is corrupt data (a truncated file, a bad Huffman code):
/// refused as Pillow refuses a truncated image, not decoded to gray.
void jpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level < 0)
    jpegErrorExit(cinfo);
}

void jpegProgress(j_common_ptr cinfo) {
  auto *d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    auto *err = reinterpret_cast<JpegErrors *>(cinfo->err);
    std::snprintf(err->jump->message, sizeof err->jump->message,
                  "more than %d scans", kMaxScans);
    std::longjmp(err->jump->env, 1);
  }
}

bool readJpeg(jpeg_decompress_struct &cinfo, Jump &jump, const uint8_t *data,
              size_t size, const DecodeLimits &limits, Image &out,
              bool &overLimit) {
  if (setjmp(jump.env))
    return false;
  jpeg_create_decompress(&cinfo);
  cinfo.mem->max_memory_to_use = long(limits.maxPixels) * 16;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  const int64_t w = cinfo.image_width, h = cinfo.image_height;
  if (overLimits(w, h, limits, out, overLimit))
    return false;
  switch (cinfo.jpeg_color_space) {
  case JCS_GRAYSCALE:
  case JCS_YCbCr:
  case JCS_RGB:
    cinfo.out_color_space = JCS_RGB;
    break;
  default:
    std::snprintf(jump.message, sizeof jump.message,
                  "color space %d (CMYK or YCCK) is not supported",
                  int(cinfo.jpeg_color_space));
    return false;
  }
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != 3 || int64_t(cinfo.output_width) != w ||
      int64_t(cinfo.output_height) != h) {
    std::snprintf(jump.message, sizeof jump.message,
                  "an unexpected output layout");
    return false;
  }
  out.width = w;
  out.height = h;
  out.rgb.resize(size_t(w * h * 3));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row =
        out.rgb.data() + size_t(cinfo.output_scanline) * size_t(w) * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  return true;
}

Status decodeJpeg(const uint8_t *data, size_t size, const std::string &name,
                  Image &out, const DecodeLimits &limits) {
  Jump jump;
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);
  JpegErrors errors;
  cinfo.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = jpegErrorExit;
  errors.mgr.emit_message = jpegEmitMessage;
  errors.jump = &jump;
  jpeg_progress_mgr progress{};
  progress.progress_monitor = jpegProgress;
  cinfo.progress = &progress;
  bool overLimit = false;
  Image img;
  const bool ok = readJpeg(cinfo, jump, data, size, limits, img, overLimit);
  jpeg_destroy_decompress(&cinfo);
  return outcome(name, "JPEG", ok, overLimit, jump, limits, img, out);
}

} // namespace

Status decode(const uint8_t *data, size_t size, const std::string &name,
              Image &out, const DecodeLimits &limits) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0)
    return decodePng(data, size, name, out, limits);
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
    return decodeJpeg(data, size, name, out, limits);
  return Error(name + ": not a PNG or JPEG image (unknown signature)");
}

Status load(const std::string &path, Image &out, const DecodeLimits &limits) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return Error(path + ": cannot open the image");
  // An image file is at most its pixels compressed, a few times over for
  // odd encoders: a larger file is refused before it is read.
  f.seekg(0, std::ios::end);
  const std::streamoff n = f.tellg();
  if (n < 0 || n > std::streamoff(limits.maxPixels) * 8 + (1 << 20))
    return Error(path + ": the image file is larger than the limit");
  f.seekg(0);
  std::vector<uint8_t> bytes(static_cast<size_t>(n));
  if (n > 0 && !f.read(reinterpret_cast<char *>(bytes.data()), n))
    return Error(path + ": cannot read the image");
  return decode(bytes.data(), bytes.size(), path, out, limits);
}

} // namespace etllm::rt::image
