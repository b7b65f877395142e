// The Markdown failure report: the folder <law>-<hash8>/ with case.json,
// meta.json and report.md (DESIGN §7).
#include "reports/markdown.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <fmt/format.h>

#include "cases/case_json.h"
#include "properties/laws.h"
#include "reports/fingerprint.h"
#include "reports/html.h"

namespace attncheck {
namespace reports {
namespace {

namespace fs = std::filesystem;

bool ShellSafe(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (!(std::isalnum(u) || ch == '_' || ch == '-' || ch == '.' || ch == '/' || ch == ':' ||
          ch == '=' || ch == '+' || ch == ',' || ch == '@' || ch == '%')) {
      return false;
    }
  }
  return true;
}

std::string ShellQuoted(std::string_view s) {
  if (ShellSafe(s)) return std::string(s);
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

std::string CppStringLiteral(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// Shortest text that reads back as the same double.
std::string Exact(double x) { return fmt::format("{}", x); }

// A fence that the text cannot close.
std::string FenceFor(std::string_view text) {
  return text.find("```") == std::string_view::npos ? "```" : "~~~~";
}

std::string FolderSafe(std::string_view s) {
  std::string out;
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    out += (std::isalnum(u) || ch == '-' || ch == '_' || ch == '.') ? ch : '_';
    if (out.size() >= 48) break;
  }
  return out;
}

std::string Fingerprint() { return ThisMachine().Line(); }

// The adapter a report folder belongs to ("" when it has no readable meta.json).
std::string FolderAdapter(const fs::path& dir) {
  std::ifstream in(dir / "meta.json");
  if (!in) return "";
  const nlohmann::json meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object() || !meta.contains("adapter") || !meta["adapter"].is_string()) return "";
  return meta["adapter"].get<std::string>();
}

std::mutex& FolderMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace
}  // namespace reports

std::string LawRequirement(std::string_view law) {
  if (const Law* found = FindLaw(law)) return std::string(found->requirement);
  return fmt::format("The law '{}' must hold.", law);
}

std::string LawTestName(std::string_view law) {
  if (const Law* found = FindLaw(law)) return std::string(found->suite);
  std::string name;
  bool upper = true;
  for (char ch : law) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (!std::isalnum(u)) {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(std::toupper(u)) : ch;
    upper = false;
  }
  return name.empty() ? std::string("Law") : name;
}

std::string LawCheckFunction(std::string_view law) {
  std::string name = "check_";
  for (char ch : law) {
    const unsigned char u = static_cast<unsigned char>(ch);
    name += std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '_';
  }
  return name;
}

std::string ReplayCommand(std::string_view case_file, std::string_view adapter, std::string_view law) {
  return fmt::format("attncheck replay {} --adapter {} --law {}", reports::ShellQuoted(case_file),
                     reports::ShellQuoted(adapter), reports::ShellQuoted(law));
}

nlohmann::json MetaJson(const FailureReport& report) {
  nlohmann::json meta = {{"law", report.law},
                           {"adapter", report.adapter},
                           {"seed", report.seed},
                           {"stream_seed", report.stream_seed},
                           {"case_index", report.case_index},
                           {"outcome", std::string(Name(report.verdict.outcome))}};
  if (report.original) meta["shrunk_from"] = ToJson(*report.original);  // the case before shrinking
  if (report.classification) meta["classification"] = std::string(Name(report.classification->kind));
  if (IsAdapterError(report.verdict.outcome)) meta["fault"] = std::string(Name(report.verdict.fault));
  return meta;
}

std::string ReportTitle(const FailureReport& report) {
  if (IsAdapterError(report.verdict.outcome)) return fmt::format("{}: adapter error on {}", report.law, report.adapter);
  if (report.verdict.hazard()) return fmt::format("{}: hazard on {}", report.law, report.adapter);
  return fmt::format("{} failed on {}", report.law, report.adapter);
}

std::string HazardNote(const FailureReport& report) {
  if (!report.verdict.hazard()) return "";
  return "A hazard, not a failure: the adapter's declared contract (attncheck list --adapter " + report.adapter +
         ") allows this behaviour, but it is dangerous in practice. The run exits 0 for it unless --hazards=fail.";
}

std::string MarkdownReport(const FailureReport& report, std::string_view dir) {
  using reports::Exact;
  const Verdict& v = report.verdict;
  const WorstElement& w = v.worst;
  const std::string hash8 = Hash8(report.c);
  const std::string case_file = (std::filesystem::path(dir) / "case.json").string();
  const std::string regression = fmt::format("corpora/regressions/{}-{}.json", report.law, hash8);
  const bool error = IsAdapterError(v.outcome);

  std::string md;
  md += fmt::format("# {}\n\n", ReportTitle(report));
  if (const std::string note = HazardNote(report); !note.empty()) md += note + "\n\n";
  md += fmt::format("Outcome: **{}**, case {} of the `{}` stream of seed {} (stream seed {:#018x}).\n\n",
                    Name(v.outcome), report.case_index, report.law, report.seed, report.stream_seed);
  if (report.classification) {
    md += fmt::format("Classification: **{}** ({}).\n\n", Name(report.classification->kind),
                      report.classification->detail);
  } else if (error) {
    md += fmt::format("Classification: **{}** (the adapter's fault, not a law's verdict).\n\n", Name(v.fault));
  }

  md += "`report.html` beside this file draws the expected visibility against the measured influence map "
        "(leaks red, over-masking blue) and the per-row error.\n\n";
  md += "## Case\n\n```text\n" + ToLine(report.c) + "\n```\n\n";
  md += fmt::format("Saved as `{}`; `meta.json` beside it names the law, adapter, seed and case index.\n\n",
                    case_file);
  if (report.original) {
    md += fmt::format("Shrunk from the case the run found ({}):\n\n```text\n{}\n```\n\n", report.shrink_note,
                      ToLine(*report.original));
  }

  md += "## What the law requires\n\n" + LawRequirement(report.law) + "\n\n";

  const std::string message = v.message.empty() ? std::string("(no message)") : v.message;
  const std::string fence = reports::FenceFor(message);
  md += "## What happened\n\n" + fence + "text\n" + message + "\n" + fence + "\n\n";

  if (error) {
    md += "## Worst element\n\nNone: the adapter crashed, threw or broke the buffer contract before any "
          "element could be compared.\n\n";
  } else {
    md += "## Worst element\n\n";
    md += "| b | h | i | j | got | want | error | bound |\n";
    md += "|---|---|---|---|-----|------|-------|-------|\n";
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n\n", w.b, w.h, w.i, w.j, Exact(w.got),
                      Exact(w.want), Exact(w.error), Exact(w.bound));
    if (!w.tensor.empty()) md += fmt::format("- element: {}\n", Describe(w));
    md += fmt::format("- max abs: {}\n- max rel: {}\n- bound: {}\n\n", Exact(v.max_abs), Exact(v.max_rel),
                      Exact(v.bound));
  }

