//===- kernels.cpp - ISA selection and the dense-kernel table -------------===//
#include "internal.h"

namespace etllm::rt::xnnpack {

bool isaSupported(Isa isa) {
  switch (isa) {
  case Isa::Generic:
    return true;
  case Isa::Avx2:
#if ETLLM_XNN_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
  }
  return false;
}

Isa detectIsa() {
  static const Isa best = isaSupported(Isa::Avx2) ? Isa::Avx2 : Isa::Generic;
  return best;
}

const char *isaName(Isa isa) {
  switch (isa) {
  case Isa::Generic:
    return "generic";
  case Isa::Avx2:
    return "avx2";
  }
  return "?";
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
