//===- qdot_avx512vnni.cpp - 512-bit integer dot-product kernels ----------===//
//
// qdot_x86.inc at 512 bits: AVX-512 with vpdpbusd (AVX512-VNNI).
//
//===----------------------------------------------------------------------===//
#include "qdot.h"

#include <algorithm>

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
} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
