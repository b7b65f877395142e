// `attncheck fuzz` and `attncheck merge` end to end: runs the built binary
// (ATTNCHECK_BINARY) in a temporary folder. Shards must cover exactly the cases
// of an unsharded run, a planted mutant must be found, shrunk, written (corpus,
// report, findings.jsonl) and replayable, Ctrl-C must leave what was found
// written, a campaign whose adapter cannot start must leave its folders as they
// were, merge must drop duplicate cases, and a bad --shard is one line, exit 2.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/corpus.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "tests/cli_support.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A mutant and the law made to catch it (adapters/mutants/mask_mutants.cc).
constexpr const char* kMutant = "mutant:causal-off-by-one";
constexpr const char* kMutantLaw = "non-interference";

using test::CliRun;
using test::Quoted;
using test::ReadText;

// Non-empty lines.
std::vector<std::string> Lines(const std::string& text) { return test::Lines(text, /*skip_empty=*/true); }

class FuzzCliTest : public test::ScratchDirTest {
 protected:
  std::string Command(const std::string& args) const { return test::AttncheckCommand(dir_, dir_, args); }

  // The sorted lines of a --trace file: "<hash> <g> <law> <adapter>" per checked case.
  std::vector<std::string> Trace(const std::string& name) const {
    std::vector<std::string> lines = Lines(ReadText(dir_ / name));
    std::sort(lines.begin(), lines.end());
    return lines;
  }
};

uint64_t G(const std::string& trace_line) {
  std::stringstream fields(trace_line);
  std::string hash;
  uint64_t g = 0;
  fields >> hash >> g;
  return g;
}

TEST_F(FuzzCliTest, FourShardsCoverExactlyTheUnshardedRun) {
  constexpr int kCases = 48;
  const std::string common = "fuzz --adapter eigen --cases " + std::to_string(kCases) +
                             " --seed 7 --quiet --shrink-seconds 0 --corpus corpus --report-dir reports";
  const CliRun whole = Run(common + " --jobs 2 --trace whole.txt");
  ASSERT_EQ(whole.code, 0) << whole.out << whole.err;
  const std::vector<std::string> expected = Trace("whole.txt");
  ASSERT_EQ(expected.size(), static_cast<size_t>(kCases)) << "one adapter: one checked case per g";
  std::set<uint64_t> all_g;
  for (const std::string& line : expected) all_g.insert(G(line));
  EXPECT_EQ(all_g.size(), static_cast<size_t>(kCases));
  EXPECT_EQ(*all_g.rbegin(), static_cast<uint64_t>(kCases - 1));

  // The four shards run at once, as a CI matrix would run them.
  std::string script = "cd " + Quoted(dir_.string()) + " || exit 1; ";
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    script += "{ " + Quoted(ATTNCHECK_BINARY) + " " + common + " --shard " + n + "/4 --trace shard" + n +
              ".txt >shard" + n + ".out 2>&1; echo $? >shard" + n + ".code; } & ";
  }
  script += "wait";
  ASSERT_EQ(std::system(script.c_str()), 0);
  std::vector<std::string> united;
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    ASSERT_EQ(ReadText(dir_ / ("shard" + n + ".code")), "0\n") << ReadText(dir_ / ("shard" + n + ".out"));
    const std::vector<std::string> lines = Trace("shard" + n + ".txt");
    EXPECT_EQ(lines.size(), static_cast<size_t>(kCases / 4)) << "shard " << i;
    for (const std::string& line : lines) {
      EXPECT_EQ(G(line) % 4, static_cast<uint64_t>(i)) << line;
      united.push_back(line);
    }
  }
  std::sort(united.begin(), united.end());
  EXPECT_EQ(united, expected);
}

