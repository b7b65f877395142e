// Failures grouped by cause (reports/failure_groups.h) and one vocabulary for
// gate and fuzz: a case several laws shrink to is one group and one folder,
// --max-reports bounds the folders, fuzz writes summary.json, index.html and
// --junit with the gate's writers, and --time / --time-budget name one option.
#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli_support.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

using test::CliRun;
using test::ReadText;

class FailureGroupsTest : public test::ScratchDirTest {
 protected:
  nlohmann::json Summary(const std::string& report_dir) {
    return nlohmann::json::parse(ReadText(dir_ / report_dir / "summary.json"));
  }
  // Folders directly in the report folder holding a case.json.
  size_t Folders(const std::string& report_dir) {
    size_t count = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_ / report_dir)) {
      count += fs::exists(entry.path() / "case.json") ? 1 : 0;
    }
    return count;
  }
};

// mutant:window-plus-one breaks several laws with one minimal case: one folder,
// and one group per signature (a signature names one law); every failure record
// points into a group.
TEST_F(FailureGroupsTest, LawsShrinkingToOneCaseShareOneFolder) {
  const CliRun gate = Run("gate --adapter mutant:window-plus-one --cases 40 --report-dir rep --quiet");
  ASSERT_EQ(gate.code, 1) << gate.out << gate.err;
  const nlohmann::json summary = Summary("rep");
  const nlohmann::json& groups = summary["groups"];
  ASSERT_FALSE(groups.empty());
  std::set<std::string> group_files, laws;
  for (const nlohmann::json& g : groups) {
    EXPECT_EQ(g["laws"].size(), 1u) << "a signature names its law";
    EXPECT_FALSE(g["signature"].get<std::string>().empty());
    laws.insert(g["laws"][0].get<std::string>());
    group_files.insert(g["case_file"].get<std::string>());
  }
  EXPECT_GE(laws.size(), 2u) << groups.dump(1);
  EXPECT_LT(group_files.size(), groups.size()) << "one case breaks several laws: its folder serves their groups";
  EXPECT_EQ(Folders("rep"), group_files.size());
  for (const nlohmann::json& r : summary["results"]) {
    EXPECT_LE(r["failures"].size(), 3u) << r["law"];
    for (const nlohmann::json& f : r["failures"]) EXPECT_TRUE(group_files.contains(f["case_file"])) << f.dump();
  }
  const std::string index = ReadText(dir_ / "rep" / "index.html");
  EXPECT_LT(index.find("<table class=\"matrix\">"), index.find("<h3 id=\"g1\">")) << "the matrix comes first";
  EXPECT_NE(index.find("class=\"m-fail\""), std::string::npos);
  EXPECT_NE(index.find("<a href=\"#g1\">g1</a>"), std::string::npos);
}

// --max-reports bounds the folders of the whole run (run.json lists just those);
// the failures past it are counted.
TEST_F(FailureGroupsTest, MaxReportsBoundsTheFoldersWritten) {
  const CliRun gate = Run("gate --adapter 'mutant:*' --law non-interference --cases 20 --max-reports 2 "
                          "--no-shrink --report-dir rep --quiet");
  ASSERT_EQ(gate.code, 1) << gate.out << gate.err;
  EXPECT_EQ(Folders("rep"), 2u);
  const nlohmann::json summary = Summary("rep");
  EXPECT_EQ(summary["groups"].size(), 2u);
  int unreported = 0;
  for (const nlohmann::json& r : summary["results"]) unreported += r["unreported_failures"].get<int>();
  EXPECT_GT(unreported, 0);
  const nlohmann::json run = nlohmann::json::parse(ReadText(dir_ / "rep" / "run.json"));
  EXPECT_EQ(run["failure_folders"].size(), 2u);
  EXPECT_EQ(Run("gate --adapter reference --cases 1 --max-reports -1").code, 2);
}

// Every mutant on every law: at most 3 records per pair, one folder per distinct
// case, no more than the default 100 folders (main wrote one per failure, up
// to 20 per pair), and no more groups (signatures) than records.
TEST_F(FailureGroupsTest, AllMutantsWriteOneFolderPerDistinctCase) {
  const CliRun gate = Run("gate --adapter 'mutant:*' --cases 8 --shrink-seconds 0.2 --report-dir rep --quiet");
  ASSERT_EQ(gate.code, 1) << gate.out << gate.err;
  const nlohmann::json summary = Summary("rep");
  size_t records = 0;
  for (const nlohmann::json& r : summary["results"]) records += r["failures"].size();
  EXPECT_LE(summary["groups"].size(), records);
  EXPECT_LE(Folders("rep"), 100u);
  EXPECT_LT(Folders("rep"), records) << "some cases break several pairs";
}

// fuzz closes a run as gate does: summary.json (with groups), index.html and --junit.
TEST_F(FailureGroupsTest, FuzzWritesTheGatesSummaryIndexAndJunit) {
  const CliRun fuzz = Run("fuzz --adapter mutant:causal-off-by-one --adapter eigen --law non-interference "
                          "--cases 12 --shrink-seconds 0.5 --corpus corpus --report-dir rep --junit j.xml --json s.json");
  ASSERT_EQ(fuzz.code, 1) << fuzz.out << fuzz.err;
  const nlohmann::json summary = Summary("rep");
  EXPECT_EQ(nlohmann::json::parse(ReadText(dir_ / "s.json")), summary);
  ASSERT_EQ(summary["results"].size(), 2u);
  EXPECT_EQ(summary["results"][0]["adapter"], "mutant:causal-off-by-one");
  EXPECT_EQ(summary["results"][0]["cases"], 12);
  EXPECT_GT(summary["results"][0]["failed"], 0);
  EXPECT_EQ(summary["results"][1]["failed"], 0);
  ASSERT_FALSE(summary["groups"].empty());
  EXPECT_TRUE(fs::exists(dir_ / summary["groups"][0]["case_file"].get<std::string>()));
  EXPECT_NE(ReadText(dir_ / "rep" / "index.html").find("<table class=\"matrix\">"), std::string::npos);
  const std::string junit = ReadText(dir_ / "j.xml");
  EXPECT_NE(junit.find("<testcase classname=\"non-interference\" name=\"mutant:causal-off-by-one\""),
            std::string::npos);
  EXPECT_NE(junit.find("<failure "), std::string::npos);
}

// One name for the wall-clock budget: --time-budget on both, --time kept as an alias.
TEST_F(FailureGroupsTest, TimeBudgetIsOneOptionOnGateAndFuzz) {
  for (const std::string flag : {"--time-budget", "--time"}) {
    EXPECT_EQ(Run("gate --adapter reference --law gqa --cases 3 --quiet " + flag + " 30").code, 0) << flag;
    const CliRun fuzz = Run("fuzz --adapter reference --law gqa --quiet --report-dir f " + flag + " 0.5");
    EXPECT_EQ(fuzz.code, 0) << flag << fuzz.out << fuzz.err;
    EXPECT_GT(Summary("f")["results"][0]["cases"].get<int>(), 0) << flag;
  }
  for (const std::string command : {"gate", "fuzz"}) {
    const CliRun help = Run(command + " --help");
    EXPECT_NE(help.out.find("--time-budget"), std::string::npos) << command;
    EXPECT_NE(help.out.find("--time is the"), std::string::npos) << command << help.out;
  }
}

}  // namespace
}  // namespace attncheck
