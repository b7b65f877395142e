// Tests of the tolerance model (properties/tolerance.h) on generated cases: the
// floor never collapses to 0, a zeroed, constant or stale row never passes where it
// differs materially from the right one (all profiles and dtypes, xPos, far
// positions, large scales), the declared naive models and the oracle pass, correct
// adapters pass, the bound is one per row, and the fast paths skip the models.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "adapters/registry.h"
#include "cases/capabilities.h"
#include "cases/case.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/tolerance.h"
#include "properties/laws.h"
#include "reference/attention.h"
#include "reference/declared_attention.h"
#include "reference/scenario.h"

namespace attncheck {
namespace {

using reference::Scenario;

constexpr int kCases = 200;

// The reference adapter's capabilities (every dtype, encoding and scaling), on
// smaller shapes.
Capabilities Everything() {
  Capabilities caps = MakeAdapter("reference")->capabilities();
  caps.max_tokens = 70;
  caps.max_head_dim = 32;
  return caps;
}

Case Generated(int index, Dtype dtype) {
  RandomSource src(23, static_cast<uint64_t>(index));
  Case c = Decode(src, Everything());
  c.dtype = dtype;
  return c;
}

// kCases generated cases in each dtype.
std::vector<Case> GeneratedCases() {
  std::vector<Case> cases;
  for (const Dtype dtype : kAllDtypes)
    for (int n = 0; n < kCases; ++n) cases.push_back(Generated(n, dtype));
  return cases;
}

// A row with a visible key whose value vectors differ somewhere: its output is not
// a constant of the data [B·Tq].
std::vector<uint8_t> NonTrivialRows(const Scenario& s) {
  std::vector<uint8_t> rows = RealNonEmptyRows(s);
  const int group = s.c.q_heads / s.c.kv_heads;
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.tq; ++i) {
      uint8_t& row = rows[static_cast<size_t>(b) * s.tq + i];
      if (!row) continue;
      bool varies = false;
      for (int h = 0; h < s.c.q_heads && !varies; ++h)
        for (int d = 0; d < s.c.value_dim && !varies; ++d) {
          int first = -1;
          for (int j = 0; j < s.tk && !varies; ++j) {
            if (!s.is_visible(b, i, j)) continue;
            if (first < 0) first = j;
            varies = s.v.at(b, h / group, j, d) != s.v.at(b, h / group, first, d);
          }
        }
      row = varies;
    }
  return rows;
}

bool Any(const std::vector<uint8_t>& rows) { return std::any_of(rows.begin(), rows.end(), [](uint8_t r) { return r; }); }

void ExpectFloorPositive(const Scenario& s, const std::string& label) {
  Oracle oracle(s, Options{});
  const TensorD& floor = oracle.Floor();
  for (size_t e = 0; e < floor.data.size(); ++e) {
    // +inf where encoded q, k overflow the dtype (xPos in f16 from offset ~2048): such
    // a row is uninformative and its comparison a skip (WrongRowsNeverPass).
    ASSERT_TRUE(floor.data[e] > 0.0)
        << label << ": floor " << floor.data[e] << " at element " << e << " of " << ToLine(s.c);
  }
}

TEST(Tolerance, FloorNeverCollapsesToZero) {
  for (const Case& c : GeneratedCases()) {
    const Scenario s = reference::MakeScenario(c);
    ExpectFloorPositive(s, "as generated");
    for (const double magnitude : {0.0, 1e-300, 1e-30, 1e30}) {
      Scenario scaled = s;
      for (double& x : scaled.v.data) x *= magnitude;
      ExpectFloorPositive(scaled, fmt::format("V times {:g}", magnitude));
    }
    Case far = c;
    for (RowSpec& row : far.rows) row.position_offset = (1 << 16) - 3;
    ExpectFloorPositive(reference::MakeScenario(far), "positions near 2^16");
  }
}

// Generated cases and their harder variants: every position near 2^16 (float
// RoPE angles, xPos overflow in f16), and a scale 16 times the default (scores
// far from 0, as large logits at scale 1000 reach).
std::vector<Case> HardCases() {
  std::vector<Case> cases;
  int n = 0;
  for (const Case& c : GeneratedCases()) {
    cases.push_back(c);
    if (++n % 4 == 0) {
      Case far = c;
      for (RowSpec& row : far.rows) row.position_offset = (1 << 16) - 3;
      cases.push_back(far);
    }
    if (n % 4 == 1) {
      Case sharp = c;
      sharp.scale = 16.0 / std::sqrt(static_cast<double>(c.head_dim));
      cases.push_back(sharp);
    }
  }
  return cases;
}

// The largest |want − got| over query row (b, h, i).
double RowDistance(const TensorD& want, const TensorD& got, int b, int h, int i) {
  double d = 0.0;
  for (int j = 0; j < want.shape[3]; ++j) d = std::max(d, std::abs(want.at(b, h, i, j) - got.at(b, h, i, j)));
  return d;
}

// What a broken kernel might return for one real row: zeros, the mean of the
// visible values (uniform attention), or another row's output (a stale row).
// Where the replacement differs from the right row by more than kUninformative of
// the row's largest |v|, Oracle::Check must not pass: it fails, or (the declared
// accuracy cannot tell) it skips and says so.
TEST(Tolerance, WrongRowsNeverPass) {
  int checked = 0, failed = 0, skipped = 0;
  for (const Case& c : HardCases()) {
    const Scenario s = reference::MakeScenario(c);
    const std::vector<uint8_t> rows = NonTrivialRows(s);
    if (!Any(rows)) continue;
    Oracle oracle(s, Options{});
    const TensorD want = oracle.Want();
    const std::vector<double>& magnitude = oracle.Magnitude();
    const int group = c.q_heads / c.kv_heads;
    // Two rows per case: the first non-trivial one and, as its stale source, the last real one.
    int b = -1, i = -1, stale_b = -1, stale_i = -1;
    for (int bb = 0; bb < s.batch; ++bb)
      for (int ii = 0; ii < s.tq; ++ii)
        if (rows[static_cast<size_t>(bb) * s.tq + ii]) {
          if (b < 0) {
            b = bb;
            i = ii;
          }
          stale_b = bb;
          stale_i = ii;
        }
    const int h = static_cast<int>(c.seed % static_cast<uint64_t>(c.q_heads));
    TensorD zeroed = want, uniform = want, stale = want;
    for (int d = 0; d < c.value_dim; ++d) {
      double mean = 0.0;
      int visible = 0;
      for (int j = 0; j < s.tk; ++j)
        if (s.is_visible(b, i, j)) {
          mean += s.v.at(b, h / group, j, d);
          ++visible;
        }
      zeroed.at(b, h, i, d) = 0.0;
      uniform.at(b, h, i, d) = mean / visible;
      stale.at(b, h, i, d) = want.at(stale_b, (h + 1) % c.q_heads, stale_i, d);
    }
    const double material = kUninformative * magnitude[(static_cast<size_t>(b) * c.q_heads + h) * s.tq + i];
    for (const auto& [what, got] : {std::pair<const char*, const TensorD*>{"zeroed", &zeroed},
                                    {"mean of V", &uniform}, {"stale", &stale}}) {
      if (!(RowDistance(want, *got, b, h, i) > material)) continue;  // no material difference
      const Verdict v = oracle.Check(*got, RealNonEmptyRows(s), what);
      ++checked;
      failed += v.failed();
      skipped += v.skipped();
      EXPECT_FALSE(v.passed()) << what << " row (b=" << b << ", h=" << h << ", i=" << i << ") passed " << ToLine(c)
                               << ": its bound " << oracle.Bound().at(b, h, i, 0) << ", its max |v| "
                               << material / kUninformative;
    }
  }
  // Most wrong rows are failures: the model stays informative on most cases.
  EXPECT_GT(failed, 4 * skipped) << failed << " failed, " << skipped << " skipped of " << checked;
  std::printf("wrong rows: %d checked, %d failed, %d skipped (uninformative)\n", checked, failed, skipped);
}

// ScoreErrorEffect bounds what scores each moved by at most δ do to an output row:
// the oracle with every visible score shifted by δ against or toward the row's output
// (the worst signs for its first value column), and by random amounts in [−δ, δ], stays
// within it on every real row (rows whose scores overflow, xPos in f16 near 2^16, have no
// softmax and are left out). On the large-logit variants it is often far below the
// first-order 2δ·max|v| that the floor takes elsewhere.
TEST(Tolerance, ScoreErrorEffectBoundsShiftedScores) {
  std::mt19937_64 random(41);
  int rows_checked = 0, far_sharper = 0;
  int n = 0;
  for (const Case& c : HardCases()) {
    if (++n % 3 != 0) continue;
    const Scenario s = reference::MakeScenario(c);
    TensorD q, k;
    reference::EncodeQk(s, q, k);
    const TensorD bias = reference::BiasTensor(s);
    const double scale = c.effective_scale();
    const TensorD want = reference::AttentionCore<double>(q, k, s.v, s.visible, &bias, scale, c.softcap).out;
    const std::vector<uint8_t> real = RealNonEmptyRows(s);
    const int group = c.q_heads / c.kv_heads;
    Oracle oracle(s, Options{});
    const std::vector<double>& magnitude = oracle.Magnitude();  // max |v| over each row's visible values
    for (const double delta : {1e-3, 0.05, 0.3}) {
      TensorD adversarial = bias, jittered = bias;
      std::uniform_real_distribution<double> shift(-delta, delta);
      for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < c.q_heads; ++h)
          for (int i = 0; i < s.tq; ++i)
            for (int j = 0; j < s.tk; ++j) {
              const double toward = s.v.at(b, h / group, j, 0) > want.at(b, h, i, 0) ? delta : -delta;
              adversarial.at(b, h, i, j) += toward;
              jittered.at(b, h, i, j) += shift(random);
            }
      for (const TensorD* shifted : {&adversarial, &jittered}) {
        const TensorD got = reference::AttentionCore<double>(q, k, s.v, s.visible, shifted, scale, c.softcap).out;
        for (int b = 0; b < s.batch; ++b)
          for (int h = 0; h < c.q_heads; ++h)
            for (int i = 0; i < s.tq; ++i) {
              if (!real[static_cast<size_t>(b) * s.tq + i] || !std::isfinite(want.at(b, h, i, 0))) continue;
              const double max_v = magnitude[(static_cast<size_t>(b) * c.q_heads + h) * s.tq + i];
              const double effect = ScoreErrorEffect(s, q, k, &bias, b, h, i, delta);
              ++rows_checked;
              far_sharper += effect < 0.25 * 2.0 * delta * max_v;
              ASSERT_LE(RowDistance(want, got, b, h, i), effect * (1.0 + 1e-9) + 1e-12 * max_v)
                  << "delta " << delta << " row (b=" << b << ", h=" << h << ", i=" << i << ") of " << ToLine(c);
            }
      }
    }
  }
  EXPECT_GT(far_sharper, rows_checked / 20) << far_sharper << " of " << rows_checked;
  std::printf("score shifts: %d rows checked, %d with an effect under a quarter of 2δ·max|v|\n", rows_checked,
              far_sharper);
}

