//===- kv_ring_test.cpp - kv_ring_slots and kv_ring_mask ------------------===//
#include "helpers.h"

#include <algorithm>

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

const double kHidden = -kInf;

TEST(KvRingSlots, SinksStayAndTheRestWrapsAround) {
  auto pos = makeI64({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  OwnedTensor out(DType::I64, {10});
  ASSERT_OK(run(OpId::KvRingSlots, {pos}, {out}, {2, 5}));
  EXPECT_VALUES(*out, (std::vector<double>{0, 1, 2, 3, 4, 2, 3, 4, 2, 3}), 0);
  // No sinks, i32 positions.
  auto p32 = makeTensor(DType::I32, {3}, {63, 64, 130});
  OwnedTensor o32(DType::I32, {3});
  ASSERT_OK(run(OpId::KvRingSlots, {p32}, {o32}, {0, 64}));
  EXPECT_VALUES(*o32, (std::vector<double>{63, 0, 2}), 0);
}

TEST(KvRingSlots, Errors) {
  auto pos = makeI64({2}, {3, -1});
  OwnedTensor out(DType::I64, {2});
  EXPECT_ERROR(run(OpId::KvRingSlots, {pos}, {out}, {0, 4}),
               "position -1 is negative");
  auto ok = makeI64({2}, {3, 4});
  EXPECT_ERROR(run(OpId::KvRingSlots, {ok}, {out}, {4, 4}), "no ring slot");
  OwnedTensor i32(DType::I32, {2});
  EXPECT_ERROR(run(OpId::KvRingSlots, {ok}, {i32}, {0, 4}),
               "slots must be i64");
}

TEST(KvRingMask, DecodeStepsBeforeAndAfterTheRingFills) {
  OwnedTensor m(DType::F32, {1, 1, 1, 4});
  auto early = makeI64({1}, {1});
  ASSERT_OK(run(OpId::KvRingMask, {early}, {m}, {0, 4, 4}));
  EXPECT_SHAPE(*m, 1, 1, 1, 4);
  EXPECT_VALUES(*m, (std::vector<double>{0, 0, kHidden, kHidden}), 0);
  // Position 5 in 4 slots: 4, 5, 2, 3, all inside a window of 4.
  auto late = makeI64({1}, {5});
  ASSERT_OK(run(OpId::KvRingMask, {late}, {m}, {0, 4, 4}));
  EXPECT_VALUES(*m, (std::vector<double>{0, 0, 0, 0}), 0);
  // A window of 3 drops position 2 (slot 2).
  ASSERT_OK(run(OpId::KvRingMask, {late}, {m}, {0, 4, 3}));
  EXPECT_VALUES(*m, (std::vector<double>{0, 0, kHidden, 0}), 0);
}

TEST(KvRingMask, AChunkSeesOnlyItsOwnWindow) {
  // Window 3, chunk 3: 5 slots; positions 6, 7, 8 leave slots holding
  // 5, 6, 7, 8, 4.
  auto pos = makeI64({3}, {6, 7, 8});
  OwnedTensor m(DType::F32, {1, 1, 3, 5});
  ASSERT_OK(run(OpId::KvRingMask, {pos}, {m}, {0, 5, 3}));
  EXPECT_VALUES(*m,
                (std::vector<double>{0, 0, kHidden, kHidden, 0, //
                                     0, 0, 0, kHidden, kHidden, //
                                     kHidden, 0, 0, 0, kHidden}),
                0);
}

TEST(KvRingMask, SinksAreAlwaysSeen) {
  OwnedTensor m(DType::F32, {1, 1, 1, 5});
  // Sinks 0, 1; ring slots 2, 3, 4 hold 8, 9, 10 at position 10.
  auto pos = makeI64({1}, {10});
  ASSERT_OK(run(OpId::KvRingMask, {pos}, {m}, {2, 5, 0}));
  EXPECT_VALUES(*m, (std::vector<double>{0, 0, 0, 0, 0}), 0);
  ASSERT_OK(run(OpId::KvRingMask, {pos}, {m}, {2, 5, 2}));
  EXPECT_VALUES(*m, (std::vector<double>{0, 0, kHidden, 0, 0}), 0);
  // At position 0 only the first sink holds anything.
  auto first = makeI64({1}, {0});
  ASSERT_OK(run(OpId::KvRingMask, {first}, {m}, {2, 5, 2}));
  EXPECT_VALUES(
      *m, (std::vector<double>{0, kHidden, kHidden, kHidden, kHidden}), 0);
}

/// Writes positions 0, 1, ... in calls of every size up to the chunk into
/// a simulated ring through kv_ring_slots, and after each call checks
/// kv_ring_mask against the ring's contents: a slot is visible exactly
/// when it holds a position the query may see, and every position the
/// query may see is in some slot.
TEST(KvRingMask, MatchesTheRingsContentsOverManyCalls) {
  struct Shape {
    int64_t sinks, ring, window, chunk;
  };
  for (Shape s : {Shape{0, 4, 4, 1}, Shape{0, 7, 4, 4}, Shape{2, 5, 2, 4},
                  Shape{3, 9, 0, 5}, Shape{1, 6, 6, 1}, Shape{4, 13, 10, 4}}) {
    SCOPED_TRACE(::testing::Message()
                 << "sinks " << s.sinks << " ring " << s.ring << " window "
                 << s.window << " chunk " << s.chunk);
    const int64_t size = s.sinks + s.ring;
    std::vector<int64_t> held(size_t(size), -1);
    int64_t next = 0;
    for (int call = 0; next < 5 * size; ++call) {
      const int64_t n = 1 + call % s.chunk;
      std::vector<int64_t> p(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        p[size_t(i)] = next + i;
      auto pos = makeI64({n}, p);
      OwnedTensor slots(DType::I64, {n});
      ASSERT_OK(run(OpId::KvRingSlots, {pos}, {slots}, {s.sinks, size}));
      for (int64_t i = 0; i < n; ++i)
        held[size_t(slots->ptr<int64_t>()[i])] = p[size_t(i)];
      OwnedTensor m(DType::F32, {1, 1, n, size});
      ASSERT_OK(run(OpId::KvRingMask, {pos}, {m}, {s.sinks, size, s.window}));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t q = p[size_t(i)];
        auto mayHave = [&](int64_t x) {
          return x >= 0 && x <= q &&
                 (x < s.sinks || s.window == 0 || x > q - s.window);
        };
        for (int64_t j = 0; j < size; ++j) {
          const bool visible = m->ptr<float>()[i * size + j] == 0.0f;
          // A slot a later position of the call overwrote holds nothing
          // query i may see.
          EXPECT_EQ(visible, mayHave(held[size_t(j)]))
              << "query " << q << " slot " << j << " holding "
              << held[size_t(j)];
        }
        const int64_t oldest = s.window == 0
                                   ? std::max(s.sinks, q - (s.ring - n) - i)
                                   : std::max<int64_t>(0, q - s.window + 1);
        for (int64_t x = oldest; x <= q; ++x) {
          if (mayHave(x)) {
            EXPECT_NE(std::find(held.begin(), held.end(), x), held.end())
                << "query " << q << " lost position " << x;
          }
        }
        for (int64_t x = 0; x < std::min(s.sinks, q + 1); ++x)
          EXPECT_EQ(held[size_t(x)], x);
      }
      next += n;
    }
  }
}

TEST(KvRingMask, Errors) {
  OwnedTensor m(DType::F32, {1, 1, 2, 4});
  auto gap = makeI64({2}, {3, 5});
  EXPECT_ERROR(run(OpId::KvRingMask, {gap}, {m}, {0, 4, 3}), "ascend by one");
  // Window 4 in 4 slots: one position per call.
  auto two = makeI64({2}, {3, 4});
  EXPECT_ERROR(run(OpId::KvRingMask, {two}, {m}, {0, 4, 4}),
               "takes at most 1 per call");
  EXPECT_ERROR(run(OpId::KvRingMask, {two}, {m}, {0, 4, 5}),
               "window 5 is outside [0, 4]");
  EXPECT_ERROR(run(OpId::KvRingMask, {two}, {m}, {4, 4, 0}), "no ring slot");
  auto neg = makeI64({2}, {-1, 0});
  EXPECT_ERROR(run(OpId::KvRingMask, {neg}, {m}, {0, 4, 2}), "negative");
  OwnedTensor f16(DType::F16, {1, 1, 2, 4});
  EXPECT_ERROR(run(OpId::KvRingMask, {two}, {f16}, {0, 4, 2}), "must be f32");
}

} // namespace
