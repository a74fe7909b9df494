//===- kernels.h - Optimized CPU kernels of the xnnpack backend -*- C++ -*-===//
//
// The kernels the "xnnpack" delegate runs. Each has a portable C++ path
// (written for auto-vectorization; the ARM path for now) and, on x86-64, an
// AVX2+FMA path compiled with a target attribute and chosen at run time, so
// the library itself keeps the baseline x86-64 flags.
//
// They follow the KernelArgs convention of kernel.h (inputs, outputs,
// attributes, ExecContext for the thread pool and scratch) and are tested
// against the portable reference kernels (portableKernels()):
//
//  * linearPacked / qlinearPacked read weights the compiler packed into
//    packing.h's layouts (F32_NR8, QWEIGHT_NR8); there is no portable kernel
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
#ifndef ETLLM_RUNTIME_XNNPACK_KERNELS_H
#define ETLLM_RUNTIME_XNNPACK_KERNELS_H

#include "etllm/runtime/kernel.h"
#include "etllm/runtime/result.h"

#include <cstdint>

namespace etllm::rt::xnnpack {

/// The instruction-set paths of the kernels.
enum class Isa : uint8_t {
  Generic = 0, ///< portable C++ (auto-vectorized for the build's baseline)
  Avx2 = 1,    ///< x86-64 AVX2 + FMA intrinsics
};

/// The best path this CPU supports (checked once, with cpuid).
Isa detectIsa();
/// Whether this CPU can run `isa`'s code.
bool isaSupported(Isa isa);
/// "generic" or "avx2".
const char *isaName(Isa isa);

/// linear (out = x @ W^T + bias) whose weight inputs[1] is an f32 [N, K]
/// tensor holding PackedF32Layout bytes. x, bias and out are f32.
Status linearPacked(const KernelArgs &args, Isa isa);

/// qlinear whose weight inputs[1] is a QWeight [N, K] tensor (its `quant`
/// gives bits/group/symmetry) holding PackedQWeightLayout bytes. The input
/// is f32 (weight-only quantization) or an 8-bit QAct (integer dot products
/// per group); bias and out are f32.
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

} // namespace etllm::rt::xnnpack

#endif // ETLLM_RUNTIME_XNNPACK_KERNELS_H