// Declarations real kernels make (cases/accuracy.h), and each one's naive model.
std::vector<std::pair<const char*, Accuracy>> Declarations(Dtype dtype) {
  return {{"strict", Accuracy{}},
          {"f16 P·V accumulator (ggml-flash)", Accuracy{.pv_accum = Dtype::kF16}},
          {"S and P in the input dtype (ATen ops)", Accuracy{.scores_in_input_dtype = true, .p_in_input_dtype = true}},
          {"everything in the input dtype", Accuracy{dtype, dtype, true, true}}};
}

TEST(Tolerance, OracleAndDeclaredModelsPassAgainstTheOracle) {
  for (const Case& c : GeneratedCases()) {
    const Scenario s = reference::MakeScenario(c);
    const std::vector<uint8_t> rows = RealNonEmptyRows(s);
    for (const auto& [label, accuracy] : Declarations(c.dtype)) {
      Options options;
      options.accuracy = accuracy;
      Oracle oracle(s, options);
      const TensorD want = oracle.Want();
      const Verdict self = oracle.Check(want, rows, "oracle");
      EXPECT_FALSE(self.failed()) << self.message;
      EXPECT_EQ(self.max_abs, 0.0);
      EXPECT_FALSE(oracle.CheckSelf(want, want, rows, "oracle").failed());
      TensorD q, k;
      reference::EncodeQk(s, q, k);
      const TensorD bias = reference::BiasTensor(s);
      const TensorD naive = reference::DeclaredAttention(q, k, s.v, s.visible, &bias, c.effective_scale(), c.softcap,
                                                         c.dtype, accuracy);
      const Verdict v = oracle.Check(naive, rows, label);
      EXPECT_FALSE(v.failed()) << ToLine(s.c) << ": " << v.message;
    }
  }
}

