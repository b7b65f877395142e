// One vocabulary on the command line: bad seeds and unknown names are one line
// with a did-you-mean, --skip-law, the gate's --max-* limits, replay of a corpus
// folder and `list --adapter X --json`, run through the built binary.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cases/case_json.h"
#include "cases/corpus.h"
#include "cases/decode.h"
#include "cases/did_you_mean.h"
#include "cases/random_source.h"
#include "adapters/registry.h"
#include "properties/laws.h"
#include "tests/cli_support.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

using test::CliRun;
using test::Lines;
using test::Quoted;
using test::ReadText;

class CliVocabularyTest : public test::ScratchDirTest {};

// Exit 2 with one line "attncheck: …" on stderr, nothing on stdout.
void ExpectUsageLine(const CliRun& run, const std::string& args) {
  EXPECT_EQ(run.code, 2) << args << "\n" << run.out << run.err;
  test::ExpectOneErrorLine(run, args);
  EXPECT_EQ(run.out, "") << args;
}

TEST(DidYouMean, ClosestNameWithinReach) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("gqa", "gqa"), 0u);
  EXPECT_EQ(EditDistance("tiled-f61", "tiled-f16"), 1u);  // a swap of adjacent characters is one edit
  EXPECT_EQ(EditDistance("ab", "ba"), 1u);
  EXPECT_EQ(ClosestName("tiled-f61", {"tiled-f32", "tiled-f16", "tiled-bf16"}), "tiled-f16");
  const std::vector<std::string> laws = {"gqa", "non-interference", "masked-rows"};
  EXPECT_EQ(ClosestName("non-interferance", laws), "non-interference");
  EXPECT_EQ(ClosestName("gaq", laws), "gqa");
  EXPECT_EQ(ClosestName("zzzzzzzz", laws), "");
  EXPECT_EQ(UnknownName("law", "gaq", laws), "unknown law 'gaq'; did you mean 'gqa'? (attncheck list shows all)");
  EXPECT_EQ(UnknownName("law", "zzzzzzzz", laws), "unknown law 'zzzzzzzz' (attncheck list shows all)");
}

TEST_F(CliVocabularyTest, BadSeedIsOneLineOnEverySubcommandTakingIt) {
  for (const std::string command : {"gate --adapter reference --cases 1", "fuzz --adapter reference --cases 1",
                                    "bench --adapter reference --cases 1"}) {
    for (const std::string seed : {"-1", "99999999999999999999999", "abc", "18446744073709551616"}) {
      const std::string args = command + " --seed " + Quoted(seed);
      const CliRun run = Run(args);
      ExpectUsageLine(run, args);
      EXPECT_NE(run.err.find("--seed"), std::string::npos) << args << "\n" << run.err;
    }
  }
  EXPECT_FALSE(fs::exists(dir_ / "attncheck-report")) << "nothing runs on a bad seed";
  const CliRun largest = Run("gate --adapter reference --cases 1 --law gqa --seed 18446744073709551615 --json s.json");
  EXPECT_EQ(largest.code, 0) << largest.err;
  EXPECT_EQ(nlohmann::json::parse(ReadText(dir_ / "s.json"))["seed"], 18446744073709551615ull);
}

TEST_F(CliVocabularyTest, UnknownNamesAreOneLineWithTheClosestName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gate --law non-interferance", "unknown law 'non-interferance'; did you mean 'non-interference'?"},
      {"fuzz --skip-law gaq --cases 1", "--skip-law: unknown law 'gaq'; did you mean 'gqa'?"},
      {"gate --adapter tiled-bf61", "unknown adapter 'tiled-bf61'; did you mean 'tiled-bf16'?"},
      {"replay x.json --adapter eigne", "unknown adapter 'eigne'; did you mean 'eigen'?"},
      {"gatee --cases 1", "unknown subcommand 'gatee'; did you mean 'gate'? (attncheck --help shows all)"},
      {"gate --sed 3", "gate: unknown option '--sed'; did you mean '--seed'? (attncheck gate --help shows all)"},
      {"bench --max-token 3", "unknown option '--max-token'; did you mean '--max-tokens'?"},
      {"gate --adapter zzzzzzzzzz", "unknown adapter 'zzzzzzzzzz' (attncheck list shows all)"},
      {"gate extra", "gate: unexpected argument 'extra' (see attncheck gate --help)"},
      {"--bogus", "unknown option '--bogus' (attncheck --help shows all)"},
  };
  for (const auto& [args, expected] : cases) {
    const CliRun run = Run(args);
    ExpectUsageLine(run, args);
    EXPECT_NE(run.err.find(expected), std::string::npos) << args << "\n" << run.err;
    EXPECT_LT(run.err.size(), 200u) << "no list of every name: " << run.err;
  }
}

