// The `attncheck` program end to end: runs the built binary (ATTNCHECK_BINARY)
// in a temporary folder and checks what it prints, writes and exits with
// (DESIGN §8: 0 held, 1 failed, 2 bad usage or input, 3 adapter error).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "properties/laws.h"
#include "reference/examples.h"
#include "reports/markdown.h"
#include "reports/summary.h"
#include "tests/cli_support.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

using test::CliRun;
using test::ExpectOneErrorLine;
using test::Lines;
using test::Quoted;
using test::ReadText;

class CliTest : public test::ScratchDirTest {};

// The Tq lines of the visibility matrix printed by `show` (reference/show.h).
std::vector<std::string> VisibilityMatrix(const std::string& out) {
  const std::vector<std::string> lines = Lines(out);
  std::vector<std::string> matrix;
  bool inside = false;
  for (const std::string& line : lines) {
    if (line.rfind("visibility", 0) == 0) {
      inside = true;
      continue;
    }
    if (inside) {
      if (line.empty() || line.find_first_not_of("01 ") != std::string::npos) break;
      matrix.push_back(line);
    }
  }
  return matrix;
}

bool HasLine(const std::string& out, const std::string& wanted) {
  for (const std::string& line : Lines(out)) {
    if (line == wanted) return true;
  }
  return false;
}

TEST_F(CliTest, VersionPrintsTheVersion) {
  const CliRun run = Run("--version");
  EXPECT_EQ(run.code, 0);
  EXPECT_NE(run.out.find_first_of("0123456789"), std::string::npos) << run.out;
}

TEST_F(CliTest, ShowCausal4) {
  const CliRun run = Run("show --example causal4");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(VisibilityMatrix(run.out), (std::vector<std::string>{"1 0 0 0", "1 1 0 0", "1 1 1 0", "1 1 1 1"}))
      << run.out;
}

TEST_F(CliTest, ShowPacked6) {
  const CliRun run = Run("show --example packed6");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(VisibilityMatrix(run.out),
            (std::vector<std::string>{"1 0 0 0 0 0", "1 1 0 0 0 0", "1 1 1 0 0 0", "0 0 0 1 0 0", "0 0 0 1 1 0",
                                      "0 0 0 1 1 1"}))
      << run.out;
  EXPECT_TRUE(HasLine(run.out, "key positions: 0 1 2 0 1 2")) << run.out;
}

TEST_F(CliTest, ShowLeftpad5) {
  const CliRun run = Run("show --example leftpad5");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(HasLine(run.out, "key positions: 0 0 0 1 2")) << run.out;
  EXPECT_TRUE(HasLine(run.out, "key valid: 0 0 1 1 1")) << run.out;
  EXPECT_EQ(VisibilityMatrix(run.out).size(), 5u) << run.out;
}

TEST_F(CliTest, ShowPrefixLm) {
  const CliRun run = Run("show --example prefixlm");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(VisibilityMatrix(run.out),
            (std::vector<std::string>{"1 1 1 0 0 0", "1 1 1 0 0 0", "1 1 1 0 0 0", "1 1 1 1 0 0", "1 1 1 1 1 0",
                                      "1 1 1 1 1 1"}))
      << run.out;
}

// Beside the matrix, `show` prints what a FlashAttention-class kernel is given
// instead (reference/descriptor.h): the padded batch's form or why there is none,
// and the varlen form with its block table.
TEST_F(CliTest, ShowPrintsTheDescriptor) {
  const CliRun packed = Run("show --example packed6");
  ASSERT_EQ(packed.code, 0) << packed.err;
  EXPECT_TRUE(HasLine(packed.out, "descriptor (padded batch): none, row 0 packs 2 documents: that needs cu_seqlens (varlen)"))
      << packed.out;
  EXPECT_TRUE(HasLine(packed.out, "cu_seqlens_q: 0 3 6")) << packed.out;
  EXPECT_TRUE(HasLine(packed.out, "cu_seqlens_k: 0 3 6")) << packed.out;
  EXPECT_NE(packed.out.find("block table[1]: "), std::string::npos) << packed.out;

  const CliRun prefix = Run("show --example prefixlm");
  ASSERT_EQ(prefix.code, 0) << prefix.err;
  EXPECT_TRUE(HasLine(prefix.out, "descriptor (padded batch):")) << prefix.out;
  EXPECT_TRUE(HasLine(prefix.out, "prefix_len: 3")) << prefix.out;
  EXPECT_TRUE(HasLine(prefix.out, "causal: bottom-right")) << prefix.out;
}

