// The eigen kernel's AVX2+FMA path (adapters/eigen/avx2_head.h): its exp and tanh
// over dense sweeps against the correctly rounded float of the double functions,
// and its heads against a double-precision softmax attention and against the
// portable path, within an error bound that a zeroed row or a dropped key exceeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "adapters/eigen/avx2_head.h"
#include "adapters/eigen/eigen_adapter.h"

namespace attncheck {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kUnit = 0x1p-24;  // float unit roundoff

#define SKIP_WITHOUT_AVX2()                  \
  if (!EigenPathAvailable(EigenPath::kAvx2)) \
  GTEST_SKIP() << "this CPU has no AVX2+FMA: the portable path runs"

// A float's place in the ordered line of floats (−0 and +0 both 0).
int64_t Ordered(float x) {
  const int64_t bits = std::bit_cast<int32_t>(x);
  return bits < 0 ? std::numeric_limits<int32_t>::min() - bits : bits;
}

float FromOrdered(int64_t o) {
  return std::bit_cast<float>(static_cast<int32_t>(o < 0 ? std::numeric_limits<int32_t>::min() - o : o));
}

// Distance in floats between a and b; NaN vs NaN is 0.
int64_t UlpDistance(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  return std::abs(Ordered(a) - Ordered(b));
}

// Every `stride`-th float of [lo, hi], then `extra`.
std::vector<float> Sweep(float lo, float hi, int stride, std::vector<float> extra) {
  std::vector<float> x = std::move(extra);
  for (int64_t o = Ordered(lo); o <= Ordered(hi); o += stride)
    x.push_back(FromOrdered(o));
  return x;
}

TEST(EigenAvx2, TanhIsWithinOneUlpAndNoWorseThanTanhf) {
  SKIP_WITHOUT_AVX2();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = Sweep(-20.0f, 20.0f, 97,
                                     {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-39f, -3e-39f, 1e-30f, -1e-20f, 1e-5f, inf, -inf,
                                      30.0f, -30.0f, 1e10f, -1e10f, std::numeric_limits<float>::max(), kNaN});
  std::vector<float> got(x.size());
  adapters::Avx2Tanh(x, got);
  int64_t worst = 0, worst_tanhf = 0, off = 0, off_tanhf = 0;
  for (size_t e = 0; e < x.size(); ++e) {
    const float want = static_cast<float>(std::tanh(static_cast<double>(x[e])));
    const int64_t ulps = UlpDistance(got[e], want), ulps_tanhf = UlpDistance(std::tanh(x[e]), want);
    ASSERT_LE(ulps, 1) << "tanh(" << x[e] << ") = " << got[e] << ", correctly rounded " << want;
    if (std::signbit(x[e]) != std::signbit(got[e]) && !std::isnan(x[e]))
      FAIL() << "sign of tanh(" << x[e] << ")";
    worst = std::max(worst, ulps);
    worst_tanhf = std::max(worst_tanhf, ulps_tanhf);
    off += ulps > 0;
    off_tanhf += ulps_tanhf > 0;
  }
  EXPECT_LE(worst, worst_tanhf);
  EXPECT_LE(off, off_tanhf);
  EXPECT_GT(x.size(), 20'000'000u);
  std::printf("tanh over %zu floats: worst %lld ulp (%lld off by one); tanhf worst %lld ulp (%lld off)\n", x.size(),
              static_cast<long long>(worst), static_cast<long long>(off), static_cast<long long>(worst_tanhf),
              static_cast<long long>(off_tanhf));
}

TEST(EigenAvx2, ExpIsWithinTwoUlpAndUnderflowsToExactZero) {
  SKIP_WITHOUT_AVX2();
  const std::vector<float> x =
      Sweep(-104.0f, 0.0f, 31, {-0.0f, -1e-45f, -1e-30f, -103.9f, -103.98f, -150.0f, -1e30f, kNegInf});
  std::vector<float> got(x.size());
  adapters::Avx2Exp(x, got);
  int64_t worst = 0;
  for (size_t e = 0; e < x.size(); ++e) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x[e])));
    const int64_t ulps = UlpDistance(got[e], want);
    ASSERT_LE(ulps, 2) << "exp(" << x[e] << ") = " << got[e] << ", correctly rounded " << want;
    worst = std::max(worst, ulps);
  }
  EXPECT_GT(x.size(), 30'000'000u);
  std::printf("exp over %zu floats in [-104, 0]: worst %lld ulp\n", x.size(), static_cast<long long>(worst));
  const std::vector<float> special = {0.0f, kNegInf, -1e30f, -104.0f, kNaN, 1.0f, 88.0f};
  std::vector<float> out(special.size());
  adapters::Avx2Exp(special, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(std::bit_cast<uint32_t>(out[1]), 0u);
  EXPECT_EQ(std::bit_cast<uint32_t>(out[2]), 0u);
  EXPECT_EQ(std::bit_cast<uint32_t>(out[3]), 0u);
  EXPECT_TRUE(std::isnan(out[4]));
  EXPECT_LE(UlpDistance(out[5], static_cast<float>(std::exp(1.0))), 2);
  EXPECT_LE(UlpDistance(out[6], static_cast<float>(std::exp(88.0))), 2);
}

