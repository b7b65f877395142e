// Cached decode over a cache the caller owns (issue "Coverage a kernel can trust",
// point 1; adapters/harness.h RunCallerCacheDecode): a varlen or paged kernel is
// decoded one attention() call per step, the step's queries over every key so far
// in the case's own layout and page size; decode-consistency takes that way or the
// session's padded cache, both over a stream; a decode-only slip in a paged kernel
// fails it.
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>

#include "adapters/harness.h"
#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/decode.h"
#include "cases/law_needs.h"
#include "cases/random_source.h"
#include "properties/laws.h"
#include "reference/descriptor.h"

namespace attncheck {
namespace {

// A kernel with what each call was handed noted: the descriptor's shape of every
// attention call (sequence count, keys in all, page size) and the sessions opened.
class Recorder final : public Adapter {
 public:
  explicit Recorder(const std::string& inner) : inner_(MakeAdapter(inner)) {}
  std::string name() const override { return inner_->name() + "-recorded"; }
  std::string description() const override { return "records each call's layout (test)"; }
  Capabilities capabilities() const override { return inner_->capabilities(); }
  std::optional<std::string> unsupported(const Case& c) const override { return inner_->unsupported(c); }
  void attention(const AttentionArgs& args) override {
    const VisibilityDescriptor* d = args.mask.descriptor;
    calls.push_back({d != nullptr && d->varlen() ? d->cu_seqlens_k.back() : args.tk,
                     d != nullptr && d->varlen() ? d->cu_seqlens_q.back() : args.tq,
                     d != nullptr ? d->paged.page_size : 0});
    inner_->attention(args);
  }
  std::unique_ptr<Session> open_session(const SessionArgs& args) override {
    ++sessions;
    return inner_->open_session(args);
  }

  struct Call {
    int keys, queries, page_size;
  };
  std::vector<Call> calls;
  int sessions = 0;

 private:
  std::unique_ptr<Adapter> inner_;
};

// A kernel declaring what Pallas mha takes: the descriptor in the varlen form, causal
// top-left only, no session. It answers zeros: only what it is handed matters here.
class TopLeftVarlen final : public Adapter {
 public:
  std::string name() const override { return "top-left-varlen"; }
  std::string description() const override { return "Pallas mha's descriptor forms, answering zeros (test)"; }
  Capabilities capabilities() const override {
    Capabilities caps = MakeAdapter("reference")->capabilities();
    caps.masks = {MaskConvention::kDescriptor};
    caps.descriptor_forms = DescriptorForms{};
    caps.descriptor_forms.causal_top_left = true;
    caps.descriptor_forms.varlen = true;
    caps.has_session = false;
    return caps;
  }
  void attention(const AttentionArgs& args) override {
    ++calls;
    std::fill(args.out.begin(), args.out.end(), 0.0f);
  }
  int calls = 0;
};

// Two one-token documents, a query on each slot: the whole case is one varlen call
// (top-left is bottom-right when Tq = Tk), but the second step's query over two cached
// keys needs the bottom-right diagonal. That step is refused (decode-consistency skips
// with the reason); the mask builder threw instead, an error on 25 of
// jax-pallas-mha-f32's 1000 decode-consistency cases.
TEST(CallerCacheDecode, AStepTheKernelCannotTakeIsRefused) {
  TopLeftVarlen adapter;
  const Case c = ParseCaseText(R"({"chunk": 0, "decode_chunks": [], "dtype": "f32", "head_dim": 2, "kv_heads": 1,
    "mask": "descriptor", "profile": "normal", "q_heads": 1, "query_len": 2, "rows": [{"documents": [1, 1],
    "left_pad": 0, "position_offset": 0, "prefix_len": 0, "right_pad": 0}], "scale": 0.0, "seed": 0,
    "softcap": 0.0, "value_dim": 2, "visibility": "causal", "window": 0})",
                               "two-documents");
  const reference::Scenario s = reference::MakeScenario(c);
  const std::optional<std::string> whole = WhyUnsupported(adapter, s, MaskConvention::kDescriptor);
  ASSERT_FALSE(whole) << "the whole case is one call: " << whole.value_or("");
  const AdapterRun run = RunCallerCacheDecode(adapter, s, std::vector<int>{1, 1});
  EXPECT_EQ(run.kind, AdapterFault::kRefused) << run.fault;
  EXPECT_NE(run.fault.find("decode step of 1 queries over 2 cached keys"), std::string::npos) << run.fault;
  EXPECT_NE(run.fault.find("bottom-right"), std::string::npos) << run.fault;
  EXPECT_EQ(adapter.calls, 1);  // the first step, one query over one key, was taken
}

