//===- harness.h - Blobs by hand and a validated device for tests -*- C++
//-*-===//
//
// The tests write VKN1 blobs directly (the compiler half writes them from
// IR; these test the runtime half alone): buffers, dispatches with their
// parameter blocks, inputs and outputs in an arena laid out by a bump
// allocator. Every test runs on one backend with the Khronos validation
// layer and synchronization validation on, and fails when the layer
// reports anything (VulkanTest::TearDown).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VULKAN_TEST_HARNESS_H
#define ETLLM_RUNTIME_VULKAN_TEST_HARNESS_H

#include "etllm/runtime/backend.h"
#include "etllm/runtime/half.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/testing.h"
#include "etllm/runtime/testing_constants.h"
#include "etllm/runtime/vulkan/backend.h"
#include "etllm/runtime/vulkan/format.h"
#include "etllm/runtime/vulkan/packing.h"
#include "etllm/schema/vulkan_generated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace etllm::rt::vulkan::test {

namespace vfb = ::etllm::vulkan;
using rt::testing::OwnedTensor;
using rt::testing::runPortable;

/// Program constants a test owns.
using Constants = rt::testing::TestConstants;

/// A blob under construction.
struct Blob {
  struct Buf {
    vfb::BufferKind kind;
    uint32_t constant = 0;
    uint64_t size = 0;
    int64_t rows = 0;
    float scaling = 1;
  };
  struct Bind {
    uint32_t buffer = 0;
    uint64_t offset = 0, size = 0;
  };
  struct Disp {
    KernelId kernel;
    uint32_t variant = 0;
    std::vector<Bind> bindings;
    std::vector<uint32_t> params;
    bool barrier = true;
    int layer = -1;
  };
  struct Io {
    vfb::IoRole role = vfb::IoRole::ACTIVATION;
    DType dtype = DType::F32, deviceDtype = DType::F32;
    std::vector<int64_t> sizes;
    int dyn = -1;
    uint64_t offset = 0;
    int64_t indexBound = 0;
    uint32_t buffer = 0;
  };

  std::vector<Buf> buffers;
  std::vector<Disp> dispatches;
  std::vector<Io> inputs, outputs;
  int64_t seqBound = 1;
  DType act = DType::F32;
  int numLayers = 0;
  uint64_t arenaTop = 0;

  Blob() { buffers.push_back({vfb::BufferKind::ARENA}); } // buffer 0

  /// A slot of the arena (256-aligned).
  Bind slot(uint64_t bytes) {
    Bind b{0, arenaTop, bytes};
    arenaTop += (bytes + 255) / 256 * 256;
    return b;
  }
  Bind constant(Constants &c, const std::vector<uint8_t> &bytes) {
    buffers.push_back({vfb::BufferKind::CONSTANT, c.add(bytes), bytes.size()});
    return {uint32_t(buffers.size() - 1), 0, bytes.size()};
  }
  Bind floats(Constants &c, const std::vector<float> &v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return constant(c, b);
  }
  Bind cache(uint64_t bytes) {
    buffers.push_back({vfb::BufferKind::CACHE, 0, bytes});
    return {uint32_t(buffers.size() - 1), 0, bytes};
  }
  Bind ropeTable(Constants &c, const std::vector<float> &invFreq, int64_t rows,
                 float scaling = 1) {
    buffers.push_back({vfb::BufferKind::ROPE_TABLE, c.add(invFreq),
                       uint64_t(rows) * invFreq.size() * 8, rows, scaling});
    return {uint32_t(buffers.size() - 1), 0, buffers.back().size};
  }
  /// An input in a new arena slot (dyn: the sequence dimension or -1).
  Bind input(vfb::IoRole role, DType host, DType device,
             std::vector<int64_t> sizes, int dyn, int64_t indexBound = 0) {
    uint64_t n = 1;
    for (int64_t s : sizes)
      n *= uint64_t(s);
    Bind b = slot(n * elementSize(device));
    inputs.push_back({role, host, device, sizes, dyn, b.offset, indexBound});
    return b;
  }
  Bind output(DType host, DType device, std::vector<int64_t> sizes, int dyn) {
    uint64_t n = 1;
    for (int64_t s : sizes)
      n *= uint64_t(s);
    Bind b = slot(n * elementSize(device));
    outputs.push_back(
        {vfb::IoRole::ACTIVATION, host, device, sizes, dyn, b.offset});
    return b;
  }
  template <typename P>
  void dispatch(KernelId k, uint32_t variant, std::vector<Bind> bindings,
                const P &params, bool barrier = true, int layer = -1) {
    Disp d{k, variant, std::move(bindings), {}, barrier, layer};
    d.params.resize(sizeof(P) / 4);
    std::memcpy(d.params.data(), &params, sizeof(P));
    dispatches.push_back(std::move(d));
  }

