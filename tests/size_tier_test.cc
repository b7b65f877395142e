// Tests of the size tier (cases/size_tier.h): Decode draws the declared share of
// cases at tier sizes (Tq ≥ 64, Tk ≥ 256, D ∈ {64, 128}, several heads, GQA) and
// none for an adapter that declares no tier; the ggml adapters declare ≥ 20 %.
#include <gtest/gtest.h>

#include <set>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"

namespace attncheck {
namespace {

Capabilities WithTier(int percent) {
  Capabilities caps;
  caps.gqa = true;
  caps.value_dim_differs = true;
  caps.size_tier.percent = percent;
  return caps;
}

bool InTier(const Case& c) { return c.key_len() >= kTierMinKeyLength; }

// The share of `n` cases of stream `seed` drawn in the tier.
double TierShare(const Capabilities& caps, uint64_t seed, int n) {
  int in_tier = 0;
  for (int i = 0; i < n; ++i) {
    RandomSource src(seed, static_cast<uint64_t>(i));
    in_tier += InTier(Decode(src, caps));
  }
  return static_cast<double>(in_tier) / n;
}

TEST(SizeTier, DrawnAtTheDeclaredShare) {
  for (int percent : {10, 25, 50}) {
    const double share = TierShare(WithTier(percent), 3, 4000);
    EXPECT_NEAR(share, percent / 100.0, 0.03) << "declared " << percent << " %";
  }
  EXPECT_EQ(TierShare(WithTier(0), 3, 2000), 0.0);  // no tier declared: the small limits hold
}

TEST(SizeTier, RespectsItsBounds) {
  const Capabilities caps = WithTier(100);
  const SizeTier& tier = caps.size_tier;
  std::set<int> head_dims, key_lengths;
  bool grouped = false, long_queries = false;
  for (int i = 0; i < 1000; ++i) {
    RandomSource src(4, static_cast<uint64_t>(i));
    const Case c = Decode(src, caps);
    ASSERT_EQ(Validate(c).value_or("ok"), "ok") << ToLine(c);
    ASSERT_GE(c.key_len(), kTierMinKeyLength) << ToLine(c);
    ASSERT_LE(c.key_len(), tier.max_tokens) << ToLine(c);
    ASSERT_GE(c.query_len, 64) << ToLine(c);
    ASSERT_LE(c.query_len, std::max(tier.max_query_len, c.mask == MaskConvention::kCausalTopLeft ? c.key_len() : 0));
    ASSERT_TRUE(c.head_dim == 64 || c.head_dim == 128) << ToLine(c);
    ASSERT_TRUE(c.value_dim == 64 || c.value_dim == 128) << ToLine(c);
    ASSERT_LE(c.batch(), tier.max_batch) << ToLine(c);
    ASSERT_GE(c.q_heads, 2) << ToLine(c);
    ASSERT_LE(c.q_heads, tier.max_heads) << ToLine(c);
    ASSERT_EQ(c.q_heads % c.kv_heads, 0) << ToLine(c);
    head_dims.insert(c.head_dim);
    key_lengths.insert(c.key_len());
    grouped = grouped || c.kv_heads < c.q_heads;
    long_queries = long_queries || c.query_len >= 256;
  }
  EXPECT_EQ(head_dims.size(), 2u);
  // every key length of the table up to the tier's limit, 512 (ggml's split-KV threshold) included
  const std::vector<int> table = decode_detail::Within(kTierKeyLengths, kTierMinKeyLength, tier.max_tokens);
  EXPECT_EQ(key_lengths, std::set<int>(table.begin(), table.end()));
  EXPECT_TRUE(key_lengths.count(512));
  EXPECT_TRUE(grouped);
  EXPECT_TRUE(long_queries);
}

TEST(SizeTier, ExhaustedSourceStaysSmallAndNarrowTierDrawsNone) {
  struct MinSource {
    int64_t Int(int64_t lo, int64_t /*hi*/, std::string_view /*name*/) { return lo; }
    bool Bool(std::string_view /*name*/) { return false; }
  } min_source;
  EXPECT_FALSE(InTier(Decode(min_source, WithTier(99))));  // (a tier of 100 % holds every case)
  Capabilities narrow = WithTier(100);
  narrow.size_tier.max_tokens = 200;  // below the tier's shortest key length
  EXPECT_EQ(TierShare(narrow, 5, 200), 0.0);
  narrow = WithTier(100);
  narrow.max_position = 300;  // positions bound the tier's key length too
  for (int i = 0; i < 200; ++i) {
    RandomSource src(6, static_cast<uint64_t>(i));
    ASSERT_LE(Decode(src, narrow).key_len(), 301);
  }
}

TEST(SizeTier, GgmlDeclaresAFifthOrMore) {
  for (const char* name : {"ggml", "ggml-flash", "ggml-flash-ref", "ggml-flash-f32"}) {
    const Capabilities caps = MakeAdapter(name)->capabilities();
    EXPECT_GE(caps.size_tier.percent, 20) << name;
    EXPECT_GE(TierShare(caps, 7, 1000), 0.2 - 0.03) << name;
  }
}

}  // namespace
}  // namespace attncheck
