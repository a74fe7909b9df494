//===- qdot_avxvnni.cpp - 256-bit VNNI integer dot-product kernels --------===//
//
// qdot_x86.inc at 256 bits with vpdpbusd, compiled twice: for AVX-VNNI (the
// VEX encoding) and for AVX512-VNNI + VL (the EVEX encoding of the same
// instruction), so that Isa::AvxVnni runs on either kind of CPU.
//
//===----------------------------------------------------------------------===//
#include "qdot.h"

#include <algorithm>

#if ETLLM_CPU_X86
#include "qdot_target.h"

ETLLM_CPU_TARGET_BEGIN("avx2,fma,f16c,avxvnni")
namespace etllm::rt::cpu {
namespace qdot_avxvnni {
namespace {
#define QDOT_W512 0
#define QDOT_VNNI 1
#define QDOT_VEX 1
#include "qdot_x86.inc"
#undef QDOT_W512
#undef QDOT_VNNI
#undef QDOT_VEX
} // namespace
} // namespace qdot_avxvnni

QDotFn qdotAvxVnni(const PackedQBlockLayout &l, bool perToken) {
  return qdot_avxvnni::select(l, perToken);
}
} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END

ETLLM_CPU_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")
namespace etllm::rt::cpu {
namespace qdot_avxvnni_evex {
namespace {
#define QDOT_W512 0
#define QDOT_VNNI 1
#define QDOT_VEX 0
#include "qdot_x86.inc"
#undef QDOT_W512
#undef QDOT_VNNI
#undef QDOT_VEX
} // namespace
} // namespace qdot_avxvnni_evex

QDotFn qdotAvxVnniEvex(const PackedQBlockLayout &l, bool perToken) {
  return qdot_avxvnni_evex::select(l, perToken);
}
} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
