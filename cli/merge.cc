// `attncheck merge OUT_DIR IN_DIR…`: unions corpora (DESIGN §9), e.g. the
// --corpus folders of the shards of one campaign. Entries are the same when law
// and case hash are; duplicates become one entry whose sidecar lists the
// adapters of all of them. OUT_DIR may already hold a corpus: its entries take
// part like any input. Entries that agree on law and case but disagree on what
// replaying must give (expect fail vs pass) cannot share one file: the first is
// kept and the conflict is printed.
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "cases/case_json.h"
#include "cases/corpus.h"
#include "cases/error.h"
#include "cli/commands.h"

namespace attncheck::cli {
namespace {

struct MergeOptions {
  std::string out;
  std::vector<std::string> inputs;
};

int RunMerge(const MergeOptions& options) {
  namespace fs = std::filesystem;
  std::vector<std::string> folders = {options.out};
  for (const std::string& in : options.inputs) {
    std::error_code error;
    if (!fs::is_directory(in, error)) throw InputError(in, "", "not a folder");
    folders.push_back(in);
  }
  // Read everything first: a malformed entry stops the merge before anything is written.
  std::map<std::pair<std::string, uint64_t>, CorpusEntry> merged;  // (law, case hash) → entry
  std::vector<std::pair<std::string, uint64_t>> order;
  size_t read = 0, duplicates = 0, conflicts = 0, existing = 0;
  for (size_t f = 0; f < folders.size(); ++f) {
    for (CorpusEntry& entry : ReadCorpus(folders[f])) {
      if (f == 0) ++existing;
      else ++read;
      const std::pair<std::string, uint64_t> key{entry.meta.law, Hash(entry.c)};
      const auto found = merged.find(key);
      if (found == merged.end()) {
        order.push_back(key);
        merged.emplace(key, std::move(entry));
        continue;
      }
      ++duplicates;
      CorpusMeta& kept = found->second.meta;
      if (kept.expect != entry.meta.expect) {
        ++conflicts;
        fmt::print(stderr, "attncheck: {} expects {} but {} expects {}; kept the first\n", entry.case_file,
                   entry.meta.expect, found->second.case_file, kept.expect);
        continue;
      }
      // An empty adapter list means every relevant adapter: it absorbs any list.
      if (kept.adapters.empty() || entry.meta.adapters.empty()) {
        kept.adapters.clear();
      } else {
        for (const std::string& a : entry.meta.adapters) {
          if (std::find(kept.adapters.begin(), kept.adapters.end(), a) == kept.adapters.end()) {
            kept.adapters.push_back(a);
          }
        }
      }
      if (kept.finding.empty()) kept.finding = entry.meta.finding;
      if (kept.note.empty()) kept.note = entry.meta.note;
      found->second.has_meta = found->second.has_meta || entry.has_meta;
    }
  }

  std::error_code error;
  fs::create_directories(options.out, error);
  if (error) throw InputError(options.out, "", "cannot create the folder: " + error.message());
  for (const auto& key : order) {
    const CorpusEntry& entry = merged.at(key);
    const std::string case_file = (fs::path(options.out) / CorpusFileName(entry.meta.law, entry.c)).string();
    WriteCaseFile(case_file, entry.c);
    // An entry without a sidecar stays without one (same meaning: every adapter, expect pass).
    if (entry.has_meta) WriteCorpusMeta(MetaPathFor(case_file), entry.meta);
  }
  fmt::print("merge: {} entries read from {} folder{}{}; {} duplicates dropped{}; {} entries in {}\n", read,
             options.inputs.size(), options.inputs.size() == 1 ? "" : "s",
             existing > 0 ? fmt::format(" (+{} already in {})", existing, options.out) : "", duplicates,
             conflicts > 0 ? fmt::format(" ({} conflicting)", conflicts) : "", order.size(), options.out);
  return kExitHeld;
}

}  // namespace

Command AddMergeCommand(CLI::App& program) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* app = program.add_subcommand(
      "merge", "Union corpus folders into OUT_DIR, dropping duplicate cases (same law and case hash)");
  app->add_option("out", options->out, "Output corpus folder (created; existing entries are kept)")->required();
  app->add_option("inputs", options->inputs, "Corpus folders to merge (e.g. the --corpus of each shard)")
      ->required();
  return {app, [options] { return RunMerge(*options); }};
}

}  // namespace attncheck::cli
