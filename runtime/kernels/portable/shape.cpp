//===- shape.cpp - Shape and index kernels --------------------------------===//
//
// Dtype-agnostic byte movers: they work for every non-quantized dtype and
// require the output dtype to equal the input's. reshape, squeeze and
// unsqueeze are views: when the memory planner aliased the output with the
// input (out.data == in.data) only the shape is set.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"

#include "etllm/runtime/slice_bounds.h"

#include <algorithm>

namespace etllm::rt::portable {
namespace {

Status checkSameDType(const char *op, const Tensor &in, const Tensor &out) {
  ETLLM_RETURN_IF_ERROR(checkPlain(op, in));
  if (out.dtype != in.dtype)
    return unsupportedDTypes(op, in.dtype, out.dtype);
  return Status();
}

/// out[i] = in[offset + sum_d i_d * strides[d]] over the shape `os`.
Status stridedCopy(const char *op, const Tensor &in, Tensor &out,
                   const Shape &os, const int64_t *inStrides, int64_t offset) {
  int64_t strides[1][kMaxRank];
  for (int d = 0; d < os.rank; ++d)
    strides[0][d] = inStrides[d];
  return dispatchBytes(in.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
    const T *src = in.ptr<T>() + offset;
    T *dst = out.ptr<T>();
    forEachIndex<1>(os, strides, [&](int64_t o, const int64_t *off) {
      dst[o] = src[off[0]];
    });
    return Status();
  });
}

/// A view: set the shape, and copy the bytes unless the storage is shared.
Status view(const char *op, const Tensor &in, Tensor &out, const Shape &os) {
  if (os.numel() != in.numel())
    return opError(op, "cannot view " + in.shapeString() + " as " + os.str());
  const void *src = in.data;
  size_t bytes = in.nbytes();
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
  if (bytes && out.data != src)
    std::memmove(out.data, src, bytes);
  return Status();
}

Status permuteImpl(const char *op, const Tensor &in, Tensor &out,
                   const int64_t *perm, int n) {
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, in, out));
  if (n != in.rank)
    return opError(op, "expected " + std::to_string(in.rank) +
                           " dimensions, got " + std::to_string(n));
  bool seen[kMaxRank] = {};
  int64_t inStrides[kMaxRank], strides[kMaxRank];
  contiguousStrides(in.sizes, in.rank, inStrides);
  Shape os;
  os.rank = in.rank;
  for (int i = 0; i < n; ++i) {
    int d;
    ETLLM_RETURN_IF_ERROR(normalizeDim(op, perm[i], in.rank, d));
    if (seen[d])
      return opError(op,
                     "dimension " + std::to_string(perm[i]) + " appears twice");
    seen[d] = true;
    os.sizes[i] = in.sizes[d];
    strides[i] = inStrides[d];
  }
  return stridedCopy(op, in, out, os, strides, 0);
}

/// index_copy / index_put / kv_cache_update: out = in with
/// out.select(dim, idx[i]) = src.select(dim, i) (or += when accumulating).
/// Every index is validated before anything is written.
Status scatterAlongDim(const char *op, const Tensor &in, const Tensor &idx,
                       const Tensor &src, Tensor &out, int64_t dimAttr,
                       bool accumulate, bool allowNegative) {
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, in, out));
  if (src.dtype != in.dtype)
    return unsupportedDTypes(op, in.dtype, src.dtype, out.dtype);
  int dim;
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, dimAttr, in.rank, dim));
  if (idx.rank != 1)
    return opError(op, "index must be 1-D, got " + idx.shapeString());
  const int64_t n = idx.dim(0);
  bool shapeOk = src.rank == in.rank;
  for (int d = 0; shapeOk && d < in.rank; ++d)
    shapeOk = src.sizes[d] == (d == dim ? n : in.sizes[d]);
  if (!shapeOk)
    return opError(op, "source " + src.shapeString() +
                           " does not match the destination " +
                           in.shapeString() + " with " + std::to_string(n) +
                           " indices along dimension " + std::to_string(dim));
  const int64_t size = in.sizes[dim];
  ETLLM_RETURN_IF_ERROR(checkIndices(op, idx, size, allowNegative));
  // Copy the destination first unless updating in place.
  const void *inData = in.data;
  size_t inBytes = in.nbytes();
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(in)));
  if (inBytes && out.data != inData)
    std::memmove(out.data, inData, inBytes);
  const int64_t outer = prod(in.sizes, 0, dim);
  const int64_t inner = prod(in.sizes, dim + 1, in.rank);
  auto body = [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T *ps = src.ptr<T>();
    T *po = out.ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t t = loadIndex(idx, i);
      if (t < 0)
        t += size;
      for (int64_t o = 0; o < outer; ++o) {
        T *d = po + (o * size + t) * inner;
        const T *s = ps + (o * n + i) * inner;
        if (!accumulate) {
          std::memcpy(d, s, size_t(inner) * sizeof(T));
          continue;
        }
        for (int64_t j = 0; j < inner; ++j) {
          if constexpr (kIsFloat<T>)
            d[j] = fromF32<T>(toF32(d[j]) + toF32(s[j]));
          else if constexpr (kIsBool<T>)
            d[j] = Bool8{uint8_t(d[j].v || s[j].v)};
          else {
            using U = std::make_unsigned_t<T>;
            d[j] = T(U(U(d[j]) + U(s[j])));
          }
        }
      }
    }
    return Status();
  };
  return dispatchAll(in.dtype, op, body);
}

} // namespace

