// The gate's coverage check (reports/coverage.h): a pair that checked fewer than
// half its planned cases is under-covered, one that checked nothing is never a
// pass, `--min-coverage` fails the gate and `--cases 0` is a usage error.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/coverage.h"
#include "tests/cli_support.h"

#ifndef ATTNCHECK_EXAMPLE_PLUGIN_DIR
#error "ATTNCHECK_EXAMPLE_PLUGIN_DIR must name the folder of the example plugins"
#endif

namespace attncheck::test {
namespace {

class CoverageCli : public ScratchDirTest {
 protected:
  nlohmann::json Summary() { return nlohmann::json::parse(ReadText(dir_ / "r" / "summary.json")); }
};

TEST(Coverage, SkipsAreNotChecked) {
  LawResult r;
  r.planned_cases = 10;
  for (int i = 0; i < 4; ++i) r.Add(Verdict::Skip("no row packs two documents"));
  for (int i = 0; i < 6; ++i) r.Add(Verdict::Pass());
  EXPECT_EQ(CheckedCases(r), 6);
  EXPECT_DOUBLE_EQ(Coverage(r), 0.6);
  EXPECT_FALSE(UnderCovered(r));
  r.Add(Verdict::Skip("no row packs two documents"));
  r.planned_cases = 13;  // 6 of 13: under half
  EXPECT_TRUE(UnderCovered(r));
  EXPECT_EQ(CoverageCell(r), "46% under-covered");
}

// rope-relative on a kernel that leaves RoPE to the harness has nothing to draw
// (cases/law_needs.h): the pair is under-covered and --min-coverage names it.
TEST_F(CoverageCli, MinCoverageFailsTheGateNamingThePair) {
  const std::string adapter = std::string("plugin:") + ATTNCHECK_EXAMPLE_PLUGIN_DIR + "/libexample_plugin_no_rope.so";
  const CliRun plain = Run("gate --adapter " + Quoted(adapter) + " --law rope-relative --cases 50 --report-dir r");
  ASSERT_EQ(plain.code, 0) << plain.out << plain.err;
  const nlohmann::json pair = Summary()["results"][0];
  ASSERT_TRUE(pair["under_covered"].get<bool>()) << pair.dump();
  EXPECT_LT(pair["coverage"].get<double>(), 0.5);

  const CliRun gated =
      Run("gate --adapter " + Quoted(adapter) + " --law rope-relative --cases 50 --min-coverage 0.9 --report-dir r");
  EXPECT_EQ(gated.code, 1) << gated.out << gated.err;
  EXPECT_NE(gated.out.find("UNDER-COVERED rope-relative × plugin:"), std::string::npos) << gated.out;

  const CliRun met = Run("gate --adapter eigen --law packed-isolation --cases 20 --min-coverage 1 --report-dir r");
  EXPECT_EQ(met.code, 0) << met.out << met.err;
}

// rope-relative on a kernel that leaves RoPE to the harness is skipped once, with
// the reason (nothing to draw), and checks nothing.
TEST_F(CoverageCli, NothingCheckedIsNeverAPass) {
  const std::string adapter = std::string("plugin:") + ATTNCHECK_EXAMPLE_PLUGIN_DIR + "/libexample_plugin_no_rope.so";
  const CliRun run = Run("gate --adapter " + Quoted(adapter) + " --law rope-relative --cases 30 --report-dir r --junit j.xml");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  const nlohmann::json pair = Summary()["results"][0];
  EXPECT_EQ(pair["skipped"], 1) << pair.dump();
  EXPECT_EQ(pair["skip_reasons"].begin().key(), "adapter does not apply RoPE (the harness applies the reference)");
  EXPECT_EQ(pair["checked"], 0);
  EXPECT_EQ(pair["coverage"], 0.0);
  EXPECT_TRUE(pair["nothing_checked"].get<bool>());
  EXPECT_TRUE(pair["under_covered"].get<bool>());

  const std::string xml = ReadText(dir_ / "j.xml");
  EXPECT_NE(xml.find("<skipped message=\"nothing checked: "), std::string::npos) << xml;
  EXPECT_NE(xml.find("skipped=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<property name=\"under_covered\" value=\"true\"/>"), std::string::npos) << xml;

  EXPECT_NE(run.out.find("nothing checked"), std::string::npos) << run.out;
  const std::vector<std::string> lines = Lines(run.out, /*skip_empty=*/true);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().find("1 of 1 pairs checked nothing: rope-relative × "), 0u) << run.out;
  EXPECT_EQ(ReadText(dir_ / "r" / "index.html").find("every law held"), std::string::npos);
}

TEST_F(CoverageCli, ZeroCasesIsAUsageError) {
  const CliRun run = Run("gate --adapter eigen --cases 0 --report-dir r");
  EXPECT_EQ(run.code, 2) << run.out << run.err;
  EXPECT_EQ(Lines(run.err, true).size(), 1u) << run.err;
  EXPECT_NE(run.err.find("--cases"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir_ / "r" / "summary.json"));

  const CliRun bad = Run("gate --adapter eigen --cases 5 --min-coverage 1.5 --report-dir r");
  EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("--min-coverage"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace attncheck::test