TEST_F(CliVocabularyTest, SkipLawLeavesTheLawOutOfGateFuzzAndBench) {
  const CliRun gate = Run("gate --adapter reference --cases 2 --skip-law 'non-*' --skip-law gqa --json g.json");
  ASSERT_EQ(gate.code, 0) << gate.err;
  std::vector<std::string> checked;
  const nlohmann::json summary = nlohmann::json::parse(ReadText(dir_ / "g.json"));
  for (const nlohmann::json& r : summary["results"]) {
    checked.push_back(r["law"].get<std::string>());
  }
  std::vector<std::string> expected;
  for (const Law& law : AllLaws()) {
    if (law.name != "gqa" && !law.name.starts_with("non-")) expected.emplace_back(law.name);
  }
  EXPECT_EQ(checked, expected);
  EXPECT_LT(expected.size(), AllLaws().size() - 1);

  const CliRun fuzz = Run("fuzz --adapter reference --cases 40 --skip-law gqa --trace t.txt --quiet");
  ASSERT_EQ(fuzz.code, 0) << fuzz.err;
  const std::string trace = ReadText(dir_ / "t.txt");
  EXPECT_NE(trace.find("non-interference"), std::string::npos) << trace;
  EXPECT_EQ(trace.find("gqa"), std::string::npos) << trace;

  const CliRun bench = Run("bench --adapter reference --cases 2 --law 'gqa' --law masked-rows --skip-law gqa");
  ASSERT_EQ(bench.code, 0) << bench.err;
  EXPECT_NE(bench.out.find("\nmasked-rows "), std::string::npos) << bench.out;
  EXPECT_EQ(bench.out.find("\ngqa "), std::string::npos) << bench.out;

  ExpectUsageLine(Run("gate --adapter reference --law gqa --skip-law gqa"), "skip every chosen law");
}

// Every case.json under `dir` (report folders), read back.
std::vector<Case> ReportedCases(const fs::path& dir) {
  std::vector<Case> cases;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename() == "case.json") cases.push_back(ReadCaseFile(e.path().string()));
  }
  return cases;
}

TEST_F(CliVocabularyTest, GateMaxLimitsNarrowTheCasesDrawn) {
  const std::string run = "gate --adapter mutant:causal-off-by-one --law non-interference --cases 40 --no-shrink";
  const CliRun wide = Run(run + " --report-dir wide");
  ASSERT_EQ(wide.code, 1) << wide.out << wide.err;
  const std::vector<Case> wide_cases = ReportedCases(dir_ / "wide");
  EXPECT_TRUE(std::any_of(wide_cases.begin(), wide_cases.end(), [](const Case& c) {
    return c.batch() > 1 || c.key_len() > 6 || c.q_heads > 2 || c.head_dim > 8;
  })) << "the limits below must bite";

  const CliRun narrow =
      Run(run + " --report-dir narrow --max-batch 1 --max-tokens 6 --max-heads 2 --max-head-dim 8");
  ASSERT_EQ(narrow.code, 1) << narrow.out << narrow.err;
  const std::vector<Case> narrow_cases = ReportedCases(dir_ / "narrow");
  ASSERT_FALSE(narrow_cases.empty());
  for (const Case& c : narrow_cases) {
    EXPECT_EQ(c.batch(), 1);
    EXPECT_LE(c.key_len(), 6);
    EXPECT_LE(c.q_heads, 2);
    EXPECT_LE(c.head_dim, 8);
  }
  ExpectUsageLine(Run("gate --max-tokens 0"), "gate --max-tokens 0");
}

TEST_F(CliVocabularyTest, ReplayTakesACorpusFolder) {
  const std::unique_ptr<Adapter> reference = MakeAdapter("reference");
  CorpusMeta meta;
  meta.law = "non-interference";
  meta.adapters = {"reference"};
  meta.expect = "pass";
  RandomSource first(5, 0), second(5, 1);
  WriteCorpusEntry((dir_ / "corpus").string(), Decode(first, reference->capabilities()), meta);
  WriteCorpusEntry((dir_ / "corpus" / "nested").string(), Decode(second, reference->capabilities()), meta);

  const CliRun run = Run("replay corpus");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  int files = 0;
  for (const std::string& line : Lines(run.out)) {
    if (!line.starts_with("file:")) continue;
    ++files;
    EXPECT_EQ(line.find(".meta.json"), std::string::npos) << line;
  }
  EXPECT_EQ(files, 2) << run.out;
  EXPECT_NE(run.out.find("2 passed, 0 failed"), std::string::npos) << run.out;

  fs::create_directories(dir_ / "empty");
  ExpectUsageLine(Run("replay empty"), "replay empty");
}

TEST_F(CliVocabularyTest, ListOneAdapterAsJson) {
  const CliRun run = Run("list --adapter tiled-f16 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["adapter"], "tiled-f16");
  EXPECT_EQ(j["capabilities"]["dtypes"], nlohmann::json::array({"f16"}));
  EXPECT_EQ(j["capabilities"]["max_tokens"], MakeAdapter("tiled-f16")->capabilities().max_tokens);

  // A plugin: what the harness read from its table.
  const fs::path plugin = fs::path(ATTNCHECK_BINARY).parent_path() / "examples/plugin/libexample_plugin.so";
  if (fs::exists(plugin)) {
    const std::string name = "plugin:" + plugin.string();
    const CliRun loaded = Run("list --adapter " + Quoted(name) + " --json");
    ASSERT_EQ(loaded.code, 0) << loaded.err;
    const nlohmann::json p = nlohmann::json::parse(loaded.out);
    EXPECT_EQ(p["adapter"], name);
    EXPECT_EQ(p["capabilities"]["max_tokens"], MakeAdapter(name)->capabilities().max_tokens);
  }
  ExpectUsageLine(Run("list --adapter tiledf16 --json"), "list --adapter tiledf16");
}

}  // namespace
}  // namespace attncheck
