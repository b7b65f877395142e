// The domain shrinker (cases/shrink.h, DESIGN §7): on synthetic predicates it
// reaches the exact smallest case a monotone predicate allows, never hands the
// predicate an invalid case nor the failing case itself, and stops on its
// limits; on the mutants (properties/shrink_failure.h) a failure found by the
// gate's case stream shrinks to a handful of rows, heads and tokens, still fails
// the same law, and passes on the mutant's defect-free twin.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "adapters/mutants/mutants.h"
#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "cases/shrink.h"
#include "properties/laws.h"
#include "properties/shrink_failure.h"

namespace attncheck {
namespace {

// A large case with a bit of everything (valid; see the check in the test below).
Case BigCase() {
  Case c;
  c.q_heads = 6;
  c.kv_heads = 3;
  c.head_dim = 32;
  c.value_dim = 24;
  c.query_len = 20;
  for (int b = 0; b < 4; ++b) {
    RowSpec row;
    row.left_pad = b;
    row.documents = {10, 0, 30 - 2 * b};
    row.right_pad = b;
    row.prefix_len = 3;
    row.position_offset = 65536 + b;
    c.rows.push_back(row);
  }
  c.visibility = VisibilityKind::kSlidingWindow;
  c.window = 17;
  c.decode_chunks = {3, 1, 5};
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.layout = RopeLayout::kInterleaved;
  c.encoding.rope.rotary_dim = 16;
  c.encoding.rope.scaling = RopeScaling::kYarn;
  c.encoding.rope.factor = 4.0;
  c.encoding.rope.original_context = 2048;
  c.encoding.rope.base = 500000.0;
  c.dtype = Dtype::kF16;
  c.mask = MaskConvention::kAdditiveLowest;
  c.scale = 0.125;
  c.softcap = 30.0;
  c.seed = 12345;
  c.profile = ValueProfile::kTies;
  return c;
}

TEST(Shrink, BigCaseIsValid) { EXPECT_EQ(Validate(BigCase()), std::nullopt); }

// Every field that the predicate does not hold up reaches its smallest value.
TEST(Shrink, MonotonePredicateReachesTheSmallestCase) {
  const ShrinkResult r = Shrink(BigCase(), [](const Case& c) { return c.key_len() >= 5; });
  const Case& m = r.minimal;
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.key_len(), 5) << ToLine(m);
  EXPECT_EQ(m.batch(), 1);
  EXPECT_EQ(m.q_heads, 1);
  EXPECT_EQ(m.kv_heads, 1);
  EXPECT_EQ(m.head_dim, 2);
  EXPECT_EQ(m.value_dim, 1);
  EXPECT_EQ(m.query_len, 1);
  EXPECT_TRUE(m.decode_chunks.empty());
  EXPECT_EQ(m.rows[0].documents, std::vector<int>{5});
  EXPECT_EQ(m.rows[0].left_pad + m.rows[0].right_pad + m.rows[0].position_offset + m.rows[0].prefix_len, 0);
  EXPECT_EQ(m.visibility, VisibilityKind::kCausal);
  EXPECT_EQ(m.encoding, EncodingSpec{});
  EXPECT_EQ(m.dtype, Dtype::kF32);
  EXPECT_EQ(m.mask, MaskConvention::kAdditiveNegInf);
  EXPECT_EQ(m.scale, 0.0);
  EXPECT_EQ(m.softcap, 0.0);
  EXPECT_EQ(m.seed, 0u);
  EXPECT_EQ(m.profile, ValueProfile::kNormal);
  EXPECT_EQ(static_cast<size_t>(r.accepted), r.changes.size());
  EXPECT_GT(r.accepted, 10);
}

// What the predicate needs survives, at its smallest: GQA (Hq = 2, Hkv = 1), a
// left pad, a partial rotary dim, a large position, two documents, a decode chunk.
TEST(Shrink, KeepsWhatThePredicateNeedsAtItsSmallest) {
  const ShrinkResult r = Shrink(BigCase(), [](const Case& c) {
    return c.q_heads != c.kv_heads && c.rows[0].left_pad > 0 && c.encoding.kind == EncodingKind::kRope &&
           c.rotary_dim() < c.head_dim && c.rows[0].position_offset >= 65536 && c.rows[0].documents.size() >= 2 &&
           !c.decode_chunks.empty();
  });
  const Case& m = r.minimal;
  EXPECT_EQ(m.q_heads, 2) << ToLine(m);
  EXPECT_EQ(m.kv_heads, 1);
  EXPECT_EQ(m.batch(), 1);
  EXPECT_EQ(m.rows[0].left_pad, 1);
  EXPECT_EQ(m.rows[0].position_offset, 65536);
  EXPECT_EQ(m.rows[0].documents.size(), 2u);
  EXPECT_EQ(m.head_dim, 4);  // the smallest even D with a partial rotary dim (2)
  EXPECT_EQ(m.rotary_dim(), 2);
  EXPECT_EQ(m.key_len(), 1);  // left pad 1, both documents empty
  EXPECT_EQ(m.decode_chunks, std::vector<int>{1});
  EXPECT_EQ(m.encoding.rope.scaling, RopeScaling::kNone);
  EXPECT_EQ(m.encoding.rope.layout, RopeLayout::kHalfSplit);
}

// Random predicates on decoded cases of every capability: each candidate the
// predicate sees is valid and new, never the failing case, and the result is
// valid and one the predicate accepted.
TEST(Shrink, NeverHandsThePredicateAnInvalidOrRepeatedCase) {
  Capabilities caps;
  caps.dtypes = {kAllDtypes.begin(), kAllDtypes.end()};
  caps.masks = {kAllMaskConventions.begin(), kAllMaskConventions.end()};
  caps.encodings = {kAllEncodingKinds.begin(), kAllEncodingKinds.end()};
  caps.rope_scalings = {kAllRopeScalings.begin(), kAllRopeScalings.end()};
  caps.softcap = true;
  caps.max_tokens = 130;
  int total_attempts = 0;
  for (uint64_t i = 0; i < 60; ++i) {
    RandomSource source(7, i);
    const Case failing = Decode(source, caps);
    ASSERT_EQ(Validate(failing), std::nullopt);
    std::set<uint64_t> seen;
    bool ok = true;
    const ShrinkResult r = Shrink(
        failing,
        [&](const Case& c) {
          const std::optional<std::string> problem = Validate(c);
          EXPECT_EQ(problem, std::nullopt) << ToLine(c);
          EXPECT_FALSE(c == failing);
          EXPECT_TRUE(seen.insert(Hash(c)).second) << "tried twice: " << ToLine(c);
          ok = ok && !problem;
          return (Hash(c) ^ i) % 3 != 0;  // accepts about two thirds, deterministically
        },
        ShrinkOptions{.max_attempts = 400, .max_seconds = 0.0, .should_stop = {}});
    ASSERT_TRUE(ok) << ToLine(failing);
    EXPECT_EQ(Validate(r.minimal), std::nullopt);
    EXPECT_LE(r.attempts, 400);
    total_attempts += r.attempts;
  }
  EXPECT_GT(total_attempts, 1000);  // the predicates were really exercised
}

TEST(Shrink, StopsAtMaxAttempts) {
  int calls = 0;
  const ShrinkResult r = Shrink(BigCase(), [&](const Case&) { return ++calls, false; },
                                ShrinkOptions{.max_attempts = 7, .max_seconds = 0.0, .should_stop = {}});
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(r.attempts, 7);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.minimal, BigCase());
  EXPECT_EQ(r.accepted, 0);
}

