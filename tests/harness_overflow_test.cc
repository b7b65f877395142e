// The harness never hands a kernel inputs it broke itself (FINDINGS F15): q or k
// that the harness encodes (xPos for an adapter that does not own it) and that
// overflow the case dtype end the run as a refusal — a skip with the reason — and
// the kernel is not called; inputs that fit are handed over as before. A refusal
// ends with its case: the next case, of this adapter or another, is checked.
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
// and writes zeros.
class CountingKernel final : public Adapter {
 public:
  std::string name() const override { return "test:counting-f16"; }
  std::string description() const override { return "counts its calls"; }
  Capabilities capabilities() const override {
    Capabilities caps;
    caps.dtypes = {Dtype::kF16};
    caps.encodings = {EncodingKind::kNone, EncodingKind::kXpos};
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

}  // namespace
}  // namespace attncheck
