//===- Generator.cpp - Synthetic HF / GGUF checkpoints --------------------===//

#include "etllm/Testing/Generator.h"
#include "etllm/Models/Multimodal.h"
#include "Internal.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/Formats/Safetensors.h"
#include "etllm/Models/Registry.h"
#include "etllm/runtime/half.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sys/stat.h>
#include <tuple>
#include <unordered_set>

namespace etllm::formats {

namespace {

uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string &s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

/// Approximately N(0, 1): the sum of four 16-bit uniforms (Irwin-Hall),
/// centred and scaled to unit variance. One hash per element, no libm.
inline float approxNormal(uint64_t h) {
  constexpr float kScale = 1.7320508f / 65536.0f; // sqrt(3) / 2^16
  float s = static_cast<float>((h & 0xffff) + ((h >> 16) & 0xffff) +
                               ((h >> 32) & 0xffff) + (h >> 48));
  return (s - 2.0f * 65535.0f) * kScale;
}

constexpr float kStd = 0.02f;

struct ValueStream {
  uint64_t seed;
  float scale, offset;
  float at(uint64_t i) const {
    return offset +
           scale * approxNormal(mix64(seed + i * 0x9e3779b97f4a7c15ull));
  }
};

ValueStream streamFor(uint64_t seed, const std::string &name, bool isNorm,
                      bool normAddsOne) {
  ValueStream s;
  s.seed = mix64(seed ^ fnv1a(name));
  s.scale = kStd;
  // A composite model's projector weights as large as unit-variance
  // features need, so the text depends on the image (std 0.02 throughout
  // makes the image features vanish beside the token embeddings).
  if (name.rfind(models::kProjectorPath, 0) == 0 && !isNorm)
    s.scale = 0.25f;
  // A vision tower's LayerNorms scale by w whatever the decoder's norms do.
  if (name.rfind(models::kVisionTowerPath, 0) == 0)
    normAddsOne = false;
  s.offset = isNorm && !normAddsOne ? 1.0f : 0.0f;
  return s;
}

/// Rounds through a 16-bit type so that values match what a file of that
/// dtype holds.
inline float roundTo(DType dtype, float v) {
  if (dtype == DType::F16)
    return rt::halfToFloat(rt::floatToHalf(v));
  if (dtype == DType::BF16)
    return rt::bf16ToFloat(rt::floatToBf16(v));
  return v;
}

const char *torchDtypeName(DType d) {
  switch (d) {
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16";
  default:
    return "float32";
  }
}

/// The synthetic tokenizer of a generated model.
struct VocabLayout {
  models::SyntheticVocab kind = models::SyntheticVocab::SentencePiece;
  bool bpe = false;
  std::string pre; // BPE pre-tokenizer name
  int64_t bos = -1, eos = -1, unk = -1, pad = -1;
  bool gemmaOrder = false; // <pad> <eos> <bos> <unk> first
};

VocabLayout vocabLayout(models::SyntheticVocab kind, int64_t vocab) {
  VocabLayout v;
  v.kind = kind;
  switch (kind) {
  case models::SyntheticVocab::Qwen2Bpe:
    v.bpe = true;
    v.pre = "qwen2";
    v.bos = vocab - 3; // <|endoftext|>
    v.eos = vocab - 1; // <|im_end|>
    v.pad = vocab - 3;
    break;
  case models::SyntheticVocab::Llama3Bpe:
    v.bpe = true;
    v.pre = "llama-bpe";
    v.bos = vocab - 256; // <|begin_of_text|>
    v.eos = vocab - 255; // <|end_of_text|>
    break;
  case models::SyntheticVocab::GemmaSentencePiece:
    v.gemmaOrder = true;
    v.pad = 0;
    v.eos = 1;
    v.bos = 2;
    v.unk = 3;
    break;
  case models::SyntheticVocab::FamilyDefault:
  case models::SyntheticVocab::SentencePiece:
    v.unk = 0;
    v.bos = 1;
    v.eos = 2;
    break;
  }
  return v;
}

int64_t minVocab(const VocabLayout &v) {
  if (v.bpe)
    return 256 + (v.kind == models::SyntheticVocab::Qwen2Bpe ? 3 : 256) + 1;
  return 4 + 256 + 1;
}

/// GPT-2's byte-to-unicode map, as UTF-8 strings.
std::vector<std::string> byteLevelChars() {
  std::vector<int> bs, cs;
  for (int b = 0; b < 256; ++b)
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE))
      bs.push_back(b);
  cs = bs;
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
      bs.push_back(b);
      cs.push_back(256 + n++);
    }
  std::vector<std::string> out(256);
  for (size_t i = 0; i < bs.size(); ++i) {
    int cp = cs[i];
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    out[static_cast<size_t>(bs[i])] = s;
  }
  return out;
}

struct SyntheticVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
};

SyntheticVocab makeVocab(const VocabLayout &layout, int64_t vocab) {
  SyntheticVocab v;
  auto add = [&](std::string s, int32_t type, float score = 0.0f) {
    v.tokens.push_back(std::move(s));
    v.types.push_back(type);
    v.scores.push_back(score);
  };
  if (!layout.bpe) {
    if (layout.gemmaOrder) {
      add("<pad>", 3);
      add("<eos>", 3);
      add("<bos>", 3);
      add("<unk>", 2);
    } else {
      add("<unk>", 2);
      add("<s>", 3);
      add("</s>", 3);
    }
    char buf[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
      add(buf, 6);
    }
    // Bijective base-26 words, alternately with the SentencePiece space.
    for (int64_t k = 1; static_cast<int64_t>(v.tokens.size()) < vocab; ++k) {
      std::string w;
      for (int64_t x = k; x > 0; x = (x - 1) / 26)
        w.insert(w.begin(), static_cast<char>('a' + (x - 1) % 26));
      add((k % 2 ? "\xE2\x96\x81" : "") + w, 1,
          -static_cast<float>(v.tokens.size()));
    }
    return v;
  }
  // Byte-level BPE: 256 byte symbols, then merged tokens, then specials.
  std::vector<std::string> specials;
  if (layout.kind == models::SyntheticVocab::Qwen2Bpe) {
    specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  } else {
    specials = {"<|begin_of_text|>", "<|end_of_text|>"};
    for (int i = 2; i < 256; ++i)
      specials.push_back("<|reserved_special_token_" + std::to_string(i - 2) +
                         "|>");
  }
  std::vector<std::string> chars = byteLevelChars();
  for (const std::string &c : chars)
    add(c, 1);
  int64_t normal = vocab - static_cast<int64_t>(specials.size());
  // Level-wise merges over an alphabet of "Ġ" + a..z.
  std::vector<std::string> alphabet = {chars[' ']};
  for (char c = 'a'; c <= 'z'; ++c)
    alphabet.push_back(std::string(1, c));
  std::vector<std::string> level = alphabet;
  std::unordered_set<std::string> seen(v.tokens.begin(), v.tokens.end());
  while (static_cast<int64_t>(v.tokens.size()) < normal) {
    std::vector<std::string> next;
    for (const std::string &left : level) {
      for (const std::string &right : alphabet) {
        if (static_cast<int64_t>(v.tokens.size()) >= normal)
          break;
        std::string t = left + right;
        if (!seen.insert(t).second)
          continue;
        v.merges.push_back(left + " " + right);
        add(t, 1);
        next.push_back(t);
      }
    }
    level = std::move(next);
  }
  for (const std::string &s : specials)
    add(s, 3);
  v.scores.clear(); // BPE vocabularies carry no scores.
  return v;
}

