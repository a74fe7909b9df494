//===- kernels.cpp - ISA selection and the dense-kernel table -------------===//
#include "internal.h"

#include <cstdlib>
#include <cstring>
#if ETLLM_XNN_X86
#include <cpuid.h>
#endif

namespace etllm::rt::xnnpack {

namespace {

#if ETLLM_XNN_X86
/// F16C (vcvtph2ps), from cpuid leaf 1 (GCC 12's __builtin_cpu_supports
/// has no name for it).
bool hasF16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

constexpr const char *kIsaNames[kNumIsas] = {"generic", "avx2", "avxvnni",
                                             "avx512", "avx512vnni"};

} // namespace

bool isaSupported(Isa isa) {
#if ETLLM_XNN_X86
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") &&
                    __builtin_cpu_supports("fma") && hasF16c();
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  const bool avx512vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  switch (isa) {
  case Isa::Generic:
    return true;
  case Isa::Avx2:
    return avx2;
  case Isa::AvxVnni:
    return avx2 && (__builtin_cpu_supports("avxvnni") || avx512vnni);
  case Isa::Avx512:
    return avx512;
  case Isa::Avx512Vnni:
    return avx512vnni;
  }
  return false;
#else
  return isa == Isa::Generic;
#endif
}

bool hasVexVnni() {
#if ETLLM_XNN_X86
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

Isa detectIsa() {
  static const Isa best = [] {
    int cap = kNumIsas - 1;
    Isa capped;
    if (parseIsa(std::getenv("ETLLM_XNNPACK_ISA"), capped))
      cap = int(capped);
    for (int i = cap; i > 0; --i)
      if (isaSupported(Isa(i)))
        return Isa(i);
    return Isa::Generic;
  }();
  return best;
}

const char *isaName(Isa isa) {
  return int(isa) < kNumIsas ? kIsaNames[int(isa)] : "?";
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

} // namespace etllm::rt::xnnpack
