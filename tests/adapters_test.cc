// Tests of the built-in adapters and the harness around them: every adapter agrees
// with the double oracle on hand-built cases (every mask convention it accepts),
// its cached-decode session agrees with its one-shot attention, the guard margins
// catch deliberately bad adapters, and the registry names and expands adapters.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "adapters/guarded_call.h"
#include "adapters/harness.h"
#include "adapters/kv_cache.h"
#include "adapters/registry.h"
#include "cases/error.h"
#include "reference/attention.h"
#include "reference/positional.h"
#include "reference/scenario.h"

namespace attncheck {
namespace {

// ---------------------------------------------------------------------------
// Cases

struct NamedCase {
  std::string name;
  Case c;
};

Case Causal(int tk, int tq) {
  Case c;
  c.rows = {RowSpec{.documents = {tk}}};
  c.query_len = tq;
  c.head_dim = 8;
  c.value_dim = 8;
  c.seed = 7;
  return c;
}

Case WithRope(Case c, RopeLayout layout, int head_dim = 16, int rotary_dim = 0) {
  c.head_dim = head_dim;
  c.value_dim = head_dim;
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.layout = layout;
  c.encoding.rope.rotary_dim = rotary_dim;
  return c;
}

std::vector<NamedCase> HandBuiltCases() {
  std::vector<NamedCase> cases;
  auto add = [&](std::string name, Case c) { cases.push_back({std::move(name), std::move(c)}); };

  add("causal", Causal(8, 8));
  add("single_token", Causal(1, 1));
  {
    Case c = Causal(6, 6);
    c.visibility = VisibilityKind::kBidirectional;
    add("bidirectional", c);
  }
  {
    Case c = Causal(8, 8);
    c.rows = {RowSpec{.left_pad = 3, .documents = {5}}, RowSpec{.documents = {8}}};
    add("left_padding", c);
  }
  {
    Case c = Causal(8, 8);
    c.rows = {RowSpec{.right_pad = 2, .documents = {6}}};
    add("right_padding", c);
  }
  {
    Case c = Causal(9, 9);
    c.rows = {RowSpec{.documents = {3, 4, 2}}};
    add("packed", c);
  }
  {
    Case c = Causal(7, 7);
    c.rows = {RowSpec{.documents = {3, 0, 4}}};
    c.visibility = VisibilityKind::kBidirectional;
    add("packed_bidirectional_zero_doc", c);
  }
  {
    Case c = Causal(7, 7);
    c.rows = {RowSpec{.documents = {7}, .prefix_len = 3}};
    c.visibility = VisibilityKind::kPrefixLm;
    add("prefix_lm", c);
  }
  {
    Case c = Causal(10, 10);
    c.visibility = VisibilityKind::kSlidingWindow;
    c.window = 3;
    add("sliding_window", c);
  }
  {
    Case c = Causal(9, 9);
    c.visibility = VisibilityKind::kChunked;
    c.chunk = 4;
    add("chunked", c);
  }
  add("decode_tq_lt_tk", Causal(9, 3));
  add("decode_single_query", Causal(12, 1));
  {
    Case c = Causal(8, 8);
    c.q_heads = 4;
    c.kv_heads = 2;
    add("gqa_4_2", c);
  }
  {
    Case c = Causal(7, 4);
    c.q_heads = 3;
    c.kv_heads = 1;
    add("mqa_3_1_decode", c);
  }
  add("rope_half_split", WithRope(Causal(8, 8), RopeLayout::kHalfSplit));
  add("rope_interleaved", WithRope(Causal(8, 8), RopeLayout::kInterleaved));
  add("rope_partial", WithRope(Causal(8, 8), RopeLayout::kHalfSplit, 16, 8));
  add("rope_partial_interleaved_decode", WithRope(Causal(9, 4), RopeLayout::kInterleaved, 12, 4));
  {
    Case c = WithRope(Causal(8, 8), RopeLayout::kHalfSplit);
    c.rows = {RowSpec{.left_pad = 2, .documents = {6}, .position_offset = 3000}};
    add("rope_large_positions_padded", c);
  }
  {
    Case c = WithRope(Causal(10, 10), RopeLayout::kHalfSplit);
    c.rows = {RowSpec{.documents = {4, 6}}};
    add("rope_packed", c);
  }
  {
    Case c = WithRope(Causal(8, 8), RopeLayout::kHalfSplit);
    c.encoding.rope.scaling = RopeScaling::kYarn;
    c.encoding.rope.factor = 4.0;
    c.encoding.rope.original_context = 16;
    c.rows = {RowSpec{.documents = {8}, .position_offset = 40}};
    add("rope_yarn", c);
  }
  {
    Case c = WithRope(Causal(8, 8), RopeLayout::kInterleaved);
    c.encoding.rope.scaling = RopeScaling::kLlama3;
    c.encoding.rope.factor = 8.0;
    c.encoding.rope.original_context = 32;
    add("rope_llama3", c);
  }
  {
    Case c = WithRope(Causal(12, 5), RopeLayout::kHalfSplit);
    c.encoding.rope.scaling = RopeScaling::kDynamicNtk;
    c.encoding.rope.factor = 2.0;
    c.encoding.rope.original_context = 6;
    add("rope_dynamic_ntk_decode", c);
  }
  {
    Case c = WithRope(Causal(8, 8), RopeLayout::kHalfSplit);
    c.encoding.rope.log_n = true;
    c.encoding.rope.original_context = 3;
    add("rope_log_n", c);
  }
  {
    Case c = Causal(8, 8);
    c.q_heads = 3;
    c.kv_heads = 3;
    c.encoding.kind = EncodingKind::kAlibi;
    add("alibi_3_heads", c);
  }
  {
    Case c = Causal(9, 4);
    c.q_heads = 4;
    c.kv_heads = 2;
    c.encoding.kind = EncodingKind::kAlibi;
    c.rows = {RowSpec{.left_pad = 2, .documents = {7}}};
    add("alibi_gqa_padded_decode", c);
  }
  {
    Case c = Causal(8, 8);
    c.q_heads = 2;
    c.kv_heads = 2;
    c.encoding.kind = EncodingKind::kT5;
    add("t5", c);
  }
  {
    Case c = Causal(8, 8);
    c.encoding.kind = EncodingKind::kSandwich;
    add("sandwich", c);
  }
  {
    Case c = Causal(8, 8);
    c.rows = {RowSpec{.left_pad = 4, .documents = {4}}, RowSpec{.documents = {8}}};
    add("empty_rows_pad_queries", c);
  }
  {
    Case c = Causal(8, 8);
    c.softcap = 5.0;
    c.profile = ValueProfile::kLargeLogits;
    add("softcap_large_logits", c);
  }
  {
    Case c = Causal(8, 8);
    c.value_dim = 12;
    add("value_dim_differs", c);
  }
  {
    Case c = Causal(8, 8);
    c.profile = ValueProfile::kTies;
    add("ties", c);
  }
  {
    Case c = Causal(8, 8);
    c.profile = ValueProfile::kNearCancellation;
    add("near_cancellation", c);
  }
  {
    Case c = Causal(150, 70);
    c.rows = {RowSpec{.documents = {65, 20, 65}}};
    c.q_heads = 2;
    c.kv_heads = 1;
    add("long_packed_multi_block", c);
  }
  {
    Case c = WithRope(Causal(140, 140), RopeLayout::kHalfSplit);
    c.visibility = VisibilityKind::kSlidingWindow;
    c.window = 64;
    add("long_rope_window", c);
  }
  {
    Case c = Causal(10, 4);
    c.rows = {RowSpec{.left_pad = 3, .documents = {7}}, RowSpec{.documents = {10}},
              RowSpec{.left_pad = 1, .right_pad = 1, .documents = {5, 3}}};
    c.q_heads = 2;
    c.kv_heads = 2;
    add("batch3_mixed_decode", c);
  }
  return cases;
}

// ---------------------------------------------------------------------------
// Tolerance (DESIGN §6): bound = k·|naive − oracle| + floor, floor = 8·eps(dtype)·max|v|
// plus, for rotations computed in float, the score error of angles p·θ in float.

double MachineEpsilon(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32: return std::ldexp(1.0, -23);
    case Dtype::kF16: return std::ldexp(1.0, -10);
    case Dtype::kBf16: return std::ldexp(1.0, -7);
  }
  return 1.0;
}

double MaxAbs(const TensorD& t) {
  double m = 0.0;
  for (double x : t.data) m = std::max(m, std::abs(x));
  return m;
}

double MaxRowNorm(const TensorD& t) {
  double m = 0.0;
  for (int b = 0; b < t.shape[0]; ++b)
    for (int h = 0; h < t.shape[1]; ++h)
      for (int i = 0; i < t.shape[2]; ++i) {
        double sum = 0.0;
        for (int d = 0; d < t.shape[3]; ++d) sum += t.at(b, h, i, d) * t.at(b, h, i, d);
        m = std::max(m, std::sqrt(sum));
      }
  return m;
}

struct Expected {
  TensorD want;   // oracle [B, Hq, Tq, Dv]
  TensorD bound;  // per element
};

Expected ExpectedOutput(const reference::Scenario& s, double k = 2.0) {
  const reference::AttentionResult oracle = reference::Attention<double>(s);
  const reference::AttentionResult naive = reference::NaiveSameDtype(s);
  const double max_v = MaxAbs(s.v);
  double floor = 8.0 * MachineEpsilon(s.c.dtype) * max_v;
  if (s.c.encoding.kind == EncodingKind::kRope || s.c.encoding.kind == EncodingKind::kXpos) {
    TensorD q, key;
    reference::EncodeQk(s, q, key);
    const int max_position = reference::CurrentLength(s.key_positions);
    const double score_error = 4.0 * std::ldexp(1.0, -24) * (max_position + 1.0) * MaxRowNorm(q) *
                               MaxRowNorm(key) * s.c.effective_scale();
    floor += 2.0 * max_v * score_error;
  }
  Expected e{oracle.out, TensorD(oracle.out.shape[0], oracle.out.shape[1], oracle.out.shape[2], oracle.out.shape[3])};
  for (size_t n = 0; n < e.bound.data.size(); ++n) {
    e.bound.data[n] = k * std::abs(naive.out.data[n] - oracle.out.data[n]) + floor;
  }
  return e;
}

bool FiniteFill(MaskConvention m) {
  return m == MaskConvention::kAdditiveLowest || m == MaskConvention::kAdditiveMinus1e4 ||
         m == MaskConvention::kAdditiveMinus1e9;
}

// Real rows with a visible key must agree within the bound; rows with no visible
// key must be zeros (every built-in adapter declares kZeros) unless the convention's
// finite fill makes them indistinguishable from attending to everything.
::testing::AssertionResult Agrees(const TensorD& got, const Expected& e, const reference::Scenario& s,
                                  MaskConvention convention) {
  if (got.shape != e.want.shape) return ::testing::AssertionFailure() << "shape differs";
  for (int b = 0; b < got.shape[0]; ++b)
    for (int h = 0; h < got.shape[1]; ++h)
      for (int i = 0; i < got.shape[2]; ++i) {
        const size_t row = static_cast<size_t>(b) * s.tq + i;
        const bool empty = s.empty_row[row] != 0;
        if (!s.query_valid[row] && !empty) continue;  // pad query seeing something: no promise
        if (empty && FiniteFill(convention)) continue;
        for (int d = 0; d < got.shape[3]; ++d) {
          const double g = got.at(b, h, i, d), w = e.want.at(b, h, i, d);
          const double bound = empty ? 0.0 : e.bound.at(b, h, i, d);
          if (!std::isfinite(g) || std::abs(g - w) > bound) {
            return ::testing::AssertionFailure()
                   << fmt::format("out[b={}, h={}, i={}, d={}] = {:.9g}, want {:.9g}, error {:.3g} > bound {:.3g}{}",
                                  b, h, i, d, g, w, std::abs(g - w), bound, empty ? " (empty row)" : "");
          }
        }
      }
  return ::testing::AssertionSuccess();
}

// The case adapted to an adapter: its dtype when the case's is not accepted.
Case ForAdapter(Case c, const Capabilities& caps) {
  if (std::find(caps.dtypes.begin(), caps.dtypes.end(), c.dtype) == caps.dtypes.end()) c.dtype = caps.dtypes[0];
  c.mask = caps.masks[0];
  return c;
}

// The session plan of the test: prefill 3, then chunks 2, 1, 2, 1, … (the last
// chunk may be shorter) — so queries arrive in partial steps of every size.
Case WithChunks(Case c) {
  const int tk = c.key_len();
  c.decode_chunks.clear();
  int remaining = tk - std::min(3, tk);
  for (int n = 0; remaining > 0; ++n) {
    const int chunk = std::min(remaining, n % 2 == 0 ? 2 : 1);
    c.decode_chunks.push_back(chunk);
    remaining -= chunk;
  }
  return c;
}

// ---------------------------------------------------------------------------
// Agreement of every built-in adapter with the oracle

class AdapterAgreement : public ::testing::TestWithParam<std::string> {};

TEST_P(AdapterAgreement, AttentionMatchesOracleUnderEveryAcceptedConvention) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(GetParam());
  const Capabilities caps = adapter->capabilities();
  int runs = 0;
  for (const NamedCase& named : HandBuiltCases()) {
    const Case c = ForAdapter(named.c, caps);
    ASSERT_EQ(Validate(c), std::nullopt) << named.name;
    const reference::Scenario s = reference::MakeScenario(c);
    const Expected expected = ExpectedOutput(s);
    for (MaskConvention convention : caps.masks) {
      if (WhyUnsupported(*adapter, s, convention)) continue;
      SCOPED_TRACE(fmt::format("{} under {}: {}", named.name, Name(convention), ToLine(c)));
      const AdapterRun run = RunAttention(*adapter, s, convention);
      ASSERT_TRUE(run.ok()) << run.fault;
      EXPECT_TRUE(Agrees(run.out, expected, s, convention));
      ++runs;
    }
  }
  RecordProperty("runs", runs);
  EXPECT_GE(runs, 20) << "too few hand-built cases ran";
}

