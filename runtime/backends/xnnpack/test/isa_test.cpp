//===- isa_test.cpp - ISA names, families and detection -------------------===//
#include "helpers.h"

#include <cstdlib>

namespace etllm::rt::xnnpack::test {
namespace {

TEST(IsaTest, NamesRoundTrip) {
  for (int i = 0; i < kNumIsas; ++i) {
    Isa parsed;
    ASSERT_TRUE(parseIsa(isaName(Isa(i)), parsed)) << isaName(Isa(i));
    EXPECT_EQ(int(parsed), i);
  }
  Isa parsed;
  EXPECT_FALSE(parseIsa("sve2", parsed));
  EXPECT_FALSE(parseIsa("", parsed));
  EXPECT_FALSE(parseIsa(nullptr, parsed));
}

TEST(IsaTest, EachPathBelongsToOneArchitecture) {
  EXPECT_EQ(isaArch(Isa::Generic), IsaArch::Any);
  for (Isa isa : {Isa::Avx2, Isa::AvxVnni, Isa::Avx512, Isa::Avx512Vnni})
    EXPECT_EQ(isaArch(isa), IsaArch::X86) << isaName(isa);
  for (Isa isa : {Isa::Neon, Isa::Dotprod, Isa::I8mm})
    EXPECT_EQ(isaArch(isa), IsaArch::Arm64) << isaName(isa);
}

/// The other architecture's paths never run here, generic always does, and
/// detectIsa picks a path this CPU runs. Prints which paths ran (the log of
/// a run under qemu says which CPU model had which extension).
TEST(IsaTest, DetectionMatchesTheArchitecture) {
  const IsaArch other = ETLLM_TEST_ARM64 ? IsaArch::X86 : IsaArch::Arm64;
  EXPECT_TRUE(isaSupported(Isa::Generic));
  std::string runs, lacks;
  for (int i = 0; i < kNumIsas; ++i) {
    const Isa isa = Isa(i);
    if (isaArch(isa) == other) {
      EXPECT_FALSE(isaSupported(isa)) << isaName(isa);
      continue;
    }
    (isaSupported(isa) ? runs : lacks) += std::string(" ") + isaName(isa);
  }
  const Isa best = detectIsa();
  EXPECT_TRUE(isaSupported(best));
  EXPECT_NE(isaArch(best), other);
  std::cout << "[ ISAs     ] this CPU runs:" << runs
            << (lacks.empty() ? "" : "; lacks:" + lacks)
            << "; detectIsa() = " << isaName(best) << " (ETLLM_XNNPACK_ISA="
            << (std::getenv("ETLLM_XNNPACK_ISA")
                    ? std::getenv("ETLLM_XNNPACK_ISA")
                    : "unset")
            << ")\n";
  // The paths are ordered: a CPU that runs one runs those below it.
  for (int i = 2; i < kNumIsas; ++i) {
    if (isaSupported(Isa(i)) && isaArch(Isa(i - 1)) == isaArch(Isa(i)) &&
        Isa(i) != Isa::Avx512) {
      EXPECT_TRUE(isaSupported(Isa(i - 1))) << isaName(Isa(i));
    }
  }
}

} // namespace
} // namespace etllm::rt::xnnpack::test
