// Mask-convention equivalence (DESIGN §6): every convention the adapter accepts
// that can express the case gives the same output on real rows with a visible key
// (the first accepted convention is the baseline). A kernel that misreads one of
// its declared conventions (polarity, fill, causal alignment) fails here; the
// verdict names the convention misread (Verdict::mask): the baseline when it
// disagrees with the oracle, else the one compared with it.
#include <fmt/format.h>

#include "properties/law_run.h"
#include "properties/tolerance.h"

namespace attncheck {

Verdict check_mask_conventions(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_mask_conventions, adapter);
  if (!law.Supports(c)) return law.stop();
  law.Use(reference::MakeScenario(c));
  const reference::Scenario& s = law.scenario();
  std::vector<MaskConvention> usable;
  for (MaskConvention m : adapter.capabilities().masks)
    if (!WhyUnsupported(adapter, s, m)) usable.push_back(m);
  if (usable.size() < 2)
    return Verdict::Skip("fewer than two accepted mask conventions can express this case");
  if (!law.Start(usable.front())) return law.stop();
  Oracle oracle(s, SharedAngles(options));
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);
  for (size_t m = 1; m < usable.size(); ++m) {
    const std::optional<AdapterRun> run = law.Attend(s, usable[m]);
    if (!run) return law.stop();
    Verdict v = oracle.CheckSelf(run->out, law.base().out, rows,
                                 fmt::format("mask {} vs {}", Name(usable[m]), Name(usable.front())));
    if (!v.passed()) {
      // The convention misread: the baseline's when it disagrees with the oracle, else this one.
      Oracle against_reference(s, options);  // the baseline's own angle error is its own
      const bool baseline_wrong =
          against_reference.CheckOutcome(law.base().out, rows, "baseline vs oracle").failed();
      v.mask = baseline_wrong ? usable.front() : usable[m];
      v.At("one mask convention vs another", Role::kNumeric);
      v.expected_visibility = s.visible;
      return v;
    }
  }
  return Verdict::Pass();
}

}  // namespace attncheck
