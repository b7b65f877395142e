// Each law's cases are drawn inside its needs (cases/law_needs.h, the law table's
// `needs`): NarrowToNeeds names an empty intersection, Decode's hooks meet every
// need, and the default gate skips at most 10 % of any law × correct-adapter pair.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/laws.h"
#include "tests/cli_support.h"

namespace attncheck::test {
namespace {

const LawNeeds& NeedsOf(std::string_view law) { return FindLaw(law)->needs; }

bool PacksTwoDocuments(const Case& c) {
  for (const RowSpec& row : c.rows) {
    int non_empty = 0;
    for (int length : row.documents) non_empty += length > 0;
    if (non_empty >= 2) return true;
  }
  return false;
}

TEST(NarrowToNeeds, NamesAnEmptyIntersection) {
  std::string why;
  Capabilities flags_only;
  flags_only.masks = {MaskConvention::kCausalTopLeft, MaskConvention::kCausalBottomRight};
  EXPECT_FALSE(NarrowToNeeds(flags_only, NeedsOf("packed-isolation"), &why));
  EXPECT_EQ(why, "adapter accepts only causal flags or a padded-batch descriptor, which cannot express packed documents");
  EXPECT_TRUE(NarrowToNeeds(flags_only, NeedsOf("mask-conventions"), nullptr)) << "two flags are two conventions";
  // One convention besides a flag (libtorch-sdpa): cases drawn under the flag, which both express.
  Capabilities one_and_flag;
  one_and_flag.masks = {MaskConvention::kBoolVisible, MaskConvention::kCausalTopLeft};
  EXPECT_EQ(NarrowToNeeds(one_and_flag, NeedsOf("mask-conventions"), nullptr)->masks,
            std::vector<MaskConvention>{MaskConvention::kCausalTopLeft});
  const Capabilities tiled = MakeAdapter("tiled-f32")->capabilities();  // two conventions besides the flags
  EXPECT_EQ(NarrowToNeeds(tiled, NeedsOf("mask-conventions"), nullptr)->masks, tiled.masks);
  // A score bias the kernel does not own rides on an additive mask: with one additive
  // convention (libtorch-mha: bool-blocked, add-inf) no biased case has two conventions
  // that express it, so none is drawn; with two, or a bias the kernel owns, all are.
  Capabilities one_additive;
  one_additive.masks = {MaskConvention::kBoolBlocked, MaskConvention::kAdditiveNegInf};
  one_additive.encodings = {EncodingKind::kNone, EncodingKind::kRope, EncodingKind::kAlibi, EncodingKind::kT5};
  EXPECT_EQ(NarrowToNeeds(one_additive, NeedsOf("mask-conventions"), nullptr)->encodings,
            (std::vector<EncodingKind>{EncodingKind::kNone, EncodingKind::kRope}));
  EXPECT_EQ(NarrowToNeeds(one_additive, NeedsOf("non-interference"), nullptr)->encodings, one_additive.encodings);
  Capabilities two_additive = one_additive;
  two_additive.masks.push_back(MaskConvention::kAdditiveLowest);
  EXPECT_EQ(NarrowToNeeds(two_additive, NeedsOf("mask-conventions"), nullptr)->encodings, one_additive.encodings);
  Capabilities owned = one_additive;
  owned.owns_bias = true;
  EXPECT_EQ(NarrowToNeeds(owned, NeedsOf("mask-conventions"), nullptr)->encodings, one_additive.encodings);
  Capabilities biased_only = one_additive;  // nothing else to draw: kept (and skipped, as before)
  biased_only.encodings = {EncodingKind::kAlibi};
  EXPECT_EQ(NarrowToNeeds(biased_only, NeedsOf("mask-conventions"), nullptr)->encodings, biased_only.encodings);

  Capabilities plain;  // encodings {none}, one mask convention, no rope stage
  EXPECT_FALSE(NarrowToNeeds(plain, NeedsOf("rope-relative"), &why));
  EXPECT_EQ(why, "adapter accepts no rope encoding");
  EXPECT_FALSE(NarrowToNeeds(plain, NeedsOf("mask-conventions"), &why));
  EXPECT_EQ(why, "adapter accepts one mask convention");
  plain.encodings = {EncodingKind::kNone, EncodingKind::kRope};
  EXPECT_FALSE(NarrowToNeeds(plain, NeedsOf("rope-relative"), &why));
  EXPECT_EQ(why, "adapter does not apply RoPE (the harness applies the reference)");
  plain.gqa = false;
  EXPECT_FALSE(NarrowToNeeds(plain, NeedsOf("gqa"), &why));
  EXPECT_EQ(why, "adapter does not support GQA");
  plain.gqa = true;
  plain.max_heads = 1;
  EXPECT_FALSE(NarrowToNeeds(plain, NeedsOf("gqa"), &why));

  const std::optional<Capabilities> rope = NarrowToNeeds(MakeAdapter("eigen")->capabilities(), NeedsOf("rope-relative"), &why);
  ASSERT_TRUE(rope);
  EXPECT_EQ(rope->encodings, std::vector<EncodingKind>{EncodingKind::kRope});
  EXPECT_TRUE(NarrowToNeeds(plain, NeedsOf("non-interference"), nullptr)) << "no needs: the adapter's capabilities";
}

// Every case drawn under a law's needs meets them, on real and on plain capabilities.
// backward-self-consistency differences the kernel's own forward: no bf16 where the
// kernel also takes a wider dtype, bf16 kept for a bf16-only kernel; the other
// backward laws keep every dtype.
TEST(NarrowToNeeds, PreciseForwardDropsBf16BesideAWiderDtype) {
  Capabilities caps = MakeAdapter("tiled-f32")->capabilities();
  caps.has_backward = true;
  caps.dtypes = {Dtype::kF32, Dtype::kF16, Dtype::kBf16};
  EXPECT_EQ(NarrowToNeeds(caps, NeedsOf("backward-self-consistency"), nullptr)->dtypes,
            (std::vector<Dtype>{Dtype::kF32, Dtype::kF16}));
  EXPECT_EQ(NarrowToNeeds(caps, NeedsOf("backward-agreement"), nullptr)->dtypes, caps.dtypes);
  caps.dtypes = {Dtype::kBf16};
  EXPECT_EQ(NarrowToNeeds(caps, NeedsOf("backward-self-consistency"), nullptr)->dtypes, caps.dtypes);
}

TEST(DecodeWithNeeds, EveryCaseMeetsTheLawsNeeds) {
  Capabilities owns_rope_without_stage = MakeAdapter("reference")->capabilities();
  owns_rope_without_stage.has_rope_stage = false;
  Capabilities tiny = MakeAdapter("tiled-f16")->capabilities();
  tiny.max_tokens = 2;
  tiny.max_heads = 2;
  for (const Capabilities& adapter_caps : {MakeAdapter("reference")->capabilities(), MakeAdapter("tiled-f32")->capabilities(),
                                          owns_rope_without_stage, tiny}) {
    for (const Law& law : AllLaws()) {
      const std::optional<Capabilities> caps = NarrowToNeeds(adapter_caps, law.needs, nullptr);
      if (law.needs.backward && !adapter_caps.has_backward) {  // the reference adapter has none
        EXPECT_FALSE(caps) << law.name;
        continue;
      }
      ASSERT_TRUE(caps) << law.name;
      for (uint64_t i = 0; i < 300; ++i) {
        RandomSource source(17, i);
        const Case c = Decode(source, *caps, law.needs);
        ASSERT_EQ(Validate(c), std::nullopt) << law.name << " " << ToLine(c);
        if (law.needs.packed_documents) {
          EXPECT_TRUE(PacksTwoDocuments(c)) << law.name << " " << ToLine(c);
          EXPECT_FALSE(IsCausalFlag(c.mask)) << ToLine(c);
        }
        if (law.needs.grouped_heads) {
          EXPECT_GE(c.q_heads, 2) << ToLine(c);
        }
        if (law.needs.backward && c.mask == MaskConvention::kDescriptor) {  // the padded layout only
          EXPECT_FALSE(caps->descriptor_forms.varlen || caps->descriptor_forms.paged) << ToLine(c);
        }
        if (!law.needs.encodings.empty()) {
          EXPECT_EQ(c.encoding.kind, EncodingKind::kRope) << ToLine(c);
        }
        if (law.needs.fixed_rope_frequencies && !adapter_caps.has_rope_stage) {
          EXPECT_FALSE(c.encoding.rope.log_n) << ToLine(c);
          EXPECT_NE(c.encoding.rope.scaling, RopeScaling::kDynamicNtk) << ToLine(c);
        }
      }
    }
  }
}

// Default needs draw exactly what Decode drew before it had needs (corpora and
// fuzz seeds keep decoding to the same cases); needs change the stream.
TEST(DecodeWithNeeds, DefaultNeedsKeepTheStream) {
  const Capabilities caps = MakeAdapter("reference")->capabilities();
  const Capabilities gqa_caps = *NarrowToNeeds(caps, NeedsOf("gqa"), nullptr);
  int differs = 0;
  for (uint64_t i = 0; i < 50; ++i) {
    RandomSource plain(5, i), with_default(5, i), with_gqa(5, i);
    const Case before = Decode(plain, caps);
    EXPECT_EQ(Decode(with_default, caps, LawNeeds{}), before);
    differs += !(Decode(with_gqa, gqa_caps, NeedsOf("gqa")) == before);
  }
  EXPECT_GT(differs, 0);
}

class LawNeedsCli : public ScratchDirTest {};

// The bound: no law × correct adapter pair of the default gate skips more
// than 10 % of 200 cases, for any reason: for want of what the law needs, or for a
// tolerance too loose to judge (properties/tolerance.cc; informative_oracle).
TEST_F(LawNeedsCli, DefaultGateSkipsAtMostTenPercentPerPair) {
  const CliRun run = Run("gate --cases 200 --quiet --report-dir r --json s.json");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  const nlohmann::json summary = nlohmann::json::parse(ReadText(dir_ / "s.json"));
  ASSERT_EQ(summary["results"].size(), AllLaws().size() * 5) << "every law on the five correct adapters";
  for (const nlohmann::json& pair : summary["results"]) {
    const int skipped = pair["skipped"].get<int>();
    const Law& law = *FindLaw(pair["law"].get<std::string>());
    if (law.needs.backward) {
      // The backward-* laws: the reference adapter has no backward (one skip, the reason);
      // eigen and tiled leave more cases uninformative than the forward's laws (a gradient
      // row cancels where an output row does not), fewer since their scores are drawn
      // narrow (LawNeeds::informative_gradient): at most 15 %, measured 0–11 % at 200 cases,
      // seed 1 (eigen self-consistency 11 %), and 0–11 % at 1000, seed 3 (up to 26 % before).
      if (pair["adapter"] == "reference") {
        EXPECT_EQ(skipped, pair["cases"].get<int>());
        EXPECT_EQ(pair["skip_reasons"].begin().key(), "adapter has no backward pass");
      } else if ((law.name == "backward-self-consistency" || law.name == "backward-gqa") &&
                 pair["adapter"] == "tiled-bf16") {
        // self-consistency's finite difference of a bf16 forward: L's rounding (u = 2^-8 per
        // output row) against a signal held small by the score step (≤ 1/4); gqa's dk and dv
        // summed over a query group in bf16 (Hq = 12 over one kv head) against the repeated
        // heads. At most 30 %: measured 23.5 % and 16.5 % at 200 cases, seed 1, 25 % and 18 %
        // at 1000, seed 3 (36 % and 32 % before the narrow scores).
        EXPECT_LE(skipped * 10, pair["cases"].get<int>() * 3) << law.name << " × " << pair["adapter"];
      } else {
        EXPECT_LE(skipped * 100, pair["cases"].get<int>() * 15) << law.name << " × " << pair["adapter"];
      }
      continue;
    }
    EXPECT_LE(skipped * 10, pair["cases"].get<int>())
        << pair["law"] << " × " << pair["adapter"] << ": " << pair["skip_reasons"].dump();
  }
}

// A pair with nothing to draw is skipped once, with the reason, not per case.
TEST_F(LawNeedsCli, EmptyIntersectionIsOneSkip) {
  const CliRun run = Run("gate --adapter eigen --law gqa --max-heads 1 --cases 40 --report-dir r --json s.json");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  const nlohmann::json pair = nlohmann::json::parse(ReadText(dir_ / "s.json"))["results"][0];
  EXPECT_EQ(pair["cases"], 1) << pair.dump();
  EXPECT_EQ(pair["skipped"], 1);
  EXPECT_EQ(pair["skip_reasons"].begin().key(), "adapter accepts one query head: nothing to group");
  EXPECT_TRUE(pair["nothing_checked"].get<bool>());
}

// The same in a fuzz campaign: one skip with the reason, whichever of its
// workers meets the pair's case 0.
TEST_F(LawNeedsCli, EmptyIntersectionIsOneSkipInAFuzzCampaign) {
  const CliRun run = Run("fuzz --adapter tiled-varlen-f32 --law mask-conventions --cases 6 --jobs 2 --report-dir r "
                         "--corpus c --json s.json");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  const nlohmann::json pair = nlohmann::json::parse(ReadText(dir_ / "s.json"))["results"][0];
  EXPECT_EQ(pair["cases"], 1) << pair.dump();
  EXPECT_EQ(pair["skipped"], 1);
  EXPECT_EQ(pair["skip_reasons"].begin().key(), "adapter accepts one mask convention");
}

}  // namespace
}  // namespace attncheck::test