// One call per step with queries, each over the keys so far in the case's pages; the
// rows assembled from the steps are the one prefill's.
TEST(CallerCacheDecode, OneCallPerStepOverTheKeysSoFar) {
  Recorder recorder("tiled-paged-bf16");
  const Capabilities caps = recorder.capabilities();
  int checked = 0;
  for (uint64_t n = 0; n < 120; ++n) {
    RandomSource source(41, n);
    Case c = Decode(source, caps);
    if (c.key_len() < 4) continue;
    c.query_len = c.key_len();  // every slot a query: every step has some
    const reference::Scenario s = reference::MakeScenario(c);
    if (WhyUnsupported(recorder, s, MaskConvention::kDescriptor)) continue;
    const int tk = s.tk;
    const std::vector<int> steps = {tk / 2, 1, 2, tk - tk / 2 - 3};
    if (steps.back() < 0 || WhySessionCannotExpress(s, steps)) continue;
    recorder.calls.clear();
    const AdapterRun prefill = RunAttention(recorder, s);
    ASSERT_TRUE(prefill.ok()) << prefill.fault << "\n" << ToLine(c);
    const size_t prefill_calls = recorder.calls.size();
    recorder.calls.clear();
    const AdapterRun decoded = RunCallerCacheDecode(recorder, s, steps);
    ASSERT_TRUE(decoded.ok()) << decoded.fault << "\n" << ToLine(c);
    // a call per step that has keys (every slot a query), as many as the prefill's head groups
    const size_t nonempty = static_cast<size_t>(std::count_if(steps.begin(), steps.end(), [](int k) { return k > 0; }));
    ASSERT_EQ(recorder.calls.size(), nonempty * prefill_calls) << ToLine(c);
    int keys = 0;
    size_t call = 0;
    for (const int step : steps) {
      if (step == 0) continue;
      keys += step;
      const reference::Scenario cut =
          reference::MakeLayout(reference::StepCase(c, keys, step, reference::StepCache::kCaller));
      const int real_keys = std::accumulate(cut.key_valid.begin(), cut.key_valid.end(), 0);
      for (size_t g = 0; g < prefill_calls; ++g, ++call) {
        EXPECT_EQ(recorder.calls[call].keys, real_keys) << ToLine(c) << " step over " << keys;
        EXPECT_EQ(recorder.calls[call].page_size, c.page_size != 0 ? c.page_size : caps.descriptor_forms.page_size);
      }
    }
    // bf16 storage, f32 accumulation: the same tokens in other tiles, a few ulps of bf16 apart
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < c.q_heads; ++h)
        for (int i = 0; i < s.tq; ++i) {
          if (!s.query_valid[static_cast<size_t>(b) * s.tq + i] || s.empty_row[static_cast<size_t>(b) * s.tq + i]) continue;
          for (int e = 0; e < c.value_dim; ++e)
            ASSERT_NEAR(decoded.out.at(b, h, i, e), prefill.out.at(b, h, i, e),
                        0.05 * (1.0 + std::abs(prefill.out.at(b, h, i, e))))
                << ToLine(c) << " b " << b << " h " << h << " i " << i;
        }
    ++checked;
  }
  std::printf("%d cases decoded over caller pages\n", checked);
  EXPECT_GE(checked, 40);
}

// decode-consistency on a paged kernel with sessions goes both ways over its stream:
// sessions opened in some cases, one-call decode steps over pages in others.
TEST(CallerCacheDecode, DecodeConsistencyTakesBothCaches) {
  const Law* law = FindLaw("decode-consistency");
  ASSERT_NE(law, nullptr);
  Recorder recorder("tiled-paged-bf16");
  const std::optional<Capabilities> caps = NarrowToNeeds(recorder.capabilities(), law->needs, nullptr);
  ASSERT_TRUE(caps);
  int through_session = 0, over_pages = 0, passed = 0;
  constexpr int kCases = 120;
  for (int i = 0; i < kCases; ++i) {
    RandomSource source(LawStreamSeed(3, law->name), static_cast<uint64_t>(i));
    const Case c = Decode(source, *caps, law->needs);
    recorder.sessions = 0;
    recorder.calls.clear();
    const Verdict v = RunLaw(*law, recorder, c, Options{});
    ASSERT_FALSE(v.failed()) << v.message << "\n" << ToLine(c);
    passed += v.passed() ? 1 : 0;
    // the law's own calls take every query at once; a decode step takes a few of them
    const bool stepped = std::any_of(recorder.calls.begin(), recorder.calls.end(), [&](const Recorder::Call& call) {
      return call.page_size > 0 && call.queries < recorder.calls.front().queries;
    });
    through_session += recorder.sessions > 0 ? 1 : 0;
    over_pages += stepped && recorder.sessions == 0 ? 1 : 0;
  }
  std::printf("%d of %d cases passed; %d through a session, %d over caller pages\n", passed, kCases, through_session, over_pages);
  EXPECT_GE(passed, kCases * 9 / 10);
  EXPECT_GE(through_session, kCases / 6);  // only cases with one document a row can be handed to a session
  EXPECT_GE(over_pages, kCases / 4);
}

}  // namespace
}  // namespace attncheck
