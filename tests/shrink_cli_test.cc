// `attncheck shrink` and the gate's shrinking end to end: runs the built binary
// (ATTNCHECK_BINARY) in a temporary folder and checks exit codes (1 still fails,
// 0 nothing to shrink, 2 bad input), what is written (minimal case, corpus entry
// with sidecar) and that the gate's reports carry both the found and the shrunk case.
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cases/case_json.h"
#include "cases/corpus.h"
#include "tests/cli_support.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMutant = "mutant:causal-off-by-one";

using test::CliRun;
using test::ReadText;

class ShrinkCli : public test::ScratchDirTest {
 protected:

  // The first non-interference failure of the mutant, as the gate wrote it (unshrunk).
  std::string FoundCase() {
    const CliRun gate = Run(std::string("gate --adapter ") + kMutant +
                            " --law non-interference --cases 100 --no-shrink --report-dir found -q");
    EXPECT_EQ(gate.code, 1) << gate.out << gate.err;
    const nlohmann::json summary = nlohmann::json::parse(ReadText(dir_ / "found" / "summary.json"));
    return summary["results"][0]["failures"][0]["case_file"].get<std::string>();
  }
};

TEST_F(ShrinkCli, ShrinksAFailureAndWritesACorpusEntry) {
  const std::string found = FoundCase();
  const Case before = ReadCaseFile((dir_ / found).string());
  // Law and adapter come from the report's meta.json.
  const CliRun run = Run("shrink " + found + " --out corpus --note 'from the test'");
  ASSERT_EQ(run.code, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("before:"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("after:"), std::string::npos) << run.out;
  const std::vector<CorpusEntry> entries = ReadCorpus((dir_ / "corpus").string());
  ASSERT_EQ(entries.size(), 1u);
  const CorpusEntry& entry = entries.front();
  EXPECT_EQ(entry.meta.law, "non-interference");
  EXPECT_EQ(entry.meta.adapters, std::vector<std::string>{kMutant});
  EXPECT_EQ(entry.meta.expect, "fail");
  EXPECT_EQ(entry.meta.note, "from the test");
  EXPECT_LT(entry.c.key_len() * entry.c.q_heads * entry.c.batch(), before.key_len() * before.q_heads * before.batch());
  EXPECT_LE(entry.c.key_len(), 8);
  // The entry replays from its sidecar and still fails.
  const CliRun replay = Run("replay " + fs::relative(entry.case_file, dir_).string());
  EXPECT_EQ(replay.code, 1) << replay.out << replay.err;
}

TEST_F(ShrinkCli, WithoutOutWritesTheMinimalCaseHere) {
  const std::string found = FoundCase();
  const CliRun run = Run("shrink " + found + std::string(" --law non-interference --adapter ") + kMutant);
  ASSERT_EQ(run.code, 1) << run.out << run.err;
  const size_t at = run.out.find("written: ");
  ASSERT_NE(at, std::string::npos) << run.out;
  const std::string written = run.out.substr(at + 9, run.out.find('\n', at) - at - 9);
  EXPECT_TRUE(written.starts_with("non-interference-")) << written;
  EXPECT_NO_THROW(ReadCaseFile((dir_ / written).string()));
}

TEST_F(ShrinkCli, NothingToShrinkWhenTheCaseHolds) {
  const std::string found = FoundCase();
  // The same case on the correct kernel: the law holds, exit 0.
  const CliRun run = Run("shrink " + found + " --law non-interference --adapter eigen");
  EXPECT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("nothing to shrink"), std::string::npos) << run.out;
}

TEST_F(ShrinkCli, BadInputIsOneLineAndExitTwo) {
  for (const std::string& args : {std::string("shrink missing.json --law gqa --adapter eigen"),
                                  std::string("shrink missing.json")}) {
    const CliRun run = Run(args);
    EXPECT_EQ(run.code, 2) << args << "\n" << run.out << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
  const std::string found = FoundCase();
  const CliRun keep = Run("shrink " + found + " --keep bogus");
  EXPECT_EQ(keep.code, 2) << keep.out << keep.err;
  EXPECT_NE(keep.err.find("--keep"), std::string::npos) << keep.err;
  fs::copy_file(dir_ / found, dir_ / "bare.json");  // no meta.json beside it
  const CliRun bare = Run("shrink bare.json");
  EXPECT_EQ(bare.code, 2) << bare.out << bare.err;
  EXPECT_NE(bare.err.find("--law"), std::string::npos) << bare.err;
}

TEST_F(ShrinkCli, KeepPinsAField) {
  const std::string found = FoundCase();
  const Case before = ReadCaseFile((dir_ / found).string());
  const CliRun run = Run("shrink " + found + " --keep heads --keep data --out corpus");
  ASSERT_EQ(run.code, 1) << run.out << run.err;
  const std::vector<CorpusEntry> entries = ReadCorpus((dir_ / "corpus").string());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].c.q_heads, before.q_heads);
  EXPECT_EQ(entries[0].c.kv_heads, before.kv_heads);
  EXPECT_EQ(entries[0].c.seed, before.seed);
  EXPECT_EQ(entries[0].c.profile, before.profile);
}

// The gate shrinks the failures it reports (the first 3 per pair) and says so in
// the report, meta.json and the summary; --no-shrink writes them as found.
// Later failures are only counted; one that shrinks to a case already written
// shares its folder (one group, reports/failure_groups.h).
TEST_F(ShrinkCli, GateReportsTheFoundAndTheShrunkCase) {
  const CliRun gate = Run(std::string("gate --adapter ") + kMutant + " --law non-interference --cases 100 --report-dir rep");
  ASSERT_EQ(gate.code, 1) << gate.out << gate.err;
  EXPECT_NE(gate.out.find("found:  Case("), std::string::npos) << gate.out;
  EXPECT_NE(gate.out.find("shrunk: Case("), std::string::npos) << gate.out;
  const nlohmann::json summary = nlohmann::json::parse(ReadText(dir_ / "rep" / "summary.json"));
  const nlohmann::json& failures = summary["results"][0]["failures"];
  ASSERT_EQ(failures.size(), 3u) << "the first 3 are reported";
  EXPECT_GT(summary["results"][0]["unreported_failures"].get<int>(), 0) << "need more failures than those 3";
  EXPECT_TRUE(failures[0].contains("found_case") && failures[0].contains("shrunk_case")) << failures[0].dump();
  for (const nlohmann::json& f : failures) {
    const fs::path folder = (dir_ / f["case_file"].get<std::string>()).parent_path();
    const nlohmann::json meta = nlohmann::json::parse(ReadText(folder / "meta.json"));
    const Case written = ReadCaseFile((dir_ / f["case_file"].get<std::string>()).string());
    if (!f.contains("shrunk_case")) continue;
    EXPECT_EQ(ToLine(written), f["shrunk_case"]) << "the folder holds the case it shrank to";
    ASSERT_TRUE(meta.contains("shrunk_from")) << meta.dump();
    EXPECT_LE(written.key_len(), FromJson(meta["shrunk_from"]).key_len());
    EXPECT_NE(ReadText(folder / "report.md").find("Shrunk from"), std::string::npos);
  }
  const CliRun plain = Run(std::string("gate --adapter ") + kMutant +
                           " --law non-interference --cases 100 --no-shrink --report-dir plain -q");
  ASSERT_EQ(plain.code, 1);
  const nlohmann::json plain_summary = nlohmann::json::parse(ReadText(dir_ / "plain" / "summary.json"));
  EXPECT_FALSE(plain_summary["results"][0]["failures"][0].contains("shrunk_case"));
}

}  // namespace
}  // namespace attncheck
