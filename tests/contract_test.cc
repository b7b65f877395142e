// The contract (DESIGN §5, cases/capabilities.h) decides fail versus hazard: the
// same behaviour fails a kernel that promises otherwise and is a hazard for one
// that does not. And causal flags mean the same in a session step as in one call
// (include/attncheck/adapter.h): a kernel that implements top-left literally
// passes decode-consistency, because the harness never hands it the flag where
// its rule is not the case's visibility.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "adapters/harness.h"
#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/laws.h"
#include "reference/scenario.h"
#include "tests/contract_override.h"

namespace attncheck {
namespace {

using test::ContractOverride;

struct Counts {
  int pass = 0, fail = 0, hazard = 0, skip = 0, error = 0;
  int no_relative = 0;  // fails and hazards with an error but no relative error (max_rel 0)
};

Counts RunMany(const char* law_name, Adapter& adapter, int cases, uint64_t seed) {
  const Law* law = FindLaw(law_name);
  EXPECT_NE(law, nullptr);
  Counts counts;
  const Capabilities caps = adapter.capabilities();
  for (int i = 0; i < cases; ++i) {
    RandomSource source(seed, static_cast<uint64_t>(i));
    const Verdict v = RunLaw(*law, adapter, Decode(source, caps), Options{});
    if ((v.failed() || v.outcome == Outcome::kHazard) && v.max_abs > 0.0 && v.max_rel == 0.0) ++counts.no_relative;
    switch (v.outcome) {
      case Outcome::kPass: ++counts.pass; break;
      case Outcome::kFail: ++counts.fail; break;
      case Outcome::kHazard: ++counts.hazard; break;
      case Outcome::kSkip: ++counts.skip; break;
      case Outcome::kError: ++counts.error; break;
    }
  }
  return counts;
}

// NaN in a masked value reaches visible rows (0·NaN in P·V): a failure where NaN
// isolation is promised, a hazard where it is not — never both, never a pass.
TEST(Contract, NanIsolationDecidesFailOrHazard) {
  ContractOverride promised("mutant:masked-value-zero-times-nan", [](Capabilities& c) { c.nan_isolation = true; });
  ContractOverride not_promised("mutant:masked-value-zero-times-nan",
                                [](Capabilities& c) { c.nan_isolation = false; });
  const Counts fails = RunMany("masked-rows", promised, 60, 13);
  const Counts hazards = RunMany("masked-rows", not_promised, 60, 13);
  EXPECT_GT(fails.fail, 0);
  EXPECT_EQ(fails.hazard, 0);
  EXPECT_EQ(hazards.fail, 0);
  EXPECT_EQ(hazards.hazard, fails.fail);  // the same cases, classified by the contract
  EXPECT_EQ(fails.no_relative + hazards.no_relative, 0);  // a NaN output reads max_rel inf, as max_abs
}

// The failure message names the key that declares the leak where the contract is
// data: the hello's key for a process backend (exec: or torch-*, whatever its name),
// the table's field for a C plugin, nothing for an adapter whose contract is its code.
TEST(Contract, NanLeakNamesTheKeyWhereTheContractIsWritten) {
  const auto first_failure = [](ContractSource source) {
    ContractOverride adapter("mutant:masked-value-zero-times-nan", [source](Capabilities& c) {
      c.nan_isolation = true;
      c.contract_source = source;
    });
    const Capabilities caps = adapter.capabilities();
    for (int i = 0; i < 60; ++i) {
      RandomSource random(13, static_cast<uint64_t>(i));
      const Verdict v = RunLaw(*FindLaw("masked-rows"), adapter, Decode(random, caps), Options{});
      if (v.failed()) return v.message;
    }
    return std::string("no failure in 60 cases");
  };
  const std::string protocol = first_failure(ContractSource::kProtocol);
  const std::string c_abi = first_failure(ContractSource::kCAbi);
  const std::string code = first_failure(ContractSource::kCode);
  EXPECT_NE(protocol.find("declare \"nan_isolation\": false in the hello's capabilities"), std::string::npos) << protocol;
  EXPECT_NE(c_abi.find("set contract.nan_isolation = 0 (attncheck_contract"), std::string::npos) << c_abi;
  EXPECT_EQ(c_abi.find("hello"), std::string::npos) << c_abi;
  EXPECT_EQ(code.find("if the kernel does not promise this"), std::string::npos) << code;
  EXPECT_NE(code.find("NaN"), std::string::npos) << code;
}

// A row with no visible key: eigen writes zeros. Declaring zeros passes; declaring
// NaN or the mean of V fails; leaving it unspecified passes (zeros are finite).
TEST(Contract, MaskedRowPolicyIsChecked) {
  for (const auto& [policy, expect_fail] : {std::pair{MaskedRowPolicy::kZeros, false},
                                            std::pair{MaskedRowPolicy::kNaN, true},
                                            std::pair{MaskedRowPolicy::kMeanV, true},
                                            std::pair{MaskedRowPolicy::kUnspecified, false}}) {
    ContractOverride adapter("eigen", [policy = policy](Capabilities& c) { c.masked_rows = policy; });
    const Counts counts = RunMany("masked-rows", adapter, 40, 21);
    EXPECT_EQ(counts.fail > 0, expect_fail) << Name(policy) << ": " << counts.fail << " fails";
    EXPECT_EQ(counts.hazard, 0) << Name(policy);
    if (!expect_fail) {
      EXPECT_GT(counts.pass, 20) << Name(policy);
    }
  }
}

// NaN rows where the policy is unspecified are a hazard (allmasked-nan writes NaN).
TEST(Contract, NanRowsUnderUnspecifiedPolicyAreHazards) {
  ContractOverride unspecified("mutant:allmasked-nan",
                               [](Capabilities& c) { c.masked_rows = MaskedRowPolicy::kUnspecified; });
  const Counts counts = RunMany("masked-rows", unspecified, 40, 5);
  EXPECT_EQ(counts.fail, 0);
  EXPECT_GT(counts.hazard, 0);
  ContractOverride nan("mutant:allmasked-nan", [](Capabilities& c) { c.masked_rows = MaskedRowPolicy::kNaN; });
  const Counts declared = RunMany("masked-rows", nan, 40, 5);
  EXPECT_EQ(declared.fail + declared.hazard, 0) << "NaN rows are what it declares";
}

// The shrunk case of the contradiction the header and the harness once had: B=1,
// Tq=Tk=2, causal, decoded in steps [1, 1]. Top-left in the second step (1 query
// over 2 keys) would be j ≤ 0: not the case's visibility, so the harness must not
// use it there; bottom-right can.
TEST(Contract, TopLeftFlagIsNotHandedToADecodeStep) {
  Case c;
  c.rows = {RowSpec{0, 0, {2}, 0, 0}};
  c.query_len = 2;
  c.head_dim = c.value_dim = 2;
  c.visibility = VisibilityKind::kCausal;
  const reference::Scenario s = reference::MakeScenario(c);
  const std::vector<int> steps = {1, 1};
  EXPECT_TRUE(WhySessionCannotExpress(s, steps, MaskConvention::kCausalTopLeft).has_value());
  EXPECT_FALSE(WhySessionCannotExpress(s, steps, MaskConvention::kCausalBottomRight).has_value());
  const std::vector<int> one_step = {2};
  EXPECT_FALSE(WhySessionCannotExpress(s, one_step, MaskConvention::kCausalTopLeft).has_value());
  const std::unique_ptr<Adapter> tiled = MakeAdapter("tiled-f32");
  EXPECT_THROW(RunSession(*tiled, s, steps, MaskConvention::kCausalTopLeft), std::invalid_argument);
}

// A kernel that implements the header's literal top-left rule in its session steps
// (tiled-f32 does) and declares top-left and a bool mask passes decode-consistency:
// the steps go over in the bool mask. Declaring top-left alone, causal decode cases
// it cannot express are skipped with the reason, never failed.
TEST(Contract, LiteralTopLeftKernelPassesDecodeConsistency) {
  ContractOverride with_bool("tiled-f32", [](Capabilities& c) {
    c.masks = {MaskConvention::kCausalTopLeft, MaskConvention::kBoolVisible};
  });
  const Counts counts = RunMany("decode-consistency", with_bool, 200, 3);
  EXPECT_EQ(counts.fail + counts.hazard + counts.error, 0);
  EXPECT_GT(counts.pass, 100);
  ContractOverride flag_only("tiled-f32", [](Capabilities& c) { c.masks = {MaskConvention::kCausalTopLeft}; });
  const Counts alone = RunMany("decode-consistency", flag_only, 100, 3);
  EXPECT_EQ(alone.fail + alone.hazard + alone.error, 0);
  EXPECT_GT(alone.skip, 0);
}

}  // namespace
}  // namespace attncheck
