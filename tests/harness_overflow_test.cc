// The harness never hands a kernel inputs it broke itself (FINDINGS F15): q or k
// that the harness encodes (xPos for an adapter that does not own it) and that
// overflow the case dtype end the run as a refusal — a skip with the reason — and
// the kernel is not called; inputs that fit are handed over as before. A refusal
// ends with its case: the next case, of this adapter or another, is checked. Scores
// that overflow the dtype a kernel declares for them are refused the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "adapters/harness.h"
#include "adapters/registry.h"
#include "properties/laws.h"
#include "reference/scenario.h"
#include "tests/small_case.h"

namespace attncheck {
namespace {

// An f16 kernel taking xPos-encoded q and k from the harness; it counts its calls
// and writes zeros. f16_scores: it declares its scores stored in f16.
class CountingKernel final : public Adapter {
 public:
  explicit CountingKernel(bool f16_scores = false) : f16_scores_(f16_scores) {}
  std::string name() const override { return "test:counting-f16"; }
  std::string description() const override { return "counts its calls"; }
  Capabilities capabilities() const override {
    Capabilities caps;
    caps.dtypes = {Dtype::kF16};
    caps.encodings = {EncodingKind::kNone, EncodingKind::kXpos};
    caps.accuracy.scores_in_input_dtype = f16_scores_;
    return caps;
  }
  void attention(const AttentionArgs& args) override {
    ++calls;
    largest_k = 0.0f;
    for (float x : args.k) largest_k = std::max(largest_k, std::fabs(x));
    std::fill(args.out.begin(), args.out.end(), 0.0f);
  }
  int calls = 0;
  float largest_k = 0.0f;

 private:
  bool f16_scores_;
};

Case XposF16(int offset) {
  Case c;
  c.dtype = Dtype::kF16;
  c.head_dim = c.value_dim = 8;
  c.query_len = 4;
  c.rows = {RowSpec{0, 0, {4}, 0, offset}};
  c.encoding.kind = EncodingKind::kXpos;
  c.encoding.xpos_scale_base = 64.0;
  c.seed = 5;
  return c;
}

TEST(HarnessOverflow, EncodedInputsThatOverflowTheDtypeAreRefused) {
  CountingKernel kernel;
  const AdapterRun near = RunAttention(kernel, reference::MakeScenario(XposF16(0)));
  EXPECT_TRUE(near.ok()) << near.fault;
  EXPECT_EQ(kernel.calls, 1);
  EXPECT_TRUE(std::isfinite(kernel.largest_k));

  const AdapterRun far = RunAttention(kernel, reference::MakeScenario(XposF16(2048)));
  EXPECT_EQ(kernel.calls, 1) << "the kernel must not see overflowed inputs";
  EXPECT_EQ(far.kind, AdapterFault::kRefused);
  EXPECT_NE(far.fault.find("overflows f16"), std::string::npos) << far.fault;

  // Every law reports it as a skip with that reason, never a failure.
  const Verdict v = RunLaw(*FindLaw("reference-agreement"), kernel, XposF16(2048), Options{});
  EXPECT_EQ(v.outcome, Outcome::kSkip) << v.message;
  EXPECT_NE(v.message.find("refused by the harness"), std::string::npos) << v.message;
}

// Nothing the harness computed for a refused case reaches the next one (DESIGN
// §5): not a case of the same adapter with nothing to refuse, not another adapter's.
TEST(HarnessOverflow, ARefusalEndsWithItsCase) {
  CountingKernel kernel;
  const Law& law = *FindLaw("reference-agreement");
  const Verdict refused = RunLaw(law, kernel, XposF16(2048), Options{});
  ASSERT_EQ(refused.outcome, Outcome::kSkip) << refused.message;
  ASSERT_NE(refused.message.find("refused by the harness"), std::string::npos) << refused.message;

  Case plain = test::OneDocumentCase(4, 8, 6);
  plain.dtype = Dtype::kF16;
  const int calls = kernel.calls;
  const AdapterRun run = RunAttention(kernel, reference::MakeScenario(plain));
  EXPECT_TRUE(run.ok()) << run.fault;
  EXPECT_EQ(kernel.calls, calls + 1) << "a case with nothing to refuse must reach the kernel";

  RunLaw(law, kernel, XposF16(2048), Options{});
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  for (const char* name : {"reference-agreement", "non-interference"}) {
    const Verdict next = RunLaw(*FindLaw(name), *eigen, test::OneDocumentCase(5, 8, 7), Options{});
    EXPECT_EQ(next.outcome, Outcome::kPass) << name << ": " << next.message;
  }
}

// Four causal tokens, 8 dims, scale 1: q and k 0.01 everywhere but q of query `hot_query`
// and k of the last key, `big` in every dim: that score is 8·big², visible only to the
// last query.
reference::Scenario HotScore(int hot_query, double big) {
  Case c = test::OneDocumentCase(4, 8, 3);
  c.dtype = Dtype::kF16;
  c.scale = 1.0;
  reference::Scenario s = reference::MakeScenario(c);
  std::fill(s.q.data.begin(), s.q.data.end(), 0.01);
  std::fill(s.k.data.begin(), s.k.data.end(), 0.01);
  for (int d = 0; d < 8; ++d) {
    s.q.at(0, 0, hot_query, d) = big;
    s.k.at(0, 0, 3, d) = big;
  }
  return s;
}

// The same for the scores (FINDINGS, ONNX Runtime 1.31: f16 Attention answers NaN for a
// score of 80000): a kernel that declares its scores in f16 is not handed a case whose
// visible scores overflow f16; one that declares f32 scores is, and a huge score at a key
// no query may read refuses nothing.
TEST(HarnessOverflow, ScoresThatOverflowTheDeclaredScoreDtypeAreRefused) {
  CountingKernel f16_scores(true);
  const AdapterRun fits = RunAttention(f16_scores, HotScore(3, 60.0));  // 28,800
  EXPECT_TRUE(fits.ok()) << fits.fault;
  EXPECT_EQ(f16_scores.calls, 1);

  const AdapterRun over = RunAttention(f16_scores, HotScore(3, 100.0));  // 80,000
  EXPECT_EQ(f16_scores.calls, 1) << "the kernel must not be handed a case it declares it cannot compute";
  EXPECT_EQ(over.kind, AdapterFault::kRefused);
  EXPECT_NE(over.fault.find("S[b=0, h=0, i=3, j=3] = 80000"), std::string::npos) << over.fault;
  EXPECT_NE(over.fault.find("overflows f16"), std::string::npos) << over.fault;

  // query 0 cannot read key 3: its 80,000 is never computed into an output
  const AdapterRun hidden = RunAttention(f16_scores, HotScore(0, 100.0));
  EXPECT_TRUE(hidden.ok()) << hidden.fault;
  EXPECT_EQ(f16_scores.calls, 2);

  CountingKernel f32_scores(false);
  const AdapterRun wide = RunAttention(f32_scores, HotScore(3, 100.0));
  EXPECT_TRUE(wide.ok()) << wide.fault;
  EXPECT_EQ(f32_scores.calls, 1) << "f32 scores hold 80,000: the case is the kernel's to compute";
}

}  // namespace
}  // namespace attncheck
