// Corpus entries: case file + sidecar (see corpus.h).
#include "cases/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cases/case_json.h"
#include "cases/error.h"

namespace attncheck {
namespace {

constexpr std::string_view kMetaSuffix = ".meta.json";

std::vector<std::string> StringList(const nlohmann::json& j, const std::string& file, const std::string& field) {
  if (!j.is_array()) throw InputError(file, field, "expected an array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) throw InputError(file, field + "[" + std::to_string(i) + "]", "expected a string");
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

}  // namespace

std::string CorpusFileName(std::string_view law, const Case& c) {
  return std::string(law) + "-" + Hash8(c) + ".json";
}

std::string MetaPathFor(std::string_view case_file) {
  std::string path(case_file);
  if (path.size() >= 5 && path.ends_with(".json")) path.resize(path.size() - 5);
  return path + std::string(kMetaSuffix);
}

CorpusMeta ReadCorpusMeta(const std::string& meta_file) {
  std::ifstream in(meta_file);
  if (!in) throw InputError(meta_file, "", "cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw InputError(meta_file, "", "not valid JSON");
  if (!j.is_object()) throw InputError(meta_file, "", "expected a JSON object");
  CorpusMeta meta;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& value = it.value();
    if (key == "adapters") {
      meta.adapters = StringList(value, meta_file, key);
      continue;
    }
    std::string* field = key == "law" ? &meta.law
                         : key == "expect" ? &meta.expect
                         : key == "finding" ? &meta.finding
                         : key == "note" ? &meta.note
                                         : nullptr;
    if (field == nullptr) {
      throw InputError(meta_file, key, "unknown field (fields: law, adapters, expect, finding, note)");
    }
    if (!value.is_string()) throw InputError(meta_file, key, "expected a string");
    *field = value.get<std::string>();
  }
  if (meta.law.empty()) throw InputError(meta_file, "law", "missing");
  if (meta.expect != "fail" && meta.expect != "hazard" && meta.expect != "error" && meta.expect != "pass") {
    throw InputError(meta_file, "expect",
                     "expected \"fail\", \"hazard\", \"error\" or \"pass\", got \"" + meta.expect + "\"");
  }
  return meta;
}

void WriteCorpusMeta(const std::string& meta_file, const CorpusMeta& meta) {
  nlohmann::json j = {{"law", meta.law}, {"adapters", meta.adapters}, {"expect", meta.expect}};
  if (!meta.finding.empty()) j["finding"] = meta.finding;
  if (!meta.note.empty()) j["note"] = meta.note;
  WriteFileAtomic(meta_file, j.dump(2) + "\n");
}

std::string WriteCorpusEntry(const std::string& dir, const Case& c, const CorpusMeta& meta) {
  const std::string case_file = (std::filesystem::path(dir) / CorpusFileName(meta.law, c)).string();
  const std::string meta_file = MetaPathFor(case_file);
  CorpusMeta merged = meta;
  std::error_code error;
  if (std::filesystem::exists(meta_file, error)) {
    const CorpusMeta old = ReadCorpusMeta(meta_file);
    merged.adapters = old.adapters;
    for (const std::string& a : meta.adapters) {
      if (std::find(merged.adapters.begin(), merged.adapters.end(), a) == merged.adapters.end()) {
        merged.adapters.push_back(a);
      }
    }
    if (merged.finding.empty()) merged.finding = old.finding;
    if (merged.note.empty()) merged.note = old.note;
  }
  WriteCaseFile(case_file, c);
  WriteCorpusMeta(meta_file, merged);
  return case_file;
}

std::vector<CorpusEntry> ReadCorpus(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code error;
  if (!fs::exists(dir, error)) return {};
  if (!fs::is_directory(dir, error)) throw InputError(dir, "", "not a folder");
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir, error)) {
    if (!e.is_regular_file()) continue;
    const std::string path = e.path().string();
    if (!path.ends_with(".json") || path.ends_with(kMetaSuffix)) continue;
    files.push_back(path);
  }
  if (error) throw InputError(dir, "", "cannot list the folder: " + error.message());
  std::sort(files.begin(), files.end());
  std::vector<CorpusEntry> entries;
  for (const std::string& path : files) {
    CorpusEntry entry;
    entry.case_file = path;
    entry.meta_file = MetaPathFor(path);
    entry.c = ReadCaseFile(path);
    if (fs::exists(entry.meta_file, error)) {
      entry.meta = ReadCorpusMeta(entry.meta_file);
      entry.has_meta = true;
    } else {
      const std::string stem = fs::path(path).stem().string();
      const size_t dash = stem.rfind('-');
      entry.meta.law = dash == std::string::npos ? stem : stem.substr(0, dash);
      entry.meta.expect = "pass";
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace attncheck
