//===- qdot_avx512vnni.cpp - 512-bit integer dot-product kernels ----------===//
//
// qdot_x86.inc at 512 bits: AVX-512 with vpdpbusd (AVX512-VNNI).
//
//===----------------------------------------------------------------------===//
#include "qdot.h"

#include <algorithm>
#include <cstring>

#if ETLLM_CPU_X86
#include "qdot_target.h"

ETLLM_CPU_AVX512_DIAGNOSTICS

ETLLM_CPU_TARGET_BEGIN(
    "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")
namespace etllm::rt::cpu {
namespace qdot_avx512vnni {
namespace {
#define QDOT_W512 1
#define QDOT_VNNI 1
#define QDOT_VEX 0
#include "qdot_x86.inc"
#undef QDOT_W512
#undef QDOT_VNNI
#undef QDOT_VEX
} // namespace
} // namespace qdot_avx512vnni

QDotFn qdotAvx512Vnni(const PackedQBlockLayout &l, bool perToken) {
  return qdot_avx512vnni::select(l, perToken);
}

void qdotSuperParamsK4(const uint8_t *rec, float (*dw)[kQRows],
                       float (*ow)[kQRows]) {
  // Q4_K's and Q5_K's records decode alike (one 512-bit vector: 16 rows).
  using K = qdot_avx512vnni::KernelGgml<QScheme::Q4_K>;
  static_assert(sizeof(K::SuperParams::dw) == 8 * kQRows * sizeof(float) &&
                    sizeof(K::SuperParams::ow) == 8 * kQRows * sizeof(float),
                "one vector per block");
  K::SuperParams p;
  K::decodeSuper(rec, 0, p);
  std::memcpy(dw, p.dw, sizeof p.dw);
  std::memcpy(ow, p.ow, sizeof p.ow);
}

void qdotSuperParamsQ6K(const uint8_t *rec, float (*dw)[kQRows]) {
  using K = qdot_avx512vnni::KernelGgml<QScheme::Q6_K>;
  static_assert(sizeof(K::SuperParams::dw) == 16 * kQRows * sizeof(float),
                "two vectors per block");
  K::SuperParams p;
  K::decodeSuper(rec, 0, p);
  std::memcpy(dw, p.dw, sizeof p.dw);
}
} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
