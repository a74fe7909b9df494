//===- kernels.cpp - ISA selection and the dense-kernel table -------------===//
#include "internal.h"

#include <cstdlib>
#include <cstring>
#if ETLLM_CPU_X86
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif
#if ETLLM_CPU_ARM64
#if defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__linux__)
#include <sys/auxv.h> // getauxval: glibc, musl, and bionic since API 18
#endif
#endif

namespace etllm::rt::cpu {

namespace {

#if ETLLM_CPU_X86
/// F16C (vcvtph2ps), from cpuid leaf 1 (GCC 12's __builtin_cpu_supports
/// has no name for it).
bool hasF16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

/// Whether this process may run AMX tile instructions: the CPU has
/// AMX-TILE and AMX-INT8 (cpuid leaf 7: EDX bits 24 and 25) and the OS
/// grants the tile data state. Linux enables that state per process on
/// request (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, 5.16+);
/// without the grant the first tile instruction faults. Asked once; other
/// systems: no.
bool amxUsable() {
  static const bool usable = [] {
#if defined(__linux__) && defined(SYS_arch_prctl)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) ||
        !(d & (1u << 25)))
      return false;
    // The uapi's values (asm/prctl.h, an ABI; not in glibc's headers).
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) != 0)
      return false;
    // The OS saves the tile state (XCR0 bits 17 and 18).
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & (3u << 17)) == (3u << 17);
#else
    return false;
#endif
  }();
  return usable;
}
#endif

#if ETLLM_CPU_ARM64
/// The arm64 extensions the kernels use.
struct ArmFeatures {
  bool neon = false, dotprod = false, i8mm = false;
};

#if defined(__APPLE__)
/// A Darwin hw.optional flag (0 when the name is unknown).
bool sysctlFlag(const char *name) {
  int v = 0;
  size_t size = sizeof v;
  return sysctlbyname(name, &v, &size, nullptr, 0) == 0 && v != 0;
}
#endif

ArmFeatures readArmFeatures() {
  ArmFeatures f;
#if defined(__linux__)
  // The kernel's bits (arch/arm64/include/uapi/asm/hwcap.h: an ABI, so
  // spelled out where the C library's headers predate them).
  constexpr unsigned long kHwcapAsimd = 1ul << 1, kHwcapAsimdDp = 1ul << 20;
  constexpr unsigned long kHwcap2I8mm = 1ul << 13;
  const unsigned long hw = getauxval(AT_HWCAP);
#ifdef AT_HWCAP2
  const unsigned long hw2 = getauxval(AT_HWCAP2);
#else
  const unsigned long hw2 = 0;
#endif
  f.neon = (hw & kHwcapAsimd) != 0;
  f.dotprod = f.neon && (hw & kHwcapAsimdDp) != 0;
  f.i8mm = f.dotprod && (hw2 & kHwcap2I8mm) != 0;
#elif defined(__APPLE__)
  f.neon = true; // every Apple arm64 CPU
  f.dotprod = sysctlFlag("hw.optional.arm.FEAT_DotProd");
  f.i8mm = f.dotprod && sysctlFlag("hw.optional.arm.FEAT_I8MM");
#else
  // No way to ask the CPU: what the compiler was told it may assume.
  f.neon = true;
#if defined(__ARM_FEATURE_DOTPROD)
  f.dotprod = true;
#endif
#if defined(__ARM_FEATURE_DOTPROD) && defined(__ARM_FEATURE_MATMUL_INT8)
  f.i8mm = true;
#endif
#endif
  return f;
}

const ArmFeatures &armFeatures() {
  static const ArmFeatures f = readArmFeatures();
  return f;
}
#endif

constexpr const char *kIsaNames[kNumIsas] = {"generic", "avx2",       "avxvnni",
                                             "avx512",  "avx512vnni", "neon",
                                             "dotprod", "i8mm",       "amx"};

constexpr const char *kIsaRequirements[kNumIsas] = {
    "nothing",
    "x86-64 with AVX2, FMA and F16C",
    "x86-64 with AVX-VNNI or AVX512-VNNI + VL",
    "x86-64 with AVX-512 F/BW/DQ/VL",
    "x86-64 with AVX-512 F/BW/DQ/VL and AVX512-VNNI",
    "arm64 with Advanced SIMD (NEON)",
    "arm64 with FEAT_DotProd (SDOT; Armv8.2, e.g. Cortex-A55/A76)",
    "arm64 with FEAT_DotProd and FEAT_I8MM (SMMLA; Armv8.6, e.g. "
    "Cortex-A710, Neoverse N2/V1)",
    "x86-64 with AVX-512 VNNI, AMX-TILE and AMX-INT8, and the OS's leave "
    "to use the tile state (Linux 5.16+; e.g. Xeon Sapphire Rapids)"};

} // namespace

IsaArch isaArch(Isa isa) {
  switch (isa) {
  case Isa::Generic:
    return IsaArch::Any;
  case Isa::Avx2:
  case Isa::AvxVnni:
  case Isa::Avx512:
  case Isa::Avx512Vnni:
  case Isa::Amx:
    return IsaArch::X86;
  case Isa::Neon:
  case Isa::Dotprod:
  case Isa::I8mm:
    return IsaArch::Arm64;
  }
  return IsaArch::Any;
}