TEST_F(CliTest, ShowDecode) {
  const CliRun run = Run("show --example decode");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(VisibilityMatrix(run.out), (std::vector<std::string>{"1 1 1 1 1 1 0", "1 1 1 1 1 1 1"})) << run.out;
  EXPECT_TRUE(HasLine(run.out, "query positions: 5 6")) << run.out;
}

TEST_F(CliTest, ShowCaseFileMatchesExample) {
  const std::optional<Case> c = reference::ExampleCase("packed6");
  ASSERT_TRUE(c.has_value());
  WriteCaseFile((dir_ / "packed6.json").string(), *c);
  const CliRun from_file = Run("show packed6.json --row 0 --query 2");
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  EXPECT_EQ(VisibilityMatrix(from_file.out), VisibilityMatrix(Run("show --example packed6").out));
  EXPECT_TRUE(HasLine(from_file.out, "row 2 sees keys: 0 1 2")) << from_file.out;
  const CliRun bad_row = Run("show packed6.json --row 5");
  EXPECT_EQ(bad_row.code, 2);
  ExpectOneErrorLine(bad_row);
}

TEST_F(CliTest, ShowUnknownExampleListsTheNames) {
  const CliRun run = Run("show --example nosuch");
  EXPECT_EQ(run.code, 2);
  ExpectOneErrorLine(run);
  for (std::string_view name : reference::ExampleNames()) {
    EXPECT_NE(run.err.find(std::string(name)), std::string::npos) << run.err;
  }
}

TEST_F(CliTest, GateOnReferenceHoldsAndWritesTheSummary) {
  const CliRun run = Run("gate --adapter reference --cases 20 --json out.json --junit junit.xml --report-dir rep");
  EXPECT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_EQ(run.err, "");  // not a terminal: no progress line
  const nlohmann::json j = nlohmann::json::parse(ReadText(dir_ / "out.json"));
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["attncheck"].is_string());
  EXPECT_EQ(j["seed"], 1);
  ASSERT_TRUE(j["results"].is_array());
  EXPECT_EQ(j["results"].size(), AllLaws().size());
  for (const nlohmann::json& r : j["results"]) {
    EXPECT_TRUE(r["law"].is_string());
    EXPECT_NE(FindLaw(r["law"].get<std::string>()), nullptr);
    EXPECT_EQ(r["adapter"], "reference");
    if (FindLaw(r["law"].get<std::string>())->needs.backward) {  // no backward: nothing to draw, one skip
      EXPECT_EQ(r["skipped"], r["cases"]);
      continue;
    }
    EXPECT_EQ(r["cases"], 20);
    for (const char* count : {"passed", "failed", "skipped"}) EXPECT_TRUE(r[count].is_number_integer()) << count;
    EXPECT_EQ(r["passed"].get<int>() + r["failed"].get<int>() + r["skipped"].get<int>() + r["errors"].get<int>(),
              20);
    EXPECT_TRUE(r["seconds"].is_number());
    ASSERT_TRUE(r["worst"].is_object());
    for (const char* field : {"b", "h", "i", "j", "got", "want", "error", "bound", "max_abs", "max_rel"}) {
      EXPECT_TRUE(r["worst"].contains(field)) << field;
    }
    ASSERT_TRUE(r["failures"].is_array());
    for (const nlohmann::json& f : r["failures"]) {
      EXPECT_TRUE(f["case_file"].is_string());
      EXPECT_TRUE(f["message"].is_string());
    }
  }
  // The report folder always holds summary.json; --junit writes XML.
  EXPECT_EQ(nlohmann::json::parse(ReadText(dir_ / "rep" / "summary.json")), j);
  const std::string junit = ReadText(dir_ / "junit.xml");
  EXPECT_NE(junit.find("<testsuites"), std::string::npos);
  EXPECT_NE(junit.find("classname=\"non-interference\" name=\"reference\""), std::string::npos);
}

