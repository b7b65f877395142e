// A gate run owns what it lists in <report-dir>/run.json: the next run into the
// same folder removes exactly that first, so a passing run never sits beside an
// earlier run's failures; a user's own files stay, and failure folders no run.json
// lists (an older attncheck's) stay too, with a warning.
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli_support.h"

namespace attncheck::test {
namespace {

class ReportDirTest : public ScratchDirTest {
 protected:
  // Folders directly in `report` holding a case.json.
  int FailureFolders(const fs::path& report) {
    int count = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(report)) {
      if (entry.is_directory() && fs::exists(entry.path() / "case.json")) ++count;
    }
    return count;
  }

  static constexpr const char* kFailingGate =
      "gate --adapter mutant:causal-off-by-one --law non-interference --cases 50 --no-shrink --quiet --report-dir report";
  static constexpr const char* kPassingGate =
      "gate --adapter eigen --law non-interference --cases 20 --quiet --report-dir report";
};

TEST_F(ReportDirTest, APassingRunRemovesThePreviousRunsFailuresAndKeepsTheUsersFiles) {
  ASSERT_EQ(Run(kFailingGate).code, 1);
  const fs::path report = dir_ / "report";
  const int failed_folders = FailureFolders(report);
  ASSERT_GT(failed_folders, 0);
  ASSERT_TRUE(fs::exists(report / "findings.jsonl"));
  const nlohmann::json manifest = nlohmann::json::parse(ReadText(report / "run.json"));
  EXPECT_EQ(static_cast<int>(manifest["failure_folders"].size()), failed_folders);
  { std::ofstream(report / "notes.txt") << "mine\n"; }

  const CliRun passing = Run(kPassingGate);
  ASSERT_EQ(passing.code, 0) << passing.out << passing.err;
  EXPECT_EQ(FailureFolders(report), 0);
  EXPECT_FALSE(fs::exists(report / "findings.jsonl"));
  const nlohmann::json summary = nlohmann::json::parse(ReadText(report / "summary.json"));
  ASSERT_EQ(summary["results"].size(), 1u);
  EXPECT_EQ(summary["results"][0]["failed"], 0);
  EXPECT_EQ(ReadText(report / "notes.txt"), "mine\n");
  EXPECT_NE(passing.err.find(fmt::format("removed the previous run's {} failure folders and findings.jsonl, "
                                         "index.html, summary.json",
                                         failed_folders)),
            std::string::npos)
      << passing.err;
  EXPECT_EQ(passing.err.find("warning"), std::string::npos) << passing.err;
  const nlohmann::json owned = nlohmann::json::parse(ReadText(report / "run.json"));
  EXPECT_TRUE(owned["failure_folders"].empty());
  EXPECT_EQ(owned["files"], nlohmann::json({"index.html", "summary.json"}));
}

TEST_F(ReportDirTest, FailureFoldersWithoutRunJsonAreLeftWithAWarning) {
  ASSERT_EQ(Run(kFailingGate).code, 1);
  const fs::path report = dir_ / "report";
  const int failed_folders = FailureFolders(report);
  ASSERT_GT(failed_folders, 0);
  fs::remove(report / "run.json");  // as an older attncheck left the folder

  const CliRun passing = Run(kPassingGate);
  ASSERT_EQ(passing.code, 0) << passing.out << passing.err;
  EXPECT_EQ(FailureFolders(report), failed_folders);
  const std::vector<std::string> lines = Lines(passing.err, /*skip_empty=*/true);
  ASSERT_EQ(lines.size(), 1u) << passing.err;
  EXPECT_NE(lines[0].find(fmt::format("warning: report folder report holds {} failure folders", failed_folders)),
            std::string::npos)
      << lines[0];
}

TEST_F(ReportDirTest, ARunJsonNamingAPathOutsideTheFolderIsExit2) {
  fs::create_directories(dir_ / "report");
  { std::ofstream(dir_ / "keep.txt") << "x\n"; }
  { std::ofstream(dir_ / "report" / "run.json") << R"({"failure_folders": ["../keep.txt"], "files": []})"; }
  const CliRun run = Run(kPassingGate);
  EXPECT_EQ(run.code, 2);
  EXPECT_TRUE(fs::exists(dir_ / "keep.txt"));
  EXPECT_NE(run.err.find("failure_folders"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace attncheck::test
