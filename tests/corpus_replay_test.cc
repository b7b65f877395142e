// Corpus replay (DESIGN §7, cases/corpus.h): every case under corpora/ is run on
// every adapter it is relevant to, one test per case file.
// - expect "fail" (a mutant, or a finding in a real kernel not yet fixed): the law
//   must still fail on each adapter the sidecar names; an adapter that is not
//   built here (ggml without its source) is skipped with that reason.
// - expect "hazard" (behaviour a real kernel's contract allows but that is
//   dangerous, FINDINGS.md): the law must still report a hazard, not a failure.
// - expect "error" (a real kernel that throws on a valid call, FINDINGS.md): the
//   adapter must still answer the case with an error.
// - expect "pass" (a seed, or a bug since fixed): the law must hold on each
//   adapter the sidecar names, or when it names none on every correct built-in
//   adapter (`attncheck list`: not mutants, not external libraries); a skip
//   verdict (capabilities do not cover the case) is printed with its reason, and
//   at least one adapter must really run the case.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "adapters/mutants/mutants.h"
#include "adapters/registry.h"
#include "cases/corpus.h"
#include "properties/laws.h"

namespace attncheck {
namespace {

const std::filesystem::path kCorpora = std::filesystem::path(ATTNCHECK_SOURCE_DIR) / "corpora";

const std::vector<CorpusEntry>& Entries() {
  static const std::vector<CorpusEntry> entries = ReadCorpus(kCorpora.string());
  return entries;
}

bool IsBuilt(const std::string& adapter) {
  const std::vector<AdapterInfo> infos = ListAdapters();
  return std::any_of(infos.begin(), infos.end(), [&](const AdapterInfo& info) {
    if (info.description.starts_with("unavailable")) return false;  // listed, not built (libtorch)
    return info.kind == AdapterKind::kScheme ? adapter.starts_with(info.name) : info.name == adapter;
  });
}

std::vector<std::string> CorrectBuiltIns() {
  std::vector<std::string> names;
  for (const AdapterInfo& info : ListAdapters()) {
    if (InDefaultGate(info.kind)) names.push_back(info.name);
  }
  return names;
}

std::string Relative(const std::string& path) {
  return std::filesystem::relative(path, kCorpora.parent_path()).generic_string();
}

class CorpusReplay : public testing::TestWithParam<size_t> {};

TEST_P(CorpusReplay, Replays) {
  const CorpusEntry& entry = Entries()[GetParam()];
  const std::string file = Relative(entry.case_file);
  ASSERT_TRUE(entry.has_meta) << file << ": every corpus case needs its .meta.json sidecar";
  const Law* law = FindLaw(entry.meta.law);
  ASSERT_NE(law, nullptr) << file << ": unknown law '" << entry.meta.law << "'";
  const bool expect_fail = entry.meta.expect != "pass";  // "fail", "hazard" or "error": a finding of that class
  ASSERT_TRUE(!expect_fail || !entry.meta.adapters.empty())
      << file << ": expect " << entry.meta.expect << " needs the adapters it fails on";

  const std::vector<std::string> adapters = entry.meta.adapters.empty() ? CorrectBuiltIns() : entry.meta.adapters;
  int ran = 0;
  std::vector<std::string> ran_on, not_built;
  for (const std::string& name : adapters) {
    if (!IsBuilt(name)) {
      not_built.push_back(name);
      continue;
    }
    const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
    const Verdict v = RunLaw(*law, *adapter, entry.c, Options{});
    const std::string where = fmt::format("{} × {} on {}", law->name, name, file);
    if (v.skipped()) {
      fmt::print("  skip {}: {}\n", where, v.message);
      EXPECT_FALSE(expect_fail) << where << ": recorded as failing but now skipped: " << v.message;
      continue;
    }
    ++ran;
    ran_on.push_back(name);
    if (expect_fail) {
      EXPECT_EQ(Name(v.outcome), entry.meta.expect)
          << where << ": recorded as " << entry.meta.expect << (entry.meta.finding.empty() ? "" : " (finding ")
                              << entry.meta.finding << (entry.meta.finding.empty() ? "" : ")") << " but now "
                              << Name(v.outcome) << (v.message.empty() ? "" : ": " + v.message)
                              << "\n  if the kernel was fixed, set \"expect\": \"pass\" in the sidecar";
    } else {
      EXPECT_TRUE(v.passed()) << where << ": " << Name(v.outcome) << ": " << v.message;
    }
  }
  fmt::print("  {} expect {}: ran on {}\n", file, entry.meta.expect, ran_on.empty() ? "none" : fmt::format("{}", fmt::join(ran_on, ", ")));
  if (!not_built.empty()) {
    fmt::print("  not built here: {} (skipped)\n", fmt::join(not_built, ", "));
  }
  if (ran == 0 && !not_built.empty() && not_built.size() == adapters.size()) {
    GTEST_SKIP() << file << ": none of its adapters is built here (" << fmt::format("{}", fmt::join(not_built, ", "))
                 << ")";
  }
  EXPECT_GT(ran, 0) << file << ": no adapter ran the case (every one skipped it)";
}

std::string EntryName(const testing::TestParamInfo<size_t>& info) {
  std::string name = Relative(Entries()[info.param].case_file);
  name = name.substr(std::string("corpora/").size());
  if (name.ends_with(".json")) name.resize(name.size() - 5);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

std::vector<size_t> Indices() {
  std::vector<size_t> indices(Entries().size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  return indices;
}

INSTANTIATE_TEST_SUITE_P(Corpora, CorpusReplay, testing::ValuesIn(Indices()), EntryName);

// The corpus is not empty and its layout holds: seeds expect pass, mutant
// regressions name exactly one mutant and expect fail, every file name is
// <law>-<hash8>.json of its own case.
TEST(CorpusLayout, NamesAndExpectations) {
  ASSERT_FALSE(Entries().empty());
  int seeds = 0, mutant_cases = 0;
  for (const CorpusEntry& entry : Entries()) {
    const std::string file = Relative(entry.case_file);
    EXPECT_EQ(std::filesystem::path(entry.case_file).filename().string(), CorpusFileName(entry.meta.law, entry.c))
        << file << ": the name is not <law>-<hash8> of the case it holds";
    if (file.starts_with("corpora/seeds/")) {
      ++seeds;
      EXPECT_EQ(entry.meta.expect, "pass") << file;
    }
    if (file.starts_with("corpora/regressions/mutants/")) {
      ++mutant_cases;
      EXPECT_EQ(entry.meta.expect, "fail") << file;
      // corpora/regressions/mutants/<name>/ holds the cases of mutant:<name> only.
      const std::string folder = std::filesystem::path(entry.case_file).parent_path().filename().string();
      EXPECT_EQ(entry.meta.adapters, std::vector<std::string>{"mutant:" + folder}) << file;
    }
  }
  EXPECT_GE(seeds, static_cast<int>(AllLaws().size())) << "at least one seed per law";
  EXPECT_GT(mutant_cases, 0);
}

// Every law has a seed, every mutant a minimal failing case.
TEST(CorpusLayout, EveryLawHasSeedsAndEveryMutantARegression) {
  for (const Law& law : AllLaws()) {
    EXPECT_TRUE(std::any_of(Entries().begin(), Entries().end(), [&](const CorpusEntry& e) {
      return Relative(e.case_file).starts_with("corpora/seeds/") && e.meta.law == law.name;
    })) << law.name << " has no seed";
  }
  for (const mutants::MutantInfo& info : mutants::Mutants()) {
    EXPECT_TRUE(std::any_of(Entries().begin(), Entries().end(), [&](const CorpusEntry& e) {
      return e.meta.expect == "fail" && e.meta.adapters == std::vector<std::string>{info.name};
    })) << info.name << " has no regression case in corpora/regressions/mutants/";
  }
}

}  // namespace
}  // namespace attncheck
