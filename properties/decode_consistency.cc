// Law 5, cached-decode consistency (DESIGN §6): prefill-all equals prefill P then
// decode in chunks (Tq > 1 chunks included; rows with different past lengths come
// from padding; causal alignment is bottom-right), and running A, then a longer
// case, then A again answers A the same both times (bitwise, or within the
// kernel's own run-to-run noise): no state of one call may leak into the next
// (e.g. a dynamic-NTK base kept from the longest sequence).
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <fmt/ranges.h>

#include "adapters/packing.h"
#include "properties/law_run.h"
#include "properties/law_support.h"
#include "properties/tolerance.h"
#include "reference/descriptor.h"

namespace attncheck {
namespace {

using reference::Scenario;

// Chunks of 1 and 2 tokens after a prefill of `prefill` slots.
std::vector<int> ChunkedAfter(int prefill, int tk) {
  std::vector<int> steps = {prefill};
  int done = prefill, next = 1;
  while (done < tk) {
    const int n = std::min(next, tk - done);
    steps.push_back(n);
    done += n;
    next = next == 1 ? 2 : 1;
  }
  return steps;
}

// Above this many keys (the size tier) the law checks the case's own last Tq
// rows (Tq ≥ 64 there) instead of every slot: the oracle of a full prefill and one
// session step per slot would cost Tk/Tq times more for rows that test the same
// kernel paths. The plan then reaches those rows with 64-query chunks (a flash
// kernel's tiled path) and ends with 1- and 2-token steps over the longest cache
// (ggml splits the keys of a one-query step at Tk ≥ 512).
constexpr int kEverySlotMaxKeys = 128;
constexpr int kLongChunk = 64;

// Prefill, 64-token chunks while more than kLongChunk / 8 slots remain, then 1, 2, …
std::vector<int> LongChunkedAfter(int prefill, int tk) {
  std::vector<int> steps = {prefill};
  int done = prefill;
  while (tk - done > kLongChunk + kLongChunk / 8) {
    steps.push_back(kLongChunk);
    done += kLongChunk;
  }
  const std::vector<int> tail = ChunkedAfter(done, tk);
  steps.insert(steps.end(), tail.begin() + 1, tail.end());
  return steps;
}

// The decode plan: the case's own chunks, or a default one drawn from the seed
// (prefill about half, then chunks of 1 and 2 tokens; for long cases prefill
// up to the checked rows, then LongChunkedAfter). When a query reads a key
// that a later step would append (bidirectional, a prefix-LM prefix), the prefill
// grows to cover every such key: a cache cannot hold tokens not yet generated.
std::vector<int> Steps(const Scenario& s) {
  const Case& c = s.c;
  const int tk = c.key_len();
  std::vector<int> steps;
  if (!c.decode_chunks.empty()) {
    steps = SessionSteps(c);
  } else if (tk > kEverySlotMaxKeys) {
    steps = LongChunkedAfter(std::max(1, tk - s.tq), tk);
  } else {
    const int prefill = std::clamp(tk / 2 - static_cast<int>(c.seed % 3), 1, tk);
    steps = ChunkedAfter(prefill, tk);
  }
  if (!WhySessionCannotExpress(s, steps)) return steps;
  int prefill = steps.front();
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.tq; ++i)
      for (int j = s.query_slot(i) + 1; j < s.tk; ++j)
        if (s.is_visible(b, i, j)) prefill = std::max(prefill, j + 1);
  return tk > kEverySlotMaxKeys ? LongChunkedAfter(prefill, tk) : ChunkedAfter(prefill, tk);
}

// The longer call's query rows: its last few (a chunked-prefill shape, still the
// many-query path of a kernel). The state it may leave depends on the keys and
// positions seen (a base or a table kept from the longest sequence), not on how
// many queries read them, and every query row it drops is work of an oracle-free
// call that only has to run.
constexpr int kLongQueries = 4;

// A with every row's positions moved far out (past the original context), one more
// token, and its last kLongQueries query rows: a longer call.
Case LongVariant(const Case& c) {
  Case long_case = c;
  long_case.query_len = std::min(c.query_len, kLongQueries);
  for (RowSpec& row : long_case.rows) {
    row.documents.back() += 1;
    row.position_offset += std::max(c.encoding.rope.original_context, c.key_len()) * 2;
  }
  long_case.decode_chunks.clear();
  return long_case;
}

// The largest |a − b| over every element (0 when bitwise equal).
double MaxAbsDifference(const TensorD& a, const TensorD& b) {
  double largest = 0.0;
  for (size_t e = 0; e < a.data.size(); ++e) {
    if (a.data[e] == b.data[e] || (std::isnan(a.data[e]) && std::isnan(b.data[e]))) continue;
    largest = std::max(largest, std::isnan(a.data[e] - b.data[e]) ? std::numeric_limits<double>::infinity()
                                                                   : std::abs(a.data[e] - b.data[e]));
  }
  return largest;
}

// A, a longer call, then A again: the second answer must equal the first bitwise
// (the usual case, decided in three calls). When it does not, two back-to-back
// runs of A made then measure the kernel's own run-to-run noise (whatever state
// the longer call left is the same in both, so their difference is pure noise),
// and each differing element must stay within twice it. The same call is compared
// with itself on the same adapter instance, never with the oracle: the oracle's
// bound is for rounding, and a drift that hides in it (a base moved by the longer
// call) is exactly what this check exists for. State left by earlier cases is
// caught the same way, in the first case whose longer call moves it.
Verdict CheckHistory(LawRun& law) {
  const Scenario& s = law.scenario();
  const Scenario long_scenario = reference::MakeScenario(LongVariant(s.c), &s);  // A's tokens copied from A
  std::string why;
  if (const std::optional<MaskConvention> long_convention = ChooseConvention(law.adapter(), long_scenario, &why)) {
    if (!law.Attend(long_scenario, *long_convention, " (long call)")) return law.stop();
  }
  const std::optional<AdapterRun> again = law.Attend(s);
  if (!again) return law.stop();
  std::optional<double> noise;  // measured at the first differing row: none when A answered the same
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.tq; ++i)
      if (const std::optional<WorstElement> diff = FirstBitwiseDifference(again->out, law.base().out, b, i)) {
        if (!noise) {
          const std::optional<AdapterRun> first = law.Attend(s, " (repeat)");
          if (!first) return law.stop();
          const std::optional<AdapterRun> second = law.Attend(s, " (repeat)");
          if (!second) return law.stop();
          noise = MaxAbsDifference(second->out, first->out);
        }
        if (*noise > 0.0 && diff->error <= 2.0 * *noise) continue;  // within the kernel's own noise
        return Verdict::Fail(
            fmt::format("history: the same call answered differently after a longer call ran in between "
                        "(b={}, h={}, i={}, d={}: {:.9g}, first {:.9g}; two back-to-back runs differ by {:.3g}); "
                        "the adapter keeps state across calls",
                        b, diff->h, i, diff->j, diff->got, diff->want, *noise),
            *diff, diff->error)
            .At("the same call before and after a longer call", Role::kHistory);
      }
  return Verdict::Pass();
}

