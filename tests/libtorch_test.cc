// The libtorch adapters (adapters/libtorch): a short in-process gate of the laws
// that hold, the kept findings of FINDINGS.md (corpora/regressions/libtorch) still
// failing, and probes pinning what PyTorch 1.13 does where its documentation is
// silent or wrong. Skipped when the build has no libtorch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/registry.h"
#include "cases/corpus.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/laws.h"
#include "tests/law_run.h"

namespace attncheck {
namespace {

#ifdef ATTNCHECK_HAVE_LIBTORCH

// Runs `laws` (all but `except`) over `cases` decoded cases within `caps`; no
// failure, no error, and at least one pass per law.
void ShortGate(const char* name, const Capabilities& caps, const std::vector<std::string>& except, int cases) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
  for (const Law& law : AllLaws()) {
    if (std::find(except.begin(), except.end(), law.name) != except.end()) continue;
    if (law.needs.backward) continue;  // BackwardShortGate
    const auto [passed, skipped] =
        test::ExpectLawHolds(law, *adapter, name, caps, 0x746f7263ULL + law.name.size() * 104729, cases);
    // laws that need what these adapters do not have (RoPE owned, a session, GQA)
    if (law.name != "rope-relative" && law.name != "decode-consistency" && law.name != "gqa" &&
        law.name != "mask-conventions") {
      EXPECT_GT(passed, 0) << name << " × " << law.name << ": nothing ran (" << skipped << " skipped)";
    }
  }
}

// Every law but masked-rows (F7) holds on libtorch-sdpa and libtorch-masked-softmax.
TEST(Libtorch, ShortGateHoldsExceptMaskedRows) {
  for (const char* name : {"libtorch-sdpa", "libtorch-masked-softmax"}) {
    ShortGate(name, MakeAdapter(name)->capabilities(), {"masked-rows"}, 40);
  }
}

// With the float attn_mask (added, as documented) the C++ frontend's MHA passes
// every law but masked-rows (F7); the bool attn_mask is F6.
TEST(Libtorch, MhaWithFloatMaskHolds) {
  Capabilities caps = MakeAdapter("libtorch-mha")->capabilities();
  caps.masks = {MaskConvention::kAdditiveNegInf};
  ShortGate("libtorch-mha", caps, {"masked-rows", "mask-conventions"}, 40);
}

// The backward laws (autograd through the forward's call) on every variant: each
// failure is the NaN of a row with no visible key spreading into dk and dv (FINDINGS.md
// F50, a hazard under the unspecified masked-row policy), and agreement and
// non-interference pass on the other cases. MHA with its float attn_mask (the bool
// one is F6); no GQA in 1.13, so backward-gqa has nothing to check.
TEST(Libtorch, BackwardShortGate) {
  for (const char* name : {"libtorch-sdpa", "libtorch-masked-softmax", "libtorch-mha"}) {
    const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
    Capabilities caps = adapter->capabilities();
    EXPECT_TRUE(caps.has_backward) << name;
    if (std::string_view(name) == "libtorch-mha") caps.masks = {MaskConvention::kAdditiveNegInf};
    // Every declared dtype: in bf16 1.13 stores the scores in bf16 (scores_in_input_dtype),
    // and the naive backward model rounds them so (BackwardRounding::scores_stored); before
    // it did, extreme logits broke its bound (FINDINGS.md, "libtorch 1.13 backward").
    int passed_bf16 = 0;
    for (const Law& law : AllLaws()) {
      if (!law.needs.backward || law.name == "backward-gqa") continue;
      const test::BackwardRunCounts counts = test::ExpectBackwardLawHolds(
          law, *adapter, name, caps, 0x6277'6474ULL + law.name.size() * 104729, 8);
      passed_bf16 += counts.passed_bf16;
      if (law.name != "backward-masked-rows") {  // every case there has such a row
        EXPECT_GT(counts.passed, 0) << name << " × " << law.name << ": nothing passed (" << counts.skipped
                                    << " skipped, " << counts.nan_rows << " NaN rows)";
      }
    }
    if (std::find(caps.dtypes.begin(), caps.dtypes.end(), Dtype::kBf16) != caps.dtypes.end()) {
      EXPECT_GT(passed_bf16, 0) << name << ": no bf16 case passed a backward law";
    }
  }
}

// is_causal on square cases (Tq = Tk) agrees with the reference under either reading.
TEST(Libtorch, SdpaCausalHoldsWhenSquare) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter("libtorch-sdpa");
  const Law* law = FindLaw("reference-agreement");
  ASSERT_NE(law, nullptr);
  int passed = 0;
  for (int i = 0; i < 60; ++i) {
    RandomSource source(0x7371ULL, static_cast<uint64_t>(i));
    Capabilities caps = adapter->capabilities();
    caps.masks = {MaskConvention::kCausalTopLeft};
    const Case c = Decode(source, caps);
    const Verdict verdict = RunLaw(*law, *adapter, c, Options{});  // the adapter's declared accuracy
    EXPECT_NE(verdict.outcome, Outcome::kFail) << verdict.message << "\n" << fmt::format("{}", c);
    passed += verdict.outcome == Outcome::kPass;
  }
  EXPECT_GT(passed, 0);
}

// FINDINGS.md: every kept case still gives its class (fail for a defect, hazard,
// pass for a convention once declared) on the adapters its sidecar names.
TEST(Libtorch, FindingsReproduce) {
  const std::filesystem::path dir = std::filesystem::path(ATTNCHECK_SOURCE_DIR) / "corpora/regressions/libtorch";
  const std::vector<CorpusEntry> entries = ReadCorpus(dir.string());
  ASSERT_GE(entries.size(), 4u) << dir;
  for (const CorpusEntry& entry : entries) {
    ASSERT_TRUE(entry.has_meta) << entry.case_file;
    EXPECT_FALSE(entry.meta.finding.empty()) << entry.case_file;
    const Law* law = FindLaw(entry.meta.law);
    ASSERT_NE(law, nullptr) << entry.case_file;
    ASSERT_FALSE(entry.meta.adapters.empty()) << entry.case_file;
    for (const std::string& name : entry.meta.adapters) {
      const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
      const Verdict verdict = RunLaw(*law, *adapter, entry.c, Options{});
      EXPECT_EQ(Name(verdict.outcome), entry.meta.expect)
          << entry.case_file << " on " << name << " (" << entry.meta.finding << "): no longer reproduces; "
          << verdict.message;
    }
  }
}

// One batch row, one head, D = Dv = 4, Tq queries over Tk keys; `boolean` or
// `additive` is the [Tq, Tk] mask in `convention`.
struct Probe {
  int tq = 2, tk = 2;
  MaskConvention convention = MaskConvention::kBoolVisible;
  std::vector<uint8_t> boolean;
  std::vector<float> additive;
  Dtype dtype = Dtype::kF32;
  std::vector<float> k, v;  // empty: kK, kV
};

const std::vector<float> kQ = {0.5f, -1, 0.25f, 1, 1, 0, -0.5f, 0.75f};
const std::vector<float> kK = {1, 0.5f, 0, -1, -0.25f, 1, 0.5f, 0};
const std::vector<float> kV = {1, 2, 3, 4, -1, 0.5f, 2, -2};

// The probe's inputs and its call as AttentionArgs (out empty): q = kQ, k and v the
// probe's or kK, kV; query positions bottom-right; scale 1/sqrt(4), the only scale
// sdpa and MHA have. The spans point into this object.
struct ProbeCall {
  explicit ProbeCall(const Probe& p)
      : q(kQ.begin(), kQ.begin() + 4 * p.tq),
        k(p.k.empty() ? std::vector<float>(kK.begin(), kK.begin() + 4 * p.tk) : p.k),
        v(p.v.empty() ? std::vector<float>(kV.begin(), kV.begin() + 4 * p.tk) : p.v) {
    Case c;
    c.head_dim = c.value_dim = 4;
    c.query_len = p.tq;
    c.rows = {RowSpec{0, 0, {p.tk}, 0, 0}};
    c.encoding.kind = EncodingKind::kNone;
    c.dtype = p.dtype;
    c.mask = p.convention;
    for (int i = 0; i < p.tq; ++i) query_positions.push_back(p.tk - p.tq + i);
    for (int j = 0; j < p.tk; ++j) key_positions.push_back(j);
    args.spec = SpecOf(c);
    args.batch = args.q_heads = args.kv_heads = 1;
    args.tq = p.tq;
    args.tk = p.tk;
    args.head_dim = args.value_dim = 4;
    args.q = q;
    args.k = k;
    args.v = v;
    args.query_positions = query_positions;
    args.key_positions = key_positions;
    args.mask.convention = p.convention;
    args.mask.boolean = p.boolean;
    args.mask.additive = p.additive;
    args.scale = 0.5;
  }
  ProbeCall(const ProbeCall&) = delete;
  ProbeCall& operator=(const ProbeCall&) = delete;

