// backward-gqa (DESIGN §6, the backward pass): the gradients of a grouped call equal
// those of the multi-head call with each kv head repeated, dK and dV of kv head g
// being the sum of the repeated heads' over the query heads that read g
// (⌊h / (Hq/Hkv)⌋ = g): a backward that forgets the sum (levanter #449) or sums
// into head h mod Hkv fails. Regrouped as gqa's (law_support.h GroupedCase).
#include <fmt/format.h>

#include "properties/backward_support.h"
#include "properties/law_run.h"
#include "properties/law_support.h"

namespace attncheck {

Verdict check_backward_gqa(Adapter& adapter, const Case& c, const Options& options) {
  if (c.q_heads < 2) return Verdict::Skip("one query head: nothing to group");
  if (!adapter.capabilities().gqa) return Verdict::Skip("adapter does not support GQA");
  const Case grouped = GroupedCase(c);
  LawRun law(check_backward_gqa, adapter);
  if (!law.Supports(grouped)) return law.stop();
  law.Use(reference::MakeScenario(grouped));
  const reference::Scenario& s = law.scenario();
  const reference::Scenario expanded = RepeatedKvHeads(s);
  if (!law.Start()) return law.stop();
  const std::optional<AdapterRun> mha = law.Backward(expanded, law.upstream(), " (kv heads repeated)");
  if (!mha) return law.stop();
  // The repeated heads' dk and dv summed over each group.
  const int group = grouped.q_heads / grouped.kv_heads;
  AdapterRun summed;
  summed.dq = mha->dq;
  summed.dk = TensorD(s.batch, grouped.kv_heads, s.tk, grouped.head_dim);
  summed.dv = TensorD(s.batch, grouped.kv_heads, s.tk, grouped.value_dim);
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < grouped.q_heads; ++h)
      for (int j = 0; j < s.tk; ++j) {
        for (int d = 0; d < grouped.head_dim; ++d) summed.dk.at(b, h / group, j, d) += mha->dk.at(b, h, j, d);
        for (int d = 0; d < grouped.value_dim; ++d) summed.dv.at(b, h / group, j, d) += mha->dv.at(b, h, j, d);
      }
  Oracle oracle(s, options, law.upstream());
  const std::string what = fmt::format("GQA backward with Hq={}, Hkv={} vs kv heads repeated", grouped.q_heads,
                                       grouped.kv_heads);
  Verdict closest = Verdict::Pass();
  for (const char* name : {"dq", "dk", "dv"}) {
    if (std::optional<Verdict> beyond = BeyondRange(oracle, name, what)) return *beyond;
    Verdict v = oracle.CheckSelf(law.base().tensor(name), summed.tensor(name),
                                 name == std::string_view("dq") ? RealNonEmptyRows(s) : std::vector<uint8_t>{},
                                 fmt::format("{} ({})", what, name), name);
    if (v.passed()) {
      KeepCloser(closest, std::move(v));
      continue;
    }
    if (v.failed()) {
      v.message += fmt::format(" (kv head g's gradient must sum query heads h with h / {} = g)", group);
      v.At("grouped vs repeated kv heads (backward)", Role::kNumeric);
    }
    return v;
  }
  return closest;
}

}  // namespace attncheck
