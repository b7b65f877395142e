// The eigen kernel's head with AVX2+FMA (avx2_head.h), per (batch, head):
//   kᵀ packed [D, Tk↑8] (zeros past Tk); S = scale·q·kᵀ, 2 query rows × 4 blocks of
//   8 keys in FMA accumulators; softcap c·tanh(S/c); S = blocked ? −inf : S + M;
//   per row: max, w = exp(S − max), Σw, out = Σ_{w_j>0} w_j v_j / Σw in 8-lane blocks.
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
  std::vector<float> packed_keys;  // kᵀ [D, Tk↑8]
  std::vector<float> scores;       // [Tq, Tk↑8], −inf past Tk
  std::vector<float> weights;      // [Tk↑8]
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

// Dot products of query rows q0, q1 with kBlocks·8 packed keys (stride `width`).
template <int kBlocks>
ATTNCHECK_TARGET_AVX2 inline void DotTile(const float* q0, const float* q1, const float* keys, std::ptrdiff_t width,
                                          int dims, __m256 (&acc0)[4], __m256 (&acc1)[4]) {
  for (int b = 0; b < kBlocks; ++b) acc0[b] = acc1[b] = _mm256_setzero_ps();
  for (int d = 0; d < dims; ++d) {
    const __m256 x0 = _mm256_set1_ps(q0[d]), x1 = _mm256_set1_ps(q1[d]);
    const float* row = keys + d * width;
    for (int b = 0; b < kBlocks; ++b) {
      const __m256 kb = _mm256_loadu_ps(row + b * kLanes);
      acc0[b] = _mm256_fmadd_ps(x0, kb, acc0[b]);
      acc1[b] = _mm256_fmadd_ps(x1, kb, acc1[b]);
    }
  }
}

// scale·dot, softcapped, with the mask fused; lanes outside `lanes` (past Tk) → −inf.
ATTNCHECK_TARGET_AVX2 inline __m256 FinishScores(__m256 dot, const float* mask, __m256i lanes, float scale,
                                                 float softcap) {
  __m256 s = _mm256_mul_ps(dot, _mm256_set1_ps(scale));
  if (softcap > 0.0f) {
    const __m256 c = _mm256_set1_ps(softcap);
    s = _mm256_mul_ps(c, avx2::Tanh(_mm256_div_ps(s, c)));
  }
  const __m256 neg_inf = _mm256_set1_ps(kNegInf);
  const __m256 m = _mm256_maskload_ps(mask, lanes);
  const __m256 blocked = _mm256_or_ps(_mm256_cmp_ps(m, neg_inf, _CMP_EQ_OQ),
                                      _mm256_castsi256_ps(_mm256_xor_si256(lanes, _mm256_set1_epi32(-1))));
  return _mm256_blendv_ps(_mm256_add_ps(s, m), neg_inf, blocked);
}

// scores [Tq, width] of every query row against the packed keys.
ATTNCHECK_TARGET_AVX2 void Scores(const HeadArgs& a, const float* keys, std::ptrdiff_t width, float* scores) {
  const int blocks = static_cast<int>(width / kLanes);
  const __m256i all = _mm256_set1_epi32(-1), tail = FirstLanes(a.tk - (blocks - 1) * kLanes);
  __m256 acc0[4], acc1[4];
  for (int i = 0; i < a.tq; i += 2) {
    const bool pair = i + 1 < a.tq;
    const float* q0 = a.q + i * a.q_stride;
    const float* q1 = pair ? q0 + a.q_stride : q0;
    for (int b0 = 0; b0 < blocks; b0 += 4) {
      const int count = std::min(4, blocks - b0);
      const float* tile = keys + b0 * kLanes;
      switch (count) {
        case 1: DotTile<1>(q0, q1, tile, width, a.head_dim, acc0, acc1); break;
        case 2: DotTile<2>(q0, q1, tile, width, a.head_dim, acc0, acc1); break;
        case 3: DotTile<3>(q0, q1, tile, width, a.head_dim, acc0, acc1); break;
        default: DotTile<4>(q0, q1, tile, width, a.head_dim, acc0, acc1); break;
      }
      for (int b = 0; b < count; ++b) {
        const int j = (b0 + b) * kLanes;
        const __m256i lanes = b0 + b == blocks - 1 ? tail : all;
        _mm256_storeu_ps(scores + i * width + j,
                         FinishScores(acc0[b], a.mask + i * a.mask_stride + j, lanes, a.scale, a.softcap));
        if (pair)
          _mm256_storeu_ps(scores + (i + 1) * width + j,
                           FinishScores(acc1[b], a.mask + (i + 1) * a.mask_stride + j, lanes, a.scale, a.softcap));
      }
    }
  }
}

// out[d0, d0 + 8·kVecs) ∩ [0, Dv) = Σ_{w_j>0} w_j v_j / sum, the last block masked to `last`.
template <int kVecs>
ATTNCHECK_TARGET_AVX2 inline void WeightedValues(const float* weights, const HeadArgs& a, int d0, __m256i last,
                                                 bool last_full, float sum, float* out) {
  __m256 acc[kVecs];
  for (int u = 0; u < kVecs; ++u) acc[u] = _mm256_setzero_ps();
  for (int j = 0; j < a.tk; ++j) {
    if (!(weights[j] > 0.0f)) continue;
    const __m256 w = _mm256_set1_ps(weights[j]);
    const float* v = a.v + j * a.v_stride + d0;
    for (int u = 0; u + 1 < kVecs; ++u) acc[u] = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + u * kLanes), acc[u]);
    const float* tail = v + (kVecs - 1) * kLanes;
    acc[kVecs - 1] = _mm256_fmadd_ps(w, last_full ? _mm256_loadu_ps(tail) : _mm256_maskload_ps(tail, last), acc[kVecs - 1]);
  }
  const __m256 total = _mm256_set1_ps(sum);
  for (int u = 0; u + 1 < kVecs; ++u) _mm256_storeu_ps(out + d0 + u * kLanes, _mm256_div_ps(acc[u], total));
  _mm256_maskstore_ps(out + d0 + (kVecs - 1) * kLanes, last, _mm256_div_ps(acc[kVecs - 1], total));
}

