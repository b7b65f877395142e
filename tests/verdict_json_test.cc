// The verdict codec of the fuzz worker protocol (properties/verdict_json.h) and
// the outcome table behind it: every outcome and fault round-trips, and a name
// the table does not know is an error, never a pass.
#include <stdexcept>

#include <gtest/gtest.h>

#include "properties/laws.h"
#include "properties/verdict_json.h"

namespace attncheck {
namespace {

TEST(VerdictJson, EveryOutcomeAndFaultRoundTrips) {
  for (const OutcomeInfo& info : AllOutcomes()) {
    Verdict v = Verdict::Fail("out of bound", WorstElement::Compared("out", 1, 2, 3, 4, 0.5, 0.25, 0.125), 0.25,
                              0.125, 1.0);
    v.outcome = info.outcome;
    v.fault = Fault::kTimeout;
    const Verdict back = VerdictFromJson(VerdictJson(v));
    EXPECT_EQ(back.outcome, info.outcome) << info.name;
    EXPECT_EQ(back.fault, Fault::kTimeout);
    EXPECT_EQ(back.message, "out of bound");
    EXPECT_EQ(back.worst.j, 4);
    EXPECT_EQ(back.max_rel, 1.0);
  }
}

TEST(VerdictJson, UnknownOutcomeFromAWorkerIsAnError) {
  nlohmann::json j = VerdictJson(Verdict::Pass());
  j["outcome"] = "meltdown";
  EXPECT_THROW(VerdictFromJson(j), std::invalid_argument);
  j["outcome"] = "pass";
  j["fault"] = "meltdown";
  EXPECT_THROW(VerdictFromJson(j), std::invalid_argument);
}

TEST(Outcomes, ExitWeightsAndFindings) {
  EXPECT_EQ(ExitWeight(Outcome::kPass), 0);
  EXPECT_EQ(ExitWeight(Outcome::kFail), 1);
  EXPECT_EQ(ExitWeight(Outcome::kError), 3);
  EXPECT_EQ(ExitWeight(Outcome::kSkip), 0);
  EXPECT_TRUE(IsFinding(Outcome::kFail));
  EXPECT_TRUE(IsFinding(Outcome::kError));
  EXPECT_FALSE(IsFinding(Outcome::kPass));
  EXPECT_FALSE(IsFinding(Outcome::kSkip));
  EXPECT_FALSE(Info(Outcome::kSkip).checked);
  for (const OutcomeInfo& info : AllOutcomes()) EXPECT_EQ(OutcomeFromName(info.name), info.outcome);
}

TEST(Outcomes, CountsGiveTheLargestExitWeightSeen) {
  OutcomeCounts counts;
  EXPECT_EQ(counts.ExitCode(), 0);
  counts.Add(Outcome::kPass);
  counts.Add(Outcome::kSkip);
  EXPECT_EQ(counts.ExitCode(), 0);
  counts.Add(Outcome::kFail);
  EXPECT_EQ(counts.ExitCode(), 1);
  counts.Add(Outcome::kError);
  counts.Add(Outcome::kFail);
  EXPECT_EQ(counts.ExitCode(), 3);
  EXPECT_EQ(counts[Outcome::kFail], 2);
  EXPECT_EQ(counts.total(), 5);
}

// A hazard is a finding (reported) that exits 0, unless --hazards=fail.
TEST(Outcomes, HazardsExitZeroUnlessAskedToFail) {
  EXPECT_TRUE(IsFinding(Outcome::kHazard));
  EXPECT_FALSE(IsAdapterError(Outcome::kHazard));
  OutcomeCounts counts;
  counts.Add(Outcome::kPass);
  counts.Add(Outcome::kHazard);
  EXPECT_EQ(counts.ExitCode(), 0);
  EXPECT_EQ(counts.ExitCode(HazardPolicy::kFail), 1);
  counts.Add(Outcome::kError);
  EXPECT_EQ(counts.ExitCode(HazardPolicy::kFail), 3);
  EXPECT_EQ(ExitWeight(Outcome::kHazard, HazardPolicy::kReport), 0);
  EXPECT_EQ(ExitWeight(Outcome::kFail, HazardPolicy::kFail), 1);
}

// The law table runs every law; an escaping exception is an error verdict named
// after the law.
class ThrowingAdapter : public Adapter {
 public:
  std::string name() const override { return "throws"; }
  std::string description() const override { return "throws on every call"; }
  Capabilities capabilities() const override { throw std::runtime_error("boom"); }
  void attention(const AttentionArgs&) override { throw std::runtime_error("boom"); }
};

TEST(RunLaw, AnExceptionIsAnErrorNamingTheLaw) {
  ThrowingAdapter adapter;
  const Law* law = FindLaw("reference-agreement");
  ASSERT_NE(law, nullptr);
  const Verdict v = RunLaw(*law, adapter, Case{}, Options{});
  EXPECT_TRUE(IsAdapterError(v.outcome));
  EXPECT_EQ(v.message, "reference-agreement threw: boom");
  for (const Law& each : AllLaws()) {
    EXPECT_EQ(&LawOf(each.check), &each);
    EXPECT_FALSE(each.requirement.empty()) << each.name;
  }
}

}  // namespace
}  // namespace attncheck
