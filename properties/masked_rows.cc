// Law 6, all-masked-row safety (DESIGN §6). With at least one query row that sees
// no key (a pad query is added when the case has none):
//   (a) real rows stay finite and agree with the oracle;
//   (b) fully masked rows follow the adapter's declared policy (zeros: exactly 0;
//       NaN: NaN; unspecified: anything) — where the convention can say "no key":
//       −inf and bool masks and causal flags. A finite fill (lowest, −1e4, −1e9 in
//       f32/bf16) makes a "fully masked" row attend to every key; that is the
//       convention's meaning (see FINDINGS.md for ggml), but such a row must stay
//       finite: a finite fill that yields NaN or inf overflowed somewhere;
//   (c) NaN and then huge values poisoned into keys/values that no query of the
//       row may read never reach a visible output (bitwise unchanged);
//   (d) in f16/bf16 with an additive fill, no fill overflows to −inf and turns a
//       row into NaN (lowest + lowest): the scenario always carries one batch row
//       made only of pads, whose every key is blocked, and (b) checks it.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "properties/law_run.h"
#include "properties/law_support.h"
#include "properties/tolerance.h"
#include "reference/mask.h"

namespace attncheck {
namespace {

using reference::Scenario;

bool ConventionMarksEmptyRows(MaskConvention m, Dtype dtype) {
  if (!IsAdditive(m)) return true;
  return std::isinf(reference::AdditiveFill(m, dtype));
}

// Keys of row b that no query of the row may read.
std::vector<int> UnreadKeys(const Scenario& s, int b) {
  std::vector<int> keys;
  for (int j = 0; j < s.tk; ++j) {
    bool read = false;
    for (int i = 0; i < s.tq && !read; ++i) read = s.is_visible(b, i, j);
    if (!read) keys.push_back(j);
  }
  return keys;
}

Verdict CheckPolicy(const Scenario& s, const TensorD& out, MaskedRowPolicy policy, MaskConvention convention) {
  const bool marks_empty = ConventionMarksEmptyRows(convention, s.c.dtype);
  if (marks_empty && policy == MaskedRowPolicy::kUnspecified) return Verdict::Pass();
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.tq; ++i) {
      if (!s.empty_row[RowIndex(s, b, i)]) continue;
      for (int h = 0; h < out.shape[1]; ++h)
        for (int d = 0; d < out.shape[3]; ++d) {
          const double x = out.at(b, h, i, d);
          const bool ok = !marks_empty ? std::isfinite(x)
                                       : (policy == MaskedRowPolicy::kZeros ? x == 0.0 : std::isnan(x));
          if (ok) continue;
          Verdict v = Verdict::Fail(
              marks_empty
                  ? fmt::format(
                        "fully masked row (b={}, i={}) under {} returned out[h={}, d={}] = {:.9g}; the adapter "
                        "declares policy '{}'",
                        b, i, Name(convention), h, d, x, Name(policy))
                  : fmt::format(
                        "fully masked row (b={}, i={}) under the finite fill of {} ({:g} in {}) returned "
                        "out[h={}, d={}] = {:.9g}: a finite fill overflowed (e.g. fill + fill → −inf)",
                        b, i, Name(convention), reference::AdditiveFill(convention, s.c.dtype), Name(s.c.dtype), h,
                        d, x),
              {b, h, i, d, x, policy == MaskedRowPolicy::kZeros ? 0.0 : std::nan(""), 0.0, 0.0, "out"},
              std::isnan(x) ? INFINITY : std::abs(x));
          v.expected_visibility = s.visible;
          return v;
        }
    }
  return Verdict::Pass();
}

}  // namespace

Verdict check_masked_rows(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_masked_rows, adapter);
  if (!law.Supports(c)) return law.stop();
  Case with_empty = c;
  if (std::none_of(c.rows.begin(), c.rows.end(), [](const RowSpec& row) { return row.left_pad > 0; })) {
    // A pad query next to real ones: one more left pad in row 0 (right pads keep
    // the other rows aligned), and every slot queries.
    with_empty.rows[0].left_pad += 1;
    for (size_t r = 1; r < with_empty.rows.size(); ++r) with_empty.rows[r].right_pad += 1;
    with_empty.query_len = with_empty.key_len();
    with_empty.decode_chunks.clear();
  }
  // One more batch row made only of pads: each of its queries sees no key.
  with_empty.rows.push_back(RowSpec{with_empty.key_len(), 0, {0}, 0, 0});
  law.Use(reference::MakeScenario(with_empty));
  if (!law.Start()) return law.stop();
  const Scenario& s = law.scenario();
  const AdapterRun& base = law.base();

  // (a) real rows
  Oracle oracle(s, options);
  Verdict real = oracle.CheckOutcome(base.out, RealNonEmptyRows(s), "real rows next to a fully masked row");
  if (!real.passed()) {
    real.expected_visibility = s.visible;
    return real;
  }
  // (b) declared policy
  if (Verdict policy = CheckPolicy(s, base.out, adapter.capabilities().masked_rows, law.convention()); !policy.passed())
    return policy;

  // (c) poison keys no query may read: NaN, then huge finite values
  const double huge = s.c.dtype == Dtype::kF16 ? 60000.0 : 1e30;
  for (const double poison : {std::numeric_limits<double>::quiet_NaN(), huge}) {
    Scenario poisoned = s;
    int count = 0;
    for (int b = 0; b < s.batch; ++b)
      for (int j : UnreadKeys(s, b)) {
        ++count;
        for (int h = 0; h < s.k.shape[1]; ++h) {
          for (int d = 0; d < s.k.shape[3]; ++d) poisoned.k.at(b, h, j, d) = (d % 2 ? -poison : poison);
          for (int d = 0; d < s.v.shape[3]; ++d) poisoned.v.at(b, h, j, d) = (d % 2 ? poison : -poison);
        }
      }
    if (count == 0) break;
    const std::optional<AdapterRun> run = law.Attend(poisoned, " (poisoned)");
    if (!run) return law.stop();
    for (int b = 0; b < s.batch; ++b)
      for (int i = 0; i < s.tq; ++i) {
        if (s.empty_row[RowIndex(s, b, i)]) continue;
        if (const std::optional<WorstElement> diff = FirstBitwiseDifference(run->out, base.out, b, i)) {
          Verdict v = Verdict::Fail(
              fmt::format("{} poisoned into {} key/value slot(s) no query may read reached query (b={}, i={}): "
                          "out[h={}, d={}] = {:.9g}, was {:.9g}",
                          std::isnan(poison) ? "NaN" : fmt::format("{:g}", huge), count, b, i, diff->h, diff->j,
                          diff->got, diff->want),
              *diff, std::isfinite(diff->error) ? diff->error : INFINITY);
          v.expected_visibility = s.visible;
          return v;
        }
      }
  }
  return Verdict::Pass();
}

}  // namespace attncheck
