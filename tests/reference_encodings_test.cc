// Worked examples and laws of the reference positional encodings: RoPE rotation and
// its scalings (seeds 001–004), sinusoidal, learned table, ALiBi, T5 buckets, KERPLE,
// xPos, Sandwich, and the positional.h dispatch.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <numbers>
#include <numeric>
#include <vector>

#include "cases/case.h"
#include "reference/alibi.h"
#include "reference/kerple.h"
#include "reference/learned.h"
#include "reference/positional.h"
#include "reference/rope.h"
#include "reference/rope_scaling.h"
#include "reference/sandwich.h"
#include "reference/sinusoidal.h"
#include "reference/t5.h"
#include "reference/xpos.h"

namespace attncheck::reference {
namespace {

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

double Norm(const std::vector<double>& a) { return std::sqrt(Dot(a, a)); }

// A vector of `size` values k/64, k ∈ [−128, 128] (integers drawn, never raw floats).
std::vector<double> DrawVector(int size, const char* name) {
  const std::vector<int> ints = *rc::gen::container<std::vector<int>>(
                                     static_cast<size_t>(size), rc::gen::inRange(-128, 129))
                                     .as(name);
  std::vector<double> values(ints.begin(), ints.end());
  for (double& v : values) v /= 64.0;
  return values;
}

struct RopeDraw {
  RopeLayout layout;
  int head_dim;
  int rotary_dim;
  double base;
};

RopeDraw DrawRope() {
  RopeDraw d;
  d.layout = *rc::gen::element(RopeLayout::kInterleaved, RopeLayout::kHalfSplit).as("layout");
  d.head_dim = *rc::gen::inRange(2, 33).as("head_dim");
  d.rotary_dim = 2 * *rc::gen::inRange(1, d.head_dim / 2 + 1).as("rotary_pairs");
  d.base = *rc::gen::element(10000.0, 500000.0, 1e6, 100.0).as("base");
  return d;
}

// ---------------------------------------------------------------- RoPE rotation

TEST(Rope, BaseFrequencies) {
  const std::vector<double> theta = BaseFrequencies(10000.0, 8);
  ASSERT_EQ(theta.size(), 4u);
  EXPECT_DOUBLE_EQ(theta[0], 1.0);
  EXPECT_DOUBLE_EQ(theta[1], 0.1);
  EXPECT_DOUBLE_EQ(theta[2], 0.01);
  EXPECT_DOUBLE_EQ(theta[3], 0.001);
}

TEST(Rope, LayoutsPairDifferentDims) {
  EXPECT_EQ(PairDims(RopeLayout::kInterleaved, 8, 1), std::make_pair(2, 3));
  EXPECT_EQ(PairDims(RopeLayout::kHalfSplit, 8, 1), std::make_pair(1, 5));
  // x = e_0 rotated by a quarter turn: interleaved moves it to dim 1, half-split to dim rd/2.
  const std::vector<double> theta = {1.0, 0.5};
  std::vector<double> interleaved = {1, 0, 0, 0, 7};
  std::vector<double> half_split = {1, 0, 0, 0, 7};
  RotatePairs(RopeLayout::kInterleaved, interleaved, 4, theta, std::numbers::pi / 2, 1.0);
  RotatePairs(RopeLayout::kHalfSplit, half_split, 4, theta, std::numbers::pi / 2, 1.0);
  EXPECT_NEAR(interleaved[0], 0, 1e-15);
  EXPECT_NEAR(interleaved[1], 1, 1e-15);
  EXPECT_NEAR(half_split[0], 0, 1e-15);
  EXPECT_NEAR(half_split[2], 1, 1e-15);
  EXPECT_EQ(interleaved[4], 7);  // beyond rotary_dim: unchanged
  EXPECT_EQ(half_split[4], 7);
}

TEST(Rope, RejectsOddOrLargeRotaryDim) {
  std::vector<double> x(4, 1.0);
  const std::vector<double> theta = {1, 1, 1};
  EXPECT_THROW(RotatePairs(RopeLayout::kHalfSplit, x, 3, theta, 1, 1), std::invalid_argument);
  EXPECT_THROW(RotatePairs(RopeLayout::kHalfSplit, x, 6, theta, 1, 1), std::invalid_argument);
}

// HF LLaMA: q·cos + rotate_half(q)·sin with cos/sin = cat(freqs, freqs), rotate_half(x) = cat(−x2, x1).
RC_GTEST_PROP(Rope, HalfSplitIsHfRotateHalf, ()) {
  const int rotary_dim = 2 * *rc::gen::inRange(1, 17).as("rotary_pairs");
  const int position = *rc::gen::inRange(0, 10000).as("position");
  const std::vector<double> q = DrawVector(rotary_dim, "q");
  const std::vector<double> theta = BaseFrequencies(10000.0, rotary_dim);
  const int half = rotary_dim / 2;
  std::vector<double> hf(rotary_dim);
  for (int i = 0; i < rotary_dim; ++i) {
    const double freq = theta[i % half] * position;
    const double rotated_half = i < half ? -q[i + half] : q[i - half];
    hf[i] = q[i] * std::cos(freq) + rotated_half * std::sin(freq);
  }
  std::vector<double> ours = q;
  RotatePairs(RopeLayout::kHalfSplit, ours, rotary_dim, theta, position, 1.0);
  for (int i = 0; i < rotary_dim; ++i) RC_ASSERT(std::abs(ours[i] - hf[i]) < 1e-12);
}

// Meta LLaMA / RoFormer: (x_2k + i x_2k+1)·e^{i p theta_k}.
RC_GTEST_PROP(Rope, InterleavedIsComplexProduct, ()) {
  const int rotary_dim = 2 * *rc::gen::inRange(1, 17).as("rotary_pairs");
  const int position = *rc::gen::inRange(0, 10000).as("position");
  const std::vector<double> q = DrawVector(rotary_dim, "q");
  const std::vector<double> theta = BaseFrequencies(10000.0, rotary_dim);
  std::vector<double> ours = q;
  RotatePairs(RopeLayout::kInterleaved, ours, rotary_dim, theta, position, 1.0);
  for (int k = 0; k < rotary_dim / 2; ++k) {
    const double angle = position * theta[k];
    const double re = q[2 * k] * std::cos(angle) - q[2 * k + 1] * std::sin(angle);
    const double im = q[2 * k] * std::sin(angle) + q[2 * k + 1] * std::cos(angle);
    RC_ASSERT(std::abs(ours[2 * k] - re) < 1e-12);
    RC_ASSERT(std::abs(ours[2 * k + 1] - im) < 1e-12);
  }
}

// (R_m q)ᵀ(R_n k) = qᵀ R_{n−m} k, both layouts, partial rotary.
RC_GTEST_PROP(Rope, RelativeDotProduct, ()) {
  const RopeDraw d = DrawRope();
  const int m = *rc::gen::inRange(0, 5000).as("m");
  const int n = *rc::gen::inRange(0, 5000).as("n");
  const std::vector<double> q = DrawVector(d.head_dim, "q");
  const std::vector<double> k = DrawVector(d.head_dim, "k");
  const std::vector<double> theta = BaseFrequencies(d.base, d.rotary_dim);
  std::vector<double> q_m = q, k_n = k;
  RotatePairs(d.layout, q_m, d.rotary_dim, theta, m, 1.0);
  RotatePairs(d.layout, k_n, d.rotary_dim, theta, n, 1.0);
  const double lhs = Dot(q_m, k_n);
  const Eigen::MatrixXd relative = RotationMatrix(d.layout, d.head_dim, d.rotary_dim, theta, n - m);
  const Eigen::Map<const Eigen::VectorXd> q_vec(q.data(), d.head_dim);
  const Eigen::Map<const Eigen::VectorXd> k_vec(k.data(), d.head_dim);
  const Eigen::VectorXd rotated_k = relative * k_vec;
  const double rhs = q_vec.dot(rotated_k);
  RC_ASSERT(std::abs(lhs - rhs) <= 1e-9 * (1.0 + Norm(q) * Norm(k)));
}

// RotatePairs(x) = R_p x, and R_mᵀ R_n = R_{n−m}.
RC_GTEST_PROP(Rope, MatrixFormAgrees, ()) {
  const RopeDraw d = DrawRope();
  const int m = *rc::gen::inRange(0, 3000).as("m");
  const int n = *rc::gen::inRange(0, 3000).as("n");
  const std::vector<double> x = DrawVector(d.head_dim, "x");
  const std::vector<double> theta = BaseFrequencies(d.base, d.rotary_dim);
  std::vector<double> rotated = x;
  RotatePairs(d.layout, rotated, d.rotary_dim, theta, m, 1.0);
  const Eigen::MatrixXd r_m = RotationMatrix(d.layout, d.head_dim, d.rotary_dim, theta, m);
  const Eigen::MatrixXd r_n = RotationMatrix(d.layout, d.head_dim, d.rotary_dim, theta, n);
  const Eigen::MatrixXd r_nm = RotationMatrix(d.layout, d.head_dim, d.rotary_dim, theta, n - m);
  const Eigen::VectorXd by_matrix = r_m * Eigen::Map<const Eigen::VectorXd>(x.data(), d.head_dim);
  for (int i = 0; i < d.head_dim; ++i) RC_ASSERT(std::abs(by_matrix[i] - rotated[i]) < 1e-12);
  const Eigen::MatrixXd product = r_m.transpose() * r_n;
  RC_ASSERT((product - r_nm).cwiseAbs().maxCoeff() < 1e-9);
}

// ‖R_p x‖ = ‖x‖; with magnitude μ the rotated part is scaled by μ, the rest kept.
RC_GTEST_PROP(Rope, PreservesNorm, ()) {
  const RopeDraw d = DrawRope();
  const int position = *rc::gen::inRange(0, 100000).as("position");
  const double magnitude = *rc::gen::element(1.0, 1.5, 0.25).as("magnitude");
  const std::vector<double> x = DrawVector(d.head_dim, "x");
  const std::vector<double> theta = BaseFrequencies(d.base, d.rotary_dim);
  std::vector<double> rotated = x;
  RotatePairs(d.layout, rotated, d.rotary_dim, theta, position, magnitude);
  // dims that rotate: < rotary_dim under both layouts
  const auto part_norm = [&](const std::vector<double>& v, bool rotary) {
    double sum = 0;
    for (int i = 0; i < d.head_dim; ++i) {
      if ((i < d.rotary_dim) == rotary) sum += v[i] * v[i];
    }
    return std::sqrt(sum);
  };
  RC_ASSERT(std::abs(part_norm(rotated, true) - magnitude * part_norm(x, true)) < 1e-12 * (1 + Norm(x)));
  RC_ASSERT(part_norm(rotated, false) == part_norm(x, false));
}

// ---------------------------------------------------------------- RoPE scalings

// Seed 002: b' = b·s^(d/(d−2)) with d = 128, s = 4. The seed prints ≈ 41810.5, which
// does not follow from its own formula: 10000·4^(128/126) = 40889.94 (41810.5 is not
// b·4^(d/(d−2)) for any even d; d = 64 gives 41829.4). Exponent 1 gives 40000 as printed.
TEST(RopeScaling, NtkAwareBaseWorkedExample) {
  EXPECT_NEAR(NtkAwareBase(10000.0, 4.0, 128, true), 40889.94, 0.01);
  EXPECT_NEAR(NtkAwareBase(10000.0, 4.0, 128, true), 10000.0 * std::pow(4.0, 128.0 / 126.0), 1e-9);
  EXPECT_DOUBLE_EQ(NtkAwareBase(10000.0, 4.0, 128, false), 40000.0);
}

// The NTK-aware base makes the slowest pair exactly linear-interpolated: theta'_{d/2−1} = theta_{d/2−1}/s.
TEST(RopeScaling, NtkAwareSlowestPairIsInterpolated) {
  RopeSpec spec;
  spec.scaling = RopeScaling::kNtkAware;
  spec.factor = 4.0;
  const RopeFrequencies ntk = Frequencies(spec, 128, 1);
  const std::vector<double> theta = BaseFrequencies(10000.0, 128);
  EXPECT_DOUBLE_EQ(ntk.theta[0], 1.0);
  EXPECT_NEAR(ntk.theta[63] / theta[63], 0.25, 1e-12);
  EXPECT_EQ(ntk.mscale, 1.0);
}

TEST(RopeScaling, NoneIsBase) {
  RopeSpec spec;
  spec.factor = 8.0;  // ignored
  EXPECT_EQ(Frequencies(spec, 64, 100000).theta, BaseFrequencies(10000.0, 64));
}

TEST(RopeScaling, LinearDividesBySecondFactor) {
  RopeSpec spec;
  spec.scaling = RopeScaling::kLinear;
  spec.factor = 4.0;
  spec.base = 500000.0;
  const RopeFrequencies linear = Frequencies(spec, 32, 1);
  const std::vector<double> theta = BaseFrequencies(500000.0, 32);
  for (size_t k = 0; k < theta.size(); ++k) EXPECT_DOUBLE_EQ(linear.theta[k], theta[k] / 4.0);
  EXPECT_EQ(linear.mscale, 1.0);
}

TEST(RopeScaling, DynamicNtkIsPlainUpToOriginalContext) {
  RopeSpec spec;
  spec.scaling = RopeScaling::kDynamicNtk;
  spec.factor = 2.0;
  spec.original_context = 4096;
  const std::vector<double> theta = BaseFrequencies(10000.0, 64);
  for (int length : {1, 100, 4095, 4096}) {
    EXPECT_EQ(Frequencies(spec, 64, length).theta, theta) << length;
  }
  // L_cur = 2·L_orig: α' = 2·2 − 1 = 3, b' = b·3^(64/62).
  EXPECT_NEAR(DynamicNtkBase(10000.0, 2.0, 64, 8192, 4096), 10000.0 * std::pow(3.0, 64.0 / 62.0), 1e-6);
  EXPECT_EQ(Frequencies(spec, 64, 8192).theta, BaseFrequencies(DynamicNtkBase(10000.0, 2.0, 64, 8192, 4096), 64));
  // one token past L_orig already moves the base, continuously from b
  const double just_past = DynamicNtkBase(10000.0, 2.0, 64, 4097, 4096);
  EXPECT_GT(just_past, 10000.0);
  EXPECT_LT(just_past, 10010.0);
}

TEST(RopeScaling, YarnCorrectionDimsWorkedExample) {
  const auto [low, high] = YarnCorrectionDims(64, 10000.0, 4096, 32.0, 1.0);
  EXPECT_EQ(low, 10.0);
  EXPECT_EQ(high, 23.0);
  // each end clamped on one side: L = 4 < 2π gives low = 0 and a negative high
  const auto [low_clamped, high_clamped] = YarnCorrectionDims(64, 10000.0, 4, 32.0, 1.0);
  EXPECT_EQ(low_clamped, 0.0);
  EXPECT_EQ(high_clamped, -1.0);  // ceil(64·ln(4/2π)/(2 ln 10000)) = ceil(−1.57)
  // a huge L with a small base: low = floor(8·ln(2^30/64π)/(2 ln 100)) = floor(13.46) > high = d − 1
  const auto [low_top, high_top] = YarnCorrectionDims(8, 100.0, 1 << 30, 32.0, 1.0);
  EXPECT_EQ(low_top, 13.0);
  EXPECT_EQ(high_top, 7.0);
}

// high < low: ggml's ramp width max(high − low, 0.001) keeps the step at low (HF would
// flip the ramp). L < 2π·beta_slow: pair 0 keeps theta, the rest are interpolated.
TEST(RopeScaling, YarnRampWhenHighBelowLow) {
  RopeSpec spec;
  spec.scaling = RopeScaling::kYarn;
  spec.factor = 4.0;
  spec.original_context = 4;
  const RopeFrequencies yarn = Frequencies(spec, 64, 1);
  const std::vector<double> theta = BaseFrequencies(10000.0, 64);
  EXPECT_EQ(yarn.theta[0], theta[0]);
  for (int i = 1; i < 32; ++i) EXPECT_DOUBLE_EQ(yarn.theta[i], theta[i] / 4.0) << i;
  // low > d − 1 = high: every pair turns more than beta_fast times over L and keeps theta
  spec.base = 100.0;
  spec.original_context = 1 << 30;
  EXPECT_EQ(Frequencies(spec, 8, 1).theta, BaseFrequencies(100.0, 8));
}

TEST(RopeScaling, YarnRampAndMscale) {
  RopeSpec spec;
  spec.scaling = RopeScaling::kYarn;
  spec.factor = 8.0;
  spec.original_context = 4096;
  const RopeFrequencies yarn = Frequencies(spec, 64, 1);
  const std::vector<double> theta = BaseFrequencies(10000.0, 64);
  // pairs ≤ low = 10 extrapolate (kept), pairs ≥ high = 23 interpolate (θ/s), a blend between
  for (int i = 0; i <= 10; ++i) EXPECT_DOUBLE_EQ(yarn.theta[i], theta[i]) << i;
  for (int i = 23; i < 32; ++i) EXPECT_DOUBLE_EQ(yarn.theta[i], theta[i] / 8.0) << i;
  for (int i = 11; i < 23; ++i) {
    const double ramp = (i - 10.0) / 13.0;
    EXPECT_NEAR(yarn.theta[i], theta[i] / 8.0 * ramp + theta[i] * (1 - ramp), 1e-15) << i;
  }
  EXPECT_NEAR(yarn.mscale, 0.1 * std::log(8.0) + 1.0, 1e-15);
  EXPECT_DOUBLE_EQ(YarnMscale(8.0, 0.0), 0.1 * std::log(8.0) + 1.0);
  EXPECT_DOUBLE_EQ(YarnMscale(8.0, 1.25), 1.25);
  EXPECT_DOUBLE_EQ(YarnMscale(1.0, 0.0), 1.0);
}

// The YaRN paper's ramp γ(r), linear in the rotation count r = L·θ/2π, worked by
// hand for b = 10000, d = 128, L = 4096, s = 4, β = 32, α = 1:
//   pair 10: θ = 0.2371374, r = 154.6 > β → θ kept
//   pair 30: θ = 0.01333521, r = 8.6932, γ = 7.6932/31 = 0.248168 → θ' = 0.005815834
//   pair 50: θ = 7.498942e-4, r = 0.4889 < α → θ/4 = 1.874736e-4
// The implementations' ramp (kYarn: linear in the pair index between low = 20 and
// high = 46) gives pair 30 θ·(0.6154 + 0.3846/4) = 0.009488: the two conventions
// differ inside the band and agree outside it.
TEST(RopeScaling, YarnPaperRampIsLinearInRotations) {
  RopeSpec spec;
  spec.scaling = RopeScaling::kYarnPaper;
  spec.factor = 4.0;
  spec.original_context = 4096;
  const RopeFrequencies paper = Frequencies(spec, 128, 1);
  EXPECT_NEAR(paper.theta[10], 0.23713737056616552, 1e-15);
  EXPECT_NEAR(paper.theta[30], 0.0058158337368744446, 1e-15);
  EXPECT_NEAR(paper.theta[50], 0.00018747355233311396, 1e-17);
  EXPECT_NEAR(paper.mscale, 0.1 * std::log(4.0) + 1.0, 1e-15);

  spec.scaling = RopeScaling::kYarn;
  const RopeFrequencies implementations = Frequencies(spec, 128, 1);
  EXPECT_NEAR(implementations.theta[30], 0.01333521432163324 * (16.0 / 26 + 10.0 / 26 / 4), 1e-15);
  EXPECT_DOUBLE_EQ(implementations.theta[10], paper.theta[10]);
  EXPECT_DOUBLE_EQ(implementations.theta[50], paper.theta[50]);
}

TEST(RopeScaling, Llama3Bands) {
  RopeSpec spec;
  spec.scaling = RopeScaling::kLlama3;
  spec.base = 500000.0;
  spec.factor = 8.0;
  spec.original_context = 8192;
  spec.low_freq_factor = 1.0;
  spec.high_freq_factor = 4.0;
  const RopeFrequencies llama3 = Frequencies(spec, 128, 1);
  const std::vector<double> theta = BaseFrequencies(500000.0, 128);
  const double high_freq_wavelen = 8192.0 / 4.0, low_freq_wavelen = 8192.0;
  int kept = 0, divided = 0, blended = 0;
  for (size_t k = 0; k < theta.size(); ++k) {
    const double wavelen = 2 * std::numbers::pi / theta[k];
    if (wavelen < high_freq_wavelen) {
      EXPECT_EQ(llama3.theta[k], theta[k]) << k;
      ++kept;
    } else if (wavelen > low_freq_wavelen) {
      EXPECT_DOUBLE_EQ(llama3.theta[k], theta[k] / 8.0) << k;
      ++divided;
    } else {
      EXPECT_GE(llama3.theta[k], theta[k] / 8.0) << k;
      EXPECT_LE(llama3.theta[k], theta[k]) << k;
      const double smooth = (8192.0 / wavelen - 1.0) / 3.0;
      EXPECT_NEAR(llama3.theta[k], (1 - smooth) * theta[k] / 8.0 + smooth * theta[k], 1e-18) << k;
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
  // frequencies stay ordered fast → slow
  for (size_t k = 1; k < theta.size(); ++k) EXPECT_LT(llama3.theta[k], llama3.theta[k - 1]);
}

// Seed 004: λ_1 ≥ … ≥ λ_{d/2} ≥ 1 and λ_1⋯λ_{d/2} = s for 0 ≤ b ≤ 1, s ≥ 1.
RC_GTEST_PROP(RopeScaling, NtkMixedLambdasMonotoneWithProductS, ()) {
  const int rotary_dim = 2 * *rc::gen::inRange(1, 129).as("rotary_pairs");
  const double s = *rc::gen::element(1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 64.0).as("s");
  const double b = *rc::gen::element(0.0, 0.25, 0.5, 0.625, 0.75, 1.0).as("b");
  const std::vector<double> lambdas = NtkMixedLambdas(rotary_dim, s, b);
  RC_ASSERT(lambdas.size() == static_cast<size_t>(rotary_dim / 2));
  double product = 1.0;
  for (size_t m = 0; m < lambdas.size(); ++m) {
    RC_ASSERT(lambdas[m] >= 1.0 - 1e-12);
    if (m > 0) RC_ASSERT(lambdas[m] <= lambdas[m - 1] * (1 + 1e-12));
    product *= lambdas[m];
  }
  RC_ASSERT(std::abs(product - s) <= 1e-9 * s);
}

TEST(RopeScaling, NtkMixedEndpoints) {
  RopeSpec spec;
  spec.scaling = RopeScaling::kNtkMixed;
  spec.factor = 4.0;
  const std::vector<double> theta = BaseFrequencies(10000.0, 16);
  // b = 0: λ_1 = s, the rest 1 → PI (θ/s for every pair)
  spec.mixed_b = 0.0;
  const RopeFrequencies pi = Frequencies(spec, 16, 1);
  for (size_t k = 0; k < theta.size(); ++k) EXPECT_NEAR(pi.theta[k], theta[k] / 4.0, 1e-15) << k;
  // b = 1: all λ = s^(2/d) → NTK-RoPE-fixed, theta_m = 1/(λ(βλ)^(m−1)): pair k divided by λ^(k+1)
  spec.mixed_b = 1.0;
  const RopeFrequencies fixed = Frequencies(spec, 16, 1);
  const double lambda = std::pow(4.0, 2.0 / 16.0);
  for (size_t k = 0; k < theta.size(); ++k) {
    EXPECT_NEAR(fixed.theta[k], theta[k] / std::pow(lambda, k + 1.0), 1e-15) << k;
  }
  // slowest pair always ends at θ/s (the full product)
  spec.mixed_b = 0.625;
  EXPECT_NEAR(Frequencies(spec, 16, 1).theta.back(), theta.back() / 4.0, 1e-18);
  // worked: d = 4, s = 4, b = 0.5: a = ln 4/√2, λ_1 = exp(a), λ_2 = exp(a(√2 − 1)) → 4/λ_1
  const std::vector<double> lambdas = NtkMixedLambdas(4, 4.0, 0.5);
  EXPECT_NEAR(lambdas[0], std::exp(std::log(4.0) / std::sqrt(2.0)), 1e-12);
  EXPECT_NEAR(lambdas[0] * lambdas[1], 4.0, 1e-12);
}

TEST(RopeScaling, LogNScale) {
  for (int position : {0, 1, 100, 4094, 4095}) EXPECT_EQ(LogNScale(position, 4096), 1.0) << position;
  EXPECT_GT(LogNScale(4096, 4096), 1.0);
  EXPECT_NEAR(LogNScale(4096 * 4096 - 1, 4096), 2.0, 1e-12);  // n = L²
  EXPECT_NEAR(LogNScale(8191, 4096), std::log(8192.0) / std::log(4096.0), 1e-15);
  EXPECT_EQ(LogNScale(10, 1), 1.0);
}

// ---------------------------------------------------------------- sinusoidal and learned

TEST(Sinusoidal, Values) {
  EXPECT_DOUBLE_EQ(SinusoidalValue(0, 0, 8), 0.0);
  EXPECT_DOUBLE_EQ(SinusoidalValue(0, 1, 8), 1.0);
  EXPECT_DOUBLE_EQ(SinusoidalValue(3, 0, 8), std::sin(3.0));
  EXPECT_DOUBLE_EQ(SinusoidalValue(3, 3, 8), std::cos(3.0 / 10.0));  // i = 1: 10000^(2/8) = 10
  std::vector<double> x(8, 1.0);
  AddSinusoidal(x, 5);
  for (int dim = 0; dim < 8; ++dim) EXPECT_DOUBLE_EQ(x[dim], 1.0 + SinusoidalValue(5, dim, 8));
}

// Seed 001: per pair i, (PE(p+k)_{2i}, PE(p+k)_{2i+1}) = M_k (PE(p)_{2i}, PE(p)_{2i+1}),
// M_k = [[cos ω_i k, sin ω_i k], [−sin ω_i k, cos ω_i k]], independent of p.
RC_GTEST_PROP(Sinusoidal, ShiftIsRotation, ()) {
  const int head_dim = 2 * *rc::gen::inRange(1, 65).as("pairs");
  const int p = *rc::gen::inRange(0, 10000).as("p");
  const int shift = *rc::gen::inRange(-500, 500).as("shift");
  for (int i = 0; i < head_dim / 2; ++i) {
    const double omega = std::pow(10000.0, -2.0 * i / head_dim);
    const double c = std::cos(omega * shift), s = std::sin(omega * shift);
    const double sin_p = SinusoidalValue(p, 2 * i, head_dim), cos_p = SinusoidalValue(p, 2 * i + 1, head_dim);
    RC_ASSERT(std::abs(SinusoidalValue(p + shift, 2 * i, head_dim) - (c * sin_p + s * cos_p)) < 1e-9);
    RC_ASSERT(std::abs(SinusoidalValue(p + shift, 2 * i + 1, head_dim) - (-s * sin_p + c * cos_p)) < 1e-9);
  }
}

TEST(Learned, DeterministicBoundedSeeded) {
  const uint64_t seed = LearnedTableSeed(7);
  EXPECT_EQ(seed, 7 ^ kLearnedTableSalt);
  double lo = 1, hi = -1, sum = 0;
  int count = 0;
  for (int p = 0; p < 64; ++p) {
    for (int d = 0; d < 16; ++d) {
      const double v = LearnedTableValue(seed, p, d);
      EXPECT_EQ(v, LearnedTableValue(seed, p, d));
      EXPECT_GE(v, -0.5);
      EXPECT_LT(v, 0.5);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      ++count;
    }
  }
  EXPECT_LT(lo, -0.4);
  EXPECT_GT(hi, 0.4);
  EXPECT_LT(std::abs(sum / count), 0.05);
  EXPECT_NE(LearnedTableValue(seed, 3, 2), LearnedTableValue(LearnedTableSeed(8), 3, 2));
  EXPECT_NE(LearnedTableValue(seed, 3, 2), LearnedTableValue(seed, 2, 3));
  std::vector<double> x(4, 0.0);
  AddLearned(seed, x, 9);
  for (int d = 0; d < 4; ++d) EXPECT_EQ(x[d], LearnedTableValue(seed, 9, d));
}

// ---------------------------------------------------------------- score biases

TEST(Alibi, SlopesWorkedExamples) {
  const std::vector<double> eight = AlibiSlopes(8);
  ASSERT_EQ(eight.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(eight[i], std::ldexp(1.0, -(i + 1))) << i;
  const std::vector<double> six = AlibiSlopes(6);
  const std::vector<double> six_expected = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  ASSERT_EQ(six.size(), six_expected.size());
  for (size_t i = 0; i < six.size(); ++i) EXPECT_DOUBLE_EQ(six[i], six_expected[i]) << i;
  EXPECT_DOUBLE_EQ(AlibiSlopes(1)[0], 1.0 / 256);
  // 12 heads: 8 of the 8 rule, then slopes 0, 2, 4, 6 of the 16 rule: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
  const std::vector<double> twelve = AlibiSlopes(12);
  EXPECT_DOUBLE_EQ(twelve[7], 1.0 / 256);
  EXPECT_DOUBLE_EQ(twelve[8], std::pow(2.0, -0.5));
  EXPECT_DOUBLE_EQ(twelve[11], std::pow(2.0, -3.5));
  EXPECT_DOUBLE_EQ(AlibiBias(0.5, 10, 4), -3.0);
  EXPECT_DOUBLE_EQ(AlibiBias(0.5, 4, 10), -3.0);
  EXPECT_EQ(AlibiBias(0.5, 4, 4), 0.0);
}

// Each number checked by hand against HF `_relative_position_bucket`.
TEST(T5, BucketBoundaries) {
  // bidirectional, nb = 32 → 16 per sign, max_exact = 8, log range 8 → 128 over 8 buckets
  EXPECT_EQ(T5Bucket(0, true, 32, 128), 0);
  EXPECT_EQ(T5Bucket(-1, true, 32, 128), 1);
  EXPECT_EQ(T5Bucket(1, true, 32, 128), 17);
  EXPECT_EQ(T5Bucket(-7, true, 32, 128), 7);
  EXPECT_EQ(T5Bucket(-8, true, 32, 128), 8);    // 8 + ⌊ln 1/ln 16·8⌋
  EXPECT_EQ(T5Bucket(-16, true, 32, 128), 10);  // 8 + ⌊ln 2/ln 16·8⌋ = 8 + 2
  EXPECT_EQ(T5Bucket(-64, true, 32, 128), 14);  // 8 + 6
  EXPECT_EQ(T5Bucket(-128, true, 32, 128), 15);  // 8 + 8 = 16 → clamped to 15
  EXPECT_EQ(T5Bucket(-1000, true, 32, 128), 15);
  EXPECT_EQ(T5Bucket(16, true, 32, 128), 26);
  EXPECT_EQ(T5Bucket(1000, true, 32, 128), 31);
  // causal, nb = 32, max_exact = 16, log range 16 → 128 over 16 buckets
  EXPECT_EQ(T5Bucket(-15, false, 32, 128), 15);
  EXPECT_EQ(T5Bucket(-16, false, 32, 128), 16);
  EXPECT_EQ(T5Bucket(-32, false, 32, 128), 21);  // 16 + ⌊ln 2/ln 8·16⌋ = 16 + 5
  EXPECT_EQ(T5Bucket(-64, false, 32, 128), 26);  // 16 + ⌊10.67⌋
  EXPECT_EQ(T5Bucket(-127, false, 32, 128), 31);
  EXPECT_EQ(T5Bucket(-200, false, 32, 128), 31);
  EXPECT_EQ(T5Bucket(5, false, 32, 128), 0);  // keys after the query
}

RC_GTEST_PROP(T5, BucketsInRangeAndMonotone, ()) {
  const int num_buckets = 2 * *rc::gen::inRange(2, 65).as("half_buckets");
  const int max_distance = *rc::gen::element(8, 20, 64, 128, 256, 1000).as("max_distance");
  const bool bidirectional = *rc::gen::arbitrary<bool>().as("bidirectional");
  int previous_back = -1, previous_forward = -1;
  for (int n = 0; n < 2000; ++n) {
    const int back = T5Bucket(-n, bidirectional, num_buckets, max_distance);
    const int forward = T5Bucket(n, bidirectional, num_buckets, max_distance);
    RC_ASSERT(back >= 0 && back < num_buckets);
    RC_ASSERT(forward >= 0 && forward < num_buckets);
    RC_ASSERT(back >= previous_back);  // further away never maps to a closer bucket
    if (bidirectional && n > 0) RC_ASSERT(forward >= previous_forward && forward >= num_buckets / 2);
    if (!bidirectional) RC_ASSERT(forward == 0);  // causal: keys after the query share bucket 0
    previous_back = back;
    previous_forward = forward;
  }
}

TEST(T5, TableSeededInRange) {
  const uint64_t seed = T5TableSeed(3);
  EXPECT_EQ(seed, 3 ^ kT5TableSalt);
  for (int h = 0; h < 8; ++h) {
    for (int bucket = 0; bucket < 32; ++bucket) {
      const double v = T5TableValue(seed, h, bucket);
      EXPECT_GE(v, -1.0);
      EXPECT_LT(v, 1.0);
      EXPECT_EQ(v, T5TableValue(seed, h, bucket));
    }
  }
  EXPECT_NE(T5TableValue(seed, 0, 1), T5TableValue(seed, 1, 0));
}

TEST(Kerple, KernelsAndParameters) {
  for (int h = 0; h < 16; ++h) {
    const KerpleParams power = KerpleHeadParams(KerpleKind::kPower, h);
    EXPECT_GT(power.r1, 0);
    EXPECT_GT(power.r2, 0);
    EXPECT_LE(power.r2, 2);
    const KerpleParams log = KerpleHeadParams(KerpleKind::kLog, h);
    EXPECT_GT(log.r1, 0);
    EXPECT_GT(log.r2, 0);
    for (KerpleKind kind : {KerpleKind::kPower, KerpleKind::kLog}) {
      const KerpleParams p = KerpleHeadParams(kind, h);
      EXPECT_EQ(KerpleBias(kind, p, 5, 5), 0.0);
      EXPECT_EQ(KerpleBias(kind, p, 9, 2), KerpleBias(kind, p, 2, 9));
      EXPECT_LT(KerpleBias(kind, p, 9, 2), KerpleBias(kind, p, 9, 3));  // further → more negative
    }
  }
  EXPECT_DOUBLE_EQ(KerpleBias(KerpleKind::kPower, {2.0, 1.5}, 10, 6), -2.0 * 8.0);
  EXPECT_DOUBLE_EQ(KerpleBias(KerpleKind::kLog, {2.0, 0.5}, 10, 6), -2.0 * std::log(3.0));
}

TEST(Sandwich, SinusoidalDotProductShifted) {
  const int head_dim = 16;
  for (int m : {0, 3, 40}) {
    for (int n : {0, 7, 40, 300}) {
      // Σ_{i=1}^{d/2} sin(mω_i)sin(nω_i) + cos(mω_i)cos(nω_i) − d/2, ω_i = 10000^(−2i/d)
      double dot = 0;
      for (int i = 1; i <= head_dim / 2; ++i) {
        const double omega = std::pow(10000.0, -2.0 * i / head_dim);
        dot += std::sin(m * omega) * std::sin(n * omega) + std::cos(m * omega) * std::cos(n * omega);
      }
      EXPECT_NEAR(SandwichBias(0.5, head_dim, m, n), 0.5 * (dot - head_dim / 2), 1e-12);
      EXPECT_LE(SandwichBias(1.0, head_dim, m, n), 1e-12);
      EXPECT_EQ(SandwichBias(1.0, head_dim, m, n), SandwichBias(1.0, head_dim, n, m));
    }
  }
  EXPECT_EQ(SandwichBias(1.0, head_dim, 12, 12), 0.0);
}

// ---------------------------------------------------------------- xPos

TEST(Xpos, Zeta) {
  EXPECT_DOUBLE_EQ(XposZeta(0, 64), 0.4 / 1.4);
  EXPECT_DOUBLE_EQ(XposZeta(16, 64), 0.9 / 1.4);
  EXPECT_LT(XposZeta(31, 64), 1.0);
}

// q'·k' depends only on n − m: shifting both positions by t leaves it unchanged.
RC_GTEST_PROP(Xpos, DotDependsOnDistanceOnly, ()) {
  const RopeDraw d = DrawRope();
  const double scale_base = *rc::gen::element(512.0, 64.0, 2048.0).as("scale_base");
  const int n = *rc::gen::inRange(0, 400).as("n");
  const int m = *rc::gen::inRange(0, 400).as("m");
  const int shift = *rc::gen::inRange(0, 400).as("shift");
  const std::vector<double> q = DrawVector(d.head_dim, "q");
  const std::vector<double> k = DrawVector(d.head_dim, "k");
  const auto score = [&](int query_pos, int key_pos) {
    std::vector<double> q_enc = q, k_enc = k;
    ApplyXpos(d.layout, q_enc, d.rotary_dim, d.base, scale_base, query_pos, false);
    ApplyXpos(d.layout, k_enc, d.rotary_dim, d.base, scale_base, key_pos, true);
    return Dot(q_enc, k_enc);
  };
  const double at = score(n, m);
  const double shifted = score(n + shift, m + shift);
  RC_ASSERT(std::abs(at - shifted) <= 1e-9 * (1.0 + Norm(q) * Norm(k) * 100));
}

TEST(Xpos, IsRopeTimesZetaPower) {
  const std::vector<double> theta = BaseFrequencies(10000.0, 4);
  std::vector<double> rope = {1, 2, 3, 4}, xpos = rope;
  RotatePairs(RopeLayout::kInterleaved, rope, 4, theta, 100, 1.0);
  ApplyXpos(RopeLayout::kInterleaved, xpos, 4, 10000.0, 512.0, 100, false);
  EXPECT_NEAR(xpos[0], rope[0] * std::pow(XposZeta(0, 4), 100 / 512.0), 1e-12);
  EXPECT_NEAR(xpos[3], rope[3] * std::pow(XposZeta(1, 4), 100 / 512.0), 1e-12);
}

// ---------------------------------------------------------------- positional.h dispatch

Case EncodingCase(EncodingKind kind) {
  Case c;
  c.q_heads = 4;
  c.kv_heads = 2;
  c.head_dim = 8;
  c.encoding.kind = kind;
  c.seed = 11;
  return c;
}

TensorD Ramp(int batch, int heads, int tokens, int dim) {
  TensorD x(batch, heads, tokens, dim);
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.37 * static_cast<double>(i) + 0.1);
  return x;
}

TEST(Positional, KindsAndCurrentLength) {
  for (EncodingKind kind : {EncodingKind::kSinusoidal, EncodingKind::kLearned, EncodingKind::kRope,
                            EncodingKind::kXpos}) {
    EXPECT_TRUE(HasQkEncoding(EncodingCase(kind)));
    EXPECT_FALSE(HasScoreBias(EncodingCase(kind)));
  }
  for (EncodingKind kind :
       {EncodingKind::kAlibi, EncodingKind::kT5, EncodingKind::kKerple, EncodingKind::kSandwich}) {
    EXPECT_FALSE(HasQkEncoding(EncodingCase(kind)));
    EXPECT_TRUE(HasScoreBias(EncodingCase(kind)));
  }
  EXPECT_FALSE(HasQkEncoding(EncodingCase(EncodingKind::kNone)));
  EXPECT_FALSE(HasScoreBias(EncodingCase(EncodingKind::kNone)));
  EXPECT_EQ(ScoreBias(EncodingCase(EncodingKind::kRope), 0, 5, 1), 0.0);
  EXPECT_EQ(CurrentLength(std::vector<int>{}), 1);
  EXPECT_EQ(CurrentLength(std::vector<int>{0, 0}), 1);
  EXPECT_EQ(CurrentLength(std::vector<int>{3, 9, 2}), 10);
}

TEST(Positional, RopeRotatesEveryHeadAtItsTokenPosition) {
  Case c = EncodingCase(EncodingKind::kRope);
  c.encoding.rope.rotary_dim = 6;  // partial
  c.encoding.rope.scaling = RopeScaling::kYarn;
  c.encoding.rope.factor = 4.0;
  c.encoding.rope.original_context = 16;
  const std::vector<int> positions = {0, 5, 9, 3, 3, 40};  // [B=2, T=3]
  TensorD x = Ramp(2, 2, 3, 8);
  const TensorD original = x;
  ApplyPositional(c, Side::kKey, x, positions, CurrentLength(positions));
  const RopeFrequencies frequencies = Frequencies(c.encoding.rope, 6, 41);
  EXPECT_GT(frequencies.mscale, 1.0);
  for (int b = 0; b < 2; ++b) {
    for (int h = 0; h < 2; ++h) {
      for (int t = 0; t < 3; ++t) {
        std::vector<double> want(&original.at(b, h, t, 0), &original.at(b, h, t, 0) + 8);
        RotatePairs(RopeLayout::kHalfSplit, want, 6, frequencies.theta, positions[b * 3 + t], frequencies.mscale);
        for (int d = 0; d < 8; ++d) EXPECT_DOUBLE_EQ(x.at(b, h, t, d), want[d]) << b << h << t << d;
      }
    }
  }
}

TEST(Positional, LogNScalesQueryOnly) {
  Case c = EncodingCase(EncodingKind::kRope);
  c.encoding.rope.log_n = true;
  c.encoding.rope.original_context = 4;
  const std::vector<int> positions = {1, 15};  // n = 2 (scale 1), n = 16 (scale 2)
  TensorD q = Ramp(1, 1, 2, 8), k = q;
  const TensorD original = q;
  ApplyPositional(c, Side::kQuery, q, positions, 16);
  ApplyPositional(c, Side::kKey, k, positions, 16);
  for (int d = 0; d < 8; ++d) {
    EXPECT_DOUBLE_EQ(q.at(0, 0, 0, d), k.at(0, 0, 0, d));
    EXPECT_NEAR(q.at(0, 0, 1, d), 2.0 * k.at(0, 0, 1, d), 1e-15);
  }
  EXPECT_NE(k.at(0, 0, 1, 0), original.at(0, 0, 1, 0));
}

TEST(Positional, AdditiveEncodingsAndXpos) {
  const std::vector<int> positions = {2, 7};
  {
    const Case c = EncodingCase(EncodingKind::kSinusoidal);
    TensorD x(1, 2, 2, 8, 0.0);
    ApplyPositional(c, Side::kQuery, x, positions, 8);
    for (int h = 0; h < 2; ++h) {
      for (int d = 0; d < 8; ++d) EXPECT_DOUBLE_EQ(x.at(0, h, 1, d), SinusoidalValue(7, d, 8));
    }
  }
  {
    const Case c = EncodingCase(EncodingKind::kLearned);
    TensorD q(1, 2, 2, 8, 0.0), k(1, 1, 2, 8, 0.0);
    ApplyPositional(c, Side::kQuery, q, positions, 8);
    ApplyPositional(c, Side::kKey, k, positions, 8);
    for (int d = 0; d < 8; ++d) {
      EXPECT_EQ(q.at(0, 1, 0, d), LearnedTableValue(LearnedTableSeed(11), 2, d));
      EXPECT_EQ(q.at(0, 1, 0, d), k.at(0, 0, 0, d));
    }
  }
  {
    Case c = EncodingCase(EncodingKind::kXpos);
    c.encoding.xpos_scale_base = 64;
    TensorD q = Ramp(1, 1, 2, 8), k = q;
    ApplyPositional(c, Side::kQuery, q, positions, 8);
    ApplyPositional(c, Side::kKey, k, positions, 8);
    const TensorD ramp = Ramp(1, 1, 2, 8);
    std::vector<double> want_q(ramp.data.begin(), ramp.data.begin() + 8);  // token 0
    std::vector<double> want_k = want_q;
    ApplyXpos(RopeLayout::kHalfSplit, want_q, 8, 10000.0, 64, 2, false);
    ApplyXpos(RopeLayout::kHalfSplit, want_k, 8, 10000.0, 64, 2, true);
    for (int d = 0; d < 8; ++d) {
      EXPECT_DOUBLE_EQ(q.at(0, 0, 0, d), want_q[d]);
      EXPECT_DOUBLE_EQ(k.at(0, 0, 0, d), want_k[d]);
    }
  }
  {  // biases leave q/k alone
    const Case c = EncodingCase(EncodingKind::kAlibi);
    TensorD x = Ramp(1, 1, 2, 8);
    const TensorD original = x;
    ApplyPositional(c, Side::kQuery, x, positions, 8);
    EXPECT_EQ(x, original);
  }
}

TEST(Positional, ScoreBiases) {
  Case alibi = EncodingCase(EncodingKind::kAlibi);
  alibi.q_heads = 6;
  EXPECT_DOUBLE_EQ(ScoreBias(alibi, 4, 10, 6), -0.5 * 4);
  EXPECT_DOUBLE_EQ(ScoreBias(alibi, 0, 10, 6), -0.25 * 4);

  Case t5 = EncodingCase(EncodingKind::kT5);
  t5.encoding.t5_bidirectional = true;
  EXPECT_EQ(ScoreBias(t5, 2, 10, 11), T5TableValue(T5TableSeed(11), 2, 17));  // key − query = 1
  EXPECT_EQ(ScoreBias(t5, 2, 10, 9), T5TableValue(T5TableSeed(11), 2, 1));

  Case kerple = EncodingCase(EncodingKind::kKerple);
  kerple.encoding.kerple = KerpleKind::kPower;
  EXPECT_EQ(ScoreBias(kerple, 3, 10, 4), KerpleBias(KerpleKind::kPower, KerpleHeadParams(KerpleKind::kPower, 3), 10, 4));

  Case sandwich = EncodingCase(EncodingKind::kSandwich);
  sandwich.encoding.sandwich_scale = 0.25;
  EXPECT_EQ(ScoreBias(sandwich, 1, 10, 4), SandwichBias(0.25, 8, 10, 4));
}

}  // namespace
}  // namespace attncheck::reference