// Whether the adapter takes case c in one call and, where it has sessions, in the
// padded KV cache a session's steps are described in (adapters/packing.h SessionForms).
bool TakesEverySlot(const Adapter& adapter, const Case& c) {
  const std::optional<MaskConvention> m = ChooseConvention(adapter, reference::MakeLayout(c), nullptr);
  if (!m) return false;
  const Capabilities caps = adapter.capabilities();
  return *m != MaskConvention::kDescriptor || !caps.has_session ||
         reference::Describe(reference::StepCase(c, c.key_len(), c.query_len), SessionForms(caps.descriptor_forms),
                             nullptr)
             .has_value();
}

// The case the law runs: every slot a query, so every decode step attends (small cases;
// see kEverySlotMaxKeys). An adapter that takes no query inside a left pad (a padded
// descriptor without cu_seqlens_q, as every session's steps are described) gets every
// slot after the longest left pad of a row with real tokens instead: the earlier slots
// are appended as keys only.
Case EveryQuerySlot(const Adapter& adapter, const Case& c) {
  Case full = c;
  if (c.key_len() > kEverySlotMaxKeys) return full;
  full.query_len = c.key_len();
  if (TakesEverySlot(adapter, full)) return full;
  int longest_pad = 0;
  for (const RowSpec& row : c.rows)
    if (row.real_tokens() > 0) longest_pad = std::max(longest_pad, row.left_pad);
  Case after_pads = c;
  after_pads.query_len = std::max(1, c.key_len() - longest_pad);
  return after_pads.query_len < full.query_len ? after_pads : full;
}

// Whose cache the decode steps read. A kernel taking the case in a varlen or paged
// layout decodes over a cache its caller owns (one attention() call per step, in
// that layout: RunCallerCacheDecode), as flash_attn_with_kvcache is driven; its
// session, where it has one, holds a padded cache. A case either can take goes
// one way or the other by its seed, so both are gated. Every step sees the whole
// sequence's length (Scenario::current_length), as a session is told it when opened.
enum class DecodeCache { kNone, kSession, kCaller };

DecodeCache ChooseDecodeCache(const Adapter& adapter, const Scenario& s, MaskConvention convention) {
  const Capabilities caps = adapter.capabilities();
  bool caller = false;
  if (convention == MaskConvention::kDescriptor) {
    const std::optional<VisibilityDescriptor> d = reference::Describe(s.c, caps.descriptor_forms, nullptr);
    caller = d && (d->varlen() || d->paged.page_size > 0);
  }
  const bool session =
      caps.has_session && (convention != MaskConvention::kDescriptor ||
                           reference::Describe(reference::StepCase(s.c, s.tk, s.tq), SessionForms(caps.descriptor_forms),
                                               nullptr)
                               .has_value());
  if (caller && (!session || s.c.seed % 2 == 1)) return DecodeCache::kCaller;
  return caps.has_session ? DecodeCache::kSession : DecodeCache::kNone;
}

}  // namespace

