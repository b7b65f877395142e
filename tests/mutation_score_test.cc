// Mutation score (issue "Mutant adapters: prove every law can catch the bugs it
// exists for"): every registered mutant (adapters/mutants/) is killed by a law it
// belongs to within a small case budget, a law other than reference-agreement
// kills it wherever its bug class has one, and its defect-free twin passes the
// killing case — so the law failed because of the defect. Cases come from the
// gate's streams (`attncheck gate --adapter mutant:<name> --law <law> --seed 1`),
// each law on a fresh adapter, stopping at the first failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "adapters/mutants/mutants.h"
#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/laws.h"

namespace attncheck {
namespace {

constexpr int kCasesPerLaw = 200;
constexpr int kTwinCasesPerLaw = 60;
constexpr uint64_t kSeed = 1;
constexpr std::string_view kReferenceAgreement = "reference-agreement";

// Case i of the law's stream, drawn as the gate draws it (inside the law's needs).
Case DrawCase(const Law& law, const Capabilities& caps, int i) {
  RandomSource source(LawStreamSeed(kSeed, law.name), static_cast<uint64_t>(i));
  return Decode(source, caps, law.needs);
}

struct Kill {
  int case_index = -1;
  Case c;
  std::string message;
};

// The first case of the law's stream the adapter fails, on a fresh adapter.
std::optional<Kill> FirstKill(const std::string& name, const Law& law) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
  const std::optional<Capabilities> caps = NarrowToNeeds(adapter->capabilities(), law.needs, nullptr);
  if (!caps) return std::nullopt;  // nothing the mutant accepts meets the law's needs
  for (int i = 0; i < kCasesPerLaw; ++i) {
    const Case c = DrawCase(law, *caps, i);
    const Verdict v = RunLaw(law, *adapter, c, Options{});
    EXPECT_FALSE(IsAdapterError(v.outcome)) << name << " × " << law.name << " case " << i << ": " << v.message;
    if (v.failed()) return Kill{i, c, v.message};
  }
  return std::nullopt;
}

std::vector<std::string> MutantNames() {
  std::vector<std::string> names;
  for (const AdapterInfo& info : ListAdapters())
    if (info.kind == AdapterKind::kDefective && info.name.starts_with("mutant:")) names.push_back(info.name);
  return names;
}

bool HasMetamorphicLaw(const mutants::MutantInfo& info) {
  return std::any_of(info.laws.begin(), info.laws.end(),
                     [](const std::string& law) { return law != kReferenceAgreement; });
}

TEST(MutationScore, TableMatchesTheRegistry) {
  const std::vector<std::string> names = MutantNames();
  EXPECT_EQ(names.size(), mutants::Mutants().size());
  EXPECT_GE(names.size(), 25u);
  for (const mutants::MutantInfo& info : mutants::Mutants()) {
    EXPECT_TRUE(info.name.starts_with("mutant:")) << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
    EXPECT_FALSE(info.laws.empty()) << info.name;
    for (const std::string& law : info.laws) EXPECT_NE(FindLaw(law), nullptr) << info.name << ": " << law;
    EXPECT_EQ(MakeAdapter(info.name)->description(), info.description);
  }
  // `*` leaves the mutants out of the default gate; `mutant:*` names them all.
  for (const std::string& name : ExpandAdapterPattern("*")) EXPECT_FALSE(name.starts_with("mutant:")) << name;
  for (const std::string& name : AdapterNames()) EXPECT_FALSE(name.starts_with("mutant:")) << name;
  EXPECT_EQ(ExpandAdapterPattern("mutant:*"), names);
}

TEST(MutationScore, EveryMutantIsKilledByItsLaws) {
  const std::vector<std::string> names = MutantNames();
  ASSERT_FALSE(names.empty());
  int score = 0;
  std::string table;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const mutants::MutantInfo* info = mutants::FindMutant(name);
    ASSERT_NE(info, nullptr) << "registered mutant without a table entry";
    std::vector<std::string> laws = info->laws;
    if (std::find(laws.begin(), laws.end(), kReferenceAgreement) == laws.end())
      laws.emplace_back(kReferenceAgreement);

    bool by_expected = false, by_metamorphic = false, killed = false;
    std::string row;
    for (const std::string& law_name : laws) {
      const Law* law = FindLaw(law_name);
      ASSERT_NE(law, nullptr) << law_name;
      const std::optional<Kill> kill = FirstKill(name, *law);
      row += fmt::format("  {} {}", law_name, kill ? fmt::format("@{}", kill->case_index) : std::string("-"));
      if (!kill) continue;
      killed = true;
      const bool expected = std::find(info->laws.begin(), info->laws.end(), law_name) != info->laws.end();
      if (!expected) continue;
      // The defect-free twin holds the law on the killing case.
      const std::unique_ptr<Adapter> twin = mutants::MakeMutant(name, /*defective=*/false);
      const Verdict control = RunLaw(*law, *twin, kill->c, Options{});
      EXPECT_TRUE(control.passed() || control.skipped())
          << law_name << " also fails without the defect: " << control.message << "\n  " << ToLine(kill->c)
          << "\n  mutant: " << kill->message;
      if (!(control.passed() || control.skipped())) continue;
      by_expected = true;
      by_metamorphic = by_metamorphic || law_name != kReferenceAgreement;
    }
    EXPECT_TRUE(killed) << "survived " << kCasesPerLaw << " cases of each of its laws";
    EXPECT_TRUE(by_expected) << "not killed by any of its laws";
    if (HasMetamorphicLaw(*info)) {
      EXPECT_TRUE(by_metamorphic) << "killed only by reference-agreement although its bug class has a law";
    }
    const bool counts = killed && by_expected && (by_metamorphic || !HasMetamorphicLaw(*info));
    score += counts ? 1 : 0;
    table += fmt::format("{:<40}{}{}\n", name, counts ? "" : "  SURVIVED", row);
  }
  const int n = static_cast<int>(names.size());
  fmt::print("first failing case per law (seed {}, fresh adapter per law):\n{}", kSeed, table);
  fmt::print("mutation score: {}/{} ({:.0f}%)\n", score, n, 100.0 * score / n);
  EXPECT_EQ(score, n);
}

// The twins (every mutant with its defect off) hold every law, so the kernel the
// mutants share is the correct one and each mutant differs from it by its defect.
TEST(MutationScore, TwinsHoldEveryLaw) {
  for (const mutants::MutantInfo& info : mutants::Mutants()) {
    SCOPED_TRACE(info.name);
    for (const Law& law : AllLaws()) {
      const std::unique_ptr<Adapter> twin = mutants::MakeMutant(info.name, /*defective=*/false);
      const std::optional<Capabilities> caps = NarrowToNeeds(twin->capabilities(), law.needs, nullptr);
      if (!caps) continue;  // nothing to draw for this law
      for (int i = 0; i < kTwinCasesPerLaw; ++i) {
        const Case c = DrawCase(law, *caps, i);
        const Verdict v = RunLaw(law, *twin, c, Options{});
        ASSERT_TRUE(v.passed() || v.skipped()) << law.name << " case " << i << ": " << v.message << "\n  " << ToLine(c);
      }
    }
  }
}

}  // namespace
}  // namespace attncheck
