// key_major.h's loops with AVX2's 256-bit registers, where the CPU has them: the
// same operations in the same order per key (or dim), a product rounded and then
// added, so the same bits as the Eigen packet loops (the target has no FMA, so
// nothing can be contracted).
#include "reference/key_major.h"

#include <immintrin.h>

namespace attncheck::reference {
namespace {

#define ATTNCHECK_AVX2 __attribute__((target("avx2")))

// The 256-bit register of T and its operations.
template <class T>
struct Wide;

template <>
struct Wide<double> {
  using Reg = __m256d;
  static constexpr int kLanes = 4;
  ATTNCHECK_AVX2 static Reg Zero() { return _mm256_setzero_pd(); }
  ATTNCHECK_AVX2 static Reg Set(double x) { return _mm256_set1_pd(x); }
  ATTNCHECK_AVX2 static Reg Load(const double* p) { return _mm256_loadu_pd(p); }
  ATTNCHECK_AVX2 static void Store(double* p, Reg x) { _mm256_storeu_pd(p, x); }
  ATTNCHECK_AVX2 static Reg MulAdd(Reg acc, Reg a, Reg b) { return _mm256_add_pd(acc, _mm256_mul_pd(a, b)); }
};

template <>
struct Wide<float> {
  using Reg = __m256;
  static constexpr int kLanes = 8;
  ATTNCHECK_AVX2 static Reg Zero() { return _mm256_setzero_ps(); }
  ATTNCHECK_AVX2 static Reg Set(float x) { return _mm256_set1_ps(x); }
  ATTNCHECK_AVX2 static Reg Load(const float* p) { return _mm256_loadu_ps(p); }
  ATTNCHECK_AVX2 static void Store(float* p, Reg x) { _mm256_storeu_ps(p, x); }
  ATTNCHECK_AVX2 static Reg MulAdd(Reg acc, Reg a, Reg b) { return _mm256_add_ps(acc, _mm256_mul_ps(a, b)); }
};

template <class T>
ATTNCHECK_AVX2 int Dots(const T* q, const T* k, int head_dim, int tk, int count, T* dots) {
  using W = Wide<T>;
  constexpr int kLanes = W::kLanes;
  int j = 0;
  for (; j + 4 * kLanes <= count; j += 4 * kLanes) {
    typename W::Reg a0 = W::Zero(), a1 = a0, a2 = a0, a3 = a0;
    for (int d = 0; d < head_dim; ++d) {
      const typename W::Reg qd = W::Set(q[d]);
      const T* row = k + static_cast<size_t>(d) * tk + j;
      a0 = W::MulAdd(a0, qd, W::Load(row));
      a1 = W::MulAdd(a1, qd, W::Load(row + kLanes));
      a2 = W::MulAdd(a2, qd, W::Load(row + 2 * kLanes));
      a3 = W::MulAdd(a3, qd, W::Load(row + 3 * kLanes));
    }
    W::Store(dots + j, a0);
    W::Store(dots + j + kLanes, a1);
    W::Store(dots + j + 2 * kLanes, a2);
    W::Store(dots + j + 3 * kLanes, a3);
  }
  for (; j + kLanes <= count; j += kLanes) {
    typename W::Reg a = W::Zero();
    for (int d = 0; d < head_dim; ++d) a = W::MulAdd(a, W::Set(q[d]), W::Load(k + static_cast<size_t>(d) * tk + j));
    W::Store(dots + j, a);
  }
  return j;
}

template <class T>
ATTNCHECK_AVX2 void Weighted(T weight, const T* value, int value_dim, T* acc) {
  using W = Wide<T>;
  const typename W::Reg w = W::Set(weight);
  int d = 0;
  for (; d + W::kLanes <= value_dim; d += W::kLanes) W::Store(acc + d, W::MulAdd(W::Load(acc + d), w, W::Load(value + d)));
  for (; d < value_dim; ++d) {
    const T product = weight * value[d];
    acc[d] = acc[d] + product;
  }
}

}  // namespace

const bool kKeyMajorWide = __builtin_cpu_supports("avx2");

int KeyDotsWide(const double* q, const double* keys_t, int head_dim, int tk, int count, double* dots) {
  return Dots(q, keys_t, head_dim, tk, count, dots);
}
int KeyDotsWide(const float* q, const float* keys_t, int head_dim, int tk, int count, float* dots) {
  return Dots(q, keys_t, head_dim, tk, count, dots);
}
void AddWeightedWide(double weight, const double* value, int value_dim, double* acc) {
  Weighted(weight, value, value_dim, acc);
}
void AddWeightedWide(float weight, const float* value, int value_dim, float* acc) {
  Weighted(weight, value, value_dim, acc);
}

}  // namespace attncheck::reference