// The bound does not hinge on one element: it is one number per query row.
TEST(Tolerance, BoundIsOnePerRow) {
  const Scenario s = reference::MakeScenario(Generated(5, Dtype::kBf16));
  Oracle oracle(s, Options{});
  const TensorD& bound = oracle.Bound();
  for (int b = 0; b < bound.shape[0]; ++b)
    for (int h = 0; h < bound.shape[1]; ++h)
      for (int i = 0; i < bound.shape[2]; ++i)
        for (int d = 1; d < bound.shape[3]; ++d) ASSERT_EQ(bound.at(b, h, i, d), bound.at(b, h, i, 0));
}

// The correct adapters pass reference agreement under their own declarations.
TEST(Tolerance, CorrectAdaptersPass) {
  for (const char* name : {"eigen", "tiled-f32", "tiled-f16", "tiled-bf16"}) {
    const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
    const Law& law = *FindLaw("reference-agreement");
    int passed = 0;
    for (int n = 0; n < 300; ++n) {
      RandomSource src(29, static_cast<uint64_t>(n));
      const Case c = Decode(src, adapter->capabilities());
      const Verdict v = RunLaw(law, *adapter, c, Options{});
      passed += v.passed();
      EXPECT_FALSE(v.failed()) << name << ": " << ToLine(c) << ": " << v.message;
    }
    EXPECT_GT(passed, 200) << name;
  }
}

