// The experiments of `attncheck probe` (properties/probe.h): one small batch row
// (D = Dv = 8, values from the seed, rounded to the adapter's first dtype), the
// visibility set by hand where the item needs it, run through adapters/harness.h
// and matched against the oracle under each candidate rule (probe_support.h).
#include "properties/probe.h"

#include <cmath>

#include <fmt/format.h>

#include "adapters/harness.h"
#include "properties/probe_support.h"
#include "reference/attention.h"
#include "reference/data.h"
#include "reference/mask.h"
#include "reference/rope.h"

namespace attncheck {
namespace {

using namespace probe;
using reference::Scenario;

std::vector<uint8_t> AllVisible(const Scenario& s) { return std::vector<uint8_t>(static_cast<size_t>(s.tq) * s.tk, 1); }

// The first accepted convention that blocks a whole row: −inf, a bool mask, or a
// finite fill where the contract says it blocks. nullopt: only flags or
// non-blocking fills.
std::optional<MaskConvention> BlockingConvention(const Probing& p) {
  for (MaskConvention m : p.caps.masks)
    if (m == MaskConvention::kAdditiveNegInf || IsBool(m)) return m;
  for (MaskConvention m : p.caps.masks)
    if (IsAdditive(m) && p.caps.blocking != Blocking::kNegInfOnly) return m;
  return std::nullopt;
}

// ---- 1. causal alignment ----

// `convention` a causal flag (its declared rule), or a mask carrying the case's
// causal visibility (bottom-right: what a decode call with a mask asks for).
ProbeItem CausalItem(const Probing& p, MaskConvention convention, bool session) {
  const bool top_left = convention == MaskConvention::kCausalTopLeft;
  const std::string declared = top_left ? "top-left" : "bottom-right";
  const std::string name = fmt::format("causal alignment ({}{}{})", IsCausalFlag(convention) ? "" : "Tq < Tk, ",
                                       Name(convention), session ? ", session step" : "");
  // Tq < Tk: top-left (j ≤ i) and bottom-right (j ≤ i + Tk − Tq) differ in every row.
  const int tq = 2, tk = session ? 5 : 4;
  const Case c = BaseCase(p, tq, tk, VisibilityKind::kCausal);
  Scenario s = MakeProbeScenario(c);
  // what the flag means under the declaration (a mask already is bottom-right)
  if (top_left) s.visible = reference::CausalFlagPattern(convention, tq, tk);
  if (std::optional<std::string> why = WhyUnsupported(p.adapter, s, convention)) {
    return NotObservable(name, declared, *why);
  }
  const std::vector<int> steps = {3, 2};
  const TensorD out =
      Checked(session ? RunSession(p.adapter, s, steps, convention) : RunAttention(p.adapter, s, convention));
  std::vector<Rule> rules;
  for (MaskConvention rule : {MaskConvention::kCausalTopLeft, MaskConvention::kCausalBottomRight}) {
    const std::string meaning = rule == MaskConvention::kCausalTopLeft ? "top-left" : "bottom-right";
    rules.push_back({meaning, meaning,
                     UnderRule(s, Masked(s, reference::CausalFlagPattern(rule, tq, tk)),
                               [&s](int h) { return GroupOf(s, h); })});
  }
  return Item(name, declared, Match(out, rules, Tolerance(s)),
              CaseLine(c, convention) + (session ? "; session: append 3 keys, then 2 and attend the 2 queries" : ""));
}

std::vector<ProbeItem> ProbeCausal(const Probing& p) {
  std::vector<ProbeItem> items;
  for (MaskConvention flag : p.caps.masks) {
    if (!IsCausalFlag(flag)) continue;
    items.push_back(CausalItem(p, flag, false));
    if (p.caps.has_session) items.push_back(CausalItem(p, flag, true));
  }
  // No flag: the alignment of a causal mask with Tq < Tk (a kernel that reads the
  // case rather than the mask shows its own rule here).
  if (items.empty()) items.push_back(CausalItem(p, p.caps.masks.front(), false));
  return items;
}

// ---- 2. blocking values, 3. masked-row output ----

// Rules for query row 0 with no visible key: the three policies.
void PolicyRules(const Scenario& s, std::vector<Rule>& rules, const std::string& zeros, const std::string& nan,
                 const std::string& mean) {
  const auto kv_of = [&s](int h) { return probe::GroupOf(s, h); };
  TensorD mean_v = probe::UnderRule(s, [](int, int, int) { return 0.0; }, kv_of);  // equal scores
  TensorD zero = mean_v, not_a_number = mean_v;
  for (int h = 0; h < s.q.shape[1]; ++h)
    for (int d = 0; d < s.v.shape[3]; ++d) {
      zero.at(0, h, 0, d) = 0.0;
      not_a_number.at(0, h, 0, d) = NAN;
    }
  rules.push_back({"zeros", zeros, zero});
  rules.push_back({"NaN", nan, not_a_number});
  rules.push_back({"mean of V", mean, mean_v});
}

ProbeItem FillKeyItem(const Probing& p, MaskConvention m) {
  const std::string name = fmt::format("blocking: one key at the fill ({})", Name(m));
  const Case c = BaseCase(p, 2, 4, VisibilityKind::kBidirectional);
  Scenario s = MakeProbeScenario(c);
  s.visible[1] = 0;  // query 0 does not see key 1
  if (std::optional<std::string> why = WhyUnsupported(p.adapter, s, m)) return NotObservable(name, "blocked", *why);
  const TensorD out = Checked(RunAttention(p.adapter, s, m));
  const auto kv_of = [&s](int h) { return probe::GroupOf(s, h); };
  const std::vector<Rule> rules = {{"blocked", "blocked", probe::UnderRule(s, probe::Masked(s, s.visible), kv_of)},
                                   {"attended", "attended", probe::UnderRule(s, probe::Masked(s, AllVisible(s)), kv_of)}};
  return Item(name, "blocked", Match(out, rules, probe::Tolerance(s), {0}),
              CaseLine(c, m) + "; query 0's key 1 at the fill");
}

ProbeItem FillRowItem(const Probing& p, MaskConvention m) {
  const std::string name = fmt::format("blocking: a row all at the fill ({})", Name(m));
  // "fill-rows" empties such a row as "fill" does (it differs for one key whose score outweighs the fill)
  const std::string declared(Name(p.caps.blocking == Blocking::kFillRows ? Blocking::kFill : p.caps.blocking));
  const Case c = BaseCase(p, 2, 4, VisibilityKind::kBidirectional);
  Scenario s = MakeProbeScenario(c);
  for (int j = 0; j < s.tk; ++j) s.visible[j] = 0;  // query 0 sees no key
  if (std::optional<std::string> why = WhyUnsupported(p.adapter, s, m)) return NotObservable(name, declared, *why);
  const TensorD out = Checked(RunAttention(p.adapter, s, m));
  // A finite fill that only −inf-blocking kernels read as a score: fl(fl(s) + fill)
  // in float, so a fill that absorbs the scores (lowest, −1e9) gives the mean of V.
  const float fill = static_cast<float>(reference::AdditiveFill(m, s.c.dtype));
  const auto kv_of = [&s](int h) { return probe::GroupOf(s, h); };
  const TensorD attends = probe::UnderRule(
      s,
      [&](int h, int i, int j) {
        const double score = probe::Score(s, h, probe::GroupOf(s, h), i, j);
        return i == 0 ? static_cast<double>(static_cast<float>(score) + fill) : score;
      },
      kv_of);
  // The mean of V is also what a policy of mean-v (or unspecified) may give a fill-blocked row.
  const bool policy_mean = p.caps.masked_rows == MaskedRowPolicy::kMeanV ||
                           p.caps.masked_rows == MaskedRowPolicy::kUnspecified;
  std::vector<Rule> rules;
  PolicyRules(s, rules, "fill", "fill", policy_mean ? "fill or neg-inf" : "neg-inf");
  const double tolerance = probe::Tolerance(s);
  const bool absorbed = probe::Distance(attends, rules.back().out, {0}) <= tolerance;
  rules.push_back({"attends (scores + fill)", absorbed ? rules.back().meaning : "neg-inf", attends});
  ProbeItem item = Item(name, declared, Match(out, rules, tolerance, {0}), CaseLine(c, m) + "; query 0's keys all at the fill");
  // Agreement where the experiment allows both, or the contract promises nothing for the row.
  if (item.observed == "fill or neg-inf") item.agrees = true;
  if (item.observed == "other" && p.caps.blocking != Blocking::kNegInfOnly &&
      p.caps.masked_rows == MaskedRowPolicy::kUnspecified) {
    item.agrees = true;
  }
  return item;
}

std::vector<ProbeItem> ProbeBlocking(const Probing& p) {
  std::vector<ProbeItem> items;
  for (MaskConvention m : p.caps.masks) {
    if (!IsAdditive(m) || !std::isfinite(reference::AdditiveFill(m, p.dtype))) continue;
    items.push_back(FillKeyItem(p, m));
    items.push_back(FillRowItem(p, m));
  }
  if (items.empty()) {
    items.push_back(NotObservable("blocking", std::string(Name(p.caps.blocking)),
                                  "the adapter accepts no additive mask with a finite fill"));
  }
  return items;
}

ProbeItem ProbeMaskedRow(const Probing& p) {
  const std::string name = "masked-row output";
  const std::string declared(Name(p.caps.masked_rows));
  const std::optional<MaskConvention> m = BlockingConvention(p);
  if (!m) return NotObservable(name, declared, "no accepted mask blocks a whole row");
  const Case c = BaseCase(p, 2, 4, VisibilityKind::kBidirectional);
  Scenario s = MakeProbeScenario(c);
  for (int j = 0; j < s.tk; ++j) s.visible[j] = 0;
  if (std::optional<std::string> why = WhyUnsupported(p.adapter, s, *m)) return NotObservable(name, declared, *why);
  const TensorD out = Checked(RunAttention(p.adapter, s, *m));
  std::vector<Rule> rules;
  PolicyRules(s, rules, "zeros", "nan", "mean-v");
  ProbeItem item = Item(name, declared, Match(out, rules, probe::Tolerance(s), {0}),
                        CaseLine(c, *m) + "; query 0 sees no key");
  if (p.caps.masked_rows == MaskedRowPolicy::kUnspecified) item.agrees = true;
  return item;
}

// ---- 4. NaN isolation ----

ProbeItem ProbeNanIsolation(const Probing& p) {
  const std::string name = "NaN isolation";
  const std::string declared = p.caps.nan_isolation ? "isolated" : "may spread";
  const std::optional<MaskConvention> m = BlockingConvention(p);
  if (!m) return NotObservable(name, declared, "no accepted mask blocks a key no query reads");
  const Case c = BaseCase(p, 2, 4, VisibilityKind::kBidirectional);
  Scenario s = MakeProbeScenario(c);
  for (int i = 0; i < s.tq; ++i) s.visible[static_cast<size_t>(i) * s.tk + 1] = 0;  // no query reads key 1
  if (std::optional<std::string> why = WhyUnsupported(p.adapter, s, *m)) return NotObservable(name, declared, *why);
  const TensorD clean = probe::UnderRule(s, probe::Masked(s, s.visible), [&s](int h) { return probe::GroupOf(s, h); });
  std::string spreads, evidence;
  for (TensorD Scenario::*tensor : {&Scenario::k, &Scenario::v}) {
    Scenario poisoned = s;
    TensorD& t = poisoned.*tensor;
    for (int h = 0; h < t.shape[1]; ++h)
      for (int d = 0; d < t.shape[3]; ++d) t.at(0, h, 1, d) = NAN;
    const std::string slot = tensor == &Scenario::k ? "K" : "V";
    const double error = probe::Distance(Checked(RunAttention(p.adapter, poisoned, *m)), clean);
    evidence += fmt::format("{}NaN in {}: |out − clean| = {:.3g}", evidence.empty() ? "" : ", ", slot, error);
    if (!(error <= probe::Tolerance(s))) spreads += (spreads.empty() ? "spreads through " : " and ") + slot;
  }
  const std::string observed = spreads.empty() ? "isolated" : spreads;
  return {name, declared, observed, !p.caps.nan_isolation || spreads.empty(),
          CaseLine(c, *m) + "; NaN in key slot 1, which no query reads; " + evidence};
}

// ---- 5. GQA head mapping ----

ProbeItem ProbeGqa(const Probing& p) {
  const std::string name = "GQA head mapping (Hq=4, Hkv=2)";
  const std::string declared = "h / (Hq/Hkv)";
  if (!p.caps.gqa) return NotObservable(name, "-", "the adapter declares no GQA");
  const Case c = BaseCase(p, 3, 3, VisibilityKind::kCausal, 4, 2);
  const Scenario s = MakeProbeScenario(c);
  const MaskConvention m = p.caps.masks.front();
  if (std::optional<std::string> why = WhyUnsupported(p.adapter, s, m)) return NotObservable(name, declared, *why);
  const TensorD out = Checked(RunAttention(p.adapter, s, m));
  std::vector<Rule> rules;
  for (const auto& [meaning, kv_of] : std::vector<std::pair<std::string, probe::HeadMap>>{
           {"h / (Hq/Hkv)", [](int h) { return h / 2; }}, {"h mod Hkv", [](int h) { return h % 2; }}}) {
    const probe::ScoreRule score = [&s, &kv_of = kv_of](int h, int i, int j) {
      return s.is_visible(0, i, j) ? probe::Score(s, h, kv_of(h), i, j) : -INFINITY;
    };
    rules.push_back({meaning, meaning, probe::UnderRule(s, score, kv_of)});
  }
  return Item(name, declared, Match(out, rules, probe::Tolerance(s)), CaseLine(c, m));
}

}  // namespace

// 6. RoPE, 7. softcap (probe_encoding.cc)
namespace probe {
std::vector<ProbeItem> ProbeRope(const Probing& p);
std::vector<ProbeItem> ProbeSoftcap(const Probing& p);
}  // namespace probe

bool ProbeReport::agrees() const {
  if (!fault.empty()) return false;
  for (const ProbeItem& item : items)
    if (!item.agrees) return false;
  return true;
}

ProbeReport Probe(Adapter& adapter, uint64_t seed) {
  ProbeReport report;
  report.adapter = adapter.name();
  const Capabilities caps = adapter.capabilities();
  const probe::Probing p{adapter, caps, caps.dtypes.front(), seed};
  const auto add = [&report](std::vector<ProbeItem> items) {
    for (ProbeItem& item : items) report.items.push_back(std::move(item));
  };
  // A group whose case the kernel refuses is not observable here; any other fault stops the probe.
  const auto group = [&](std::string_view name, const auto& items) {
    try {
      add(items());
    } catch (const probe::ProbeFault& fault) {
      if (!fault.refused) throw;
      report.items.push_back(probe::NotObservable(std::string(name), "-", "the kernel refused the probe's case: " +
                                                                              fault.message));
    }
  };
  try {
    group("causal alignment", [&] { return ProbeCausal(p); });
    group("blocking", [&] { return ProbeBlocking(p); });
    group("masked-row output", [&] { return std::vector<ProbeItem>{ProbeMaskedRow(p)}; });
    group("NaN isolation", [&] { return std::vector<ProbeItem>{ProbeNanIsolation(p)}; });
    group("GQA head mapping", [&] { return std::vector<ProbeItem>{ProbeGqa(p)}; });
    group("RoPE", [&] { return probe::ProbeRope(p); });
    group("softcap order", [&] { return probe::ProbeSoftcap(p); });
  } catch (const probe::ProbeFault& fault) {
    report.fault = fault.message;
  }
  return report;
}

}  // namespace attncheck
