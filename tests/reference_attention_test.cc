// Tests of the naive attention model: hand-computed tiny cases for the oracle
// (uniform attention, a single visible key, empty rows, GQA, softcap, bias) and
// the convergence of the same-dtype model to the oracle as the dtype widens.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "cases/case.h"
#include "reference/attention.h"
#include "reference/data.h"
#include "reference/examples.h"
#include "reference/positional.h"
#include "reference/scenario.h"

namespace attncheck::reference {
namespace {

// q [1,1,1,D], k/v [1,1,Tk,·] from rows of numbers; all keys visible unless told.
struct Tiny {
  TensorD q, k, v;
  std::vector<uint8_t> visible;
  Tiny(std::vector<double> query, std::vector<std::vector<double>> keys, std::vector<std::vector<double>> values)
      : q(1, 1, 1, static_cast<int>(query.size())),
        k(1, 1, static_cast<int>(keys.size()), static_cast<int>(query.size())),
        v(1, 1, static_cast<int>(values.size()), static_cast<int>(values.front().size())),
        visible(keys.size(), 1) {
    for (size_t d = 0; d < query.size(); ++d) q.at(0, 0, 0, static_cast<int>(d)) = query[d];
    for (size_t j = 0; j < keys.size(); ++j) {
      for (size_t d = 0; d < keys[j].size(); ++d) k.at(0, 0, static_cast<int>(j), static_cast<int>(d)) = keys[j][d];
      for (size_t d = 0; d < values[j].size(); ++d) {
        v.at(0, 0, static_cast<int>(j), static_cast<int>(d)) = values[j][d];
      }
    }
  }
  AttentionResult Run(double scale = 1.0, double softcap = 0.0, const TensorD* bias = nullptr) const {
    return AttentionCore<double>(q, k, v, visible, bias, scale, softcap);
  }
};

TEST(AttentionOracle, EqualScoresGiveTheMeanOfVisibleValues) {
  Tiny t({0.0, 0.0}, {{1, 2}, {3, 4}, {5, 6}, {7, 8}}, {{1, 10}, {2, 20}, {4, 40}, {100, 1000}});
  t.visible = {1, 1, 1, 0};  // the last key is masked: excluded, whatever its value
  const AttentionResult r = t.Run();
  EXPECT_NEAR(r.out.at(0, 0, 0, 0), 7.0 / 3.0, 1e-15);
  EXPECT_NEAR(r.out.at(0, 0, 0, 1), 70.0 / 3.0, 1e-14);
  EXPECT_NEAR(r.lse[0], std::log(3.0), 1e-15);
  EXPECT_EQ(r.empty_row[0], 0);
}

TEST(AttentionOracle, ASingleVisibleKeyReturnsItsValueExactly) {
  Tiny t({0.3, -1.7}, {{1, 2}, {3, 4}, {5, 6}}, {{1, 2}, {0.123456789, -9.87654321}, {5, 6}});
  t.visible = {0, 1, 0};
  const AttentionResult r = t.Run(0.5);
  EXPECT_EQ(r.out.at(0, 0, 0, 0), 0.123456789);
  EXPECT_EQ(r.out.at(0, 0, 0, 1), -9.87654321);
  EXPECT_NEAR(r.lse[0], 0.5 * (0.3 * 3 - 1.7 * 4), 1e-15);  // lse of one score is the score
}

TEST(AttentionOracle, AnEmptyRowIsZeroWithMinusInfLseAndFlagged) {
  Tiny t({1.0}, {{1}, {2}}, {{3}, {4}});
  t.visible = {0, 0};
  const AttentionResult r = t.Run();
  EXPECT_EQ(r.out.at(0, 0, 0, 0), 0.0);
  EXPECT_EQ(r.lse[0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.empty_row[0], 1);
  const AttentionResult half = AttentionCore<Eigen::half>(t.q, t.k, t.v, t.visible, nullptr, 1.0, 0.0);
  EXPECT_EQ(half.out.at(0, 0, 0, 0), 0.0);
  EXPECT_EQ(half.empty_row[0], 1);
}

TEST(AttentionOracle, TwoKeySoftmaxByHand) {
  Tiny t({1.0, 0.0}, {{1, 0}, {0, 1}}, {{2, 0}, {0, 4}});
  const AttentionResult r = t.Run();
  const double e = std::exp(1.0);
  EXPECT_NEAR(r.out.at(0, 0, 0, 0), 2.0 * e / (1 + e), 1e-15);
  EXPECT_NEAR(r.out.at(0, 0, 0, 1), 4.0 / (1 + e), 1e-15);
  EXPECT_NEAR(r.lse[0], std::log(e + 1), 1e-15);
}

TEST(AttentionOracle, SoftcapAppliesCTanhSOverC) {
  Tiny t({3.0}, {{2}, {-1}}, {{1}, {0}});  // scores 6, −3
  const double c = 5.0;
  const double s0 = c * std::tanh(6.0 / c), s1 = c * std::tanh(-3.0 / c);
  const AttentionResult r = t.Run(1.0, c);
  EXPECT_NEAR(r.out.at(0, 0, 0, 0), std::exp(s0) / (std::exp(s0) + std::exp(s1)), 1e-15);
  EXPECT_NEAR(r.lse[0], std::log(std::exp(s0) + std::exp(s1)), 1e-13);
}

TEST(AttentionOracle, BiasIsAddedAfterScaleAndSoftcap) {
  Tiny t({1.0}, {{1}, {1}}, {{1}, {0}});  // equal scores 2 (scale 2)
  TensorD bias(1, 1, 1, 2);
  bias.at(0, 0, 0, 1) = std::log(3.0);  // key 1 three times as likely
  const AttentionResult r = t.Run(2.0, 0.0, &bias);
  EXPECT_NEAR(r.out.at(0, 0, 0, 0), 0.25, 1e-15);
  EXPECT_NEAR(r.lse[0], 2.0 + std::log(4.0), 1e-15);
}

TEST(AttentionOracle, GqaQueryHeadReadsKvHeadHOverGroup) {
  Case c;
  c.q_heads = 6;
  c.kv_heads = 2;
  c.head_dim = 4;
  c.value_dim = 3;
  c.query_len = 3;
  c.rows = {RowSpec{.documents = {5}}};
  const Scenario s = MakeScenario(c);
  // Expand k and v to one kv head per query head (repeat_interleave by Hq/Hkv = 3).
  TensorD k(1, 6, s.tk, 4), v(1, 6, s.tk, 3);
  for (int h = 0; h < 6; ++h) {
    for (int j = 0; j < s.tk; ++j) {
      for (int d = 0; d < 4; ++d) k.at(0, h, j, d) = s.k.at(0, h / 3, j, d);
      for (int d = 0; d < 3; ++d) v.at(0, h, j, d) = s.v.at(0, h / 3, j, d);
    }
  }
  const AttentionResult grouped = Attention<double>(s);
  const AttentionResult expanded = AttentionCore<double>(s.q, k, v, s.visible, nullptr, c.effective_scale(), 0.0);
  EXPECT_EQ(grouped.out, expanded.out);
  EXPECT_EQ(grouped.lse, expanded.lse);
  // Heads 0 and 3 read different kv heads: their outputs differ.
  EXPECT_NE(grouped.out.at(0, 0, 2, 0), grouped.out.at(0, 3, 2, 0));
}

TEST(AttentionOracle, PadQueriesOfLeftPaddingAreFlagged) {
  const Scenario s = MakeScenario(*ExampleCase("leftpad5"));
  const AttentionResult r = Attention<double>(s);
  EXPECT_EQ(r.empty_row, (std::vector<uint8_t>{1, 1, 0, 0, 0}));
  EXPECT_EQ(r.out.at(0, 0, 1, 2), 0.0);
  // Query 2 (the first real token) sees only itself.
  for (int d = 0; d < s.c.value_dim; ++d) EXPECT_EQ(r.out.at(0, 0, 2, d), s.v.at(0, 0, 2, d));
}

TEST(AttentionOracle, ProbabilitiesSumToOneOverVisibleKeys) {
  const Scenario s = MakeScenario(*ExampleCase("prefixlm"));
  for (int i = 0; i < s.tq; ++i) {
    const std::vector<double> p = AttentionProbabilities(s, 0, 0, i);
    double sum = 0;
    for (int j = 0; j < s.tk; ++j) {
      if (!s.is_visible(0, i, j)) {
        EXPECT_EQ(p[static_cast<size_t>(j)], 0.0);
      }
      sum += p[static_cast<size_t>(j)];
    }
    EXPECT_NEAR(sum, 1.0, 1e-15);
  }
}

// ---- the positional stage in the pipeline ----------------------------------------

TEST(AttentionPipeline, EncodedQkAreWhatTheCoreReceivesInTheCaseDtype) {
  Case c;
  c.q_heads = 2;
  c.kv_heads = 1;
  c.head_dim = 8;
  c.value_dim = 4;
  c.query_len = 3;
  c.rows = {RowSpec{.left_pad = 1, .documents = {5}}};
  c.encoding.kind = EncodingKind::kRope;
  c.dtype = Dtype::kF16;
  const Scenario s = MakeScenario(c);
  TensorD q, k;
  EncodeQk(s, q, k);
  EXPECT_NE(q, s.q);  // positions 2, 3, 4 rotate the queries
  for (double x : q.data) EXPECT_EQ(x, RoundTo(Dtype::kF16, x));
  for (double x : k.data) EXPECT_EQ(x, RoundTo(Dtype::kF16, x));
  const AttentionResult pipeline = Attention<double>(s);
  const AttentionResult core = AttentionCore<double>(q, k, s.v, s.visible, nullptr, c.effective_scale(), 0.0);
  EXPECT_EQ(pipeline.out, core.out);
}

// Two heads, one row of 4 tokens, ALiBi.
Case TwoHeadAlibi() {
  Case c;
  c.q_heads = 2;
  c.head_dim = 4;
  c.value_dim = 4;
  c.query_len = 4;
  c.kv_heads = 2;
  c.rows = {RowSpec{.documents = {4}}};
  c.encoding.kind = EncodingKind::kAlibi;
  return c;
}

// Pads at position 0 beside tokens far out spread the distances far beyond the
// tensor's size (the distinct-distance table, not the dense one): every element is
// still ScoreBias at its own positions, for each bias kind.
TEST(AttentionPipeline, BiasTensorWithSpreadDistances) {
  for (const EncodingKind kind : {EncodingKind::kAlibi, EncodingKind::kT5, EncodingKind::kKerple, EncodingKind::kSandwich}) {
    Case c = TwoHeadAlibi();
    c.encoding.kind = kind;
    c.query_len = 6;
    c.rows = {RowSpec{.left_pad = 2, .documents = {4}, .position_offset = 50000},
              RowSpec{.documents = {3, 3}, .position_offset = 7}};
    const Scenario s = MakeScenario(c);
    const TensorD bias = BiasTensor(s);
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < c.q_heads; ++h)
        for (int i = 0; i < s.tq; ++i)
          for (int j = 0; j < s.tk; ++j)
            ASSERT_EQ(bias.at(b, h, i, j), ScoreBias(c, h, s.query_positions[static_cast<size_t>(b) * s.tq + i],
                                                     s.key_positions[static_cast<size_t>(b) * s.tk + j]))
                << Name(kind) << " b=" << b << " h=" << h << " i=" << i << " j=" << j;
  }
}

TEST(AttentionPipeline, ScoreBiasEntersTheScores) {
  const Case c = TwoHeadAlibi();
  const Scenario s = MakeScenario(c);
  const TensorD bias = BiasTensor(s);
  EXPECT_NE(bias.at(0, 0, 3, 0), 0.0);  // ALiBi: −m·(i − j)
  const AttentionResult pipeline = Attention<double>(s);
  const AttentionResult core = AttentionCore<double>(s.q, s.k, s.v, s.visible, &bias, c.effective_scale(), 0.0);
  EXPECT_EQ(pipeline.out, core.out);
  const AttentionResult unbiased = AttentionCore<double>(s.q, s.k, s.v, s.visible, nullptr, c.effective_scale(), 0.0);
  EXPECT_NE(pipeline.out, unbiased.out);
}

// The bias is computed once and shared by copies, but a copy whose positions
// differ gets its own (the cache remembers what it was computed from).
TEST(AttentionPipeline, ScoreBiasCacheFollowsPositions) {
  const Case c = TwoHeadAlibi();
  const Scenario s = MakeScenario(c);
  const std::shared_ptr<const TensorD> first = SharedBiasTensor(s);
  Scenario copy = s;
  EXPECT_EQ(SharedBiasTensor(copy).get(), first.get());
  copy.key_positions[0] += 3;
  const std::shared_ptr<const TensorD> moved = SharedBiasTensor(copy);
  EXPECT_NE(moved.get(), first.get());
  EXPECT_EQ(moved->at(0, 1, 3, 0), ScoreBias(c, 1, copy.query_positions[3], copy.key_positions[0]));
  EXPECT_EQ(SharedBiasTensor(s).get(), first.get());
}

// The oracle itself obeys left-padding invariance (law 2): with positions from
// cumsum(mask) − 1 and token identities that ignore pads, real rows are bitwise equal.
RC_GTEST_PROP(AttentionPipeline, OracleRealRowsIgnoreLeftPadding, ()) {
  static constexpr EncodingKind kinds[] = {EncodingKind::kNone, EncodingKind::kRope, EncodingKind::kAlibi,
                                           EncodingKind::kT5, EncodingKind::kSinusoidal};
  Case c;
  c.kv_heads = *rc::gen::inRange(1, 3).as("kv_heads");
  c.q_heads = c.kv_heads * *rc::gen::inRange(1, 3).as("group");
  c.head_dim = 2 * *rc::gen::inRange(1, 5).as("head_dim / 2");
  c.value_dim = *rc::gen::inRange(1, 5).as("value_dim");
  const int length = *rc::gen::inRange(1, 9).as("length");
  c.rows = {RowSpec{.documents = {length}}};
  c.query_len = length;
  c.encoding.kind = kinds[*rc::gen::inRange(0, 5).as("encoding")];
  c.seed = *rc::gen::inRange(0, 1000).as("seed");
  const int pads = *rc::gen::inRange(1, 4).as("left pads");
  Case padded = c;
  padded.rows[0].left_pad = pads;
  padded.query_len = length + pads;
  const AttentionResult alone = Attention<double>(MakeScenario(c));
  const AttentionResult with_pads = Attention<double>(MakeScenario(padded));
  for (int h = 0; h < c.q_heads; ++h) {
    for (int i = 0; i < length; ++i) {
      for (int d = 0; d < c.value_dim; ++d) RC_ASSERT(with_pads.out.at(0, h, i + pads, d) == alone.out.at(0, h, i, d));
    }
  }
}

// ---- the same-dtype model against the oracle ---------------------------------

double MaxError(const AttentionResult& model, const AttentionResult& oracle) {
  double worst = 0;
  for (size_t n = 0; n < oracle.out.size(); ++n) {
    worst = std::max(worst, std::abs(model.out.data[n] - oracle.out.data[n]));
  }
  return worst;
}

struct Errors {
  double f32 = 0, f16 = 0, bf16 = 0, f64 = 0;
};

Errors ErrorsOf(const Case& c) {
  const Scenario s = MakeScenario(c);
  const AttentionResult oracle = Attention<double>(s);
  return {MaxError(Attention<float>(s), oracle), MaxError(Attention<Eigen::half>(s), oracle),
          MaxError(Attention<Eigen::bfloat16>(s), oracle), MaxError(Attention<double>(s), oracle)};
}

Case SmallNormalCase(std::mt19937_64& rng) {
  auto draw = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  c.kv_heads = draw(1, 2);
  c.q_heads = c.kv_heads * draw(1, 2);
  c.head_dim = 2 * draw(1, 8);
  c.value_dim = draw(1, 8);
  const int length = draw(1, 12);
  c.query_len = draw(1, length);
  c.rows = {RowSpec{.left_pad = draw(0, 2), .documents = {length}}};
  c.visibility = draw(0, 1) == 0 ? VisibilityKind::kCausal : VisibilityKind::kBidirectional;
  c.dtype = static_cast<Dtype>(draw(0, 2));
  c.seed = rng();
  return c;
}

TEST(SameDtypeModel, ConvergesToTheOracleAsTheDtypeWidens) {
  std::mt19937_64 rng(20240601);
  int ordered = 0;
  const int cases = 200;
  for (int n = 0; n < cases; ++n) {
    const Case c = SmallNormalCase(rng);
    const Errors e = ErrorsOf(c);
    EXPECT_EQ(e.f64, 0.0) << ToLine(c);
    EXPECT_LT(e.f32, 1e-4) << ToLine(c);
    if (e.f32 <= e.f16 + 1e-6 && e.f16 <= e.bf16 + 1e-3) ++ordered;
  }
  EXPECT_GE(ordered, cases * 95 / 100);
}

RC_GTEST_PROP(SameDtypeModel, FloatStaysCloseToTheOracleOnSmallCases, ()) {
  Case c;
  c.kv_heads = *rc::gen::inRange(1, 3).as("kv_heads");
  c.q_heads = c.kv_heads * *rc::gen::inRange(1, 3).as("group");
  c.head_dim = *rc::gen::inRange(1, 17).as("head_dim");
  c.value_dim = *rc::gen::inRange(1, 9).as("value_dim");
  const int length = *rc::gen::inRange(1, 17).as("length");
  c.query_len = *rc::gen::inRange(1, length + 1).as("query_len");
  c.rows = {RowSpec{.documents = {length}}};
  c.softcap = *rc::gen::element(0.0, 30.0).as("softcap");
  c.seed = *rc::gen::inRange(0, 1 << 20).as("seed");
  const Scenario s = MakeScenario(c);
  RC_ASSERT(MaxError(Attention<float>(s), Attention<double>(s)) < 1e-4);
}

}  // namespace
}  // namespace attncheck::reference