Verdict check_decode_consistency(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_decode_consistency, adapter);
  if (!law.Supports(c)) return law.stop();
  const Case full = EveryQuerySlot(adapter, c);
  law.Use(reference::MakeScenario(full));
  if (!law.Start()) return law.stop();
  const Scenario& s = law.scenario();
  const AdapterRun& prefill = law.base();

  // The report shows the scenario that ran, where it is not the case itself.
  const std::optional<Case> ran = full == c ? std::nullopt : std::optional<Case>(full);
  if (Verdict history = CheckHistory(law); !history.passed()) {
    history.ran_case = ran;
    return history;
  }
  // The first call against the oracle: state left by an earlier case (a base kept
  // from the longest sequence seen) makes every call of this case agree with
  // itself, and only the oracle shows it; so does a plain wrong answer. Nothing
  // here shows that calls answered differently, so it is not called history. A
  // failure only: a row the tolerance cannot judge leaves the session comparison
  // to decide.
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);
  Oracle oracle(s, options);  // also the session comparison's where the angles are not shared
  Verdict first = oracle.CheckOutcome(prefill.out, rows, "the case's first call vs oracle");
  if (first.failed()) {
    first.At("first call vs oracle", Role::kNumeric);
    first.expected_visibility = s.visible;
    first.ran_case = ran;
    return first;
  }
  const DecodeCache cache = ChooseDecodeCache(adapter, s, law.convention());
  if (cache == DecodeCache::kNone) {
    return Verdict::Skip("adapter has no cached-decode session, and the case is in no varlen or paged layout "
                         "to decode over a cache the caller owns (history check passed)");
  }

  const std::vector<int> steps = Steps(s);
  AdapterRun session;
  if (cache == DecodeCache::kCaller) {
    // Steps reading only keys already cached (Steps) are expressed by the descriptor.
    session = RunCallerCacheDecode(adapter, s, steps);
  } else {
    std::string why;
    // The base run's convention passed WhyUnsupported on this very scenario: when the
    // steps can be handed over in it too, it is ChooseSessionConvention's answer.
    const std::optional<MaskConvention> convention =
        !WhySessionCannotExpress(s, steps, law.convention())
            ? std::optional<MaskConvention>(law.convention())
            : ChooseSessionConvention(adapter, s, steps, law.convention(), &why);
    if (!convention) return Verdict::Skip("no accepted mask convention can express the decode steps: " + why);
    session = RunSession(adapter, s, steps, *convention);
  }
  if (!session.ok()) return law.Fault(session);
  const std::string sampled =
      s.tq < s.tk ? fmt::format(" (the last {} of {} slots checked)", s.tq, s.tk) : std::string();
  const std::string over = cache == DecodeCache::kCaller
                               ? " over a caller-owned cache (one attention call per step, the case's layout)"
                               : " through the session";
  const std::string what =
      fmt::format("cached decode in steps [{}]{} vs one prefill{}", fmt::join(steps, ", "), over, sampled);
  // Rows equal bitwise need no model (CheckSelf's own first test), nor a second oracle.
  if (BitwiseEqualRows(session.out, prefill.out, rows)) return Verdict::Pass();
  // A decode step over a cache the caller owns is one attention call, and a session
  // declared session_rope_as_call rotates as one: each token meets the kernel at the
  // same position on both sides, so its float RoPE angle error is common and cancels
  // (SharedAngles, as in left-padding). Another session may rotate its cache on another
  // float path (once, as appended; from a table of its own): each side may then be off
  // by the angle error at its absolute positions, and the oracle charges it.
  const bool shared = cache == DecodeCache::kCaller || adapter.capabilities().session_rope_as_call;
  std::optional<Oracle> shared_oracle;
  if (shared) shared_oracle.emplace(s, SharedAngles(options));
  Oracle& session_oracle = shared_oracle ? *shared_oracle : oracle;
  Verdict v = session_oracle.CheckSelf(session.out, prefill.out, rows, what);
  if (!v.passed()) {
    v.At(cache == DecodeCache::kCaller ? "cached decode over a caller-owned cache vs one prefill"
                                        : "cached decode vs one prefill",
         Role::kNumeric);
    v.expected_visibility = s.visible;
    v.ran_case = ran;
    v.decode_steps = steps;
    v.decode_over_caller_cache = cache == DecodeCache::kCaller;
    if (v.failed()) v.row_errors = session_oracle.MeasureSelfRows(session.out, prefill.out, rows, what);
  }
  return v;
}

}  // namespace attncheck