TEST_F(FuzzCliTest, MutantIsFoundShrunkWrittenAndReplays) {
  const CliRun run = Run(std::string("fuzz --adapter ") + kMutant + " --law " + kMutantLaw +
                         " --time 3 --shrink-seconds 2 --max-findings 2 --jobs 2 --corpus corpus --report-dir reports");
  ASSERT_EQ(run.code, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("FAIL non-interference × mutant:causal-off-by-one"), std::string::npos) << run.out;

  const std::vector<std::string> findings = Lines(ReadText(dir_ / "reports" / "findings.jsonl"));
  ASSERT_GE(findings.size(), 1u);
  EXPECT_LE(findings.size(), 2u) << "--max-findings 2";
  std::set<std::string> hashes;
  for (const std::string& line : findings) {
    const nlohmann::json finding = nlohmann::json::parse(line);
    EXPECT_EQ(finding.at("law"), kMutantLaw);
    EXPECT_EQ(finding.at("adapter"), kMutant);
    EXPECT_EQ(finding.at("outcome"), "fail");
    EXPECT_TRUE(hashes.insert(finding.at("hash").get<std::string>()).second) << "findings are deduplicated";

    const fs::path corpus_file = dir_ / finding.at("corpus_file").get<std::string>();
    ASSERT_TRUE(fs::exists(corpus_file)) << corpus_file;
    // Shrunk: an off-by-one causal leak needs one row, one head and two tokens.
    const Case minimal = ReadCaseFile(corpus_file.string());
    EXPECT_LE(minimal.batch(), 2) << ToLine(minimal);
    EXPECT_LE(minimal.q_heads, 2) << ToLine(minimal);
    EXPECT_LE(minimal.key_len(), 8) << ToLine(minimal);
    EXPECT_GT(finding.at("shrink").at("accepted").get<int>(), 0) << ToLine(minimal);
    const CorpusMeta meta = ReadCorpusMeta(MetaPathFor(corpus_file.string()));
    EXPECT_EQ(meta.law, kMutantLaw);
    EXPECT_EQ(meta.adapters, std::vector<std::string>{kMutant});
    EXPECT_EQ(meta.expect, "fail");

    const fs::path report = dir_ / finding.at("report").get<std::string>();
    EXPECT_TRUE(fs::exists(report / "case.json")) << report;
    EXPECT_TRUE(fs::exists(report / "report.md")) << report;
    EXPECT_TRUE(fs::exists(report / "report.html")) << report;
    EXPECT_EQ(finding.at("classification"), "deterministic");

    // The saved case reproduces the failure from its sidecar alone.
    const CliRun replay = Run("replay " + Quoted(finding.at("corpus_file").get<std::string>()));
    EXPECT_EQ(replay.code, 1) << replay.out << replay.err;
    EXPECT_NE(replay.out.find("verdict:  fail"), std::string::npos) << replay.out;
  }
}

TEST_F(FuzzCliTest, InterruptStopsPromptlyWithFindingsWritten) {
  const std::string command = Command(std::string("fuzz --adapter ") + kMutant + " --law " + kMutantLaw +
                                      " --time 120 --jobs 2 --shrink-seconds 1 --max-findings 1000 "
                                      "--corpus corpus --report-dir reports");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for the first finding to be written (`exec` makes pid the attncheck process).
  const fs::path findings_file = dir_ / "reports" / "findings.jsonl";
  const Clock::time_point start = Clock::now();
  while (Lines(ReadText(findings_file)).empty() && Clock::now() - start < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(Lines(ReadText(findings_file)).empty()) << "no finding within 20 s";
  ASSERT_EQ(kill(pid, SIGINT), 0);
  const Clock::time_point interrupted = Clock::now();
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() - interrupted < std::chrono::seconds(15)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "still running 15 s after SIGINT";
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - interrupted).count();
  EXPECT_LT(seconds, 5.0) << "stops promptly";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << ReadText(dir_ / "stderr.txt");
  const std::string out = ReadText(dir_ / "stdout.txt");
  EXPECT_NE(out.find("interrupted"), std::string::npos) << out;
  // Every line is whole and names files that exist.
  const std::vector<std::string> findings = Lines(ReadText(findings_file));
  ASSERT_GE(findings.size(), 1u);
  for (const std::string& line : findings) {
    const nlohmann::json finding = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(finding.is_discarded()) << line;
    EXPECT_TRUE(fs::exists(dir_ / finding.at("corpus_file").get<std::string>()));
    EXPECT_TRUE(fs::exists(dir_ / finding.at("report").get<std::string>() / "case.json"));
  }
  EXPECT_NE(out.find(fmt::format("findings: {} ", findings.size())), std::string::npos) << out;
}