TEST_F(CliTest, GateIsDeterministicAcrossJobs) {
  const CliRun one = Run("gate --adapter 'tiled-*' --law gqa --law non-interference --cases 15 --json one.json "
                         "--report-dir r1 --quiet");
  const CliRun four = Run("gate --adapter 'tiled-*' --law gqa --law non-interference --cases 15 --json four.json "
                          "--report-dir r4 --quiet --jobs 4");
  EXPECT_EQ(one.code, four.code);
  nlohmann::json a = nlohmann::json::parse(ReadText(dir_ / "one.json"));
  nlohmann::json b = nlohmann::json::parse(ReadText(dir_ / "four.json"));
  ASSERT_EQ(a["results"].size(), 10u);  // 2 laws × tiled-f32, -f16, -bf16, -varlen-f32, -paged-bf16
  for (nlohmann::json* j : {&a, &b}) {
    for (nlohmann::json& r : (*j)["results"]) {
      r.erase("seconds");
      for (nlohmann::json& f : r["failures"]) {
        f.erase("case_file");
        f.erase("report_file");
      }
    }
  }
  EXPECT_EQ(a, b);
}

TEST_F(CliTest, GateUnknownAdapterIsUsageError) {
  const CliRun run = Run("gate --adapter nosuch");
  EXPECT_EQ(run.code, 2);
  ExpectOneErrorLine(run);
  EXPECT_NE(run.err.find("nosuch"), std::string::npos) << run.err;
}

TEST_F(CliTest, GateUnknownLawIsUsageError) {
  const CliRun run = Run("gate --law nosuch --adapter reference");
  EXPECT_EQ(run.code, 2);
  ExpectOneErrorLine(run);
  EXPECT_NE(run.err.find("nosuch"), std::string::npos) << run.err;
}

TEST_F(CliTest, GateBadOptionIsUsageError) {
  for (const char* args : {"gate --cases many", "gate --jobs 0", "gate --bogus", ""}) {
    const CliRun run = Run(args);
    EXPECT_EQ(run.code, 2) << args;
    ExpectOneErrorLine(run);
  }
}

TEST_F(CliTest, ReplayMalformedCaseNamesTheField) {
  const std::optional<Case> c = reference::ExampleCase("causal4");
  ASSERT_TRUE(c.has_value());
  nlohmann::json j = ToJson(*c);
  ASSERT_TRUE(j.contains("head_dim"));
  j["head_dim"] = "eight";
  std::ofstream(dir_ / "bad.json") << j.dump(2);
  const CliRun run = Run("replay bad.json --adapter reference --law non-interference");
  EXPECT_EQ(run.code, 2);
  ExpectOneErrorLine(run);
  EXPECT_NE(run.err.find("bad.json"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("head_dim"), std::string::npos) << run.err;

  std::ofstream(dir_ / "broken.json") << "{\"q_heads\": ";
  const CliRun broken = Run("replay broken.json --adapter reference --law non-interference");
  EXPECT_EQ(broken.code, 2);
  ExpectOneErrorLine(broken);
}

TEST_F(CliTest, ReplayPassingCaseExitsZero) {
  const std::optional<Case> c = reference::ExampleCase("causal4");
  ASSERT_TRUE(c.has_value());
  WriteCaseFile((dir_ / "causal4.json").string(), *c);
  const CliRun run = Run("replay causal4.json --adapter reference --law non-interference");
  EXPECT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("non-interference"), std::string::npos);
  EXPECT_NE(run.out.find(ToLine(*c)), std::string::npos) << run.out;
}

