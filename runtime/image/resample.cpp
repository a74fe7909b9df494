//===- resample.cpp - Pillow's resize, center crop ------------------------===//
//
// Pillow's Image.resize for 8-bit images (src/libImaging/Resample.c):
// separable convolution, horizontal pass first (only over the rows the
// vertical pass reads) into an 8-bit image, then vertical; per output pixel
// the filter's weights over the input pixels within its support (scaled by
// the reduction factor), normalized in double, then rounded to fixed point
// with 22 fractional bits; the sum starts at one half and is cut back to 8
// bits with clamping. The same operations in the same order give the same
// bytes, which is what a vision encoder's reference pixels are compared to.
// No library does this outside Pillow (a C library with no C API meant for
// embedding), hence this file.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/image/image.h"

#include <algorithm>
#include <cmath>

namespace etllm::rt::image {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear(double x) {
  if (x < 0.0)
    x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0)
    x = -x;
  if (x < 1.0)
    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0)
    return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0)
    return 1.0;
  x = x * M_PI;
  return std::sin(x) / x;
}

/// Lanczos-3: sinc windowed by a sinc three times wider.
double lanczos(double x) {
  if (-3.0 <= x && x < 3.0)
    return sinc(x) * sinc(x / 3);
  return 0.0;
}

/// A filter and its support (in input pixels at scale 1).
struct Filter {
  double (*weight)(double);
  double support;
};

Filter filterOf(Resample r) {
  static constexpr Filter kFilters[] = {
      {lanczos, 3.0},  // Resample::Lanczos
      {bilinear, 1.0}, // Resample::Bilinear
      {bicubic, 2.0},  // Resample::Bicubic
  };
  return kFilters[static_cast<size_t>(r)];
}

/// Each output pixel's first input pixel, count and fixed-point weights
/// (ksize per pixel), as Pillow's precompute_coeffs and
/// normalize_coeffs_8bpc.
struct Coeffs {
  int ksize = 0;
  std::vector<int> bounds; // [out][2]: first, count
  std::vector<int32_t> k;  // [out][ksize]
};

Coeffs coeffs(int64_t inSize, int64_t outSize, Resample filter) {
  const Filter f = filterOf(filter);
  const double scale = double(inSize) / double(outSize);
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double reach = f.support * filterscale;
  const double ss = 1.0 / filterscale;
  Coeffs c;
  c.ksize = int(std::ceil(reach)) * 2 + 1;
  c.bounds.resize(size_t(outSize) * 2);
  c.k.assign(size_t(outSize) * size_t(c.ksize), 0);
  std::vector<double> w(size_t(c.ksize));
  for (int64_t xx = 0; xx < outSize; ++xx) {
    const double center = (double(xx) + 0.5) * scale;
    int xmin = int(center - reach + 0.5);
    if (xmin < 0)
      xmin = 0;
    int xmax = int(center + reach + 0.5);
    if (xmax > inSize)
      xmax = int(inSize);
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double v = f.weight((double(x + xmin) - center + 0.5) * ss);
      w[size_t(x)] = v;
      ww += v;
    }
    int32_t *k = &c.k[size_t(xx) * size_t(c.ksize)];
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? w[size_t(x)] / ww : w[size_t(x)];
      k[x] = v < 0 ? int32_t(-0.5 + v * (1 << kPrecisionBits))
                   : int32_t(0.5 + v * (1 << kPrecisionBits));
    }
    c.bounds[size_t(xx) * 2] = xmin;
    c.bounds[size_t(xx) * 2 + 1] = xmax;
  }
  return c;
}

uint8_t clip8(int32_t in) {
  const int32_t v = in >> kPrecisionBits;
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

} // namespace

Status resampleFromPil(int64_t code, Resample &out) {
  switch (code) {
  case 1:
    out = Resample::Lanczos;
    return Status();
  case 2:
    out = Resample::Bilinear;
    return Status();
  case 3:
    out = Resample::Bicubic;
    return Status();
  default:
    return Error("resample " + std::to_string(code) +
                 " is not supported (1: lanczos, 2: bilinear, 3: bicubic)");
  }
}