// One row's softmax over scores [width] and its weighted values → out [Dv].
ATTNCHECK_TARGET_AVX2 void Row(const HeadArgs& a, const float* scores, std::ptrdiff_t width, float* weights, float* out) {
  __m256 max = _mm256_set1_ps(kNegInf);
  for (std::ptrdiff_t j = 0; j < width; j += kLanes) max = _mm256_max_ps(_mm256_loadu_ps(scores + j), max);  // NaN skipped
  const float row_max = a.tk == 0 ? kNegInf : HorizontalMax(max);
  if (!(row_max > kNegInf)) {  // no visible key: declared policy zeros
    std::fill_n(out, a.value_dim, 0.0f);
    return;
  }
  const __m256 shift = _mm256_set1_ps(row_max);
  __m256 sums = _mm256_setzero_ps();
  for (std::ptrdiff_t j = 0; j < width; j += kLanes) {
    const __m256 w = avx2::Exp(_mm256_sub_ps(_mm256_loadu_ps(scores + j), shift));  // −inf → 0
    _mm256_storeu_ps(weights + j, w);
    sums = _mm256_add_ps(sums, w);
  }
  const float sum = HorizontalSum(sums);
  constexpr int kChunk = 8 * kLanes;
  for (int d0 = 0; d0 < a.value_dim; d0 += kChunk) {
    const int dims = std::min(kChunk, a.value_dim - d0), vecs = (dims + kLanes - 1) / kLanes;
    const int rest = dims - (vecs - 1) * kLanes;
    const __m256i last = FirstLanes(rest);
    switch (vecs) {
      case 1: WeightedValues<1>(weights, a, d0, last, rest == kLanes, sum, out); break;
      case 2: WeightedValues<2>(weights, a, d0, last, rest == kLanes, sum, out); break;
      case 3: WeightedValues<3>(weights, a, d0, last, rest == kLanes, sum, out); break;
      case 4: WeightedValues<4>(weights, a, d0, last, rest == kLanes, sum, out); break;
      case 5: WeightedValues<5>(weights, a, d0, last, rest == kLanes, sum, out); break;
      case 6: WeightedValues<6>(weights, a, d0, last, rest == kLanes, sum, out); break;
      case 7: WeightedValues<7>(weights, a, d0, last, rest == kLanes, sum, out); break;
      default: WeightedValues<8>(weights, a, d0, last, rest == kLanes, sum, out); break;
    }
  }
}

ATTNCHECK_TARGET_AVX2 void AttendHead(const HeadArgs& a) {
  if (a.tq <= 0) return;
  Scratch& s = Buffers();
  const std::ptrdiff_t width = std::max<std::ptrdiff_t>((a.tk + kLanes - 1) / kLanes * kLanes, kLanes);
  s.packed_keys.assign(static_cast<size_t>(a.head_dim) * width, 0.0f);
  for (int j = 0; j < a.tk; ++j)
    for (int d = 0; d < a.head_dim; ++d) s.packed_keys[d * width + j] = a.k[j * a.k_stride + d];
  s.scores.resize(static_cast<size_t>(a.tq) * width);
  s.weights.resize(width);
  if (a.tk > 0) {
    Scores(a, s.packed_keys.data(), width, s.scores.data());
  } else {
    std::fill(s.scores.begin(), s.scores.end(), kNegInf);
  }
  for (int i = 0; i < a.tq; ++i) Row(a, s.scores.data() + i * width, width, s.weights.data(), a.out + i * a.out_stride);
}

ATTNCHECK_TARGET_AVX2 void ExpArray(std::span<const float> x, std::span<float> out) {
  size_t e = 0;
  for (; e + kLanes <= x.size(); e += kLanes) _mm256_storeu_ps(out.data() + e, avx2::Exp(_mm256_loadu_ps(x.data() + e)));
  const __m256i lanes = FirstLanes(static_cast<int>(x.size() - e));
  _mm256_maskstore_ps(out.data() + e, lanes, avx2::Exp(_mm256_maskload_ps(x.data() + e, lanes)));
}

ATTNCHECK_TARGET_AVX2 void TanhArray(std::span<const float> x, std::span<float> out) {
  size_t e = 0;
  for (; e + kLanes <= x.size(); e += kLanes) _mm256_storeu_ps(out.data() + e, avx2::Tanh(_mm256_loadu_ps(x.data() + e)));
  const __m256i lanes = FirstLanes(static_cast<int>(x.size() - e));
  _mm256_maskstore_ps(out.data() + e, lanes, avx2::Tanh(_mm256_maskload_ps(x.data() + e, lanes)));
}

}  // namespace

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

void Avx2AttendHead(const HeadArgs& a) { AttendHead(a); }
void Avx2Exp(std::span<const float> x, std::span<float> out) { ExpArray(x, out); }
void Avx2Tanh(std::span<const float> x, std::span<float> out) { TanhArray(x, out); }

}  // namespace attncheck::adapters
