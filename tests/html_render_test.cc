// The HTML failure report (reports/html.h) and what feeds it: the influence map,
// the per-row error, the rerun classification and the run index — checked on
// mutants whose bug is known, so the expected red / blue cells follow from the
// bug's definition. The last tests render index.html and a failure page in
// headless Chromium to PNG under build/test-output/html/.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/harness.h"
#include "adapters/registry.h"
#include "cases/case_json.h"
#include "properties/classify.h"
#include "properties/influence.h"
#include "properties/laws.h"
#include "reference/scenario.h"
#include "reports/enrich.h"
#include "reports/fingerprint.h"
#include "reports/html.h"
#include "reports/markdown.h"
#include "reports/summary.h"
#include "tests/enriched_failure.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Causal, one document per row, every slot a query.
Case CausalCase(int batch, int tokens, int q_heads = 2, int kv_heads = 2) {
  Case c;
  c.q_heads = q_heads;
  c.kv_heads = kv_heads;
  c.head_dim = 8;
  c.value_dim = 8;
  c.query_len = tokens;
  for (int b = 0; b < batch; ++b) {
    RowSpec row;
    row.documents = {tokens};
    c.rows.push_back(row);
  }
  c.visibility = VisibilityKind::kCausal;
  c.seed = 11;
  return c;
}

// (i, j) of every cell of a class in an influence SVG, read from the cell titles.
std::set<std::pair<int, int>> CellsOfClass(const std::string& svg, const std::string& css_class,
                                           const std::string& color) {
  std::set<std::pair<int, int>> cells;
  const std::regex cell("<rect class=\"" + css_class + "\"[^>]*fill=\"" + color +
                        "\"><title>b=\\d+ i=(\\d+) j=(\\d+)(?:\\.\\.(\\d+))?:");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell); it != std::sregex_iterator(); ++it) {
    const int first = std::stoi((*it)[2]);
    const int last = (*it)[3].matched ? std::stoi((*it)[3]) : first;
    for (int j = first; j <= last; ++j) cells.insert({std::stoi((*it)[1]), j});
  }
  return cells;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

using test::EnrichedFailure;

