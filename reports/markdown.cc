// The Markdown failure report: the folder <law>-<hash8>/ with case.json,
// meta.json and report.md (DESIGN §7).
#include "reports/markdown.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/case_json.h"
#include "properties/laws.h"
#include "reference/scenario.h"
#include "reports/adapter_file.h"
#include "reports/compared_row.h"
#include "reports/fingerprint.h"
#include "reports/html.h"
#include "reports/replay_command.h"

namespace attncheck {
namespace reports {
namespace {

namespace fs = std::filesystem;

std::string CppStringLiteral(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// Shortest text that reads back as the same double.
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

// Copies the file the report's adapter runs into `dir` (a temporary name, then
// renamed; permissions kept) and returns the copy's name; nullopt when the adapter
// runs no file or it cannot be read.
std::optional<std::string> CopyAdapterFile(const FailureReport& report, const fs::path& dir) {
  const std::string name = AdapterCopyName(report);
  if (name.empty()) return std::nullopt;
  const std::string& ran_as = report.ran_as.empty() ? report.adapter : report.ran_as;
  const fs::path from = FindAdapterFile(WithAbsoluteAdapterFile(ran_as))->path;
  const fs::path to = dir / name, temporary = dir / (name + ".tmp");
  std::error_code error;
  if (!fs::is_regular_file(from, error)) return std::nullopt;
  fs::copy_file(from, temporary, fs::copy_options::overwrite_existing, error);
  if (!error) fs::rename(temporary, to, error);
  if (error) {
    fs::remove(temporary, error);
    return std::nullopt;
  }
  return name;
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

std::optional<RanScenario> DescribeRanScenario(const FailureReport& report) {
  const Verdict& v = report.verdict;
  const bool extended = v.ran_case && !(*v.ran_case == report.c);
  if (!extended && v.decode_steps.empty()) return std::nullopt;
  const Case& ran = v.ran_case ? *v.ran_case : report.c;
  RanScenario scenario;
  if (extended) {
    scenario.case_line = ToLine(ran);
    scenario.notes.push_back("The law does not run the case as given: it extended it to the scenario below, and "
                             "the maps and rows of this report are of that scenario.");
  }
  try {
    const reference::Scenario layout = reference::MakeLayout(ran);
    std::vector<std::string> unread;
    int slots = 0;
    for (int b = 0; b < layout.batch; ++b) {
      std::vector<int> keys;
      for (int j = 0; j < layout.tk; ++j) {
        bool read = false;
        for (int i = 0; i < layout.tq && !read; ++i) read = layout.is_visible(b, i, j);
        if (!read) keys.push_back(j);
      }
      if (!keys.empty()) unread.push_back(fmt::format("b={}: j={}", b, fmt::join(keys, ",")));
      slots += static_cast<int>(keys.size());
    }
    if (extended && !unread.empty()) {
      scenario.notes.push_back(
          fmt::format("Key slots no query of their batch row may read ({} in all): {}.", slots, fmt::join(unread, "; ")));
    }
  } catch (const std::exception&) {
  }
  if (!v.decode_steps.empty()) {
    std::vector<std::string> parts;
    int slot = 0;
    for (size_t n = 0; n < v.decode_steps.size(); ++n) {
      const int end = slot + v.decode_steps[n];
      const std::string rows = end - slot == 1 ? std::to_string(slot) : fmt::format("{}..{}", slot, end - 1);
      parts.push_back(n == 0 ? fmt::format("prefill of key slots {}", rows) : fmt::format("step {}: {}", n, rows));
      slot = end;
    }
    const std::string_view how = v.decode_over_caller_cache
                                     ? "It decoded over a cache the caller owns, one attention call per step in the "
                                       "case's layout,"
                                     : "It ran a cached-decode session";
    scenario.notes.push_back(fmt::format("{} in steps [{}] ({}; each step's query rows are its own slots) and "
                                         "compared it with one prefill of every slot.",
                                         how, fmt::join(v.decode_steps, ", "), fmt::join(parts, ", ")));
  }
  return scenario;
}

std::string EnvironmentLine() {
  std::vector<std::string> set;
  for (const auto& [name, value] : BehaviourEnvironment()) {
    for (const auto& [known, what] : BehaviourVariables())
      if (known == name) set.push_back(fmt::format("{}={} ({})", name, value, what));
  }
  return set.empty() ? std::string("none set") : fmt::format("{}", fmt::join(set, "; "));
}

namespace {

const std::string& RanAs(const FailureReport& report) { return report.ran_as.empty() ? report.adapter : report.ran_as; }

}  // namespace

std::string AdapterCopyName(const FailureReport& report) {
  const std::optional<AdapterFile> file = FindAdapterFile(RanAs(report));
  if (!file) return "";
  const std::string name = std::filesystem::path(file->path).filename().string();
  for (const char* taken : {"case.json", "meta.json", "report.md", "report.html"})
    if (name == taken) return "adapter-" + name;
  return name;
}

std::string ReportReplayCommand(const FailureReport& report, std::string_view case_file) {
  return ReplayCommand(case_file, WithAbsoluteAdapterFile(RanAs(report)), report.law);
}

std::string ReportFolderReplayCommand(const FailureReport& report, std::string_view dir) {
  const std::string copy = AdapterCopyName(report);
  std::error_code ignored;
  if (copy.empty() || !std::filesystem::exists(std::filesystem::path(dir) / copy, ignored)) {
    return FolderReplayCommand(WithAbsoluteAdapterFile(RanAs(report)), report.law);
  }
  return FolderReplayCommand(WithAdapterFile(RanAs(report), "./" + copy), report.law);
}

bool HandsOffDownstream(const FailureReport& report) { return FindAdapterFile(RanAs(report)).has_value(); }

std::string DownstreamRegression(const FailureReport& report, std::string_view case_file) {
  const std::string corpus_file = fmt::format("{}-{}.json", report.law, Hash8(report.c));
  const std::optional<AdapterFile> file = FindAdapterFile(RanAs(report));
  const std::string library = std::filesystem::path(file ? file->path : "").filename().string();
  std::string text = fmt::format(
      "Keep the case in your project's corpus folder (here `corpus/`); `attncheck_add_corpus` replays every case "
      "there in your ctest, and the test passes once the law holds (the file name names the law):\n\n"
      "```sh\ncp {} corpus/{}\n```\n\n",
      ShellQuoted(std::filesystem::absolute(case_file).lexically_normal().string()), corpus_file);
  text += "In your CMakeLists.txt, once (the installed attncheck package; "
          "`share/attncheck/examples/downstream` in the install is a whole project doing it):\n\n```cmake\n"
          "find_package(attncheck REQUIRED)\nenable_testing()\n";
  const std::string_view ran = RanAs(report);
  if (ran.find("plugin:") != std::string_view::npos) {
    std::string target = std::filesystem::path(library).stem().string();
    if (target.starts_with("lib")) target = target.substr(3);
    text += fmt::format("# TARGET: the library target that builds {}\nattncheck_add_corpus(DIR corpus TARGET {})\n",
                        library, target.empty() ? "my_kernel" : target);
  } else {
    const std::string_view command = ran.starts_with("isolated:") ? ran.substr(9) : ran;
    text += fmt::format("# ADAPTER: the backend command, with paths that hold where ctest runs\n"
                        "attncheck_add_corpus(DIR corpus ADAPTER {})\n",
                        reports::CppStringLiteral(WithAbsoluteAdapterFile(command)));
  }
  return text + "```\n\n";
}

nlohmann::json MetaJson(const FailureReport& report) {
  nlohmann::json meta = {{"law", report.law},
                           {"adapter", report.adapter},
                           {"ran_as", WithAbsoluteAdapterFile(RanAs(report))},
                           {"isolation", std::string(Isolation(RanAs(report)))},
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

  md += v.influence_of_gradients
            ? "`report.html` beside this file draws the expected visibility against the measured gradient influence "
              "map (dK/dV: which keys received gradient from each query row; leaks red, over-masking blue) and the "
              "per-row error.\n\n"
            : "`report.html` beside this file draws the expected visibility against the measured influence map "
              "(leaks red, over-masking blue) and the per-row error.\n\n";
  md += "## Case\n\n```text\n" + ToLine(report.c) + "\n```\n\n";
  md += fmt::format("Saved as `{}`; `meta.json` beside it names the law, adapter, seed and case index.\n\n",
                    case_file);
  if (report.original) {
    md += fmt::format("Shrunk from the case the run found ({}):\n\n```text\n{}\n```\n\n", report.shrink_note,
                      ToLine(*report.original));
  }

  if (const std::optional<RanScenario> ran = DescribeRanScenario(report)) {
    md += "## Scenario the law ran\n\n";
    for (const std::string& note : ran->notes) md += note + "\n\n";
    if (!ran->case_line.empty()) md += "```text\n" + ran->case_line + "\n```\n\n";
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
    const std::string_view last = w.last_index();
    const bool key = w.key >= 0;
    md += fmt::format("| b | h | i | {} |{} got | want | error | bound |\n", last, key ? " key |" : "");
    md += fmt::format("|---|---|---|---|{}-----|------|-------|-------|\n", key ? "-----|" : "");
    md += fmt::format("| {} | {} | {} | {} |{} {} | {} | {} | {} |\n\n", w.b, w.h, w.i, w.j,
                      key ? fmt::format(" {} |", w.key) : "", Exact(w.got), Exact(w.want), Exact(w.error),
                      BoundText(w.bound, w.got, w.want, report.c.dtype));
    if (!w.tensor.empty()) md += fmt::format("- element: {}\n", Describe(w));
    md += fmt::format("- max abs: {}\n- max rel: {}\n- bound: {}\n\n", Exact(v.max_abs), Exact(v.max_rel),
                      BoundText(v.bound, w.got, w.want, report.c.dtype));
    const ComparedRow row = CompareRow(w, report.c.dtype);
    if (!row.lines.empty()) {
      md += fmt::format("## Got against want on {}[b={}, h={}, i={}, ·]\n\n", w.tensor, w.b, w.h, w.i);
      md += fmt::format("| {} |\n|---|---|---|---|-----|------|-------|-------|\n", fmt::join(row.header, " | "));
      for (size_t n = 0; n < row.lines.size(); ++n) {
        ComparedLine line = row.lines[n];
        if (row.worst[n]) line[3] = "**" + line[3] + "** (worst)";
        md += fmt::format("| {} |\n", fmt::join(line, " | "));
      }
      if (static_cast<int>(row.lines.size()) < row.dims)
        md += fmt::format("\n({} of the row's {} dims: those with the largest error.)\n", row.lines.size(), row.dims);
      md += "\n";
    }
  }

  md += "## Replay\n\nOn this machine:\n\n```sh\n" + ReportReplayCommand(report, case_file) +
        "\n```\n\nFrom inside this folder, also once it is copied or zipped and sent elsewhere:\n\n```sh\n" +
        ReportFolderReplayCommand(report, dir) + "\n```\n\n";
  if (const std::string copy = AdapterCopyName(report);
      !copy.empty() && std::filesystem::exists(std::filesystem::path(dir) / copy)) {
    md += fmt::format("`{}` in this folder is a copy of the file the adapter ran ({}); the folder command runs "
                      "that copy, the first one the file where it is now.\n\n",
                      copy, ShellQuoted(FindAdapterFile(WithAbsoluteAdapterFile(RanAs(report)))->path));
  }
  md += "It exits 1 while the law still fails, 0 once it holds (3 when the adapter crashes or hangs).\n\n";

  md += "## Regression test\n\n";
  if (HandsOffDownstream(report)) {
    md += DownstreamRegression(report, case_file);
    md += "## Environment\n\n" + reports::Fingerprint() + "\n\nVariables that change a run: " + EnvironmentLine() +
          "\n";
    return md;
  }
  md += "Add the case to the corpus (the test suite replays every file there on each run):\n\n";
  md += fmt::format("```sh\ncp {} {}\n```\n\n", ShellQuoted(case_file), regression);
  md += "or pin it to this adapter with a test:\n\n```cpp\n";
  md += fmt::format("TEST(Regression, {}_{}) {{\n", LawTestName(report.law), hash8);
  md += fmt::format("  Case c = ReadCaseFile({});\n", reports::CppStringLiteral(regression));
  md += fmt::format("  auto a = MakeAdapter({});\n", reports::CppStringLiteral(report.adapter));
  md += fmt::format("  EXPECT_TRUE({}(*a, c, Options{{}}).passed());\n", LawCheckFunction(report.law));
  md += "}\n```\n\n";
  md += "(`cases/case_json.h`, `adapters/registry.h`, `properties/laws.h`; in tests/, prefix the path "
        "with `ATTNCHECK_SOURCE_DIR \"/\"`.)\n\n";

  md += "## Environment\n\n" + reports::Fingerprint() + "\n\nVariables that change a run: " + EnvironmentLine() + "\n";
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
  nlohmann::json meta = MetaJson(report);
  if (const std::optional<std::string> copy = reports::CopyAdapterFile(report, dir)) {
    meta["adapter_file"] = {{"path", FindAdapterFile(meta["ran_as"].get<std::string>())->path}, {"copy", *copy}};
  }
  WriteFileAtomic(written.meta_file, meta.dump(2) + "\n");
  WriteCaseFile(written.case_file, report.c);
  WriteFileAtomic(written.report_file, MarkdownReport(report, written.dir));
  WriteFileAtomic(written.html_file, HtmlReport(report, written.dir));
  return written;
}

}  // namespace attncheck