/// The family of --arch and its preset.
struct Choice {
  const models::FamilySpec *family;
  models::GeneratorPreset preset;
  models::SyntheticVocab vocab;
};

Result<Choice> choose(const std::string &arch, const std::string &preset) {
  const models::FamilySpec *f = models::findById(arch);
  if (!f)
    return Error("unknown --arch '" + arch +
                 "' (supported: " + models::supportedIds() + ")");
  Choice c{f, f->generator.tiny, f->generator.vocab};
  if (preset != c.preset.name) {
    const models::GeneratorPreset *found = nullptr;
    for (const models::GeneratorPreset &p : f->generator.presets)
      if (preset == p.name)
        found = &p;
    if (!found) {
      // Named for messages: which families define it, or every preset.
      std::string owners, names = "tiny";
      for (const models::FamilySpec *other : models::families())
        for (const models::GeneratorPreset &p : other->generator.presets) {
          names += std::string(", ") + p.name;
          if (preset == p.name)
            owners += std::string(owners.empty() ? "" : ", ") + other->id;
        }
      if (!owners.empty())
        return Error("preset " + preset + " is only defined for --arch " +
                     owners);
      return Error("unknown preset '" + preset + "' (supported: " + names +
                   ")");
    }
    c.preset = *found;
  }
  if (c.preset.vocab != models::SyntheticVocab::FamilyDefault)
    c.vocab = c.preset.vocab;
  return c;
}

/// Writes `count` elements of a tensor, generated row by row, through
/// `sink(bytes, n)`. `source(r, c)` is the flat HF index of the element
/// stored at row r, column c; `transform` is applied after dtype rounding.
template <typename Sink, typename Source, typename Transform>
Status streamTensor(const ValueStream &values, int64_t rows, int64_t cols,
                    DType sourceDType, DType fileDType, Source source,
                    Transform transform, Sink sink) {
  int64_t block = dtypeBlockSize(fileDType);
  int64_t blockBytes = dtypeBlockBytes(fileDType);
  int64_t rowsPerChunk =
      std::max<int64_t>(1, (1 << 20) / std::max<int64_t>(cols, 1));
  std::vector<float> f;
  std::vector<uint8_t> bytes;
  for (int64_t r0 = 0; r0 < rows; r0 += rowsPerChunk) {
    int64_t nr = std::min(rowsPerChunk, rows - r0);
    int64_t n = nr * cols;
    f.resize(static_cast<size_t>(n));
    for (int64_t r = 0; r < nr; ++r) {
      float *out = f.data() + r * cols;
      if (sourceDType == fileDType || sourceDType == DType::F32) {
        // encodeFloats rounds to the file dtype; no need to round twice.
        for (int64_t c = 0; c < cols; ++c)
          out[c] = transform(values.at(source(r0 + r, c)));
      } else {
        for (int64_t c = 0; c < cols; ++c)
          out[c] =
              transform(roundTo(sourceDType, values.at(source(r0 + r, c))));
      }
    }
    bytes.resize(static_cast<size_t>(n / block * blockBytes));
    ETLLM_RETURN_IF_ERROR(encodeFloats(fileDType, f.data(), n, bytes.data()));
    ETLLM_RETURN_IF_ERROR(sink(bytes.data(), bytes.size()));
  }
  return Status();
}

Status makeDirectory(const std::string &dir) {
  if (detail::isDirectory(dir))
    return Status();
  if (::mkdir(dir.c_str(), 0755) != 0)
    return Error(dir + ": cannot create directory: " + std::strerror(errno));
  return Status();
}

} // namespace

Status detail::writeTextFile(const std::string &path, const std::string &text) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return Error(path + ": cannot create: " + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok &= std::fclose(f) == 0;
  if (!ok)
    return Error(path + ": write failed");
  return Status();
}

