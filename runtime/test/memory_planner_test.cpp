//===- memory_planner_test.cpp - The shared greedy arena planner ----------===//
#include "etllm/runtime/memory_planner.h"

#include <gtest/gtest.h>

#include <random>

using namespace etllm::rt;

namespace {

ArenaPlan plan(const std::vector<PlanRequest> &r, uint64_t align = 64) {
  Result<ArenaPlan> p = planArena(r, align);
  EXPECT_TRUE(p.ok()) << p.message();
  return p.ok() ? p.value() : ArenaPlan();
}

TEST(MemoryPlanner, AChainReusesTwoSlots) {
  // a -> b -> c -> d, each alive from its producer to its one user.
  ArenaPlan p = plan({{0, 1, 64}, {1, 2, 64}, {2, 3, 64}, {3, 4, 64}});
  EXPECT_EQ(p.arenaBytes, 128u);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
  EXPECT_EQ(p.offsets[1], p.offsets[3]);
  EXPECT_NE(p.offsets[0], p.offsets[1]);
}

TEST(MemoryPlanner, LargestFirstAtTheLowestFreeOffset) {
  // The big value is placed first, at 0; the small ones go above it while
  // it lives and reuse its bytes after.
  ArenaPlan p = plan({{0, 1, 10}, {0, 2, 1000}, {3, 4, 500}});
  EXPECT_EQ(p.offsets[1], 0u);
  EXPECT_EQ(p.offsets[0], 1024u);
  EXPECT_EQ(p.offsets[2], 0u);
  EXPECT_EQ(p.sizes[0], 64u);
  EXPECT_EQ(p.sizes[1], 1024u);
  EXPECT_EQ(p.arenaBytes, 1088u);
}

TEST(MemoryPlanner, EqualSizesKeepTheirOrderAndZeroTakesASlot) {
  ArenaPlan p = plan({{0, 5, 64}, {0, 5, 64}, {0, 5, 0}});
  EXPECT_EQ(p.offsets[0], 0u);
  EXPECT_EQ(p.offsets[1], 64u);
  EXPECT_EQ(p.offsets[2], 128u);
  EXPECT_EQ(p.arenaBytes, 192u);
  // A last use before the first means "produced and never read".
  ArenaPlan q = plan({{3, -1, 64}, {3, 3, 64}});
  EXPECT_NE(q.offsets[0], q.offsets[1]);
}

TEST(MemoryPlanner, RejectsOverflowAndBadAlignment) {
  EXPECT_FALSE(planArena({{0, 0, UINT64_MAX - 3}}, 64).ok());
  EXPECT_FALSE(
      planArena({{0, 1, uint64_t(1) << 63}, {0, 1, uint64_t(1) << 63}}, 64)
          .ok());
  EXPECT_FALSE(planArena({{0, 0, 8}}, 48).ok());
  EXPECT_TRUE(planArena({}, 64).ok());
}

// Random lifetimes and sizes: values alive at the same time never share a
// byte, every offset is aligned, and the arena holds every value.
TEST(MemoryPlanner, LiveValuesNeverOverlap) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<PlanRequest> r(1 + rng() % 60);
    for (PlanRequest &q : r) {
      q.firstUse = rng() % 40;
      q.lastUse = q.firstUse + rng() % 10;
      q.size = rng() % 3 == 0 ? 64 : rng() % 5000;
    }
    ArenaPlan p = plan(r, 16);
    for (size_t a = 0; a < r.size(); ++a) {
      EXPECT_EQ(p.offsets[a] % 16, 0u);
      EXPECT_LE(p.offsets[a] + p.sizes[a], p.arenaBytes);
      EXPECT_GE(p.sizes[a], r[a].size);
      for (size_t b = a + 1; b < r.size(); ++b) {
        bool live =
            r[a].firstUse <= r[b].lastUse && r[b].firstUse <= r[a].lastUse;
        bool overlap = p.offsets[a] < p.offsets[b] + p.sizes[b] &&
                       p.offsets[b] < p.offsets[a] + p.sizes[a];
        EXPECT_FALSE(live && overlap) << "values " << a << " and " << b;
      }
    }
  }
}

} // namespace
