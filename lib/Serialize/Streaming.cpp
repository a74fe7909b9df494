//===- Streaming.cpp - Program data on every core, in order ---------------===//
#include "etllm/Serialize/Streaming.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <openssl/evp.h>

#include <algorithm>

namespace etllm {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || !EVP_DigestInit_ex(static_cast<EVP_MD_CTX *>(ctx_), EVP_sha256(),
                                  nullptr))
    llvm::report_fatal_error("OpenSSL: cannot initialize SHA-256");
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX *>(ctx_)); }

void Sha256::update(const void *data, size_t size) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX *>(ctx_), data, size);
}

std::array<uint8_t, 32> Sha256::finish() {
  std::array<uint8_t, 32> md{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX *>(ctx_), md.data(), &len);
  return md;
}

std::string sha256Hex(const uint8_t *data, size_t size) {
  Sha256 h;
  h.update(data, size);
  std::array<uint8_t, 32> md = h.finish();
  return llvm::toHex(llvm::ArrayRef<uint8_t>(md.data(), md.size()),
                     /*LowerCase=*/true);
}

InputHasher::~InputHasher() {
  if (worker.joinable())
    worker.join();
}

size_t InputHasher::add(const uint8_t *data, size_t size) {
  ranges.push_back({data, size});
  return ranges.size() - 1;
}

void InputHasher::start() {
  if (started)
    return;
  started = true;
  digests.resize(ranges.size());
  worker = std::thread([this] {
    for (size_t i = 0; i < ranges.size(); ++i)
      digests[i] = sha256Hex(ranges[i].first, ranges[i].second);
  });
}

std::string InputHasher::hex(size_t i) {
  start();
  if (worker.joinable())
    worker.join();
  return i < digests.size() ? digests[i] : std::string();
}

unsigned defaultProducerThreads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

OrderedProducer::OrderedProducer(mlir::MLIRContext *context,
                                 std::vector<uint64_t> sizes, unsigned threads,
                                 uint64_t maxBufferedBytes, Produce produce)
    : sizes(std::move(sizes)), maxBuffered(maxBufferedBytes),
      produce(std::move(produce)) {
  // Workers only read the IR; without a thread-safe context, produce inline.
  if (!context->isMultithreadingEnabled())
    threads = 1;
  threads = std::min<size_t>(threads, this->sizes.size());
  if (threads <= 1)
    return;
  diagnostics = std::make_unique<mlir::ParallelDiagnosticHandler>(context);
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([this] { work(); });
}

OrderedProducer::~OrderedProducer() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  for (std::thread &w : workers)
    w.join();
  // Destroying the handler emits the workers' diagnostics, in item order.
  diagnostics.reset();
}

bool OrderedProducer::mayStart(size_t i) const {
  return i < sizes.size() && !failed && !stopping &&
         (i == nextToReturn || buffered + sizes[i] <= maxBuffered);
}

void OrderedProducer::work() {
  std::unique_lock<std::mutex> lock(mutex);
  while (true) {
    changed.wait(lock, [&] {
      return stopping || failed || nextToStart >= sizes.size() ||
             mayStart(nextToStart);
    });
    if (stopping || failed || nextToStart >= sizes.size())
      return;
    size_t i = nextToStart++;
    buffered += sizes[i];
    lock.unlock();
    diagnostics->setOrderIDForThread(i);
    mlir::FailureOr<std::vector<uint8_t>> r = produce(i);
    diagnostics->eraseOrderIDForThread();
    lock.lock();
    if (mlir::failed(r))
      failed = true;
    done.emplace(i, std::move(r));
    changed.notify_all();
  }
}

mlir::FailureOr<std::vector<uint8_t>> OrderedProducer::next() {
  if (workers.empty()) {
    if (failed || nextToReturn >= sizes.size())
      return mlir::failure();
    mlir::FailureOr<std::vector<uint8_t>> r = produce(nextToReturn++);
    failed = mlir::failed(r);
    return r;
  }
  std::unique_lock<std::mutex> lock(mutex);
  size_t i = nextToReturn;
  if (i >= sizes.size() || returnedFailure)
    return mlir::failure();
  changed.wait(lock,
               [&] { return done.count(i) || (failed && nextToStart <= i); });
  auto it = done.find(i);
  if (it == done.end())
    return mlir::failure(); // an earlier item failed before this one started
  mlir::FailureOr<std::vector<uint8_t>> r = std::move(it->second);
  done.erase(it);
  ++nextToReturn;
  buffered -= sizes[i];
  returnedFailure = mlir::failed(r);
  changed.notify_all();
  return r;
}

} // namespace etllm
