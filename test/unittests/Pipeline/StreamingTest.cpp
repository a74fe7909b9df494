//===- StreamingTest.cpp - Hashing and producing program data in parallel -===//
//
// SHA-256 against published vectors and coreutils' sha256sum (one input past
// 2^29 bytes, where LLVM 19's SHA256 used to overflow its bit count); the
// ordered producer's contract (order, the memory bound, failures and their
// diagnostics in item order); and the point of it all: a program exported
// with 1 thread and with several is the same file, byte for byte.
//
//===----------------------------------------------------------------------===//
#include "etllm/Serialize/Streaming.h"
#include "PipelineTestUtil.h"

#include "etllm/Pipeline/Stage.h"
#include "etllm/Testing/Generator.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>

namespace {

std::string hashOf(const std::string &s) {
  return etllm::sha256Hex(reinterpret_cast<const uint8_t *>(s.data()),
                          s.size());
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(hashOf(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hashOf("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // `head -c 600000000 /dev/zero | sha256sum`: longer than 2^29 bytes, the
  // length whose bit count no longer fits 32 bits.
  std::vector<uint8_t> zeros(600000000);
  EXPECT_EQ(etllm::sha256Hex(zeros.data(), zeros.size()),
            "6abed397aee08fde271430d40c2407613c7cf79abfcf35fa40bb55ba5fe1cd0a");
}

TEST(Sha256, HasherHashesEveryRangeInTheBackground) {
  std::string a = "abc", b(100000, 'x'), c;
  etllm::InputHasher h;
  size_t ia = h.add(reinterpret_cast<const uint8_t *>(a.data()), a.size());
  size_t ib = h.add(reinterpret_cast<const uint8_t *>(b.data()), b.size());
  size_t ic = h.add(reinterpret_cast<const uint8_t *>(c.data()), c.size());
  h.start();
  EXPECT_EQ(h.hex(ib), hashOf(b));
  EXPECT_EQ(h.hex(ia), hashOf(a));
  EXPECT_EQ(h.hex(ic), hashOf(c));
}

/// Items of pseudo-random sizes whose bytes say which item they are.
std::vector<uint8_t> item(size_t i, uint64_t size) {
  std::vector<uint8_t> v(size);
  for (size_t k = 0; k < size; ++k)
    v[k] = uint8_t(i * 31 + k);
  return v;
}

TEST(OrderedProducer, InOrderWithinTheMemoryBound) {
  mlir::MLIRContext ctx;
  std::mt19937 rng(7);
  std::vector<uint64_t> sizes(60);
  for (uint64_t &s : sizes)
    s = 1 + rng() % 5000;
  const uint64_t budget = 8000, largest = 5000;
  for (unsigned threads : {1u, 2u, 4u, 8u}) {
    SCOPED_TRACE(threads);
    std::atomic<uint64_t> live{0}, peak{0};
    std::atomic<size_t> calls{0};
    etllm::OrderedProducer p(
        &ctx, sizes, threads, budget,
        [&](size_t i) -> mlir::FailureOr<std::vector<uint8_t>> {
          ++calls;
          uint64_t now = live += sizes[i];
          uint64_t prev = peak.load();
          while (now > prev && !peak.compare_exchange_weak(prev, now)) {
          }
          // Finish out of order.
          std::this_thread::sleep_for(
              std::chrono::microseconds((i * 7919) % 300));
          return item(i, sizes[i]);
        });
    for (size_t i = 0; i < sizes.size(); ++i) {
      auto r = p.next();
      ASSERT_TRUE(mlir::succeeded(r));
      EXPECT_EQ(*r, item(i, sizes[i]));
      live -= sizes[i];
    }
    EXPECT_TRUE(mlir::failed(p.next())); // past the end
    EXPECT_EQ(calls.load(), sizes.size());
    // Started-but-not-returned bytes stay within the budget, plus the one
    // item the consumer waits for.
    EXPECT_LE(peak.load(), budget + largest);
  }
}

TEST(OrderedProducer, FailuresStopAndReportInItemOrder) {
  mlir::MLIRContext ctx;
  std::vector<std::string> messages;
  mlir::ScopedDiagnosticHandler capture(&ctx, [&](mlir::Diagnostic &d) {
    messages.push_back(d.str());
    return mlir::success();
  });
  std::vector<uint64_t> sizes(40, 100);
  {
    etllm::OrderedProducer p(
        &ctx, sizes, 4, 1000,
        [&](size_t i) -> mlir::FailureOr<std::vector<uint8_t>> {
          if (i == 13 || i == 11) {
            std::this_thread::sleep_for(
                std::chrono::milliseconds(i == 11 ? 20 : 0));
            return mlir::emitError(mlir::UnknownLoc::get(&ctx))
                   << "item " << i << " failed";
          }
          return item(i, sizes[i]);
        });
    for (size_t i = 0; i < 11; ++i)
      ASSERT_TRUE(mlir::succeeded(p.next())) << i;
    EXPECT_TRUE(mlir::failed(p.next()));
    EXPECT_TRUE(mlir::failed(p.next()));
  }
  // Replayed when the producer is gone, in item order whatever the timing.
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages.front(), "item 11 failed");
  if (messages.size() > 1) {
    EXPECT_EQ(messages[1], "item 13 failed");
  }
  EXPECT_LE(messages.size(), 2u);
}

//===----------------------------------------------------------------------===//
// Determinism of whole programs
//===----------------------------------------------------------------------===//

std::string exportWith(const std::string &model, const std::string &recipe,
                       unsigned threads) {
  etllm::test::ExportForTest o;
  o.recipe = recipe;
  o.maxSeqLen = 64;
  o.hashInputs = true; // the hasher runs next to the producers
  o.threads = threads;
  return etllm::test::exportBytes(model, o);
}

TEST(ParallelExport, OneThreadAndManyWriteTheSameBytes) {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("etllm-streaming-" + std::to_string(getpid())))
                        .string();
  std::filesystem::create_directories(dir);
  etllm::formats::GeneratorOptions o;
  o.arch = "llama";
  o.format = "gguf";
  o.hidden = 128;
  o.layers = 4;
  o.heads = 4;
  o.kvHeads = 2;
  o.ffn = 352;
  o.vocab = 320;
  o.maxSeq = 64;
  o.dtype = etllm::formats::DType::F16;
  o.output = dir + "/m.gguf";
  ASSERT_TRUE(etllm::formats::generateCheckpoint(o).ok());
  for (const char *recipe :
       {"portable", "cpu-fp32", "cpu-int4", "cpu-8da4w", "cpu-int8"}) {
    SCOPED_TRACE(recipe);
    std::string one = exportWith(o.output, recipe, 1);
    ASSERT_FALSE(one.empty());
    for (unsigned threads : {2u, 3u, 8u})
      EXPECT_TRUE(one == exportWith(o.output, recipe, threads))
          << threads << " threads wrote other bytes";
  }
  std::filesystem::remove_all(dir);
}

} // namespace
