// Law 5, cached-decode consistency (DESIGN §6): prefill-all equals prefill P then
// decode in chunks (Tq > 1 chunks included; rows with different past lengths come
// from padding; causal alignment is bottom-right), and running A, then a longer
// case, then A again answers A the same both times (bitwise): no state of one call
// may leak into the next (e.g. a dynamic-NTK base kept from the longest sequence).
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "properties/law_run.h"
#include "properties/law_support.h"
#include "properties/tolerance.h"

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

// The decode plan: the case's own chunks, or a default one drawn from the seed
// (prefill about half, then chunks of 1 and 2 tokens). When a query reads a key
// that a later step would append (bidirectional, a prefix-LM prefix), the prefill
// grows to cover every such key: a cache cannot hold tokens not yet generated.
std::vector<int> Steps(const Scenario& s) {
  const Case& c = s.c;
  const int tk = c.key_len();
  std::vector<int> steps;
  if (!c.decode_chunks.empty()) {
    steps = SessionSteps(c);
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
  return ChunkedAfter(prefill, tk);
}

// A with every row's positions moved far out (past the original context) and one
// more token: a longer call.
Case LongVariant(const Case& c) {
  Case long_case = c;
  for (RowSpec& row : long_case.rows) {
    row.documents.back() += 1;
    row.position_offset += std::max(c.encoding.rope.original_context, c.key_len()) * 2;
  }
  long_case.decode_chunks.clear();
  return long_case;
}

Verdict CheckHistory(LawRun& law, Oracle& oracle) {
  const Scenario& s = law.scenario();
  const Scenario long_scenario = reference::MakeScenario(LongVariant(s.c), &s);  // A's tokens copied from A
  std::string why;
  if (const std::optional<MaskConvention> long_convention = ChooseConvention(law.adapter(), long_scenario, &why)) {
    if (!law.Attend(long_scenario, *long_convention, " (long call)")) return law.stop();
  }
  const std::optional<AdapterRun> again = law.Attend(s);
  if (!again) return law.stop();
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.tq; ++i)
      if (const std::optional<WorstElement> diff = FirstBitwiseDifference(again->out, law.base().out, b, i)) {
        return Verdict::Fail(
            fmt::format("history: the same call answered differently after a longer call ran in between "
                        "(b={}, h={}, i={}, d={}: {:.9g}, first {:.9g}); the adapter keeps state across calls",
                        b, diff->h, i, diff->j, diff->got, diff->want),
            *diff, diff->error);
      }
  // State set by earlier calls (earlier cases) makes every run of A agree with
  // itself; only the oracle shows it.
  // Only a failing verdict leaves this function (the caller drops a pass).
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);
  const std::string_view what = "history: the same call after a longer call, vs oracle";
  Verdict v = oracle.CheckOutcome(again->out, rows, what);
  if (!v.passed()) {
    v.expected_visibility = s.visible;
    v.row_errors = oracle.MeasureRows(again->out, rows, what);  // failures only: the report's per-row error
  }
  return v;
}

}  // namespace

Verdict check_decode_consistency(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_decode_consistency, adapter);
  if (!law.Supports(c)) return law.stop();
  // Every slot queries, so every decode step attends.
  Case full = c;
  full.query_len = c.key_len();
  law.Use(reference::MakeScenario(full));
  if (!law.Start()) return law.stop();
  const Scenario& s = law.scenario();
  const AdapterRun& prefill = law.base();

  Oracle oracle(s, options);  // oracle and floor shared by the history check and the session comparison
  if (Verdict history = CheckHistory(law, oracle); !history.passed()) {
    return history;
  }
  if (!adapter.capabilities().has_session) return Verdict::Skip("adapter has no cached-decode session (history check passed)");

  const std::vector<int> steps = Steps(s);
  std::string why;
  const std::optional<MaskConvention> convention = ChooseSessionConvention(adapter, s, steps, law.convention(), &why);
  if (!convention) return Verdict::Skip("no accepted mask convention can express the decode steps: " + why);
  const AdapterRun session = RunSession(adapter, s, steps, *convention);
  if (!session.ok()) return law.Fault(session);
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);
  const std::string what = fmt::format("cached decode in steps [{}] vs one prefill", fmt::join(steps, ", "));
  Verdict v = oracle.CheckSelf(session.out, prefill.out, rows, what);
  if (!v.passed()) {
    v.expected_visibility = s.visible;
    if (v.failed()) v.row_errors = oracle.MeasureSelfRows(session.out, prefill.out, rows, what);
  }
  return v;
}

}  // namespace attncheck