TEST(Tolerance, BitwiseEqualSelfComparisonNeverComputesTheOracle) {
  const Scenario s = reference::MakeScenario(Generated(1, Dtype::kF16));
  Oracle oracle(s, Options{});
  const TensorD out = reference::NaiveSameDtype(s).out;
  EXPECT_TRUE(oracle.CheckSelf(out, out, RealNonEmptyRows(s), "same output").passed());
  EXPECT_TRUE(oracle.CheckSelf(out, out, {}, "same output, every row").passed());
  EXPECT_FALSE(oracle.oracle_computed());
  EXPECT_FALSE(oracle.naive_computed());
}

TEST(Tolerance, OutputWithinTheFloorNeverRunsTheNaiveModel) {
  const Scenario s = reference::MakeScenario(Generated(2, Dtype::kBf16));
  Oracle oracle(s, Options{});
  const Verdict v = oracle.CheckOutcome(oracle.Want(), RealNonEmptyRows(s), "oracle");
  EXPECT_TRUE(v.passed());
  EXPECT_TRUE(oracle.oracle_computed());
  EXPECT_FALSE(oracle.naive_computed());
}

TEST(Tolerance, OutcomeAndFullCheckAgreeOnFailures) {
  const Scenario s = reference::MakeScenario(Generated(3, Dtype::kF32));
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);
  Oracle lazy(s, Options{}), full(s, Options{});
  TensorD got = full.Want();
  for (double& x : got.data) x += 1.0;
  const Verdict outcome = lazy.CheckOutcome(got, rows, "shifted"), check = full.Check(got, rows, "shifted");
  ASSERT_TRUE(check.failed());
  EXPECT_EQ(outcome.message, check.message);
  EXPECT_EQ(outcome.worst.tensor, "out");
  EXPECT_EQ(outcome.worst.error, check.worst.error);
  EXPECT_EQ(outcome.worst.bound, check.worst.bound);
}

// CheckSelf runs the oracle and the naive model only on the rows that differ (and the rows its
// verdict reads otherwise): every verdict equals the one from the full bound.
TEST(Tolerance, SelfComparisonOnSomeRowsAgreesWithTheFullBound) {
  int compared = 0, failed = 0, skipped = 0;
  for (int n = 0; n < 60; ++n) {
    const Dtype dtype = n % 3 == 0 ? Dtype::kF32 : n % 3 == 1 ? Dtype::kF16 : Dtype::kBf16;
    const Scenario s = reference::MakeScenario(Generated(100 + n, dtype));
    const std::vector<uint8_t> rows = RealNonEmptyRows(s);
    Oracle partial(s, Options{}), full(s, Options{});
    const TensorD a = reference::NaiveSameDtype(s).out;
    TensorD b = a;
    // Move every third row's elements, by an amount that grows with n: some
    // verdicts pass, some fail.
    const size_t dv = static_cast<size_t>(b.shape[3]);
    for (size_t row = 0; dv > 0 && row < b.data.size() / dv; row += 3)
      for (size_t e = row * dv; e < (row + 1) * dv; ++e) b.data[e] += std::ldexp(b.data[e] + 1.0, -30 + n % 30);
    full.Bound();  // CheckSelf then compares against the stored full bound
    const Verdict lazy = partial.CheckSelf(b, a, rows, "moved"), whole = full.CheckSelf(b, a, rows, "moved");
    EXPECT_FALSE(partial.oracle_computed());
    EXPECT_FALSE(partial.naive_computed());
    EXPECT_EQ(lazy.outcome, whole.outcome) << ToLine(s.c);
    EXPECT_EQ(lazy.message, whole.message) << ToLine(s.c);
    EXPECT_EQ(lazy.bound, whole.bound) << ToLine(s.c);
    EXPECT_EQ(lazy.max_abs, whole.max_abs) << ToLine(s.c);
    EXPECT_EQ(lazy.worst.b, whole.worst.b);
    EXPECT_EQ(lazy.worst.h, whole.worst.h);
    EXPECT_EQ(lazy.worst.i, whole.worst.i);
    EXPECT_EQ(lazy.worst.j, whole.worst.j);
    EXPECT_EQ(lazy.worst.bound, whole.worst.bound);
    ++compared;
    failed += whole.failed();
    skipped += whole.outcome == Outcome::kSkip;
  }
  EXPECT_GT(failed, 0);
  EXPECT_LT(failed + skipped, compared);
}

