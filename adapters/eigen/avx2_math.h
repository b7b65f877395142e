// Eight-lane float exp and tanh for the eigen kernel's AVX2+FMA path
// (adapters/eigen/avx2_head.cc), in raw intrinsics under target("avx2,fma"):
// exp is Cephes' expf (round(x·log2 e), two-part ln 2, degree-6 polynomial, 2ⁿ);
// tanh is sign·(1 − 2/(e^{2|x|} + 1)) in double (x − x³/3 + … near 0), rounded once.
// Include only from files whose AVX2 code is reached after the run-time check.
#pragma once

#include <immintrin.h>

#define ATTNCHECK_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace attncheck::adapters::avx2 {

// e^x for x ≤ 88 (8 lanes): at most 2 ulp from the correctly rounded exp on
// [−104, 0]; x < −103.97 (−inf included) gives exactly 0; NaN stays NaN. Below
// 2⁻¹⁰⁰ the result is scaled in two steps, so a subnormal is rounded once.
ATTNCHECK_TARGET_AVX2 inline __m256 Exp(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x);  // max/min return their second operand for NaN
  x = _mm256_min_ps(_mm256_set1_ps(88.0f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // x − n·ln 2, ln 2 in two parts
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  // 1 + r + r²·P(r), Cephes' degree-5 P evaluated by Estrin's scheme (a short chain).
  const __m256 r2 = _mm256_mul_ps(r, r), r4 = _mm256_mul_ps(r2, r2);
  const __m256 p01 = _mm256_fmadd_ps(_mm256_set1_ps(1.6666665459e-1f), r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 p23 = _mm256_fmadd_ps(_mm256_set1_ps(8.3334519073e-3f), r, _mm256_set1_ps(4.1665795894e-2f));
  const __m256 p45 = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  const __m256 p = _mm256_fmadd_ps(p45, r4, _mm256_fmadd_ps(p23, r2, p01));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
  // 2ⁿ as exponent bits; n < −100 takes 2^(n+64) (exact) and then 2⁻⁶⁴ (one rounding).
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i low = _mm256_cmpgt_epi32(_mm256_set1_epi32(-100), ni);
  const __m256i n1 = _mm256_add_epi32(ni, _mm256_and_si256(low, _mm256_set1_epi32(64)));
  const __m256 two_n1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 two_m64 = _mm256_blendv_ps(_mm256_set1_ps(1.0f), _mm256_set1_ps(0x1p-64f), _mm256_castsi256_ps(low));
  return _mm256_mul_ps(_mm256_mul_ps(y, two_n1), two_m64);
}

// e^y in double for 0 ≤ y ≤ 40 (4 lanes), about 1e−15 relative: n = round(y·log2 e),
// r = y − n·ln 2 (fdlibm's two parts), e^r by its Taylor series to r¹¹ (|r| ≤ 0.35:
// remainder < 7e−15), times 2ⁿ (exponent bits).
ATTNCHECK_TARGET_AVX2 inline __m256d ExpDouble(__m256d y) {
  const __m256d n = _mm256_round_pd(_mm256_mul_pd(y, _mm256_set1_pd(1.4426950408889634)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), y);
  r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);
  // Σ_{k≤11} r^k/k! by Estrin's scheme (pairs, then r², r⁴, r⁸): a short dependency chain.
  const __m256d r2 = _mm256_mul_pd(r, r), r4 = _mm256_mul_pd(r2, r2), r8 = _mm256_mul_pd(r4, r4);
  const __m256d p01 = _mm256_add_pd(_mm256_set1_pd(1.0), r);
  const __m256d p23 = _mm256_fmadd_pd(_mm256_set1_pd(1.0 / 6), r, _mm256_set1_pd(0.5));
  const __m256d p45 = _mm256_fmadd_pd(_mm256_set1_pd(1.0 / 120), r, _mm256_set1_pd(1.0 / 24));
  const __m256d p67 = _mm256_fmadd_pd(_mm256_set1_pd(1.0 / 5040), r, _mm256_set1_pd(1.0 / 720));
  const __m256d p89 = _mm256_fmadd_pd(_mm256_set1_pd(1.0 / 362880), r, _mm256_set1_pd(1.0 / 40320));
  const __m256d p1011 = _mm256_fmadd_pd(_mm256_set1_pd(1.0 / 39916800), r, _mm256_set1_pd(1.0 / 3628800));
  const __m256d p0to3 = _mm256_fmadd_pd(p23, r2, p01), p4to7 = _mm256_fmadd_pd(p67, r2, p45);
  const __m256d p8to11 = _mm256_fmadd_pd(p1011, r2, p89);
  const __m256d p = _mm256_fmadd_pd(p8to11, r8, _mm256_fmadd_pd(p4to7, r4, p0to3));
  const __m256i n64 = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n));
  const __m256d two_n = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(n64, _mm256_set1_epi64x(1023)), 52));
  return _mm256_mul_pd(p, two_n);
}

// tanh of 4 floats, computed in double and rounded once to float.
ATTNCHECK_TARGET_AVX2 inline __m128 TanhQuad(__m128 xf) {
  const __m256d x = _mm256_cvtps_pd(xf);
  const __m256d sign = _mm256_and_pd(x, _mm256_set1_pd(-0.0));
  const __m256d a = _mm256_min_pd(_mm256_set1_pd(20.0), _mm256_andnot_pd(_mm256_set1_pd(-0.0), x));  // NaN stays
  const __m256d e = ExpDouble(_mm256_add_pd(a, a));
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d far = _mm256_sub_pd(one, _mm256_div_pd(_mm256_set1_pd(2.0), _mm256_add_pd(e, one)));
  // |x| < 0.004: 1 − 2/(e^{2a} + 1) cancels; a − a³/3 + 2a⁵/15 − 17a⁷/315 is exact to 1e−17 there.
  const __m256d a2 = _mm256_mul_pd(a, a);
  __m256d series = _mm256_fmadd_pd(_mm256_set1_pd(-17.0 / 315), a2, _mm256_set1_pd(2.0 / 15));
  series = _mm256_fmadd_pd(series, a2, _mm256_set1_pd(-1.0 / 3));
  series = _mm256_fmadd_pd(_mm256_mul_pd(series, a2), a, a);
  const __m256d near = _mm256_cmp_pd(a, _mm256_set1_pd(0.004), _CMP_LT_OQ);
  return _mm256_cvtpd_ps(_mm256_or_pd(_mm256_blendv_pd(far, series, near), sign));
}

// tanh of 8 floats: each at most 1 ulp from the correctly rounded tanh; ±0, ±inf
// (→ ±1) and NaN as tanhf gives them.
ATTNCHECK_TARGET_AVX2 inline __m256 Tanh(__m256 x) {
  const __m128 low = TanhQuad(_mm256_castps256_ps128(x)), high = TanhQuad(_mm256_extractf128_ps(x, 1));
  return _mm256_insertf128_ps(_mm256_castps128_ps256(low), high, 1);
}

}  // namespace attncheck::adapters::avx2