  md += "## Replay\n\n```sh\n" + ReplayCommand(case_file, report.adapter, report.law) + "\n```\n\n";
  md += "It exits 1 while the law still fails, 0 once it holds.\n\n";

  md += "## Regression test\n\n";
  md += "Add the case to the corpus (the test suite replays every file there on each run):\n\n";
  md += fmt::format("```sh\ncp {} {}\n```\n\n", reports::ShellQuoted(case_file), regression);
  md += "or pin it to this adapter with a test:\n\n```cpp\n";
  md += fmt::format("TEST(Regression, {}_{}) {{\n", LawTestName(report.law), hash8);
  md += fmt::format("  Case c = ReadCaseFile({});\n", reports::CppStringLiteral(regression));
  md += fmt::format("  auto a = MakeAdapter({});\n", reports::CppStringLiteral(report.adapter));
  md += fmt::format("  EXPECT_TRUE({}(*a, c, Options{{}}).passed());\n", LawCheckFunction(report.law));
  md += "}\n```\n\n";
  md += "(`cases/case_json.h`, `adapters/registry.h`, `properties/laws.h`; in tests/, prefix the path "
        "with `ATTNCHECK_SOURCE_DIR \"/\"`.)\n\n";

  md += "## Environment\n\n" + reports::Fingerprint() + "\n";
  return md;
}

WrittenReport WriteFailureReport(const std::string& report_dir, const FailureReport& report) {
  namespace fs = std::filesystem;
  const std::string base = fmt::format("{}-{}", report.law, Hash8(report.c));
  const std::lock_guard<std::mutex> lock(reports::FolderMutex());
  fs::create_directories(report_dir);
  // Claim a folder: a new one, or one this adapter wrote before (a rerun).
  fs::path dir = fs::path(report_dir) / base;
  if (fs::exists(dir) && reports::FolderAdapter(dir) != report.adapter) {
    dir = fs::path(report_dir) / (base + "-" + reports::FolderSafe(report.adapter));
  }
  fs::create_directories(dir);

  WrittenReport written;
  written.dir = dir.string();
  written.case_file = (dir / "case.json").string();
  written.meta_file = (dir / "meta.json").string();
  written.report_file = (dir / "report.md").string();
  written.html_file = (dir / "report.html").string();
  WriteFileAtomic(written.meta_file, MetaJson(report).dump(2) + "\n");
  WriteCaseFile(written.case_file, report.c);
  WriteFileAtomic(written.report_file, MarkdownReport(report, written.dir));
  WriteFileAtomic(written.html_file, HtmlReport(report, written.dir));
  return written;
}

}  // namespace attncheck
