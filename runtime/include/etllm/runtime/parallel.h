//===- parallel.h - Data-parallel loops over the thread pool ----*- C++ -*-===//
//
// Kernels split independent work (output rows, heads) over the execution
// context's pthreadpool. Without a pool (or with one thread) the loops run
// inline on the calling thread, in order. The callables are invoked through
// a template trampoline: no std::function, no allocation.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_PARALLEL_H
#define ETLLM_RUNTIME_PARALLEL_H

#include "etllm/runtime/kernel.h"

#include <pthreadpool.h>

#include <cstddef>

namespace etllm::rt {

namespace detail {
template <typename Fn> void parallelItemTrampoline(void *fn, size_t i) {
  (*static_cast<const Fn *>(fn))(i);
}
template <typename Fn>
void parallelTileTrampoline(void *fn, size_t begin, size_t count) {
  (*static_cast<const Fn *>(fn))(begin, begin + count);
}
inline pthreadpool *poolFor(const ExecContext *ctx) {
  if (!ctx || !ctx->threadPool() || ctx->numThreads() <= 1)
    return nullptr;
  return ctx->threadPool();
}
} // namespace detail

/// Calls `fn(i)` for every i in [0, n). With a thread pool in `ctx` the calls
/// run concurrently on the pool's threads in an unspecified order, so `fn`
/// must only write state that belongs to item i. `ctx` may be null.
template <typename Fn>
void parallelFor(const ExecContext *ctx, size_t n, const Fn &fn) {
  pthreadpool *pool = detail::poolFor(ctx);
  if (!pool || n <= 1) {
    for (size_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  pthreadpool_parallelize_1d(pool, &detail::parallelItemTrampoline<Fn>,
                             const_cast<void *>(static_cast<const void *>(&fn)),
                             n, /*flags=*/0);
}

/// Calls `fn(begin, end)` for consecutive tiles [begin, end) of at most
/// `tile` items that cover [0, n). Tile number `begin / tile` is unique to
/// one call, which lets a kernel give every tile its own slice of scratch
/// memory (see numTiles()). `ctx` may be null.
template <typename Fn>
void parallelForTiles(const ExecContext *ctx, size_t n, size_t tile,
                      const Fn &fn) {
  if (tile == 0)
    tile = 1;
  pthreadpool *pool = detail::poolFor(ctx);
  if (!pool || n <= tile) {
    for (size_t b = 0; b < n; b += tile)
      fn(b, b + tile < n ? b + tile : n);
    return;
  }
  pthreadpool_parallelize_1d_tile_1d(
      pool, &detail::parallelTileTrampoline<Fn>,
      const_cast<void *>(static_cast<const void *>(&fn)), n, tile,
      /*flags=*/0);
}

/// Below this many scalar operations in total a loop runs on the calling
/// thread: waking the pool costs more than it saves, and on an
/// oversubscribed machine its spinning workers stall small kernels badly.
inline constexpr size_t kMinParallelWork = size_t(1) << 18;

/// A tile size that splits `n` items into about four tiles per thread (for
/// load balance), or one tile without a pool or when `n` items of
/// `workPerItem` operations each (0: unknown) are too little work to share.
inline size_t defaultTile(const ExecContext *ctx, size_t n,
                          size_t workPerItem = 0) {
  if (workPerItem && n * workPerItem < kMinParallelWork)
    return n == 0 ? 1 : n;
  size_t threads = detail::poolFor(ctx) ? ctx->numThreads() : 1;
  size_t tiles = threads == 1 ? 1 : threads * 4;
  size_t tile = (n + tiles - 1) / tiles;
  return tile == 0 ? 1 : tile;
}

/// The number of tiles parallelForTiles(ctx, n, tile, ...) calls.
inline size_t numTiles(size_t n, size_t tile) {
  return tile == 0 ? n : (n + tile - 1) / tile;
}

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_PARALLEL_H
