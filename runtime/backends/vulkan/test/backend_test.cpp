//===- backend_test.cpp - Hostile blobs, missing pieces, replay -----------===//
#include "harness.h"

#include <cstdlib>

namespace etllm::rt::vulkan::test {
namespace {

/// A valid blob: y = x + x.
Blob addBlob() {
  Blob b;
  b.seqBound = 8;
  auto x =
      b.input(vfb::IoRole::ACTIVATION, DType::F32, DType::F32, {1, 8, 32}, 1);
  auto y = b.output(DType::F32, DType::F32, {1, 8, 32}, 1);
  ElementwiseParams p{};
  p.nS = 32;
  p.op = ETLLM_VK_ELEMENTWISE_ADD;
  b.dispatch(KernelId::Elementwise, 0u, {x, x, y}, p);
  return b;
}

std::string initError(Blob &b, Constants &c,
                      uint64_t memory = uint64_t(8) << 30) {
  auto inst = instantiate(validatedBackend(), b, c, memory);
  return inst.ok() ? "" : inst.message();
}

class VulkanBackend : public VulkanTest {};

TEST_F(VulkanBackend, RegisteredAndProbed) {
  registerBuiltinBackends();
  EXPECT_NE(findBackend(kBackendId), nullptr);
  auto info = probeDevice();
  ASSERT_TRUE(info.ok()) << info.message();
  EXPECT_GE(info->maxStorageBufferRange, uint64_t(1) << 27);
  EXPECT_NE(info->summary().find("maxStorageBufferRange"), std::string::npos);
  std::printf("%s", info->summary().c_str());
}

TEST_F(VulkanBackend, ReplaysWithoutRecordingOrWritingDescriptors) {
  Constants consts;
  Blob b = addBlob();
  auto inst = instantiate(validatedBackend(), b, consts);
  ASSERT_TRUE(inst.ok()) << inst.message();
  const InstanceStats *st = instanceStats(**inst);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->descriptorWrites, 1u);
  for (int64_t S : {1, 1, 1, 5, 1, 7, 8, 1}) {
    OwnedTensor xt =
        floatTensor({1, S, 32}, randomFloats(size_t(S * 32), 1), 8 * 32 * 4);
    OwnedTensor out(DType::F32, {1, S, 32}, 8 * 32 * 4);
    ASSERT_TRUE(run(**inst, {xt.get()}, {out.get()}).ok());
    for (int64_t i = 0; i < S * 32; ++i)
      ASSERT_EQ(out->ptr<float>()[i], 2 * xt->ptr<float>()[i]);
  }
  // Buckets 1 and 8 (5, 7 and 8 share the bound's): two recordings.
  EXPECT_EQ(st->recordings, 2u);
  EXPECT_EQ(st->descriptorWrites, 1u);
  EXPECT_EQ(st->calls, 8u);
  // The same through the generic counters (what etllm-bench prints).
  auto counters = (*inst)->counters();
  auto value = [&](const char *name) {
    for (const auto &kv : counters)
      if (kv.first == name)
        return kv.second;
    return uint64_t(~0ull);
  };
  EXPECT_EQ(value("recordings"), 2u);
  EXPECT_EQ(value("descriptor_writes"), 1u);
  EXPECT_EQ(value("dispatches"), 1u);
  EXPECT_EQ(value("device_bytes"), 3u * 32 * 4); // a + a -> y, one row
}

TEST_F(VulkanBackend, MalformedBlobs) {
  Constants consts;
  {
    std::vector<uint8_t> junk(64, 7);
    auto r = initBytes(validatedBackend(), junk, consts, {}, 1 << 30);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("not a VKN1 blob"), std::string::npos);
  }
  {
    std::vector<uint8_t> bytes = addBlob().finish();
    bytes.resize(bytes.size() / 2); // truncated
    auto r = initBytes(validatedBackend(), bytes, consts, {}, 1 << 30);
    EXPECT_FALSE(r.ok());
  }
  {
    Blob b = addBlob();
    b.dispatches[0].bindings[2].size = 1 << 20; // past the arena
    EXPECT_NE(initError(b, consts).find("is not inside its buffer"),
              std::string::npos);
  }
  {
    Blob b = addBlob();
    b.dispatches[0].bindings[0].offset = 4; // misaligned
    b.dispatches[0].bindings[0].size = 64;
    EXPECT_NE(initError(b, consts).find("minStorageBufferOffsetAlignment"),
              std::string::npos);
  }
  {
    Blob b = addBlob();
    ElementwiseParams p{};
    p.nS = 33; // one more than the rows hold
    p.op = ETLLM_VK_ELEMENTWISE_ADD;
    std::memcpy(b.dispatches[0].params.data(), &p, sizeof(p));
    EXPECT_NE(initError(b, consts).find("outside its binding"),
              std::string::npos)
        << initError(b, consts);
  }
  {
    Blob b = addBlob();
    b.dispatches[0].bindings.pop_back();
    EXPECT_NE(initError(b, consts).find("the kernel takes 3"),
              std::string::npos);
  }
  {
    Blob b = addBlob();
    auto w = b.floats(consts, std::vector<float>(32, 1.0f));
    b.dispatches[0].bindings[2] = w; // writes a weight
    EXPECT_NE(initError(b, consts).find("writes a constant"),
              std::string::npos);
  }
  {
    Blob b = addBlob();
    b.buffers.push_back({vfb::BufferKind::CONSTANT, 0, 12345});
    EXPECT_NE(initError(b, consts).find("holds 128 bytes, not 12345"),
              std::string::npos)
        << initError(b, consts);
  }
  {
    Blob b = addBlob();
    b.dispatches[0].variant = 99;
    EXPECT_NE(initError(b, consts).find("invalid variant"), std::string::npos);
  }
  {
    Blob b = addBlob();
    EXPECT_NE(initError(b, consts, 100).find("vulkan: the device buffers"),
              std::string::npos)
        << initError(b, consts, 100);
  }
}

