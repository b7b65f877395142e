// `attncheck shrink CASE.json --law L --adapter A [--out DIR] [--seconds S]`:
// shrinks a failing case with the domain shrinker (cases/shrink.h) while the
// same law still fails the same way on every adapter named (properties/
// shrink_failure.h), writes the minimal case and prints the sizes before and
// after. The law and adapters default to the corpus sidecar or report meta.json
// beside the case, as for `replay`. Exit 1 when the case fails (the minimal case
// still does), 3 when it errors, 0 when it does not fail at all (nothing to
// shrink), 2 on bad input.
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/corpus.h"
#include "cases/error.h"
#include "cases/shrink.h"
#include "cli/commands.h"
#include "properties/shrink_failure.h"

namespace attncheck::cli {
namespace {

struct ShrinkCliOptions {
  std::string file;
  std::vector<std::string> adapters;
  std::string law;
  std::string out;          // corpus folder; empty: write <law>-<hash8>.json here
  std::string note;         // sidecar note (--out)
  double seconds = 60.0;
  int attempts = 5000;
  bool verbose = false;
  std::vector<std::string> keep;  // fields the shrink must not change
};

// The fields --keep can pin, and whether a candidate still has the original's.
struct KeptField {
  std::string_view name;
  bool (*same)(const Case& a, const Case& b);
};
constexpr KeptField kKeepable[] = {
    {"mask", [](const Case& a, const Case& b) { return a.mask == b.mask; }},
    {"dtype", [](const Case& a, const Case& b) { return a.dtype == b.dtype; }},
    {"encoding", [](const Case& a, const Case& b) { return a.encoding == b.encoding; }},
    {"visibility", [](const Case& a, const Case& b) {
       return a.visibility == b.visibility && a.window == b.window && a.window_right == b.window_right &&
              a.chunk == b.chunk;
     }},
    {"heads", [](const Case& a, const Case& b) { return a.q_heads == b.q_heads && a.kv_heads == b.kv_heads; }},
    {"numerics", [](const Case& a, const Case& b) { return a.scale == b.scale && a.softcap == b.softcap; }},
    {"data", [](const Case& a, const Case& b) { return a.seed == b.seed && a.profile == b.profile; }},
};

std::string KeepableNames() {
  std::string names;
  for (const KeptField& f : kKeepable) names += (names.empty() ? "" : ", ") + std::string(f.name);
  return names;
}

std::atomic<bool> interrupted{false};
extern "C" void OnInterrupt(int) { interrupted = true; }

// Law and adapters from the corpus sidecar, or a report folder's meta.json.
CorpusMeta MetaBeside(const std::string& case_file) {
  CorpusMeta meta;
  meta.expect = "fail";
  std::error_code ignored;
  const std::string sidecar = MetaPathFor(case_file);
  if (std::filesystem::exists(sidecar, ignored)) return ReadCorpusMeta(sidecar);
  const std::filesystem::path path = std::filesystem::path(case_file).parent_path() / "meta.json";
  std::ifstream in(path);
  if (!in) return meta;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw InputError(path.string(), "", "not a JSON object");
  for (const char* field : {"law", "adapter"}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_string()) throw InputError(path.string(), field, "expected a string");
  }
  if (j.contains("law")) meta.law = j["law"].get<std::string>();
  if (j.contains("adapter")) meta.adapters.push_back(j["adapter"].get<std::string>());
  return meta;
}

int RunShrink(const ShrinkCliOptions& options) {
  const std::string file = ResolveCaseFile(options.file);
  const Case original = ReadCaseFile(file);
  const CorpusMeta beside = (options.law.empty() || options.adapters.empty()) ? MetaBeside(file) : CorpusMeta{};
  if (options.law.empty() && beside.law.empty()) {
    throw InputError(file, "", "no --law given and no sidecar or meta.json beside the case names one");
  }
  if (options.adapters.empty() && beside.adapters.empty()) {
    throw InputError(file, "", "no --adapter given and no sidecar or meta.json beside the case names one");
  }
  const std::vector<const Law*> laws = ResolveLaws({options.law.empty() ? beside.law : options.law});
  if (laws.size() != 1) throw InputError::Option("--law", "name exactly one law (a pattern matched several)");
  const Law& law = *laws.front();
  const std::vector<std::string> names = ResolveAdapters(options.adapters.empty() ? beside.adapters : options.adapters);

  std::vector<std::unique_ptr<Adapter>> owned;
  std::vector<Adapter*> adapters;
  std::vector<Verdict> verdicts;
  int failing = 0, erroring = 0;
  for (const std::string& name : names) {
    owned.push_back(MakeAdapter(name));
    adapters.push_back(owned.back().get());
    verdicts.push_back(RunLaw(law, *owned.back(), original, Options{}));
    const Verdict& v = verdicts.back();
    fmt::print("{} × {}: {}{}\n", law.name, name, Name(v.outcome), v.message.empty() ? "" : ": " + FirstLine(v.message));
    if (v.failed()) ++failing;
    if (IsAdapterError(v.outcome)) ++erroring;
  }
  if (failing + erroring < static_cast<int>(names.size())) {
    fmt::print("nothing to shrink: the case does not fail {} on {}\n", law.name,
               names.size() == 1 ? names.front() : "every adapter named");
    return kExitHeld;
  }

  std::vector<const KeptField*> kept;
  for (const std::string& name : options.keep) {
    const KeptField* found = nullptr;
    for (const KeptField& f : kKeepable) {
      if (f.name == name) found = &f;
    }
    if (!found) throw InputError::Option("--keep", fmt::format("unknown field '{}' (fields: {})", name, KeepableNames()));
    kept.push_back(found);
  }

  ShrinkOptions shrink_options;
  if (!kept.empty()) {
    shrink_options.admissible = [&](const Case& candidate) {
      for (const KeptField* f : kept) {
        if (!f->same(candidate, original)) return false;
      }
      return true;
    };
  }
  shrink_options.max_seconds = options.seconds;
  shrink_options.max_attempts = options.attempts;
  shrink_options.should_stop = [] { return interrupted.load(); };
  interrupted = false;
  auto* previous = std::signal(SIGINT, OnInterrupt);
  const ShrunkFailures shrunk = ShrinkFailure(law, adapters, original, verdicts, Options{}, shrink_options);
  std::signal(SIGINT, previous);
  const Case& minimal = shrunk.shrink.minimal;

  fmt::print("before:  {}\n         {}\n", SizeLine(original), ToLine(original));
  fmt::print("after:   {}\n         {}\n", SizeLine(minimal), ToLine(minimal));
  fmt::print("shrink:  {} attempts, {} changes kept, {:.2f} s{}\n", shrunk.shrink.attempts, shrunk.shrink.accepted,
             shrunk.shrink.seconds,
             shrunk.shrink.stopped ? interrupted ? " (interrupted)" : " (stopped by --seconds/--attempts)" : "");
  if (options.verbose) {
    for (const std::string& change : shrunk.shrink.changes) fmt::print("  {}\n", change);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    fmt::print("verdict: {} on {}: {}\n", Name(shrunk.verdicts[i].outcome), names[i],
               FirstLine(shrunk.verdicts[i].message));
  }

  std::string written;
  if (!options.out.empty()) {
    CorpusMeta meta;
    meta.law = std::string(law.name);
    meta.adapters = names;
    meta.expect = "fail";
    meta.finding = beside.finding;
    meta.note = options.note.empty() ? beside.note : options.note;
    written = WriteCorpusEntry(options.out, minimal, meta);
  } else {
    written = CorpusFileName(law.name, minimal);
    WriteCaseFile(written, minimal);
  }
  fmt::print("written: {}\n", written);
  fmt::print("replay:  attncheck replay {} --law {} --adapter {}\n", written, law.name, fmt::join(names, " --adapter "));

  OutcomeCounts counts;
  for (const Verdict& v : shrunk.verdicts) counts.Add(v.outcome);
  std::fflush(stdout);
  return counts.ExitCode();
}

}  // namespace

