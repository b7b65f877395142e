// GQA equivalence (DESIGN §6): grouped-query attention with Hkv kv heads equals
// multi-head attention with each kv head repeated for its query heads, kv head of
// query head h = ⌊h / (Hq/Hkv)⌋. A case with Hkv = Hq is regrouped to the largest
// proper divisor of Hq that is ≥ 2 (so a wrong mapping such as h mod Hkv shows),
// or to MQA (Hkv = 1) when Hq has none.
#include <fmt/format.h>

#include "properties/law_support.h"
#include "properties/laws.h"
#include "properties/tolerance.h"

namespace attncheck {

Verdict check_gqa(Adapter& adapter, const Case& c, const Options& options) {
  if (c.q_heads < 2) return Verdict::Skip("one query head: nothing to group");
  if (!adapter.capabilities().gqa) return Verdict::Skip("adapter does not support GQA");
  Case grouped = c;
  if (grouped.kv_heads == grouped.q_heads) {
    grouped.kv_heads = 1;
    for (int d = c.q_heads / 2; d >= 2; --d)
      if (c.q_heads % d == 0) {
        grouped.kv_heads = d;
        break;
      }
  }
  if (std::optional<std::string> why = WhyUnsupported(adapter, grouped)) return Verdict::Skip(why.value());
  const reference::Scenario s = reference::MakeScenario(grouped);
  Case expanded_case = grouped;
  expanded_case.kv_heads = grouped.q_heads;
  reference::Scenario expanded = reference::MakeScenario(expanded_case);
  const int group = grouped.q_heads / grouped.kv_heads;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < grouped.q_heads; ++h)
      for (int j = 0; j < s.tk; ++j) {
        for (int d = 0; d < grouped.head_dim; ++d) expanded.k.at(b, h, j, d) = s.k.at(b, h / group, j, d);
        for (int d = 0; d < grouped.value_dim; ++d) expanded.v.at(b, h, j, d) = s.v.at(b, h / group, j, d);
      }
  expanded.q = s.q;
  std::string why;
  const std::optional<MaskConvention> convention = ChooseConvention(adapter, s, &why);
  if (!convention) return Verdict::Skip(why);
  const AdapterRun gqa = RunAttention(adapter, s, *convention);
  if (!gqa.ok()) return FaultVerdict(gqa, "gqa");
  const AdapterRun mha = RunAttention(adapter, expanded, *convention);
  if (!mha.ok()) return FaultVerdict(mha, "gqa");
  Oracle oracle(s, options);
  Verdict v = oracle.CheckSelf(gqa.out, mha.out, RealNonEmptyRows(s),
                               fmt::format("GQA with Hq={}, Hkv={} vs kv heads repeated", grouped.q_heads,
                                           grouped.kv_heads));
  if (!v.passed()) v.message += fmt::format(" (kv head of query head h must be h / {})", group);
  return v;
}

}  // namespace attncheck
