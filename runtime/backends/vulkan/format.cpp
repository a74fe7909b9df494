//===- format.cpp - The Vulkan kernels' interfaces and the barrier rule ---===//
#include "etllm/runtime/vulkan/format.h"

namespace etllm::rt::vulkan {

// std140 lays out these blocks like C++ only when every block (and nested
// block) is a multiple of 16 bytes of 32-bit scalars.
static_assert(sizeof(Globals) % 16 == 0, "std140");
static_assert(sizeof(MatmulParams) % 16 == 0, "std140");
static_assert(sizeof(RmsNormParams) % 16 == 0, "std140");
static_assert(sizeof(RopeJob) % 16 == 0, "std140");
static_assert(sizeof(RopeParams) == 16 + 3 * sizeof(RopeJob), "std140");
static_assert(sizeof(SdpaParams) % 16 == 0, "std140");
static_assert(sizeof(SdpaCombineParams) % 16 == 0, "std140");
static_assert(sizeof(SoftmaxParams) % 16 == 0, "std140");
static_assert(sizeof(ElementwiseParams) % 16 == 0, "std140");
static_assert(sizeof(EmbeddingParams) % 16 == 0, "std140");
static_assert(sizeof(CopyParams) % 16 == 0, "std140");

const KernelInfo &kernelInfo(KernelId k) {
  static const KernelInfo table[kNumKernels] = {
      {"copy", sizeof(CopyParams)},
      {"embedding", sizeof(EmbeddingParams)},
      {"rms_norm", sizeof(RmsNormParams)},
      {"matmul", sizeof(MatmulParams)},
      {"rope", sizeof(RopeParams)},
      {"sdpa", sizeof(SdpaParams)},
      {"sdpa_combine", sizeof(SdpaCombineParams)},
      {"softmax", sizeof(SoftmaxParams)},
      {"elementwise", sizeof(ElementwiseParams)},
  };
  return table[int(k) < kNumKernels ? int(k) : 0];
}

bool validVariant(KernelId k, uint32_t v) {
  switch (k) {
  case KernelId::Copy:
    return v <= (Variant::kSrcF16 | Variant::kDstF16);
  case KernelId::Matmul: {
    if (v & ~(Variant::kActF16 | Variant::kFormatMask | Variant::kOutF32))
      return false;
    if ((v & Variant::kOutF32) && !(v & Variant::kActF16))
      return false;
    return Variant::format(v) <= WeightFormat::Q4;
  }
  case KernelId::Embedding:
    return !(v & ~(Variant::kActF16 | Variant::kFormatMask)) &&
           Variant::format(v) <= WeightFormat::Q4;
  case KernelId::Rope:
    return !(v & ~(Variant::kActF16 | Variant::kJobsMask)) &&
           Variant::jobs(v) >= 1 && Variant::jobs(v) <= 3;
  case KernelId::RmsNorm:
  case KernelId::Sdpa:
  case KernelId::SdpaCombine:
  case KernelId::Softmax:
  case KernelId::Elementwise:
    return v <= Variant::kActF16;
  }
  return false;
}

uint32_t numBindings(KernelId k, uint32_t variant) {
  switch (k) {
  case KernelId::Copy:
  case KernelId::SdpaCombine:
  case KernelId::Softmax:
    return 2;
  case KernelId::Embedding:
  case KernelId::RmsNorm:
  case KernelId::Elementwise:
    return 3;
  case KernelId::Matmul:
    return 5;
  case KernelId::Rope:
    return 2 + 2 * Variant::jobs(variant);
  case KernelId::Sdpa:
    return 6;
  }
  return 0;
}

bool writesBinding(KernelId k, uint32_t variant, uint32_t i) {
  switch (k) {
  case KernelId::Copy:
  case KernelId::SdpaCombine:
  case KernelId::Softmax:
    return i == 1;
  case KernelId::Embedding:
  case KernelId::RmsNorm:
  case KernelId::Elementwise:
    return i == 2;
  case KernelId::Matmul:
    return i == 2;
  case KernelId::Rope:
    return i >= 2 && i % 2 == 1 && i < numBindings(k, variant);
  case KernelId::Sdpa:
    return i == 4 || i == 5;
  }
  return false;
}

static bool overlaps(const Access &a, const Access &b) {
  return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end;
}

bool needsBarrier(const std::vector<Access> &pending,
                  const std::vector<Access> &accesses) {
  for (const Access &a : accesses)
    for (const Access &p : pending)
      if ((a.write || p.write) && overlaps(a, p))
        return true;
  return false;
}

bool selfConflict(const std::vector<Access> &accesses) {
  for (size_t i = 0; i < accesses.size(); ++i)
    for (size_t j = i + 1; j < accesses.size(); ++j)
      if ((accesses[i].write || accesses[j].write) &&
          overlaps(accesses[i], accesses[j]))
        return true;
  return false;
}

uint64_t weightBytes(WeightFormat format, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0 || rows > (int64_t(1) << 40) ||
      cols > (int64_t(1) << 30))
    return 0;
  const uint64_t n = uint64_t(rows) * uint64_t(cols);
  switch (format) {
  case WeightFormat::F32:
    return n * 4;
  case WeightFormat::F16:
    return cols % 2 ? 0 : n * 2;
  case WeightFormat::Q4: {
    if (cols % 32)
      return 0;
    const uint64_t bytes = n / 2 + n / 32 * 2;
    return (bytes + 3) / 4 * 4;
  }
  }
  return 0;
}

uint32_t sdpaSplits(uint64_t t, uint32_t chunk) {
  if (chunk == 0)
    return 0;
  return uint32_t((t + chunk - 1) / chunk);
}

std::string dtypeString(DType t) { return dtypeName(t); }

} // namespace etllm::rt::vulkan