Status scatterSlices(const char *op, const Tensor &in, const Tensor &idx,
                     const Tensor &src, Tensor &out, int64_t dim) {
  return scatterAlongDim(op, in, idx, src, out, dim, false, false);
}

Status kernelTranspose(const KernelArgs &a) {
  const char *op = opName(OpId::Transpose);
  const Tensor &in = *a.inputs[0];
  int d0, d1;
  int rank = in.rank == 0 ? 1 : in.rank;
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, a.ints[0], rank, d0));
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, a.ints[1], rank, d1));
  int64_t perm[kMaxRank];
  for (int i = 0; i < in.rank; ++i)
    perm[i] = i;
  if (in.rank > 0)
    std::swap(perm[d0], perm[d1]);
  return permuteImpl(op, in, *a.outputs[0], perm, in.rank);
}

Status kernelPermute(const KernelArgs &a) {
  return permuteImpl(opName(OpId::Permute), *a.inputs[0], *a.outputs[0],
                     a.ints.data,
                     int(std::min<size_t>(a.ints.size, kMaxRank + 1)));
}

Status kernelReshape(const KernelArgs &a) {
  const char *op = opName(OpId::Reshape);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, in, out));
  if (a.ints.size > size_t(kMaxRank))
    return opError(op, "target rank " + std::to_string(a.ints.size) +
                           " is too large");
  Shape os;
  os.rank = int(a.ints.size);
  int inferred = -1;
  uint64_t known = 1;
  for (int i = 0; i < os.rank; ++i) {
    int64_t s = a.ints[i];
    if (s == -1) {
      if (inferred >= 0)
        return opError(op, "more than one -1 in the target shape");
      inferred = i;
      continue;
    }
    if (s < 0)
      return opError(op, "invalid target size " + std::to_string(s));
    if (__builtin_mul_overflow(known, uint64_t(s), &known))
      return opError(op, "target shape is too large");
    os.sizes[i] = s;
  }
  const uint64_t numel = uint64_t(in.numel());
  if (inferred >= 0) {
    if (known == 0 || numel % known != 0)
      return opError(op, "cannot infer the -1 of the target shape for " +
                             in.shapeString());
    os.sizes[inferred] = int64_t(numel / known);
  }
  return view(op, in, out, os);
}

Status kernelUnsqueeze(const KernelArgs &a) {
  const char *op = opName(OpId::Unsqueeze);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, in, out));
  if (in.rank >= kMaxRank)
    return opError(op, "rank is already " + std::to_string(kMaxRank));
  int d;
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, a.ints[0], in.rank + 1, d));
  Shape os;
  os.rank = in.rank + 1;
  for (int i = 0, j = 0; i < os.rank; ++i)
    os.sizes[i] = i == d ? 1 : in.sizes[j++];
  return view(op, in, out, os);
}

Status kernelSqueeze(const KernelArgs &a) {
  const char *op = opName(OpId::Squeeze);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, in, out));
  Shape os = Shape::of(in);
  if (in.rank > 0) {
    int d;
    ETLLM_RETURN_IF_ERROR(normalizeDim(op, a.ints[0], in.rank, d));
    // As in PyTorch, squeezing a dimension whose size is not 1 is a no-op.
    if (in.sizes[d] == 1) {
      for (int i = d; i + 1 < in.rank; ++i)
        os.sizes[i] = in.sizes[i + 1];
      --os.rank;
    }
  } else if (a.ints[0] != 0 && a.ints[0] != -1) {
    return opError(op, "dimension " + std::to_string(a.ints[0]) +
                           " is out of range for a scalar");
  }
  return view(op, in, out, os);
}