Command AddShrinkCommand(CLI::App& program) {
  auto options = std::make_shared<ShrinkCliOptions>();
  CLI::App* app = program.add_subcommand(
      "shrink", "Shrink a failing case to a minimal one that fails the same law the same way; exit 1 when it fails");
  app->add_option("case", options->file, "Case file (JSON), a corpus sidecar, or a report folder")->required();
  app->add_option("--law,-l", options->law, "Law that fails (default: the one named beside the case)");
  app->add_option("--adapter,-a", options->adapters,
                  "Adapter it fails on (repeatable: the case must keep failing on each; default: the ones "
                  "named beside the case)")
      ->allow_extra_args(false);
  app->add_option("--out,-o", options->out,
                  "Corpus folder: write <law>-<hash8>.json with its .meta.json sidecar there (default: "
                  "write <law>-<hash8>.json, no sidecar, in the current folder)");
  app->add_option("--note", options->note, "One line for the sidecar's note (with --out)");
  app->add_option("--seconds", options->seconds, "Wall-clock limit of the shrink")
      ->capture_default_str()
      ->check(PositiveSeconds());
  app->add_option("--attempts", options->attempts, "Most candidate cases to check")
      ->capture_default_str()
      ->check(IntIn(1, 100000000));
  app->add_option("--keep", options->keep,
                  "Do not change this part of the case (repeatable): " + KeepableNames())
      ->allow_extra_args(false);
  app->add_flag("--verbose,-v", options->verbose, "List every change kept");
  return {app, [options] { return RunShrink(*options); }};
}

}  // namespace attncheck::cli