// SharedAngles leaves out of the floor the adapter's float RoPE angle error (4·2^−24·(p + 1)
// per unit of score), the term that grows with the position: at long positions it alone
// made self-comparisons of an encoding kernel uninformative (ort131-rotary-f32,
// left-padding: 118 of 1000 cases skipped with it, 45 without). The floor is not monotone
// in the score error (a row the first-order term leaves uninformative takes the sharper
// bound from its own softmax instead), but no row it left informative becomes
// uninformative, and nothing changes where nothing rotates or the harness encodes.
TEST(Tolerance, SharedAnglesLeaveOutOnlyTheAngleError) {
  Options owns;
  owns.owns_encoding = true;
  Options harness = owns;
  harness.owns_encoding = false;
  int rotated = 0, changed = 0, informative_only_shared = 0;
  for (int n = 0; n < 200; ++n) {
    Case c = Generated(300 + n, Dtype::kF32);
    for (RowSpec& row : c.rows) row.position_offset = 100000 + 37 * n;
    const bool rotates = c.encoding.kind == EncodingKind::kRope || c.encoding.kind == EncodingKind::kXpos;
    const Scenario s = reference::MakeScenario(c);
    Oracle charged(s, owns), shared(s, SharedAngles(owns));
    Oracle harness_charged(s, harness), harness_shared(s, SharedAngles(harness));
    const TensorD &a = charged.Floor(), &b = shared.Floor();
    EXPECT_EQ(harness_charged.Floor().data, harness_shared.Floor().data) << "the harness's own angles: " << ToLine(c);
    if (!rotates) {
      EXPECT_EQ(a.data, b.data) << "nothing rotates: " << ToLine(c);
      continue;
    }
    ++rotated;
    changed += a.data != b.data;
    const std::vector<double>& magnitude = shared.Magnitude();
    const size_t dv = static_cast<size_t>(a.shape[3]);
    for (size_t row = 0; row < magnitude.size(); ++row) {
      double worst_a = 0.0, worst_b = 0.0;
      for (size_t e = row * dv; e < (row + 1) * dv; ++e) {
        ASSERT_GT(b.data[e], 0.0) << ToLine(c);
        worst_a = std::max(worst_a, a.data[e]);
        worst_b = std::max(worst_b, b.data[e]);
      }
      const bool informative_a = worst_a < kUninformative * magnitude[row] || magnitude[row] == 0.0;
      const bool informative_b = worst_b < kUninformative * magnitude[row] || magnitude[row] == 0.0;
      EXPECT_TRUE(informative_b || !informative_a) << "row " << row << " of " << ToLine(c);
      informative_only_shared += informative_b && !informative_a;
    }
  }
  EXPECT_GT(rotated, 20);
  EXPECT_GT(changed, 0) << "rotated cases whose floor the angle term moved";
  EXPECT_GT(informative_only_shared, 100) << "rows the angle term alone made uninformative";
  std::printf("%d of %d rotated cases with another floor, %d rows informative only without the angle term\n",
              changed, rotated, informative_only_shared);
}

TEST(Tolerance, UnknownTensorIsAnError) {
  const Scenario s = reference::MakeScenario(Generated(4, Dtype::kF32));
  Oracle oracle(s, Options{});
  EXPECT_THROW(oracle.Floor("lse"), std::invalid_argument);
}

}  // namespace
}  // namespace attncheck