// A random head: odd sizes, blocked runs and holes, folded biases, fully blocked
// rows, softcaps; keys blocked for every row carry ±inf and NaN in k and v.
struct Head {
  int tq, tk, d, dv;
  float scale, softcap;
  std::vector<float> q, k, v, mask;
};

Head RandomHead(std::mt19937& rng, int trial) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Head h;
  h.tq = 1 + static_cast<int>(rng() % 33);
  h.tk = static_cast<int>(rng() % 70);
  h.d = 1 + static_cast<int>(rng() % 72);
  h.dv = 1 + static_cast<int>(rng() % 80);
  const float spread = trial % 5 == 0 ? 30.0f : 1.0f;  // large logits: most weights underflow
  h.q.resize(static_cast<size_t>(h.tq) * h.d);
  h.k.resize(static_cast<size_t>(h.tk) * h.d);
  h.v.resize(static_cast<size_t>(h.tk) * h.dv);
  for (float& x : h.q)
    x = spread * normal(rng);
  for (float& x : h.k)
    x = normal(rng);
  for (float& x : h.v)
    x = normal(rng);
  h.mask.assign(static_cast<size_t>(h.tq) * h.tk, 0.0f);
  std::vector<bool> dead(h.tk, false);  // blocked for every row: holds ±inf and NaN
  for (int j = 0; j < h.tk; ++j)
    dead[j] = trial % 3 == 1 && rng() % 5 == 0;
  for (int i = 0; i < h.tq; ++i)
    for (int j = 0; j < h.tk; ++j) {
      float& m = h.mask[static_cast<size_t>(i) * h.tk + j];
      if (trial % 3 == 0 && j > i + h.tk / 3)
        m = kNegInf;
      if (rng() % 6 == 0)
        m = kNegInf;
      if (trial % 4 == 1 && m == 0.0f)
        m = 0.5f * normal(rng);
      if ((trial % 7 == 0 && i == 0) || dead[j])
        m = kNegInf;
    }
  const float specials[] = {kNaN, std::numeric_limits<float>::infinity(), kNegInf};
  for (int j = 0; j < h.tk; ++j)
    if (dead[j]) {
      h.k[static_cast<size_t>(j) * h.d + rng() % h.d] = specials[rng() % 3];
      h.v[static_cast<size_t>(j) * h.dv + rng() % h.dv] = specials[rng() % 3];
    }
  h.scale = 1.0f / std::sqrt(static_cast<float>(h.d));
  h.softcap = trial % 2 == 0 ? 0.0f : (trial % 4 == 1 ? 5.0f : 30.0f);
  return h;
}

// The softmax attention in double from the same float inputs, and per output the
// bound on a float kernel's error, in units of u = 2⁻²⁴ (first order):
//   |err_id| ≤ u·[ Σ_j p_j ((D + 8)·A_ij + 4)·|v_jd − o_id| + (2·Tk + 4)·Σ_j p_j |v_jd| ] + Tk·2⁻¹²⁶·max|v_jd|
// where A_ij = scale·Σ_d |q_id k_jd| + |S_ij| + |M_ij| + |S_ij − max S_i|. The first
// term is the score's absolute error (a D-term dot product, then up to 8 roundings
// of values no larger than A_ij; tanh' ≤ 1) and exp's 2 ulp, both relative errors
// of w_j, which move o by Σ p_j ε_j (v_j − o); the second is the rounding of Σw and
// of Σ w_j v_j in float; the last covers weights that underflow to subnormals.
struct Reference {
  std::vector<double> out, bound;
};

