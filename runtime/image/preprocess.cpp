//===- preprocess.cpp - An image processor's steps
//-------------------------===//
//
// transformers' PilBackend._preprocess: resize (PIL), center_crop, rescale
// (uint8 -> float64 times the factor -> float32), normalize ((x - mean) /
// std in float32), channels first.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/image/preprocess.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace etllm::rt::image {
namespace {

using json = nlohmann::json;

/// Limits on what a config may ask for: 16384 a side, and an output of
/// at most 16 Mpx (192 MiB of float pixels; vision encoders take 1 Mpx or
/// less), checked before anything is allocated.
constexpr int64_t kMaxSide = 16384;
constexpr int64_t kMaxOutputPixels = int64_t(16) << 20;
/// Tiles of one image (Idefics3's splitting: 4096 / 512 = 8 a side).
constexpr int64_t kMaxTiles = 256;

/// `img`'s bytes as float32 channels-first, rescaled and normalized.
void toChw(const Image &img, const PreprocessConfig &config,
           std::vector<float> &chw) {
  const int64_t n = img.height * img.width;
  chw.resize(size_t(3 * n));
  for (int c = 0; c < 3; ++c)
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t u = img.rgb[size_t(i * 3 + c)];
      float v =
          config.doRescale ? float(double(u) * config.rescaleFactor) : float(u);
      if (config.doNormalize)
        v = (v - config.mean[c]) / config.std[c];
      chw[size_t(c * n + i)] = v;
    }
}

/// Rows [y, y + h) and columns [x, x + w) of `img`.
Image crop(const Image &img, int64_t x, int64_t y, int64_t w, int64_t h) {
  Image out;
  out.width = w;
  out.height = h;
  out.rgb.resize(size_t(w * h * 3));
  for (int64_t r = 0; r < h; ++r)
    std::copy_n(img.rgb.begin() + size_t(((y + r) * img.width + x) * 3),
                size_t(w * 3), out.rgb.begin() + size_t(r * w * 3));
  return out;
}

Status checkArea(int64_t h, int64_t w, const std::string &what) {
  if (h * w > kMaxOutputPixels)
    return Error(what + " is " + std::to_string(w) + " x " + std::to_string(h) +
                 " pixels, more than the limit of " +
                 std::to_string(kMaxOutputPixels) + " pixels");
  return Status();
}

/// `src` resized to w x h after the limits: the output's area, and the
/// intermediate image bounded as if the horizontal pass ran first (an
/// 8-bit image of the new width and the old height), whichever order resize
/// takes: at 4 times the output's pixels (192 MiB).
Status boundedResize(const Image &src, int64_t w, int64_t h, Resample filter,
                     Image &out) {
  ETLLM_RETURN_IF_ERROR(checkArea(h, w, "preprocess: the resized image"));
  if (w * src.height > 4 * kMaxOutputPixels)
    return Error("preprocess: resizing the " + std::to_string(src.width) +
                 " x " + std::to_string(src.height) + " image to " +
                 std::to_string(w) + " x " + std::to_string(h) +
                 " needs more than the limit of " +
                 std::to_string(4 * kMaxOutputPixels) + " intermediate pixels");
  out = resize(src, w, h, filter);
  return Status();
}

Status sideValue(const json &v, const std::string &where, int64_t &out) {
  if (!v.is_number_integer() || v.get<int64_t>() < 1 ||
      v.get<int64_t>() > kMaxSide)
    return Error(where + " must be an integer in [1, " +
                 std::to_string(kMaxSide) + "], not " + v.dump());
  out = v.get<int64_t>();
  return Status();
}

/// `obj`'s height and width (where: the key, for errors).
Status heightWidth(const json &obj, const std::string &where, int64_t &h,
                   int64_t &w) {
  ETLLM_RETURN_IF_ERROR(sideValue(obj["height"], where + ".height", h));
  ETLLM_RETURN_IF_ERROR(sideValue(obj["width"], where + ".width", w));
  return checkArea(h, w, where);
}

