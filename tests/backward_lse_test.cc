// What the backward call reports beside its gradients, and what its reports draw:
// the forward's log-sum-exp ("lse", Capabilities::backward_lse) checked against the
// reference's, and the gradient influence map (which keys each query row's upstream
// gradient reached) that a backward law's report shows.
#include <gtest/gtest.h>

#include <cmath>

#include "adapters/harness.h"
#include "adapters/registry.h"
#include "tests/backward_cases.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/influence.h"
#include "properties/law_support.h"
#include "properties/laws.h"
#include "properties/tolerance.h"
#include "reference/backward.h"

namespace attncheck {
namespace {

// The lse eigen and tiled report agrees with the reference's within its model; the same
// lse with one informative row moved by a tenth of its magnitude does not.
TEST(BackwardLse, ReportedLseAgreesAndAShiftedRowFails) {
  for (const char* name : {"eigen", "tiled-f32", "tiled-bf16"}) {
    const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
    ASSERT_TRUE(adapter->capabilities().backward_lse) << name;
    int shifted = 0;
    const int ran = ForBackwardCases(*adapter, "backward-agreement", 3, 120, [&](const Case& c,
                                                                              const reference::Scenario& s, uint64_t i) {
      const TensorD dout = reference::UpstreamGradient(s, i, reference::UpstreamProfile::kUniform);
      const AdapterRun run = RunBackward(*adapter, s, dout);
      ASSERT_TRUE(run.ok()) << run.fault;
      ASSERT_EQ(run.lse.data.size(), static_cast<size_t>(s.batch) * c.q_heads * s.tq) << name;
      Oracle oracle(s, DeclaredOptions(adapter->capabilities()), dout);
      const std::vector<uint8_t> rows = RealNonEmptyRows(s);
      const Verdict right = oracle.Check(run.lse, rows, name, "lse");
      EXPECT_FALSE(right.failed()) << name << ": " << right.message << "\n" << ToLine(c);
      const TensorD& bound = oracle.Bound("lse");
      TensorD moved = run.lse;
      for (size_t row = 0; row < rows.size(); ++row) {
        if (!rows[row]) continue;
        const int b = static_cast<int>(row) / s.tq, q_row = static_cast<int>(row) % s.tq;
        const double want = oracle.Want("lse").at(b, 0, q_row, 0);
        const double step = std::max(0.1 * std::abs(want), 0.5);
        if (!(bound.at(b, 0, q_row, 0) < step / 2.0)) continue;
        moved.at(b, 0, q_row, 0) += step;
        ++shifted;
        EXPECT_TRUE(oracle.Check(moved, rows, "moved lse row", "lse").failed()) << name << "\n" << ToLine(c);
        break;
      }
    });
    EXPECT_GT(ran, 60) << name;
    EXPECT_GT(shifted, ran / 2) << name << ": the lse bound must be informative on most cases";
  }
}

// backward-agreement fails on a kernel whose gradients are right but whose reported
// lse forgets the mask (mutant:bwd-lse-unmasked), and passes eigen on the same cases.
TEST(BackwardLse, AgreementCatchesAnUnmaskedLse) {
  const Law& law = *FindLaw("backward-agreement");
  const std::unique_ptr<Adapter> mutant = MakeAdapter("mutant:bwd-lse-unmasked");
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  int failed = 0, eigen_failed = 0;
  ForBackwardCases(*mutant, "backward-agreement", 3, 100, [&](const Case& c, const reference::Scenario&, uint64_t) {
    const Verdict v = RunLaw(law, *mutant, c, Options{});
    if (v.failed()) {
      ++failed;
      EXPECT_NE(v.message.find("lse"), std::string::npos) << v.message;
    }
    eigen_failed += RunLaw(law, *eigen, c, Options{}).failed();
  });
  EXPECT_GT(failed, 10);
  EXPECT_EQ(eigen_failed, 0);
}

// A causal case: eigen's gradient influence is exactly the visibility (every visible
// key reached, no other), and a backward that forgets the mask for dK and dV
// (mutant:bwd-dkdv-unmasked) shows leaks: keys that received gradient from rows that
// cannot see them.
TEST(GradientInfluence, MatchesVisibilityAndShowsABackwardLeak) {
  Case c;
  c.q_heads = 2;
  c.kv_heads = 1;
  c.query_len = 6;
  c.rows = {RowSpec{.documents = {6}}, RowSpec{.left_pad = 2, .documents = {4}}};
  c.visibility = VisibilityKind::kCausal;
  c.seed = 11;
  std::string why;
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  const std::optional<InfluenceMap> right = MeasureGradientInfluence(*eigen, c, &why);
  ASSERT_TRUE(right) << why;
  EXPECT_EQ(right->influence, right->expected_visibility);
  const std::unique_ptr<Adapter> mutant = MakeAdapter("mutant:bwd-dkdv-unmasked");
  const std::optional<InfluenceMap> leaky = MeasureGradientInfluence(*mutant, c, &why);
  ASSERT_TRUE(leaky) << why;
  int leaks = 0;
  for (size_t e = 0; e < leaky->influence.size(); ++e) leaks += leaky->influence[e] && !leaky->expected_visibility[e];
  EXPECT_GT(leaks, 0);
}

}  // namespace
}  // namespace attncheck
