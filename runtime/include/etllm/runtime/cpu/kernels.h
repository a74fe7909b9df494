//===- kernels.h - Optimized CPU kernels of the cpu backend -----*- C++ -*-===//
//
// The kernels the "cpu" delegate runs. Each has a portable C++ path
// (written for auto-vectorization) and, on x86-64, an AVX2+FMA path, on
// arm64 a NEON path (the integer dot products also SDOT and SMMLA ones),
// compiled with target attributes and chosen at run time, so the library
// itself keeps the architecture's baseline flags.
//
// They follow the KernelArgs convention of kernel.h (inputs, outputs,
// attributes, ExecContext for the thread pool and scratch) and are tested
// against the portable reference kernels (portableKernels()):
//
//  * linearPacked / qlinearPacked read weights the compiler packed into
//    packing.h's layouts (F32_NR8, QWEIGHT_R16); there is no portable kernel
//    for those bytes, so they handle every shape themselves.
//  * The dense kernels (denseKernel()) have fast paths for the common cases
//    and decline the rest (handled = false, outputs untouched), in which
//    case the caller runs the portable kernel: runDense() does both.
//
// Numerics (see the tests for the measured tolerances): quantize_dynamic,
// relu, add/sub/mul and rms_norm's scaling are bit-identical to portable;
// linear/qlinear reassociate f32 sums (FMA, blocked over k); qlinear on
// quantized activations computes exact int32 group dot products and
// rescales in f32; the transcendental unary kernels use polynomial
// approximations of exp/tanh/erf accurate to a few ulp.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_CPU_KERNELS_H
#define ETLLM_RUNTIME_CPU_KERNELS_H

#include "etllm/runtime/kernel.h"
#include "etllm/runtime/result.h"

#include <cstdint>

namespace etllm::rt::cpu {

/// The instruction-set paths of the kernels. Each architecture's paths are
/// in increasing order: on x86-64 each path includes AVX2 + FMA + F16C (the
/// kernels without a wider variant run their AVX2 code on every x86 path);
/// on arm64 each includes NEON (the kernels without a dot-product variant
/// run their NEON code on every arm64 path). Amx, added after the arm64
/// paths, is the highest x86 path (detectIsa compares values within one
/// architecture only).
enum class Isa : uint8_t {
  Generic = 0,    ///< portable C++ (auto-vectorized for the build's baseline)
  Avx2 = 1,       ///< AVX2 + FMA + F16C intrinsics (maddubs dot products)
  AvxVnni = 2,    ///< Avx2 with 256-bit VNNI dot products (vpdpbusd): VEX
                  ///< AVX-VNNI, or its EVEX twin on AVX512-VNNI + VL CPUs
  Avx512 = 3,     ///< AVX-512 F/BW/DQ/VL (512-bit maddubs dot products)
  Avx512Vnni = 4, ///< Avx512 with 512-bit VNNI dot products
  Neon = 5,       ///< arm64 NEON (Armv8.0 Advanced SIMD) intrinsics
  Dotprod = 6,    ///< Neon with SDOT dot products (FEAT_DotProd, Armv8.2)
  I8mm = 7,       ///< Dotprod with SMMLA 8-bit matrix products (FEAT_I8MM)
  Amx = 8,        ///< Avx512Vnni with AMX-TILE and AMX-INT8 tile products
                  ///< (prefill qlinear; the OS must grant the tile state)
};
inline constexpr int kNumIsas = 9;

/// The architecture an ISA path belongs to.
enum class IsaArch : uint8_t { Any, X86, Arm64 };
/// Generic is Any; Avx2..Avx512Vnni and Amx are X86; Neon..I8mm are Arm64.
IsaArch isaArch(Isa isa);

/// The best path this CPU supports (checked once: cpuid on x86,
/// getauxval(AT_HWCAP/AT_HWCAP2) on arm64 Linux and Android, sysctl on
/// Darwin), capped by the environment variable ETLLM_CPU_ISA (an
/// isaName; isaCapVariable): the best supported path of the cap's
/// architecture at or below it (so generic, or a path of another
/// architecture, selects the portable kernels). Tests and benchmarks use the
/// cap to run each path.
Isa detectIsa();
/// The cap detectIsa reads: ETLLM_CPU_ISA, or when it is unset
/// ETLLM_XNNPACK_ISA (its name before the backend became `cpu`, kept as an
/// alias); null when neither is set.
const char *isaCapVariable();
/// Whether this CPU can run `isa`'s code.
bool isaSupported(Isa isa);
/// What `isa` needs of the CPU, for messages ("AVX-512 VNNI", "FEAT_I8MM").
const char *isaRequirement(Isa isa);
/// "generic", "avx2", "avxvnni", "avx512", "avx512vnni", "neon", "dotprod",
/// "i8mm" or "amx".
const char *isaName(Isa isa);
/// The ISA named `name` (isaName's spelling); false when unknown.
bool parseIsa(const char *name, Isa &isa);

/// linear (out = x @ W^T + bias) whose weight inputs[1] is an f32 [N, K]
/// tensor holding PackedF32Layout bytes. x, bias and out are f32.
Status linearPacked(const KernelArgs &args, Isa isa);

/// qlinear whose weight inputs[1] is a QWeight [N, K] tensor (its `quant`
/// gives bits/group/symmetry/scale type) holding PackedQBlockLayout bytes.
/// The input is f32 (weight-only quantization: dequantized weights, f32
/// products) or an 8-bit QAct, per block of 32 or per token (exact integer
/// dot products per block); bias and out are f32.
Status qlinearPacked(const KernelArgs &args, Isa isa);

/// An optimized kernel on dense operands. When its fast path does not apply
/// it sets `handled` to false without writing anything; otherwise it sets
/// `handled` and returns the kernel's status.
using DenseKernelFn = Status (*)(const KernelArgs &args, Isa isa,
                                 bool &handled);

/// The optimized dense kernel of `id` (quantize_dynamic, rms_norm, add, sub,
/// mul, silu, gelu, sigmoid, tanh, relu), or null.
DenseKernelFn denseKernel(OpId id);

/// Runs the optimized kernel of `id` when one applies, else the portable
/// one (which validates the argument counts and storage).
Status runDense(OpId id, const KernelArgs &args, Isa isa);

} // namespace etllm::rt::cpu

#endif // ETLLM_RUNTIME_CPU_KERNELS_H
