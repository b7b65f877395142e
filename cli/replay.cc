// `attncheck replay CASE.json…`: runs saved cases again (files, failure folders,
// a gate's report folder with one failure folder each, or corpus folders) and
// prints each verdict with full precision. The law and adapter come from --law /
// --adapter, else from the corpus sidecar <name>.meta.json or the meta.json a
// failure folder keeps beside its case.json: there the adapter as the run made it
// (isolated or not), running the folder's copy of a plugin library or exec:
// script. plugin:PATH runs isolated, as in gate, unless --in-process: a crash is a
// verdict. Exit 1 while the law still fails, 0 once it holds (or the case is
// skipped), 3 on an adapter error.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/corpus.h"
#include "cases/error.h"
#include "cli/commands.h"
#include "reports/adapter_file.h"
#include "reports/finding.h"
#include "reports/html.h"
#include "reports/summary.h"

namespace attncheck::cli {
namespace {

struct ReplayOptions {
  std::vector<std::string> files;
  std::vector<std::string> adapters;
  std::vector<std::string> laws;
  std::string report_dir;  // --report-dir: write a report folder per failure and index.html
  bool in_process = false;  // --in-process: load plugin: adapters into the replay itself
  HazardPolicy hazards = HazardPolicy::kReport;  // --hazards
};

struct Meta {
  std::string law;                    // empty when absent
  std::vector<std::string> adapters;  // empty when absent
};

// The adapter a failure folder's meta.json says ran: "ran_as" (else "adapter"),
// with the folder's copy of the file it runs ("adapter_file": {"copy"}) in place
// of the original where the folder keeps one.
std::string FolderAdapter(const nlohmann::json& j, const std::filesystem::path& meta_file) {
  const char* field = j.contains("ran_as") ? "ran_as" : "adapter";
  if (!j.contains(field)) return "";
  if (!j[field].is_string()) throw InputError(meta_file.string(), field, "expected a string");
  const std::string adapter = j[field].get<std::string>();
  if (!j.contains("adapter_file")) return adapter;
  const nlohmann::json& file = j["adapter_file"];
  if (!file.is_object() || !file.contains("path") || !file["path"].is_string() || !file.contains("copy") ||
      !file["copy"].is_string()) {
    throw InputError(meta_file.string(), "adapter_file", "expected {\"path\": \"<file>\", \"copy\": \"<file name>\"}");
  }
  // Where the adapter name writes the file (it may be gone: it is not looked up).
  const std::string original = file["path"].get<std::string>();
  const size_t at = adapter.find(original);
  const std::filesystem::path copy = meta_file.parent_path() / file["copy"].get<std::string>();
  std::error_code ignored;
  if (at == std::string::npos || !std::filesystem::is_regular_file(copy, ignored)) return adapter;  // the original
  return WithAdapterFile(adapter, AdapterFile{original, at}, std::filesystem::absolute(copy).lexically_normal().string());
}

// The corpus sidecar <name>.meta.json (cases/corpus.h), else the meta.json of a
// failure folder beside the case file, if any.
Meta ReadMeta(const std::string& case_file) {
  Meta meta;
  const std::string sidecar = MetaPathFor(case_file);
  std::error_code ignored;
  if (std::filesystem::exists(sidecar, ignored)) {
    const CorpusMeta corpus = ReadCorpusMeta(sidecar);
    meta.law = corpus.law;
    meta.adapters = corpus.adapters;
    return meta;
  }
  const std::filesystem::path path = std::filesystem::path(case_file).parent_path() / "meta.json";
  std::ifstream in(path);
  if (!in) return meta;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw InputError(path.string(), "", "not a JSON object");
  if (j.contains("law")) {
    if (!j["law"].is_string()) throw InputError(path.string(), "law", "expected a string");
    meta.law = j["law"].get<std::string>();
  }
  if (std::string adapter = FolderAdapter(j, path); !adapter.empty()) meta.adapters.push_back(std::move(adapter));
  return meta;
}

struct CaseInput {
  std::string file;
  Case c;
  Meta meta;
};

// The failure folders (<folder>/case.json) directly in `dir`, sorted; empty when
// `dir` is no gate's report folder.
std::vector<std::string> FailureFolders(const std::string& dir) {
  std::vector<std::string> folders;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ignored)) {
    if (entry.is_directory(ignored) && std::filesystem::is_regular_file(entry.path() / "case.json", ignored)) {
      folders.push_back(entry.path().string());
    }
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

// The cases one argument names: a case file, a failure folder's case.json, the
// case.json of every failure folder in a gate's report folder, or every case of a
// corpus folder (cases/corpus.h ReadCorpus: *.json recursively, the .meta.json
// sidecars read as meta, not as cases).
std::vector<CaseInput> ReadCaseInputs(const std::string& argument, bool need_meta) {
  std::error_code ignored;
  const bool folder = std::filesystem::is_directory(argument, ignored) &&
                      !std::filesystem::exists(std::filesystem::path(argument) / "case.json", ignored);
  std::vector<CaseInput> inputs;
  const std::vector<std::string> failure_folders = folder ? FailureFolders(argument) : std::vector<std::string>{};
  for (const std::string& failure : failure_folders) {
    const std::string file = (std::filesystem::path(failure) / "case.json").string();
    inputs.push_back({file, ReadCaseFile(file), need_meta ? ReadMeta(file) : Meta{}});
  }
  if (!failure_folders.empty()) return inputs;
  if (!folder) {
    const std::string file = ResolveCaseFile(argument);
    inputs.push_back({file, ReadCaseFile(file), need_meta ? ReadMeta(file) : Meta{}});
    return inputs;
  }
  for (CorpusEntry& entry : ReadCorpus(argument)) {
    inputs.push_back({entry.case_file, std::move(entry.c), {entry.meta.law, entry.meta.adapters}});
  }
  if (inputs.empty()) throw InputError(argument, "", "no case files (*.json) in the folder");
  return inputs;
}

struct Job {
  std::string file;
  Case c;
  std::vector<const Law*> laws;
  std::vector<std::string> adapters;
};

std::string Full(double x) { return fmt::format("{:.17g}", x); }

void PrintVerdict(const Job& job, const Law& law, const std::string& adapter, const Verdict& v) {
  fmt::print("file:     {}\n", job.file);
  fmt::print("law:      {}\n", law.name);
  fmt::print("adapter:  {}\n", adapter);
  fmt::print("case:     {}\n", ToLine(job.c));
  fmt::print("verdict:  {}\n", Name(v.outcome));
  if (IsAdapterError(v.outcome)) fmt::print("fault:    {}\n", Name(v.fault));  // crash, timeout, …
  if (!v.message.empty()) {
    std::string message = v.message;
    for (size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at + 1)) {
      message.insert(at + 1, "          ");
    }
    fmt::print("message:  {}\n", message);
  }
  if (v.outcome == Outcome::kPass || v.outcome == Outcome::kFail || v.outcome == Outcome::kHazard) {
    const WorstElement& w = v.worst;
    // One name per index (the last is j for a key, d for a dim: WorstElement::last_index).
    fmt::print("worst:    {}\n", w.tensor.empty() ? fmt::format("b={} h={} i={} {}={}", w.b, w.h, w.i,
                                                                  w.last_index(), w.j)
                                                     : Describe(w));
    fmt::print("  got:    {}\n  want:   {}\n  error:  {}\n  bound:  {}\n", Full(w.got), Full(w.want), Full(w.error),
               Full(w.bound));
    fmt::print("max abs:  {}\nmax rel:  {}\n", Full(v.max_abs), Full(v.max_rel));
    // The law's bound once, where it is not the worst element's own.
    if (!(v.bound == w.bound || (std::isnan(v.bound) && std::isnan(w.bound)))) {
      fmt::print("law bound: {}\n", Full(v.bound));
    }
  }
  fmt::print("\n");
}

int RunReplay(const ReplayOptions& options) {
  // Read every input first: a malformed file stops the run before anything runs.
  const std::vector<const Law*> given_laws = options.laws.empty() ? std::vector<const Law*>{} : ResolveLaws(options.laws);
  const std::vector<std::string> given_adapters =
      options.adapters.empty() ? std::vector<std::string>{} : ResolveAdapters(options.adapters);
  std::vector<Job> jobs;
  for (const std::string& argument : options.files) {
    for (CaseInput& input : ReadCaseInputs(argument, given_laws.empty() || given_adapters.empty())) {
      std::vector<std::string> missing;
      if (given_laws.empty() && input.meta.law.empty()) missing.push_back("--law");
      if (given_adapters.empty() && input.meta.adapters.empty()) missing.push_back("--adapter");
      if (!missing.empty()) {
        throw InputError(input.file, "",
                         fmt::format("no {} given and no meta.json beside the case file names {}",
                                     fmt::join(missing, " or "), missing.size() > 1 ? "them" : "it"));
      }
      Job job;
      job.file = std::move(input.file);
      job.c = std::move(input.c);
      job.laws = !given_laws.empty() ? given_laws : ResolveLaws({input.meta.law});
      job.adapters = !given_adapters.empty() ? given_adapters : ResolveAdapters(input.meta.adapters);
      for (std::string& adapter : job.adapters) adapter = RunAs(adapter, options.in_process);
      jobs.push_back(std::move(job));
    }
  }

  OutcomeCounts counts;
  RunSummary reported;  // --report-dir: one result per failing (file, law, adapter)
  FailurePipeline pipeline({.report_dir = options.report_dir});  // no shrinking: the case as saved
  reported.version = std::string(Version());
  for (const Job& job : jobs) {
    for (const std::string& adapter_name : job.adapters) {
      const std::unique_ptr<Adapter> adapter = MakeAdapter(adapter_name);
      for (const Law* law : job.laws) {
        const Verdict v = RunLaw(*law, *adapter, job.c, Options{});
        PrintVerdict(job, *law, adapter_name, v);
        if (!options.report_dir.empty() && IsFinding(v.outcome)) {
          const Finding finding = pipeline.Run(*law, *adapter, adapter_name, job.c, v, Provenance{}, 0.0);
          LawResult result;
          result.law = finding.report.law;
          result.adapter = adapter_name;
          result.Add(v);
          result.failures.push_back(finding.Record());
          reported.results.push_back(std::move(result));
          fmt::print("report:   {}\n\n", finding.written.html_file);
        }
        counts.Add(v.outcome);
      }
    }
  }
  if (!options.report_dir.empty()) {
    std::filesystem::create_directories(options.report_dir);
    fmt::print("index:    {}\n", WriteIndexHtml(options.report_dir, reported));
  }
  if (counts.total() > 1) {
    fmt::print("{} passed, {} failed, {} hazards, {} errors, {} skipped\n", counts[Outcome::kPass],
               counts[Outcome::kFail], counts[Outcome::kHazard], counts[Outcome::kError], counts[Outcome::kSkip]);
  }
  return counts.ExitCode(options.hazards);
}

}  // namespace