TEST(HtmlRender, EscapesMarkupAndDropsControlCharacters) {
  EXPECT_EQ(HtmlEscaped("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
  EXPECT_EQ(HtmlEscaped(std::string("a\x01" "b\nc")), "ab\nc");
}

TEST(HtmlRender, ReportEscapesTheMessageAndAdapterName) {
  FailureReport report;
  report.law = "non-interference";
  report.adapter = "exec:python3 <b>evil</b>.py";
  report.c = CausalCase(1, 4);
  report.verdict.outcome = Outcome::kFail;
  report.verdict.message = "</pre><script>alert(1)</script>";
  const std::string html = HtmlReport(report, "/tmp/r");
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<b>evil</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;evil&lt;/b&gt;"), std::string::npos);
}

TEST(HtmlRender, PageIsSelfContained) {
  const FailureReport report = EnrichedFailure("non-interference", "mutant:causal-off-by-one", CausalCase(1, 6));
  const std::string html = HtmlReport(report, "/tmp/r");
  for (const char* external : {"<script", "<link", "src=", "@import", "url(", "http://", "https://"}) {
    // The SVG namespace is the one allowed URI: it names a vocabulary, fetches nothing.
    std::string scrubbed = html;
    for (size_t at; (at = scrubbed.find("http://www.w3.org/2000/svg")) != std::string::npos;)
      scrubbed.erase(at, 26);
    EXPECT_EQ(scrubbed.find(external), std::string::npos) << external;
  }
}

TEST(HtmlRender, CellClassification) {
  EXPECT_EQ(ClassifyCell(false, true, true), CellKind::kLeak);
  EXPECT_EQ(ClassifyCell(true, false, true), CellKind::kOverMasked);
  EXPECT_EQ(ClassifyCell(true, true, true), CellKind::kReadVisible);
  EXPECT_EQ(ClassifyCell(false, false, true), CellKind::kBlocked);
  // a read by a row with no visible key is a leak, unless the contract lets such rows read
  EXPECT_EQ(ClassifyCell(false, true, false), CellKind::kLeak);
  EXPECT_EQ(ClassifyCell(false, true, false, /*empty_rows_may_read=*/true), CellKind::kEmptyRowRead);
  EXPECT_EQ(CellColor(CellKind::kLeak), "#d62728");
  EXPECT_EQ(CellColor(CellKind::kOverMasked), "#1f77b4");
}

TEST(HtmlRender, OverMaskedCellIsBlue) {
  // 1 × 2 × 2: row 1 sees keys 0 and 1, but key 0 shows no influence.
  const std::vector<uint8_t> visible = {1, 0, 1, 1};
  const std::vector<uint8_t> influence = {1, 0, 0, 1};
  const std::string svg = InfluenceSvg(visible, influence, 0, 2, 2);
  EXPECT_EQ(CellsOfClass(svg, "overmask", "#1f77b4"), (std::set<std::pair<int, int>>{{1, 0}}));
  EXPECT_TRUE(CellsOfClass(svg, "leak", "#d62728").empty());
}

// causal-off-by-one lets query i read key i + 1: exactly the cells (i, i + 1)
// must be red, in every batch row, and nothing blue.
TEST(HtmlRender, LeakingMutantShowsRedCellsOnTheOffByOneDiagonal) {
  const int tokens = 9;
  const FailureReport report = EnrichedFailure("non-interference", "mutant:causal-off-by-one", CausalCase(2, tokens));
  ASSERT_TRUE(report.verdict.failed()) << report.verdict.message;
  const reference::Scenario layout = reference::MakeLayout(report.c);
  ASSERT_EQ(report.verdict.influence.size(), layout.visible.size());
  std::set<std::pair<int, int>> expected;
  for (int i = 0; i + 1 < tokens; ++i) expected.insert({i, i + 1});
  for (int b = 0; b < 2; ++b) {
    const std::string svg = InfluenceSvg(report.verdict.expected_visibility, report.verdict.influence, b, tokens, tokens);
    EXPECT_EQ(CellsOfClass(svg, "leak", "#d62728"), expected) << "batch row " << b;
    EXPECT_TRUE(CellsOfClass(svg, "overmask", "#1f77b4").empty());
  }
  const std::string html = HtmlReport(report, "/tmp/r");
  EXPECT_EQ(Count(html, "<rect class=\"leak\""), 2 * expected.size());
  EXPECT_NE(html.find(fmt::format("<b>{} leaking cells</b>", 2 * expected.size())), std::string::npos);
}

TEST(HtmlRender, CorrectAdapterInfluenceMatchesVisibility) {
  const Case c = CausalCase(2, 7);
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  std::string why;
  const std::optional<InfluenceMap> map = MeasureInfluence(*eigen, c, &why);
  ASSERT_TRUE(map) << why;
  EXPECT_EQ(map->influence, map->expected_visibility);  // every visible key is read, nothing else
  const std::string svg = InfluenceSvg(map->expected_visibility, map->influence, 1, 7, 7);
  EXPECT_EQ(Count(svg, "class=\"leak\""), 0u);
  EXPECT_EQ(Count(svg, "class=\"overmask\""), 0u);
  // Read cells come in runs, one per row here: their widths cover the 28 visible cells.
  const std::regex read_run("<rect class=\"read\" x=\"\\d+\" y=\"\\d+\" width=\"(\\d+)\" height=\"(\\d+)\"");
  int read_cells = 0, runs = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), read_run); it != std::sregex_iterator(); ++it, ++runs)
    read_cells += std::stoi((*it)[1]) / std::stoi((*it)[2]);
  EXPECT_EQ(read_cells, 7 * 8 / 2);
  EXPECT_EQ(runs, 7);
}

TEST(HtmlRender, OverMaskedRunIsOneRectWithItsKeyRange) {
  // one row sees keys 0..3 and reads none of them: one blue run, keys 0..3
  const std::vector<uint8_t> visible = {1, 1, 1, 1, 0};
  const std::vector<uint8_t> influence = {0, 0, 0, 0, 0};
  const std::string svg = InfluenceSvg(visible, influence, 0, 1, 5);
  EXPECT_EQ(Count(svg, "<rect class=\"overmask\""), 1u);
  EXPECT_EQ(CellsOfClass(svg, "overmask", "#1f77b4"), (std::set<std::pair<int, int>>{{0, 0}, {0, 1}, {0, 2}, {0, 3}}));
}

