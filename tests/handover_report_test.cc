// Reports that hand over (reports/markdown.h, reports/html.h): the replay
// commands carry the binary's real path, a folder-relative form that still works
// once the folder is moved, and the run's behaviour-changing environment; a law
// that extends its case shows the scenario it ran; a numeric failure shows got
// against want on its row; a collapsed bound says "must match bitwise".
#include <cmath>
#include <filesystem>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "properties/laws.h"
#include "reports/compared_row.h"
#include "reports/enrich.h"
#include "reports/html.h"
#include "reports/markdown.h"
#include "tests/cli_support.h"
#include "tests/enriched_failure.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::Lines;
using test::Quoted;
using test::ReadText;

Case SmallCausal(int tokens) {
  Case c;
  c.q_heads = c.kv_heads = 1;
  c.head_dim = 2;
  c.value_dim = 3;
  c.query_len = tokens;
  c.rows.push_back(RowSpec{});
  c.rows[0].documents = {tokens};
  c.visibility = VisibilityKind::kCausal;
  c.mask = MaskConvention::kAdditiveNegInf;
  return c;
}

// One rerun for the classification is enough here.
FailureReport Failure(const std::string& law_name, const std::string& adapter_name, const Case& c) {
  return test::EnrichedFailure(law_name, adapter_name, c, {.reruns = 1});
}

// The lines of a replay's output that state the verdict.
std::string VerdictLines(const std::string& out) {
  std::string kept;
  for (const std::string& line : Lines(out))
    if (line.starts_with("verdict:") || line.starts_with("message:") || line.starts_with("  got:")) kept += line + "\n";
  return kept;
}

class HandoverReport : public test::ScratchDirTest {};

// Copy a report folder elsewhere and run its folder-relative command there: the
// same verdict as replaying the original. The environment of the run is in both
// commands, and the absolute one names the real binary.
TEST_F(HandoverReport, FolderCommandReplaysFromAMovedFolder) {
  const CliRun gate = test::RunAttncheck(dir_, dir_,
                                         "gate --adapter mutant:causal-off-by-one --law non-interference --cases 3 "
                                         "--quiet --report-dir rep",
                                         "ATTNCHECK_CALL_TIMEOUT=7");
  ASSERT_EQ(gate.code, 1) << gate.out << gate.err;
  fs::path folder;
  for (const auto& entry : fs::directory_iterator(dir_ / "rep"))
    if (fs::exists(entry.path() / "case.json")) folder = entry.path();
  ASSERT_FALSE(folder.empty());
  const std::string md = ReadText(folder / "report.md");
  const std::string binary = fs::canonical(ATTNCHECK_BINARY).string();
  EXPECT_NE(md.find("ATTNCHECK_CALL_TIMEOUT=7 " + binary + " replay " + (folder / "case.json").string()),
            std::string::npos)
      << md;
  const std::string relative = "ATTNCHECK_CALL_TIMEOUT=7 attncheck replay case.json --adapter mutant:causal-off-by-one "
                               "--law non-interference";
  ASSERT_NE(md.find(relative), std::string::npos) << md;
  EXPECT_NE(ReadText(folder / "report.html").find(relative), std::string::npos);
  EXPECT_NE(md.find("Variables that change a run: ATTNCHECK_CALL_TIMEOUT=7 ("), std::string::npos) << md;

  const fs::path moved = dir_ / "elsewhere" / "sent";
  fs::create_directories(moved.parent_path());
  fs::copy(folder, moved, fs::copy_options::recursive);
  fs::remove_all(dir_ / "rep");
  const std::string args = relative.substr(relative.find("replay"));
  const CliRun again = test::RunAttncheck(dir_, moved, args, "ATTNCHECK_CALL_TIMEOUT=7");
  EXPECT_EQ(again.code, 1) << again.out << again.err;
  const CliRun original = test::RunAttncheck(dir_, moved, "replay " + Quoted((moved / "case.json").string()));
  EXPECT_EQ(VerdictLines(again.out), VerdictLines(original.out));
  EXPECT_NE(VerdictLines(again.out).find("verdict:  fail"), std::string::npos) << again.out;
  // Without --law/--adapter the folder's meta.json names them.
  EXPECT_EQ(test::RunAttncheck(dir_, moved, "replay .").code, 1);
}

// masked-rows on Tq=1, Tk=1 adds a pad query and a batch row of pads: the report
// draws that scenario and shows the poisoned row's got against want.
TEST(HandoverReportText, MaskedRowsShowsTheScenarioItRan) {
  const FailureReport report = Failure("masked-rows", "mutant:masked-value-zero-times-nan", SmallCausal(1));
  ASSERT_TRUE(report.verdict.failed()) << report.verdict.message;
  ASSERT_TRUE(report.verdict.ran_case.has_value());
  EXPECT_EQ(report.verdict.ran_case->rows.size(), 2u);
  const std::string html = HtmlReport(report, "/tmp/r");
  EXPECT_NE(html.find("<h2>Scenario the law ran</h2>"), std::string::npos);
  EXPECT_NE(html.find(HtmlEscaped(ToLine(*report.verdict.ran_case))), std::string::npos);
  EXPECT_NE(html.find("batch row 1: expected visibility"), std::string::npos);  // the pads-only row is drawn
  EXPECT_NE(html.find("Key slots no query of their batch row may read (3 in all): b=0: j=0; b=1: j=0,1."),
            std::string::npos);  // the 3 slots the message says were poisoned
  // the message's query i=1 is a row of the maps
  const std::regex rows("<figcaption>batch row 0: expected");
  EXPECT_TRUE(std::regex_search(html, rows));
  EXPECT_NE(html.find("<h2>Got against want on out[b=0, h=0, i=1, &#183;]</h2>"), std::string::npos) << html;
  EXPECT_NE(html.find("must match bitwise; got "), std::string::npos);
  const std::string md = MarkdownReport(report, "/tmp/r");
  EXPECT_NE(md.find("## Scenario the law ran"), std::string::npos);
  EXPECT_NE(md.find("| b | h | i | d | got | want | error | bound |"), std::string::npos) << md;
}