TEST(Shrink, StopsWhenAskedTo) {
  int calls = 0;
  const ShrinkResult r = Shrink(BigCase(), [&](const Case&) { return ++calls, true; },
                                ShrinkOptions{.max_attempts = 2000, .max_seconds = 0.0,
                                              .should_stop = [&] { return calls >= 3; }});
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.accepted, 3);  // what was kept before the stop is kept
  EXPECT_LT(r.minimal.batch() + r.minimal.key_len(), BigCase().batch() + BigCase().key_len());
}

TEST(Shrink, StopsAtMaxSeconds) {
  const auto start = std::chrono::steady_clock::now();
  const ShrinkResult r = Shrink(
      BigCase(),
      [](const Case&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return false;
      },
      ShrinkOptions{.max_attempts = 100000, .max_seconds = 0.2, .should_stop = {}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.stopped);
  EXPECT_LT(seconds, 1.0);
  EXPECT_GE(r.attempts, 5);
  EXPECT_LE(r.attempts, 15);
}

TEST(Shrink, FixpointWithoutLimitsIsNotStopped) {
  const ShrinkResult r = Shrink(BigCase(), [](const Case&) { return false; },
                                ShrinkOptions{.max_attempts = 1000000, .max_seconds = 0.0, .should_stop = {}});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.accepted, 0);
  EXPECT_GT(r.attempts, 30);
  EXPECT_EQ(r.minimal, BigCase());
}

// Thousands of rows and documents: per-item passes look at a bounded number of
// items, so candidates stay few and the shrink stays fast; halving still works.
TEST(Shrink, LargeCasesStayCheap) {
  Case c;
  c.query_len = 1;
  for (int b = 0; b < 3000; ++b) {
    RowSpec row;
    row.documents.assign(100, 1);
    row.position_offset = b;
    c.rows.push_back(row);
  }
  ASSERT_EQ(Validate(c), std::nullopt);
  const auto start = std::chrono::steady_clock::now();
  const ShrinkResult r = Shrink(c, [](const Case& m) { return m.batch() >= 2 && m.key_len() >= 3; });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.minimal.batch(), 2);
  EXPECT_EQ(r.minimal.key_len(), 3);
  EXPECT_LT(seconds, 10.0);
  fmt::print("3000 rows × 100 documents → {} in {} attempts, {:.2f} s\n", SizeLine(r.minimal), r.attempts, seconds);
}