namespace {

Status generateHf(const GeneratorOptions &o, const ModelConfig &c) {
  ETLLM_RETURN_IF_ERROR(makeDirectory(o.output));
  Result<std::string> json = toHfConfigJson(c);
  if (!json)
    return json.error();
  ETLLM_RETURN_IF_ERROR(
      detail::writeTextFile(detail::joinPath(o.output, "config.json"), *json));
  Result<std::vector<ExpectedTensor>> specs = expectedTensors(c);
  if (!specs)
    return specs.error();
  SafetensorsWriter w;
  w.setMetadata("format", "pt");
  // A composite model's tensors under the names its hub checkpoints use.
  const models::MultimodalSpec *mm =
      models::findMultimodalByModelType(c.multimodalType);
  for (const ExpectedTensor &t : *specs)
    ETLLM_RETURN_IF_ERROR(w.addTensor(
        mm ? models::hubTensorName(*mm, t.name) : t.name, o.dtype, t.shape));
  std::string path = detail::joinPath(o.output, "model.safetensors");
  ETLLM_RETURN_IF_ERROR(w.open(path));
  for (const ExpectedTensor &t : *specs) {
    int64_t rows = t.shape[0], cols = 1;
    for (size_t d = 1; d < t.shape.size(); ++d)
      cols *= t.shape[d]; // a patch embedding's [D, 3, P, P]: rows of 3*P*P
    ValueStream vs = streamFor(o.seed, t.name, t.isNorm, c.normAddsOne);
    ETLLM_RETURN_IF_ERROR(streamTensor(
        vs, rows, cols, o.dtype, o.dtype,
        [cols](int64_t r, int64_t c) {
          return static_cast<uint64_t>(r * cols + c);
        },
        [](float v) { return v; },
        [&](const uint8_t *p, size_t n) { return w.write(p, n); }));
  }
  ETLLM_RETURN_IF_ERROR(w.finish());
  if (!c.hasVision())
    return Status();
  const std::string side = std::to_string(c.visionImageSize);
  if (mm && mm->projector == models::VisionProjector::Gemma3)
    return detail::writeTextFile(
        detail::joinPath(o.output, "preprocessor_config.json"),
        "{\n  \"image_processor_type\": \"Gemma3ImageProcessor\",\n"
        "  \"do_resize\": true,\n  \"size\": {\"height\": " +
            side + ", \"width\": " + side +
            "},\n  \"resample\": 2,\n  \"do_rescale\": true,\n"
            "  \"rescale_factor\": 0.00392156862745098,\n"
            "  \"do_normalize\": true,\n"
            "  \"image_mean\": [0.5, 0.5, 0.5],\n"
            "  \"image_std\": [0.5, 0.5, 0.5],\n"
            "  \"do_pan_and_scan\": false,\n"
            "  \"do_convert_rgb\": true\n}\n");
  if (mm && mm->projector == models::VisionProjector::PixelShuffle)
    // SmolVLMImageProcessor's: the longest edge to twice the tower's
    // side, split into tiles of the tower's side (up to 2 x 2) and the
    // global image.
    return detail::writeTextFile(
        detail::joinPath(o.output, "preprocessor_config.json"),
        "{\n  \"image_processor_type\": \"SmolVLMImageProcessor\",\n"
        "  \"do_resize\": true,\n  \"size\": {\"longest_edge\": " +
            std::to_string(2 * c.visionImageSize) +
            "},\n  \"max_image_size\": {\"longest_edge\": " + side +
            "},\n  \"do_image_splitting\": true,\n"
            "  \"resample\": 1,\n  \"do_rescale\": true,\n"
            "  \"rescale_factor\": 0.00392156862745098,\n"
            "  \"do_normalize\": true,\n"
            "  \"image_mean\": [0.5, 0.5, 0.5],\n"
            "  \"image_std\": [0.5, 0.5, 0.5],\n"
            "  \"do_pad\": true,\n  \"do_convert_rgb\": true\n}\n");
  if (c.visionArch == "siglip") // SiglipImageProcessor's
    return detail::writeTextFile(
        detail::joinPath(o.output, "preprocessor_config.json"),
        "{\n  \"image_processor_type\": \"SiglipImageProcessor\",\n"
        "  \"do_resize\": true,\n  \"size\": {\"height\": " +
            side + ", \"width\": " + side +
            "},\n  \"resample\": 3,\n  \"do_rescale\": true,\n"
            "  \"rescale_factor\": 0.00392156862745098,\n"
            "  \"do_normalize\": true,\n"
            "  \"image_mean\": [0.5, 0.5, 0.5],\n"
            "  \"image_std\": [0.5, 0.5, 0.5]\n}\n");
  // CLIPImageProcessor's configuration at the tower's input size.
  return detail::writeTextFile(
      detail::joinPath(o.output, "preprocessor_config.json"),
      "{\n  \"image_processor_type\": \"CLIPImageProcessor\",\n"
      "  \"do_resize\": true,\n  \"size\": {\"shortest_edge\": " +
          side +
          "},\n  \"resample\": 3,\n  \"do_center_crop\": true,\n"
          "  \"crop_size\": {\"height\": " +
          side + ", \"width\": " + side +
          "},\n  \"do_rescale\": true,\n"
          "  \"rescale_factor\": 0.00392156862745098,\n"
          "  \"do_normalize\": true,\n"
          "  \"image_mean\": [0.48145466, 0.4578275, 0.40821073],\n"
          "  \"image_std\": [0.26862954, 0.26130258, 0.27577711],\n"
          "  \"do_convert_rgb\": true\n}\n");
}

/// What llama.cpp's GGUF of the family cannot hold, as an error naming the
/// key and the value: a sliding window its architecture does not read, a
/// family key whose value differs from the one llama.cpp hard-codes, dense
/// layers in an architecture whose loader wants experts in every layer.
Status checkGgufExpressible(const models::FamilySpec &f, const ModelConfig &c) {
  const std::string arch = f.gguf.arch;
  bool window = false;
  for (models::GgufKey k : f.gguf.metadata)
    window |= k == models::GgufKey::SlidingWindow;
  if (f.gguf.readsBack && !window && c.slidingWindow > 0)
    return Error("sliding_window = " + std::to_string(c.slidingWindow) +
                 " cannot be expressed in GGUF '" + arch + "' (llama.cpp's " +
                 arch + " has no sliding window)");
  for (const models::ConfigKey &k : f.hf.keys) {
    if (k.gguf != models::GgufKey::None || !k.ggufImplied)
      continue;
    double v = detail::getField(c, k.field);
    if (v != k.ggufDefault)
      return Error(std::string(k.hf) + " = " +
                   (k.type == models::KeyType::Bool
                        ? std::string(v != 0 ? "true" : "false")
                        : std::to_string(v)) +
                   " cannot be expressed in GGUF '" + arch +
                   "' (llama.cpp assumes " +
                   (k.type == models::KeyType::Bool
                        ? std::string(k.ggufDefault != 0 ? "true" : "false")
                        : std::to_string(k.ggufDefault)) +
                   ")");
  }
  if (f.blocks.mlp == models::MlpBlock::SparseMoe && c.numExperts > 0 &&
      f.moe.layers == models::MoeLayerRule::SparseStep)
    for (int64_t i = 0; i < c.numLayers; ++i)
      if (!c.isMoeLayer(i))
        return Error("mlp_only_layers / decoder_sparse_step: layer " +
                     std::to_string(i) + " is dense, which llama.cpp's '" +
                     arch + "' cannot load (it wants experts in every layer)");
  return Status();
}

/// `namedTokens`: ids whose vocabulary entries become these control
/// tokens (a composite's image tokens; a null name or id -1 is skipped).
Status generateGguf(
    const GeneratorOptions &o, const ModelConfig &c, const Choice &choice,
    const std::vector<std::pair<int64_t, const char *>> &namedTokens = {}) {
  const models::FamilySpec &f = *choice.family;
  if (!f.gguf.arch)
    return Error(c.architecture + " has no GGUF form");
  const std::string arch = f.gguf.arch;
  DType qtype = o.ggufType.value_or(o.dtype);
  if (qtype != DType::F32 && qtype != DType::F16 && qtype != DType::BF16 &&
      qtype != DType::Q8_0 && qtype != DType::Q4_0 && qtype != DType::Q5_0 &&
      qtype != DType::Q5_1 && qtype != DType::Q4_K && qtype != DType::Q5_K &&
      qtype != DType::Q6_K)
    return Error(std::string("--gguf-type ") + dtypeName(qtype) +
                 " is not supported (f32, f16, bf16, q8_0, q4_0, q5_0, "
                 "q5_1, q4_k, q5_k, q6_k)");
  if (f.gguf.dropsLmHead && !c.tieWordEmbeddings)
    return Error("llama.cpp's converter of " + c.architecture +
                 " drops lm_head, so an untied one cannot be written as GGUF");
  ETLLM_RETURN_IF_ERROR(checkGgufExpressible(f, c));
  GgufWriter w;
  auto u32 = [](int64_t v) { return GgufValue::u32(static_cast<uint32_t>(v)); };
  auto f32 = [](double v) { return GgufValue::f32(static_cast<float>(v)); };
  w.set("general.architecture", GgufValue::str(arch));
  w.set("general.type", GgufValue::str("model"));
  w.set("general.name", GgufValue::str("etllm synthetic " + o.arch));
  // The converter writes head_dim's keys when config.json has head_dim.
  bool defaultHeadDim = c.headDim * c.numHeads == c.hiddenSize;
  bool hasHeadDimKey =
      f.hf.headDimKey == models::HeadDimKey::Always ||
      (f.hf.headDimKey == models::HeadDimKey::IfNotDefault && !defaultHeadDim);
  // MLA: the split form (DeepseekV2Model today) or the joint attn_kv_b.
  if (o.ggufKvB != "split" && o.ggufKvB != "joint")
    return Error("--gguf-kv-b '" + o.ggufKvB + "' (split or joint)");
  const bool mla = c.isMla();
  const bool splitKvB = mla && f.gguf.splitsKvB && o.ggufKvB == "split";
  if (!mla && o.ggufKvB != "split")
    return Error("--gguf-kv-b needs a family with multi-head latent "
                 "attention");
  if (c.ropeScaling.type == "yarn" &&
      (c.ropeScaling.mscale != c.ropeScaling.mscaleAllDim ||
       c.ropeScaling.mscaleAllDim == 0))
    // llama.cpp's deepseek2 takes mscale = mscale_all_dim =
    // yarn_log_multiplier / 0.1.
    return Error("rope_scaling yarn with mscale " +
                 std::to_string(c.ropeScaling.mscale) + " and mscale_all_dim " +
                 std::to_string(c.ropeScaling.mscaleAllDim) +
                 " cannot be written as GGUF (llama.cpp's deepseek2 needs "
                 "mscale == mscale_all_dim > 0)");
  for (models::GgufKey key : f.gguf.metadata) {
    using models::GgufKey;
    std::string name = models::ggufKeyHasArchPrefix(key)
                           ? arch + "." + models::ggufKeyName(key)
                           : std::string(models::ggufKeyName(key));
    const models::ConfigKey *familyKey = nullptr;
    for (const models::ConfigKey &k : f.hf.keys)
      if (k.gguf == key)
        familyKey = &k;
    if (familyKey) {
      double v = detail::getField(c, familyKey->field);
      if (familyKey->type == models::KeyType::Bool) {
        // DeepseekV2Model's converter writes expert_weights_norm only when
        // norm_topk_prob is true (llama.cpp reads false without it).
        if (key == GgufKey::ExpertWeightsNorm && v == 0)
          continue;
        w.set(name, GgufValue::boolean(v != 0));
        continue;
      }
      if (familyKey->type == models::KeyType::Choice) {
        size_t i = static_cast<size_t>(v);
        if (i >= familyKey->ggufCodes.size())
          return Error(std::string(familyKey->hf) +
                       " has no GGUF code for its value");
        w.set(name, u32(familyKey->ggufCodes[i]));
        continue;
      }
      if (v == 0)
        v = detail::fallbackValue(c, familyKey->fallback);
      w.set(name, detail::isIntegerKey(*familyKey)
                      ? u32(static_cast<int64_t>(v))
                      : f32(v));
      continue;
    }
    switch (key) {
    case GgufKey::ContextLength:
      w.set(name, u32(c.maxPositionEmbeddings));
      break;
    case GgufKey::EmbeddingLength:
      w.set(name, u32(c.hiddenSize));
      break;
    case GgufKey::BlockCount:
      w.set(name, u32(c.numLayers));
      break;
    case GgufKey::FeedForwardLength:
      w.set(name, u32(c.intermediateSize));
      break;
    case GgufKey::HeadCount:
      w.set(name, u32(c.numHeads));
      break;
    case GgufKey::HeadCountKv:
      // The split MLA form is one (latent) kv head shared by all heads.
      w.set(name, u32(splitKvB ? 1 : c.numKvHeads));
      break;
    case GgufKey::RmsEpsilon:
      w.set(name, f32(c.rmsNormEps));
      break;
    case GgufKey::KeyLength:
    case GgufKey::ValueLength:
      if (mla) {
        // Split: the absorbed MQA view [latent | rope] and the latent;
        // joint: the heads.
        bool k = key == GgufKey::KeyLength;
        w.set(name, u32(splitKvB ? (k ? c.kvLoraRank + c.headDim : c.kvLoraRank)
                                 : (k ? c.qkHeadDim() : c.vHeadDim)));
      } else if (hasHeadDimKey) {
        w.set(name, u32(c.headDim));
      }
      break;
    case GgufKey::KeyLengthMla:
      if (splitKvB)
        w.set(name, u32(c.qkHeadDim()));
      break;
    case GgufKey::ValueLengthMla:
      if (splitKvB)
        w.set(name, u32(c.vHeadDim));
      break;
    case GgufKey::ExpertGatingFunc:
      if (f.gguf.identityKey == key)
        w.set(name, u32(f.gguf.identityValue));
      break;
    case GgufKey::RopeScalingYarnLogMul:
      if (c.ropeScaling.type == "yarn")
        w.set(name, f32(0.1 * c.ropeScaling.mscaleAllDim));
      break;
    case GgufKey::SlidingWindow:
      w.set(name, u32(c.slidingWindow));
      break;
    case GgufKey::RopeFreqBase:
      w.set(name, f32(c.ropeTheta));
      break;
    case GgufKey::RopeDimensionCount:
      w.set(name, u32(c.rotaryDim()));
      break;
    case GgufKey::RopeScalingLinear:
      if (c.ropeScaling.type == "linear") {
        w.set(name, GgufValue::str("linear"));
        w.set(arch + "." + models::ggufKeyName(GgufKey::RopeScalingFactor),
              f32(c.ropeScaling.factor));
      } else if (c.ropeScaling.type == "yarn") {
        // TextModel.set_gguf_parameters: type, factor, original context,
        // then the betas.
        auto archKey = [&](GgufKey k) {
          return arch + "." + models::ggufKeyName(k);
        };
        w.set(name, GgufValue::str("yarn"));
        w.set(archKey(GgufKey::RopeScalingFactor), f32(c.ropeScaling.factor));
        w.set(archKey(GgufKey::RopeOriginalContext),
              u32(c.ropeScaling.originalMaxPositionEmbeddings));
        w.set(archKey(GgufKey::RopeScalingYarnBetaFast),
              f32(c.ropeScaling.betaFast));
        w.set(archKey(GgufKey::RopeScalingYarnBetaSlow),
              f32(c.ropeScaling.betaSlow));
      }
      break;
    case GgufKey::VocabSize:
      w.set(name, u32(c.vocabSize));
      break;
    case GgufKey::FileType:
      w.set(name, u32(detail::ggufFileType(qtype)));
      break;
    case GgufKey::ExpertCount:
    case GgufKey::ExpertUsedCount:
    case GgufKey::ExpertFeedForwardLength:
    case GgufKey::ExpertSharedFeedForwardLength:
    case GgufKey::ExpertSharedCount:
    case GgufKey::ExpertWeightsScale:
    case GgufKey::ExpertWeightsNorm:
    case GgufKey::ExpertGroupCount:
    case GgufKey::ExpertGroupUsedCount:
    case GgufKey::LeadingDenseBlockCount:
    case GgufKey::None:
    case GgufKey::RopeScalingFactor:
    case GgufKey::RopeScaleLinear:
    case GgufKey::RopeOriginalContext:
    case GgufKey::AttnLogitSoftcapping:
    case GgufKey::FinalLogitSoftcapping:
    case GgufKey::AttentionScale:
    case GgufKey::EmbeddingScale:
    case GgufKey::ResidualScale:
    case GgufKey::LogitScale:
    case GgufKey::QLoraRank:
    case GgufKey::KvLoraRank:
    case GgufKey::RopeScalingYarnBetaFast:
    case GgufKey::RopeScalingYarnBetaSlow:
      // Written with their family key above, or never by the converter.
      break;
    }
  }
  w.set("general.quantization_version", GgufValue::u32(2));

  VocabLayout layout = vocabLayout(choice.vocab, c.vocabSize);
  SyntheticVocab vocab = makeVocab(layout, c.vocabSize);
  for (auto [id, name] : namedTokens)
    if (name && id >= 0 && id < int64_t(vocab.tokens.size())) {
      vocab.tokens[size_t(id)] = name;
      vocab.types[size_t(id)] = 3; // control
    }
  w.set("tokenizer.ggml.model", GgufValue::str(layout.bpe ? "gpt2" : "llama"));
  w.set("tokenizer.ggml.pre",
        GgufValue::str(layout.bpe ? layout.pre : "default"));
  w.set("tokenizer.ggml.tokens", GgufValue::strings(vocab.tokens));
  if (!layout.bpe)
    w.set("tokenizer.ggml.scores", GgufValue::floats(vocab.scores));
  w.set("tokenizer.ggml.token_type", GgufValue::int32s(vocab.types));
  if (layout.bpe)
    w.set("tokenizer.ggml.merges", GgufValue::strings(vocab.merges));
  if (c.bosTokenId >= 0)
    w.set("tokenizer.ggml.bos_token_id", u32(c.bosTokenId));
  if (c.primaryEosTokenId() >= 0)
    w.set("tokenizer.ggml.eos_token_id", u32(c.primaryEosTokenId()));
  if (layout.unk >= 0)
    w.set("tokenizer.ggml.unknown_token_id", u32(layout.unk));
  if (c.padTokenId >= 0)
    w.set("tokenizer.ggml.padding_token_id", u32(c.padTokenId));
  w.set("tokenizer.ggml.add_bos_token",
        GgufValue::boolean(layout.kind != models::SyntheticVocab::Qwen2Bpe));
  w.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(false));
  if (layout.gemmaOrder)
    w.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));

  // Tensors, in the converter's order: extra tensors first, then the model's.
  std::vector<float> ropeFreqs;
  if (c.ropeScaling.type == "llama3") {
    ropeFreqs = llama3RopeFreqFactors(c, 8192);
    ETLLM_RETURN_IF_ERROR(w.addTensor(
        std::string(models::ggufTensorName(models::GgufTensor::RopeFreqs)) +
            ".weight",
        DType::F32, {static_cast<int64_t>(ropeFreqs.size())}));
  }
  Result<std::vector<ExpectedTensor>> specs = expectedTensors(c);
  if (!specs)
    return specs.error();
  // How a GGUF tensor holds its HF tensors: one as is (rows possibly
  // permuted), every routed expert's projection of a layer stacked
  // (blk.N.ffn_gate_exps [E, F, hidden]), or one half of an MLA kv_b_proj
  // split per head (DeepseekV2Model).
  enum class Part { Whole, KeyHalf, ValueHalf };
  struct Planned {
    std::vector<const ExpectedTensor *> specs;
    std::string name;
    DType dtype;
    int64_t permuteHeads;
    Part part = Part::Whole;
    std::vector<int64_t> shape; // in the file (PyTorch order)
  };
  // llama.cpp's converter keeps the routers in F32 (ffn_gate_inp,
  // ffn_gate_inp_shexp), as every 1-D tensor.
  const std::string routerName =
      std::string(".") + models::ggufTensorName(models::GgufTensor::FfnGateInp);
  auto fileType = [&](const std::vector<int64_t> &shape,
                      const std::string &name) {
    DType d = DType::F32;
    if (shape.size() >= 2 && name.find(routerName) == std::string::npos) {
      d = qtype;
      // Rows that are not whole super-blocks take llama.cpp's fallbacks
      // (llama-quant.cpp), rows that fit no block F16.
      if (shape.back() % dtypeBlockSize(d) != 0)
        d = d == DType::Q4_K   ? DType::Q5_0
            : d == DType::Q5_K ? DType::Q5_1
            : d == DType::Q6_K ? DType::Q8_0
                               : d;
      if (shape.back() % dtypeBlockSize(d) != 0)
        d = DType::F16;
    }
    return d;
  };
  std::vector<Planned> plan;
  const std::string kvB =
      std::string(".") +
      f.hfNames[static_cast<size_t>(models::HfModule::KvBProj)] + ".weight";
  for (const ExpectedTensor &t : *specs) {
    int64_t expert = -1;
    std::string g = detail::hfNameToGguf(f, t.name, &expert);
    if (g.empty())
      return Error("no GGUF name for tensor '" + t.name + "'");
    if (expert > 0) {
      Planned *stack = nullptr;
      for (Planned &pl : plan)
        if (pl.name == g)
          stack = &pl;
      if (!stack || static_cast<int64_t>(stack->specs.size()) != expert ||
          stack->specs.front()->shape != t.shape)
        return Error("expert tensor '" + t.name + "' does not continue " + g);
      stack->specs.push_back(&t);
      continue;
    }
    if (splitKvB && t.name.size() > kvB.size() &&
        t.name.compare(t.name.size() - kvB.size(), kvB.size(), kvB) == 0) {
      // blk.N.attn_kv_b.weight -> blk.N.attn_k_b.weight, blk.N.attn_v_b...
      std::string blk = g.substr(
          0, g.find(models::ggufTensorName(models::GgufTensor::AttnKvB)));
      std::vector<int64_t> kShape = {c.numHeads, c.kvLoraRank, c.qkNopeHeadDim};
      std::vector<int64_t> vShape = {c.numHeads, c.vHeadDim, c.kvLoraRank};
      for (auto [part, tensor, shape] :
           {std::tuple{Part::KeyHalf, models::GgufTensor::AttnKB, kShape},
            std::tuple{Part::ValueHalf, models::GgufTensor::AttnVB, vShape}}) {
        std::string name = blk + models::ggufTensorName(tensor) + ".weight";
        plan.push_back({{&t}, name, fileType(shape, name), 0, part, shape});
      }
      continue;
    }
    DType d = fileType(t.shape, g);
    int64_t heads = 0;
    if (f.gguf.permutesQk) {
      auto is = [&](models::HfModule m) {
        return t.name.find(f.hfNames[static_cast<size_t>(m)] +
                           std::string(".")) != std::string::npos;
      };
      if (is(models::HfModule::QProj))
        heads = c.numHeads;
      else if (is(models::HfModule::KProj))
        heads = c.numKvHeads;
    }
    plan.push_back({{&t}, g, d, heads, Part::Whole, t.shape});
  }
  for (const Planned &pl : plan) {
    std::vector<int64_t> shape = pl.shape;
    if (pl.part == Part::Whole && detail::ggufNameToHf(f, pl.name, 0) != "")
      shape.insert(shape.begin(), static_cast<int64_t>(pl.specs.size()));
    ETLLM_RETURN_IF_ERROR(w.addTensor(pl.name, pl.dtype, shape));
  }
  ETLLM_RETURN_IF_ERROR(w.open(o.output));
  if (!ropeFreqs.empty())
    ETLLM_RETURN_IF_ERROR(w.write(ropeFreqs.data(), ropeFreqs.size() * 4));
  for (const Planned &pl : plan) {
    // One expert's tensor at a time (a stack holds them in order).
    for (const ExpectedTensor *spec : pl.specs) {
      const ExpectedTensor &t = *spec;
      int64_t cols = pl.shape.size() > 1 ? pl.shape.back() : 1;
      int64_t rows = 1;
      for (size_t i = 0; i + 1 < pl.shape.size(); ++i)
        rows *= pl.shape[i];
      if (pl.shape.size() == 1)
        rows = pl.shape[0];
      int64_t perHead = pl.permuteHeads > 0 ? rows / pl.permuteHeads : 0;
      const int64_t hfCols = t.shape.size() > 1 ? t.shape[1] : 1;
      const int64_t nope = c.qkNopeHeadDim, kvl = c.kvLoraRank,
                    head = c.qkNopeHeadDim + c.vHeadDim;
      // GGUF element (r, col) holds this HF element: the converter's
      // permute of q/k rows, or its split of kv_b_proj (k_b transposed per
      // head).
      auto source = [&](int64_t r, int64_t col) -> uint64_t {
        int64_t hfRow = r, hfCol = col;
        switch (pl.part) {
        case Part::Whole:
          if (perHead > 0) {
            int64_t h = r / perHead, within = r % perHead;
            hfRow = h * perHead + (within % 2) * (perHead / 2) + within / 2;
          }
          break;
        case Part::KeyHalf: // row (h, latent c), column qk_nope i
          hfRow = (r / kvl) * head + col;
          hfCol = r % kvl;
          break;
        case Part::ValueHalf: // row (h, v j), column latent
          hfRow = (r / c.vHeadDim) * head + nope + r % c.vHeadDim;
          break;
        }
        return static_cast<uint64_t>(hfRow) * static_cast<uint64_t>(hfCols) +
               static_cast<uint64_t>(hfCol);
      };
      bool addOne = c.normAddsOne && t.isNorm;
      ValueStream vs = streamFor(o.seed, t.name, t.isNorm, c.normAddsOne);
      ETLLM_RETURN_IF_ERROR(streamTensor(
          vs, rows, cols, o.dtype, pl.dtype, source,
          [addOne](float v) { return addOne ? v + 1.0f : v; },
          [&](const uint8_t *p, size_t n) { return w.write(p, n); }));
    }
  }
  return w.finish();
}

} // namespace

