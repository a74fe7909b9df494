//===- Internal.h - Helpers shared by the checkpoint readers -----*- C++
//-*-===//
//
// Private to lib/Formats: the builder that fills a Checkpoint, checked
// arithmetic, little-endian loads and a bounds-checked byte cursor.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_FORMATS_INTERNAL_H
#define ETLLM_LIB_FORMATS_INTERNAL_H

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Limits.h"
#include "etllm/Formats/TextFile.h"
#include "etllm/Models/Family.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>

namespace etllm::models {
struct MultimodalSpec;
} // namespace etllm::models

namespace etllm::formats::detail {

/// Fills a Checkpoint (the only writer of its private state).
class CheckpointBuilder {
public:
  CheckpointBuilder(std::string format, std::string path)
      : checkpoint_(new Checkpoint()) {
    checkpoint_->format_ = std::move(format);
    checkpoint_->path_ = std::move(path);
  }

  /// Goes on building an opened checkpoint (a GGUF text model that an
  /// mmproj file completes).
  explicit CheckpointBuilder(std::unique_ptr<Checkpoint> checkpoint)
      : checkpoint_(std::move(checkpoint)) {}

  Checkpoint &get() { return *checkpoint_; }

  void addFile(std::shared_ptr<rt::MappedFile> file) {
    checkpoint_->files_.push_back(std::move(file));
  }

  /// Adds a tensor; error if the HF name is already taken.
  Status addTensor(TensorRef tensor) {
    auto [it, inserted] =
        checkpoint_->index_.emplace(tensor.name, checkpoint_->tensors_.size());
    (void)it;
    if (!inserted)
      return Error(tensor.file + ": duplicate tensor '" + tensor.name + "'" +
                   (tensor.sourceName != tensor.name
                        ? " (from '" + tensor.sourceName + "')"
                        : std::string()));
    checkpoint_->tensors_.push_back(std::move(tensor));
    return Status();
  }

  /// Reorders tensors (and rebuilds the index).
  template <typename Less> void sortTensors(Less less) {
    std::stable_sort(checkpoint_->tensors_.begin(), checkpoint_->tensors_.end(),
                     less);
    checkpoint_->index_.clear();
    for (size_t i = 0; i < checkpoint_->tensors_.size(); ++i)
      checkpoint_->index_.emplace(checkpoint_->tensors_[i].name, i);
  }

  void setConfig(ModelConfig config) {
    checkpoint_->config_ = std::move(config);
    checkpoint_->hasConfig_ = true;
  }

  /// Adds a metadata entry; error on a duplicate key.
  bool addMetadata(std::string key, GgufValue value) {
    auto [it, inserted] =
        checkpoint_->metadataIndex_.emplace(key, checkpoint_->metadata_.size());
    (void)it;
    if (!inserted)
      return false;
    checkpoint_->metadata_.emplace_back(std::move(key), std::move(value));
    return true;
  }

  void setTokenizer(std::unique_ptr<GgufTokenizerInfo> info) {
    checkpoint_->tokenizer_ = std::move(info);
  }
  void setGgufInfo(uint32_t version, uint64_t alignment) {
    checkpoint_->ggufVersion_ = version;
    checkpoint_->ggufAlignment_ = alignment;
  }
  void setNormWeightsIncludeOne(bool value) {
    checkpoint_->normWeightsIncludeOne_ = value;
  }

