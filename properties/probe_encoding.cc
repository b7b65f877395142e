// The encoding items of `attncheck probe` (properties/probe.h): RoPE pairing,
// position use and rotary dim for a kernel that rotates itself (owns_rope) or has
// a rotation stage (has_rope_stage), and the order of softcap, scale and mask.
#include <cmath>

#include <fmt/format.h>

#include "properties/probe_support.h"
#include "reference/attention.h"
#include "reference/rope.h"

namespace attncheck::probe {
namespace {

using reference::Scenario;

bool Has(const std::vector<EncodingKind>& kinds, EncodingKind kind) {
  for (EncodingKind k : kinds)
    if (k == kind) return true;
  return false;
}

// The oracle's output of a scenario whose case is edited by `edit`.
TensorD OracleWith(const Scenario& s, const std::function<void(Scenario&)>& edit) {
  Scenario copy = s;
  edit(copy);
  return reference::Attention<double>(copy).out;
}

Case RopeCase(const Probing& p, RopeLayout layout, int rotary_dim) {
  Case c = BaseCase(p, 4, 4, VisibilityKind::kCausal);
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.layout = layout;
  c.encoding.rope.rotary_dim = rotary_dim;
  return c;
}

std::vector<Rule> LayoutRules(const Scenario& s) {
  std::vector<Rule> rules;
  for (RopeLayout layout : kAllRopeLayouts) {
    const std::string meaning(Name(layout));
    rules.push_back({meaning, meaning, OracleWith(s, [layout](Scenario& x) { x.c.encoding.rope.layout = layout; })});
  }
  rules.push_back({"no rotation", "no rotation", OracleWith(s, [](Scenario& x) { x.c.encoding.kind = EncodingKind::kNone; })});
  return rules;
}

// Attention through the adapter's own RoPE: pairing, position use, rotary dim.
std::vector<ProbeItem> AttentionRope(const Probing& p) {
  std::vector<ProbeItem> items;
  const MaskConvention m = p.caps.masks.front();
  for (RopeLayout layout : p.caps.rope_layouts) {
    const std::string name = fmt::format("RoPE pairing ({})", Name(layout));
    const Case c = RopeCase(p, layout, 0);
    const Scenario s = MakeProbeScenario(c);
    if (auto why = WhyUnsupported(p.adapter, s, m)) {
      items.push_back(NotObservable(name, std::string(Name(layout)), *why));
      continue;
    }
    items.push_back(Item(name, std::string(Name(layout)),
                         Match(Checked(RunAttention(p.adapter, s, m)), LayoutRules(s), Tolerance(s)), CaseLine(c, m)));
  }
  const RopeLayout layout = p.caps.rope_layouts.front();
  // Positions: shifting only the keys' positions by 5 changes every score; shifting
  // both by 7 keeps them.
  {
    const std::string name = "RoPE positions", declared = "used, relative";
    const Case c = RopeCase(p, layout, 0);
    const Scenario s = MakeProbeScenario(c);
    if (auto why = WhyUnsupported(p.adapter, s, m)) {
      items.push_back(NotObservable(name, declared, *why));
    } else {
      Scenario keys_shifted = s, both_shifted = s;
      for (int& position : keys_shifted.key_positions) position += 5;
      for (int& position : both_shifted.key_positions) position += 7;
      for (int& position : both_shifted.query_positions) position += 7;
      const TensorD unshifted = reference::Attention<double>(s).out;
      const std::vector<Rule> key_rules = {{"keys moved", "used", reference::Attention<double>(keys_shifted).out},
                                           {"keys at their old positions", "ignored", unshifted}};
      const Observation keys = Match(Checked(RunAttention(p.adapter, keys_shifted, m)), key_rules, Tolerance(s));
      const std::vector<Rule> both_rules = {{"unshifted", "relative", unshifted}};
      const Observation both = Match(Checked(RunAttention(p.adapter, both_shifted, m)), both_rules, Tolerance(s));
      const Observation joined{fmt::format("{}, {}", keys.observed, both.observed),
                               fmt::format("keys +5: {}; queries and keys +7: {}", keys.evidence, both.evidence)};
      items.push_back(Item(name, declared, joined, CaseLine(c, m)));
    }
  }
  {
    const std::string name = "RoPE rotary dim", declared = "4 of 8";
    const Case c = RopeCase(p, layout, 4);
    const Scenario s = MakeProbeScenario(c);
    if (auto why = WhyUnsupported(p.adapter, s, m)) {
      items.push_back(NotObservable(name, declared, *why));
    } else {
      const std::vector<Rule> rules = {
          {"4 of 8", "4 of 8", reference::Attention<double>(s).out},
          {"all 8", "all 8", OracleWith(s, [](Scenario& x) { x.c.encoding.rope.rotary_dim = 0; })}};
      items.push_back(Item(name, declared, Match(Checked(RunAttention(p.adapter, s, m)), rules, Tolerance(s)),
                           CaseLine(c, m)));
    }
  }
  return items;
}

// The rotation stage alone: x rotated at positions 3…6 in each declared layout.
std::vector<ProbeItem> StageRope(const Probing& p) {
  std::vector<ProbeItem> items;
  for (RopeLayout layout : p.caps.rope_layouts) {
    const std::string name = fmt::format("RoPE stage pairing ({})", Name(layout));
    const Case c = RopeCase(p, layout, 0);
    if (auto why = WhyUnsupported(p.adapter, c)) {
      items.push_back(NotObservable(name, std::string(Name(layout)), *why));
      continue;
    }
    const Scenario s = MakeProbeScenario(c);
    const std::vector<int> positions = {3, 4, 5, 6};
    const TensorD out = Checked(RunRope(p.adapter, c, s.q, positions, 7));
    std::vector<Rule> rules;
    for (RopeLayout candidate : kAllRopeLayouts) {
      TensorD want = s.q;
      const std::vector<double> theta = reference::BaseFrequencies(c.encoding.rope.base, c.head_dim);
      for (int t = 0; t < s.tq; ++t)
        reference::RotatePairs(candidate, std::span<double>(&want.at(0, 0, t, 0), c.head_dim), c.head_dim, theta,
                               positions[t]);
      rules.push_back({std::string(Name(candidate)), std::string(Name(candidate)), want});
    }
    rules.push_back({"no rotation", "no rotation", s.q});
    items.push_back(Item(name, std::string(Name(layout)), Match(out, rules, Tolerance(s)),
                         CaseLine(c, c.mask) + "; x = q at positions 3…6"));
  }
  return items;
}

}  // namespace

std::vector<ProbeItem> ProbeRope(const Probing& p) {
  if (!Has(p.caps.encodings, EncodingKind::kRope)) {
    return {NotObservable("RoPE", "-", "the adapter accepts no RoPE encoding")};
  }
  if (p.caps.owns_rope) return AttentionRope(p);
  if (p.caps.has_rope_stage) return StageRope(p);
  return {NotObservable("RoPE", "-", "the harness rotates q and k for this adapter (owns_rope false, no rope stage)")};
}

std::vector<ProbeItem> ProbeSoftcap(const Probing& p) {
  const std::string name = "softcap order", declared = "c·tanh(scale·s/c), then mask";
  if (!p.caps.softcap) return {NotObservable("softcap order", "-", "the adapter declares no softcap")};
  Case c = BaseCase(p, 4, 4, VisibilityKind::kCausal);
  c.softcap = 1.5;  // near the scores' size: tanh bends them
  const Scenario s = MakeProbeScenario(c);
  const MaskConvention m = p.caps.masks.front();
  if (auto why = WhyUnsupported(p.adapter, s, m)) return {NotObservable(name, declared, *why)};
  const double cap = c.softcap, scale = c.effective_scale();
  const auto raw = [&s, scale](int h, int i, int j) { return Score(s, h, GroupOf(s, h), i, j) / scale; };
  const auto rule = [&s](std::function<double(int, int, int)> score, bool mask_first) {
    return UnderRule(
        s,
        [&s, score, mask_first](int h, int i, int j) {
          return s.is_visible(0, i, j) ? score(h, i, j) : (mask_first ? score(h, i, j) : -INFINITY);
        },
        [&s](int h) { return GroupOf(s, h); });
  };
  const std::vector<Rule> rules = {
      {"c·tanh(scale·s/c), then mask", "c·tanh(scale·s/c), then mask",
       rule([&](int h, int i, int j) { return cap * std::tanh(scale * raw(h, i, j) / cap); }, false)},
      {"scale·c·tanh(s/c), then mask", "scale·c·tanh(s/c), then mask",
       rule([&](int h, int i, int j) { return scale * cap * std::tanh(raw(h, i, j) / cap); }, false)},
      // an additive −inf mask added before the cap: tanh(−inf) = −1, the blocked key scores −c
      {"mask, then c·tanh(scale·s/c)", "mask, then c·tanh(scale·s/c)",
       rule([&](int h, int i, int j) { return s.is_visible(0, i, j) ? cap * std::tanh(scale * raw(h, i, j) / cap) : -cap; },
            true)},
      {"no softcap", "no softcap", rule([&](int h, int i, int j) { return scale * raw(h, i, j); }, false)}};
  return {Item(name, declared, Match(Checked(RunAttention(p.adapter, s, m)), rules, Tolerance(s)), CaseLine(c, m))};
}

}  // namespace attncheck::probe