  std::vector<uint8_t> finish() {
    flatbuffers::FlatBufferBuilder fb;
    buffers[0].size = std::max<uint64_t>(arenaTop, 256);
    std::vector<flatbuffers::Offset<vfb::Buffer>> bufs;
    for (const Buf &b : buffers)
      bufs.push_back(
          vfb::CreateBuffer(fb, b.kind, b.constant, b.size, b.rows, b.scaling));
    std::vector<flatbuffers::Offset<vfb::Dispatch>> disps;
    for (const Disp &d : dispatches) {
      std::vector<flatbuffers::Offset<vfb::Binding>> binds;
      for (const Bind &b : d.bindings)
        binds.push_back(vfb::CreateBinding(fb, b.buffer, b.offset, b.size));
      disps.push_back(vfb::CreateDispatch(
          fb, vfb::Kernel(uint16_t(d.kernel)), d.variant,
          fb.CreateVector(binds), fb.CreateVector(d.params), d.barrier, d.layer,
          fb.CreateString(kernelInfo(d.kernel).name)));
    }
    auto ios = [&](const std::vector<Io> &v) {
      std::vector<flatbuffers::Offset<vfb::Io>> out;
      for (const Io &io : v)
        out.push_back(vfb::CreateIo(fb, io.role, uint8_t(io.dtype),
                                    uint8_t(io.deviceDtype),
                                    fb.CreateVector(io.sizes), io.dyn,
                                    io.offset, io.indexBound, io.buffer));
      return fb.CreateVector(out);
    };
    auto in = ios(inputs), out = ios(outputs);
    auto g = vfb::CreateGraph(fb, fb.CreateVector(bufs), fb.CreateVector(disps),
                              in, out, seqBound, kDefaultMaxBindingBytes,
                              uint8_t(act), numLayers);
    vfb::FinishGraphBuffer(fb, g);
    return std::vector<uint8_t>(fb.GetBufferPointer(),
                                fb.GetBufferPointer() + fb.GetSize());
  }
};

/// A blob copied to 8-byte-aligned memory (as in a program file).
class AlignedBlob {
public:
  explicit AlignedBlob(const std::vector<uint8_t> &b)
      : storage_((b.size() + 7) / 8 + 1), size_(b.size()) {
    std::memcpy(storage_.data(), b.data(), b.size());
  }
  const uint8_t *data() const {
    return reinterpret_cast<const uint8_t *>(storage_.data());
  }
  size_t size() const { return size_; }

private:
  std::vector<uint64_t> storage_;
  size_t size_;
};

/// The backend every test uses: validation and synchronization
/// validation on.
inline Backend &validatedBackend() {
  static std::shared_ptr<Backend> b = [] {
    BackendOptions o;
    o.validation = true;
    return makeVulkanBackend(o);
  }();
  return *b;
}

/// Backend::init on `bytes` (copied to an aligned buffer) with `specs` and
/// `memory` bytes of device memory.
inline Result<std::unique_ptr<DelegateInstance>>
initBytes(Backend &backend, const std::vector<uint8_t> &bytes,
          Constants &constants,
          const std::vector<std::pair<std::string, std::string>> &specs,
          uint64_t memory) {
  AlignedBlob a(bytes);
  ExecContext ctx;
  MemoryBudget budget(memory, 0);
  return backend.init(a.data(), a.size(), specs, constants, ctx, budget);
}

/// Backend::init on `blob` (VKN1) with `memory` bytes of device memory.
inline Result<std::unique_ptr<DelegateInstance>>
instantiate(Backend &backend, Blob &blob, Constants &constants,
            uint64_t memory = uint64_t(8) << 30) {
  return initBytes(backend, blob.finish(), constants, {{"format", kBlobFormat}},
                   memory);
}

/// Fails the test when the validation layer reported anything during it.
class VulkanTest : public ::testing::Test {
protected:
  void SetUp() override { before_ = validationMessages(validatedBackend()); }
  void TearDown() override {
    const uint64_t after = validationMessages(validatedBackend());
    EXPECT_EQ(after, before_) << [] {
      std::string all;
      for (const std::string &m : validationLog(validatedBackend()))
        all += m + "\n";
      return all;
    }();
  }

private:
  uint64_t before_ = 0;
};

/// Runs `inst` on the tensors.
inline Status run(DelegateInstance &inst, std::vector<Tensor *> in,
                  std::vector<Tensor *> out) {
  ExecContext ctx;
  return inst.execute({in.data(), in.size()}, {out.data(), out.size()}, ctx);
}

/// `n` random floats in [-scale, scale), from a generator seeded `seed`.
inline std::vector<float> randomFloats(size_t n, uint32_t seed,
                                       float scale = 1.0f) {
  std::mt19937 rng(seed);
  return rt::testing::randomFloats(n, rng, -scale, scale);
}

inline OwnedTensor floatTensor(std::vector<int64_t> shape,
                               const std::vector<float> &v,
                               size_t capacity = 0) {
  OwnedTensor t(DType::F32, std::move(shape), capacity);
  std::memcpy(t->data, v.data(), size_t(t->numel()) * 4);
  return t;
}

/// Rounds every value to f16 and back.
inline std::vector<float> roundHalf(std::vector<float> v) {
  for (float &x : v)
    x = halfToFloat(floatToHalf(x));
  return v;
}

/// |got - want| <= atol + rtol |want| for every element.
inline ::testing::AssertionResult near(const Tensor &got, const Tensor &want,
                                       double atol, double rtol) {
  if (got.numel() != want.numel())
    return ::testing::AssertionFailure()
           << "shapes " << got.shapeString() << " and " << want.shapeString();
  double worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = rt::testing::getElement(got, i);
    const double w = rt::testing::getElement(want, i);
    const double excess = std::fabs(g - w) - (atol + rtol * std::fabs(w));
    if (!(excess <= 0) && (at < 0 || excess > worst)) {
      worst = excess;
      at = i;
    }
  }
  if (at < 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "element " << at << ": got " << rt::testing::getElement(got, at)
         << ", want " << rt::testing::getElement(want, at);
}

} // namespace etllm::rt::vulkan::test

#endif // ETLLM_RUNTIME_VULKAN_TEST_HARNESS_H
