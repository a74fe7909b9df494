//===- qdot_i8mm.cpp - SMMLA integer dot-product kernels ------------------===//
//
// qdot_arm.inc with SDOT for the row tiles (decode) and SMMLA (FEAT_I8MM)
// for prefill, in Pairs panels.
//
//===----------------------------------------------------------------------===//
#include "qdot.h"

#include <algorithm>

#if ETLLM_CPU_ARM64
#include "qdot_target.h"

ETLLM_CPU_TARGET_BEGIN("arch=armv8.2-a+dotprod+i8mm")
namespace etllm::rt::cpu {
namespace qdot_i8mm {
namespace {
#define QDOT_DOT 1
#define QDOT_MMLA 1
#include "qdot_arm.inc"
#undef QDOT_DOT
#undef QDOT_MMLA
} // namespace
} // namespace qdot_i8mm

QDotFn qdotI8mm(const PackedQBlockLayout &l, bool perToken) {
  return qdot_i8mm::select(l, perToken);
}
} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
