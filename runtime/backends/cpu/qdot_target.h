//===- qdot_target.h - Target regions for the ISA kernel files --*- C++ -*-===//
//
// Internal to runtime/backends/cpu. ETLLM_CPU_TARGET_BEGIN("avx2,fma")
// ... ETLLM_CPU_TARGET_END compiles every function defined in between
// (templates included, so that one kernel source can be instantiated for
// several ISAs) for that target, without a global -march flag; the calls
// into them are guarded by cpuid (kernels.cpp). Include every system header
// before the region so that no library code is compiled for the target.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_BACKENDS_CPU_QDOT_TARGET_H
#define ETLLM_BACKENDS_CPU_QDOT_TARGET_H

#define ETLLM_CPU_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define ETLLM_CPU_TARGET_BEGIN(t)                                              \
  ETLLM_CPU_PRAGMA(                                                            \
      clang attribute push(__attribute__((target(t))), apply_to = function))
#define ETLLM_CPU_TARGET_END ETLLM_CPU_PRAGMA(clang attribute pop)
#else
#define ETLLM_CPU_TARGET_BEGIN(t)                                              \
  ETLLM_CPU_PRAGMA(GCC push_options) ETLLM_CPU_PRAGMA(GCC target(t))
#define ETLLM_CPU_TARGET_END ETLLM_CPU_PRAGMA(GCC pop_options)
#endif

// For the AVX-512 kernel files: GCC 12 reports the deliberately undefined
// pass-through operand of its AVX-512 intrinsics (_mm512_undefined_ps,
// _mm512_undefined_epi32) as uninitialized, "maybe" or not depending on
// where they are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#define ETLLM_CPU_AVX512_DIAGNOSTICS                                           \
  ETLLM_CPU_PRAGMA(GCC diagnostic ignored "-Wmaybe-uninitialized")             \
  ETLLM_CPU_PRAGMA(GCC diagnostic ignored "-Wuninitialized")
#else
#define ETLLM_CPU_AVX512_DIAGNOSTICS
#endif

#endif // ETLLM_BACKENDS_CPU_QDOT_TARGET_H
