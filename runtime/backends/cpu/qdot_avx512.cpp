//===- qdot_avx512.cpp - 512-bit integer dot-product kernels --------------===//
//
// qdot_x86.inc at 512 bits: AVX-512 F/BW/DQ/VL with maddubs.
//
//===----------------------------------------------------------------------===//
#include "qdot.h"

#include <algorithm>

#if ETLLM_CPU_X86
#include "qdot_target.h"

ETLLM_CPU_AVX512_DIAGNOSTICS

ETLLM_CPU_TARGET_BEGIN("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")
namespace etllm::rt::cpu {
namespace qdot_avx512 {
namespace {
#define QDOT_W512 1
#define QDOT_VNNI 0
#define QDOT_VEX 0
#include "qdot_x86.inc"
#undef QDOT_W512
#undef QDOT_VNNI
#undef QDOT_VEX
} // namespace
} // namespace qdot_avx512

QDotF32Fn qdotF32Avx512(const PackedQBlockLayout &l) {
  return qdot_avx512::selectF32(l);
}

QDotFn qdotAvx512(const PackedQBlockLayout &l, bool perToken) {
  return qdot_avx512::select(l, perToken);
}
} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
