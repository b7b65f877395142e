// The naive models' key-major loops, which take AVX2's registers where the CPU
// has them (reference/key_major_wide.cc), answer bitwise what the one-key-at-a-time
// loops answer: every dot product and weighted sum in the same order with the same
// roundings, in double and in float, at sizes around the register widths, with
// ±inf, NaN and signed zeros among the inputs.
#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "reference/key_major.h"

namespace attncheck::reference {
namespace {

template <class T>
std::vector<T> Draw(std::mt19937& rng, size_t n) {
  std::normal_distribution<double> normal(0.0, 3.0);
  std::vector<T> x(n);
  for (T& e : x) {
    const unsigned pick = rng() % 64;
    e = pick == 0   ? std::numeric_limits<T>::infinity()
        : pick == 1 ? -std::numeric_limits<T>::infinity()
        : pick == 2 ? std::numeric_limits<T>::quiet_NaN()
        : pick == 3 ? T(-0.0)
                    : static_cast<T>(normal(rng));
  }
  return x;
}

template <class T>
bool SameBits(T a, T b) {
  if (a != a && b != b) return true;  // any NaN
  if constexpr (sizeof(T) == 8) return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
  else return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

template <class T>
void CompareWithOneAtATime() {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2: the wide loops are never taken";
  std::mt19937 rng(11);
  int compared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int head_dim = 1 + static_cast<int>(rng() % 70), tk = static_cast<int>(rng() % 45);
    const std::vector<T> q = Draw<T>(rng, static_cast<size_t>(head_dim));
    const std::vector<T> keys_t = Draw<T>(rng, static_cast<size_t>(head_dim) * tk);
    const int count = trial % 3 == 0 ? static_cast<int>(rng() % (tk + 1)) : tk;  // a row's visible extent
    std::vector<T> wide(static_cast<size_t>(tk));
    KeyDots<T>(q.data(), keys_t, head_dim, tk, count, wide.data());  // the wide loops, then the last keys
    for (int j = 0; j < count; ++j) {
      T dot = T(0);
      for (int d = 0; d < head_dim; ++d) {
        const T product = q[d] * keys_t[static_cast<size_t>(d) * tk + j];
        dot = dot + product;
      }
      ASSERT_TRUE(SameBits(dot, wide[j])) << "trial " << trial << " key " << j << ": " << dot << " vs " << wide[j];
      ++compared;
    }
    const int value_dim = static_cast<int>(rng() % 70);
    const std::vector<T> value = Draw<T>(rng, static_cast<size_t>(value_dim));
    std::vector<T> acc = Draw<T>(rng, static_cast<size_t>(value_dim)), one = acc;
    const T weight = static_cast<T>(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
    AddWeightedWide(weight, value.data(), value_dim, acc.data());
    for (int d = 0; d < value_dim; ++d) {
      const T product = weight * value[d];
      one[d] = one[d] + product;
      ASSERT_TRUE(SameBits(one[d], acc[d])) << "trial " << trial << " dim " << d;
    }
  }
  EXPECT_GT(compared, 3000);
}

TEST(KeyMajorWide, DoubleLoopsMatchOneAtATime) { CompareWithOneAtATime<double>(); }
TEST(KeyMajorWide, FloatLoopsMatchOneAtATime) { CompareWithOneAtATime<float>(); }

// The templates take the wide loops exactly where the CPU has AVX2.
TEST(KeyMajorWide, TakenWhereTheCpuHasAvx2) { EXPECT_EQ(kKeyMajorWide, __builtin_cpu_supports("avx2") != 0); }

}  // namespace
}  // namespace attncheck::reference