bool isaSupported(Isa isa) {
  switch (isaArch(isa)) {
  case IsaArch::Any:
    return true;
  case IsaArch::X86: {
#if ETLLM_CPU_X86
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") &&
                      __builtin_cpu_supports("fma") && hasF16c();
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                        __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vl");
    const bool avx512vnni = avx512 && __builtin_cpu_supports("avx512vnni");
    switch (isa) {
    case Isa::Avx2:
      return avx2;
    case Isa::AvxVnni:
      return avx2 && (__builtin_cpu_supports("avxvnni") || avx512vnni);
    case Isa::Avx512:
      return avx512;
    case Isa::Avx512Vnni:
      return avx512vnni;
    case Isa::Amx:
      return avx512vnni && amxUsable();
    default:
      return false;
    }
#else
    return false;
#endif
  }
  case IsaArch::Arm64: {
#if ETLLM_CPU_ARM64
    const ArmFeatures &f = armFeatures();
    switch (isa) {
    case Isa::Neon:
      return f.neon;
    case Isa::Dotprod:
      return f.dotprod;
    case Isa::I8mm:
      return f.i8mm;
    default:
      return false;
    }
#else
    return false;
#endif
  }
  }
  return false;
}

bool hasVexVnni() {
#if ETLLM_CPU_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("avxvnni");
#else
  return false;
#endif
}

bool parseIsa(const char *name, Isa &isa) {
  for (int i = 0; i < kNumIsas; ++i)
    if (name && std::strcmp(name, kIsaNames[i]) == 0) {
      isa = Isa(i);
      return true;
    }
  return false;
}

const char *isaCapVariable() {
  // ETLLM_XNNPACK_ISA: the variable's name before the backend became
  // `cpu`, still read when ETLLM_CPU_ISA is not set.
  const char *cap = std::getenv("ETLLM_CPU_ISA");
  return cap ? cap : std::getenv("ETLLM_XNNPACK_ISA");
}

Isa detectIsa() {
  static const Isa best = [] {
    int cap = kNumIsas - 1;
    IsaArch arch = IsaArch::Any; // Any: every architecture's paths
    Isa capped;
    if (parseIsa(isaCapVariable(), capped)) {
      cap = int(capped);
      arch = isaArch(capped);
    }
    for (int i = cap; i > 0; --i)
      if ((arch == IsaArch::Any ? true : isaArch(Isa(i)) == arch) &&
          isaSupported(Isa(i)))
        return Isa(i);
    return Isa::Generic;
  }();
  return best;
}

const char *isaName(Isa isa) {
  return int(isa) < kNumIsas ? kIsaNames[int(isa)] : "?";
}

const char *isaRequirement(Isa isa) {
  return int(isa) < kNumIsas ? kIsaRequirements[int(isa)] : "?";
}

Status checkStorage(const char *op, const char *what, const Tensor &t) {
  Result<size_t> bytes = storageBytes(t.dtype, t.sizes, t.rank, t.quant);
  if (!bytes.ok())
    return kernelError(op, std::string(what) + ": " + bytes.message());
  if (*bytes > t.capacity || (*bytes > 0 && !t.data))
    return kernelError(op, std::string(what) + " " + t.shapeString() +
                               " does not fit its storage");
  return Status();
}

Status checkLinearArgs(const char *op, const KernelArgs &a) {
  if (a.inputs.size < 2 || a.inputs.size > 3 || a.outputs.size != 1 ||
      !a.outputs[0])
    return kernelError(op, "expects 2 or 3 inputs and 1 output");
  for (size_t i = 0; i < a.inputs.size; ++i)
    if (!a.inputs[i])
      return kernelError(op, "input " + std::to_string(i) + " is null");
  return Status();
}

bool storageOk(const Tensor *t) {
  if (!t)
    return false;
  Result<size_t> bytes = storageBytes(t->dtype, t->sizes, t->rank, t->quant);
  return bytes.ok() && *bytes <= t->capacity && (*bytes == 0 || t->data);
}

Status resizeLike(const char *op, Tensor &out, const Tensor &in, int64_t last) {
  int64_t sizes[kMaxRank];
  for (int i = 0; i < in.rank; ++i)
    sizes[i] = in.sizes[i];
  if (in.rank > 0)
    sizes[in.rank - 1] = last;
  Status st = out.resize(sizes, in.rank);
  if (!st.ok())
    return kernelError(op, "output: " + st.message());
  return Status();
}

DenseKernelFn denseKernel(OpId id) {
  switch (id) {
  case OpId::QuantizeDynamic:
    return quantizeDynamicKernel;
  case OpId::RmsNorm:
    return rmsNormKernel;
  case OpId::Add:
    return addKernel;
  case OpId::Sub:
    return subKernel;
  case OpId::Mul:
    return mulKernel;
  case OpId::Silu:
    return siluKernel;
  case OpId::Gelu:
    return geluKernel;
  case OpId::Sigmoid:
    return sigmoidKernel;
  case OpId::Tanh:
    return tanhKernel;
  case OpId::Relu:
    return reluKernel;
  case OpId::Sdpa:
    return sdpaKernel;
  case OpId::KvCacheUpdate:
    return kvCacheUpdateKernel;
  case OpId::Transpose:
    return transposeKernel;
  case OpId::Reshape:
    return reshapeKernel;
  case OpId::Slice:
    return sliceKernel;
  case OpId::Matmul:
    return matmulKernel;
  case OpId::Lora:
    return loraKernel;
  default:
    return nullptr;
  }
}

Status runDense(OpId id, const KernelArgs &args, Isa isa) {
  if (DenseKernelFn fn = denseKernel(id)) {
    bool handled = false;
    Status st = fn(args, isa, handled);
    if (handled)
      return st;
  }
  KernelFn portable = portableKernels().get(id);
  if (!portable)
    return Error(std::string("no kernel for operator '") + opInfo(id).name +
                 "'");
  return portable(args);
}

} // namespace etllm::rt::cpu