TEST_P(AdapterAgreement, SessionMatchesAttention) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(GetParam());
  const Capabilities caps = adapter->capabilities();
  ASSERT_TRUE(caps.has_session);
  int runs = 0;
  for (const NamedCase& named : HandBuiltCases()) {
    for (MaskConvention convention : caps.masks) {
      const Case c = WithChunks(ForAdapter(named.c, caps));
      const reference::Scenario s = reference::MakeScenario(c);
      const std::vector<int> steps = SessionSteps(c);
      if (WhyUnsupported(*adapter, s, convention) || WhySessionCannotExpress(s, steps, convention)) continue;
      SCOPED_TRACE(fmt::format("{} under {}: {}", named.name, Name(convention), ToLine(c)));
      const AdapterRun session = RunSession(*adapter, s, steps, convention);
      ASSERT_TRUE(session.ok()) << session.fault;
      const AdapterRun whole = RunAttention(*adapter, s, convention);
      ASSERT_TRUE(whole.ok()) << whole.fault;
      const Expected expected = ExpectedOutput(s);
      EXPECT_TRUE(Agrees(session.out, expected, s, convention));
      // against the adapter's own one-shot output, within the same bound
      const Expected self{whole.out, expected.bound};
      EXPECT_TRUE(Agrees(session.out, self, s, convention));
      ++runs;
    }
  }
  RecordProperty("runs", runs);
  EXPECT_GE(runs, 20);
}

