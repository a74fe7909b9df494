//===- VulkanViews.cpp - Views of activations in the Vulkan plan ----------===//
#include "VulkanViews.h"

#include "mlir/IR/BuiltinTypes.h"

#include <numeric>

namespace etllm::vk {

std::optional<Shape> shapeOfType(mlir::Type type, int64_t bound) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(type);
  if (!t || t.getRank() > 4)
    return std::nullopt;
  Shape s;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    if (t.isDynamicDim(i)) {
      if (s.dyn >= 0)
        return std::nullopt;
      s.dyn = int(i);
      s.sizes.push_back(bound);
    } else {
      s.sizes.push_back(t.getDimSize(i));
    }
  }
  return s;
}

View contiguousView(int slot, const Shape &shape, llvm::ArrayRef<int> order) {
  View v;
  v.slot = slot;
  v.rank = int(shape.sizes.size());
  v.dyn = shape.dyn;
  llvm::SmallVector<int, 4> ord(order.begin(), order.end());
  if (ord.empty()) {
    ord.resize(v.rank);
    std::iota(ord.begin(), ord.end(), 0);
  }
  int64_t stride = 1;
  for (int p = v.rank - 1; p >= 0; --p) {
    const int d = ord[p];
    v.sizes[d] = shape.sizes[d];
    v.strides[d] = stride;
    stride *= shape.sizes[d];
  }
  return v;
}

bool isWholeContiguous(const View &v) {
  if (v.off || v.offS)
    return false;
  int64_t stride = 1;
  for (int d = v.rank - 1; d >= 0; --d) {
    if (v.sizes[d] != 1 && v.strides[d] != stride)
      return false;
    stride *= v.sizes[d];
  }
  return true;
}

View transposeView(View v, int d0, int d1) {
  std::swap(v.sizes[d0], v.sizes[d1]);
  std::swap(v.strides[d0], v.strides[d1]);
  if (v.dyn == d0)
    v.dyn = d1;
  else if (v.dyn == d1)
    v.dyn = d0;
  return v;
}

std::optional<View> reshapeView(const View &v, const Shape &to) {
  // Non-unit dimensions on both sides, grouped where their products agree;
  // the sequence dimension must stand alone in its group on both sides.
  struct D {
    int index;
    int64_t size, stride;
    bool dyn;
  };
  llvm::SmallVector<D, 4> in, out;
  for (int d = 0; d < v.rank; ++d)
    if (v.sizes[d] != 1 || d == v.dyn)
      in.push_back({d, v.sizes[d], v.strides[d], d == v.dyn});
  for (int d = 0; d < int(to.sizes.size()); ++d)
    if (to.sizes[d] != 1 || d == to.dyn)
      out.push_back({d, to.sizes[d], 0, d == to.dyn});
  View r;
  r.slot = v.slot;
  r.rank = int(to.sizes.size());
  r.dyn = to.dyn;
  r.off = v.off;
  r.offS = v.offS;
  for (int d = 0; d < r.rank; ++d)
    r.sizes[d] = to.sizes[d];
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    if (i == in.size() || j == out.size())
      return std::nullopt;
    if (in[i].dyn || out[j].dyn) {
      if (!in[i].dyn || !out[j].dyn)
        return std::nullopt;
      r.strides[out[j].index] = in[i].stride;
      ++i, ++j;
      continue;
    }
    // A group [i, i2) x [j, j2) of equal products.
    size_t i2 = i + 1, j2 = j + 1;
    int64_t pa = in[i].size, pb = out[j].size;
    while (pa != pb) {
      if (pa < pb) {
        if (i2 == in.size() || in[i2].dyn)
          return std::nullopt;
        pa *= in[i2++].size;
      } else {
        if (j2 == out.size() || out[j2].dyn)
          return std::nullopt;
        pb *= out[j2++].size;
      }
    }
    for (size_t k = i; k + 1 < i2; ++k)
      if (in[k].stride != in[k + 1].stride * in[k + 1].size)
        return std::nullopt; // the input group is not one run
    int64_t stride = in[i2 - 1].stride;
    for (size_t k = j2; k-- > j;) {
      r.strides[out[k].index] = stride;
      stride *= out[k].size;
    }
    i = i2;
    j = j2;
  }
  // Unit dimensions: any stride (their index is always 0).
  for (int d = 0; d < r.rank; ++d)
    if (r.sizes[d] == 1 && d != r.dyn)
      r.strides[d] = 1;
  return r;
}

bool sequenceSliceHasView(int64_t start, int64_t end, int64_t step,
                          int64_t bound) {
  if (step != 1)
    return false;
  const bool toEnd = end >= bound;
  return (start == -1 && toEnd) || (start == 0 && end == 1) ||
         (start == 0 && toEnd);
}