Reference DoubleAttention(const Head& h) {
  Reference r{std::vector<double>(static_cast<size_t>(h.tq) * h.dv, 0.0),
              std::vector<double>(static_cast<size_t>(h.tq) * h.dv, 0.0)};
  std::vector<double> s(h.tk), a(h.tk), p(h.tk);
  for (int i = 0; i < h.tq; ++i) {
    double row_max = -INFINITY;
    for (int j = 0; j < h.tk; ++j) {
      const double m = h.mask[static_cast<size_t>(i) * h.tk + j];
      if (m == -INFINITY)
        continue;
      double dot = 0.0, magnitude = 0.0;
      for (int d = 0; d < h.d; ++d) {
        const double x =
            static_cast<double>(h.q[static_cast<size_t>(i) * h.d + d]) * h.k[static_cast<size_t>(j) * h.d + d];
        dot += x;
        magnitude += std::abs(x);
      }
      double score = h.scale * dot;
      if (h.softcap > 0.0f)
        score = h.softcap * std::tanh(score / h.softcap);
      s[j] = score + m;
      a[j] = h.scale * magnitude + std::abs(score) + std::abs(m);
      row_max = std::max(row_max, s[j]);
    }
    if (row_max == -INFINITY)
      continue;
    double sum = 0.0;
    for (int j = 0; j < h.tk; ++j) {
      p[j] = h.mask[static_cast<size_t>(i) * h.tk + j] == -INFINITY ? 0.0 : std::exp(s[j] - row_max);
      sum += p[j];
    }
    for (int j = 0; j < h.tk; ++j)
      p[j] /= sum;
    for (int e = 0; e < h.dv; ++e) {
      double o = 0.0, spread = 0.0, size = 0.0, largest = 0.0;
      for (int j = 0; j < h.tk; ++j)
        if (p[j] > 0.0)
          o += p[j] * h.v[static_cast<size_t>(j) * h.dv + e];
      for (int j = 0; j < h.tk; ++j) {
        if (p[j] == 0.0)
          continue;
        const double v = h.v[static_cast<size_t>(j) * h.dv + e];
        spread += p[j] * ((h.d + 8) * (a[j] + std::abs(s[j] - row_max)) + 4) * std::abs(v - o);
        size += p[j] * std::abs(v);
        largest = std::max(largest, std::abs(v));
      }
      r.out[static_cast<size_t>(i) * h.dv + e] = o;
      r.bound[static_cast<size_t>(i) * h.dv + e] =
          kUnit * (spread + (2.0 * h.tk + 4) * size) + h.tk * 0x1p-126 * largest;
    }
  }
  return r;
}

std::vector<float> Attend(const Head& h) {
  std::vector<float> out(static_cast<size_t>(h.tq) * h.dv, 7.0f);
  EigenAttendHead(h.q.data(), h.k.data(), h.v.data(), h.mask.data(), h.tq, h.tk, h.d, h.dv, h.scale, h.softcap,
                  out.data());
  return out;
}

// The largest |got − want| / bound over a head (∞ where a zero or NaN is wrong).
double WorstRatio(const std::vector<float>& got, const Reference& want) {
  double worst = 0.0;
  for (size_t e = 0; e < got.size(); ++e) {
    if (want.bound[e] == 0.0) {  // a row without a visible key: exactly +0
      if (std::bit_cast<uint32_t>(got[e]) != 0u)
        return INFINITY;
      continue;
    }
    const double ratio = std::abs(got[e] - want.out[e]) / want.bound[e];
    if (!(ratio <= INFINITY))
      return INFINITY;  // NaN
    worst = std::max(worst, ratio);
  }
  return worst;
}

