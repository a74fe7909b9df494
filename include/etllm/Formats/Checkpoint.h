//===- Checkpoint.h - Format-neutral view of model checkpoints --*- C++ -*-===//
//
// The common model the importers consume: a Checkpoint is a set of named
// tensors (Hugging Face names, PyTorch shapes) whose bytes stay in the
// memory-mapped source file(s), plus the normalized ModelConfig. Readers for
// safetensors (HF directories), GGUF and llama2.c produce it; openCheckpoint
// picks the reader from the file's content.
//
// Nothing here depends on LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_CHECKPOINT_H
#define ETLLM_FORMATS_CHECKPOINT_H

#include "etllm/Formats/GgufMetadata.h"
#include "etllm/Formats/ModelConfig.h"
#include "etllm/runtime/mapped_file.h"
#include "etllm/runtime/result.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace etllm::formats {

using rt::Error;
using rt::Result;
using rt::Status;

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// Element type of a checkpoint tensor. The Q*/K types are ggml's block
/// quantization formats (blocks run along the innermost dimension).
enum class DType {
  F32,
  F16,
  BF16,
  F64,
  I8,
  I16,
  I32,
  I64,
  U8,
  BOOL,
  Q8_0,
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q4_K,
  Q5_K,
  Q6_K,
};

/// Canonical upper-case name ("F32", "BF16", "Q4_K", ...).
const char *dtypeName(DType dtype);

/// Parses a canonical name (case-insensitive); also accepts "BF16"/"bf16",
/// "bool". Returns an error naming the string otherwise.
Result<DType> parseDType(std::string_view name);

/// True for ggml block-quantized types.
bool isBlockQuantized(DType dtype);

/// Elements per block: 32 for Q8_0/Q4_0/Q4_1/Q5_0/Q5_1, 256 for the K
/// types, 1 for plain types.
int64_t dtypeBlockSize(DType dtype);

/// Bytes per block (bytes per element for plain types); e.g. Q8_0 = 34,
/// Q4_0 = 18, Q4_K = 144, Q6_K = 210, BOOL = 1.
int64_t dtypeBlockBytes(DType dtype);

/// Number of elements of `shape` (1 for a scalar), with overflow and
/// negative-dimension checks.
Result<uint64_t> numElements(const std::vector<int64_t> &shape);

/// Bytes needed for a tensor of `dtype` and `shape` (PyTorch order). For block
/// types the innermost dimension must be a multiple of the block size. Errors
/// on negative dimensions and on overflow of uint64.
Result<uint64_t> byteSize(DType dtype, const std::vector<int64_t> &shape);

/// "[a, b, c]" for messages.
std::string shapeToString(const std::vector<int64_t> &shape);

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

/// One tensor of a checkpoint. `data` points into the checkpoint's mapping and
/// is valid while the owning Checkpoint lives.
struct TensorRef {
  /// Canonical Hugging Face name, e.g. model.layers.0.self_attn.q_proj.weight.
  /// Tensors of a GGUF file without an HF equivalent (rope_freqs.weight) keep
  /// their GGUF name.
  std::string name;
  /// The name inside the file (GGUF: blk.0.attn_q.weight).
  std::string sourceName;
  /// Path of the file holding the bytes.
  std::string file;
  DType dtype = DType::F32;
  /// PyTorch order: outermost dimension first.
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  uint64_t nbytes = 0;
  /// Offset of `data` from the start of `file`.
  uint64_t fileOffset = 0;
  /// > 0: the rows (dim 0) are in interleaved-pair RoPE order (GGUF
  /// llama/mistral, llama2.c) for this many heads. Converting to HF's
  /// rotate-half order is permuteQkRowsToRotateHalf, the inverse of the
  /// permute in llama.cpp's convert_hf_to_gguf.py.
  int64_t qkPermuteHeads = 0;
  /// When non-empty, the tensor is not stored in one piece: it is kv_b_proj
  /// assembled from the GGUF split MLA form, parts[0] attn_k_b [heads,
  /// kv_lora_rank, qk_nope] and parts[1] attn_v_b [heads, v, kv_lora_rank]
  /// (the inverse of llama.cpp's DeepseekV2Model split). `data` is null
  /// and `dtype` F32: read it with toFloat32 (or bytesInHfOrder).
  std::vector<TensorRef> parts;
};

namespace detail {
class CheckpointBuilder;
} // namespace detail

/// A checkpoint opened in place: owns the mapped file(s); every TensorRef
/// points into them (nothing is copied at open).
class Checkpoint {
public:
  ~Checkpoint();
  Checkpoint(const Checkpoint &) = delete;
  Checkpoint &operator=(const Checkpoint &) = delete;

  /// "safetensors", "gguf" or "llama2c".
  const std::string &format() const { return format_; }
  /// The path given to openCheckpoint (file or directory).
  const std::string &path() const { return path_; }

  /// All tensors in file order (shard order for sharded safetensors).
  const std::vector<TensorRef> &tensors() const { return tensors_; }
  /// Looks a tensor up by its HF name; null when absent.
  const TensorRef *find(std::string_view hfName) const;

  /// The normalized configuration (from config.json, GGUF metadata or the
  /// llama2.c header). Empty (hasConfig() false) for a bare .safetensors file.
  const ModelConfig &config() const { return config_; }
  bool hasConfig() const { return hasConfig_; }

  /// The mapped files, in the order tensors refer to them.
  const std::vector<std::shared_ptr<rt::MappedFile>> &files() const {
    return files_;
  }

  //===--- GGUF only ------------------------------------------------------===//

