// Reference agreement (differential, DESIGN §6): the adapter's attention output
// on every real row with a visible key is within k·|naive − oracle| + floor of the
// double oracle, after the harness ran the reference for the stages the adapter
// does not own. Rows with no visible key are the masked-rows law's business.
#include "properties/law_run.h"
#include "properties/row_error.h"
#include "properties/tolerance.h"

namespace attncheck {

Verdict check_reference_agreement(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_reference_agreement, adapter);
  if (!law.Open(c)) return law.stop();
  const reference::Scenario& s = law.scenario();
  const AdapterRun& run = law.base();
  const Bounds bounds = ComputeBounds(s, options);
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);
  Verdict v = CompareWithBounds(run.out, bounds, rows, "attention vs oracle");
  if (!v.passed()) {
    v.expected_visibility = s.visible;
    v.row_errors = MeasureRowErrors(run.out, bounds.want, bounds.bound, 1.0, rows, "attention vs oracle");
  }
  return v;
}

}  // namespace attncheck
