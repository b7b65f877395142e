// Influence map (of the backward call for a backward law), row error and rerun classification for a written failure
// report (see enrich.h).
#include "reports/enrich.h"

#include <exception>

#include <fmt/format.h>

#include "adapters/harness.h"
#include "properties/classify.h"
#include "properties/influence.h"
#include "properties/law_support.h"
#include "properties/tolerance.h"
#include "reference/scenario.h"

namespace attncheck {
namespace {

// Adapter output vs the oracle, per row, on the case's own scenario.
RowErrors OracleRowErrors(Adapter& adapter, const Case& c) {
  if (WhyUnsupported(adapter, c)) return {};
  const reference::Scenario s = reference::MakeScenario(c);
  const std::optional<MaskConvention> convention = ChooseConvention(adapter, s, nullptr);
  if (!convention) return {};
  const AdapterRun run = RunAttention(adapter, s, *convention);
  if (!run.ok()) return {};
  return Oracle(s, DeclaredOptions(adapter.capabilities())).MeasureRows(run.out, RealNonEmptyRows(s),
                                          "attention vs oracle (orientation: this is not the comparison the law makes)");
}

}  // namespace

void EnrichFailure(FailureReport& report, Adapter& adapter, const Law& law, const EnrichOptions& options) {
  Verdict& v = report.verdict;
  const bool answered = !IsAdapterError(v.outcome);
  try {
    report.classification = ClassifyFailure(
        v, [&] { return RunLaw(law, adapter, report.c, Options{}); }, options.reruns, answered ? &adapter : nullptr,
        report.c);
  } catch (const std::exception& e) {
    Classification unknown;
    unknown.kind = FailureKind::kException;
    unknown.detail = fmt::format("classification stopped: {}", e.what());
    report.classification = unknown;
  }
  if (!answered) return;  // a crashed or hung adapter is not run again for maps
  // The maps are of the scenario the law ran (a law may extend the case).
  const Case& ran = v.ran_case ? *v.ran_case : report.c;
  // How the maps draw a read by a row with no visible key: the contract's word
  // (a leak unless the contract lets such rows read), never a rerun.
  v.empty_rows_may_read =
      v.empty_rows_may_read || EmptyRowsMayRead(adapter.capabilities(), v.mask.value_or(ran.mask), ran.dtype);
  try {
    const reference::Scenario layout = reference::MakeLayout(ran);
    std::string why;
    // a backward law's map is of its backward call: which keys each row gave gradient to
    const bool gradients = law.needs.backward;
    const bool have_influence = v.influence.size() == layout.visible.size() && !v.influence.empty() &&
                                v.expected_visibility == layout.visible && v.influence_of_gradients == gradients;
    if (!have_influence) {
      v.influence_of_gradients = gradients;
      if (std::optional<InfluenceMap> map = gradients ? MeasureGradientInfluence(adapter, ran, &why)
                                                      : MeasureInfluence(adapter, ran, &why, options.max_influence_keys)) {
        v.expected_visibility = std::move(map->expected_visibility);
        v.influence = std::move(map->influence);
      } else {
        v.expected_visibility = layout.visible;
        v.influence.clear();
      }
    }
    if (v.row_errors.empty()) v.row_errors = OracleRowErrors(adapter, ran);
  } catch (const std::exception&) {
    // Leave what was measured; the report draws what it has.
  }
}

}  // namespace attncheck
