// The eigen kernel's portable path: its hand-written row loops (EigenAttendHead:
// fused mask, exp of the visible packets only, register-blocked P·V) answer bitwise
// what the plain Eigen expressions of the softmax attention answer, on random heads
// with blocked runs, fully blocked rows, softcaps, odd sizes, ±inf and NaN inputs.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>

#include "adapters/eigen/eigen_adapter.h"
#include "reference/mask.h"

namespace attncheck {
namespace {

using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapConst = Eigen::Map<const RowMatrixXf>;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The kernel as Eigen expressions: the formulation the loops must reproduce.
RowMatrixXf ExpressionKernel(const MapConst& q, const MapConst& k, const MapConst& v, const MapConst& mask,
                             float scale, float softcap) {
  RowMatrixXf scores = q * k.transpose();
  scores *= scale;
  if (softcap > 0.0f)
    for (Eigen::Index i = 0; i < scores.rows(); ++i)
      for (Eigen::Index j = 0; j < scores.cols(); ++j)
        if (mask(i, j) != kNegInf) scores(i, j) = softcap * std::tanh(scores(i, j) / softcap);
  const RowMatrixXf masked = (mask.array() == kNegInf).select(kNegInf, (scores + mask).array()).matrix();
  RowMatrixXf out(q.rows(), v.cols());
  for (Eigen::Index i = 0; i < masked.rows(); ++i) {
    const float row_max = masked.cols() == 0 ? kNegInf : masked.row(i).maxCoeff();
    if (!(row_max > kNegInf)) {
      out.row(i).setZero();
      continue;
    }
    const Eigen::ArrayXXf shifted = masked.row(i).array() - row_max;
    const Eigen::ArrayXXf exponentials = shifted.exp();
    const Eigen::RowVectorXf weights = (shifted == kNegInf).select(0.0f, exponentials).matrix();
    const float sum = weights.sum();
    Eigen::RowVectorXf acc = Eigen::RowVectorXf::Zero(v.cols());
    for (Eigen::Index j = 0; j < weights.size(); ++j)
      if (weights(j) > 0.0f) acc += weights(j) * v.row(j);
    out.row(i) = acc / sum;
  }
  return out;
}

TEST(EigenKernel, LoopsMatchTheExpressionsBitwise) {
  const ScopedEigenPath portable(EigenPath::kPortable);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int compared = 0, blocked_packets = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int tq = 1 + static_cast<int>(rng() % 13), tk = static_cast<int>(rng() % 40);
    const int d = 1 + static_cast<int>(rng() % 40), dv = 1 + static_cast<int>(rng() % 70);
    const float spread = trial % 5 == 0 ? 40.0f : 1.0f;  // large logits: exp underflows to 0
    std::vector<float> q(static_cast<size_t>(tq) * d), k(static_cast<size_t>(tk) * d), v(static_cast<size_t>(tk) * dv);
    for (float& x : q) x = spread * normal(rng);
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    if (trial % 7 == 0 && !v.empty()) v[rng() % v.size()] = std::numeric_limits<float>::quiet_NaN();
    if (trial % 11 == 0 && !k.empty()) k[rng() % k.size()] = std::numeric_limits<float>::infinity();
    if (trial % 13 == 0 && !q.empty()) q[rng() % q.size()] = -0.0f;
    // Causal-like blocked runs, random holes, folded biases, fully blocked rows.
    std::vector<float> mask(static_cast<size_t>(tq) * tk, 0.0f);
    for (int i = 0; i < tq; ++i)
      for (int j = 0; j < tk; ++j) {
        float& m = mask[static_cast<size_t>(i) * tk + j];
        if (trial % 3 == 0 && j > i + tk / 3) m = kNegInf;
        if (rng() % 6 == 0) m = kNegInf;
        if (trial % 4 == 1 && m == 0.0f) m = 0.5f * normal(rng);
        if (trial % 9 == 0 && i == 0) m = kNegInf;
      }
    for (int i = 0; i < tq; ++i)
      for (int j = 0; j + 4 <= tk; j += 4) {
        bool all = true;
        for (int l = 0; l < 4; ++l) all = all && mask[static_cast<size_t>(i) * tk + j + l] == kNegInf;
        blocked_packets += all;
      }
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const float softcap = trial % 2 == 0 ? 0.0f : 5.0f;
    std::vector<float> got(static_cast<size_t>(tq) * dv, 1.0f);
    EigenAttendHead(q.data(), k.data(), v.data(), mask.data(), tq, tk, d, dv, scale, softcap, got.data());
    const RowMatrixXf want = ExpressionKernel(MapConst(q.data(), tq, d), MapConst(k.data(), tk, d),
                                              MapConst(v.data(), tk, dv), MapConst(mask.data(), tq, tk), scale, softcap);
    for (int i = 0; i < tq; ++i)
      for (int e = 0; e < dv; ++e) {
        const float g = got[static_cast<size_t>(i) * dv + e], w = want(i, e);
        ASSERT_EQ(std::bit_cast<uint32_t>(g), std::bit_cast<uint32_t>(w))
            << "trial " << trial << " (tq=" << tq << ", tk=" << tk << ", d=" << d << ", dv=" << dv << ") out[" << i
            << ", " << e << "] = " << g << ", expressions give " << w;
        ++compared;
      }
  }
  EXPECT_GT(compared, 10000);
  EXPECT_GT(blocked_packets, 100);  // the skipped-packet path ran
}

// The additive mask's fill becomes −inf a packet at a time: every other value
// (0, a folded bias, −0, NaN, a fill of another convention) stays as it is, bitwise.
TEST(EigenKernel, AdditiveMaskTurnsExactlyTheFillIntoMinusInfinity) {
  std::mt19937 rng(5);
  const MaskConvention conventions[] = {MaskConvention::kAdditiveNegInf, MaskConvention::kAdditiveLowest,
                                        MaskConvention::kAdditiveMinus1e4, MaskConvention::kAdditiveMinus1e9};
  size_t fills = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const MaskConvention convention = conventions[trial % 4];
    const float fill = static_cast<float>(reference::AdditiveFill(convention, Dtype::kF32));
    const float others[] = {0.0f, -0.0f, 0.75f, -3.5f, std::numeric_limits<float>::quiet_NaN(), -1e4f, -1e9f,
                            std::numeric_limits<float>::lowest(), fill};
    std::vector<float> values(std::uniform_int_distribution<size_t>(0, 37)(rng));
    for (float& x : values) x = others[std::uniform_int_distribution<int>(0, 8)(rng)];
    MaskArgs mask;
    mask.convention = convention;
    mask.additive = values;
    const std::vector<float> got = EigenAdditiveMask(mask, values.size());
    ASSERT_EQ(got.size(), values.size());
    for (size_t e = 0; e < values.size(); ++e) {
      const float want = values[e] == fill ? kNegInf : values[e];
      fills += values[e] == fill;
      ASSERT_EQ(std::bit_cast<uint32_t>(got[e]), std::bit_cast<uint32_t>(want)) << "trial " << trial << ", element " << e;
    }
  }
  EXPECT_GT(fills, 100);
}

}  // namespace
}  // namespace attncheck