Command AddReplayCommand(CLI::App& program) {
  auto options = std::make_shared<ReplayOptions>();
  CLI::App* app = program.add_subcommand(
      "replay", "Run saved cases again and print each verdict; exit 1 while a law still fails, 0 when it holds");
  app->add_option("cases", options->files, "Case files (JSON), failure folders holding case.json and meta.json, a "
                  "gate's report folder (every */case.json in it, each with its meta.json), or corpus folders (every "
                  "*.json in them, recursively; .meta.json sidecars name law and adapters)")
      ->required();
  app->add_option("--adapter,-a", options->adapters,
                  "Adapter to run (repeatable, * patterns; default: the one named in meta.json beside the case)")
      ->allow_extra_args(false);
  app->add_option("--law,-l", options->laws,
                  "Law to check (repeatable, * patterns; default: the one named in meta.json beside the case)")
      ->allow_extra_args(false);
  AddHazardsOption(app, &options->hazards);
  app->add_option("--report-dir", options->report_dir,
                  "Write a report folder (case.json, report.md, report.html) per failure and index.html here");
  app->add_flag("--in-process", options->in_process,
                "Load plugin:PATH adapters into the replay itself (a crash then kills it). Default: plugin:PATH runs "
                "as isolated:plugin:PATH, as in gate, so a crash replays as a crash verdict (exit 3)");
  return {app, [options] { return RunReplay(*options); }};
}

}  // namespace attncheck::cli