float generatorValue(uint64_t seed, const std::string &hfName, bool isNorm,
                     bool normAddsOne, uint64_t index) {
  return streamFor(seed, hfName, isNorm, normAddsOne).at(index);
}

/// The vision tower and projector of a composite model (`--arch llava`):
/// the preset's CLIP ViT, LLaVA-1.5's feature layer (-2) and strategy (no
/// class token), the image token the last of the vocabulary.
Status setVision(const models::MultimodalSpec &mm, const std::string &preset,
                 ModelConfig &c) {
  struct Tower {
    const char *name, *arch;
    int64_t hidden, ffn, layers, heads, image, patch;
    int64_t shuffle = 2; // SmolVLM's pixel-shuffle scale
  };
  static const Tower kTowers[] = {
      {"tiny", "clip", 32, 64, 3, 4, 32, 8},
      {"clip-vit-b16", "clip", 768, 3072, 12, 12, 224, 16},
      {"clip-vit-l14-336", "clip", 1024, 4096, 24, 16, 336, 14},
      // LLaVA-Interleave's kind: a SigLIP tower, its last layer, every
      // feature (vision_feature_layer -1, strategy full).
      {"siglip-tiny", "siglip", 32, 64, 3, 4, 32, 8},
      // Gemma 3's kind: 8 x 8 patches, pooled to 16 features; SmolVLM's:
      // the same, pixel-shuffled 2 x 2 to 16 features.
      {"gemma3-tiny", "siglip", 32, 64, 3, 4, 32, 4},
      {"smolvlm-tiny", "siglip", 32, 64, 3, 4, 32, 4},
      // SmolVLM-256M's tower (SigLIP base, patch 16, at 512): 32 x 32
      // patches, pixel-shuffled 4 x 4 to 64 features.
      {"smolvlm-256m", "siglip", 768, 3072, 12, 12, 512, 16, 4},
  };
  const Tower *t = nullptr;
  std::string names;
  for (const Tower &k : kTowers) {
    names += (names.empty() ? "" : ", ") + std::string(k.name);
    if (preset == k.name)
      t = &k;
  }
  if (!t)
    return Error("unknown --vision-preset '" + preset + "' (supported: " +
                 names + ")");
  if (mm.projector != models::VisionProjector::LlavaMlp &&
      std::string(t->arch) != "siglip")
    return Error("--vision-preset '" + preset + "': " + mm.hfArchitecture +
                 " has a SigLIP tower (gemma3-tiny, smolvlm-tiny, "
                 "smolvlm-256m, siglip-tiny)");
  c.multimodalType = mm.modelType;
  c.visionArch = t->arch;
  c.visionHiddenSize = t->hidden;
  c.visionIntermediateSize = t->ffn;
  c.visionNumLayers = t->layers;
  c.visionNumHeads = t->heads;
  c.visionImageSize = t->image;
  c.visionPatchSize = t->patch;
  const bool clip = c.visionArch == "clip";
  c.visionLayerNormEps = clip ? 1e-5 : 1e-6;
  c.visionHiddenAct = clip ? "quick_gelu" : "gelu_pytorch_tanh";
  c.visionLayersUsed = clip ? t->layers - 1 : t->layers;
  c.visionDropClassToken = clip;
  c.projectorHiddenAct = "gelu";
  c.projectorBias = true;
  c.imageTokenId = c.vocabSize - 1;
  detail::applyCompositeTraits(mm, c);
  if (mm.projector == models::VisionProjector::Gemma3) {
    // Gemma 3: pooled 2 x 2 (the tiny tower's 8 x 8 patches to 16
    // features), the image wrapped in boi/eoi tokens just below the image
    // token, and a sliding window shorter than an image's positions so
    // that the sliding layers' mask inside an image matters.
    c.visionPool = 2;
    c.imageBeginTokenId = c.vocabSize - 3;
    c.imageEndTokenId = c.vocabSize - 2;
    c.slidingWindow = 8;
  }
  if (mm.projector == models::VisionProjector::PixelShuffle)
    c.visionPixelShuffle = t->shuffle;
  ETLLM_RETURN_IF_ERROR(detail::validateVision(c));
  c.imageSeqLen = c.visionFeatures();
  return Status();
}