  /// A GGUF metadata value by key; null if absent or not a GGUF checkpoint.
  const GgufValue *metadata(std::string_view key) const;
  /// All GGUF metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>> &
  metadataEntries() const {
    return metadata_;
  }
  /// The tokenizer.ggml.* metadata, or null when the file has none.
  const GgufTokenizerInfo *ggufTokenizer() const { return tokenizer_.get(); }
  /// GGUF version (2 or 3); 0 for other formats.
  uint32_t ggufVersion() const { return ggufVersion_; }
  /// GGUF data alignment (general.alignment, default 32); 0 otherwise.
  uint64_t ggufAlignment() const { return ggufAlignment_; }

  /// True when the RMSNorm weights in this file already include the "+1" of
  /// Gemma's `x * (1 + w)` norm. llama.cpp's Gemma/Gemma2 converters add 1 to
  /// every `*norm.weight` so that ggml can use a plain RMSNorm; a graph builder
  /// emitting HF Gemma's (1 + w) must subtract 1 from such weights (or use a
  /// plain `x * w` norm). False for HF checkpoints, whose Gemma norm weights
  /// are the raw `w`.
  bool normWeightsIncludeOne() const { return normWeightsIncludeOne_; }

private:
  Checkpoint();
  friend class detail::CheckpointBuilder;

  std::string format_;
  std::string path_;
  std::vector<std::shared_ptr<rt::MappedFile>> files_;
  std::vector<TensorRef> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  ModelConfig config_;
  bool hasConfig_ = false;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> metadataIndex_;
  std::unique_ptr<GgufTokenizerInfo> tokenizer_;
  uint32_t ggufVersion_ = 0;
  uint64_t ggufAlignment_ = 0;
  bool normWeightsIncludeOne_ = false;
};

/// Options for openCheckpoint.
struct OpenOptions {
  /// Run validateAgainstConfig after reading (every tensor the architecture
  /// needs present with the expected shape).
  bool validateTensors = true;
  /// A llama.cpp mmproj GGUF (a LLaVA vision tower and projector, projector
  /// type "mlp"; Gemma 3's, "gemma3") to compose with a GGUF text model:
  /// its tensors get the canonical vision names, its keys the config's
  /// vision fields.
  std::string mmproj;
  /// A safetensors file of a vision encoder composed with the model
  /// (`model.vision_encoder`: a traced torch module's weights); its tensors
  /// are added under "vision_tower.".
  std::string visionWeights;
};

/// Opens a checkpoint, detecting the format from content, not the extension:
///  - a directory containing config.json: Hugging Face (model.safetensors or
///    model.safetensors.index.json);
///  - a file starting with "GGUF": GGUF v2/v3;
///  - a file with a plausible safetensors header: bare safetensors (no config);
///  - otherwise a llama2.c v0 checkpoint whose header is plausible and whose
///    size matches the header exactly.
/// Errors name the path and what was checked.
Result<std::unique_ptr<Checkpoint>>
openCheckpoint(const std::string &path, const OpenOptions &options = {});

/// Checks that every tensor the architecture needs is present with the shape
/// the config implies (see expectedTensors). Extra tensors are allowed.
/// Errors name the checkpoint path and the tensor.
Status validateAgainstConfig(const Checkpoint &checkpoint,
                             const ModelConfig &config);

//===----------------------------------------------------------------------===//
// Data conversion
//===----------------------------------------------------------------------===//

/// Dequantizes `numElements` values of a ggml block type exactly as ggml's
/// dequantize_row_* does (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K).
/// `numElements` must be a multiple of the block size; `src` holds
/// numElements / blockSize blocks.
Status dequantizeRows(DType dtype, const uint8_t *src, int64_t numElements,
                      float *dst);

/// Converts any supported dtype to float32 (F16/BF16 exactly, integers and
/// BOOL by value, F64 rounded, block types dequantized). Row order is the
/// file's: qkPermuteHeads is not applied.
Result<std::vector<float>> toFloat32(const TensorRef &tensor);

/// toFloat32 of the elements [first, first + count) (in file order) into
/// `dst`, for a tensor without parts: lets a reader convert a weight a few
/// rows at a time. For block types `first` and `count` must be multiples of
/// the block size. The tensor's bytes are checked as toFloat32 checks them.
Status toFloat32Range(const TensorRef &tensor, uint64_t first, uint64_t count,
                      float *dst);

/// Reorders the rows (dim 0) of a q/k projection weight or bias from
/// interleaved-pair RoPE order to HF rotate-half order for `numHeads` heads:
/// within each head of D rows, destination row h*D/2 + i (h in {0,1}) comes
/// from source row 2*i + h. Works on raw bytes of any dtype (for block types a
/// row is whole blocks). `dst` must not alias `src`.
Status permuteQkRowsToRotateHalf(DType dtype, const std::vector<int64_t> &shape,
                                 int64_t numHeads, const uint8_t *src,
                                 uint8_t *dst);

/// The inverse: HF rotate-half order to interleaved pairs (what llama.cpp's
/// converter does to llama/mistral q_proj/k_proj).
Status permuteQkRowsToInterleaved(DType dtype,
                                  const std::vector<int64_t> &shape,
                                  int64_t numHeads, const uint8_t *src,
                                  uint8_t *dst);

/// Convenience: the tensor's bytes in HF row order (a copy; permuted when
/// qkPermuteHeads > 0).
Result<std::vector<uint8_t>> bytesInHfOrder(const TensorRef &tensor);

} // namespace etllm::formats

#endif // ETLLM_FORMATS_CHECKPOINT_H