  std::vector<float> q, k, v;
  std::vector<int> query_positions, key_positions;
  AttentionArgs args;
};

std::vector<float> RunProbe(const char* name, const Probe& p) {
  ProbeCall call(p);
  std::vector<float> out(static_cast<size_t>(4 * p.tq), 123.0f);
  call.args.out = out;
  MakeAdapter(name)->attention(call.args);
  return out;
}

// FINDINGS.md F5 (a convention): with Tq = 1 < Tk = 2, is_causal lets the query see
// key 0 only (tril of a [1, 2] ones matrix: top-left, as libtorch-sdpa declares), so
// the output is exactly V[0]; a decode step (bottom-right) sees both keys.
TEST(Libtorch, IsCausalIsTopLeftAligned) {
  Probe p;
  p.tq = 1;
  p.convention = MaskConvention::kCausalTopLeft;
  const std::vector<float> flag = RunProbe("libtorch-sdpa", p);
  for (int d = 0; d < 4; ++d) EXPECT_EQ(flag[d], kV[d]) << "d=" << d << ": is_causal is no longer top-left";
  p.convention = MaskConvention::kBoolVisible;
  p.boolean = {1, 1};
  const std::vector<float> both = RunProbe("libtorch-sdpa", p);
  EXPECT_GT(std::abs(both[0] - kV[0]), 0.1f) << "the bottom-right reading attends to both keys";
}

// FINDINGS.md F6: the C++ frontend adds a bool attn_mask to the scores: true
// (documented "not allowed to attend") is the same as a float mask of +1.0.
TEST(Libtorch, MhaBoolAttnMaskIsAddedAsOne) {
  Probe blocked;
  blocked.convention = MaskConvention::kBoolBlocked;
  blocked.boolean = {0, 1, 0, 0};  // query 0 must not see key 1
  const std::vector<float> with_bool = RunProbe("libtorch-mha", blocked);
  Probe plus_one;
  plus_one.convention = MaskConvention::kAdditiveNegInf;
  plus_one.additive = {0.0f, 1.0f, 0.0f, 0.0f};
  const std::vector<float> with_plus_one = RunProbe("libtorch-mha", plus_one);
  Probe neg_inf = plus_one;
  neg_inf.additive[1] = -std::numeric_limits<float>::infinity();
  const std::vector<float> with_neg_inf = RunProbe("libtorch-mha", neg_inf);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(with_bool[d], with_plus_one[d]) << "d=" << d << ": bool true is no longer added as +1";
    EXPECT_EQ(with_neg_inf[d], kV[d]) << "d=" << d << ": −inf blocks key 1";
  }
  EXPECT_GT(std::abs(with_bool[0] - kV[0]), 0.1f) << "query 0 reads the key its bool mask blocks";
}

