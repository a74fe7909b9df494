//===- qdot_neon.cpp - NEON integer dot-product kernels -------------------===//
//
// qdot_arm.inc with SMULL/SMLAL products (Armv8.0: every arm64 CPU; no
// target attribute needed), and the weight-only f32 kernels of every arm64
// path.
//
//===----------------------------------------------------------------------===//
#include "qdot.h"

#include <algorithm>

#if ETLLM_CPU_ARM64
namespace etllm::rt::cpu {
namespace qdot_neon {
namespace {
#define QDOT_DOT 0
#define QDOT_MMLA 0
#include "qdot_arm.inc"
#include "qdot_arm_f32.inc"
#undef QDOT_DOT
#undef QDOT_MMLA
} // namespace
} // namespace qdot_neon

QDotF32Fn qdotF32Neon(const PackedQBlockLayout &l) {
  return qdot_neon::selectF32(l);
}

QDotFn qdotNeon(const PackedQBlockLayout &l, bool perToken) {
  return qdot_neon::select(l, perToken);
}
} // namespace etllm::rt::cpu
#endif
