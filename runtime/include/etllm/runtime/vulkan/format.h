//===- format.h - What both halves of the Vulkan backend agree on -*- C++
//-*-===//
//
// The facts the compiler half (lib/Backends/Vulkan) and the runtime half
// (runtime/backends/vulkan) share besides the blob schema (vulkan.fbs) and
// the parameter blocks (params.h): each kernel's storage bindings, which of
// them it writes and the size of its parameter block; the variant bits; the
// barrier rule (the compiler places barriers with it, the runtime checks
// the blob's with it); the alignment and binding limits the compiler
// assumes. No Vulkan, no MLIR: the compiler links this without a Vulkan SDK.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VULKAN_FORMAT_H
#define ETLLM_RUNTIME_VULKAN_FORMAT_H

#include "etllm/runtime/dtype.h"
#include "etllm/runtime/result.h"
#include "etllm/runtime/vulkan/params.h"

#include <cstdint>
#include <string>
#include <vector>

namespace etllm::rt::vulkan {

/// The backend id the compiler half writes into programs.
inline constexpr const char *kBackendId = "vulkan";
/// The blob format (compile spec "format").
inline constexpr const char *kBlobFormat = "VKN1";

/// Offsets of bindings in the arena are multiples of this (Vulkan
/// guarantees minStorageBufferOffsetAlignment <= 256).
inline constexpr uint64_t kBindingAlign = 256;
/// The largest storage-buffer binding the compiler assumes a device takes
/// by default: 128 MiB (lavapipe's maxStorageBufferRange, and many phone
/// GPUs'). Larger weights are split into several bindings.
inline constexpr uint64_t kDefaultMaxBindingBytes = uint64_t(128) << 20;
/// Upper bounds on a blob (far beyond any real subgraph).
inline constexpr uint32_t kMaxDispatches = 1u << 16;
inline constexpr uint32_t kMaxBuffers = 1u << 16;
inline constexpr uint32_t kMaxBindings = 8;

/// The kernels, as vulkan.fbs numbers them.
enum class KernelId : uint16_t {
  Copy = 0,
  Embedding = 1,
  RmsNorm = 2,
  Matmul = 3,
  Rope = 4,
  Sdpa = 5,
  SdpaCombine = 6,
  Softmax = 7,
  Elementwise = 8,
};
inline constexpr int kNumKernels = 9;

/// How a weight is stored for the matmul and embedding kernels.
enum class WeightFormat : uint8_t {
  F32 = 0, ///< row-major f32 [rows, cols]
  F16 = 1, ///< row-major f16 [rows, cols] (cols even)
  Q4 = 2,  ///< packing.h: int4 nibbles then f16 scales per 32 (cols % 32 == 0)
};

/// Variant bits of a dispatch (Dispatch.variant).
struct Variant {
  static constexpr uint32_t kActF16 = 1u; ///< activations are f16
  static constexpr uint32_t kFormatShift =
      1u; ///< MATMUL, EMBEDDING: WeightFormat
  static constexpr uint32_t kFormatMask = 3u << kFormatShift;
  static constexpr uint32_t kOutF32 =
      8u; ///< MATMUL: f32 output (with f16 activations)
  static constexpr uint32_t kJobsShift = 1u; ///< ROPE: jobs 1..3
  static constexpr uint32_t kJobsMask = 3u << kJobsShift;
  static constexpr uint32_t kSrcF16 = 1u; ///< COPY: the source is f16
  static constexpr uint32_t kDstF16 = 2u; ///< COPY: the destination is f16

  static uint32_t matmul(bool actF16, WeightFormat w, bool outF32) {
    return (actF16 ? kActF16 : 0) | (uint32_t(w) << kFormatShift) |
           (actF16 && outF32 ? kOutF32 : 0);
  }
  static uint32_t embedding(bool actF16, WeightFormat w) {
    return (actF16 ? kActF16 : 0) | (uint32_t(w) << kFormatShift);
  }
  static uint32_t rope(bool actF16, uint32_t jobs) {
    return (actF16 ? kActF16 : 0) | (jobs << kJobsShift);
  }
  static uint32_t copy(bool srcF16, bool dstF16) {
    return (srcF16 ? kSrcF16 : 0) | (dstF16 ? kDstF16 : 0);
  }
  static WeightFormat format(uint32_t v) {
    return WeightFormat((v & kFormatMask) >> kFormatShift);
  }
  static uint32_t jobs(uint32_t v) { return (v & kJobsMask) >> kJobsShift; }
};

/// A kernel's interface: its storage bindings (after the two uniform
/// buffers every kernel has: Globals at 0, its parameters at 1), which it
/// writes, and its parameter block.
struct KernelInfo {
  const char *name;
  uint32_t paramBytes;
};
const KernelInfo &kernelInfo(KernelId k);
/// Whether `variant` is one the runtime has shaders for.
bool validVariant(KernelId k, uint32_t variant);
/// Storage bindings of a dispatch of `k` with `variant`.
uint32_t numBindings(KernelId k, uint32_t variant);
/// Whether binding `i` of `k` (with `variant`) is written.
bool writesBinding(KernelId k, uint32_t variant, uint32_t i);

/// One storage binding a dispatch touches: bytes [begin, end) of buffer
/// `buffer`, read or written.
struct Access {
  uint32_t buffer = 0;
  uint64_t begin = 0, end = 0;
  bool write = false;
};

/// The barrier rule. A dispatch needs a barrier before it when one of its
/// accesses overlaps an access of a dispatch since the last barrier and
/// either writes (read after write, write after read, write after write).
/// `pending` holds the accesses since the last barrier.
bool needsBarrier(const std::vector<Access> &pending,
                  const std::vector<Access> &accesses);
/// Whether two accesses of one dispatch conflict (overlap with a write):
/// no kernel reads what it writes through another binding.
bool selfConflict(const std::vector<Access> &accesses);

/// Bytes of a weight of `rows` x `cols` in `format` (0 when the shape does
/// not fit the format: Q4 needs cols % 32 == 0, F16 even cols).
uint64_t weightBytes(WeightFormat format, int64_t rows, int64_t cols);
/// q4: the word where the scales start.
inline uint64_t q4ScaleWord(int64_t rows, int64_t cols) {
  return uint64_t(rows) * uint64_t(cols) / 8;
}

/// Rows of keys one SDPA split covers at most, and the splits of a cache
/// of `t` rows (decoding).
uint32_t sdpaSplits(uint64_t t, uint32_t chunk);

/// The name of a DType for messages.
std::string dtypeString(DType t);

} // namespace etllm::rt::vulkan

#endif // ETLLM_RUNTIME_VULKAN_FORMAT_H