// FINDINGS.md F8: a query row that sees no key gives NaN on all three: sdpa (bool →
// −inf, softmax), _masked_softmax and MHA (−inf). Visible rows stay finite.
TEST(Libtorch, FullyMaskedRow) {
  Probe sdpa;
  sdpa.convention = MaskConvention::kBoolVisible;
  sdpa.boolean = {0, 0, 1, 1};
  const std::vector<float> s = RunProbe("libtorch-sdpa", sdpa);
  Probe masked = sdpa;
  masked.convention = MaskConvention::kBoolBlocked;
  masked.boolean = {1, 1, 0, 0};
  const std::vector<float> m = RunProbe("libtorch-masked-softmax", masked);
  Probe mha;
  mha.convention = MaskConvention::kAdditiveNegInf;
  const float inf = std::numeric_limits<float>::infinity();
  mha.additive = {-inf, -inf, 0, 0};
  const std::vector<float> h = RunProbe("libtorch-mha", mha);
  const std::vector<float> hb = RunProbe("libtorch-mha", masked);  // key_padding_mask leaves row 0 alone here
  for (int d = 0; d < 4; ++d) {
    EXPECT_TRUE(std::isnan(s[d])) << "libtorch-sdpa d=" << d << ": " << s[d];
    EXPECT_TRUE(std::isnan(m[d])) << "libtorch-masked-softmax d=" << d << ": " << m[d];
    EXPECT_TRUE(std::isnan(h[d])) << "libtorch-mha (−inf) d=" << d << ": " << h[d];
    EXPECT_TRUE(std::isfinite(hb[d])) << "libtorch-mha (bool, added as +1) d=" << d;
  }
  for (int d = 4; d < 8; ++d) {
    EXPECT_TRUE(std::isfinite(s[d]));
    EXPECT_TRUE(std::isfinite(m[d]));
    EXPECT_TRUE(std::isfinite(h[d]));
  }
}