TEST_F(CliTest, ReplayWithoutLawOrAdapterNamesWhatIsMissing) {
  const std::optional<Case> c = reference::ExampleCase("causal4");
  ASSERT_TRUE(c.has_value());
  WriteCaseFile((dir_ / "causal4.json").string(), *c);
  const CliRun run = Run("replay causal4.json");
  EXPECT_EQ(run.code, 2);
  ExpectOneErrorLine(run);
  EXPECT_NE(run.err.find("--law"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--adapter"), std::string::npos) << run.err;
  const CliRun bad_law = Run("replay causal4.json --adapter reference --law nosuch");
  EXPECT_EQ(bad_law.code, 2);
  ExpectOneErrorLine(bad_law);
}

TEST_F(CliTest, ListMentionsEveryDefaultAdapterAndLaw) {
  const CliRun run = Run("list");
  ASSERT_EQ(run.code, 0) << run.err;
  for (const std::string& name : AdapterNames()) EXPECT_NE(run.out.find(name), std::string::npos) << name;
  for (const Law& law : AllLaws()) {
    EXPECT_NE(run.out.find(std::string(law.name)), std::string::npos) << law.name;
    EXPECT_NE(run.out.find(std::string(law.description)), std::string::npos) << law.name;
  }
}

TEST_F(CliTest, BenchPrintsOneRowPerLaw) {
  const CliRun run = Run("bench --adapter reference --law gqa --law masked-rows --cases 10 --max-tokens 8");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("cases/s"), std::string::npos) << run.out;
  const std::vector<std::string> lines = Lines(run.out);
  for (const char* law : {"gqa ", "masked-rows "}) {
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(law, 0) == 0; }),
              1)
        << law << "\n" << run.out;
  }
}

// A mutant fails some law; its report folder replays with one command (meta.json
// supplies law and adapter) and still fails.
TEST_F(CliTest, MutantFailureReportReplays) {
  std::string mutant;
  for (const AdapterInfo& info : ListAdapters()) {
    if (info.kind == AdapterKind::kDefective) {
      mutant = info.name;
      break;
    }
  }
  if (mutant.empty()) GTEST_SKIP() << "no mutant adapter registered";
  const CliRun gate = Run("gate --adapter " + Quoted(mutant) + " --cases 50 --report-dir rep --quiet");
  ASSERT_NE(gate.code, 0) << "mutant " << mutant << " survived every law\n" << gate.out;
  ASSERT_NE(gate.code, 2) << gate.err;
  const nlohmann::json summary = nlohmann::json::parse(ReadText(dir_ / "rep" / "summary.json"));
  std::string case_file;
  for (const nlohmann::json& r : summary["results"]) {
    for (const nlohmann::json& f : r["failures"]) {
      if (f["outcome"] == "fail" && case_file.empty()) case_file = f["case_file"].get<std::string>();
    }
  }
  ASSERT_FALSE(case_file.empty()) << summary.dump(2);
  const fs::path folder = (dir_ / case_file).parent_path();
  EXPECT_TRUE(fs::exists(folder / "meta.json"));
  const std::string report = ReadText(folder / "report.md");
  EXPECT_NE(report.find("attncheck replay"), std::string::npos) << report;
  EXPECT_NE(report.find("TEST(Regression, "), std::string::npos) << report;
  EXPECT_NO_THROW(ReadCaseFile((dir_ / case_file).string()));  // case.json stays a pure Case
  const CliRun replay = Run("replay " + Quoted(case_file));
  EXPECT_EQ(replay.code, 1) << replay.out << replay.err;
}

// ---- the writers behind the program (reports/) ----

Verdict Measured(Outcome outcome, double error, double bound) {
  Verdict v;
  v.outcome = outcome;
  v.worst = WorstElement::Compared("", 0, 1, 2, 3, 1.0 + error, 1.0, bound);
  v.worst.error = error;  // the writers' inputs exactly as given
  v.max_abs = error;
  v.bound = bound;
  v.message = outcome == Outcome::kFail ? "out of bound" : "";
  return v;
}

TEST(Reports, WorstIsTheLargestRatioAmongFailuresElsePasses) {
  LawResult r;
  r.Add(Measured(Outcome::kPass, 1e-7, 1e-6));
  r.Add(Measured(Outcome::kPass, 5e-7, 1e-6));
  EXPECT_DOUBLE_EQ(r.worst.worst.error, 5e-7);
  r.Add(Measured(Outcome::kFail, 3e-6, 1e-6));
  r.Add(Measured(Outcome::kPass, 9e-7, 1e-6));  // a pass never replaces a failure
  r.Add(Measured(Outcome::kFail, 2e-6, 1e-6));  // a smaller failure neither
  r.Add(Verdict::Skip("dtype f16 not supported"));
  r.Add(Verdict::Skip("dtype f16 not supported"));
  r.Add(Verdict::Skip("no RoPE"));
  r.Add(Verdict::Error("adapter threw"));
  EXPECT_DOUBLE_EQ(r.worst.worst.error, 3e-6);
  EXPECT_EQ(r.cases, 9);
  EXPECT_EQ(r.passed, 3);
  EXPECT_EQ(r.failed, 2);
  EXPECT_EQ(r.skipped, 3);
  EXPECT_EQ(r.errors, 1);
  EXPECT_EQ(r.MostCommonSkipReason(), "dtype f16 not supported");
}