std::optional<View> sliceView(View v, int dim, int64_t start, int64_t end,
                              int64_t step, int64_t bound) {
  if (dim < 0)
    dim += v.rank;
  if (dim < 0 || dim >= v.rank || step < 1)
    return std::nullopt;
  if (dim == v.dyn) {
    if (!sequenceSliceHasView(start, end, step, bound))
      return std::nullopt;
    if (start == 0 && end >= bound)
      return v;
    if (start == -1) { // the last row: (S - 1) rows in
      v.off -= v.strides[dim];
      v.offS += v.strides[dim];
    }
    v.sizes[dim] = 1;
    v.dyn = -1;
    return v;
  }
  const int64_t n = v.sizes[dim];
  auto norm = [n](int64_t x) {
    if (x < 0)
      x += n;
    return std::clamp<int64_t>(x, 0, n);
  };
  const int64_t s = norm(start), e = norm(end);
  v.off += s * v.strides[dim];
  v.sizes[dim] = e > s ? (e - s + step - 1) / step : 0;
  v.strides[dim] *= step;
  return v;
}

std::optional<Rows> rowsOf(const View &v) {
  if (v.rank < 1)
    return std::nullopt;
  const int last = v.rank - 1;
  if (last == v.dyn || (v.sizes[last] != 1 && v.strides[last] != 1))
    return std::nullopt;
  Rows r;
  r.off = v.off;
  r.offS = v.offS;
  r.cols = v.sizes[last];
  // The leading dimensions larger than 1, outermost first: one run of
  // rows, the sequence (if any) the outermost of them.
  llvm::SmallVector<int, 4> lead;
  for (int d = 0; d < last; ++d)
    if (v.sizes[d] != 1 || d == v.dyn)
      lead.push_back(d);
  if (lead.empty()) {
    r.m0 = 1;
    r.stride = v.sizes[last];
    return r;
  }
  for (size_t k = 1; k < lead.size(); ++k) {
    if (lead[k] == v.dyn)
      return std::nullopt;
    if (v.strides[lead[k - 1]] != v.strides[lead[k]] * v.sizes[lead[k]])
      return std::nullopt;
  }
  int64_t product = 1;
  for (int d : lead)
    if (d != v.dyn)
      product *= v.sizes[d];
  if (lead[0] == v.dyn)
    r.mS = product;
  else
    r.m0 = product;
  r.stride = v.strides[lead.back()];
  return r;
}

std::optional<Flat> flatOf(const View &v) {
  // One run: the dimensions larger than 1 contiguous, the sequence (if any)
  // the outermost of them.
  Flat f{1, 0, v.off, v.offS};
  int64_t stride = 1;
  bool dyn = false;
  for (int d = v.rank - 1; d >= 0; --d) {
    if (v.sizes[d] == 1 && d != v.dyn)
      continue;
    if (dyn || v.strides[d] != stride)
      return std::nullopt;
    if (d == v.dyn) {
      dyn = true;
      continue;
    }
    f.n0 *= v.sizes[d];
    stride *= v.sizes[d];
  }
  if (dyn) {
    f.nS = f.n0;
    f.n0 = 0;
  }
  return f;
}

rt::vulkan::CopyParams copyParams(const View &src, const View &dst) {
  rt::vulkan::CopyParams p{};
  // Pad to 4 dimensions with leading ones.
  const int pad = 4 - src.rank;
  uint32_t n[4] = {1, 1, 1, 1}, ss[4] = {0, 0, 0, 0}, ds[4] = {0, 0, 0, 0};
  p.dyn = 4;
  for (int d = 0; d < src.rank; ++d) {
    n[pad + d] = uint32_t(d == src.dyn ? 1 : src.sizes[d]);
    ss[pad + d] = uint32_t(src.strides[d]);
    ds[pad + d] = uint32_t(dst.strides[d]);
    if (d == src.dyn)
      p.dyn = uint32_t(pad + d);
  }
  p.n0 = n[0];
  p.n1 = n[1];
  p.n2 = n[2];
  p.n3 = n[3];
  p.ss0 = ss[0];
  p.ss1 = ss[1];
  p.ss2 = ss[2];
  p.ss3 = ss[3];
  p.ds0 = ds[0];
  p.ds1 = ds[1];
  p.ds2 = ds[2];
  p.ds3 = ds[3];
  p.srcOff = int32_t(src.off);
  p.srcOffS = int32_t(src.offS);
  p.dstOff = int32_t(dst.off);
  p.dstOffS = int32_t(dst.offS);
  return p;
}

} // namespace etllm::vk
