// Findings a team can act on: one bug is one signature (properties/signature.h).
// A campaign keeps one finding per signature and runs for its whole budget; the
// shrinker reaches one canonical case (coupled fields, normal form); a planted
// batch-row mask bug gives one group per law and an index line naming what every
// failure shares; the masked-rows report draws a read by a row with no visible
// key as a leak with its real error; a bitwise bound prints as "bitwise".
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "properties/laws.h"
#include "properties/shrink_failure.h"
#include "properties/signature.h"
#include "reports/enrich.h"
#include "reports/html.h"
#include "reports/summary.h"
#include "tests/cli_support.h"
#include "tests/example_plugins.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class SignatureCli : public test::ScratchDirTest {};

// ---- the worst element's one printed form ----

TEST(WorstElementForm, ErrorIsMeasuredAndBitwiseBoundsPrintAsWords) {
  const WorstElement e = WorstElement::Compared("out", 1, 0, 2, 3, 0.619, 0.0, 0.0);
  EXPECT_DOUBLE_EQ(e.error, 0.619);  // never 0 for got 0.619, want 0
  EXPECT_EQ(fmt::format("{}", e), "out[b=1, h=0, i=2, d=3] got 0.619 want 0 error 0.619 bound bitwise");
  EXPECT_TRUE(std::isinf(WorstElement::Compared("out", 0, 0, 0, 0, std::nan(""), 1.0, 0.0).error));
  EXPECT_EQ(BoundText(2 * std::numeric_limits<double>::min()), "bitwise");  // the collapsed floor, k = 2
  EXPECT_EQ(BoundText(1e-3), "0.001");
  // The gate table's "worst error / bound" cell.
  RunSummary summary;
  LawResult r;
  r.law = "left-padding";
  r.adapter = "eigen";
  Verdict pass;
  pass.worst = WorstElement::Compared("out", 0, 0, 0, 0, 1.0, 1.0, 2 * std::numeric_limits<double>::min());
  r.Add(pass);
  summary.results.push_back(r);
  const std::string table = SummaryTable(summary);
  EXPECT_NE(table.find("0 / bitwise"), std::string::npos) << table;
  EXPECT_EQ(table.find("e-308"), std::string::npos) << table;
}

// ---- fuzz: one finding per signature, the whole budget ----

TEST_F(SignatureCli, FuzzKeepsOneFindingPerSignatureForItsWholeBudget) {
  const Clock::time_point start = Clock::now();
  const test::CliRun run = Run("fuzz --adapter mutant:softmax-finite-sentinel --time-budget 4 --seed 1 "
                               "--report-dir reports --corpus corpus");
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(run.code, 1) << run.out << run.err;
  EXPECT_GE(seconds, 3.5) << run.out;  // not stopped by --max-findings
  EXPECT_EQ(run.out.find("--max-findings"), std::string::npos) << run.out;
  const std::vector<std::string> findings = test::Lines(test::ReadText(dir_ / "reports/findings.jsonl"), true);
  EXPECT_GE(findings.size(), 1u);
  EXPECT_LE(findings.size(), 3u) << run.out;
  int counted = 0;
  for (const std::string& line : findings) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_FALSE(j.at("signature").get<std::string>().empty());
  }
  const nlohmann::json summary = nlohmann::json::parse(test::ReadText(dir_ / "reports/summary.json"));
  for (const nlohmann::json& group : summary.at("groups")) counted += 1 + group.at("repeats").get<int>();
  EXPECT_GT(counted, static_cast<int>(findings.size())) << "the repeats of each signature are counted";
  EXPECT_NE(run.out.find("signatures:"), std::string::npos) << run.out;
}

// decode-consistency says "history" only when one call answered differently
// before and after other calls: a stateless mutant's failures are never history,
// the stateful one's are.
TEST_F(SignatureCli, HistoryOnlyForStateAcrossCalls) {
  const test::CliRun run = Run("fuzz --adapter mutant:dynamic-ntk-step-length --adapter mutant:dynamic-ntk-sticky "
                               "--law decode-consistency --time-budget 3 --shrink-seconds 0.5 --seed 2 "
                               "--report-dir reports --corpus corpus");
  ASSERT_EQ(run.code, 1) << run.out << run.err;
  std::map<std::string, std::vector<std::string>> roles;  // adapter → role of each finding
  for (const std::string& line : test::Lines(test::ReadText(dir_ / "reports/findings.jsonl"), true)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    roles[j.at("adapter").get<std::string>()].push_back(j.at("signature").get<std::string>());
  }
  ASSERT_FALSE(roles["mutant:dynamic-ntk-step-length"].empty()) << run.out;
  for (const std::string& s : roles["mutant:dynamic-ntk-step-length"])
    EXPECT_EQ(s.find("| history |"), std::string::npos) << s;
  ASSERT_FALSE(roles["mutant:dynamic-ntk-sticky"].empty()) << run.out;
  bool history = false;
  for (const std::string& s : roles["mutant:dynamic-ntk-sticky"]) history |= s.find("| history |") != std::string::npos;
  EXPECT_TRUE(history) << run.out;
}

// ---- the shrinker ----

