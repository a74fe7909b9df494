//===- qdot_avx2.cpp - AVX2 integer dot-product kernels -------------------===//
//
// qdot_x86.inc at 256 bits with maddubs (AVX2 + FMA + F16C).
//
//===----------------------------------------------------------------------===//
#include "qdot.h"

#include <algorithm>

#if ETLLM_CPU_X86
#include "qdot_target.h"

ETLLM_CPU_TARGET_BEGIN("avx2,fma,f16c")
namespace etllm::rt::cpu {
namespace qdot_avx2 {
namespace {
#define QDOT_W512 0
#define QDOT_VNNI 0
#define QDOT_VEX 0
#include "qdot_x86.inc"
#undef QDOT_W512
#undef QDOT_VNNI
#undef QDOT_VEX
} // namespace
} // namespace qdot_avx2

QDotF32Fn qdotF32Avx2(const PackedQBlockLayout &l) {
  return qdot_avx2::selectF32(l);
}

QDotFn qdotAvx2(const PackedQBlockLayout &l, bool perToken) {
  return qdot_avx2::select(l, perToken);
}
} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
