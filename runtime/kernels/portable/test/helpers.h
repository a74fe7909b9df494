//===- helpers.h - Shared helpers of the portable kernel tests --*- C++ -*-===//
#ifndef ETLLM_KERNELS_PORTABLE_TEST_HELPERS_H
#define ETLLM_KERNELS_PORTABLE_TEST_HELPERS_H

#include "etllm/runtime/kernel.h"
#include "etllm/runtime/status_matchers.h"
#include "etllm/runtime/testing.h"

#include <gtest/gtest.h>
#include <pthreadpool.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace etllm::rt::testing {

/// Non-finite expected values.
inline const double kInf = std::numeric_limits<double>::infinity();
inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Runs the portable kernel of `id` (through the registry's checks).
inline Status run(OpId id, std::vector<Tensor *> ins,
                  std::vector<Tensor *> outs, std::vector<int64_t> ints = {},
                  std::vector<double> floats = {}, ExecContext *ctx = nullptr) {
  static ExecContext defaultCtx;
  return callKernel(portableKernels().get(id), ctx ? *ctx : defaultCtx,
                    std::move(ins), std::move(outs), std::move(ints),
                    std::move(floats));
}

/// An execution context with a two-thread pool.
struct ThreadedContext {
  pthreadpool_t pool = pthreadpool_create(2);
  ExecContext ctx{pool};
  ~ThreadedContext() { pthreadpool_destroy(pool); }
};

inline std::vector<double> randomValues(size_t n, unsigned seed,
                                        double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = float(dist(gen)); // exactly representable in f32
  return v;
}

} // namespace etllm::rt::testing

/// Element-wise comparison of a tensor's values with an absolute tolerance.
#define EXPECT_VALUES(tensor, expected, tol)                                   \
  do {                                                                         \
    std::vector<double> got_ = ::etllm::rt::testing::values(tensor);           \
    std::vector<double> exp_ = (expected);                                     \
    ASSERT_EQ(got_.size(), exp_.size());                                       \
    for (size_t i_ = 0; i_ < got_.size(); ++i_) {                              \
      if (std::isnan(exp_[i_]))                                                \
        EXPECT_TRUE(std::isnan(got_[i_])) << "at " << i_;                      \
      else if (std::isinf(exp_[i_]))                                           \
        EXPECT_EQ(got_[i_], exp_[i_]) << "at " << i_;                          \
      else                                                                     \
        EXPECT_NEAR(got_[i_], exp_[i_], (tol)) << "at " << i_;                 \
    }                                                                          \
  } while (0)

#define EXPECT_SHAPE(tensor, ...)                                              \
  EXPECT_EQ(::etllm::rt::testing::shape(tensor),                               \
            (std::vector<int64_t>{__VA_ARGS__}))

#endif // ETLLM_KERNELS_PORTABLE_TEST_HELPERS_H
