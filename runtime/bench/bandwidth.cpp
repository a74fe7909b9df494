//===- bandwidth.cpp - Memory read bandwidth probe ------------------------===//
//
// Written here rather than taken from a library: STREAM itself is a C
// program with a fixed array size (and measures copy/scale/add/triad, not
// a pure read), and decode needs exactly the read rate of one buffer split
// over N threads. The loop sums 64-bit lanes in four independent vector
// accumulators so it is bound by memory, not by the adds.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/bench/bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace etllm::rt::bench {

namespace {

typedef uint64_t U64x2 __attribute__((vector_size(16), may_alias));

/// The portable loop: eight independent 16-byte accumulators (baseline
/// SSE2 on x86-64, NEON on aarch64), no spills.
uint64_t sumSliceGeneric(const uint8_t *p, size_t n) {
  const U64x2 *v = reinterpret_cast<const U64x2 *>(p);
  size_t blocks = n / (8 * sizeof(U64x2));
  U64x2 a0 = {0, 0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
        a7 = a0;
  for (size_t i = 0; i < blocks; ++i, v += 8) {
    a0 += v[0];
    a1 += v[1];
    a2 += v[2];
    a3 += v[3];
    a4 += v[4];
    a5 += v[5];
    a6 += v[6];
    a7 += v[7];
  }
  U64x2 s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
  return s[0] + s[1];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
typedef uint64_t U64x4 __attribute__((vector_size(32), may_alias));
/// 32-byte loads where the CPU has AVX2 (what the decode kernels use).
__attribute__((target("avx2"))) uint64_t sumSliceAvx2(const uint8_t *p,
                                                      size_t n) {
  const U64x4 *v = reinterpret_cast<const U64x4 *>(p);
  size_t blocks = n / (4 * sizeof(U64x4));
  U64x4 a = {0, 0, 0, 0}, b = a, c = a, d = a;
  for (size_t i = 0; i < blocks; ++i, v += 4) {
    a += v[0];
    b += v[1];
    c += v[2];
    d += v[3];
  }
  U64x4 s = (a + b) + (c + d);
  return s[0] + s[1] + s[2] + s[3];
}
#endif

using SumFn = uint64_t (*)(const uint8_t *, size_t);
SumFn pickSum() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2"))
    return sumSliceAvx2;
#endif
  return sumSliceGeneric;
}

/// Sizes like "32768K" or "32M" from sysfs.
size_t parseCacheSize(const std::string &s) {
  size_t v = 0, i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9')
    v = v * 10 + size_t(s[i++] - '0');
  if (i < s.size() && (s[i] == 'K' || s[i] == 'k'))
    v <<= 10;
  else if (i < s.size() && (s[i] == 'M' || s[i] == 'm'))
    v <<= 20;
  return v;
}

std::atomic<uint64_t> sink{0};

} // namespace

size_t lastLevelCacheBytes() {
  size_t best = 0;
  for (int idx = 0; idx < 8; ++idx) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::ifstream type(dir + "type"), size(dir + "size");
    if (!type || !size)
      continue;
    std::string t, s;
    type >> t;
    size >> s;
    if (t == "Instruction")
      continue;
    best = std::max(best, parseCacheSize(s));
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (best == 0) {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    best = size_t(std::max<long>(std::max<long>(l3, l2), 0));
  }
#endif
  return best;
}

size_t defaultProbeBytes() {
  size_t bytes = std::max<size_t>(16 * lastLevelCacheBytes(), 256u << 20);
  bytes = std::min<size_t>(bytes, size_t(2) << 30);
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0)
    bytes = std::min<size_t>(bytes, size_t(pages) * size_t(pageSize) / 4);
  return bytes;
}

namespace {

/// Best and all rates of `threads` threads over `buf` (one warm-up pass).
std::vector<double> measure(const uint8_t *buf, size_t bytes, size_t threads,
                            int repetitions) {
  using Clock = std::chrono::steady_clock;
  SumFn sum = pickSum();
  // Slices are multiples of 128 bytes (one loop iteration).
  size_t per = (bytes / threads) & ~size_t(127);
  auto pass = [&]() {
    std::atomic<size_t> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t]() {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire))
          std::this_thread::yield();
        sink.fetch_add(sum(buf + t * per, per), std::memory_order_relaxed);
      });
    while (ready.load() != threads)
      std::this_thread::yield();
    auto t0 = Clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread &th : pool)
      th.join();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    return s > 0 ? double(per * threads) / s : 0.0;
  };
  pass(); // warm-up: TLB, clocks
  std::vector<double> samples;
  for (int i = 0; i < repetitions; ++i)
    samples.push_back(pass());
  return samples;
}

} // namespace

Result<std::vector<BandwidthResult>>
measureReadBandwidth(const std::vector<size_t> &threadCounts, size_t bytes,
                     int repetitions) {
  bytes &= ~size_t(4095);
  if (bytes < (size_t(1) << 20))
    return Error("the bandwidth probe needs a buffer of at least 1 MiB, got " +
                 std::to_string(bytes) + " bytes");
  if (repetitions < 1)
    return Error("the bandwidth probe needs at least one repetition");
  for (size_t t : threadCounts)
    if (t < 1 || t > 1024)
      return Error("the bandwidth probe cannot use " + std::to_string(t) +
                   " threads");
  std::vector<BandwidthResult> results(threadCounts.size());
  for (size_t i = 0; i < threadCounts.size(); ++i) {
    results[i].threads = threadCounts[i];
    results[i].bytes = bytes;
  }
  // Small pages first, then huge pages (one buffer mapped at a time).
  for (bool huge : {false, true}) {
    void *mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
      return Error("cannot map " + std::to_string(bytes >> 20) +
                   " MiB for the bandwidth probe");
#ifdef MADV_HUGEPAGE
    madvise(mem, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
    uint8_t *buf = static_cast<uint8_t *>(mem);
    // Touch every page with non-zero data (no shared zero page, no faults
    // in the timed passes).
    for (size_t i = 0; i < bytes; i += 64)
      std::memset(buf + i, int(i >> 6) & 0xff, 64);
    for (BandwidthResult &r : results) {
      std::vector<double> s = measure(buf, bytes, r.threads, repetitions);
      (huge ? r.hugePageSamples : r.samples) = s;
      double best = *std::max_element(s.begin(), s.end());
      (huge ? r.bestHugePages : r.bestSmallPages) = best;
      r.best = std::max(r.best, best);
    }
    munmap(mem, bytes);
  }
  return results;
}

} // namespace etllm::rt::bench
