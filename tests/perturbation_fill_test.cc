// Laws that perturb keys (packed-isolation, non-interference, masked-rows, their
// backward twins, the influence map) move them by PerturbationMagnitude, which keeps
// every perturbed score under the mask's finite fill: a kernel that reads the fill as
// a score (contract "blocking neg-inf") still blocks every key the law expects
// blocked. A perturbed run whose fill could not block is skipped, never handed to such
// a kernel. The case below made packed-isolation fail on ONNX Runtime's
// GroupQueryAttention in f16 (add-lowest fill, extreme logits rotated by RoPE): the
// perturbed key's masked score (15,573 − 65,504 = −49,931) climbed past the best
// visible key's −31,997, and the kernel, reading −65,504 as a score, rightly read it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "adapters/harness.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/influence.h"
#include "properties/law_support.h"
#include "properties/laws.h"
#include "reference/attention.h"
#include "reference/data.h"
#include "reference/declared_attention.h"
#include "reference/mask.h"
#include "reference/scenario.h"

namespace attncheck {
namespace {

using reference::Scenario;

// f16 attention in double from the float inputs: softmax(scale·q·k + mask) with the
// additive mask read as a score, as ONNX Runtime and ggml do (blocking neg-inf).
class FillReadingKernel final : public Adapter {
 public:
  explicit FillReadingKernel(Blocking blocking = Blocking::kNegInfOnly) : blocking_(blocking) {}
  std::string name() const override { return "test:fill-reading-f16"; }
  std::string description() const override { return "adds the mask to the scores"; }
  Capabilities capabilities() const override {
    Capabilities caps;
    caps.dtypes = {Dtype::kF16};
    caps.masks = {MaskConvention::kAdditiveLowest, MaskConvention::kAdditiveMinus1e4};
    caps.blocking = blocking_;
    caps.masked_rows = MaskedRowPolicy::kUnspecified;
    caps.nan_isolation = false;
    caps.encodings = {EncodingKind::kNone, EncodingKind::kRope, EncodingKind::kAlibi};
    caps.rope_scalings = {RopeScaling::kNone, RopeScaling::kLinear, RopeScaling::kDynamicNtk};
    caps.max_tokens = 48;
    caps.max_head_dim = 32;
    return caps;
  }
  void attention(const AttentionArgs& a) override {
    ++calls;
    const int group = a.q_heads / a.kv_heads, d = a.head_dim, dv = a.value_dim;
    std::vector<double> p(static_cast<size_t>(a.tk));
    for (int b = 0; b < a.batch; ++b)
      for (int h = 0; h < a.q_heads; ++h)
        for (int i = 0; i < a.tq; ++i) {
          const float* q = a.q.data() + ((static_cast<size_t>(b) * a.q_heads + h) * a.tq + i) * d;
          double top = -INFINITY;
          for (int j = 0; j < a.tk; ++j) {
            const float* k = a.k.data() + ((static_cast<size_t>(b) * a.kv_heads + h / group) * a.tk + j) * d;
            double dot = 0.0;
            for (int e = 0; e < d; ++e) dot += static_cast<double>(q[e]) * k[e];
            p[j] = a.scale * dot + a.mask.additive[(static_cast<size_t>(b) * a.tq + i) * a.tk + j];
            top = std::max(top, p[j]);
          }
          double sum = 0.0;
          for (double& x : p) sum += x = std::exp(x - top);
          float* out = a.out.data() + ((static_cast<size_t>(b) * a.q_heads + h) * a.tq + i) * dv;
          for (int e = 0; e < dv; ++e) {
            double o = 0.0;
            for (int j = 0; j < a.tk; ++j)
              o += p[j] * a.v[((static_cast<size_t>(b) * a.kv_heads + h / group) * a.tk + j) * dv + e];
            out[e] = static_cast<float>(o / sum);
          }
        }
  }
  int calls = 0;

