// backward-masked-rows (DESIGN §6, the backward pass): rows with no visible key and
// slots no query may read, in the backward, against the adapter's contract. On
// the case with such rows (law_support.h EmptyRowsCaseFor), the upstream gradient on
// every row, pads included (a training loss that forgot to mask them):
//   (a) a row with no visible key has dq = 0 and adds nothing to dk or dv (bitwise
//       the gradients with its upstream gradient removed). Broken under policy
//       zeros: a failure; under a policy that allows NaN or promises nothing, NaN
//       there (or spreading from there into dk/dv, pytorch #41508) is a hazard;
//   (b) the real rows' gradients agree with the reference;
//   (c) NaN poisoned into keys and values no query of the row may read reaches no
//       gradient of a real row or of a key some query reads (bitwise unchanged): a
//       failure where the contract promises NaN isolation, else a hazard.
// A contract under which such rows read keys (a finite fill under "neg-inf"
// blocking, policy mean-v) gives them gradient by design: (a) is then not checked.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "properties/backward_support.h"
#include "properties/law_run.h"
#include "properties/law_support.h"
#include "reference/backward.h"

namespace attncheck {
namespace {

using reference::Scenario;

Verdict Breach(const Capabilities& caps, bool not_finite, std::string message, const WorstElement& worst,
               Role role) {
  Verdict v = caps.masked_rows == MaskedRowPolicy::kZeros || !not_finite
                  ? Verdict::Fail(std::move(message), worst, worst.error)
                  : Verdict::Hazard(std::move(message) + fmt::format(" (masked-row policy {})", Name(caps.masked_rows)),
                                    worst, worst.error);
  v.At("rows with no visible key (backward)", role);
  return v;
}

Verdict CheckEmptyRows(LawRun& law, const Capabilities& caps, const AdapterRun& full, const AdapterRun& real) {
  const Scenario& s = law.scenario();
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.tq; ++i) {
      if (!s.empty_row[RowIndex(s, b, i)]) continue;
      for (int h = 0; h < full.dq.shape[1]; ++h)
        for (int d = 0; d < full.dq.shape[3]; ++d) {
          const double x = full.dq.at(b, h, i, d);
          if (x == 0.0) continue;
          const WorstElement worst = WorstElement::Compared("dq", b, h, i, d, x, 0.0, 0.0);
          return Breach(caps, !std::isfinite(x),
                        fmt::format("query (b={}, i={}) sees no key but its dq[h={}, d={}] = {:.9g}, not 0", b, i, h,
                                    d, x),
                        worst, Role::kPolicy);
        }
    }
  for (int b = 0; b < s.batch; ++b)
    for (int j = 0; j < s.tk; ++j) {
      const std::optional<WorstElement> diff = KeyGradientDifference(full, real, b, j);
      if (!diff) continue;
      return Breach(caps, !std::isfinite(diff->got),
                    fmt::format("upstream gradient on rows with no visible key changed {}[b={}, kv={}, slot {}, d={}] "
                                "from {:.9g} to {:.9g}: such rows must add nothing to dk and dv",
                                diff->tensor, b, diff->h, j, diff->j, diff->want, diff->got),
                    *diff, Role::kEmptyRowRead);
    }
  return Verdict::Pass();
}

}  // namespace

Verdict check_backward_masked_rows(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_backward_masked_rows, adapter);
  if (!law.Supports(c)) return law.stop();
  const Case with_empty = EmptyRowsCaseFor(adapter, c, /*backward=*/true);
  law.Use(reference::MakeScenario(with_empty));
  if (!law.Start()) return law.stop();
  const Scenario& s = law.scenario();
  const AdapterRun& real = law.base();  // upstream gradient on real rows with a visible key only
  const Capabilities caps = adapter.capabilities();
  Verdict v;
  // (a)
  if (!EmptyRowsMayRead(caps, law.convention(), s.c.dtype)) {
    // the base run's upstream gradient (0 on rows with no visible key) plus some on those rows
    TensorD everywhere = reference::UpstreamGradient(s, c.seed + 1, reference::UpstreamProfile::kUniform,
                                                     /*pad_rows=*/true);
    std::vector<uint8_t> nonempty(s.empty_row.size());
    for (size_t r = 0; r < nonempty.size(); ++r) nonempty[r] = !s.empty_row[r];
    ZeroRows(everywhere, nonempty);
    for (size_t e = 0; e < everywhere.data.size(); ++e) everywhere.data[e] += law.upstream().data[e];
    const std::optional<AdapterRun> full = law.Backward(s, everywhere, " (upstream gradient on every row)");
    if (!full) return law.stop();
    v = CheckEmptyRows(law, caps, *full, real);
    if (v.failed()) {
      v.ran_case = with_empty;
      return v;
    }
  }
  // (b)
  Oracle oracle(s, options, law.upstream());
  Verdict agreement = CheckGradients(oracle, real, RealNonEmptyRows(s), "real rows next to a row with no visible key");
  if (agreement.failed()) {
    agreement.ran_case = with_empty;
    return agreement;
  }
  // (c)
  Scenario poisoned = s;
  bool any = false;
  for (int b = 0; b < s.batch; ++b)
    for (int j : UnreadKeys(s, b)) {
      any = true;
      for (int kv = 0; kv < s.c.kv_heads; ++kv) {
        for (int d = 0; d < s.c.head_dim; ++d) poisoned.k.at(b, kv, j, d) = std::numeric_limits<double>::quiet_NaN();
        for (int d = 0; d < s.c.value_dim; ++d) poisoned.v.at(b, kv, j, d) = std::numeric_limits<double>::quiet_NaN();
      }
    }
  if (any) {
    const std::optional<AdapterRun> run = law.Backward(poisoned, law.upstream(), " (NaN in unread keys)");
    if (!run) return law.stop();
    std::optional<WorstElement> spread;
    for (int b = 0; b < s.batch && !spread; ++b)
      for (int i = 0; i < s.tq && !spread; ++i)
        if (!s.empty_row[RowIndex(s, b, i)]) spread = FirstBitwiseDifference(run->dq, real.dq, b, i, "dq");
    for (int b = 0; b < s.batch && !spread; ++b) {
      const std::vector<int> unread = UnreadKeys(s, b);
      for (int j = 0; j < s.tk && !spread; ++j)
        if (std::find(unread.begin(), unread.end(), j) == unread.end()) spread = KeyGradientDifference(*run, real, b, j);
    }
    if (spread) {
      std::string message = fmt::format("NaN poisoned into keys and values no query may read reached {}[b={}, h={}, "
                                        "i={}, d={}] = {:.9g} (was {:.9g})",
                                        spread->tensor, spread->b, spread->h, spread->i, spread->j, spread->got,
                                        spread->want);
      Verdict poison = caps.nan_isolation ? Verdict::Fail(std::move(message), *spread, spread->error)
                                          : Verdict::Hazard(std::move(message) + " (nan_isolation is not promised)",
                                                            *spread, spread->error);
      poison.At("NaN in unread keys (backward)", Role::kPoison);
      poison.ran_case = with_empty;
      return poison;
    }
  }
  if (v.hazard()) {
    v.ran_case = with_empty;
    return v;
  }
  return agreement;
}

}  // namespace attncheck