TEST_P(AdapterAgreement, RopeStageMatchesReference) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(GetParam());
  const Capabilities caps = adapter->capabilities();
  ASSERT_TRUE(caps.has_rope_stage);
  for (const NamedCase& named : HandBuiltCases()) {
    if (named.c.encoding.kind != EncodingKind::kRope) continue;
    const Case c = ForAdapter(named.c, caps);
    SCOPED_TRACE(named.name);
    const reference::Scenario s = reference::MakeScenario(c);
    const int current_length = reference::CurrentLength(s.key_positions);
    const AdapterRun run = RunRope(*adapter, c, s.k, s.key_positions, current_length);
    ASSERT_TRUE(run.ok()) << run.fault;
    TensorD want = s.k;
    reference::ApplyPositional(c, reference::Side::kKey, want, s.key_positions, current_length);
    const double bound = 4.0 * MachineEpsilon(c.dtype) * MaxAbs(want) +
                         4.0 * std::ldexp(1.0, -24) * current_length * MaxAbs(s.k) * 2.0;
    for (size_t n = 0; n < want.data.size(); ++n) {
      ASSERT_NEAR(run.out.data[n], want.data[n], bound) << "element " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Builtin, AdapterAgreement,
                         ::testing::Values("reference", "eigen", "tiled-f32", "tiled-f16", "tiled-bf16"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// ---------------------------------------------------------------------------
// Capability checks

TEST(WhyUnsupported, NamesTheMissingCapability) {
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  const std::unique_ptr<Adapter> tiled = MakeAdapter("tiled-f32");
  Case c = Causal(8, 8);
  c.dtype = Dtype::kBf16;
  EXPECT_EQ(WhyUnsupported(*eigen, c), "dtype bf16 not supported");
  c.dtype = Dtype::kF32;
  c.mask = MaskConvention::kAdditiveNegInf;
  EXPECT_EQ(WhyUnsupported(*tiled, c), "mask convention add-inf not accepted");
  c.mask = MaskConvention::kBoolBlocked;
  c.encoding.kind = EncodingKind::kXpos;
  EXPECT_EQ(WhyUnsupported(*tiled, c), "encoding xpos not supported");
  c.encoding.kind = EncodingKind::kNone;
  c.decode_chunks = {2, 1};
  EXPECT_EQ(WhyUnsupported(*tiled, c), std::nullopt) << "decode chunks are the laws' business";
}

TEST(WhyUnsupported, CausalFlagCannotExpressPadding) {
  const std::unique_ptr<Adapter> tiled = MakeAdapter("tiled-f32");
  Case c = Causal(8, 8);
  c.rows = {RowSpec{.left_pad = 2, .documents = {6}}};
  const reference::Scenario s = reference::MakeScenario(c);
  EXPECT_EQ(WhyUnsupported(*tiled, s, MaskConvention::kCausalBottomRight),
            "causal-flag convention cannot express padding/documents/non-causal visibility");
  EXPECT_EQ(WhyUnsupported(*tiled, s, MaskConvention::kBoolVisible), std::nullopt);
  const reference::Scenario plain = reference::MakeScenario(Causal(8, 3));
  EXPECT_EQ(WhyUnsupported(*tiled, plain, MaskConvention::kCausalBottomRight), std::nullopt);
  EXPECT_NE(WhyUnsupported(*tiled, plain, MaskConvention::kCausalTopLeft), std::nullopt);
}

TEST(WhyUnsupported, UnownedBiasNeedsAdditiveMask) {
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  Case c = Causal(8, 8);
  c.encoding.kind = EncodingKind::kAlibi;
  const reference::Scenario s = reference::MakeScenario(c);
  EXPECT_EQ(WhyUnsupported(*eigen, s, MaskConvention::kAdditiveNegInf), std::nullopt);
  const std::optional<std::string> why = WhyUnsupported(*eigen, s, MaskConvention::kBoolVisible);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("additive"), std::string::npos) << *why;
}

// A finite fill blocks a key only while the key scores less than |fill| (less a
// margin) above its row's best visible key; where it does not, the harness must not
// hand the case over in that convention (the oracle treats blocked as blocked).
// Extreme logits share one large offset (f32 scores near −5e4, O(1) apart): −1e4
// still blocks. RoPE turns that offset (it sits in the last dim, whose pair turns
// slowest: base 2 makes it fast) by the relative position, the scores of a row spread
// by more than 1e4, and −1e4 no longer blocks, while −1e9 and −inf still do.
TEST(WhyUnsupported, FiniteFillMustBlockTheScores) {
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  Case c = Causal(8, 8);
  c.profile = ValueProfile::kExtremeLogits;
  EXPECT_EQ(WhyUnsupported(*eigen, reference::MakeScenario(c), MaskConvention::kAdditiveMinus1e4), std::nullopt);
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.base = 2.0;
  const reference::Scenario s = reference::MakeScenario(c);
  const std::optional<std::string> why = WhyUnsupported(*eigen, s, MaskConvention::kAdditiveMinus1e4);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("cannot block"), std::string::npos) << *why;
  EXPECT_EQ(WhyUnsupported(*eigen, s, MaskConvention::kAdditiveMinus1e9), std::nullopt);
  EXPECT_EQ(WhyUnsupported(*eigen, s, MaskConvention::kAdditiveNegInf), std::nullopt);
  c.profile = ValueProfile::kNormal;  // O(1) scores: −1e4 blocks
  EXPECT_EQ(WhyUnsupported(*eigen, reference::MakeScenario(c), MaskConvention::kAdditiveMinus1e4), std::nullopt);
}

TEST(SessionSteps, BidirectionalCannotBeDecoded) {
  Case c = Causal(6, 6);
  c.visibility = VisibilityKind::kBidirectional;
  const std::vector<int> steps = {3, 3};
  EXPECT_NE(WhySessionCannotExpress(reference::MakeScenario(c), steps), std::nullopt);
  c.visibility = VisibilityKind::kCausal;
  EXPECT_EQ(WhySessionCannotExpress(reference::MakeScenario(c), steps), std::nullopt);
}

TEST(SessionSteps, PrefillThenChunks) {
  Case c = Causal(10, 5);
  EXPECT_EQ(SessionSteps(c), (std::vector<int>{10}));
  c.decode_chunks = {2, 1, 2};
  EXPECT_EQ(SessionSteps(c), (std::vector<int>{5, 2, 1, 2}));
  c.decode_chunks = {4, 6};
  EXPECT_EQ(SessionSteps(c), (std::vector<int>{4, 6})) << "a zero-length prefill is dropped";
}

// ---------------------------------------------------------------------------
// Guards: tiny deliberately bad adapters

enum class Misbehaviour { kWriteBefore, kWritePastEnd, kModifyK, kThrow, kNone };

class BadAdapter final : public Adapter {
 public:
  explicit BadAdapter(Misbehaviour m) : misbehaviour_(m) {}
  std::string name() const override { return "bad"; }
  std::string description() const override { return "deliberately breaks the buffer contract"; }
  Capabilities capabilities() const override { return Capabilities{}; }
  void attention(const AttentionArgs& args) override {
    if (misbehaviour_ == Misbehaviour::kThrow) throw std::runtime_error("boom");  // before writing anything
    std::fill(args.out.begin(), args.out.end(), 0.0f);
    float* out = args.out.data();
    switch (misbehaviour_) {
      case Misbehaviour::kWriteBefore:
        out[-1] = 1.0f;
        break;
      case Misbehaviour::kWritePastEnd:
        out[args.out.size()] = 1.0f;
        out[args.out.size() + 1] = 1.0f;
        break;
      case Misbehaviour::kModifyK:
        const_cast<float*>(args.k.data())[0] += 1.0f;
        break;
      case Misbehaviour::kThrow:
      case Misbehaviour::kNone:
        break;
    }
  }
 private:
  Misbehaviour misbehaviour_;
};

// A bad adapter that leaves its last 3 output elements untouched.
class LazyAdapter final : public Adapter {
 public:
  std::string name() const override { return "lazy"; }
  std::string description() const override { return "forgets the tail of its output"; }
  Capabilities capabilities() const override { return Capabilities{}; }
  void attention(const AttentionArgs& args) override {
    std::fill(args.out.begin(), args.out.end() - 3, 0.0f);
  }
};

AdapterRun RunBad(Adapter& adapter) {
  const reference::Scenario s = reference::MakeScenario(Causal(5, 5));
  return RunAttention(adapter, s);
}

TEST(Guards, WriteBeforeOutput) {
  BadAdapter adapter(Misbehaviour::kWriteBefore);
  EXPECT_EQ(RunBad(adapter).fault, "adapter wrote outside its output (1 element before)");
}

TEST(Guards, WritePastEnd) {
  BadAdapter adapter(Misbehaviour::kWritePastEnd);
  EXPECT_EQ(RunBad(adapter).fault, "adapter wrote outside its output (2 elements after)");
}

TEST(Guards, ModifiedInput) {
  BadAdapter adapter(Misbehaviour::kModifyK);
  EXPECT_EQ(RunBad(adapter).fault, "adapter modified input k");
}

TEST(Guards, UnwrittenOutput) {
  LazyAdapter adapter;
  EXPECT_EQ(RunBad(adapter).fault, "adapter left 3 output elements unwritten");
}

TEST(Guards, Throws) {
  BadAdapter adapter(Misbehaviour::kThrow);
  EXPECT_EQ(RunBad(adapter).fault, "adapter threw: boom");
}

TEST(Guards, WellBehavedAdapterHasNoFault) {
  BadAdapter adapter(Misbehaviour::kNone);
  const AdapterRun run = RunBad(adapter);
  EXPECT_TRUE(run.ok()) << run.fault;
}

TEST(Guards, NoSessionNoRopeStage) {
  BadAdapter adapter(Misbehaviour::kNone);
  const reference::Scenario s = reference::MakeScenario(Causal(5, 5));
  const std::vector<int> steps = {5};
  EXPECT_EQ(RunSession(adapter, s, steps).fault, "adapter has no session");
  EXPECT_EQ(RunRope(adapter, s.c, s.k, s.key_positions, 5).fault, "adapter has no rope stage");
}

// GuardedCall checks every declared buffer by name: outputs first, then inputs,
// each in declaration order; after a throw, everything but the unwritten count.
TEST(Guards, GuardedCallChecksEveryDeclaredBuffer) {
  const std::vector<float> a = {1, 2, 3}, b = {4, 5};
  const std::vector<int> positions = {0, 1};
  GuardedCall call;
  const std::span<const float> a_buffer = call.Input("a", std::span<const float>(a));
  const std::span<const float> b_buffer = call.Input("b", std::span<const float>(b));
  const std::span<const int> position_buffer = call.Input("positions", std::span<const int>(positions));
  const std::span<float> out = call.Output("out", 4);
  CallFaults faults;
  call.Run(
      [&] {
        const_cast<float*>(b_buffer.data())[1] = 0.0f;
        const_cast<int*>(position_buffer.data())[2] = 7;  // one past the end
        const_cast<float*>(a_buffer.data())[-1] = 0.0f;
        out[0] = 1.0f;
      },
      faults);
  EXPECT_EQ(faults.messages, (std::vector<std::string>{"adapter left 3 output elements unwritten",
                                                       "adapter wrote outside input a (1 element before)",
                                                       "adapter modified input b",
                                                       "adapter wrote outside input positions (1 element after)"}));
  EXPECT_EQ(faults.thrown, AdapterFault::kNone);

  GuardedCall throwing;
  const std::span<const float> c_buffer = throwing.Input("c", std::span<const float>(a));
  throwing.Output("out", 2);
  CallFaults thrown;
  throwing.Run(
      [&] {
        const_cast<float*>(c_buffer.data())[0] = 0.0f;
        throw AdapterError(AdapterFault::kTimeout, "adapter timed out");
      },
      thrown);
  EXPECT_EQ(thrown.messages, (std::vector<std::string>{"adapter timed out", "adapter modified input c"}));
  EXPECT_EQ(thrown.thrown, AdapterFault::kTimeout);
}

// A session whose append modifies its keys: the session's guards name k.
class BadSessionAdapter final : public Adapter {
 public:
  std::string name() const override { return "bad-session"; }
  std::string description() const override { return "modifies the keys it appends"; }
  Capabilities capabilities() const override { return Capabilities{}; }
  void attention(const AttentionArgs&) override {}
  std::unique_ptr<Session> open_session(const SessionArgs&) override { return std::make_unique<BadSession>(); }

 private:
  class BadSession final : public Session {
   public:
    void append(std::span<const float> k, std::span<const float>, std::span<const int>, int) override {
      const_cast<float*>(k.data())[0] += 1.0f;
    }
    void attend(std::span<const float>, std::span<const int>, int, const MaskArgs&, std::span<float> out) override {
      std::fill(out.begin(), out.end(), 0.0f);
    }
  };
};

TEST(Guards, SessionAppendModifiedInput) {
  BadSessionAdapter adapter;
  const reference::Scenario s = reference::MakeScenario(Causal(5, 5));
  const std::vector<int> steps = {3, 2};
  const AdapterRun run = RunSession(adapter, s, steps);
  EXPECT_EQ(run.fault, "adapter modified input k");
  EXPECT_EQ(run.kind, AdapterFault::kContract);
}

// The cache keeps each (b, kv head)'s rows in order and concatenates them as
// [B, Hkv, Tk, D]; on_key sees every stored key row with its position.
TEST(KvCache, AppendsChunksAndConcatenates) {
  adapters::KvCache<float> cache(/*batch=*/2, /*kv_heads=*/1, /*head_dim=*/1, /*value_dim=*/1);
  const std::vector<float> k1 = {1, 2}, v1 = {10, 20};  // [2, 1, 1, 1]
  const std::vector<int> p1 = {0, 5};
  cache.Append(k1, v1, p1, 1, [](float* key, int position) { *key += static_cast<float>(position) * 100; });
  const std::vector<float> k2 = {3, 4, 5, 6}, v2 = {30, 40, 50, 60};  // [2, 1, 2, 1]
  const std::vector<int> p2 = {1, 2, 6, 7};
  cache.Append(k2, v2, p2, 2);
  EXPECT_EQ(cache.length(), 3);
  EXPECT_EQ(cache.AllKeys(), (std::vector<float>{1, 3, 4, 502, 5, 6}));
  EXPECT_EQ(cache.AllValues(), (std::vector<float>{10, 30, 40, 20, 50, 60}));
  EXPECT_EQ(cache.AllPositions(), (std::vector<int>{0, 1, 2, 5, 6, 7}));
  EXPECT_EQ(cache.keys(1, 0)[1], 5.0f);
}

// ---------------------------------------------------------------------------
// Registry

TEST(Registry, BuiltinNamesInOrder) {
  const std::vector<std::string> names = AdapterNames();
  ASSERT_GE(names.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 5),
            (std::vector<std::string>{"reference", "eigen", "tiled-f32", "tiled-f16", "tiled-bf16"}));
  for (const std::string& name : names) EXPECT_EQ(MakeAdapter(name)->name(), name);
}