/// The decoder family of --arch: a composite's is its text model's.
std::string textArch(const std::string &arch) {
  if (auto *mm = models::findMultimodalByGeneratorArch(arch))
    if (const models::FamilySpec *f = models::findByModelType(mm->textModelType))
      return f->id;
  return arch;
}

Result<ModelConfig> generatorConfig(const GeneratorOptions &o) {
  Result<Choice> choice = choose(textArch(o.arch), o.preset);
  if (!choice)
    return choice.error();
  const models::FamilySpec &f = *choice->family;
  const models::GeneratorPreset &p = choice->preset;
  if (o.dtype != DType::F32 && o.dtype != DType::F16 && o.dtype != DType::BF16)
    return Error(std::string("--dtype ") + dtypeName(o.dtype) +
                 " is not supported (f32, f16, bf16)");
  ModelConfig c;
  c.architecture = f.hfArchitecture;
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(c));
  bool defaultHeadDim = p.headDim * p.heads == p.hidden;
  c.hiddenSize = o.hidden.value_or(p.hidden);
  c.numLayers = o.layers.value_or(p.layers);
  c.numHeads = o.heads.value_or(p.heads);
  c.numKvHeads = o.kvHeads.value_or(std::min(p.kvHeads, c.numHeads));
  if (o.headDim)
    c.headDim = *o.headDim;
  else if (defaultHeadDim && c.numHeads > 0)
    c.headDim = c.hiddenSize / c.numHeads;
  else
    c.headDim = p.headDim;
  c.intermediateSize = o.ffn.value_or(p.ffn);
  c.vocabSize = o.vocab.value_or(p.vocabSize);
  c.maxPositionEmbeddings = o.maxSeq.value_or(p.maxSeq);
  c.rmsNormEps = p.rmsEps;
  c.ropeTheta = p.ropeTheta;
  c.tieWordEmbeddings = o.tied.value_or(p.tied);
  c.hiddenAct = f.hf.hiddenAct;
  c.attentionBias = f.hf.bias == models::BiasRule::QkvOnly;
  c.torchDtype = torchDtypeName(o.dtype);
  if (c.numLayers <= 0 || c.numLayers > detail::kMaxConfigDim)
    return Error("--layers must be positive");
  c.layerUsesSlidingWindow.assign(static_cast<size_t>(c.numLayers), false);
  if (p.slidingWindow > 0) {
    c.slidingWindow = p.slidingWindow;
    detail::applyGgufSlidingPattern(c, f);
  }
  // The family's own keys: the value both formats agree on.
  detail::applyMoeDefaults(c, f);
  for (const models::ConfigKey &key : f.hf.keys) {
    if (key.type == models::KeyType::IntList)
      continue;
    double v = key.gguf != models::GgufKey::None ? key.hfDefault
               : key.ggufImplied                 ? key.ggufDefault
                                                 : 0;
    if (v == 0 && key.type == models::KeyType::Number)
      v = detail::fallbackValue(c, key.fallback);
    detail::setField(c, key.field, v);
  }
  if (f.blocks.mlp == models::MlpBlock::SparseMoe) {
    auto set = [](int64_t &field, std::optional<int64_t> opt, int64_t preset) {
      if (opt)
        field = *opt;
      else if (preset > 0)
        field = preset;
    };
    set(c.numExperts, o.experts, p.experts);
    set(c.numExpertsPerTok, o.expertsPerTok, p.expertsPerTok);
    set(c.moeIntermediateSize, o.moeFfn, p.moeFfn);
    if (o.sharedFfn && f.moe.sharedExpert == models::SharedExpertKind::Plain)
      return Error("--shared-ffn does not apply to " + c.architecture +
                   " (its shared experts are n_shared_experts * "
                   "moe_intermediate_size wide)");
    set(c.sharedExpertIntermediateSize, o.sharedFfn, p.sharedFfn);
    set(c.numExpertGroups, std::nullopt, p.expertGroups);
    set(c.topkGroup, std::nullopt, p.topkGroup);
  } else if (o.experts || o.expertsPerTok || o.moeFfn || o.sharedFfn) {
    return Error("--experts, --experts-per-tok, --moe-ffn and --shared-ffn "
                 "need a mixture-of-experts --arch");
  }
  if (f.blocks.attention == models::AttentionBlock::Mla) {
    // headDim is qk_rope_head_dim; every query head has its kv head.
    c.headDim = o.headDim.value_or(p.headDim);
    c.numKvHeads = o.kvHeads.value_or(c.numHeads);
    c.qLoraRank = o.qLoraRank.value_or(p.qLoraRank);
    c.kvLoraRank = o.kvLoraRank.value_or(p.kvLoraRank);
    c.qkNopeHeadDim = p.qkNopeHeadDim;
    c.vHeadDim = p.vHeadDim;
    // A family with MoE layers leaves the first one dense (DeepSeek-V2-Lite
    // has first_k_dense_replace 1); one without has only dense layers.
    c.firstKDenseReplace = f.blocks.mlp == models::MlpBlock::SparseMoe
                               ? std::min<int64_t>(1, c.numLayers)
                               : c.numLayers;
    c.numSharedExperts = p.sharedExperts;
    if (f.blocks.mlp != models::MlpBlock::SparseMoe) {
      // Dense layers only: the expert keys carry the preset's values.
      c.numExperts = p.experts;
      c.numExpertsPerTok = p.expertsPerTok;
      c.moeIntermediateSize = p.moeFfn;
    }
  } else if (o.qLoraRank || o.kvLoraRank) {
    return Error("--q-lora-rank and --kv-lora-rank need a family with "
                 "multi-head latent attention");
  }
  if (f.generator.configure)
    f.generator.configure(c);
  detail::applyMoeLayers(c, f);
  std::string rs = o.ropeScaling;
  if (rs.empty())
    rs = p.ropeScaling;
  if (rs == "llama3") {
    c.ropeScaling.type = "llama3";
    c.ropeScaling.factor = 32.0;
    c.ropeScaling.lowFreqFactor = 1.0;
    c.ropeScaling.highFreqFactor = 4.0;
    c.ropeScaling.originalMaxPositionEmbeddings = 8192;
    if (!f.generator.llama3RopeScaling) {
      std::string ids;
      for (const models::FamilySpec *other : models::families())
        if (other->generator.llama3RopeScaling)
          ids += std::string(ids.empty() ? "" : ", ") + other->id;
      return Error("--rope-scaling llama3 needs --arch " + ids);
    }
  } else if (rs.rfind("linear:", 0) == 0) {
    char *end = nullptr;
    double f = std::strtod(rs.c_str() + 7, &end);
    if (!end || *end || !(f > 0))
      return Error("--rope-scaling linear:<factor> needs a positive factor");
    c.ropeScaling.type = "linear";
    c.ropeScaling.factor = f;
  } else if (rs.rfind("yarn:", 0) == 0) {
    if (!f.hf.yarnRopeScaling)
      return Error("--rope-scaling yarn needs a family with YaRN (" +
                   c.architecture + " has none)");
    double v[4];
    const char *p = rs.c_str() + 5;
    for (int i = 0; i < 4; ++i) {
      char *end = nullptr;
      v[i] = std::strtod(p, &end);
      if (end == p || (i < 3 ? *end != ':' : *end != '\0'))
        return Error("--rope-scaling yarn:<factor>:<original context>:"
                     "<mscale>:<mscale_all_dim> needs four numbers, got '" +
                     rs + "'");
      p = end + 1;
    }
    if (!(v[0] > 0) || !(v[1] >= 1) || v[1] != std::floor(v[1]) ||
        !(v[2] >= 0) || !(v[3] >= 0))
      return Error("--rope-scaling '" + rs +
                   "': factor > 0, an integral original context >= 1 and "
                   "non-negative mscales");
    c.ropeScaling.type = "yarn";
    c.ropeScaling.factor = v[0];
    c.ropeScaling.originalMaxPositionEmbeddings = static_cast<int64_t>(v[1]);
    c.ropeScaling.mscale = v[2];
    c.ropeScaling.mscaleAllDim = v[3];
  } else if (!rs.empty() && rs != "none") {
    return Error("unknown --rope-scaling '" + rs +
                 "' (none, llama3, linear:<factor>" +
                 (f.hf.yarnRopeScaling
                      ? ", yarn:<factor>:<original>:<mscale>:<mscale_all_dim>"
                      : "") +
                 ")");
  }
  VocabLayout layout = vocabLayout(choice->vocab, c.vocabSize);
  if (c.vocabSize < minVocab(layout))
    return Error("--vocab " + std::to_string(c.vocabSize) +
                 " is too small for the synthetic tokenizer (minimum " +
                 std::to_string(minVocab(layout)) + ")");
  c.bosTokenId = layout.bos;
  c.eosTokenIds = {layout.eos};
  c.padTokenId = layout.pad;
  Status s = validate(c);
  if (!s.ok())
    return Error("invalid generator configuration: " + s.message());
  if (auto *mm = models::findMultimodalByGeneratorArch(o.arch))
    ETLLM_RETURN_IF_ERROR(setVision(*mm, o.visionPreset, c));
  else if (o.visionPreset != "tiny")
    return Error("--vision-preset needs a composite --arch (" +
                 models::multimodalGeneratorArchs() + ")");
  Result<std::string> json = toHfConfigJson(c);
  if (!json)
    return Error("invalid generator configuration: " + json.message());
  return c;
}