  std::unique_ptr<Checkpoint> finish() { return std::move(checkpoint_); }

private:
  std::unique_ptr<Checkpoint> checkpoint_;
};

/// Writes `text` to `path` (created or truncated); errors name the path.
Status writeTextFile(const std::string &path, const std::string &text);

/// a * b, false on uint64 overflow.
inline bool mulOverflow(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}
/// a + b, false on uint64 overflow.
inline bool addOverflow(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_add_overflow(a, b, &out);
}

template <typename T> inline T loadLE(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v; // The supported hosts are little-endian.
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoint readers assume a little-endian host");

/// Bounds-checked sequential reader over a byte range of a file.
class Cursor {
public:
  Cursor(const uint8_t *begin, uint64_t size) : base_(begin), size_(size) {}
  uint64_t offset() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  bool has(uint64_t n) const { return n <= size_ - pos_; }
  template <typename T> bool read(T &out) {
    if (!has(sizeof(T)))
      return false;
    out = loadLE<T>(base_ + pos_);
    pos_ += sizeof(T);
    return true;
  }
  bool readBytes(uint64_t n, const uint8_t *&out) {
    if (!has(n))
      return false;
    out = base_ + pos_;
    pos_ += n;
    return true;
  }

private:
  const uint8_t *base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

/// The largest dimension or size any reader accepts for config values
/// (declared in etllm/Formats/Limits.h).
using formats::kMaxConfigDim;

/// True if `path` is a directory.
bool isDirectory(const std::string &path);
/// True if `path` exists (any type).
bool pathExists(const std::string &path);
/// Joins a directory and a file name.
std::string joinPath(const std::string &dir, const std::string &name);
/// Reads a whole (small) file into a string (etllm/Formats/TextFile.h).
using formats::readTextFile;

//===--- Composite models (HfVisionConfig.cpp) ----------------------------===//

/// True when config.json's text is a composite model's (LLaVA).
bool isMultimodalConfig(const std::string &jsonText);
/// The decoder's config from `text_config` with the vision fields set.
Result<ModelConfig> parseMultimodalConfig(const std::string &jsonText,
                                          const std::string &source);
/// The rules between the vision fields (nothing for a text model).
Status validateVision(const ModelConfig &c);
/// The vision tower's and projector's tensors (canonical names).
/// What every checkpoint of the composite `spec` shares, whichever file
/// it comes from (HF, GGUF + mmproj, the generator): for Gemma 3's and
/// SmolVLM's kind, the tower's last hidden state after post_layernorm,
/// every patch, no MLP projector; Gemma 3's image positions seeing each
/// other; the processor's text around an image and its tiles
/// (HfVisionConfig.cpp).
void applyCompositeTraits(const models::MultimodalSpec &spec,
                          ModelConfig &c);

/// `checkpoint` with the tensors of the safetensors file `path` added under
/// "vision_tower." (a composed vision encoder's weights; VisionWeights.cpp).
Result<std::unique_ptr<Checkpoint>>
attachVisionWeights(std::unique_ptr<Checkpoint> checkpoint,
                    const std::string &path);

void appendVisionTensors(const ModelConfig &c,
                         std::vector<ExpectedTensor> &out);
/// `text` (a GGUF text model) with the vision tower and projector of the
/// llama.cpp mmproj file at `path` (GgufMmproj.cpp).
Result<std::unique_ptr<Checkpoint>>
attachMmproj(std::unique_ptr<Checkpoint> text, const std::string &path);
/// The composite config.json around the decoder's `textJson`.
Result<std::string> multimodalHfConfigJson(const ModelConfig &c,
                                           const std::string &textJson);

//===--- Family keys (etllm/Models/Family.h) -----------------------------===//

// getField, setField and listField: a family key's ModelConfig field by its
// models::ConfigField (generated from etllm/Models/ModelConfig.td).
#define GET_CONFIG_FIELD_ACCESSORS
#include "etllm/Models/ModelConfig.h.inc"

/// True for keys whose value is an integer (read as one, written as one).
inline bool isIntegerKey(const models::ConfigKey &key) {
  return key.range == models::KeyRange::Dim ||
         key.range == models::KeyRange::Count;
}

/// What an unset (zero) family field stands for.
inline double fallbackValue(const ModelConfig &c, models::KeyFallback f) {
  switch (f) {
  case models::KeyFallback::Zero:
    return 0;
  case models::KeyFallback::One:
    return 1;
  case models::KeyFallback::NumLayers:
    return static_cast<double>(c.numLayers);
  case models::KeyFallback::HeadDim:
    return static_cast<double>(c.headDim);
  case models::KeyFallback::MaxPositionEmbeddings:
    return static_cast<double>(c.maxPositionEmbeddings);
  case models::KeyFallback::IntermediateSize:
    return static_cast<double>(c.intermediateSize);
  case models::KeyFallback::IntermediatePerExpertUsed:
    return c.numExpertsPerTok > 0
               ? static_cast<double>(c.intermediateSize / c.numExpertsPerTok)
               : 0;
  }
  return 0;
}

/// The routing a family's config has when no key says (MoeSpec), before
/// the family keys are read.
inline void applyMoeDefaults(ModelConfig &c, const models::FamilySpec &f) {
  c.moeScoring = f.moe.scoring;
  c.moeTopkMethod = f.moe.topkMethod;
  c.normTopkProb = f.moe.normTopkProb;
}

/// Marks the sparse layers of the family's MoeLayerRule (all dense when the
/// family has no MoE block or no experts), and derives DeepSeek's shared
/// expert width (SharedExpertKind::Plain: n_shared_experts *
/// moe_intermediate_size, as DeepseekV2Moe builds it).
inline void applyMoeLayers(ModelConfig &c, const models::FamilySpec &f) {
  if (f.blocks.mlp == models::MlpBlock::SparseMoe &&
      f.moe.sharedExpert == models::SharedExpertKind::Plain)
    c.sharedExpertIntermediateSize =
        c.numSharedExperts > 0 && c.numSharedExperts <= (int64_t(1) << 20)
            ? c.numSharedExperts * c.expertIntermediateSize()
            : 0;
  c.layerIsMoe.assign(static_cast<size_t>(std::max<int64_t>(c.numLayers, 0)),
                      false);
  if (f.blocks.mlp != models::MlpBlock::SparseMoe || c.numExperts <= 0)
    return;
  for (int64_t i = 0; i < c.numLayers; ++i) {
    bool sparse = false;
    switch (f.moe.layers) {
    case models::MoeLayerRule::AllLayers:
      sparse = true;
      break;
    case models::MoeLayerRule::SparseStep:
      sparse = c.decoderSparseStep > 0 && (i + 1) % c.decoderSparseStep == 0 &&
               std::find(c.mlpOnlyLayers.begin(), c.mlpOnlyLayers.end(), i) ==
                   c.mlpOnlyLayers.end();
      break;
    case models::MoeLayerRule::FirstKDense:
      sparse = i >= c.firstKDenseReplace && c.moeLayerFreq > 0 &&
               i % c.moeLayerFreq == 0;
      break;
    }
    c.layerIsMoe[static_cast<size_t>(i)] = sparse;
  }
}

/// Checks `v` against the key's range; `error(what)` makes the error (it
/// names the file and the key).
template <typename MakeError>
Status checkKeyRange(const models::ConfigKey &key, double v,
                     MakeError error) {
  if (key.type == models::KeyType::Bool ||
      key.type == models::KeyType::Choice ||
      key.type == models::KeyType::IntList)
    return Status(); // checked when parsed
  switch (key.range) {
  case models::KeyRange::NonNegative:
    if (!(v >= 0))
      return error("must not be negative");
    break;
  case models::KeyRange::Positive:
    if (!(v > 0))
      return error("must be positive");
    break;
  case models::KeyRange::Dim:
    if (!(v > 0) || v != static_cast<double>(static_cast<int64_t>(v)))
      return error("must be a positive integer, got " + std::to_string(v));
    if (v > static_cast<double>(kMaxConfigDim))
      return error("absurdly large value " +
                   std::to_string(static_cast<int64_t>(v)) + " (limit " +
                   std::to_string(kMaxConfigDim) + ")");
    break;
  case models::KeyRange::Count:
    if (!(v >= 0) || v != static_cast<double>(static_cast<int64_t>(v)))
      return error("must be a non-negative integer, got " + std::to_string(v));
    if (v > static_cast<double>(kMaxConfigDim))
      return error("absurdly large value " +
                   std::to_string(static_cast<int64_t>(v)) + " (limit " +
                   std::to_string(kMaxConfigDim) + ")");
    break;
  }
  return Status();
}

/// Marks the sliding layers of `rule` (every layer, or the even ones) for a
/// window already set in c.slidingWindow.
inline void applySlidingPattern(ModelConfig &c,
                                models::SlidingWindowRule rule,
                                int64_t pattern = 0) {
  for (int64_t i = 0; i < c.numLayers; ++i)
    c.layerUsesSlidingWindow[static_cast<size_t>(i)] =
        rule == models::SlidingWindowRule::AllLayers ||
        (rule == models::SlidingWindowRule::EvenLayers && i % 2 == 0) ||
        (rule == models::SlidingWindowRule::Pattern && pattern > 0 &&
         (i + 1) % pattern != 0);
}

/// The sliding layers of a GGUF file with a sliding window: the family's
/// rule where llama.cpp's architecture hard-codes one (EvenLayers,
/// Pattern), else every layer.
inline void applyGgufSlidingPattern(ModelConfig &c,
                                    const models::FamilySpec &f) {
  const models::SlidingWindowRule r = f.hf.slidingWindow;
  applySlidingPattern(c,
                      r == models::SlidingWindowRule::EvenLayers ||
                              r == models::SlidingWindowRule::Pattern
                          ? r
                          : models::SlidingWindowRule::AllLayers,
                      f.hf.slidingWindowPattern);
}

/// The HF name of a llama.cpp tensor name, or "" (GgufNames.cpp). A
/// stacked expert tensor (ffn_gate_exps) names expert `expert`'s slice
/// (and nothing without one).
std::string ggufNameToHf(const models::FamilySpec &family,
                         const std::string &ggufName, int64_t expert = -1);
/// The llama.cpp name of an HF tensor name, or "" (GgufNames.cpp). An
/// expert's projection maps to its stacked tensor; `expert` (when given) is
/// set to its index, else -1.
std::string hfNameToGguf(const models::FamilySpec &family,
                         const std::string &hfName, int64_t *expert = nullptr);

/// Splits "model.layers.12.self_attn.q_proj.weight" into layer 12 and suffix
/// "self_attn.q_proj.weight"; false if not a layer tensor.
bool splitLayerName(const std::string &name, const std::string &prefix,
                    int64_t &layer, std::string &suffix);

/// Quantizes n floats (whole blocks) into ggml blocks of `dtype` (Q5_0,
/// Q5_1, Q4_K, Q5_K, Q6_K; GgmlQuantize.cpp); false for another dtype.
bool quantizeGgmlRows(DType dtype, const float *src, int64_t n, uint8_t *dst);

/// The GGUF general.file_type the generator writes for 2-D tensors of `d`
/// (GgmlQuantize.cpp).
uint32_t ggufFileType(DType d);

} // namespace etllm::formats::detail

#endif // ETLLM_LIB_FORMATS_INTERNAL_H