TEST_F(VulkanBackend, BadCallsAreErrors) {
  Constants consts;
  Blob b = addBlob();
  auto inst = instantiate(validatedBackend(), b, consts);
  ASSERT_TRUE(inst.ok()) << inst.message();
  OwnedTensor big = floatTensor({1, 9, 32}, randomFloats(9 * 32, 1));
  OwnedTensor out(DType::F32, {1, 9, 32});
  Status st = run(**inst, {big.get()}, {out.get()});
  EXPECT_NE(st.message().find("does not fit the bound 8"), std::string::npos)
      << st.message();
  OwnedTensor wrong(DType::I64, {1, 2, 32});
  st = run(**inst, {wrong.get()}, {out.get()});
  EXPECT_NE(st.message().find("the subgraph expects f32"), std::string::npos)
      << st.message();
  st = run(**inst, {}, {out.get()});
  EXPECT_FALSE(st.ok());
}

TEST(VulkanMissing, NoLoaderIsNamed) {
  // A machine without libvulkan: the program's vulkan delegate fails to
  // initialize with a message naming the loader.
  const char *old = std::getenv("ETLLM_VULKAN_LIBRARY");
  std::string saved = old ? old : "";
  setenv("ETLLM_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1", 1);
  std::shared_ptr<Backend> b = makeVulkanBackend();
  Constants consts;
  Blob blob = addBlob();
  auto inst = instantiate(*b, blob, consts);
  if (old)
    setenv("ETLLM_VULKAN_LIBRARY", saved.c_str(), 1);
  else
    unsetenv("ETLLM_VULKAN_LIBRARY");
  ASSERT_FALSE(inst.ok());
  EXPECT_NE(inst.message().find("cannot load the Vulkan loader"),
            std::string::npos)
      << inst.message();
}

} // namespace
} // namespace etllm::rt::vulkan::test
