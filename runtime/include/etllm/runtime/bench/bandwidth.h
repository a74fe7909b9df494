//===- bandwidth.h - Memory read bandwidth probe ----------------*- C++ -*-===//
//
// A STREAM-like read probe: every thread sums its own contiguous slice of a
// buffer much larger than the last-level cache, and the rate is the bytes
// read divided by the wall time of the slowest thread. The best of several
// repetitions is reported, as STREAM does. Decode of a large model reads
// its weights this way (once per token, sequentially), so this rate is the
// ceiling a decode step can reach: the decode roofline.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_BENCH_BANDWIDTH_H
#define ETLLM_RUNTIME_BENCH_BANDWIDTH_H

#include "etllm/runtime/result.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace etllm::rt::bench {

/// Size of the last-level data cache in bytes (0 when unknown).
size_t lastLevelCacheBytes();

/// The probe's default buffer: 16 x the last-level cache, at least 256 MiB,
/// at most 2 GiB and a quarter of physical memory.
size_t defaultProbeBytes();

/// One measurement: `threads` threads reading a `bytes` buffer, once with
/// 4 KiB pages (MADV_NOHUGEPAGE) and once with transparent huge pages
/// (MADV_HUGEPAGE; the same as small pages where the kernel has none). The
/// hardware prefetchers stop at page boundaries, so the two can differ by
/// 2x: a mapped program's weights sit in whatever pages the page cache
/// gives them.
struct BandwidthResult {
  size_t threads = 0;
  size_t bytes = 0;
  /// Bytes per second of each repetition.
  std::vector<double> samples, hugePageSamples;
  double bestSmallPages = 0, bestHugePages = 0;
  /// The ceiling: the best of both.
  double best = 0;
};

/// Measures the read bandwidth for each entry of `threadCounts` (each >= 1)
/// over a buffer of `bytes` (rounded down to a multiple of 4 KiB),
/// `repetitions` times each after one untimed pass.
Result<std::vector<BandwidthResult>>
measureReadBandwidth(const std::vector<size_t> &threadCounts, size_t bytes,
                     int repetitions = 5);

} // namespace etllm::rt::bench

#endif // ETLLM_RUNTIME_BENCH_BANDWIDTH_H