 private:
  Blocking blocking_;
};

// The shrunk case of the false alarm (ort-gqa-f16, packed-isolation, seed 3 case 849).
Case RotatedExtremeLogits() {
  Case c;
  c.dtype = Dtype::kF16;
  c.head_dim = c.value_dim = 128;
  c.q_heads = c.kv_heads = 1;
  c.query_len = 1;
  c.rows = {RowSpec{.documents = {5, 193}}};
  c.visibility = VisibilityKind::kSlidingWindow;
  c.window = 2;
  c.window_right = 511;
  c.mask = MaskConvention::kAdditiveLowest;
  c.profile = ValueProfile::kExtremeLogits;
  c.scale = 1.0;
  c.seed = 0;
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.layout = RopeLayout::kInterleaved;
  c.encoding.rope.base = 100.0;
  c.encoding.rope.scaling = RopeScaling::kDynamicNtk;
  c.encoding.rope.log_n = true;
  return c;
}

// The perturbations the laws make, each key element moved by ±magnitude and rounded
// to the dtype: all up, alternating in d, and the influence map's two rounds.
std::vector<Scenario> Perturbed(const Scenario& s, double magnitude) {
  std::vector<Scenario> all;
  for (int pattern = 0; pattern < 2; ++pattern) {
    Scenario t = s;
    for (size_t n = 0; n < t.k.data.size(); ++n) {
      const double sign = pattern == 0 || n % 2 == 0 ? 1.0 : -1.0;
      t.k.data[n] = reference::RoundTo(s.c.dtype, t.k.data[n] + sign * magnitude);
    }
    all.push_back(std::move(t));
  }
  for (int round = 0; round < 2; ++round) {
    Scenario t = s;
    for (int b = 0; b < s.batch; ++b)
      for (int j = 0; j < s.tk; ++j) PerturbKey(t, b, j, magnitude, round);
    all.push_back(std::move(t));
  }
  return all;
}

// The magnitude a bound on Σ|q_d| alone gives (a quarter of the fill), blind to RoPE
// turning the perturbation toward q and to how close the scores already sit to the fill.
double QuarterOfTheFill(const Scenario& s, MaskConvention m) {
  double l1 = 0.0;
  for (int d = 0; d < s.q.shape[3]; ++d) l1 += std::abs(s.q.at(0, 0, 0, d));
  return std::abs(reference::AdditiveFill(m, s.c.dtype)) / (4.0 * s.c.effective_scale() * l1);
}

TEST(PerturbationFill, TheFalseAlarmsCaseStaysBlockedAndTheBlindMagnitudeWouldNot) {
  const Scenario s = reference::MakeScenario(RotatedExtremeLogits());
  const MaskConvention m = MaskConvention::kAdditiveLowest;
  ASSERT_GT(FillHeadroom(s, m), 0.0) << "the case itself is handed over";
  const double blind = QuarterOfTheFill(s, m);
  EXPECT_LE(FillHeadroom(Perturbed(s, blind)[0], m), 0.0)
      << "the check below could not fail: a quarter of the fill (" << blind << ") keeps this case blocked";
  const double magnitude = PerturbationMagnitude(s, m);
  EXPECT_GT(magnitude, 1.0) << "the perturbation still moves f16 keys";
  for (const Scenario& t : Perturbed(s, magnitude)) EXPECT_GT(FillHeadroom(t, m), 0.0) << "magnitude " << magnitude;
}

TEST(PerturbationFill, PerturbedScoresStayUnderTheFillOnGeneratedCases) {
  const Capabilities caps = FillReadingKernel().capabilities();
  int checked = 0, limited = 0;
  for (int i = 0; i < 600; ++i) {
    RandomSource source(11, static_cast<uint64_t>(i));
    Case c = Decode(source, caps);
    if (i % 2 == 1) c.profile = ValueProfile::kExtremeLogits;
    const Scenario s = reference::MakeScenario(c);
    for (MaskConvention m : caps.masks) {
      if (FillHeadroom(s, m) <= 0.0) continue;  // refused: never perturbed
      const double magnitude = PerturbationMagnitude(s, m);
      ++checked;
      limited += magnitude < 256.0;
      for (const Scenario& t : Perturbed(s, magnitude))
        ASSERT_GT(FillHeadroom(t, m), 0.0) << fmt::format("{} in {}: magnitude {}", c, Name(m), magnitude);
    }
  }
  EXPECT_GT(checked, 800);
  EXPECT_GT(limited, 100) << "cases whose magnitude the fill limits";
  std::printf("%d scenario × convention pairs checked, %d with the magnitude limited by the fill\n", checked, limited);
}

// A kernel that declares its scores stored in f16 (ONNX Runtime's f16 RotaryEmbedding
// path, ort-rotary-f16) is refused a call in which a row sees a score past 65504 (the
// harness's ScoreOverflowReason). Perturbed keys of extreme logits in f16 (q·k of
// 3.2e4, keys moved by 256) went past it: 37 of 2000 non-interference and
// packed-isolation cases (seed 3) were such refusals. ScoreSafeLimits keeps every
// seen score of a perturbed key finite in f16, where the magnitude blind to it would
// not, and leaves a key no row sees its full magnitude: F12's blocked key must still
// score past 65504.
TEST(PerturbationFill, SeenScoresOfPerturbedKeysStayFiniteWhereTheyAreDeclaredInF16) {
  Accuracy f16_scores;
  f16_scores.scores_in_input_dtype = true;
  ASSERT_TRUE(reference::ScoresMayOverflow(f16_scores, Dtype::kF16));
  Capabilities caps = FillReadingKernel().capabilities();
  caps.masks = {MaskConvention::kBoolBlocked};  // no fill: the scores alone limit the magnitude
  caps.encodings = {EncodingKind::kNone, EncodingKind::kRope};
  TensorD q, k;
  const auto overflows = [&](const Scenario& t) {
    reference::EncodeQk(t, q, k);
    return reference::FirstScoreOverflow(q, k, t.visible, nullptr, t.c.effective_scale(), t.c.softcap, t.c.dtype,
                                         f16_scores)
        .has_value();
  };
  int checked = 0, limited = 0, overflow_without = 0;
  for (int i = 0; i < 400; ++i) {
    RandomSource source(17, static_cast<uint64_t>(i));
    Case c = Decode(source, caps);
    c.profile = ValueProfile::kExtremeLogits;
    const Scenario s = reference::MakeScenario(c);
    if (overflows(s)) continue;  // refused as it is: never perturbed
    const double blind = PerturbationMagnitude(s, c.mask);
    const std::vector<uint8_t> every_key(static_cast<size_t>(s.batch) * s.tk, 1);
    const double magnitude = ScoreSafeMagnitude(ScoreSafeLimits(s, f16_scores), every_key, blind);
    EXPECT_EQ(ScoreSafeMagnitude(ScoreSafeLimits(s, Accuracy{}), every_key, blind), blind) << "f32 scores: nothing to limit";
    ++checked;
    limited += magnitude < blind;
    for (const Scenario& t : Perturbed(s, magnitude)) ASSERT_FALSE(overflows(t)) << fmt::format("{}: {}", c, magnitude);
    for (const Scenario& t : Perturbed(s, blind)) overflow_without += overflows(t);
  }
  EXPECT_GT(checked, 300);
  EXPECT_GT(limited, 50) << "cases whose magnitude f16 scores limit";
  EXPECT_GT(overflow_without, 50) << "the check above could not fail: the blind magnitude overflows nothing";
  std::printf("%d extreme-logits f16 scenarios, %d with the magnitude limited by f16 scores; with the blind one, %d "
              "perturbed scenarios overflow\n", checked, limited, overflow_without);

  // F12's case (corpora/regressions/onnxruntime/non-interference-dcec6b8b): the left pad
  // no row sees is perturbed by the full 256, past 65504, as the finding needs.
  Case f12;
  f12.dtype = Dtype::kF16;
  f12.head_dim = 2;
  f12.value_dim = 1;
  f12.query_len = 1;
  f12.rows = {RowSpec{.left_pad = 1, .documents = {1}}};
  f12.mask = MaskConvention::kBoolVisible;
  f12.profile = ValueProfile::kExtremeLogits;
  const Scenario s = reference::MakeScenario(f12);
  ASSERT_FALSE(s.is_visible(0, 0, 0));
  const double blind = PerturbationMagnitude(s, f12.mask);
  EXPECT_EQ(ScoreSafeMagnitude(ScoreSafeLimits(s, f16_scores), {1, 0}, blind), blind);
  EXPECT_LT(ScoreSafeMagnitude(ScoreSafeLimits(s, f16_scores), {1, 1}, blind), blind) << "the key it sees is limited";
}

// A run whose perturbed keys outgrow the fill tests no promise of a kernel that adds the
// fill to the score: the law skips it. A kernel that promises the fill blocks whatever
// the score (blocking "fill") is held to that promise: the run is handed over.
TEST(PerturbationFill, ALiftedKeyIsNoTestOfAKernelThatReadsTheFill) {
  const Scenario s = reference::MakeScenario(RotatedExtremeLogits());
  const MaskConvention m = s.c.mask;
  const Scenario lifted = Perturbed(s, QuarterOfTheFill(s, m))[0];
  FillReadingKernel reads(Blocking::kNegInfOnly), promises(Blocking::kFill), rows(Blocking::kFillRows);
  EXPECT_FALSE(WhyPerturbedFillCannotBlock(reads, s, m).has_value());
  const std::optional<std::string> why = WhyPerturbedFillCannotBlock(reads, lifted, m);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("outgrow the add-lowest fill -65504"), std::string::npos) << *why;
  EXPECT_TRUE(WhyPerturbedFillCannotBlock(rows, lifted, m).has_value());
  EXPECT_FALSE(WhyPerturbedFillCannotBlock(promises, lifted, m).has_value());
  // The harness's own rule for a case: the lifted scenario could not be a case of its own.
  const std::optional<std::string> refused = WhyUnsupported(reads, lifted, m);
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("cannot block: a blocked key scores"), std::string::npos) << *refused;
  EXPECT_FALSE(WhyUnsupported(reads, s, m).has_value());
}