TEST(Reports, SummaryJsonTableAndJunit) {
  RunSummary summary;
  summary.version = "9.9";
  summary.seed = 7;
  LawResult held;
  held.law = "gqa";
  held.adapter = "eigen";
  held.Add(Measured(Outcome::kPass, 1e-7, 1e-6));
  LawResult failed;
  failed.law = "non-interference";
  failed.adapter = "a<b>";
  failed.Add(Measured(Outcome::kFail, 1.0, 0.0));
  failed.failures.push_back({"r/x/case.json", "r/x/report.md", "leak & \"quote\"", 0, Outcome::kFail});
  summary.results = {held, failed};

  const nlohmann::json j = SummaryJson(summary);
  EXPECT_EQ(j["attncheck"], "9.9");
  EXPECT_EQ(j["seed"], 7);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["failures"][0]["case_file"], "r/x/case.json");
  EXPECT_EQ(j["results"][1]["failures"][0]["message"], "leak & \"quote\"");
  EXPECT_EQ(j["results"][1]["worst"]["i"], 2);

  const std::vector<std::string> table = Lines(SummaryTable(summary));
  ASSERT_GE(table.size(), 4u);
  EXPECT_EQ(table[0].find("law"), 0u);
  // aligned: the "cases" column ends at the same offset on every row
  const size_t end = table[0].find("cases") + 5;
  for (size_t n = 2; n < 4; ++n) EXPECT_EQ(table[n][end - 1], '1') << table[n];

  const std::string xml = JunitXml(summary);
  EXPECT_NE(xml.find("tests=\"2\" failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"a&lt;b&gt;\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"leak &amp; &quot;quote&quot;\""), std::string::npos) << xml;
}

TEST_F(CliTest, FailureReportFolderPerLawCaseAndAdapter) {
  const std::optional<Case> c = reference::ExampleCase("causal4");
  ASSERT_TRUE(c.has_value());
  FailureReport report;
  report.law = "non-interference";
  report.adapter = "eigen";
  report.seed = 1;
  report.case_index = 42;
  report.c = *c;
  report.verdict = Measured(Outcome::kFail, 0.5, 0.0);
  const std::string dir = (dir_ / "rep").string();
  const WrittenReport first = WriteFailureReport(dir, report);
  EXPECT_EQ(fs::path(first.dir).filename().string(), "non-interference-" + Hash8(*c));
  EXPECT_EQ(ReadCaseFile(first.case_file), *c);  // a pure Case
  const nlohmann::json meta = nlohmann::json::parse(ReadText(first.meta_file));
  EXPECT_EQ(meta["law"], "non-interference");
  EXPECT_EQ(meta["adapter"], "eigen");
  EXPECT_EQ(meta["seed"], 1);
  EXPECT_EQ(meta["case_index"], 42);
  const std::string md = ReadText(first.report_file);
  for (const std::string& part :
       {std::string("non-interference"), std::string("eigen"), ToLine(*c), std::string("| b | h | i | j |"),
        "attncheck replay " + first.case_file + " --adapter eigen --law non-interference",
        "TEST(Regression, NonInterference_" + Hash8(*c) + ")", std::string("check_non_interference(*a, c, Options{})")}) {
    EXPECT_NE(md.find(part), std::string::npos) << part << "\n" << md;
  }
  report.adapter = "tiled-f16";  // the same case failing on another adapter gets its own folder
  const WrittenReport second = WriteFailureReport(dir, report);
  EXPECT_NE(second.dir, first.dir);
  report.adapter = "eigen";  // a rerun reuses the adapter's folder
  EXPECT_EQ(WriteFailureReport(dir, report).dir, first.dir);
}

}  // namespace
}  // namespace attncheck
