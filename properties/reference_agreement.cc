// Reference agreement (differential, DESIGN §6): the adapter's attention output
// on every real row with a visible key is within k·max|naive − oracle| + floor of
// the double oracle (properties/tolerance.h), after the harness ran the reference for the stages the adapter
// does not own. Rows with no visible key are the masked-rows law's business.
#include "properties/law_run.h"
#include "properties/tolerance.h"

namespace attncheck {

Verdict check_reference_agreement(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_reference_agreement, adapter);
  if (!law.Open(c)) return law.stop();
  const reference::Scenario& s = law.scenario();
  const AdapterRun& run = law.base();
  Oracle oracle(s, options);
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);
  Verdict v = oracle.Check(run.out, rows, "attention vs oracle");
  if (!v.passed()) {
    v.At("attention vs oracle", Role::kNumeric);
    v.expected_visibility = s.visible;
    v.row_errors = oracle.MeasureRows(run.out, rows, "attention vs oracle");
  }
  return v;
}

}  // namespace attncheck
