// Pairwise coverage of declared features (cases/features.h, issue 26 point 3): the
// features a kernel declares and a case has, SteeredSource forcing named draws and
// otherwise delegating, the steered stream reaching every declared pair in 2 % of
// the cases, a pair that is never checked reported under-covered, and the gate's
// table, summary.json and index.html listing the feature pairs.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/law_needs.h"
#include "cases/features.h"
#include "cases/random_source.h"
#include "cases/steered_source.h"
#include "properties/laws.h"
#include "reports/coverage.h"
#include "tests/cli_support.h"
#include "tests/contract_override.h"

namespace attncheck {
namespace {

static_assert(Source<SteeredSource<RandomSource>>);

std::vector<std::string> Names(const std::vector<Feature>& features) {
  std::vector<std::string> names;
  for (const Feature& f : features) names.push_back(f.name);
  return names;
}

// Two masks, ALiBi and RoPE under two scalings, softcap, GQA, Tq > Tk and sessions.
Capabilities SmallCaps() {
  Capabilities caps;
  caps.masks = {MaskConvention::kAdditiveNegInf, MaskConvention::kBoolVisible};
  caps.encodings = {EncodingKind::kNone, EncodingKind::kRope, EncodingKind::kAlibi};
  caps.rope_scalings = {RopeScaling::kNone, RopeScaling::kLinear};
  caps.softcap = true;
  caps.gqa = true;
  caps.queries_beyond_keys = true;
  caps.has_session = true;
  return caps;
}

TEST(DeclaredFeatures, OneValuePerDeclaredDimensionValue) {
  const Capabilities caps = SmallCaps();
  EXPECT_EQ(Names(DeclaredFeatures(caps, {.queries_beyond_keys = true})),
            (std::vector<std::string>{"mask=add-inf", "mask=bool-visible", "alibi", "rope=none", "rope=linear",
                                      "softcap", "gqa", "tq>tk"}));
  // Tq > Tk only for a law that draws it, sessions only for one that runs a decode plan.
  EXPECT_EQ(Names(DeclaredFeatures(caps, {.decode_plan = true})),
            (std::vector<std::string>{"mask=add-inf", "mask=bool-visible", "alibi", "rope=none", "rope=linear",
                                      "softcap", "gqa", "session"}));
}

TEST(DeclaredFeatures, OneMaskIsNoDimensionAndDescriptorFormsDecide) {
  Capabilities caps = SmallCaps();
  caps.masks = {MaskConvention::kDescriptor};
  caps.descriptor_forms.causal_bottom_right = true;  // no alibi, no softcap form
  EXPECT_EQ(Names(DeclaredFeatures(caps)), (std::vector<std::string>{"rope=none", "rope=linear", "gqa"}));
  caps.descriptor_forms.alibi = caps.descriptor_forms.softcap = true;
  EXPECT_EQ(Names(DeclaredFeatures(caps)),
            (std::vector<std::string>{"alibi", "rope=none", "rope=linear", "softcap", "gqa"}));
  caps.max_heads = 1;
  caps.gqa = true;
  EXPECT_EQ(Names(DeclaredFeatures(caps)), (std::vector<std::string>{"alibi", "rope=none", "rope=linear", "softcap"}))
      << "one head has nothing to group";
}

TEST(FeaturesOf, NamesWhatTheCaseHas) {
  const Capabilities caps = SmallCaps();
  Case c;
  c.rows = {RowSpec{0, 0, {4}, 0, 5}};  // Tk = 4
  c.query_len = 6;
  c.mask = MaskConvention::kBoolVisible;
  c.encoding.kind = EncodingKind::kAlibi;
  c.softcap = 30.0;
  c.q_heads = 4;
  c.kv_heads = 2;
  const LawNeeds needs{.queries_beyond_keys = true};
  EXPECT_EQ(FeaturesOf(c, caps, needs),
            (std::vector<std::string>{"mask=bool-visible", "alibi", "softcap", "gqa", "tq>tk"}));
  c.query_len = 4;
  c.kv_heads = 4;
  c.softcap = 0.0;
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.scaling = RopeScaling::kLinear;
  c.mask = MaskConvention::kAdditiveNegInf;
  EXPECT_EQ(FeaturesOf(c, caps, needs), (std::vector<std::string>{"mask=add-inf", "rope=linear"}));
  c.decode_chunks = {1};
  EXPECT_EQ(FeaturesOf(c, caps, {.decode_plan = true}), (std::vector<std::string>{"mask=add-inf", "rope=linear", "session"}));
}

TEST(FeaturePairs, JoinTwoDimensionsAndSayWhatLimitsThem) {
  Capabilities caps = SmallCaps();
  caps.masks.push_back(MaskConvention::kCausalTopLeft);
  const std::vector<Feature> features = DeclaredFeatures(caps, {.queries_beyond_keys = true});
  const std::vector<FeaturePair> pairs = FeaturePairs(features);
  std::map<std::string, FeaturePair> by_name;
  for (const FeaturePair& p : pairs) {
    EXPECT_NE(features[p.first].dimension, features[p.second].dimension) << p.name;
    by_name[p.name] = p;
  }
  // 3 masks × 3 encodings + 6 × softcap, gqa, tq>tk + 3 among those three.
  EXPECT_EQ(pairs.size(), 9u + 6u * 3u + 3u);
  ASSERT_TRUE(by_name.contains("mask=bool-visible × rope=linear"));
  EXPECT_DOUBLE_EQ(by_name["mask=bool-visible × rope=linear"].max_share, 1.0 / 9.0);
  EXPECT_EQ(by_name["mask=bool-visible × rope=linear"].limit, "mask × encoding: 9 pairs that exclude each other");
  EXPECT_DOUBLE_EQ(by_name["softcap × gqa"].max_share, 1.0);
  EXPECT_EQ(by_name["mask=causal-top-left × tq>tk"].max_share, 0.0) << "Decode draws Tq > Tk only bottom-right";
  EXPECT_FALSE(by_name["mask=causal-top-left × tq>tk"].limit.empty());
}

TEST(SteeredPair, ThreeInFourIndicesRoundRobinAfterTheFirst) {
  for (uint64_t i = 0; i < kUnsteeredFirst; ++i) EXPECT_FALSE(SteeredPair(i, 5).has_value()) << i;
  std::vector<size_t> aimed;
  for (uint64_t i = kUnsteeredFirst; i < kUnsteeredFirst + 8; ++i) {
    const std::optional<size_t> p = SteeredPair(i, 5);
    EXPECT_EQ(p.has_value(), i % 4 != 3) << i;
    if (p) aimed.push_back(*p);
  }
  EXPECT_EQ(aimed, (std::vector<size_t>{0, 1, 2, 3, 4, 0}));
  EXPECT_FALSE(SteeredPair(0, 0).has_value()) << "nothing to steer toward";
}

TEST(SteeredSource, NothingForcedDecodesThePlainCases) {
  const Capabilities caps = SmallCaps();
  for (uint64_t i = 0; i < 200; ++i) {
    RandomSource plain(7, i), inner(7, i);
    SteeredSource<RandomSource> steered(inner, {});
    EXPECT_EQ(Decode(steered, caps), Decode(plain, caps)) << i;
    EXPECT_EQ(inner.draws(), plain.draws()) << i;
  }
}

TEST(SteeredSource, ForcesNamedDrawsAndConsumesTheSame) {
  const std::vector<ForcedDraw> forced = {{"b", 10, 12}, {"flag", 1, 1}, {"c", 3, 3, "a", -1}};
  for (uint64_t i = 0; i < 50; ++i) {
    RandomSource plain(3, i), inner(3, i);
    SteeredSource<RandomSource> steered(inner, forced);
    EXPECT_EQ(steered.Int(0, 100, "a"), plain.Int(0, 100, "a"));
    const int64_t b = steered.Int(0, 100, "b");
    const int64_t plain_b = plain.Int(0, 100, "b");
    EXPECT_TRUE(b >= 10 && b <= 12) << b;
    if (plain_b >= 10 && plain_b <= 12) {
      EXPECT_EQ(b, plain_b) << "a draw already in range is kept";
    }
    EXPECT_TRUE(steered.Bool("flag"));
    plain.Bool("flag");
    EXPECT_EQ(steered.Int(0, 100, "c"), plain.Int(0, 100, "c")) << "its condition (a = -1) does not hold";
    EXPECT_EQ(steered.Int(0, 5, "b"), plain.Int(0, 5, "b")) << "a range the draw cannot meet leaves it";
    EXPECT_EQ(inner.draws(), plain.draws());
  }
  RandomSource inner(3, 0);
  const std::vector<ForcedDraw> conditional = {{"c", 3, 3, "a", 0}};
  SteeredSource<RandomSource> steered(inner, conditional);
  steered.Int(0, 0, "a");
  EXPECT_EQ(steered.Int(0, 100, "c"), 3) << "its condition (a = 0) holds";
}

// Each pair Decode can draw is drawn by most of the cases steered toward it.
TEST(FeatureSteering, SteeredCasesHaveTheirPair) {
  for (const LawNeeds needs : {LawNeeds{.queries_beyond_keys = true}, LawNeeds{.decode_plan = true}}) {
    Capabilities caps = SmallCaps();
    caps.masks.push_back(MaskConvention::kDescriptor);
    caps.descriptor_forms.causal_bottom_right = caps.descriptor_forms.alibi = caps.descriptor_forms.softcap = true;
    const std::vector<Feature> features = DeclaredFeatures(caps, needs);
    for (const FeaturePair& pair : FeaturePairs(features)) {
      const std::vector<ForcedDraw> steer = Steering(features, pair);
      int hit = 0;
      for (uint64_t i = 0; i < 20; ++i) {
        RandomSource inner(11, i);
        SteeredSource<RandomSource> steered(inner, steer);
        const Case c = Decode(steered, caps, needs);
        const std::vector<std::string> has = FeaturesOf(c, caps, needs);
        const auto with = [&](size_t f) { return std::ranges::count(has, features[f].name) > 0; };
        hit += with(pair.first) && with(pair.second) ? 1 : 0;
      }
      EXPECT_GE(hit, 10) << pair.name;
    }
  }
}

// The steered stream of a law on a small adapter as the gate runs it (RunLaw, each
// verdict tallied with the pairs of its case): the pairs of every checked case.
LawResult RunStream(const Law& law, Adapter& adapter, int cases) {
  std::string why;
  const std::optional<Capabilities> caps = NarrowToNeeds(adapter.capabilities(), law.needs, &why);
  EXPECT_TRUE(caps.has_value()) << why;
  LawResult r;
  r.planned_cases = cases;
  if (!caps) return r;
  const FeatureSteering steering(*caps, law.needs, LawStreamSeed(3, law.name));
  r.DeclarePairs(steering.pairs());
  for (int i = 0; i < cases; ++i) {
    const Case c = steering.Draw(LawStreamSeed(3, law.name), static_cast<uint64_t>(i), *caps, law.needs);
    r.Add(RunLaw(law, adapter, c, Options{}), steering.PairsOf(c));
  }
  return r;
}

void SmallKernel(Capabilities& caps) {
  caps.masks = {MaskConvention::kAdditiveNegInf};
  caps.encodings = {EncodingKind::kNone, EncodingKind::kRope, EncodingKind::kAlibi};
  caps.rope_scalings = {RopeScaling::kNone, RopeScaling::kLinear};
  caps.max_tokens = 12;
  caps.max_head_dim = 8;
}

std::string Table(const LawResult& r) {
  std::string text;
  for (const FeaturePairShare& p : FeaturePairShares(r)) text += FeaturePairLine(p, r) + "\n";
  return text;
}

TEST(FeatureSteering, EveryDeclaredPairInTwoPercentOfTheCases) {
  test::ContractOverride adapter("eigen", SmallKernel);
  const LawResult r = RunStream(*FindLaw("reference-agreement"), adapter, 300);
  // alibi, rope=none, rope=linear × softcap, gqa, tq>tk, and those three among themselves
  EXPECT_EQ(r.feature_pairs.size(), 12u) << Table(r);
  EXPECT_EQ(r.failed + r.errors, 0);
  EXPECT_TRUE(UnderCoveredFeaturePairs(r).empty()) << Table(r);
}

// The steered streams of a paged kernel with many exclusive pairs (9 encodings × 3
// page sizes, 3.7 % at most each) as the gate draws them at 1000 cases, decoded only:
// every pair Decode can draw reaches 2 %, not only those the plain stream draws
// rarely (gqa's alibi × tq>tk had 1.7 %, decode-consistency's rope=none × page_size=7
// 1.9 %, when a pair's turns followed its natural share alone).
TEST(FeatureSteering, EveryPairOfAPagedKernelInTwoPercentOfADrawnThousand) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter("tiled-paged-bf16");
  for (const char* name : {"gqa", "decode-consistency", "masked-rows", "reference-agreement", "non-interference"}) {
    const Law& law = *FindLaw(name);
    const std::optional<Capabilities> caps = NarrowToNeeds(adapter->capabilities(), law.needs, nullptr);
    ASSERT_TRUE(caps) << name;
    const uint64_t stream = LawStreamSeed(3, law.name);
    const FeatureSteering steering(*caps, law.needs, stream);
    std::map<std::string, int> drawn;
    constexpr int kCases = 1000;
    for (int i = 0; i < kCases; ++i)
      for (const std::string& pair : steering.PairsOf(steering.Draw(stream, static_cast<uint64_t>(i), *caps, law.needs)))
        ++drawn[pair];
    ASSERT_GE(steering.pairs().size(), 30u) << name;
    for (const FeaturePair& pair : steering.pairs()) {
      if (pair.max_share <= 0.0) continue;
      EXPECT_GE(drawn[pair.name], kCases * kFeaturePairShare) << name << ": " << pair.name;
    }
  }
}

// An encoding the kernel's descriptor forms do not take (eigen: ALiBi through a dense
// mask only) is never paired with a layout: such a pair is reported never drawn, with
// why, not under-covered by chance.
TEST(FeaturePairs, AnEncodingNoDescriptorFormTakesHasNoLayoutPair) {
  const Capabilities caps = MakeAdapter("eigen")->capabilities();
  ASSERT_FALSE(caps.descriptor_forms.alibi || caps.descriptor_forms.alibi_max_bias);
  int layout_pairs = 0;
  for (const FeaturePair& pair : FeaturePairs(DeclaredFeatures(caps))) {
    if (pair.name.find("layout=") == std::string::npos) continue;
    ++layout_pairs;
    const bool alibi = pair.name.starts_with("alibi × ");
    EXPECT_EQ(pair.max_share == 0.0, alibi) << pair.name;
    if (alibi) {
      EXPECT_EQ(pair.limit, "the descriptor forms take no alibi");
    }
  }
  EXPECT_GE(layout_pairs, 4);
}

// A kernel that declares softcap but refuses every softcapped case: each pair with
// softcap is never checked, so it is under-covered, and the others are not.
TEST(FeatureSteering, APairNeverCheckedIsUnderCovered) {
  test::ContractOverride adapter("eigen", SmallKernel, [](const Case& c) -> std::optional<std::string> {
    if (c.softcap > 0.0) return "softcap refused";
    return std::nullopt;
  });
  const LawResult r = RunStream(*FindLaw("reference-agreement"), adapter, 400);
  const std::vector<FeaturePairShare> under = UnderCoveredFeaturePairs(r);
  // softcap × alibi, rope=none, rope=linear, gqa, tq>tk: never checked. The refusal
  // also thins the others (3 of 4 drawn softcaps are non-zero), but never to nothing.
  int softcap_pairs = 0;
  for (const FeaturePairShare& p : under) {
    if (p.pair.find("softcap") == std::string::npos) {
      EXPECT_GT(p.cases, 0) << p.pair;
      continue;
    }
    ++softcap_pairs;
    EXPECT_EQ(p.cases, 0) << p.pair;
    EXPECT_EQ(FeaturePairLine(p, r), p.pair + ": 0 of 400 planned cases (0.0%)");
  }
  EXPECT_EQ(softcap_pairs, 5) << Table(r);
  EXPECT_GT(r.skip_reasons.at("softcap refused"), 0);
}

TEST(LawResult, MergeAddsFeaturePairs) {
  LawResult a, b;
  a.DeclarePairs(std::vector<FeaturePair>{{0, 1, "alibi × softcap", 1.0, ""}, {0, 2, "alibi × gqa", 1.0, ""}});
  b.DeclarePairs(std::vector<FeaturePair>{{0, 1, "alibi × softcap", 1.0, ""}, {0, 2, "alibi × gqa", 1.0, ""}});
  const std::vector<std::string> both = {"alibi × softcap"};
  a.Add(Verdict::Pass(), both);
  b.Add(Verdict::Pass(), both);
  b.Add(Verdict::Skip("no"), both);  // a skip is not checked: it does not count
  a.Merge(b);
  EXPECT_EQ(a.feature_pairs.at("alibi × softcap").cases, 2);
  EXPECT_EQ(a.feature_pairs.at("alibi × gqa").cases, 0);
}

class FeaturePairsCli : public test::ScratchDirTest {};

// The gate lists the declared feature pairs in summary.json, the under-covered ones
// in its table and index.html; with 20 cases some of its 66 pairs are under 2 %.
TEST_F(FeaturePairsCli, GateReportsFeaturePairs) {
  const test::CliRun run = Run("gate --adapter tiled-paged-bf16 --law gqa --cases 20 --seed 3 --report-dir r");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  const nlohmann::json pair = nlohmann::json::parse(test::ReadText(dir_ / "r" / "summary.json"))["results"][0];
  const nlohmann::json& pairs = pair.at("feature_pairs");
  int under = 0;
  double last = 0.0;
  for (const nlohmann::json& p : pairs) {
    EXPECT_EQ(p.at("under_covered").get<bool>(), p.at("share").get<double>() < kUnderCoveredFeaturePair) << p.dump();
    EXPECT_GE(p.at("share").get<double>(), last) << "lowest share first";
    last = p.at("share").get<double>();
    under += p.at("under_covered").get<bool>() ? 1 : 0;
  }
  // ALiBi and RoPE under 8 scalings × softcap, gqa, tq>tk and the 3 page sizes (16, 1,
  // 7); softcap, gqa, tq>tk among themselves and × the page sizes.
  constexpr size_t kPairs = 9u * 6u + 3u + 3u * 3u;
  EXPECT_EQ(pairs.size(), kPairs) << pairs.dump();
  ASSERT_GT(under, 0) << pairs.dump();
  EXPECT_EQ(pair.at("under_covered_feature_pairs"), under);
  EXPECT_NE(run.out.find(fmt::format("note: gqa × tiled-paged-bf16: {} of {} declared feature pairs under 2%", under, kPairs)),
            std::string::npos)
      << run.out;
  if (under > 5) {
    EXPECT_NE(run.out.find(fmt::format("  and {} more", under - 5)), std::string::npos) << run.out;
  }
  const std::string html = test::ReadText(dir_ / "r" / "index.html");
  EXPECT_NE(html.find(fmt::format("Feature pairs: {} of {} declared under 2%", under, kPairs)), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"under\"><td>gqa</td><td>tiled-paged-bf16</td>"), std::string::npos) << html;
}

}  // namespace
}  // namespace attncheck