// The off-by-one example plugin's causal flag lets query i see one key too many.
// Tq = 41 over Tk = 2 keys: 39 leading queries, positions from 39.
Case LeadingQueriesCase(uint64_t seed, int heads) {
  Case c;
  c.rows = {RowSpec{.documents = {2}, .position_offset = 39}};
  c.query_len = 41;
  c.q_heads = c.kv_heads = heads;
  c.head_dim = c.value_dim = 8;
  c.mask = MaskConvention::kCausalBottomRight;
  c.seed = seed;
  return c;
}

TEST(CanonicalShrink, CoupledLeadingQueriesReachTwoQueries) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(test::PluginName("example_plugin_off_by_one"));
  const Law& law = *FindLaw("non-interference");
  const Case found = LeadingQueriesCase(5, 1);
  const Verdict v = RunLaw(law, *adapter, found, Options{});
  ASSERT_TRUE(v.failed()) << v.message << "\n" << ToLine(found);
  const ShrunkFailure shrunk = ShrinkFailure(law, *adapter, found, v, Options{});
  EXPECT_LE(shrunk.shrink.minimal.query_len, 2) << ToLine(shrunk.shrink.minimal);
  EXPECT_EQ(SignatureOf(law.name, shrunk.shrink.minimal, shrunk.verdict), SignatureOf(law.name, found, v));
}

TEST(CanonicalShrink, TwoFindingsOfOneBugMeet) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(test::PluginName("example_plugin_off_by_one"));
  const Law& law = *FindLaw("non-interference");
  const Case a = LeadingQueriesCase(5, 1), b = LeadingQueriesCase(77, 2);
  const Verdict va = RunLaw(law, *adapter, a, Options{}), vb = RunLaw(law, *adapter, b, Options{});
  ASSERT_TRUE(va.failed() && vb.failed());
  const Case ma = ShrinkFailure(law, *adapter, a, va, Options{}).shrink.minimal;
  const Case mb = ShrinkFailure(law, *adapter, b, vb, Options{}).shrink.minimal;
  EXPECT_EQ(ToLine(ma), ToLine(mb));
  EXPECT_EQ(ma.seed, 0u);
  EXPECT_EQ(ma.q_heads, 1);
}

// ---- the planted batch-row mask bug ----

// A bool-visible mask read from batch row 0 for every batch row.
TEST_F(SignatureCli, BatchRowMaskBugIsOneGroupPerLawAndNamedOnTheIndex) {
  const std::string plugin = test::PluginName("example_plugin_mask_row0");
  const test::CliRun run =
      Run("gate --adapter " + test::Quoted(plugin) + " --cases 40 --seed 3 --report-dir reports --quiet");
  ASSERT_EQ(run.code, 1) << run.out << run.err;
  const nlohmann::json summary = nlohmann::json::parse(test::ReadText(dir_ / "reports/summary.json"));
  std::map<std::string, int> groups_per_law;
  for (const nlohmann::json& group : summary.at("groups"))
    for (const nlohmann::json& law : group.at("laws")) ++groups_per_law[law.get<std::string>()];
  ASSERT_FALSE(groups_per_law.empty());
  for (const auto& [law, groups] : groups_per_law) EXPECT_EQ(groups, 1) << law;
  const std::string index = test::ReadText(dir_ / "reports/index.html");
  EXPECT_NE(index.find("every failure: mask=bool-visible, batch row 1"), std::string::npos) << index.substr(0, 2000);
}

// The masked-rows report: the pad row (no visible key) reads row 0's keys.
TEST(MaskedRowsEvidence, ReadByRowWithNoVisibleKeyIsARedLeakWithItsError) {
  const std::string plugin = test::PluginName("example_plugin_mask_row0");
  const std::unique_ptr<Adapter> adapter = MakeAdapter(plugin);
  Case c;
  c.rows = {RowSpec{.documents = {4}}};
  c.query_len = 4;
  c.head_dim = c.value_dim = 4;
  c.mask = MaskConvention::kBoolVisible;
  FailureReport report;
  report.law = "masked-rows";
  report.adapter = plugin;
  report.c = c;
  report.verdict = RunLaw(*FindLaw("masked-rows"), *adapter, c, Options{});
  ASSERT_TRUE(report.verdict.failed()) << report.verdict.message;
  const WorstElement& w = report.verdict.worst;
  EXPECT_EQ(report.verdict.role, Role::kEmptyRowRead) << report.verdict.message;
  EXPECT_EQ(w.b, 1);
  EXPECT_GE(w.key, 0);
  EXPECT_GT(w.error, 0.0);
  EXPECT_DOUBLE_EQ(w.error, std::abs(w.got - w.want));
  EnrichFailure(report, *adapter, *FindLaw("masked-rows"));
  const std::string html = HtmlReport(report, "unused");
  EXPECT_NE(html.find("class=\"leak\""), std::string::npos);
  EXPECT_EQ(html.find("<b>0 leaking cells</b>"), std::string::npos);
  EXPECT_EQ(html.find("in the numbers, not in the mask"), std::string::npos);
  EXPECT_NE(html.find("empty-row-read"), std::string::npos);  // the signature line
}

}  // namespace
}  // namespace attncheck