// decode-consistency names its decode steps.
TEST(HandoverReportText, DecodeFailureNamesItsSteps) {
  Case c = SmallCausal(6);
  c.value_dim = 4;
  const FailureReport report = Failure("decode-consistency", "mutant:topleft-causal-decode", c);
  ASSERT_TRUE(report.verdict.failed()) << report.verdict.message;
  EXPECT_FALSE(report.verdict.decode_steps.empty());
  const std::string md = MarkdownReport(report, "/tmp/r");
  EXPECT_NE(md.find("It ran a cached-decode session in steps ["), std::string::npos) << md;
  EXPECT_NE(md.find("## Got against want on out["), std::string::npos) << md;
}

TEST(HandoverReportText, CollapsedBoundSaysBitwiseWithUlps) {
  const double floor = 2 * std::numeric_limits<double>::min();  // 4.45e-308
  EXPECT_EQ(BoundText(floor, 1.0 + std::ldexp(1.0, -22), 1.0, Dtype::kF32),
            "must match bitwise; differs by 2 ulp (f32)");
  EXPECT_EQ(BoundText(0.0, 0.5, 0.5, Dtype::kF32), "must match bitwise");
  EXPECT_EQ(BoundText(1e-6, 1.0, 1.0, Dtype::kF32), "1e-06");
  EXPECT_NEAR(UlpDistance(1.0 + std::ldexp(1.0, -9), 1.0, Dtype::kF16), 2.0, 1e-12);  // f16: 10 fraction bits
}

// Column names follow the tensor; a leak adds its key slot; the row table keeps
// the worst dim when it shows only the largest errors.
TEST(HandoverReportText, ColumnsNameWhatTheIndexIs) {
  WorstElement w = WorstElement::Compared("out", 0, 1, 2, 3, 2.0, 1.0, 0.5);
  EXPECT_EQ(w.last_index(), "d");
  w.tensor = "score";
  EXPECT_EQ(w.last_index(), "j");
  w.tensor = "lse";  // one value per row: its one-line form names no last index
  EXPECT_EQ(Describe(w).substr(0, 24), "lse[b=0, h=1, i=2] got 2");
  w.tensor = "out";
  for (int d = 0; d < 40; ++d) {
    w.row_got.push_back(d == 3 ? 2.0 : 1.0 + d * 1e-3);
    w.row_want.push_back(1.0);
  }
  const ComparedRow row = CompareRow(w, Dtype::kF32, 4);
  ASSERT_EQ(row.lines.size(), 4u);
  EXPECT_EQ(row.dims, 40);
  EXPECT_EQ(row.lines[0][3], "3");
  EXPECT_TRUE(row.worst[0]);
  EXPECT_EQ(row.lines[3][3], "39");

  const FailureReport leak = Failure("non-interference", "mutant:causal-off-by-one", SmallCausal(4));
  ASSERT_GE(leak.verdict.worst.key, 0);
  const std::string html = HtmlReport(leak, "/tmp/r");
  EXPECT_NE(html.find("<th>i</th><th>d</th><th>key</th>"), std::string::npos);
  EXPECT_NE(MarkdownReport(leak, "/tmp/r").find("| b | h | i | d | key |"), std::string::npos);
}

// Small maps keep their axis titles; each legend swatch stays with its label; the
// as-found case of a shrunk failure is in the page.
TEST(HandoverReportText, SmallMapsLegendAndAsFoundCase) {
  const std::string svg = VisibilitySvg({1}, 0, 1, 1);
  std::smatch size;
  ASSERT_TRUE(std::regex_search(svg, size, std::regex("width=\"(\\d+)\" height=\"(\\d+)\"")));
  // ~7 px a glyph at font-size 12: "key slot j →" (12 glyphs) right of x = 64, "query row i →" (13) below y = 46
  EXPECT_GE(std::stoi(size[1]), 64 + 7 * 12);
  EXPECT_GE(std::stoi(size[2]), 46 + 7 * 13);

  FailureReport report = Failure("non-interference", "mutant:causal-off-by-one", SmallCausal(3));
  report.original = SmallCausal(9);
  report.shrink_note = "4 attempts";
  const std::string html = HtmlReport(report, "/tmp/r");
  EXPECT_NE(html.find("Shrunk from the case the run found (4 attempts)"), std::string::npos);
  EXPECT_NE(html.find(HtmlEscaped(ToLine(SmallCausal(9)))), std::string::npos);
  const std::regex swatch("<span class=\"sw\"");
  const std::regex item("<span class=\"item\"><span class=\"sw\"");
  const auto count = [&html](const std::regex& r) {
    return std::distance(std::sregex_iterator(html.begin(), html.end(), r), std::sregex_iterator());
  };
  EXPECT_GT(count(swatch), 0);
  EXPECT_EQ(count(swatch), count(item));
  EXPECT_EQ(html.find(" |<span"), std::string::npos);
}

}  // namespace
}  // namespace attncheck
