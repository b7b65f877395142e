// Many heads that are not powers of two (Capabilities::many_heads): the kernels
// that opt in draw 6, 12, 20, 24 or 40 query heads in about one case in 32; the
// others draw exactly as before; --max-heads bounds them too; and the ALiBi slopes
// the descriptor's kernels compute for those counts are the paper's.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "adapters/descriptor_rule.h"
#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "reference/alibi.h"

namespace attncheck {
namespace {

TEST(ManyHeads, DrawnWhereTheKernelOptsIn) {
  const Capabilities tiled = MakeAdapter("tiled-f32")->capabilities();
  ASSERT_EQ(tiled.many_heads, 40);
  std::set<int> counts;
  int many = 0, grouped = 0;
  const int total = 6400;
  for (int i = 0; i < total; ++i) {
    RandomSource source(43, static_cast<uint64_t>(i));
    const Case c = Decode(source, tiled);
    ASSERT_FALSE(Validate(c)) << *Validate(c);
    if (c.q_heads <= tiled.max_heads) continue;
    ++many;
    counts.insert(c.q_heads);
    grouped += c.kv_heads < c.q_heads;
  }
  EXPECT_EQ(counts, (std::set<int>{6, 12, 20, 24, 40}));
  EXPECT_GT(many, total / 64);
  EXPECT_LT(many, total / 16);
  EXPECT_GT(grouped, many / 3);  // GQA groupings of many heads
}

// An adapter that does not opt in draws the same cases as before: never more than max_heads.
TEST(ManyHeads, OthersDrawAsBefore) {
  const Capabilities reference = MakeAdapter("reference")->capabilities();
  EXPECT_EQ(reference.many_heads, 0);
  for (int i = 0; i < 2000; ++i) {
    RandomSource source(43, static_cast<uint64_t>(i));
    EXPECT_LE(Decode(source, reference).q_heads, reference.max_heads);
  }
}

// many_heads bounds the counts drawn (--max-heads lowers it with max_heads: cli/shape_limits.cc).
TEST(ManyHeads, ManyHeadsBoundsTheCounts) {
  Capabilities narrowed = MakeAdapter("tiled-f32")->capabilities();
  narrowed.many_heads = 12;
  std::set<int> counts;
  for (int i = 0; i < 3000; ++i) {
    RandomSource source(43, static_cast<uint64_t>(i));
    const int heads = Decode(source, narrowed).q_heads;
    if (heads > narrowed.max_heads) counts.insert(heads);
  }
  EXPECT_EQ(counts, (std::set<int>{6, 12}));
  // bench's speed flags (--max-heads 4): no count in (4, 4]
  EXPECT_TRUE(decode_detail::ManyHeadCounts(4, 4).empty());
}

// ggml's max_bias slopes, as the kernels' DescriptorRule computes them, are the
// paper's for the many-head counts; the power-of-two slip is not.
TEST(ManyHeads, SlopesPastAPowerOfTwo) {
  VisibilityDescriptor d;
  d.alibi_max_bias = 8.0;
  for (int heads : decode_detail::kManyHeadCounts) {
    adapters::DescriptorRule rule{&d, 1, 1, {}};
    adapters::DescriptorRule slipped{&d, 1, 1, {.alibi_pow2 = true}};
    const std::vector<double> paper = reference::AlibiSlopes(heads);
    double differs = 0.0;
    for (int h = 0; h < heads; ++h) {
      EXPECT_NEAR(rule.Slope(h, heads), paper[static_cast<size_t>(h)], 1e-13) << heads << " heads, head " << h;
      differs = std::max(differs, std::abs(slipped.Slope(h, heads) - paper[static_cast<size_t>(h)]));
    }
    EXPECT_GT(differs, 1e-3) << heads;
  }
}

}  // namespace
}  // namespace attncheck
