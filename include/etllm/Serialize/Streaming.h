//===- Streaming.h - Program data on every core, in order -------*- C++ -*-===//
//
// The two things that made writing a program slower than converting a
// checkpoint, kept apart from the writer so that it only calls them:
//
//  - InputHasher: SHA-256 of input files over the bytes already mapped
//    (never a second read), on a background thread, so the provenance
//    hashes cost no time on the export's critical path. OpenSSL's SHA-256
//    (SHA extensions where the CPU has them, ~1.5-2 GB/s on one core).
//  - OrderedProducer: produces the program's constants (conversion,
//    quantization, packing) on N threads and hands them back in file order,
//    with the bytes produced but not yet written bounded, so the program is
//    streamed as before and never held in memory. Each constant is produced
//    by the same function whatever the thread count: the output is
//    byte-identical with 1 and N threads.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_SERIALIZE_STREAMING_H
#define ETLLM_SERIALIZE_STREAMING_H

#include "mlir/Support/LogicalResult.h"

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mlir {
class MLIRContext;
class ParallelDiagnosticHandler;
} // namespace mlir

namespace etllm {

/// Hex SHA-256 of `size` bytes at `data`.
std::string sha256Hex(const uint8_t *data, size_t size);

/// SHA-256 over bytes given piece by piece (OpenSSL's EVP digest): the
/// program's content hash (Emission.cpp) and sha256Hex use it.
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256 &) = delete;
  Sha256 &operator=(const Sha256 &) = delete;
  void update(const void *data, size_t size);
  /// The 32-byte digest (the hasher is spent afterwards).
  std::array<uint8_t, 32> finish();

private:
  void *ctx_; // EVP_MD_CTX
};

/// Hashes byte ranges on one background thread, in the order added.
class InputHasher {
public:
  InputHasher() = default;
  ~InputHasher();
  InputHasher(const InputHasher &) = delete;
  InputHasher &operator=(const InputHasher &) = delete;
  /// Queues a range (which must stay valid until hex() or destruction);
  /// returns its index. Call start() after the last add().
  size_t add(const uint8_t *data, size_t size);
  /// Starts hashing everything added.
  void start();
  /// The hex digest of range `i` (waits for it).
  std::string hex(size_t i);

private:
  std::vector<std::pair<const uint8_t *, size_t>> ranges;
  std::vector<std::string> digests;
  std::thread worker;
  bool started = false;
};

/// The number of threads "all cores" means (at least 1).
unsigned defaultProducerThreads();

/// Produces items 0 .. n-1 with `produce(i)` on `threads` threads (1: on
/// the caller's thread, in next()) and returns them in order from next().
/// Items of `sizes[i]` planned bytes are started ahead of the consumer only
/// while the planned bytes started but not yet returned stay within
/// `maxBufferedBytes` (the next item always starts). Diagnostics emitted by
/// `produce` on the workers are replayed in item order
/// (ParallelDiagnosticHandler); after a failure no further item starts.
class OrderedProducer {
public:
  using Produce = std::function<mlir::FailureOr<std::vector<uint8_t>>(size_t)>;
  OrderedProducer(mlir::MLIRContext *context, std::vector<uint64_t> sizes,
                  unsigned threads, uint64_t maxBufferedBytes, Produce produce);
  /// Stops the workers (items not yet returned are dropped).
  ~OrderedProducer();
  OrderedProducer(const OrderedProducer &) = delete;
  OrderedProducer &operator=(const OrderedProducer &) = delete;

  /// The next item, in order; failure when it failed, when an earlier item
  /// failed, or past the last item.
  mlir::FailureOr<std::vector<uint8_t>> next();

private:
  void work();
  bool mayStart(size_t i) const;

  std::vector<uint64_t> sizes;
  uint64_t maxBuffered;
  Produce produce;
  std::unique_ptr<mlir::ParallelDiagnosticHandler> diagnostics;
  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable changed;
  size_t nextToStart = 0, nextToReturn = 0;
  uint64_t buffered = 0; // planned bytes started and not yet returned
  std::map<size_t, mlir::FailureOr<std::vector<uint8_t>>> done;
  bool failed = false, stopping = false, returnedFailure = false;
};

} // namespace etllm

#endif // ETLLM_SERIALIZE_STREAMING_H