Status boolValue(const json &cfg, const char *key, const std::string &name,
                 bool &out) {
  if (!cfg.contains(key))
    return Status();
  if (!cfg[key].is_boolean())
    return Error(name + ": " + key + " must be true or false, not " +
                 cfg[key].dump());
  out = cfg[key].get<bool>();
  return Status();
}

Status triple(const json &cfg, const char *key, const std::string &name,
              bool positive, float (&out)[3]) {
  if (!cfg.contains(key))
    return Status();
  const json &v = cfg[key];
  if (v.is_number()) {
    out[0] = out[1] = out[2] = v.get<float>();
  } else if (v.is_array() && v.size() == 3 && v[0].is_number() &&
             v[1].is_number() && v[2].is_number()) {
    for (int i = 0; i < 3; ++i)
      out[i] = v[size_t(i)].get<float>();
  } else {
    return Error(name + ": " + key + " must be a number or 3 numbers, not " +
                 v.dump());
  }
  for (float f : out)
    if (!std::isfinite(f) || (positive && !(f > 0.0f)))
      return Error(name + ": " + key + " must hold finite" +
                   (positive ? " positive" : "") + " numbers, not " + v.dump());
  return Status();
}

} // namespace

Status parsePreprocessorConfig(const std::string &text, const std::string &name,
                               PreprocessConfig &out) {
  json cfg = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded() || !cfg.is_object())
    return Error(name + ": not a JSON object");
  PreprocessConfig c;
  ETLLM_RETURN_IF_ERROR(boolValue(cfg, "do_resize", name, c.doResize));
  ETLLM_RETURN_IF_ERROR(boolValue(cfg, "do_center_crop", name, c.doCenterCrop));
  ETLLM_RETURN_IF_ERROR(boolValue(cfg, "do_rescale", name, c.doRescale));
  ETLLM_RETURN_IF_ERROR(boolValue(cfg, "do_normalize", name, c.doNormalize));
  {
    bool on = false;
    ETLLM_RETURN_IF_ERROR(boolValue(cfg, "do_pan_and_scan", name, on));
    if (on)
      return Error(name + ": do_pan_and_scan true is not supported");
  }
  ETLLM_RETURN_IF_ERROR(
      boolValue(cfg, "do_image_splitting", name, c.doImageSplitting));
  if (c.doResize) {
    if (!cfg.contains("size") || !cfg["size"].is_object())
      return Error(name + ": do_resize needs a size object");
    const json &size = cfg["size"];
    const bool shortest =
        size.contains("shortest_edge") && !size["shortest_edge"].is_null();
    const bool longest =
        size.contains("longest_edge") && !size["longest_edge"].is_null();
    if (longest) {
      // Idefics3's / SmolVLM's processor: size.longest_edge, then
      // max_image_size.longest_edge (image splitting is refused above).
      const json *mx = cfg.contains("max_image_size") &&
                               cfg["max_image_size"].is_object() &&
                               cfg["max_image_size"].contains("longest_edge")
                           ? &cfg["max_image_size"]["longest_edge"]
                           : nullptr;
      if (!mx)
        return Error(name + ": size.longest_edge " +
                     size["longest_edge"].dump() +
                     " needs max_image_size.longest_edge (Idefics3's and "
                     "SmolVLM's processor)");
      ETLLM_RETURN_IF_ERROR(sideValue(size["longest_edge"],
                                      name + ": size.longest_edge",
                                      c.longestEdge));
      ETLLM_RETURN_IF_ERROR(sideValue(*mx, name + ": max_image_size.longest_edge",
                                      c.squareSide));
      ETLLM_RETURN_IF_ERROR(checkArea(c.squareSide, c.squareSide,
                                      name + ": max_image_size"));
    } else if (shortest) {
      ETLLM_RETURN_IF_ERROR(sideValue(size["shortest_edge"],
                                      name + ": size.shortest_edge",
                                      c.shortestEdge));
    } else if (size.contains("height") && size.contains("width")) {
      ETLLM_RETURN_IF_ERROR(
          heightWidth(size, name + ": size", c.resizeHeight, c.resizeWidth));
    } else {
      return Error(name + ": size " + size.dump() +
                   " needs shortest_edge, or height and width");
    }
    if (cfg.contains("resample")) {
      if (!cfg["resample"].is_number_integer())
        return Error(name + ": resample must be an integer, not " +
                     cfg["resample"].dump());
      Status st = resampleFromPil(cfg["resample"].get<int64_t>(), c.resample);
      if (!st.ok())
        return Error(name + ": " + st.message());
    }
  }
  if (c.doImageSplitting && (!c.doResize || c.longestEdge == 0))
    return Error(name + ": do_image_splitting needs size.longest_edge and "
                        "max_image_size.longest_edge (Idefics3's and "
                        "SmolVLM's processor)");
  if (c.doImageSplitting) {
    // The tiles an image gives: the longest-edge resize leaves each side at
    // most min(longest_edge, 4096) + 1 (rounded up to even).
    const int64_t longest = std::min<int64_t>(c.longestEdge, 4096) + 1;
    const int64_t perSide = (longest + c.squareSide - 1) / c.squareSide;
    if (perSide * perSide > kMaxTiles)
      return Error(name + ": max_image_size.longest_edge " +
                   std::to_string(c.squareSide) + " splits an image into up "
                   "to " + std::to_string(perSide * perSide) +
                   " tiles, more than the limit of " +
                   std::to_string(kMaxTiles));
  }
  if (c.doCenterCrop) {
    if (!cfg.contains("crop_size"))
      return Error(name + ": do_center_crop needs crop_size");
    const json &crop = cfg["crop_size"];
    if (crop.is_number_integer()) {
      ETLLM_RETURN_IF_ERROR(
          sideValue(crop, name + ": crop_size", c.cropHeight));
      c.cropWidth = c.cropHeight;
    } else if (crop.is_object() && crop.contains("height") &&
               crop.contains("width")) {
      ETLLM_RETURN_IF_ERROR(
          heightWidth(crop, name + ": crop_size", c.cropHeight, c.cropWidth));
    } else {
      return Error(name + ": crop_size " + crop.dump() +
                   " needs height and width");
    }
  }
  if (c.doRescale && cfg.contains("rescale_factor")) {
    const json &f = cfg["rescale_factor"];
    if (!f.is_number() || !std::isfinite(f.get<double>()) ||
        !(f.get<double>() > 0.0))
      return Error(name +
                   ": rescale_factor must be a finite positive number, "
                   "not " +
                   f.dump());
    c.rescaleFactor = f.get<double>();
  }
  if (c.doNormalize) {
    ETLLM_RETURN_IF_ERROR(triple(cfg, "image_mean", name, false, c.mean));
    ETLLM_RETURN_IF_ERROR(triple(cfg, "image_std", name, true, c.std));
  }
  out = c;
  return Status();
}

