// masked-rows on a varlen kernel (issue 14): a pad query in no varlen sequence is
// the harness's fill, not kernel output (AdapterRun::unproduced), so the law leaves
// it out. A varlen kernel taking Tq > Tk gets rows it produces instead: a sequence's
// queries before its first key (law_support.h EmptyRowsCaseFor); one that does not
// take them has only such pads, and the case is a skip.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/laws.h"
#include "tests/contract_override.h"

namespace attncheck {
namespace {

constexpr const char* kReason =
    "the rows with no visible key are pad queries in no varlen sequence: the kernel produces no output for them";

// The verdicts of masked-rows on `name` over its own stream of cases with Tq <= Tk
// (no leading queries: every row with no visible key is a pad the law adds).
template <class Fn>
int ForCasesWithoutLeadingQueries(std::unique_ptr<Adapter> adapter, Fn fn) {
  int cases = 0;
  for (uint64_t i = 0; i < 60; ++i) {
    RandomSource source(23, i);
    const Case c = Decode(source, adapter->capabilities());
    if (c.query_len > c.key_len()) continue;
    fn(c, check_masked_rows(*adapter, c, Options{}));
    ++cases;
  }
  return cases;
}

TEST(MaskedRowsPadQueries, AVarlenKernelWhoseOnlyMaskedRowsArePadsIsASkipNotAPass) {
  int skipped = 0;
  const int cases = ForCasesWithoutLeadingQueries(
      // a varlen kernel that takes no Tq > Tk
      std::make_unique<test::ContractOverride>("tiled-varlen-f32",
                                               [](Capabilities& caps) { caps.queries_beyond_keys = false; }),
      [&](const Case& c, const Verdict& v) {
    if (v.outcome == Outcome::kSkip && v.message != kReason) return;  // the adapter cannot take the case
    EXPECT_EQ(v.outcome, Outcome::kSkip) << v.message << "\n" << fmt::format("{}", c);
    EXPECT_EQ(v.message, kReason) << fmt::format("{}", c);
    ++skipped;
  });
  EXPECT_GT(cases, 20);
  EXPECT_GT(skipped, 10);
}

// The same kernel as it is (Tq > Tk taken): its rows with no visible key are the
// leading queries of a sequence, its own output, checked.
TEST(MaskedRowsPadQueries, AVarlenKernelTakingLeadingQueriesHasTheirRowsChecked) {
  int passed = 0;
  ForCasesWithoutLeadingQueries(MakeAdapter("tiled-varlen-f32"), [&](const Case& c, const Verdict& v) {
    EXPECT_NE(v.message, kReason) << fmt::format("{}", c);
    passed += v.outcome == Outcome::kPass;
  });
  EXPECT_GT(passed, 20);
}

// The same cases on the padded-batch kernel: its pad rows are its own output, checked.
TEST(MaskedRowsPadQueries, APaddedKernelsPadRowsAreChecked) {
  int passed = 0;
  ForCasesWithoutLeadingQueries(MakeAdapter("tiled-f32"), [&](const Case& c, const Verdict& v) {
    EXPECT_NE(v.message, kReason) << fmt::format("{}", c);
    passed += v.outcome == Outcome::kPass;
  });
  EXPECT_GT(passed, 10);
}

// A padded kernel whose query rows past seqused_q differ from its other rows with no
// visible key (jax.nn.dot_product_attention: the mean of the values, but 0 past
// query_seq_lengths) declares pad_query_rows. tiled-f32 writes 0 in every row with no
// visible key. Taking the descriptor alone and no Tq > Tk (so every row with no visible
// key is a pad query) and declared mean-v with pad_query_rows zeros, its cases pass;
// declared mean-v alone, they fail on a row past seqused_q, and the message says so.
TEST(MaskedRowsPadQueries, PadQueryRowsIsThePolicyPastSequsedQ) {
  const auto declaring = [](std::optional<MaskedRowPolicy> pad_rows) {
    return std::make_unique<test::ContractOverride>("tiled-f32", [pad_rows](Capabilities& caps) {
      caps.masks = {MaskConvention::kDescriptor};
      caps.queries_beyond_keys = false;
      caps.masked_rows = MaskedRowPolicy::kMeanV;
      caps.pad_query_rows = pad_rows;
    });
  };
  int passed = 0;
  ForCasesWithoutLeadingQueries(declaring(MaskedRowPolicy::kZeros), [&](const Case& c, const Verdict& v) {
    EXPECT_NE(v.outcome, Outcome::kFail) << v.message << "\n" << fmt::format("{}", c);
    passed += v.outcome == Outcome::kPass;
  });
  int failed = 0;
  ForCasesWithoutLeadingQueries(declaring(std::nullopt), [&](const Case& c, const Verdict& v) {
    if (v.outcome == Outcome::kSkip) return;  // a case the descriptor cannot express
    EXPECT_EQ(v.outcome, Outcome::kFail) << v.message << "\n" << fmt::format("{}", c);
    EXPECT_NE(v.message.find(", past seqused_q) under descriptor"), std::string::npos) << v.message;
    EXPECT_NE(v.message.find("is not the mean of the row's values"), std::string::npos) << v.message;
    failed += v.outcome == Outcome::kFail;
  });
  EXPECT_GT(passed, 20);
  EXPECT_GE(failed, passed);  // and the cases whose real rows' tolerance is uninformative (a skip above)
}

}  // namespace
}  // namespace attncheck