namespace {

/// Pillow's horizontal pass: rows [first, first + rows) of `in` to `h`'s
/// width.
Image horizontalPass(const Image &in, const Coeffs &h, int64_t width,
                     int64_t first, int64_t rows) {
  Image out;
  out.width = width;
  out.height = rows;
  out.rgb.resize(size_t(width * rows * 3));
  for (int64_t y = 0; y < rows; ++y) {
    const uint8_t *row = in.rgb.data() + size_t((y + first) * in.width * 3);
    uint8_t *o = out.rgb.data() + size_t(y * width * 3);
    for (int64_t xx = 0; xx < width; ++xx) {
      const int xmin = h.bounds[size_t(xx) * 2],
                xmax = h.bounds[size_t(xx) * 2 + 1];
      const int32_t *k = &h.k[size_t(xx) * size_t(h.ksize)];
      int32_t s[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1),
                      1 << (kPrecisionBits - 1)};
      for (int x = 0; x < xmax; ++x)
        for (int ch = 0; ch < 3; ++ch)
          s[ch] += int32_t(row[size_t(x + xmin) * 3 + size_t(ch)]) * k[x];
      for (int ch = 0; ch < 3; ++ch)
        o[xx * 3 + ch] = clip8(s[ch]);
    }
  }
  return out;
}

/// Pillow's vertical pass: `in` (whose row 0 is input row `rowOffset`) to
/// `v`'s height.
Image verticalPass(const Image &in, const Coeffs &v, int64_t height,
                   int64_t rowOffset) {
  Image out;
  out.width = in.width;
  out.height = height;
  out.rgb.resize(size_t(out.width * height * 3));
  for (int64_t yy = 0; yy < height; ++yy) {
    const int ymin = int(v.bounds[size_t(yy) * 2] - rowOffset),
              ymax = v.bounds[size_t(yy) * 2 + 1];
    const int32_t *k = &v.k[size_t(yy) * size_t(v.ksize)];
    uint8_t *o = out.rgb.data() + size_t(yy * out.width * 3);
    for (int64_t x = 0; x < out.width * 3; ++x) {
      int32_t s = 1 << (kPrecisionBits - 1);
      for (int y = 0; y < ymax; ++y)
        s += int32_t(in.rgb[size_t((y + ymin) * in.width * 3 + x)]) * k[y];
      o[x] = clip8(s);
    }
  }
  return out;
}

} // namespace

bool resizesHorizontallyFirst(int64_t inWidth, int64_t inHeight, int64_t width,
                              int64_t height) {
  // Pillow 13: the vertical pass first when the height shrinks by more than
  // twice what the width shrinks (Pillow 12 and older: always horizontal).
  const int64_t dh = inHeight - height, dw = inWidth - width;
  return !(dh > 0 && dh > dw * 2);
}

Image resize(const Image &in, int64_t width, int64_t height, Resample filter) {
  if (width == in.width && height == in.height)
    return in;
  // Each pass's coefficients only where it runs (the vertical ones also
  // bound the rows a horizontal-first pass reads).
  const Coeffs v = coeffs(in.height, height, filter);
  if (width == in.width)
    return verticalPass(in, v, height, 0);
  const Coeffs h = coeffs(in.width, width, filter);
  if (!resizesHorizontallyFirst(in.width, in.height, width, height))
    return horizontalPass(verticalPass(in, v, height, 0), h, width, 0, height);
  // Horizontally first, over the rows the vertical pass reads.
  const int64_t first = v.bounds[0];
  const int64_t last =
      v.bounds[size_t(height) * 2 - 2] + v.bounds[size_t(height) * 2 - 1];
  Image tmp = horizontalPass(in, h, width, first, last - first);
  if (height == in.height)
    return tmp; // first = 0 and every row
  return verticalPass(tmp, v, height, first);
}

Image centerCrop(const Image &in, int64_t width, int64_t height) {
  Image out;
  out.width = width;
  out.height = height;
  out.rgb.assign(size_t(width * height * 3), 0);
  // transformers' center_crop: top = (H - h) // 2 and left = (W - w) // 2
  // (Python's floor). Where the crop is larger on a side it pads the image
  // into a zero canvas at ceil((h - H) / 2) and crops that canvas from its
  // start, which is again image row y + (H - h) // 2: output pixel (y, x)
  // is image pixel (y + oy, x + ox), or zero outside the image (no canvas
  // is made).
  auto floorDiv2 = [](int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };
  const int64_t oy = floorDiv2(in.height - height);
  const int64_t ox = floorDiv2(in.width - width);
  const int64_t x0 = std::max<int64_t>(0, -ox);
  const int64_t x1 = std::min(width, in.width - ox);
  if (x1 <= x0)
    return out;
  for (int64_t y = 0; y < height; ++y) {
    const int64_t sy = y + oy;
    if (sy < 0 || sy >= in.height)
      continue;
    std::copy_n(in.rgb.data() + size_t((sy * in.width + x0 + ox) * 3),
                size_t((x1 - x0) * 3),
                out.rgb.data() + size_t((y * width + x0) * 3));
  }
  return out;
}

} // namespace etllm::rt::image