TEST(Registry, UnknownNameIsAnInputError) {
  try {
    MakeAdapter("no-such-kernel");
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "--adapter");
    EXPECT_NE(e.reason().find("unknown adapter 'no-such-kernel'"), std::string::npos) << e.reason();
    EXPECT_NE(e.reason().find("attncheck list shows all"), std::string::npos) << e.reason();
  }
  // A near miss names the closest adapter instead of listing them all.
  try {
    MakeAdapter("tiled-bf61");
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_EQ(e.reason(), "unknown adapter 'tiled-bf61'; did you mean 'tiled-bf16'? (attncheck list shows all)");
  }
  EXPECT_THROW(ExpandAdapterPattern("no-such-*"), InputError);
  EXPECT_THROW(ExpandAdapterPattern("no-such-kernel"), InputError);
}

TEST(Registry, GlobsExpand) {
  EXPECT_EQ(ExpandAdapterPattern("tiled-*"), (std::vector<std::string>{"tiled-f32", "tiled-f16", "tiled-bf16",
                                                                        "tiled-varlen-f32", "tiled-paged-bf16"}));
  EXPECT_EQ(ExpandAdapterPattern("eigen"), (std::vector<std::string>{"eigen"}));
  EXPECT_EQ(ExpandAdapterPattern("tiled-?16"), (std::vector<std::string>{"tiled-f16"}));
}