Status kernelExpand(const KernelArgs &a) {
  const char *op = opName(OpId::Expand);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, in, out));
  const int n = int(std::min<size_t>(a.ints.size, kMaxRank + 1));
  if (n > kMaxRank || n < in.rank)
    return opError(op, "target rank " + std::to_string(a.ints.size) +
                           " is invalid for " + in.shapeString());
  Shape os;
  os.rank = n;
  const int lead = n - in.rank;
  for (int i = 0; i < n; ++i) {
    int64_t t = a.ints[i];
    if (i < lead) {
      if (t < 0)
        return opError(op, "new leading dimension " + std::to_string(i) +
                               " needs an explicit size, got " +
                               std::to_string(t));
      os.sizes[i] = t;
      continue;
    }
    int64_t s = in.sizes[i - lead];
    if (t == -1)
      t = s;
    if (t < 0 || (s != 1 && s != t))
      return opError(op, "cannot expand " + in.shapeString() + " to size " +
                             std::to_string(a.ints[i]) + " at dimension " +
                             std::to_string(i));
    os.sizes[i] = t;
  }
  int64_t strides[kMaxRank];
  broadcastStrides(in, os, strides);
  return stridedCopy(op, in, out, os, strides, 0);
}

Status kernelSlice(const KernelArgs &a) {
  const char *op = opName(OpId::Slice);
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, in, out));
  int d;
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, a.ints[0], in.rank, d));
  int64_t start = a.ints[1], end = a.ints[2];
  const int64_t step = a.ints[3];
  if (step <= 0)
    return opError(op, "step must be positive, got " + std::to_string(step));
  const int64_t size = in.sizes[d];
  clampSliceBounds(size, start, end);
  const int64_t len = end > start ? (end - start - 1) / step + 1 : 0;
  Shape os = Shape::of(in);
  os.sizes[d] = len;
  int64_t strides[kMaxRank];
  contiguousStrides(in.sizes, in.rank, strides);
  const int64_t offset = start * strides[d];
  // With len > 1, step < size, so the product cannot overflow.
  strides[d] = len > 1 ? strides[d] * step : 0;
  return stridedCopy(op, in, out, os, strides, len ? offset : 0);
}

Status kernelCat(const KernelArgs &a) {
  const char *op = opName(OpId::Cat);
  const Tensor &first = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, first, out));
  if (first.rank == 0)
    return opError(op, "cannot concatenate scalars");
  int d;
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, a.ints[0], first.rank, d));
  Shape os = Shape::of(first);
  os.sizes[d] = 0;
  for (size_t i = 0; i < a.inputs.size; ++i) {
    const Tensor &t = *a.inputs[i];
    bool ok = t.dtype == first.dtype && t.rank == first.rank;
    for (int j = 0; ok && j < t.rank; ++j)
      ok = j == d || t.sizes[j] == first.sizes[j];
    if (!ok)
      return opError(op, "input " + std::to_string(i) + " " + t.shapeString() +
                             " does not match input 0 " + first.shapeString() +
                             " along dimension " + std::to_string(d));
    os.sizes[d] += t.sizes[d];
  }
  const size_t es = elementSize(first.dtype);
  const int64_t outer = prod(os.sizes, 0, d);
  const size_t inner = size_t(prod(os.sizes, d + 1, os.rank)) * es;
  const size_t outRow = size_t(os.sizes[d]) * inner;
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
  uint8_t *dst = out.ptr<uint8_t>();
  size_t col = 0;
  for (size_t i = 0; i < a.inputs.size; ++i) {
    const Tensor &t = *a.inputs[i];
    const size_t row = size_t(t.sizes[d]) * inner;
    const uint8_t *src = t.ptr<uint8_t>();
    for (int64_t o = 0; o < outer && row; ++o)
      std::memcpy(dst + size_t(o) * outRow + col, src + size_t(o) * row, row);
    col += row;
  }
  return Status();
}