// Both laws that perturb the keys a row cannot see, on extreme logits, where RoPE
// turns a perturbation of the keys toward the queries.
TEST(PerturbationFill, IsolationLawsHoldOnAKernelThatReadsTheFill) {
  FillReadingKernel kernel;
  const Capabilities caps = kernel.capabilities();
  for (const char* name : {"packed-isolation", "non-interference"}) {
    const Law& law = *FindLaw(name);
    int passed = 0;
    for (int i = 0; i < 300; ++i) {
      RandomSource source(3, static_cast<uint64_t>(i));
      Case c = Decode(source, caps);
      c.profile = ValueProfile::kExtremeLogits;
      const Verdict v = RunLaw(law, kernel, c, Options{});
      EXPECT_NE(v.outcome, Outcome::kFail) << name << ": " << v.message << "\n" << fmt::format("{}", c);
      passed += v.outcome == Outcome::kPass;
    }
    EXPECT_GT(passed, 100) << name;
    std::printf("%s on the fill-reading kernel, extreme logits: %d of 300 passed\n", name, passed);
  }
}

// masked-rows poisons the keys no query may read with 60000 in f16. RoPE turns a pair
// (60000, −60000) into components up to 84,853, past f16's 65504: the harness refused
// the poisoned run and the whole case was a skip (126 of 1000 masked-rows cases on
// ort-gqa-f16, seed 3, each one after its NaN step had found F13's hazard). The poison
// is now scaled so that the encoded keys stay finite, and it still outweighs any fill.
TEST(PerturbationFill, MaskedRowsPoisonStaysFiniteInF16UnderRope) {
  FillReadingKernel reads, promises(Blocking::kFill);  // the second breaks its promise
  Capabilities caps = reads.capabilities();
  caps.encodings = {EncodingKind::kRope};
  const Law& law = *FindLaw("masked-rows");
  const std::optional<Capabilities> narrowed = NarrowToNeeds(caps, law.needs, nullptr);
  ASSERT_TRUE(narrowed.has_value());
  int checked = 0, overflowed = 0, promise_broken = 0;
  for (int i = 0; i < 200; ++i) {
    RandomSource source(5, static_cast<uint64_t>(i));
    const Case c = Decode(source, *narrowed, law.needs);
    const Verdict v = RunLaw(law, reads, c, Options{});
    EXPECT_NE(v.outcome, Outcome::kFail) << v.message << "\n" << fmt::format("{}", c);
    overflowed += v.outcome == Outcome::kSkip && v.message.find("overflows") != std::string::npos;
    checked += v.outcome == Outcome::kPass || v.outcome == Outcome::kHazard;
    const Verdict p = RunLaw(law, promises, c, Options{});
    promise_broken += p.outcome == Outcome::kFail && p.message.find("NaN") != 0 &&
                      p.message.find("poisoned into") != std::string::npos;
  }
  EXPECT_EQ(overflowed, 0) << "cases skipped because the poisoned keys overflowed f16 once encoded";
  EXPECT_GT(checked, 150);
  EXPECT_GT(promise_broken, 20) << "the scaled poison still outweighs a fill the kernel adds to the score";
  std::printf("masked-rows, f16 RoPE: %d of 200 checked, %d huge-poison fails of the broken promise\n", checked,
              promise_broken);
}

}  // namespace
}  // namespace attncheck
