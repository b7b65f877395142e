// Tq > Tk (cases/case.h RowSpec): more queries than keys, bottom-right aligned, the
// first Tq − Tk leading queries before every key. The case vocabulary validates
// them, the reference gives them no key under every causal kind and the
// FlashAttention descriptor means the same, the laws that can take them draw
// them for adapters that accept them, and a kernel that aligns them top-left fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "cases/text.h"
#include "properties/laws.h"
#include "reference/descriptor.h"
#include "reference/scenario.h"
#include "reference/visibility.h"

namespace attncheck {
namespace {

Case Leading(int tq, int tk, VisibilityKind visibility) {
  Case c;
  c.query_len = tq;
  c.visibility = visibility;
  c.window = 2;
  c.chunk = 2;
  c.rows = {RowSpec{0, 0, {tk}, visibility == VisibilityKind::kPrefixLm ? 2 : 0, tq - tk}};
  return c;
}

TEST(LeadingQueries, ValidateNamesTheField) {
  Case c = Leading(5, 3, VisibilityKind::kCausal);
  EXPECT_FALSE(Validate(c)) << *Validate(c);
  c.rows[0].position_offset = 1;
  ASSERT_TRUE(Validate(c));
  EXPECT_NE(Validate(c)->find("rows[0].position_offset"), std::string::npos) << *Validate(c);
  c = Leading(5, 3, VisibilityKind::kCausal);
  c.rows[0] = RowSpec{1, 0, {2}, 0, 2};
  ASSERT_TRUE(Validate(c));
  EXPECT_NE(Validate(c)->find("rows[0].left_pad"), std::string::npos) << *Validate(c);
  c = Leading(5, 3, VisibilityKind::kCausal);
  c.decode_chunks = {1};
  ASSERT_TRUE(Validate(c));
  EXPECT_NE(Validate(c)->find("decode_chunks"), std::string::npos) << *Validate(c);
  c = Leading(5, 3, VisibilityKind::kCausal);
  c.mask = MaskConvention::kCausalBottomRight;  // the flag's row sits at position Tq − Tk
  EXPECT_FALSE(Validate(c)) << *Validate(c);
  c.mask = MaskConvention::kCausalTopLeft;
  EXPECT_TRUE(Validate(c));
  c = Leading(3 + kMaxLeadingQueries + 1, 3, VisibilityKind::kCausal);
  EXPECT_TRUE(Validate(c));
}

// Tq = 5, Tk = 3: query i sits at slot i − 2. Causal kinds give rows 0 and 1 no
// key; bidirectional gives every row every key; prefix-LM only what causal gives
// (a leading query is before the prefix, not in it).
TEST(LeadingQueries, VisibilityPerKind) {
  const std::vector<uint8_t> causal = {0, 0, 0,  0, 0, 0,  1, 0, 0,  1, 1, 0,  1, 1, 1};
  EXPECT_EQ(reference::Visibility(Leading(5, 3, VisibilityKind::kCausal)), causal);
  EXPECT_EQ(reference::Visibility(Leading(5, 3, VisibilityKind::kBidirectional)), std::vector<uint8_t>(15, 1));
  EXPECT_EQ(reference::Visibility(Leading(5, 3, VisibilityKind::kPrefixLm)),
            (std::vector<uint8_t>{0, 0, 0,  0, 0, 0,  1, 1, 0,  1, 1, 0,  1, 1, 1}));
  EXPECT_EQ(reference::Visibility(Leading(5, 3, VisibilityKind::kSlidingWindow)),
            (std::vector<uint8_t>{0, 0, 0,  0, 0, 0,  1, 0, 0,  1, 1, 0,  0, 1, 1}));
  const reference::Scenario s = reference::MakeScenario(Leading(5, 3, VisibilityKind::kCausal));
  EXPECT_EQ(s.query_positions, (std::vector<int>{0, 1, 2, 3, 4}));  // offset 2: keys at 2, 3, 4
  EXPECT_EQ(s.key_positions, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(s.query_valid, std::vector<uint8_t>(5, 1));
  EXPECT_EQ(s.empty_row, (std::vector<uint8_t>{1, 1, 0, 0, 0}));
  // The leading queries' data is their own (not a key's, not another query's).
  EXPECT_NE(s.q.at(0, 0, 0, 0), s.q.at(0, 0, 1, 0));
  EXPECT_NE(s.q.at(0, 0, 0, 0), s.q.at(0, 0, 2, 0));
}

LawNeeds LeadingNeeds() { return FindLaw("masked-rows")->needs; }

// Decode draws them for a law that takes them and an adapter that accepts them,
// by one, two, Tk and a few; never otherwise.
TEST(LeadingQueries, DrawnWhereLawAndAdapterAllow) {
  const Capabilities tiled = MakeAdapter("tiled-f32")->capabilities();
  ASSERT_TRUE(tiled.queries_beyond_keys);
  int leading = 0, by_one = 0, by_many = 0, flags = 0, descriptors = 0;
  const int total = 4000;
  for (int i = 0; i < total; ++i) {
    RandomSource source(41, static_cast<uint64_t>(i));
    const Case c = Decode(source, tiled, LeadingNeeds());
    ASSERT_FALSE(Validate(c)) << *Validate(c) << "\n" << ToLine(c);
    const int extra = c.query_len - c.key_len();
    if (extra <= 0) continue;
    ++leading;
    by_one += extra == 1;
    by_many += extra >= c.key_len() && c.key_len() > 1;
    flags += IsCausalFlag(c.mask);
    descriptors += c.mask == MaskConvention::kDescriptor;
    const reference::Scenario s = reference::MakeScenario(c);
    if (c.visibility != VisibilityKind::kBidirectional) {
      // A leading query at slot q − E sees nothing, except that a two-sided window
      // reaches R keys ahead: key 0 when E − q ≤ R (the document starts at slot 0;
      // a row with no real token has none).
      for (int b = 0; b < s.batch; ++b)
        for (int q = 0; q < extra; ++q)
          EXPECT_EQ(s.empty_row[static_cast<size_t>(b) * s.tq + q],
                    extra - q > c.window_right || c.rows[static_cast<size_t>(b)].real_tokens() == 0)
              << ToLine(c);
    }
  }
  std::printf("Tq > Tk in %d of %d cases (by one %d, by >= Tk %d; causal flag %d, descriptor %d)\n", leading, total,
              by_one, by_many, flags, descriptors);
  EXPECT_GT(leading, total / 20);
  EXPECT_GT(by_one, 0);
  EXPECT_GT(by_many, 0);
  EXPECT_GT(flags, 0);
  EXPECT_GT(descriptors, 0);
  for (const char* law : {"left-padding", "packed-isolation", "decode-consistency", "rope-relative"}) {
    for (int i = 0; i < 500; ++i) {
      RandomSource source(41, static_cast<uint64_t>(i));
      const Case c = Decode(source, tiled, FindLaw(law)->needs);
      ASSERT_LE(c.query_len, c.key_len()) << law << ": " << ToLine(c);
    }
  }
  Capabilities refuses = tiled;
  refuses.queries_beyond_keys = false;
  for (int i = 0; i < 500; ++i) {
    RandomSource source(41, static_cast<uint64_t>(i));
    const Case c = Decode(source, refuses, LeadingNeeds());
    ASSERT_LE(c.query_len, c.key_len()) << ToLine(c);
  }
}

// FlashAttention's descriptor (bottom-right, seqused / cu_seqlens) means exactly the
// reference's visibility on drawn Tq > Tk cases, padded and varlen.
TEST(LeadingQueries, DescriptorMeansTheReference) {
  const Capabilities reference = MakeAdapter("reference")->capabilities();
  int described = 0;
  for (bool varlen : {false, true}) {
    const DescriptorForms forms = reference::FlashAttentionForms(varlen);
    for (int i = 0; i < 3000; ++i) {
      RandomSource source(43, static_cast<uint64_t>(i));
      const Case c = Decode(source, reference, LeadingNeeds());
      if (c.query_len <= c.key_len()) continue;
      std::string why;
      const std::optional<VisibilityDescriptor> d = reference::Describe(c, forms, &why);
      if (!d) continue;
      ++described;
      ASSERT_EQ(reference::DescriptorVisibilityOnCase(*d, c), reference::Visibility(c))
          << (varlen ? "varlen" : "padded") << ": " << ToLine(c) << "\n" << reference::DescriptorText(*d);
    }
  }
  EXPECT_GT(described, 100);
}

// A kernel that applies causality top-left (j ≤ i) where it declared bottom-right:
// the same on square cases, wrong once Tq ≠ Tk.
class TopLeftKernel final : public Adapter {
 public:
  TopLeftKernel() : inner_(MakeAdapter("tiled-f32")) {}
  std::string name() const override { return "test:top-left-as-bottom-right"; }
  std::string description() const override { return "declares bottom-right causal, applies top-left"; }
  Capabilities capabilities() const override {
    Capabilities caps = inner_->capabilities();
    caps.masks = {MaskConvention::kCausalBottomRight};
    caps.encodings = {EncodingKind::kNone};
    return caps;
  }
  void attention(const AttentionArgs& args) override {
    AttentionArgs wrong = args;
    wrong.mask.convention = MaskConvention::kCausalTopLeft;
    inner_->attention(wrong);
  }

 private:
  std::unique_ptr<Adapter> inner_;
};

struct Tally {
  int passed = 0, failed = 0, leading = 0, other = 0;
};

Tally RunOver(Adapter& adapter, const Law& law, int cases) {
  Tally t;
  const Capabilities caps = adapter.capabilities();
  for (int i = 0; i < cases; ++i) {
    RandomSource source(47, static_cast<uint64_t>(i));
    const Case c = Decode(source, caps, law.needs);
    const Verdict v = RunLaw(law, adapter, c, Options{});
    EXPECT_FALSE(IsAdapterError(v.outcome)) << law.name << ": " << v.message << "\n" << ToLine(c);
    t.passed += v.outcome == Outcome::kPass;
    t.failed += v.outcome == Outcome::kFail;
    if (v.outcome == Outcome::kPass && c.query_len > c.key_len()) ++t.leading;
    if (v.outcome == Outcome::kFail && c.query_len == c.key_len()) ++t.other;
  }
  return t;
}

// Correct kernels pass Tq > Tk cases under the laws that draw them (the masked-row
// policy checked on the leading rows); the top-left kernel (a causal flag only) fails,
// and only on cases whose Tq differs from Tk.
TEST(LeadingQueries, LawsPassCorrectKernelsAndCatchTopLeft) {
  for (const char* name : {"reference", "eigen", "tiled-f32", "tiled-f16"}) {
    const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
    for (const char* law : {"masked-rows", "reference-agreement", "non-interference"}) {
      const Tally t = RunOver(*adapter, *FindLaw(law), 300);
      EXPECT_EQ(t.failed, 0) << name << " × " << law;
      EXPECT_GT(t.leading, 10) << name << " × " << law << ": too few Tq > Tk cases checked";
    }
  }
  TopLeftKernel top_left;
  for (const char* law : {"non-interference", "reference-agreement"}) {
    const Tally t = RunOver(top_left, *FindLaw(law), 300);
    EXPECT_GT(t.failed, 5) << law;
    EXPECT_EQ(t.other, 0) << law << ": square cases must pass";
  }
}

// A replayed Tq > Tk case is a skip, with the reason, for a law whose scenarios
// need Tq ≤ Tk, and for an adapter that does not accept it.
TEST(LeadingQueries, SkippedWithReasonWhereNotTaken) {
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  const Case c = Leading(5, 3, VisibilityKind::kCausal);
  const Verdict v = RunLaw(*FindLaw("left-padding"), *eigen, c, Options{});
  EXPECT_EQ(v.outcome, Outcome::kSkip);
  EXPECT_NE(v.message.find("Tq 5 > Tk 3"), std::string::npos) << v.message;
  EXPECT_EQ(RunLaw(*FindLaw("reference-agreement"), *eigen, c, Options{}).outcome, Outcome::kPass);
  const std::unique_ptr<Adapter> mutant = MakeAdapter("mutant:causal-off-by-one");
  const Verdict refused = RunLaw(*FindLaw("reference-agreement"), *mutant, c, Options{});
  EXPECT_EQ(refused.outcome, Outcome::kSkip);
  EXPECT_NE(refused.message.find("queries_beyond_keys"), std::string::npos) << refused.message;
}

}  // namespace
}  // namespace attncheck
