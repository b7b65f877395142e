// Corpus files (DESIGN §7): a corpus entry is a plain case file
// `<dir>/<law>-<hash8>.json` (what ReadCaseFile reads) with a sidecar
// `<law>-<hash8>.meta.json` saying which law, which adapters it was recorded
// against, and what replaying it must give there ("fail": a mutant or a finding
// not yet fixed; "pass": a seed, or a bug since fixed). corpora/seeds/ and
// corpora/regressions/ hold such entries; `attncheck fuzz` and `shrink` write them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cases/case.h"

namespace attncheck {

struct CorpusMeta {
  std::string law;                    // law name, as in AllLaws()
  std::vector<std::string> adapters;  // adapters it was recorded against (empty: every relevant one)
  std::string expect = "fail";        // "fail", "hazard", "error" or "pass": what replaying on `adapters` must give
  std::string finding;                // FINDINGS.md id ("F1"), or empty
  std::string note;                   // one line, or empty
  bool operator==(const CorpusMeta&) const = default;
};

struct CorpusEntry {
  std::string case_file;  // path of the case file
  std::string meta_file;  // path of its sidecar (may not exist)
  Case c;
  CorpusMeta meta;
  bool has_meta = false;  // false: law comes from the file name, adapters empty, expect "pass"
};

// "<law>-<hash8>.json"
std::string CorpusFileName(std::string_view law, const Case& c);
// "x.json" → "x.meta.json"
std::string MetaPathFor(std::string_view case_file);

// Strict reader of a sidecar (unknown keys, wrong types, expect not fail|hazard|error|pass →
// InputError naming file and field).
CorpusMeta ReadCorpusMeta(const std::string& meta_file);
void WriteCorpusMeta(const std::string& meta_file, const CorpusMeta& meta);

// Writes <dir>/<law>-<hash8>.json and its sidecar (atomic writes). When the
// entry exists already, the adapters are merged (a case failing on two
// adapters is one entry). Returns the case file path.
std::string WriteCorpusEntry(const std::string& dir, const Case& c, const CorpusMeta& meta);

// Every case file under `dir` (recursively, sorted by path; *.meta.json are
// sidecars, not cases), each with its sidecar when present. Without a sidecar
// the law is the file-name part before the last '-'. A malformed file throws
// InputError. A missing `dir` gives an empty list.
std::vector<CorpusEntry> ReadCorpus(const std::string& dir);

}  // namespace attncheck