Status generateCheckpoint(const GeneratorOptions &o) {
  if (o.output.empty())
    return Error("no output path given");
  Result<ModelConfig> c = generatorConfig(o);
  if (!c)
    return c.error();
  if (o.format == "hf")
    return generateHf(o, *c);
  if (o.format == "gguf") {
    Result<Choice> choice = choose(textArch(o.arch), o.preset);
    if (!choice)
      return choice.error();
    if (!c->hasVision())
      return generateGguf(o, *c, *choice);
    // A composite's decoder alone (llama.cpp keeps the tower and projector
    // in an mmproj file: scripts/lib/*_mmproj.py write it from the HF
    // form), its vocabulary naming the image's tokens as the model's does.
    const models::MultimodalSpec *mm =
        models::findMultimodalByModelType(c->multimodalType);
    ModelConfig text = *c;
    text.multimodalType.clear();
    std::vector<std::pair<int64_t, const char *>> named = {
        {c->imageTokenId, mm->imageToken},
        {c->imageBeginTokenId, mm->imageBeginToken},
        {c->imageEndTokenId, mm->imageEndToken}};
    // SmolVLM's tokenizer has its image text as added tokens
    // (<fake_token_around_image>, <global-img>, <row_R_col_C> up to 6 x 6),
    // which llama.cpp's mtmd looks up: below the image token.
    static std::vector<std::string> smolvlmTokens = [] {
      std::vector<std::string> t = {"<fake_token_around_image>",
                                    "<global-img>"};
      for (int r = 1; r <= 6; ++r)
        for (int col = 1; col <= 6; ++col)
          t.push_back("<row_" + std::to_string(r) + "_col_" +
                      std::to_string(col) + ">");
      return t;
    }();
    if (mm->projector == models::VisionProjector::PixelShuffle)
      for (size_t i = 0; i < smolvlmTokens.size(); ++i)
        named.push_back({c->imageTokenId - 1 - int64_t(i),
                         smolvlmTokens[i].c_str()});
    return generateGguf(o, text, *choice, named);
  }
  return Error("unknown --format '" + o.format + "' (hf, gguf)");
}

} // namespace etllm::formats
