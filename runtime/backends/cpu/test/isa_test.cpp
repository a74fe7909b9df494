//===- isa_test.cpp - ISA names, families and detection -------------------===//
#include "helpers.h"

#include <cstdlib>
#include <string>
#include <utility>

namespace etllm::rt::cpu::test {
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
  for (Isa isa :
       {Isa::Avx2, Isa::AvxVnni, Isa::Avx512, Isa::Avx512Vnni, Isa::Amx})
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
            << "; detectIsa() = " << isaName(best) << " (ETLLM_CPU_ISA="
            << (isaCapVariable() ? isaCapVariable() : "unset") << ")\n";
  // The paths are ordered: a CPU that runs one runs those below it.
  for (int i = 2; i < kNumIsas; ++i) {
    if (isaSupported(Isa(i)) && isaArch(Isa(i - 1)) == isaArch(Isa(i)) &&
        Isa(i) != Isa::Avx512) {
      EXPECT_TRUE(isaSupported(Isa(i - 1))) << isaName(Isa(i));
    }
  }
  // Amx's value follows the arm64 paths; it needs AVX-512 VNNI.
  if (isaSupported(Isa::Amx)) {
    EXPECT_TRUE(isaSupported(Isa::Avx512Vnni));
  }
}

// The cap's variable, and its former name kept as an alias (the new name
// wins when both are set). Restores the environment it found.
TEST(IsaTest, CapVariableAndItsFormerName) {
  auto saved = [](const char *name) {
    const char *v = std::getenv(name);
    return std::pair<bool, std::string>(v != nullptr, v ? v : "");
  };
  auto restore = [](const char *name, const std::pair<bool, std::string> &v) {
    if (v.first)
      setenv(name, v.second.c_str(), 1);
    else
      unsetenv(name);
  };
  auto cpu = saved("ETLLM_CPU_ISA"), former = saved("ETLLM_XNNPACK_ISA");
  unsetenv("ETLLM_CPU_ISA");
  unsetenv("ETLLM_XNNPACK_ISA");
  EXPECT_EQ(isaCapVariable(), nullptr);
  setenv("ETLLM_XNNPACK_ISA", "generic", 1);
  ASSERT_NE(isaCapVariable(), nullptr);
  EXPECT_STREQ(isaCapVariable(), "generic");
  setenv("ETLLM_CPU_ISA", "avx2", 1);
  ASSERT_NE(isaCapVariable(), nullptr);
  EXPECT_STREQ(isaCapVariable(), "avx2");
  restore("ETLLM_CPU_ISA", cpu);
  restore("ETLLM_XNNPACK_ISA", former);
}

} // namespace
} // namespace etllm::rt::cpu::test