// The backward of the probe (upstream gradient `dout`): dq, dk, dv concatenated.
std::vector<float> RunBackwardProbe(const char* name, const Probe& p, const std::vector<float>& dout) {
  ProbeCall call(p);
  std::vector<float> grads(static_cast<size_t>(4 * (p.tq + 2 * p.tk)), 123.0f);
  BackwardArgs args;
  args.forward = call.args;
  args.dout = dout;
  args.dq = std::span<float>(grads).subspan(0, 4 * p.tq);
  args.dk = std::span<float>(grads).subspan(4 * p.tq, 4 * p.tk);
  args.dv = std::span<float>(grads).subspan(4 * (p.tq + p.tk), 4 * p.tk);
  MakeAdapter(name)->backward(args);
  return grads;
}

// FINDINGS.md F50 (a hazard): query 0 sees no key and carries no upstream gradient;
// query 1 sees both keys. Row 0's NaN probabilities still reach every key's dv
// (Pᵀ·dO: NaN·0) on all three variants, and dk through softmax's backward (0·NaN) on
// sdpa and MHA; _masked_softmax_backward zeroes the masked entries, so its dk stays
// finite. The visible row's dq stays finite everywhere.
TEST(Libtorch, EmptyRowNanSpreadsIntoKeyGradients) {
  const float inf = std::numeric_limits<float>::infinity();
  Probe sdpa;
  sdpa.convention = MaskConvention::kBoolVisible;
  sdpa.boolean = {0, 0, 1, 1};
  Probe masked = sdpa;
  masked.convention = MaskConvention::kBoolBlocked;
  masked.boolean = {1, 1, 0, 0};
  Probe mha;
  mha.convention = MaskConvention::kAdditiveNegInf;
  mha.additive = {-inf, -inf, 0, 0};
  const std::vector<float> dout = {0, 0, 0, 0, 0.5f, -1, 0.25f, 2};
  for (const auto& [name, probe] : {std::pair{"libtorch-sdpa", sdpa}, std::pair{"libtorch-masked-softmax", masked},
                                    std::pair{"libtorch-mha", mha}}) {
    const std::vector<float> g = RunBackwardProbe(name, probe, dout);
    for (int d = 4; d < 8; ++d) EXPECT_TRUE(std::isfinite(g[d])) << name << " dq of the visible row, d=" << d - 4;
    const bool dk_spreads = std::string_view(name) != "libtorch-masked-softmax";
    for (int e = 8; e < 24; ++e) {
      const bool spreads = e >= 16 || dk_spreads;
      EXPECT_EQ(std::isnan(g[e]), spreads) << name << (e < 16 ? " dk" : " dv") << " element " << (e - 8) % 8 << ": "
                                           << g[e] << " (F50 has changed)";
    }
  }
}

