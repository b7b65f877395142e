// decode-consistency's history check (properties/decode_consistency.cc): A, a
// longer call, A again; two back-to-back repeats measure the kernel's noise only
// when the answers differ. A stateful mutant fails, a noisy stateless kernel passes.
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "adapters/registry.h"
#include "properties/laws.h"
#include "tests/small_case.h"

namespace attncheck {
namespace {

// The reference adapter without a session (the law ends after its history checks),
// counting its calls; with `noisy`, call n moves every output one ulp up, down or
// not at all (n mod 3): run-to-run noise that no call leaves behind.
class CountingAdapter final : public Adapter {
 public:
  explicit CountingAdapter(bool noisy) : inner_(MakeAdapter("reference")), noisy_(noisy) {}
  std::string name() const override { return "counting"; }
  std::string description() const override { return "the reference, counted"; }
  Capabilities capabilities() const override {
    Capabilities caps = inner_->capabilities();
    caps.has_session = false;
    return caps;
  }
  void attention(const AttentionArgs& args) override {
    inner_->attention(args);
    const int step = calls_++ % 3;
    if (!noisy_ || step == 0) return;
    const float toward = step == 1 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    for (float& x : args.out) x = std::nextafter(x, toward);
  }
  int calls() const { return calls_; }

 private:
  std::unique_ptr<Adapter> inner_;
  bool noisy_;
  int calls_ = 0;
};

Case Small() { return test::OneDocumentCase(6, 8, 5); }

// Dynamic NTK within the original context: only the longer call scales the base.
Case DynamicNtk() {
  Case c = Small();
  c.head_dim = 16;
  c.value_dim = 16;
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.scaling = RopeScaling::kDynamicNtk;
  c.encoding.rope.factor = 2.0;
  c.encoding.rope.original_context = 8;
  return c;
}

TEST(DecodeHistory, EqualAnswersNeedNoRepeat) {
  CountingAdapter adapter(/*noisy=*/false);
  const Verdict v = check_decode_consistency(adapter, Small(), Options{});
  ASSERT_TRUE(v.skipped()) << v.message;
  EXPECT_NE(v.message.find("history check passed"), std::string::npos) << v.message;
  EXPECT_EQ(adapter.calls(), 3);  // A, the longer call, A again
}

TEST(DecodeHistory, NoisyStatelessKernelPasses) {
  CountingAdapter adapter(/*noisy=*/true);
  const Verdict v = check_decode_consistency(adapter, Small(), Options{});
  ASSERT_TRUE(v.skipped()) << v.message;
  EXPECT_NE(v.message.find("history check passed"), std::string::npos) << v.message;
  EXPECT_EQ(adapter.calls(), 5);  // A differed from A again: two repeats measured the noise
}

TEST(DecodeHistory, StatefulMutantFails) {
  const std::unique_ptr<Adapter> sticky = MakeAdapter("mutant:dynamic-ntk-sticky");
  const Verdict v = check_decode_consistency(*sticky, DynamicNtk(), Options{});
  ASSERT_TRUE(v.failed()) << v.message;
  EXPECT_NE(v.message.find("answered differently after a longer call"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("two back-to-back runs differ by 0"), std::string::npos) << v.message;
  // The same case on a fresh correct adapter passes its history check.
  const std::unique_ptr<Adapter> reference = MakeAdapter("reference");
  EXPECT_TRUE(check_decode_consistency(*reference, DynamicNtk(), Options{}).passed());
}

}  // namespace
}  // namespace attncheck
