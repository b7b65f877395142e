// The influence map: perturb one key slot at a time, record which query rows
// change (see influence.h).
#include "properties/influence.h"

#include <fmt/format.h>

#include "adapters/harness.h"
#include "properties/law_support.h"
#include "reference/backward.h"
#include "reference/data.h"

namespace attncheck {
namespace {

// The map of a scenario before anything is measured: its shape, visibility and real rows.
InfluenceMap EmptyMap(const reference::Scenario& s) {
  InfluenceMap map;
  map.batch = s.batch;
  map.tq = s.tq;
  map.tk = s.tk;
  map.expected_visibility = s.visible;
  map.query_valid = s.query_valid;
  return map;
}

}  // namespace

void PerturbKey(reference::Scenario& s, int b, int j, double magnitude, int round) {
  for (int h = 0; h < s.k.shape[1]; ++h) {
    double* key = s.k.data.data() + (static_cast<size_t>(b) * s.k.shape[1] + h) * s.k.shape[2] * s.k.shape[3] +
                  static_cast<size_t>(j) * s.k.shape[3];  // k[b, h, j, ·]
    for (int d = 0; d < s.k.shape[3]; ++d) {
      const double sign = ((j * 31 + d * 17 + h * 7 + round) & 1) ? 1.0 : -1.0;
      key[d] = reference::RoundTo(s.c.dtype, key[d] + sign * magnitude);
    }
    double* value = s.v.data.data() + (static_cast<size_t>(b) * s.v.shape[1] + h) * s.v.shape[2] * s.v.shape[3] +
                    static_cast<size_t>(j) * s.v.shape[3];  // v[b, h, j, ·]
    for (int d = 0; d < s.v.shape[3]; ++d) {
      const double sign = ((j * 13 + d * 29 + h * 5 + round) & 1) ? -1.0 : 1.0;
      value[d] = reference::RoundTo(s.c.dtype, value[d] + sign * magnitude);
    }
  }
}

std::vector<uint8_t> MeasureInfluence(Adapter& adapter, const reference::Scenario& s, MaskConvention convention,
                                      const TensorD& base, double magnitude) {
  std::vector<uint8_t> influence(s.visible.size(), 0);
  for (int j = 0; j < s.tk; ++j) {
    bool all_changed = false;
    for (int round = 0; round < 2 && !all_changed; ++round) {
      reference::Scenario perturbed = s;
      for (int b = 0; b < s.batch; ++b) PerturbKey(perturbed, b, j, magnitude, round);
      if (WhyPerturbedFillCannotBlock(adapter, perturbed, convention)) continue;  // a change would prove nothing
      const AdapterRun run = RunAttention(adapter, perturbed, convention);
      if (!run.ok()) continue;
      all_changed = true;
      for (int b = 0; b < s.batch; ++b)
        for (int i = 0; i < s.tq; ++i) {
          uint8_t& cell = influence[RowIndex(s, b, i) * s.tk + j];
          if (!cell && FirstBitwiseDifference(run.out, base, b, i)) cell = 1;
          if (!cell) all_changed = false;
        }
    }
  }
  return influence;
}

std::optional<InfluenceMap> MeasureInfluence(Adapter& adapter, const Case& c, std::string* why, int max_keys) {
  auto fail = [&](std::string reason) -> std::optional<InfluenceMap> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (std::optional<std::string> reason = WhyUnsupported(adapter, c)) return fail(*reason);
  const reference::Scenario s = reference::MakeScenario(c);
  if (s.tk > max_keys) return fail(fmt::format("{} key slots (the influence map measures at most {})", s.tk, max_keys));
  std::string reason;
  const std::optional<MaskConvention> convention = ChooseConvention(adapter, s, &reason);
  if (!convention) return fail(reason);
  const AdapterRun base = RunAttention(adapter, s, *convention);
  if (!base.ok()) return fail("the unperturbed run broke the buffer contract: " + base.fault);
  InfluenceMap map = EmptyMap(s);
  map.influence = MeasureInfluence(adapter, s, *convention, base.out, PerturbationMagnitude(s, *convention));
  return map;
}

std::optional<InfluenceMap> MeasureGradientInfluence(Adapter& adapter, const Case& c, std::string* why,
                                                     int max_queries) {
  auto fail = [&](std::string reason) -> std::optional<InfluenceMap> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const reference::Scenario s = reference::MakeScenario(c);
  if (s.tq > max_queries) {
    return fail(fmt::format("{} query rows (the gradient influence map measures at most {})", s.tq, max_queries));
  }
  std::string reason;
  const std::optional<MaskConvention> convention = ChooseBackwardConvention(adapter, s, &reason);
  if (!convention) return fail(reason);
  const TensorD full = reference::UpstreamGradient(s, c.seed, reference::UpstreamProfile::kUniform, /*pad_rows=*/true);
  InfluenceMap map = EmptyMap(s);
  map.influence.assign(s.visible.size(), 0);
  for (int i = 0; i < s.tq; ++i) {
    TensorD dout = full;  // dO on row i alone
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < dout.shape[1]; ++h)
        for (int r = 0; r < s.tq; ++r)
          if (r != i)
            for (int d = 0; d < dout.shape[3]; ++d) dout.at(b, h, r, d) = 0.0;
    const AdapterRun run = RunBackward(adapter, s, dout, *convention);
    if (!run.ok()) return fail(fmt::format("the backward with dO on query row {} alone: {}", i, run.fault));
    for (int b = 0; b < s.batch; ++b)
      for (int j = 0; j < s.tk; ++j) {
        bool reached = false;
        for (const TensorD* t : {&run.dk, &run.dv})
          for (int h = 0; h < t->shape[1] && !reached; ++h)
            for (int d = 0; d < t->shape[3] && !reached; ++d) reached = !(t->at(b, h, j, d) == 0.0);
        map.influence[RowIndex(s, b, i) * s.tk + j] = reached ? 1 : 0;
      }
  }
  return map;
}

}  // namespace attncheck