Status kernelSplit(const KernelArgs &a) {
  const char *op = opName(OpId::Split);
  const Tensor &in = *a.inputs[0];
  ETLLM_RETURN_IF_ERROR(checkPlain(op, in));
  if (a.ints.size < 2)
    return opError(op, "expects ints [dim, sizes...]");
  const size_t pieces = a.ints.size - 1;
  if (pieces != a.outputs.size)
    return opError(op, std::to_string(pieces) + " sizes for " +
                           std::to_string(a.outputs.size) + " outputs");
  int d;
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, a.ints[0], in.rank, d));
  int64_t total = 0;
  for (size_t i = 0; i < pieces; ++i) {
    int64_t s = a.ints[i + 1];
    if (s < 0 || s > in.sizes[d] - total)
      return opError(op, "sizes do not add up to the dimension " +
                             std::to_string(in.sizes[d]) + " of " +
                             in.shapeString());
    total += s;
    if (a.outputs[i]->dtype != in.dtype)
      return unsupportedDTypes(op, in.dtype, a.outputs[i]->dtype);
  }
  if (total != in.sizes[d])
    return opError(op, "sizes add up to " + std::to_string(total) +
                           ", not to the dimension " +
                           std::to_string(in.sizes[d]) + " of " +
                           in.shapeString());
  const size_t es = elementSize(in.dtype);
  const int64_t outer = prod(in.sizes, 0, d);
  const size_t inner = size_t(prod(in.sizes, d + 1, in.rank)) * es;
  const size_t inRow = size_t(in.sizes[d]) * inner;
  // Resize every output first so that a capacity error writes nothing.
  for (size_t i = 0; i < pieces; ++i) {
    Shape os = Shape::of(in);
    os.sizes[d] = a.ints[i + 1];
    ETLLM_RETURN_IF_ERROR(resizeTo(op, *a.outputs[i], os));
  }
  const uint8_t *src = in.ptr<uint8_t>();
  size_t col = 0;
  for (size_t i = 0; i < pieces; ++i) {
    const size_t row = size_t(a.ints[i + 1]) * inner;
    uint8_t *dst = a.outputs[i]->ptr<uint8_t>();
    for (int64_t o = 0; o < outer && row; ++o)
      std::memcpy(dst + size_t(o) * row, src + size_t(o) * inRow + col, row);
    col += row;
  }
  return Status();
}

Status kernelIndexSelect(const KernelArgs &a) {
  const char *op = opName(OpId::IndexSelect);
  const Tensor &in = *a.inputs[0], &idx = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, in, out));
  if (idx.rank != 1)
    return opError(op, "index must be 1-D, got " + idx.shapeString());
  int d;
  ETLLM_RETURN_IF_ERROR(normalizeDim(op, a.ints[0], in.rank, d));
  ETLLM_RETURN_IF_ERROR(checkIndices(op, idx, in.sizes[d]));
  const int64_t n = idx.dim(0);
  Shape os = Shape::of(in);
  os.sizes[d] = n;
  const size_t es = elementSize(in.dtype);
  const int64_t outer = prod(in.sizes, 0, d);
  const size_t inner = size_t(prod(in.sizes, d + 1, in.rank)) * es;
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
  const uint8_t *src = in.ptr<uint8_t>();
  uint8_t *dst = out.ptr<uint8_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + (size_t(o * n + i)) * inner,
                  src + size_t(o * in.sizes[d] + loadIndex(idx, i)) * inner,
                  inner);
  return Status();
}

Status kernelGather(const KernelArgs &a) {
  const char *op = opName(OpId::Gather);
  const Tensor &in = *a.inputs[0], &idx = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkSameDType(op, in, out));
  int d;
  ETLLM_RETURN_IF_ERROR(
      normalizeDim(op, a.ints[0], in.rank == 0 ? 1 : in.rank, d));
  if (idx.rank != in.rank)
    return opError(op, "index " + idx.shapeString() +
                           " must have the rank of the input " +
                           in.shapeString());
  for (int j = 0; j < in.rank; ++j)
    if (j != d && idx.sizes[j] > in.sizes[j])
      return opError(op, "index " + idx.shapeString() +
                             " is larger than the input " + in.shapeString() +
                             " at dimension " + std::to_string(j));
  const int64_t size = in.rank == 0 ? 1 : in.sizes[d];
  ETLLM_RETURN_IF_ERROR(checkIndices(op, idx, size));
  Shape os = Shape::of(idx);
  int64_t inStrides[kMaxRank];
  contiguousStrides(in.sizes, in.rank, inStrides);
  int64_t strides[1][kMaxRank];
  for (int j = 0; j < in.rank; ++j)
    strides[0][j] = j == d ? 0 : inStrides[j];
  const int64_t dimStride = in.rank == 0 ? 0 : inStrides[d];
  return dispatchBytes(in.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
    const T *src = in.ptr<T>();
    T *dst = out.ptr<T>();
    forEachIndex<1>(os, strides, [&](int64_t o, const int64_t *off) {
      dst[o] = src[off[0] + loadIndex(idx, o) * dimStride];
    });
    return Status();
  });
}

Status kernelIndexCopy(const KernelArgs &a) {
  return scatterAlongDim(opName(OpId::IndexCopy), *a.inputs[0], *a.inputs[1],
                         *a.inputs[2], *a.outputs[0], a.ints[0],
                         /*accumulate=*/false, /*allowNegative=*/false);
}

Status kernelIndexPut(const KernelArgs &a) {
  // Like tensor[..., idx, ...] = values, negative indices count from the end.
  return scatterAlongDim(opName(OpId::IndexPut), *a.inputs[0], *a.inputs[1],
                         *a.inputs[2], *a.outputs[0], a.ints[0],
                         /*accumulate=*/a.ints[1] != 0,
                         /*allowNegative=*/true);
}

} // namespace etllm::rt::portable