TEST_F(FuzzCliTest, MergeDropsDuplicateCasesAndUnitesAdapters) {
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  std::vector<Case> cases;
  for (uint64_t i = 0; cases.size() < 3; ++i) {
    RandomSource source(11, i);
    Case c = Decode(source, eigen->capabilities());
    bool fresh = true;
    for (const Case& other : cases) fresh = fresh && Hash(other) != Hash(c);
    if (fresh) cases.push_back(std::move(c));
  }
  const auto meta = [](std::string adapter) {
    CorpusMeta m;
    m.law = "non-interference";
    m.adapters = {std::move(adapter)};
    return m;
  };
  const std::string a = (dir_ / "a").string(), b = (dir_ / "b").string();
  WriteCorpusEntry(a, cases[0], meta("mutant:one"));
  WriteCorpusEntry(a, cases[1], meta("mutant:one"));
  WriteCorpusEntry(b, cases[0], meta("mutant:two"));
  WriteCorpusEntry(b, cases[2], meta("mutant:two"));

  const CliRun run = Run("merge out a b");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("4 entries read"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("1 duplicates dropped"), std::string::npos) << run.out;
  const std::vector<CorpusEntry> merged = ReadCorpus((dir_ / "out").string());
  ASSERT_EQ(merged.size(), 3u);
  std::map<uint64_t, std::vector<std::string>> adapters;
  for (const CorpusEntry& e : merged) adapters[Hash(e.c)] = e.meta.adapters;
  EXPECT_EQ(adapters[Hash(cases[0])], (std::vector<std::string>{"mutant:one", "mutant:two"}));
  EXPECT_EQ(adapters[Hash(cases[1])], std::vector<std::string>{"mutant:one"});
  EXPECT_EQ(adapters[Hash(cases[2])], std::vector<std::string>{"mutant:two"});

  // Merging again into the same folder changes nothing.
  const CliRun again = Run("merge out a b");
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_EQ(ReadCorpus((dir_ / "out").string()).size(), 3u);
}

// Every adapter is made and through its handshake before the corpus and report
// folders are touched (DESIGN §8): a campaign that cannot start leaves the last
// campaign's folders byte for byte, and creates none.
TEST_F(FuzzCliTest, ACampaignThatCannotStartLeavesItsFoldersUntouched) {
  const CliRun first = Run(std::string("fuzz --adapter ") + kMutant + " --law " + kMutantLaw +
                           " --cases 20 --shrink-seconds 1 --corpus corpus --report-dir reports");
  ASSERT_EQ(first.code, 1) << first.out << first.err;
  const std::map<std::string, std::string> reports = test::Snapshot(dir_ / "reports");
  const std::map<std::string, std::string> corpus = test::Snapshot(dir_ / "corpus");
  ASSERT_FALSE(Lines(ReadText(dir_ / "reports" / "findings.jsonl")).empty());
  ASSERT_FALSE(corpus.empty());
  const CliRun failed = Run("fuzz --adapter 'exec:false' --cases 3 --corpus corpus --report-dir reports");
  EXPECT_EQ(failed.code, 2) << failed.out << failed.err;
  test::ExpectOneErrorLine(failed);
  EXPECT_EQ(test::ChangedPaths(reports, test::Snapshot(dir_ / "reports")), std::vector<std::string>{});
  EXPECT_EQ(test::ChangedPaths(corpus, test::Snapshot(dir_ / "corpus")), std::vector<std::string>{});

  const CliRun fresh = Run("fuzz --adapter 'exec:false' --cases 3 --corpus new-corpus --report-dir new-reports");
  EXPECT_EQ(fresh.code, 2) << fresh.out << fresh.err;
  EXPECT_FALSE(fs::exists(dir_ / "new-corpus"));
  EXPECT_FALSE(fs::exists(dir_ / "new-reports"));
}

TEST_F(FuzzCliTest, BadShardIsOneLineAndExitTwo) {
  for (const std::string shard : {"4/4", "1/0", "x/4", "1/2/3"}) {
    const CliRun run = Run("fuzz --adapter eigen --cases 1 --shard " + Quoted(shard));
    EXPECT_EQ(run.code, 2) << shard << ": " << run.out << run.err;
    EXPECT_EQ(Lines(run.err).size(), 1u) << run.err;
    EXPECT_NE(run.err.find("--shard"), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(dir_ / "attncheck-corpus")) << "nothing runs on bad input";
  }
}

}  // namespace
}  // namespace attncheck