// FINDINGS.md F9: the C++ frontend applies key_padding_mask under a dispatch over
// float and double only: in bf16 it throws (hence f32 only for libtorch-mha).
TEST(Libtorch, MhaKeyPaddingMaskRejectsBf16) {
  EXPECT_EQ(MakeAdapter("libtorch-mha")->capabilities().dtypes, std::vector<Dtype>{Dtype::kF32});
  Probe p;
  p.convention = MaskConvention::kBoolBlocked;
  p.boolean = {0, 1, 0, 1};  // key 1 unread by every query: key_padding_mask marks it
  p.dtype = Dtype::kBf16;
  try {
    RunProbe("libtorch-mha", p);
    ADD_FAILURE() << "bf16 key_padding_mask now works: declare bf16 for libtorch-mha";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("BFloat16"), std::string::npos) << e.what();
  }
}

// FINDINGS.md F7, split: key 1 is blocked for both queries and holds NaN in its
// key only, or in its value only. A NaN key reaches the output where the mask is
// added (sdpa turns its bool mask into −inf and adds it; MHA's float attn_mask);
// _masked_softmax and MHA's key_padding_mask (masked_fill) stop it. A NaN value
// reaches the output everywhere: the value product computes 0 · NaN.
TEST(Libtorch, NanInMaskedKeyOrValue) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Subject {
    const char* name;
    MaskConvention convention;
    std::vector<uint8_t> boolean;
    std::vector<float> additive;
    bool key_leaks;
  };
  const Subject subjects[] = {
      {"libtorch-sdpa", MaskConvention::kBoolVisible, {1, 0, 1, 0}, {}, true},
      {"libtorch-masked-softmax", MaskConvention::kBoolBlocked, {0, 1, 0, 1}, {}, false},
      {"libtorch-mha", MaskConvention::kBoolBlocked, {0, 1, 0, 1}, {}, false},  // via key_padding_mask
      {"libtorch-mha", MaskConvention::kAdditiveNegInf, {}, {0, -inf, 0, -inf}, true},
  };
  for (const Subject& subject : subjects) {
    for (const bool in_key : {true, false}) {
      Probe p;
      p.convention = subject.convention;
      p.boolean = subject.boolean;
      p.additive = subject.additive;
      p.k = kK;
      p.v = kV;
      for (int d = 0; d < 4; ++d) (in_key ? p.k : p.v)[4 + d] = nan;
      const std::vector<float> out = RunProbe(subject.name, p);
      const std::string what = fmt::format("{} {} NaN in the blocked key's {}", subject.name, Name(subject.convention),
                                           in_key ? "key" : "value");
      for (int d = 0; d < 8; ++d) {
        if (in_key && !subject.key_leaks) {
          EXPECT_EQ(out[d], kV[d % 4]) << what << " d=" << d << ": only key 0 is visible";
        } else {
          EXPECT_TRUE(std::isnan(out[d])) << what << " d=" << d << ": " << out[d];
        }
      }
    }
  }
}

#else

TEST(Libtorch, NotBuilt) {
  GTEST_SKIP() << "libtorch-dev not found (scripts/install-deps.sh --with-libtorch): libtorch adapters not built";
}

// Without libtorch the adapters are still listed, as unavailable with the reason.
TEST(Libtorch, ListedAsUnavailable) {
  bool found = false;
  for (const AdapterInfo& info : ListAdapters()) {
    if (info.name != "libtorch-sdpa") continue;
    found = true;
    EXPECT_NE(info.description.find("unavailable"), std::string::npos) << info.description;
  }
  EXPECT_TRUE(found);
  EXPECT_THROW(MakeAdapter("libtorch-sdpa"), std::exception);
  // a pattern naming only them says why; `*` leaves them out
  try {
    ExpandAdapterPattern("libtorch*");
    ADD_FAILURE() << "libtorch* expanded without libtorch";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not built"), std::string::npos) << e.what();
  }
  for (const std::string& name : ExpandAdapterPattern("*")) EXPECT_FALSE(name.starts_with("libtorch")) << name;
}

#endif

}  // namespace
}  // namespace attncheck
