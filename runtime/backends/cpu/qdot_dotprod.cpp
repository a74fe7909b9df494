//===- qdot_dotprod.cpp - SDOT integer dot-product kernels ----------------===//
//
// qdot_arm.inc with SDOT (FEAT_DotProd, Armv8.2), prefill in Chunks panels.
//
//===----------------------------------------------------------------------===//
#include "qdot.h"

#include <algorithm>

#if ETLLM_CPU_ARM64
#include "qdot_target.h"

ETLLM_CPU_TARGET_BEGIN("arch=armv8.2-a+dotprod")
namespace etllm::rt::cpu {
namespace qdot_dotprod {
namespace {
#define QDOT_DOT 1
#define QDOT_MMLA 0
#include "qdot_arm.inc"
#undef QDOT_DOT
#undef QDOT_MMLA
} // namespace
} // namespace qdot_dotprod

QDotFn qdotDotprod(const PackedQBlockLayout &l, bool perToken) {
  return qdot_dotprod::select(l, perToken);
}
} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
