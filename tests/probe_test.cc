// `attncheck probe` (properties/probe.h): correct adapters agree with their
// declarations; a mutant whose defect an item sees, and an adapter whose declared
// contract lies, are reported as contradictions (the command exits 1).
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "adapters/adapter_fault.h"
#include "adapters/registry.h"
#include "properties/probe.h"
#include "tests/contract_override.h"
#include "tests/cli_support.h"

namespace attncheck {
namespace {

// The items that contradict the declaration, by name.
std::vector<std::string> Contradictions(const ProbeReport& report) {
  std::vector<std::string> names;
  for (const ProbeItem& item : report.items)
    if (!item.agrees) names.push_back(item.name + ": " + item.observed);
  return names;
}

ProbeReport ProbeNamed(const std::string& name) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
  return Probe(*adapter, 1);
}

TEST(Probe, CorrectAdaptersAgree) {
  for (const char* name : {"reference", "eigen", "tiled-f16"}) {
    const ProbeReport report = ProbeNamed(name);
    EXPECT_TRUE(report.fault.empty()) << name << ": " << report.fault;
    EXPECT_TRUE(report.agrees()) << name << "\n" << ToText(report);
  }
}

TEST(Probe, SeesMutantDefects) {
  // Each mutant breaks a promise one item observes; the item names what it saw.
  const std::vector<std::pair<std::string, std::string>> mutants = {
      {"mutant:gqa-tile-mapping", "h mod Hkv"},
      {"mutant:allmasked-nan", "masked-row output: nan"},
      {"mutant:masked-value-zero-times-nan", "spreads"},
      {"mutant:topleft-causal-decode", "top-left"},
      {"mutant:causal-off-by-one", "other"},
  };
  for (const auto& [name, seen] : mutants) {
    const ProbeReport report = ProbeNamed(name);
    const std::vector<std::string> contradictions = Contradictions(report);
    ASSERT_FALSE(contradictions.empty()) << name << "\n" << ToText(report);
    bool named = false;
    for (const std::string& c : contradictions) named = named || c.find(seen) != std::string::npos;
    EXPECT_TRUE(named) << name << " should be seen as '" << seen << "'\n" << ToText(report);
  }
}

TEST(Probe, ContractThatLiesContradicts) {
  // eigen gives zeros for a row with no visible key; this wrapper declares NaN.
  test::ContractOverride lying("eigen", [](Capabilities& caps) { caps.masked_rows = MaskedRowPolicy::kNaN; });
  const ProbeReport report = Probe(lying, 1);
  ASSERT_FALSE(report.agrees()) << ToText(report);
  EXPECT_EQ(Contradictions(report).front(), "masked-row output: zeros") << ToText(report);
}

// An adapter that refuses every GQA call (CaseRefused, as a process backend's `refused`
// answer: SDPA's efficient backend on CUDA with Hkv < Hq) while declaring GQA: the probe
// reports the GQA mapping as not observable, with the refusal, and observes the rest.
class RefusesGqa final : public Adapter {
 public:
  std::string name() const override { return "eigen-refusing-gqa"; }
  std::string description() const override { return "eigen, refusing Hkv < Hq"; }
  Capabilities capabilities() const override { return inner_->capabilities(); }
  void attention(const AttentionArgs& args) override {
    if (args.kv_heads != args.q_heads) throw CaseRefused("no path for Hkv < Hq");
    inner_->attention(args);
  }

 private:
  std::unique_ptr<Adapter> inner_ = MakeAdapter("eigen");
};

TEST(Probe, RefusedCaseIsNotObservable) {
  RefusesGqa adapter;
  ASSERT_TRUE(adapter.capabilities().gqa);
  const ProbeReport report = Probe(adapter, 1);
  EXPECT_TRUE(report.fault.empty()) << ToText(report);
  EXPECT_TRUE(report.agrees()) << ToText(report);
  bool gqa_seen = false, masked_row_observed = false;
  for (const ProbeItem& item : report.items) {
    if (item.name.starts_with("GQA")) {
      gqa_seen = true;
      EXPECT_NE(item.observed.find("not observable: the kernel refused the probe's case: refused: no path for Hkv < Hq"),
                std::string::npos)
          << item.observed;
    }
    if (item.name == "masked-row output") masked_row_observed = item.observed == "zeros";
  }
  EXPECT_TRUE(gqa_seen) << ToText(report);
  EXPECT_TRUE(masked_row_observed) << ToText(report);  // the other groups are still observed
}

class ProbeCli : public test::ScratchDirTest {};

TEST_F(ProbeCli, ExitCodes) {
  EXPECT_EQ(Run("probe --adapter eigen --json p.json").code, 0);
  EXPECT_NE(test::ReadText(dir_ / "p.json").find("\"agrees\": true"), std::string::npos);
  const test::CliRun mutant = Run("probe --adapter mutant:gqa-tile-mapping");
  EXPECT_EQ(mutant.code, 1) << mutant.out;
  EXPECT_NE(mutant.out.find("CONTRADICTS"), std::string::npos) << mutant.out;
  test::ExpectOneErrorLine(Run("probe --adapter no-such-adapter"), "unknown adapter");
  EXPECT_EQ(Run("probe --adapter no-such-adapter").code, 2);
  EXPECT_EQ(Run("probe").code, 2);
  EXPECT_EQ(Run("probe --adapter fault:throw").code, 3);  // an adapter error, not a verdict
}

}  // namespace
}  // namespace attncheck
