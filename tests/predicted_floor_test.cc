// The tolerance floor predicted before the data (cases/predicted_floor.h) and the
// informative-oracle hooks of Decode: a law judged against the oracle draws only
// what the declared accuracy can judge, and still draws large and extreme logits
// where they can be judged.
#include <algorithm>
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/predicted_floor.h"
#include "cases/random_source.h"
#include "properties/laws.h"

namespace attncheck::test {
namespace {

int LargestPosition(const Case& c) {
  int largest = 0;
  for (const RowSpec& row : c.rows) {
    const int longest = *std::max_element(row.documents.begin(), row.documents.end());
    largest = std::max(largest, row.position_offset + std::max(0, longest - 1));
  }
  return largest;
}

// tolerance.h's floor term by term: f32 accumulation, RoPE by the adapter.
TEST(PredictedFloor, IsTheToleranceFloorOnTypicalNorms) {
  Capabilities caps;
  caps.owns_rope = true;
  Case c;
  c.dtype = Dtype::kF32;
  c.encoding.kind = EncodingKind::kRope;
  c.head_dim = 16;
  c.scale = 0.25;
  const double u = std::ldexp(1.0, -24);
  // per unit (2·4 + 4)u + (2u + 4u) + 4u·1001 = 4022u; |q|·max|k|·scale = 2·16·0.25 = 8
  // (twice the typical product); floor / max|v| = 4u + 2·√9·u + 2·8·4022u.
  EXPECT_DOUBLE_EQ(PredictedFloor(caps, c, 1000, 9), (4.0 + 6.0 + 16.0 * 4022.0) * u);
  c.profile = ValueProfile::kLargeLogits;  // q, k ×8: the score error ×64
  EXPECT_DOUBLE_EQ(PredictedFloor(caps, c, 1000, 9), (4.0 + 6.0 + 64.0 * 16.0 * 4022.0) * u);
  c.profile = ValueProfile::kExtremeLogits;  // + the largest score offset, 6e4, exactly
  EXPECT_DOUBLE_EQ(PredictedFloor(caps, c, 1000, 9), (4.0 + 6.0 + 2.0 * (8.0 + 6e4) * 4022.0) * u);
  // RoPE's magnitudes: log-n scales q by ln(p + 1)/ln L at the largest position, YaRN
  // both q and k by its mscale (0.1·ln s + 1 without attn_factor)
  c.profile = ValueProfile::kNormal;
  c.encoding.rope.log_n = true;
  c.encoding.rope.original_context = 32;
  const double log_n = std::log(1001.0) / std::log(32.0);
  EXPECT_DOUBLE_EQ(PredictedFloor(caps, c, 1000, 9), (4.0 + 6.0 + log_n * 16.0 * 4022.0) * u);
  EXPECT_DOUBLE_EQ(PredictedFloor(caps, c, 30, 9), (4.0 + 6.0 + 16.0 * 142.0) * u) << "1 below L";
  c.encoding.rope.log_n = false;
  c.encoding.rope.scaling = RopeScaling::kYarn;
  c.encoding.rope.factor = 4.0;
  const double mscale = 0.1 * std::log(4.0) + 1.0;
  EXPECT_DOUBLE_EQ(PredictedFloor(caps, c, 1000, 9), (4.0 + 6.0 + mscale * mscale * 16.0 * 4022.0) * u);
  c.encoding.rope.scaling = RopeScaling::kNone;
  caps.owns_rope = false;  // the harness rotates in double: no angle or q/k rounding term
  EXPECT_DOUBLE_EQ(PredictedFloor(caps, c, 1000, 9), (4.0 + 6.0 + 16.0 * 12.0) * u);
  c.dtype = Dtype::kBf16;
  caps.accuracy.scores_in_input_dtype = true;  // + 2u_bf16·|S| on top of the f32 dot product
  const double ub = std::ldexp(1.0, -8);
  EXPECT_DOUBLE_EQ(PredictedFloor(caps, c, 1000, 9), 4.0 * ub + 6.0 * u + 2.0 * (8.0 * 12.0 * u + 2.0 * ub * 8.0));
}

struct Drawn {
  int cases = 0, over = 0;
  std::map<ValueProfile, int> profiles;
};

Drawn DrawStream(const std::string& adapter, const LawNeeds& needs, bool rope_only) {
  const Capabilities adapter_caps = MakeAdapter(adapter)->capabilities();
  const Capabilities caps = *NarrowToNeeds(adapter_caps, needs, nullptr);
  Drawn drawn;
  for (uint64_t i = 0; i < 400; ++i) {
    RandomSource source(11, i);
    const Case c = Decode(source, caps, needs);
    if (rope_only && c.encoding.kind != EncodingKind::kRope) continue;
    ++drawn.cases;
    drawn.over += PredictedFloor(adapter_caps, c, LargestPosition(c), c.key_len()) > kInformativeFloor;
    ++drawn.profiles[c.profile];
  }
  return drawn;
}

// Without the need the stream draws cases the tolerance cannot judge (the hook has
// work to do); with it none, on every correct in-tree adapter.
TEST(InformativeOracle, DrawsOnlyWhatTheToleranceCanJudge) {
  const LawNeeds& needs = FindLaw("reference-agreement")->needs;
  ASSERT_TRUE(needs.informative_oracle);
  EXPECT_TRUE(FindLaw("masked-rows")->needs.informative_oracle);
  EXPECT_FALSE(FindLaw("non-interference")->needs.informative_oracle) << "metamorphic laws draw everything";
  for (const std::string adapter : {"reference", "eigen", "tiled-f32", "tiled-f16", "tiled-bf16"}) {
    EXPECT_GT(DrawStream(adapter, LawNeeds{}, false).over, 0) << adapter;
    Drawn drawn = DrawStream(adapter, needs, false);
    EXPECT_EQ(drawn.over, 0) << adapter;
    // Large and extreme logits stay where they can be judged (no encoding, f32 RoPE
    // near position 0 for large logits).
    EXPECT_GT(drawn.profiles[ValueProfile::kLargeLogits], 0) << adapter;
    EXPECT_GT(drawn.profiles[ValueProfile::kExtremeLogits], 0) << adapter;
  }
  // bf16 RoPE by the adapter rounds rotated q, k to 2^−8: large logits there are
  // never judgeable, f32 RoPE keeps them at small positions.
  EXPECT_EQ(DrawStream("tiled-bf16", needs, true).profiles[ValueProfile::kLargeLogits], 0);
  EXPECT_GT(DrawStream("tiled-f32", needs, true).profiles[ValueProfile::kLargeLogits], 0);
}

// TypicalScoreSpread: √D·QkMeanSquare·scale; extreme logits never informative.
TEST(TypicalScoreSpread, IsTheSpreadOfARowsScores) {
  Case c;
  c.head_dim = 16;
  c.scale = 0.5;
  EXPECT_DOUBLE_EQ(TypicalScoreSpread(c), 2.0);
  c.profile = ValueProfile::kLargeLogits;
  EXPECT_DOUBLE_EQ(TypicalScoreSpread(c), 128.0);
  c.profile = ValueProfile::kTies;
  EXPECT_DOUBLE_EQ(TypicalScoreSpread(c), 4.0 / 3.0);
  c.profile = ValueProfile::kExtremeLogits;
  EXPECT_TRUE(std::isinf(TypicalScoreSpread(c)));
}

// The backward laws that judge a gradient within the tolerance model draw no case
// whose scores spread beyond kGradientScoreSpread (a one-hot softmax leaves the
// gradient through the scores uninformative: a skip), while without the need such
// cases are drawn; backward-non-interference, bitwise, keeps every profile.
TEST(InformativeGradient, DrawsScoresThatSpreadLittle) {
  for (const std::string law : {"backward-agreement", "backward-masked-rows", "backward-gqa",
                                "backward-packed-isolation", "backward-self-consistency"}) {
    EXPECT_TRUE(FindLaw(law)->needs.informative_gradient) << law;
  }
  EXPECT_FALSE(FindLaw("backward-non-interference")->needs.informative_gradient);
  EXPECT_FALSE(FindLaw("reference-agreement")->needs.informative_gradient) << "the forward's rows do not cancel";
  for (const std::string adapter : {"eigen", "tiled-f32", "tiled-bf16"}) {
    for (const std::string law : {"backward-agreement", "backward-non-interference"}) {
      const LawNeeds& needs = FindLaw(law)->needs;
      const Capabilities caps = *NarrowToNeeds(MakeAdapter(adapter)->capabilities(), needs, nullptr);
      int wide = 0, extreme = 0, large = 0;
      for (uint64_t i = 0; i < 400; ++i) {
        RandomSource source(11, i);
        const Case c = Decode(source, caps, needs);
        wide += TypicalScoreSpread(c) > kGradientScoreSpread;
        extreme += c.profile == ValueProfile::kExtremeLogits;
        large += c.profile == ValueProfile::kLargeLogits;
      }
      if (needs.informative_gradient) {
        EXPECT_EQ(wide, 0) << adapter << " " << law;
        EXPECT_EQ(extreme, 0) << adapter << " " << law;
        // large logits spread at least √2·64/8 = 11.3 (D = 2, scale 1/8): never narrow enough
        EXPECT_EQ(large, 0) << adapter << " " << law;
      } else {
        EXPECT_GT(wide, 40) << adapter << " " << law;
        EXPECT_GT(extreme, 40) << adapter << " " << law;
        EXPECT_GT(large, 40) << adapter << " " << law;
      }
    }
  }
}

}  // namespace
}  // namespace attncheck::test
