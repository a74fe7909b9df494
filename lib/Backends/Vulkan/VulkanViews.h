//===- VulkanViews.h - Views of activations in the Vulkan plan --*- C++ -*-===//
//
// Reshapes, transposes and slices as strides and offsets (no dispatch), and
// the forms the kernels read: rows (a matrix with contiguous rows), flat
// (contiguous elements), and the copy that turns any view into another.
// The sequence dimension (`dyn`) has extent S at run time and is laid out at
// its bound; a view whose strides would depend on S is not a view.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_BACKENDS_VULKAN_VULKANVIEWS_H
#define ETLLM_LIB_BACKENDS_VULKAN_VULKANVIEWS_H

#include "VulkanPlan.h"

#include "etllm/runtime/vulkan/params.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>

namespace etllm::vk {

/// Sizes with the dynamic dimension at `bound` (its index in `dyn`).
struct Shape {
  llvm::SmallVector<int64_t, 4> sizes;
  int dyn = -1;
};
/// The shape of a ranked tensor type with its dynamic dimension at `bound`
/// (nullopt: rank > 4 or more than one dynamic dimension).
std::optional<Shape> shapeOfType(mlir::Type type, int64_t bound);

/// Row-major storage of `shape` in slot `slot`, its dimensions laid out in
/// `order` (outermost first; empty: 0, 1, ...).
View contiguousView(int slot, const Shape &shape,
                    llvm::ArrayRef<int> order = {});
/// Whether `v` is the row-major layout of its own shape from element 0.
bool isWholeContiguous(const View &v);

View transposeView(View v, int d0, int d1);
/// A reshape as a view, when strides can express it.
std::optional<View> reshapeView(const View &v, const Shape &to);
/// A slice as a view (on the sequence dimension only [-1:], [0:1] and the
/// whole of it).
std::optional<View> sliceView(View v, int dim, int64_t start, int64_t end,
                              int64_t step, int64_t bound);
/// Whether a slice of the sequence dimension has a view (legality).
bool sequenceSliceHasView(int64_t start, int64_t end, int64_t step,
                          int64_t bound);

/// A matrix of rows m0 + mS * S, each contiguous, `stride` apart.
struct Rows {
  int64_t m0 = 0, mS = 0, stride = 0, off = 0, offS = 0, cols = 0;
};
std::optional<Rows> rowsOf(const View &v);
/// n0 + nS * S contiguous elements.
struct Flat {
  int64_t n0 = 0, nS = 0, off = 0, offS = 0;
};
std::optional<Flat> flatOf(const View &v);

/// The parameters of a copy from `src` to `dst` (same logical shape).
rt::vulkan::CopyParams copyParams(const View &src, const View &dst);

} // namespace etllm::vk

#endif // ETLLM_LIB_BACKENDS_VULKAN_VULKANVIEWS_H