TEST(EigenAvx2, HeadsMatchDoubleAttentionWithinTheBound) {
  SKIP_WITHOUT_AVX2();
  const ScopedEigenPath avx2(EigenPath::kAvx2);
  std::mt19937 rng(11);
  double worst = 0.0, worst_portable = 0.0, worst_row_ulps = 0.0;
  int zeroed_caught = 0, dropped_caught = 0, perturbed = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Head h = RandomHead(rng, trial);
    const Reference want = DoubleAttention(h);
    const std::vector<float> got = Attend(h);
    const double ratio = WorstRatio(got, want);
    ASSERT_LE(ratio, 1.0) << "trial " << trial << " (tq=" << h.tq << ", tk=" << h.tk << ", d=" << h.d << ", dv=" << h.dv
                          << ", softcap " << h.softcap << ")";
    worst = std::max(worst, ratio);
    {
      const ScopedEigenPath portable(EigenPath::kPortable);
      worst_portable = std::max(worst_portable, WorstRatio(Attend(h), want));
    }
    if (trial % 5 == 0)
      continue;                       // large logits: the score's error is far above an output ulp
    for (int i = 0; i < h.tq; ++i) {  // the error in ulps of the row's largest output
      double row_scale = 0.0, row_error = 0.0;
      for (int e = 0; e < h.dv; ++e) {
        const size_t at = static_cast<size_t>(i) * h.dv + e;
        row_scale = std::max(row_scale, std::abs(want.out[at]));
        row_error = std::max(row_error, std::abs(got[at] - want.out[at]));
      }
      if (row_scale > 0.0)
        worst_row_ulps = std::max(worst_row_ulps, row_error / (kUnit * row_scale));
    }
    // A zeroed row, and the key of largest weight dropped, both exceed the bound.
    int row = -1;
    for (int i = 0; i < h.tq && row < 0; ++i)
      for (int e = 0; e < h.dv && row < 0; ++e)
        if (want.bound[static_cast<size_t>(i) * h.dv + e] > 0.0)
          row = i;
    if (row < 0)
      continue;
    int visible = 0, top = -1;
    double top_score = -INFINITY;
    for (int j = 0; j < h.tk; ++j) {
      const float m = h.mask[static_cast<size_t>(row) * h.tk + j];
      if (m == kNegInf)
        continue;
      ++visible;
      double dot = 0.0;
      for (int d = 0; d < h.d; ++d)
        dot += static_cast<double>(h.q[static_cast<size_t>(row) * h.d + d]) * h.k[static_cast<size_t>(j) * h.d + d];
      const double score = h.softcap > 0.0f ? h.softcap * std::tanh(dot * h.scale / h.softcap) : dot * h.scale;
      if (score + m > top_score)
        top_score = score + m, top = j;
    }
    if (visible < 2)
      continue;
    ++perturbed;
    std::vector<float> zeroed = got;
    std::fill_n(zeroed.begin() + static_cast<ptrdiff_t>(row) * h.dv, h.dv, 0.0f);
    zeroed_caught += WorstRatio(zeroed, want) > 1.0;
    Head dropped = h;
    dropped.mask[static_cast<size_t>(row) * h.tk + top] = kNegInf;
    dropped_caught += WorstRatio(Attend(dropped), want) > 1.0;
  }
  std::printf(
      "vs double: fast path's worst error %.4g of the bound (portable %.4g); unit logits: %.2f ulp of the row's "
      "largest output\n",
      worst, worst_portable, worst_row_ulps);
  EXPECT_GT(perturbed, 300);
  EXPECT_EQ(zeroed_caught, perturbed);
  EXPECT_EQ(dropped_caught, perturbed);
}

TEST(EigenAvx2, FastAndPortablePathsAgreeWithinTheBound) {
  SKIP_WITHOUT_AVX2();
  std::mt19937 rng(13);
  int zeros = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const Head h = RandomHead(rng, trial);
    const Reference want = DoubleAttention(h);
    std::vector<float> fast, portable;
    {
      const ScopedEigenPath path(EigenPath::kAvx2);
      fast = Attend(h);
    }
    {
      const ScopedEigenPath path(EigenPath::kPortable);
      portable = Attend(h);
    }
    for (size_t e = 0; e < fast.size(); ++e) {
      ASSERT_EQ(fast[e] == 0.0f, portable[e] == 0.0f) << "trial " << trial << ", output " << e;
      ASSERT_FALSE(std::isnan(fast[e]) || std::isnan(portable[e])) << "trial " << trial << ", output " << e;
      ASSERT_LE(std::abs(static_cast<double>(fast[e]) - portable[e]), 2.0 * want.bound[e])
          << "trial " << trial << ", output " << e;
      zeros += want.bound[e] == 0.0;
    }
  }
  EXPECT_GT(zeros, 1000);  // fully blocked rows ran
}

// A visible NaN score (NaN in a visible key) turns its row into NaN on both paths.
TEST(EigenAvx2, VisibleNaNPropagatesAsOnThePortablePath) {
  SKIP_WITHOUT_AVX2();
  std::mt19937 rng(3);
  Head h = RandomHead(rng, 2);
  while (h.tk < 3)
    h = RandomHead(rng, 2);
  std::fill(h.mask.begin(), h.mask.end(), 0.0f);
  h.k[static_cast<size_t>(h.tk / 2) * h.d] = kNaN;
  for (EigenPath path : {EigenPath::kAvx2, EigenPath::kPortable}) {
    const ScopedEigenPath scoped(path);
    for (float x : Attend(h))
      ASSERT_TRUE(std::isnan(x)) << "path " << static_cast<int>(path);
  }
}

TEST(EigenAvx2, StartsOnTheFastPathWhereTheCpuHasIt) {
  SKIP_WITHOUT_AVX2();
  EXPECT_EQ(ActiveEigenPath(), EigenPath::kAvx2);
}

}  // namespace
}  // namespace attncheck
