// Reference agreement (differential, DESIGN §6): the adapter's attention output
// on every real row with a visible key is within k·|naive − oracle| + floor of the
// double oracle, after the harness ran the reference for the stages the adapter
// does not own. Rows with no visible key are the masked-rows law's business.
#include "properties/law_support.h"
#include "properties/laws.h"
#include "properties/tolerance.h"

namespace attncheck {

Verdict check_reference_agreement(Adapter& adapter, const Case& c, const Options& options) {
  if (std::optional<std::string> why = WhyUnsupported(adapter, c)) return Verdict::Skip(why.value());
  const reference::Scenario s = reference::MakeScenario(c);
  std::string why;
  const std::optional<MaskConvention> convention = ChooseConvention(adapter, s, &why);
  if (!convention) return Verdict::Skip(why);
  const AdapterRun run = RunAttention(adapter, s, *convention);
  if (!run.ok()) return FaultVerdict(run, "reference-agreement");
  Oracle oracle(s, options);
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);
  Verdict v = oracle.Check(run.out, rows, "attention vs oracle");
  if (!v.passed()) {
    v.expected_visibility = s.visible;
    v.row_errors = oracle.MeasureRows(run.out, rows, "attention vs oracle");
  }
  return v;
}

}  // namespace attncheck