// gqa-tile-mapping reads kv head h mod Hkv instead of h / (Hq/Hkv): with Hq = 4,
// Hkv = 2 heads 1 and 2 read the wrong kv head, heads 0 and 3 the right one.
TEST(HtmlRender, RowErrorOfADifferentialLawMarksTheWrongHeads) {
  const FailureReport report =
      EnrichedFailure("reference-agreement", "mutant:gqa-tile-mapping", CausalCase(1, 5, /*q_heads=*/4, /*kv_heads=*/2));
  ASSERT_TRUE(report.verdict.failed()) << report.verdict.message;
  const RowErrors& rows = report.verdict.row_errors;
  ASSERT_EQ(rows.batch, 1);
  ASSERT_EQ(rows.heads, 4);
  ASSERT_EQ(rows.tq, 5);
  EXPECT_EQ(rows.what, "attention vs oracle");
  for (int h = 0; h < 4; ++h)
    for (int i = 0; i < 5; ++i) {
      const bool wrong_head = h == 1 || h == 2;
      EXPECT_EQ(rows.ratio[rows.index(0, h, i)] > 1.0, wrong_head) << "h=" << h << " i=" << i;
    }
  const std::string svg = RowErrorSvg(rows);
  EXPECT_EQ(Count(svg, "<rect class=\"over\""), 10u);
  EXPECT_EQ(Count(svg, "<rect class=\"within\""), 10u);
  EXPECT_NE(HtmlReport(report, "/tmp/r").find("Per-row error"), std::string::npos);
}

TEST(HtmlRender, ClassificationOfAMutantIsDeterministic) {
  const FailureReport report = EnrichedFailure("non-interference", "mutant:causal-off-by-one", CausalCase(1, 5));
  ASSERT_TRUE(report.classification);
  EXPECT_EQ(report.classification->kind, FailureKind::kDeterministic) << report.classification->detail;
  EXPECT_EQ(report.classification->reruns, 2);
  EXPECT_EQ(report.classification->reproduced, 2);
}

TEST(HtmlRender, ClassificationFlakyNaNAndFaults) {
  const Case c = CausalCase(1, 3);
  Verdict first;
  first.outcome = Outcome::kFail;
  first.worst = WorstElement::Compared("", 0, 0, 1, 0, 1.5, 1.0, 0.1);
  int calls = 0;
  const auto alternating = [&] {
    Verdict v = first;
    if (++calls % 2 == 0) v.worst.got = 1.25;
    return v;
  };
  Classification flaky = ClassifyFailure(first, alternating, 2, nullptr, c);
  EXPECT_EQ(flaky.kind, FailureKind::kFlaky);
  EXPECT_EQ(flaky.reproduced, 1);
  EXPECT_EQ(ClassifyFailure(first, [&] { return first; }, 2, nullptr, c).kind, FailureKind::kDeterministic);

  Verdict nan = first;
  nan.worst.got = std::nan("");
  EXPECT_EQ(ClassifyFailure(nan, [&] { return nan; }, 2, nullptr, c).kind, FailureKind::kNaN);

  // allmasked-nan answers NaN on rows with no visible key (here the two pad
  // queries): that is the masked-rows law's business, not a NaN in a real row.
  const std::unique_ptr<Adapter> nan_mutant = MakeAdapter("mutant:allmasked-nan");
  Case empty_row = CausalCase(1, 3);
  empty_row.rows[0].left_pad = 2;
  empty_row.query_len = 5;
  const AdapterRun run = RunAttention(*nan_mutant, reference::MakeScenario(empty_row));
  ASSERT_TRUE(run.ok()) << run.fault;
  bool any_nan = false;
  for (double x : run.out.data) any_nan = any_nan || std::isnan(x);
  ASSERT_TRUE(any_nan) << "the mutant no longer answers NaN on empty rows";
  EXPECT_FALSE(AttentionOutputHasNaN(*nan_mutant, empty_row));

  int reruns = 0;
  const auto count = [&] {
    ++reruns;
    return Verdict::Pass();
  };
  EXPECT_EQ(ClassifyFailure(Verdict::Error("signal 11", Fault::kCrash), count, 2, nullptr, c).kind,
            FailureKind::kCrash);
  EXPECT_EQ(ClassifyFailure(Verdict::Error("hung", Fault::kTimeout), count, 2, nullptr, c).kind,
            FailureKind::kTimeout);
  EXPECT_EQ(reruns, 0);  // a crash or hang is not rerun
}

