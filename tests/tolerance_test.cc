// Tests of the tolerance model (properties/tolerance.h) on generated cases: the
// floor never collapses to 0, wrong outputs (zeroed, constant, stale) never pass a
// case with something to compute, the oracle passes against itself, and the fast
// paths (bitwise-equal self comparison, output within the floor) skip the models.
#include <algorithm>
#include <cmath>
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
#include "reference/attention.h"
#include "reference/scenario.h"

namespace attncheck {
namespace {

using reference::Scenario;

constexpr int kCases = 200;

// Where the current model is known not to hold (input for the next issue; this
// refactor keeps the model as it is):
//  - xPos: the scale ζ^(±p/scale_base) overflows encoded q, k in f16 from offset
//    ~2048 (and everywhere near 2^16), so the floor is inf or NaN;
//  - the floor's score-error term grows with |q|·|k|·scale, so with large logits
//    or near-cancellation data in f16/bf16 any output of the right shape passes
//    (e.g. RoPE YaRN log-n, large logits: bound 33 in f16, 258 in bf16, |V| ≤ 2.9;
//    sinusoidal, near-cancellation: bound 12 in f16, 98 in bf16, |V| ≤ 50).
bool FloorHolds(const Case& c) { return c.encoding.kind != EncodingKind::kXpos; }
bool WrongOutputsFail(const Case& c) {
  return FloorHolds(c) && (c.dtype == Dtype::kF32 || c.profile == ValueProfile::kNormal ||
                           c.profile == ValueProfile::kTies);
}

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

double MaxAbs(const TensorD& t) {
  double m = 0.0;
  for (double x : t.data) m = std::max(m, std::abs(x));
  return m;
}

void ExpectFloorPositive(const Scenario& s, const std::string& label) {
  Oracle oracle(s, Options{});
  const TensorD& floor = oracle.Floor();
  for (size_t e = 0; e < floor.data.size(); ++e) {
    ASSERT_TRUE(std::isfinite(floor.data[e]) && floor.data[e] > 0.0)
        << label << ": floor " << floor.data[e] << " at element " << e << " of " << ToLine(s.c);
  }
}

TEST(Tolerance, FloorNeverCollapsesToZero) {
  for (const Case& c : GeneratedCases()) {
    if (!FloorHolds(c)) continue;
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

// What a broken kernel might return, each against the oracle of a case with
// something to compute; any of them passing is reported with the case's numbers.
TEST(Tolerance, WrongOutputsNeverPass) {
  for (const Case& c : GeneratedCases()) {
    if (!WrongOutputsFail(c)) continue;
    const Scenario s = reference::MakeScenario(c);
    const std::vector<uint8_t> rows = NonTrivialRows(s);
    if (!Any(rows)) continue;
    Oracle oracle(s, Options{});
    const TensorD& want = oracle.Want();
    TensorD zeroed = want, constant = want;
    std::fill(zeroed.data.begin(), zeroed.data.end(), 0.0);
    double mean = 0.0;
    for (double x : want.data) mean += x / static_cast<double>(want.data.size());
    std::fill(constant.data.begin(), constant.data.end(), mean);
    Case other = c;
    other.seed = c.seed + 1;
    const Scenario stale_scenario = reference::MakeScenario(other);
    const TensorD stale = Oracle(stale_scenario, Options{}).Want();
    for (const auto& [what, got] : {std::pair<const char*, const TensorD*>{"zeroed", &zeroed},
                                    {"constant", &constant}, {"stale", &stale}}) {
      const Verdict v = oracle.Check(*got, rows, what);
      EXPECT_TRUE(v.failed()) << what << " output passed " << ToLine(c) << ": max bound "
                              << MaxAbs(oracle.Bound()) << ", max |V| " << MaxAbs(s.v) << ", max |want| "
                              << MaxAbs(want);
    }
  }
}

TEST(Tolerance, OracleAndNaiveModelPassAgainstTheOracle) {
  for (const Case& c : GeneratedCases()) {
    const Scenario s = reference::MakeScenario(c);
    Oracle oracle(s, Options{});
    const std::vector<uint8_t> rows = RealNonEmptyRows(s);
    const TensorD want = oracle.Want();
    const Verdict self = oracle.Check(want, rows, "oracle");
    EXPECT_TRUE(self.passed()) << self.message;
    EXPECT_EQ(self.max_abs, 0.0);
    EXPECT_TRUE(oracle.CheckSelf(want, want, rows, "oracle").passed());
    const Verdict naive = oracle.Check(reference::NaiveSameDtype(s).out, rows, "naive same-dtype model");
    EXPECT_TRUE(naive.passed()) << ToLine(s.c) << ": " << naive.message;
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

TEST(Tolerance, UnknownTensorIsAnError) {
  const Scenario s = reference::MakeScenario(Generated(4, Dtype::kF32));
  Oracle oracle(s, Options{});
  EXPECT_THROW(oracle.Floor("lse"), std::invalid_argument);
}

}  // namespace
}  // namespace attncheck
