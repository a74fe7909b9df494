//===- parallel.h - Data-parallel loops over the thread pool ----*- C++ -*-===//
//
// Kernels split independent work (output rows, heads) over the execution
// context's pthreadpool. Without a pool (or with one thread) the loops run
// inline on the calling thread, in order. The callables are invoked through
// a template trampoline: no std::function, no allocation.
//
// The pool's workers sleep between jobs instead of spinning, and a job that
// keeps its caller waiting for late workers (the other cores are busy with
// other processes) is noted: after two such jobs in a row the loops run on
// the calling thread for 100 ms before trying the pool again, so that with
// a busy machine two threads cost about what one does instead of
// collapsing. Results never depend on which thread ran a tile.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_PARALLEL_H
#define ETLLM_RUNTIME_PARALLEL_H

#include "etllm/runtime/kernel.h"

#include <pthreadpool.h>

#include <chrono>
#include <cstddef>
#include <thread>

namespace etllm::rt {

namespace detail {

/// A late job: the workers made the caller wait this much longer than its
/// own share of the work took, and at least kLateNs.
inline constexpr int64_t kLateNs = 200000;
/// After kLateJobs late jobs in a row, kernels run inline this long before
/// the pool is tried again.
inline constexpr int kLateJobs = 2;
inline constexpr int64_t kInlineNs = 100000000;

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline pthreadpool *poolFor(const ExecContext *ctx) {
  if (!ctx || !ctx->threadPool() || ctx->numThreads() <= 1)
    return nullptr;
  if (ctx->poolHealth().inlineUntilNs != 0) {
    if (nowNs() < ctx->poolHealth().inlineUntilNs)
      return nullptr; // the workers have been late: run inline for now
    ctx->poolHealth().inlineUntilNs = 0;
  }
  return ctx->threadPool();
}

/// A job's function with the time the calling thread spends in it.
template <typename Fn> struct TimedJob {
  const Fn *fn;
  std::thread::id caller;
  int64_t callerNs = 0;
};

template <typename Fn> void parallelItemTrampoline(void *p, size_t i) {
  auto *job = static_cast<TimedJob<Fn> *>(p);
  if (std::this_thread::get_id() != job->caller)
    return (*job->fn)(i);
  const int64_t t0 = nowNs();
  (*job->fn)(i);
  job->callerNs += nowNs() - t0;
}
template <typename Fn>
void parallelTileTrampoline(void *p, size_t begin, size_t count) {
  auto *job = static_cast<TimedJob<Fn> *>(p);
  if (std::this_thread::get_id() != job->caller)
    return (*job->fn)(begin, begin + count);
  const int64_t t0 = nowNs();
  (*job->fn)(begin, begin + count);
  job->callerNs += nowNs() - t0;
}

/// Records whether a job that took `wallNs` kept the caller waiting.
inline void noteJob(const ExecContext *ctx, int64_t wallNs, int64_t callerNs) {
  PoolHealth &h = ctx->poolHealth();
  const int64_t waited = wallNs - callerNs;
  if (waited > kLateNs && waited > callerNs) {
    if (++h.late >= kLateJobs) {
      h.late = 0;
      h.inlineUntilNs = nowNs() + kInlineNs;
    }
  } else {
    h.late = 0;
  }
}

/// Workers sleep in the kernel between jobs (never spin): a spinning worker
/// uses up its share of a core that another process also needs, so it is
/// descheduled when work arrives, while a sleeping one is woken and
/// scheduled promptly.
inline constexpr uint32_t kPoolFlags = PTHREADPOOL_FLAG_YIELD_WORKERS;

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
  detail::TimedJob<Fn> job{&fn, std::this_thread::get_id()};
  const int64_t t0 = detail::nowNs();
  pthreadpool_parallelize_1d(pool, &detail::parallelItemTrampoline<Fn>, &job, n,
                             detail::kPoolFlags);
  detail::noteJob(ctx, detail::nowNs() - t0, job.callerNs);
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
  detail::TimedJob<Fn> job{&fn, std::this_thread::get_id()};
  const int64_t t0 = detail::nowNs();
  pthreadpool_parallelize_1d_tile_1d(pool, &detail::parallelTileTrampoline<Fn>,
                                     &job, n, tile, detail::kPoolFlags);
  detail::noteJob(ctx, detail::nowNs() - t0, job.callerNs);
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