TEST(HtmlRender, GtestRegressionCarriesTheCaseInline) {
  FailureReport report;
  report.law = "non-interference";
  report.adapter = "mutant:causal-off-by-one";
  report.c = CausalCase(2, 5);
  const std::string test = GtestRegression(report);
  EXPECT_NE(test.find("TEST(Regression, NonInterference_" + Hash8(report.c) + ")"), std::string::npos);
  EXPECT_NE(test.find("attncheck::check_non_interference(*adapter, c"), std::string::npos);
  EXPECT_NE(test.find("MakeAdapter(\"mutant:causal-off-by-one\")"), std::string::npos);
  const size_t open = test.find("R\"case(");
  const size_t close = test.find(")case\"");
  ASSERT_NE(open, std::string::npos);
  ASSERT_NE(close, std::string::npos);
  const std::string json = test.substr(open + 7, close - open - 7);
  EXPECT_EQ(FromJson(nlohmann::json::parse(json)), report.c);
}

TEST(HtmlRender, FingerprintNamesBuildAndMachine) {
  const Fingerprint& f = ThisMachine();
  EXPECT_FALSE(f.version.empty());
  EXPECT_NE(f.version, "unknown");  // CMake passes it
  EXPECT_NE(f.build_type, "unknown");
  EXPECT_FALSE(f.git_commit.empty());
  EXPECT_FALSE(f.compiler.empty());
  EXPECT_NE(f.cpu.find("logical CPUs"), std::string::npos);
  EXPECT_FALSE(f.os.empty());
}

// A gate-like run: two reports written by WriteFailureReport, then index.html.
struct WrittenRun {
  RunSummary summary;
  std::vector<WrittenReport> written;
};

WrittenRun WriteRun(const fs::path& dir) {
  WrittenRun run;
  run.summary.version = ThisMachine().version;
  run.summary.seed = 1;
  const std::pair<std::string, std::string> pairs[] = {{"non-interference", "mutant:causal-off-by-one"},
                                                       {"reference-agreement", "mutant:gqa-tile-mapping"}};
  for (const auto& [law, adapter] : pairs) {
    const FailureReport report = EnrichedFailure(law, adapter, CausalCase(2, 12, 4, 2));
    EXPECT_TRUE(report.verdict.failed()) << law << " on " << adapter;
    const WrittenReport written = WriteFailureReport(dir.string(), report);
    LawResult result;
    result.law = law;
    result.adapter = adapter;
    result.Add(report.verdict);
    result.failures.push_back({written.case_file, written.report_file, report.verdict.message, 0, Outcome::kFail});
    run.summary.results.push_back(result);
    run.written.push_back(written);
  }
  LawResult held;
  held.law = "gqa";
  held.adapter = "eigen";
  held.cases = held.passed = 3;
  run.summary.results.push_back(held);
  WriteIndexHtml(dir.string(), run.summary);
  return run;
}

TEST(HtmlRender, IndexLinksEveryFailure) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("attncheck-html-index-{}", getpid());
  fs::remove_all(dir);
  const WrittenRun run = WriteRun(dir);
  const std::string index = ReadText(dir / "index.html");
  for (const WrittenReport& w : run.written) {
    ASSERT_TRUE(fs::exists(w.html_file));
    const std::string href = fs::relative(w.html_file, dir).generic_string();
    EXPECT_NE(index.find("<a href=\"" + HtmlEscaped(href) + "\">"), std::string::npos) << href;
    EXPECT_NE(index.find(HtmlEscaped(ToLine(ReadCaseFile(w.case_file)))), std::string::npos);
  }
  EXPECT_NE(index.find("mutant:causal-off-by-one"), std::string::npos);
  EXPECT_NE(index.find(">deterministic<"), std::string::npos);  // read back from meta.json
  EXPECT_EQ(Count(index, "\">report</a>"), run.written.size());  // the matrix links the groups too
  EXPECT_EQ(Count(index, "<tr class=\"held\">"), 1u);
  fs::remove_all(dir);
}

int Shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The gate enriches every written failure and links it from index.html; replay
// --report-dir writes the same folder for a saved case.
TEST(HtmlRender, GateAndReplayWriteHtmlReports) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("attncheck-html-gate-{}", getpid());
  fs::remove_all(dir);
  const std::string gate = fmt::format(
      "{} gate --adapter mutant:causal-off-by-one --adapter eigen --law non-interference --cases 6 --quiet "
      "--report-dir {} --junit {} >{} 2>&1",
      ATTNCHECK_BINARY, (dir / "gate").string(), (dir / "junit.xml").string(), (dir / "gate.log").string());
  fs::create_directories(dir);
  ASSERT_EQ(Shell(gate), 1) << ReadText(dir / "gate.log");
  const nlohmann::json summary = nlohmann::json::parse(ReadText(dir / "gate" / "summary.json"));
  const std::string index = ReadText(dir / "gate" / "index.html");
  size_t failures = 0;
  std::set<std::string> folders;  // one per group: failures that shrink to one case share it
  std::string one_case;
  for (const auto& result : summary["results"]) {
    for (const auto& failure : result["failures"]) {
      ++failures;
      const fs::path folder = fs::path(failure["case_file"].get<std::string>()).parent_path();
      folders.insert(folder.string());
      ASSERT_TRUE(fs::exists(folder / "report.html")) << folder;
      EXPECT_NE(index.find("href=\"" + folder.filename().string() + "/report.html\""), std::string::npos);
      const nlohmann::json meta = nlohmann::json::parse(ReadText(folder / "meta.json"));
      EXPECT_EQ(meta["classification"], "deterministic");
      EXPECT_NE(ReadText(folder / "report.html").find("class=\"leak\""), std::string::npos) << folder;
      one_case = (folder / "case.json").string();
    }
  }
  ASSERT_GT(failures, 0u);
  EXPECT_EQ(Count(index, "/report.html\">report</a>"), folders.size());
  EXPECT_EQ(Count(index, "<tr class=\"held\"><td>non-interference</td><td>eigen</td>"), 1u);
  // JUnit: one testcase per law × adapter
  const std::string junit = ReadText(dir / "junit.xml");
  EXPECT_EQ(Count(junit, "<testcase "), summary["results"].size());
  EXPECT_EQ(Count(junit, "<testcase classname=\"non-interference\" name=\"eigen\""), 1u);
  EXPECT_EQ(Count(junit, "<testcase classname=\"non-interference\" name=\"mutant:causal-off-by-one\""), 1u);

  const std::string replay = fmt::format("{} replay {} --report-dir {} >{} 2>&1", ATTNCHECK_BINARY, one_case,
                                         (dir / "replay").string(), (dir / "replay.log").string());
  ASSERT_EQ(Shell(replay), 1) << ReadText(dir / "replay.log");
  EXPECT_NE(ReadText(dir / "replay" / "index.html").find("/report.html\">report</a>"), std::string::npos);
  EXPECT_NE(ReadText(dir / "replay.log").find("report.html"), std::string::npos);
  fs::remove_all(dir);
}

// Headless Chromium renders the index and a failure page; the PNGs stay under
// build/test-output/html/ for a person to look at.
std::string FindChromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    const std::string probe = fmt::format("command -v {} >/dev/null 2>&1", name);
    if (std::system(probe.c_str()) == 0) return name;
  }
  return "";
}

// Width and height from a PNG's IHDR chunk (0, 0 when not a PNG).
std::pair<uint32_t, uint32_t> PngSize(const std::string& png) {
  if (png.size() < 24 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || png.compare(12, 4, "IHDR") != 0) return {0, 0};
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  return {be32(16), be32(20)};
}

TEST(HtmlRender, ChromiumRendersIndexAndFailurePage) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh --with-browser installs it)";
  const fs::path out = fs::path(ATTNCHECK_BINARY).parent_path() / "test-output" / "html";
  fs::remove_all(out);
  fs::create_directories(out);
  const WrittenRun run = WriteRun(out / "run");
  const std::pair<fs::path, fs::path> pages[] = {{out / "run" / "index.html", out / "index.png"},
                                                 {run.written[0].html_file, out / "failure-non-interference.png"},
                                                 {run.written[1].html_file, out / "failure-reference-agreement.png"}};
  for (const auto& [page, png] : pages) {
    const std::string command = fmt::format(
        "timeout 90 {} --headless --disable-gpu --no-sandbox --hide-scrollbars --user-data-dir={} "
        "--screenshot={} --window-size=1400,2000 file://{} >{} 2>&1",
        chromium, (out / "profile").string(), png.string(), fs::absolute(page).string(),
        (out / (png.stem().string() + ".log")).string());
    ASSERT_EQ(Shell(command), 0) << command;
    ASSERT_TRUE(fs::exists(png)) << png;
    const std::string bytes = ReadText(png);
    EXPECT_EQ(PngSize(bytes), (std::pair<uint32_t, uint32_t>{1400, 2000})) << png;
    EXPECT_GT(bytes.size(), 20000u) << png << " looks blank";
    std::cout << "rendered " << fs::absolute(png).string() << " (" << bytes.size() << " bytes)\n";
  }
  fs::remove_all(out / "profile");
}

}  // namespace
}  // namespace attncheck
