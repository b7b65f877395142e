// The eigen kernel's head with AVX2+FMA (avx2_head.h), per (batch, head):
//   S = scale·q·kᵀ, 8 keys at a time (8 FMA accumulators over D, then reduced);
//   softcap c·tanh(S/c); S = blocked ? −inf : S + M (−inf past Tk);
//   per row: max, w = exp(S − max), Σw; then out = Σ_{w_j>0} w_j v_j / Σw two rows at
//   a time, 8 output dims per FMA accumulator.
// No Eigen here: its inline templates must not be compiled with AVX2 (one copy is kept).
#include "adapters/eigen/avx2_head.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "adapters/eigen/avx2_math.h"

namespace attncheck::adapters {
namespace {

constexpr int kLanes = 8;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Working storage, kept per thread and reused from head to head.
struct Scratch {
  std::vector<float> scores;  // [Tq, Tk↑8]: the scores (−inf past Tk), then the weights
  std::vector<float> sums;    // [Tq]: Σ of a row's weights, 0 for a row without a visible key
  std::vector<int> rows;      // the rows with a visible key
};

Scratch& Buffers() {
  thread_local Scratch scratch;
  return scratch;
}

// Lanes l < n set (n ≤ 8).
ATTNCHECK_TARGET_AVX2 inline __m256i FirstLanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

ATTNCHECK_TARGET_AVX2 inline float HorizontalMax(__m256 x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

ATTNCHECK_TARGET_AVX2 inline float HorizontalSum(__m256 x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

// Lane l = Σ of a[l]'s lanes.
ATTNCHECK_TARGET_AVX2 inline __m256 Reduce8(const __m256 (&a)[8]) {
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

// Lane l = q·k_{j+l} for the 8 keys from j (keys past Tk repeat the last one),
// each an 8-lane FMA sum over D (the last < 8 dims masked), then reduced.
ATTNCHECK_TARGET_AVX2 __attribute__((always_inline)) inline __m256 Dot8(const HeadArgs& a, const float* q, int j,
                                                                        __m256i dim_tail) {
  const float* keys[kLanes];
#pragma GCC unroll 8
  for (int l = 0; l < kLanes; ++l)
    keys[l] = a.k + std::min(j + l, a.tk - 1) * a.k_stride;
  __m256 acc[kLanes];
#pragma GCC unroll 8
  for (int l = 0; l < kLanes; ++l)
    acc[l] = _mm256_setzero_ps();
  int d = 0;
  for (; d + kLanes <= a.head_dim; d += kLanes) {
    const __m256 x = _mm256_loadu_ps(q + d);
#pragma GCC unroll 8
    for (int l = 0; l < kLanes; ++l)
      acc[l] = _mm256_fmadd_ps(x, _mm256_loadu_ps(keys[l] + d), acc[l]);
  }
  if (d < a.head_dim) {  // k's lanes past D are not read: the next row may hold ±inf or NaN
    const __m256 x = _mm256_maskload_ps(q + d, dim_tail);
#pragma GCC unroll 8
    for (int l = 0; l < kLanes; ++l)
      acc[l] = _mm256_fmadd_ps(x, _mm256_maskload_ps(keys[l] + d, dim_tail), acc[l]);
  }
  return Reduce8(acc);
}

// scale·dot, softcapped, with the mask fused (m: the mask's lanes, `blocked`: −inf or past Tk).
ATTNCHECK_TARGET_AVX2 inline __m256 FinishScores(__m256 dot, __m256 m, __m256 blocked, float scale, float softcap) {
  __m256 s = _mm256_mul_ps(dot, _mm256_set1_ps(scale));
  if (softcap > 0.0f) {
    const __m256 c = _mm256_set1_ps(softcap);
    s = _mm256_mul_ps(c, avx2::Tanh(_mm256_div_ps(s, c)));
  }
  return _mm256_blendv_ps(_mm256_add_ps(s, m), _mm256_set1_ps(kNegInf), blocked);
}

// scores [Tq, width] of every query row against the keys; 8 keys that are all
// blocked get −inf without a dot product.
ATTNCHECK_TARGET_AVX2 void Scores(const HeadArgs& a, std::ptrdiff_t width, float* scores) {
  const int blocks = static_cast<int>(width / kLanes);
  const __m256i all = _mm256_set1_epi32(-1), tail = FirstLanes(a.tk - (blocks - 1) * kLanes);
  const __m256i dim_tail = FirstLanes(a.head_dim % kLanes);
  const __m256 neg_inf = _mm256_set1_ps(kNegInf);
  for (int i = 0; i < a.tq; ++i) {
    const float* q = a.q + i * a.q_stride;
    for (int b = 0; b < blocks; ++b) {
      const int j = b * kLanes;
      const __m256i lanes = b == blocks - 1 ? tail : all;
      const __m256 m = _mm256_maskload_ps(a.mask + i * a.mask_stride + j, lanes);
      const __m256 blocked =
          _mm256_or_ps(_mm256_cmp_ps(m, neg_inf, _CMP_EQ_OQ), _mm256_castsi256_ps(_mm256_xor_si256(lanes, all)));
      float* out = scores + i * width + j;
      if (_mm256_movemask_ps(blocked) == 0xff) {
        _mm256_storeu_ps(out, neg_inf);
        continue;
      }
      _mm256_storeu_ps(out, FinishScores(Dot8(a, q, j, dim_tail), m, blocked, a.scale, a.softcap));
    }
  }
}

// Softmax numerators in place, row by row over scores [Tq, width]: w = exp(S − max S_i)
// (−inf → 0), sums[i] = Σ_j w_ij; a row without a visible key gets sums[i] = 0 (a
// row with one has Σ ≥ 1 or NaN). Rows are independent, so their exps overlap.
ATTNCHECK_TARGET_AVX2 void Weights(const HeadArgs& a, std::ptrdiff_t width, float* scores, float* sums) {
  const __m256 neg_inf = _mm256_set1_ps(kNegInf);
  for (int i = 0; i < a.tq; ++i) {
    float* row = scores + i * width;
    __m256 max = neg_inf;
    for (std::ptrdiff_t j = 0; j < width; j += kLanes)
      max = _mm256_max_ps(_mm256_loadu_ps(row + j), max);  // NaN skipped
    const float row_max = HorizontalMax(max);
    if (!(row_max > kNegInf)) {  // no visible key (or none at all): declared policy zeros
      sums[i] = 0.0f;
      continue;
    }
    const __m256 shift = _mm256_set1_ps(row_max);
    __m256 sum = _mm256_setzero_ps();
    for (std::ptrdiff_t j = 0; j < width; j += kLanes) {
      const __m256 x = _mm256_loadu_ps(row + j);
      if (_mm256_movemask_ps(_mm256_cmp_ps(x, neg_inf, _CMP_EQ_OQ)) == 0xff) {  // every key blocked
        _mm256_storeu_ps(row + j, _mm256_setzero_ps());
        continue;
      }
      const __m256 w = avx2::Exp(_mm256_sub_ps(x, shift));  // −inf → 0
      _mm256_storeu_ps(row + j, w);
      sum = _mm256_add_ps(sum, w);
    }
    sums[i] = HorizontalSum(sum);
  }
}

// out[0, 8·kVecs) = acc / total; the last block's lanes past `last` are not written
// (a masked store only there: it is slow on some CPUs).
template <int kVecs>
ATTNCHECK_TARGET_AVX2 inline void Store(const __m256 (&acc)[kVecs], __m256 total, __m256i last, bool last_full,
                                        float* out) {
#pragma GCC unroll 4
  for (int u = 0; u + 1 < kVecs; ++u)
    _mm256_storeu_ps(out + u * kLanes, _mm256_div_ps(acc[u], total));
  const __m256 tail = _mm256_div_ps(acc[kVecs - 1], total);
  if (last_full) {
    _mm256_storeu_ps(out + (kVecs - 1) * kLanes, tail);
  } else {
    _mm256_maskstore_ps(out + (kVecs - 1) * kLanes, last, tail);
  }
}

// Output dims [d0, d0 + 8·kVecs) ∩ [0, Dv) of two rows (w0, w1 may be the same row; out1
// null stores only out0): out = Σ_{w_j>0} w_j v_j / sum, the last block masked to `last`.
// Each value vector is loaded once for both rows; a key is skipped by a row whose
// weight is not positive, so NaN in a blocked value cannot leak.
template <int kVecs>
ATTNCHECK_TARGET_AVX2 inline void WeightedValues(const HeadArgs& a, const float* w0, const float* w1, int d0,
                                                 __m256i last, bool last_full, float sum0, float sum1, float* out0,
                                                 float* out1) {
  __m256 acc0[kVecs], acc1[kVecs];
#pragma GCC unroll 4
  for (int u = 0; u < kVecs; ++u)
    acc0[u] = acc1[u] = _mm256_setzero_ps();
  for (int j = 0; j < a.tk; ++j) {
    const bool use0 = w0[j] > 0.0f, use1 = out1 != nullptr && w1[j] > 0.0f;
    if (!use0 && !use1)
      continue;
    const float* v = a.v + j * a.v_stride + d0;
    __m256 x[kVecs];
#pragma GCC unroll 4
    for (int u = 0; u + 1 < kVecs; ++u)
      x[u] = _mm256_loadu_ps(v + u * kLanes);
    const float* tail = v + (kVecs - 1) * kLanes;
    x[kVecs - 1] = last_full ? _mm256_loadu_ps(tail) : _mm256_maskload_ps(tail, last);
    if (use0) {
      const __m256 w = _mm256_set1_ps(w0[j]);
#pragma GCC unroll 4
      for (int u = 0; u < kVecs; ++u)
        acc0[u] = _mm256_fmadd_ps(w, x[u], acc0[u]);
    }
    if (use1) {
      const __m256 w = _mm256_set1_ps(w1[j]);
#pragma GCC unroll 4
      for (int u = 0; u < kVecs; ++u)
        acc1[u] = _mm256_fmadd_ps(w, x[u], acc1[u]);
    }
  }
  const __m256 total0 = _mm256_set1_ps(sum0), total1 = _mm256_set1_ps(sum1);
  Store<kVecs>(acc0, total0, last, last_full, out0 + d0);
  if (out1 != nullptr)
    Store<kVecs>(acc1, total1, last, last_full, out1 + d0);
}

// The weighted values of rows i0 and i1 (i1 = i0: one row), 32 output dims at a time.
ATTNCHECK_TARGET_AVX2 void RowPair(const HeadArgs& a, const float* weights, std::ptrdiff_t width, const float* sums,
                                   int i0, int i1) {
  const float *w0 = weights + i0 * width, *w1 = weights + i1 * width;
  float *out0 = a.out + i0 * a.out_stride, *out1 = i1 == i0 ? nullptr : a.out + i1 * a.out_stride;
  constexpr int kChunk = 4 * kLanes;
  for (int d0 = 0; d0 < a.value_dim; d0 += kChunk) {
    const int dims = std::min(kChunk, a.value_dim - d0), vecs = (dims + kLanes - 1) / kLanes;
    const int rest = dims - (vecs - 1) * kLanes;
    const __m256i last = FirstLanes(rest);
    switch (vecs) {
      case 1:
        WeightedValues<1>(a, w0, w1, d0, last, rest == kLanes, sums[i0], sums[i1], out0, out1);
        break;
      case 2:
        WeightedValues<2>(a, w0, w1, d0, last, rest == kLanes, sums[i0], sums[i1], out0, out1);
        break;
      case 3:
        WeightedValues<3>(a, w0, w1, d0, last, rest == kLanes, sums[i0], sums[i1], out0, out1);
        break;
      default:
        WeightedValues<4>(a, w0, w1, d0, last, rest == kLanes, sums[i0], sums[i1], out0, out1);
        break;
    }
  }
}

ATTNCHECK_TARGET_AVX2 void AttendHead(const HeadArgs& a) {
  if (a.tq <= 0)
    return;
  Scratch& s = Buffers();
  const std::ptrdiff_t width = std::max<std::ptrdiff_t>((a.tk + kLanes - 1) / kLanes * kLanes, kLanes);
  s.scores.resize(static_cast<size_t>(a.tq) * width);
  s.sums.resize(a.tq);
  s.rows.clear();
  if (a.tk > 0) {
    Scores(a, width, s.scores.data());
    Weights(a, width, s.scores.data(), s.sums.data());
  } else {
    std::fill(s.sums.begin(), s.sums.end(), 0.0f);
  }
  for (int i = 0; i < a.tq; ++i) {
    if (s.sums[i] == 0.0f) {
      std::fill_n(a.out + i * a.out_stride, a.value_dim, 0.0f);
    } else {
      s.rows.push_back(i);
    }
  }
  for (size_t r = 0; r < s.rows.size(); r += 2)
    RowPair(a, s.scores.data(), width, s.sums.data(), s.rows[r], s.rows[std::min(r + 1, s.rows.size() - 1)]);
}

// out = op(x), 8 lanes at a time (the last < 8 masked).
template <__m256 (*kOp)(__m256)>
ATTNCHECK_TARGET_AVX2 void Apply(std::span<const float> x, std::span<float> out) {
  size_t e = 0;
  for (; e + kLanes <= x.size(); e += kLanes)
    _mm256_storeu_ps(out.data() + e, kOp(_mm256_loadu_ps(x.data() + e)));
  const __m256i lanes = FirstLanes(static_cast<int>(x.size() - e));
  _mm256_maskstore_ps(out.data() + e, lanes, kOp(_mm256_maskload_ps(x.data() + e, lanes)));
}

}  // namespace

bool HasAvx2Fma() {
  static const bool has = [] {
    __builtin_cpu_init();  // in case the first call comes from a static initializer
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}

void Avx2AttendHead(const HeadArgs& a) { AttendHead(a); }
void Avx2Exp(std::span<const float> x, std::span<float> out) { Apply<avx2::Exp>(x, out); }
void Avx2Tanh(std::span<const float> x, std::span<float> out) { Apply<avx2::Tanh>(x, out); }

}  // namespace attncheck::adapters