TEST(Registry, RegisteredMutantsMatchOnlyExplicitPatterns) {
  RegisterAdapter({"mutant:test-bad", "a test mutant", AdapterKind::kDefective},
                  [] { return std::unique_ptr<Adapter>(std::make_unique<BadAdapter>(Misbehaviour::kThrow)); });
  EXPECT_EQ(MakeAdapter("mutant:test-bad")->name(), "bad");
  EXPECT_EQ(ExpandAdapterPattern("mutant:test-*"), (std::vector<std::string>{"mutant:test-bad"}));
  const std::vector<std::string> mutants = ExpandAdapterPattern("mutant:*");  // the built-in mutants too
  EXPECT_EQ(std::count(mutants.begin(), mutants.end(), "mutant:test-bad"), 1);
  const std::vector<std::string> all = ExpandAdapterPattern("*");
  EXPECT_EQ(std::count(all.begin(), all.end(), "mutant:test-bad"), 0);
  const std::vector<std::string> names = AdapterNames();
  EXPECT_EQ(std::count(names.begin(), names.end(), "mutant:test-bad"), 0);
  bool listed = false;
  for (const AdapterInfo& info : ListAdapters()) {
    listed = listed || (info.name == "mutant:test-bad" && info.kind == AdapterKind::kDefective);
  }
  EXPECT_TRUE(listed);
}

TEST(Registry, SchemesTakeAnArgument) {
  RegisterAdapterScheme("test-scheme:", "a test scheme", [](std::string_view argument) {
    EXPECT_EQ(argument, "xyz");
    return std::unique_ptr<Adapter>(std::make_unique<LazyAdapter>());
  });
  EXPECT_EQ(MakeAdapter("test-scheme:xyz")->name(), "lazy");
  EXPECT_EQ(ExpandAdapterPattern("test-scheme:xyz"), (std::vector<std::string>{"test-scheme:xyz"}));
}

}  // namespace
}  // namespace attncheck
