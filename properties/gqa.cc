// GQA equivalence (DESIGN §6): grouped-query attention with Hkv kv heads equals
// multi-head attention with each kv head repeated for its query heads, kv head of
// query head h = ⌊h / (Hq/Hkv)⌋. A case with Hkv = Hq is regrouped to the largest
// proper divisor of Hq that is ≥ 2 (so a wrong mapping such as h mod Hkv shows),
// or to MQA (Hkv = 1) when Hq has none.
#include <fmt/format.h>

#include "properties/law_run.h"
#include "properties/law_support.h"
#include "properties/tolerance.h"

namespace attncheck {

Verdict check_gqa(Adapter& adapter, const Case& c, const Options& options) {
  if (c.q_heads < 2) return Verdict::Skip("one query head: nothing to group");
  if (!adapter.capabilities().gqa) return Verdict::Skip("adapter does not support GQA");
  const Case grouped = GroupedCase(c);
  LawRun law(check_gqa, adapter);
  if (!law.Supports(grouped)) return law.stop();
  law.Use(reference::MakeScenario(grouped));
  const reference::Scenario& s = law.scenario();
  const reference::Scenario expanded = RepeatedKvHeads(s);
  const int group = grouped.q_heads / grouped.kv_heads;
  if (!law.Start()) return law.stop();
  const std::optional<AdapterRun> mha = law.Attend(expanded);
  if (!mha) return law.stop();
  Oracle oracle(s, SharedAngles(options));
  Verdict v = oracle.CheckSelf(law.base().out, mha->out, RealNonEmptyRows(s),
                               fmt::format("GQA with Hq={}, Hkv={} vs kv heads repeated", grouped.q_heads,
                                           grouped.kv_heads));
  if (!v.passed()) {
    v.message += fmt::format(" (kv head of query head h must be h / {})", group);
    v.At("grouped vs repeated kv heads", Role::kNumeric);
  }
  return v;
}

}  // namespace attncheck