Status preprocess(const Image &img, const PreprocessConfig &config,
                  Pixels &out) {
  if (img.width < 1 || img.height < 1 ||
      img.rgb.size() != size_t(img.width * img.height * 3))
    return Error("preprocess: an empty or inconsistent image");
  // The image as each step leaves it (no copy where a step is skipped).
  const Image *cur = &img;
  Image resized, cropped;
  Image longest;
  if (config.doResize && config.longestEdge > 0) {
    // Idefics3ImageProcessor.resize with size.longest_edge:
    // _resize_output_size_rescale_to_max_len (the other side int(L / aspect)
    // or int(L * aspect), rounded up to even), then
    // _resize_output_size_scale_below_upper_bound (MAX_IMAGE_SIZE 4096).
    const int64_t L = config.longestEdge;
    double aspect = double(img.width) / double(img.height);
    int64_t h, w;
    if (img.width >= img.height) {
      w = L;
      h = int64_t(double(w) / aspect);
      h += h % 2;
    } else {
      h = L;
      w = int64_t(double(h) * aspect);
      w += w % 2;
    }
    h = std::max<int64_t>(h, 1);
    w = std::max<int64_t>(w, 1);
    constexpr int64_t kMaxImageSize = 4096;
    aspect = double(w) / double(h);
    if (w >= h && w > kMaxImageSize) {
      w = kMaxImageSize;
      h = int64_t(double(w) / aspect);
    } else if (h > w && h > kMaxImageSize) {
      h = kMaxImageSize;
      w = int64_t(double(h) * aspect);
    }
    h = std::max<int64_t>(h, 1);
    w = std::max<int64_t>(w, 1);
    ETLLM_RETURN_IF_ERROR(boundedResize(img, w, h, config.resample, longest));
    cur = &longest;
  }
  if (config.doImageSplitting) {
    // Idefics3ImageProcessor: resize_for_vision_encoder (each side up to a
    // multiple of M, the other in proportion), split_images (tiles of M
    // and, when more than one, the whole resized to M x M as the global).
    const int64_t M = config.squareSide;
    const Image &src = *cur;
    const double aspect = double(src.width) / double(src.height);
    int64_t h, w;
    if (src.width >= src.height) {
      w = (src.width + M - 1) / M * M;
      h = int64_t(double(w) / aspect);
      h = (h + M - 1) / M * M;
    } else {
      h = (src.height + M - 1) / M * M;
      w = int64_t(double(h) * aspect);
      w = (w + M - 1) / M * M;
    }
    h = std::max(h, M);
    w = std::max(w, M);
    if ((h / M) * (w / M) > kMaxTiles)
      return Error("preprocess: the image splits into " +
                   std::to_string((h / M) * (w / M)) +
                   " tiles, more than the limit of " +
                   std::to_string(kMaxTiles));
    Image grid;
    ETLLM_RETURN_IF_ERROR(boundedResize(src, w, h, config.resample, grid));
    out = Pixels();
    out.height = out.width = M;
    if (h > M || w > M) {
      out.rows = h / M;
      out.cols = w / M;
      for (int64_t r = 0; r < out.rows; ++r)
        for (int64_t c = 0; c < out.cols; ++c) {
          out.tiles.emplace_back();
          toChw(crop(grid, c * M, r * M, M, M), config, out.tiles.back());
        }
      toChw(resize(grid, M, M, config.resample), config, out.chw);
    } else {
      toChw(grid, config, out.chw);
    }
    return Status();
  }
  if (config.doResize) {
    const Image &src = *cur;
    int64_t h = config.resizeHeight, w = config.resizeWidth;
    if (config.squareSide > 0)
      h = w = config.squareSide;
    if (config.shortestEdge > 0) {
      // transformers' get_resize_output_image_size, default_to_square off:
      // the short side to the edge, the long one int(edge * long / short).
      const int64_t shortSide = std::min(src.width, src.height);
      const int64_t longSide = std::max(src.width, src.height);
      const int64_t newShort = config.shortestEdge;
      const int64_t newLong =
          int64_t(double(newShort * longSide) / double(shortSide));
      if (newLong < 1 || newLong > kMaxSide)
        return Error("preprocess: resizing the " + std::to_string(src.width) +
                     " x " + std::to_string(src.height) +
                     " image to a shortest edge of " +
                     std::to_string(newShort) + " gives a side of " +
                     std::to_string(newLong) + " pixels");
      if (src.width <= src.height) {
        w = newShort;
        h = newLong;
      } else {
        h = newShort;
        w = newLong;
      }
    }
    ETLLM_RETURN_IF_ERROR(boundedResize(src, w, h, config.resample, resized));
    cur = &resized;
  }
  if (config.doCenterCrop) {
    cropped = centerCrop(*cur, config.cropWidth, config.cropHeight);
    cur = &cropped;
  }
  out = Pixels();
  out.height = cur->height;
  out.width = cur->width;
  toChw(*cur, config, out.chw);
  return Status();
}

Status loadForModel(const std::string &path, const std::string &configText,
                    const std::string &configName, Pixels &out,
                    const DecodeLimits &limits) {
  PreprocessConfig config;
  ETLLM_RETURN_IF_ERROR(parsePreprocessorConfig(configText, configName, config));
  Image img;
  ETLLM_RETURN_IF_ERROR(load(path, img, limits));
  return preprocess(img, config, out);
}

} // namespace etllm::rt::image
