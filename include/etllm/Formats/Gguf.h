//===- Gguf.h - GGUF (llama.cpp) reader and writer --------------*- C++ -*-===//
//
// GGUF v2/v3: little-endian header "GGUF", version, tensor and metadata
// counts (uint64), typed metadata, tensor infos (name, ggml ne dims with the
// innermost first, ggml type, offset into the aligned data section), data.
//
// The reader validates every count, string length, array size, dimension,
// type, offset and alignment against the file, maps llama.cpp tensor names to
// Hugging Face names with the tables of the family specs (etllm/Models),
// reverses ggml's ne order into PyTorch order, and builds the ModelConfig
// from `<arch>.*` metadata.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_GGUF_H
#define ETLLM_FORMATS_GGUF_H

#include "etllm/Formats/Checkpoint.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace etllm::formats {

/// ggml tensor type ids as stored in GGUF.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

/// ggml's name for a type id ("Q4_K", "IQ2_XXS", ...), "type <n>" if unknown.
std::string ggmlTypeName(uint32_t type);

/// The DType of a ggml type id, or an error naming the type when the reader
/// does not support it.
Result<DType> dtypeFromGgmlType(uint32_t type);

/// The ggml type id of a DType (BOOL/U8 have none: error).
Result<uint32_t> ggmlTypeFromDType(DType dtype);

/// Reads a GGUF file (see file comment). Used by openCheckpoint. A LoRA
/// adapter (general.type = adapter) is refused.
Result<std::unique_ptr<Checkpoint>> openGguf(const std::string &path);

/// Reads a llama.cpp LoRA adapter (general.type = adapter, adapter.type =
/// lora, as convert_lora_to_gguf.py writes it): the container is checked as
/// openGguf checks it; the tensors `<weight>.lora_a` ([r, in]) and
/// `<weight>.lora_b` ([out, r]) are named `<HF weight name>.lora_a` /
/// `.lora_b` and keep the file's row order (for families whose converter
/// permutes q/k, the rows of q/k's lora_b are interleaved as the base GGUF's
/// are). No config and no vocabulary. Used by LoraAdapter::open.
Result<std::unique_ptr<Checkpoint>>
openGgufLoraAdapter(const std::string &path);

/// Reads a llama.cpp mmproj file (general.architecture = clip): the
/// container checked as openGguf checks it, the tensors under their GGUF
/// names (v.blk.0.attn_q.weight, mm.0.weight, ...), no config.
Result<std::unique_ptr<Checkpoint>> openGgufMmproj(const std::string &path);

/// Derives the ModelConfig of an opened GGUF checkpoint from its metadata and
/// tensors (openGguf already did this; exposed for importers and tests).
/// What GGUF cannot express is what the family spec says: a family llama.cpp
/// converts to another architecture reads back as that one (GgufSpec::
/// readsBack); a family key without a GGUF key takes its fallback (Gemma2's
/// query_pre_attn_scalar becomes head_dim, right for 2B/9B, not 27B). llama3
/// rope scaling is stored only as the rope_freqs tensor (kept in
/// RopeScaling::freqFactors; the llama3 parameters are recovered when the
/// factors match llama.cpp's formula with the standard low=1, high=4,
/// original=8192).
Result<ModelConfig> configFromGguf(const Checkpoint &checkpoint);

/// The HF name of a llama.cpp tensor name for a GGUF architecture, or "" when
/// the name has no HF equivalent.
std::string ggufNameToHf(const std::string &arch, const std::string &ggufName);

/// The llama.cpp tensor name of an HF tensor name for a GGUF architecture, or
/// "" when none.
std::string hfNameToGguf(const std::string &arch, const std::string &hfName);

/// The same for a family (a GGUF architecture may open as several: "llama"
/// with experts is Mixtral). A stacked expert tensor (blk.N.ffn_gate_exps)
/// names the slice of expert `expert`; `*expert` receives the index of an
/// expert's tensor (else -1).
std::string ggufNameToHf(const models::FamilySpec &family,
                         const std::string &ggufName, int64_t expert = -1);
std::string hfNameToGguf(const models::FamilySpec &family,
                         const std::string &hfName, int64_t *expert = nullptr);

/// The GGUF general.architecture llama.cpp's converter uses for an HF model
/// type (a family's GgufSpec::arch), or "" if unsupported.
std::string ggufArchForModelType(const std::string &modelType);

//===----------------------------------------------------------------------===//
// Quantization (ggml reference quantizers)
//===----------------------------------------------------------------------===//

/// ggml's quantize_row_q8_0_ref: n must be a multiple of 32; writes n/32
/// blocks of 34 bytes.
void quantizeRowQ8_0(const float *src, uint8_t *dst, int64_t n);
/// ggml's quantize_row_q4_0_ref: n must be a multiple of 32; writes n/32
/// blocks of 18 bytes.
void quantizeRowQ4_0(const float *src, uint8_t *dst, int64_t n);

/// Encodes n floats as `dtype` (F32, F16, BF16, Q8_0, Q4_0) into dst, which
/// must hold byteSize(dtype, {n}) bytes.
Status encodeFloats(DType dtype, const float *src, int64_t n, uint8_t *dst);

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

/// Writes a GGUF v3 file, streaming: declare metadata and tensors, open(),
/// then append each tensor's bytes in declaration order with write() (any
/// chunking), then finish(). Padding between tensors is inserted for you.
class GgufWriter {
public:
  /// `alignment` must be a power of two; values other than 32 are recorded as
  /// general.alignment.
  explicit GgufWriter(uint64_t alignment = 32);
  ~GgufWriter();
  GgufWriter(const GgufWriter &) = delete;
  GgufWriter &operator=(const GgufWriter &) = delete;

  /// Adds or replaces a metadata entry (insertion order is kept).
  void set(const std::string &key, GgufValue value);

  /// Declares a tensor; `shape` is in PyTorch order (it is reversed into ggml
  /// ne order). Only before open().
  Status addTensor(const std::string &name, DType dtype,
                   const std::vector<int64_t> &shape);

  /// Creates `path` and writes header, metadata and tensor infos.
  Status open(const std::string &path);
  /// Appends tensor bytes.
  Status write(const void *data, size_t size);
  /// Checks every declared byte was written and closes the file.
  Status finish();

  /// Bytes of tensor data still expected by write().
  uint64_t remainingBytes() const;

private:
  struct PendingTensor {
    std::string name;
    uint32_t ggmlType;
    std::vector<uint64_t> ne;
    uint64_t nbytes;
    uint64_t offset;
  };
  Status writeRaw(const void *data, size_t size);
  Status padTo(uint64_t alignment);

  uint64_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
  uint64_t dataSize_ = 0;
  std::string path_;
  std::FILE *file_ = nullptr;
  uint64_t position_ = 0;
  size_t currentTensor_ = 0;
  uint64_t currentWritten_ = 0;
  bool opened_ = false;
  bool failed_ = false;
};

} // namespace etllm::formats

#endif // ETLLM_FORMATS_GGUF_H