// ---- mutants ----

struct Found {
  const Law* law = nullptr;
  Case c;
  Verdict verdict;
};

// The first failure of one of the mutant's own laws in the gate's streams (seed 1).
std::optional<Found> FirstFailure(const mutants::MutantInfo& info, Adapter& adapter) {
  for (const std::string& law_name : info.laws) {
    const Law* law = FindLaw(law_name);
    const std::optional<Capabilities> caps = NarrowToNeeds(adapter.capabilities(), law->needs, nullptr);
    if (!caps) continue;  // nothing the mutant accepts meets the law's needs
    for (int i = 0; i < 200; ++i) {
      RandomSource source(LawStreamSeed(1, law->name), static_cast<uint64_t>(i));
      const Case c = Decode(source, *caps, law->needs);  // as the gate draws it
      Verdict v = RunLaw(*law, adapter, c, Options{});
      if (v.failed()) return Found{law, c, std::move(v)};
    }
  }
  return std::nullopt;
}

// Bugs that need more than 8 tokens, 2 heads or 2 rows, and why.
struct Allowance {
  std::string_view mutant;
  int tokens, heads, rows;
  std::string_view why;
};
constexpr Allowance kAllowances[] = {
    {"mutant:alibi-nonpow2-slopes", 8, 3, 2, "the slopes differ only for a head count that is not a power of two"},
    {"mutant:desc-alibi-pow2-slopes", 8, 3, 2, "the slopes differ only for a head count that is not a power of two"},
    {"mutant:gqa-tile-mapping", 8, 4, 2, "h mod Hkv and h / (Hq/Hkv) differ only with Hkv >= 2 and Hq/Hkv >= 2"},
    {"mutant:bwd-gqa-modulo", 8, 4, 2, "h mod Hkv and h / (Hq/Hkv) differ only with Hkv >= 2 and Hq/Hkv >= 2"},
    {"mutant:dynamic-ntk-step-length", 32, 2, 2,
     "the recomputed length must pass the original context (L) within the decode steps; the shrinker moves "
     "neither L nor the position offset below the crossing, so the first case found sets the length"},
};

TEST(ShrinkMutants, EveryMutantFailureShrinksSmallAndStillFails) {
  std::string table;
  for (const mutants::MutantInfo& info : mutants::Mutants()) {
    SCOPED_TRACE(info.name);
    const std::unique_ptr<Adapter> adapter = MakeAdapter(info.name);
    const std::optional<Found> found = FirstFailure(info, *adapter);
    ASSERT_TRUE(found) << "no failure of its laws in 200 cases each";
    const ShrunkFailure shrunk = ShrinkFailure(*found->law, *adapter, found->c, found->verdict, Options{},
                                               ShrinkOptions{.max_attempts = 3000, .max_seconds = 20.0, .should_stop = {}});
    const Case& m = shrunk.shrink.minimal;
    EXPECT_EQ(Validate(m), std::nullopt);
    // Still fails, on a fresh adapter too; and passes without the defect.
    EXPECT_TRUE(shrunk.verdict.failed()) << shrunk.verdict.message;
    const std::unique_ptr<Adapter> fresh = MakeAdapter(info.name);
    EXPECT_TRUE(RunLaw(*found->law, *fresh, m, Options{}).failed()) << ToLine(m);
    const std::unique_ptr<Adapter> twin = mutants::MakeMutant(info.name, /*defective=*/false);
    const Verdict control = RunLaw(*found->law, *twin, m, Options{});
    EXPECT_TRUE(control.passed() || control.skipped()) << control.message << "\n  " << ToLine(m);

    int max_tokens = 8, max_heads = 2, max_rows = 2;
    for (const Allowance& a : kAllowances) {
      if (a.mutant == info.name) max_tokens = a.tokens, max_heads = a.heads, max_rows = a.rows;
    }
    EXPECT_LE(m.batch(), max_rows) << ToLine(m);
    EXPECT_LE(m.q_heads, max_heads) << ToLine(m);
    EXPECT_LE(m.key_len(), max_tokens) << ToLine(m);
    EXPECT_FALSE(shrunk.shrink.stopped) << "did not reach a fixpoint within the limits";
    table += fmt::format("{:<36} {:<20} {} → {}  ({} attempts, {:.2f} s)\n", info.name, found->law->name,
                         SizeLine(found->c), SizeLine(m), shrunk.shrink.attempts, shrunk.shrink.seconds);
  }
  fmt::print("{}", table);
}

}  // namespace
}  // namespace attncheck
