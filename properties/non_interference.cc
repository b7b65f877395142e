// Law 1, non-interference (future-token leakage, generalised; DESIGN §6): for a
// query row i, perturbing any key/value j that the reference says i cannot see
// leaves out[i] bitwise unchanged. Covers causal, padding, document, prefix-LM,
// window and chunk leaks, and leaks across batch rows.
//
// Each round picks one anchor query per batch row, perturbs every key the anchor
// cannot see (large finite values), and checks every row whose visible set misses
// the perturbed keys. On failure, per-key runs measure the influence map
// (properties/influence.h) so the report can name the leaking keys; above
// kInfluenceMapMaxKeys key slots (the size tier) only a sample of the failing
// row's hidden keys is tried, one at a time, and the report has no map.
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <vector>

#include "properties/influence.h"
#include "properties/law_run.h"
#include "properties/law_support.h"
#include "reference/data.h"

namespace attncheck {
namespace {

using reference::Scenario;

// The influence map costs up to two adapter calls per key slot; a large case
// tries at most kSampledKeys of the failing row's hidden keys, evenly spread.
constexpr int kInfluenceMapMaxKeys = 128;
constexpr size_t kSampledKeys = 32;

// Hidden keys of query (b, i) that change out[b, :, i, :] bitwise when perturbed
// alone, among an even sample of at most kSampledKeys of them (*tried: how many).
std::vector<int> SampledLeaks(Adapter& adapter, const Scenario& s, MaskConvention convention, const TensorD& base,
                              double magnitude, int b, int i, size_t* tried) {
  std::vector<int> hidden;
  for (int j = 0; j < s.tk; ++j)
    if (!s.is_visible(b, i, j)) hidden.push_back(j);
  const size_t step = std::max<size_t>(1, (hidden.size() + kSampledKeys - 1) / kSampledKeys);
  std::vector<int> leaking;
  *tried = 0;
  for (size_t n = 0; n < hidden.size(); n += step) {
    Scenario perturbed = s;
    PerturbKey(perturbed, b, hidden[n], magnitude, 0);
    if (WhyPerturbedFillCannotBlock(adapter, perturbed, convention)) continue;  // no test of the key
    ++*tried;
    const AdapterRun run = RunAttention(adapter, perturbed, convention);
    if (run.ok() && FirstBitwiseDifference(run.out, base, b, i)) leaking.push_back(hidden[n]);
  }
  return leaking;
}

bool SeesAny(const Scenario& s, int b, int i, const uint8_t* perturbed_row) {
  for (int j = 0; j < s.tk; ++j)
    if (perturbed_row[j] && s.is_visible(b, i, j)) return true;
  return false;
}

}  // namespace

Verdict check_non_interference(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_non_interference, adapter);
  if (!law.Open(c)) return law.stop();
  const Scenario& s = law.scenario();
  const AdapterRun& base = law.base();
  const MaskConvention convention = law.convention();
  const double magnitude = PerturbationMagnitude(s, convention);
  const std::vector<double> limits = ScoreSafeLimits(s, adapter.capabilities().accuracy);

  std::vector<std::vector<int>> anchors(s.batch);
  size_t rounds = 0;
  for (int b = 0; b < s.batch; ++b) {
    anchors[b] = DistinctVisibleRows(s, b);
    rounds = std::max(rounds, anchors[b].size());
  }
  rounds = std::min<size_t>(std::max<size_t>(rounds, 1), static_cast<size_t>(options.perturbations) + 2);

  Scenario perturbed = s;  // each round resets its k and v from s
  std::vector<uint8_t> perturbed_keys;
  for (size_t round = 0; round < rounds; ++round) {
    if (round > 0) {
      perturbed.k.data.assign(s.k.data.begin(), s.k.data.end());
      perturbed.v.data.assign(s.v.data.begin(), s.v.data.end());
    }
    perturbed_keys.assign(static_cast<size_t>(s.batch) * s.tk, 0);
    for (int b = 0; b < s.batch; ++b) {
      const int anchor = AnchorFor(anchors[b], static_cast<int>(round), c.seed);
      for (int j = 0; j < s.tk; ++j)
        if (anchor < 0 || !s.is_visible(b, anchor, j)) perturbed_keys[static_cast<size_t>(b) * s.tk + j] = 1;
    }
    const double moved = ScoreSafeMagnitude(limits, perturbed_keys, magnitude);
    for (int b = 0; b < s.batch; ++b)
      for (int j = 0; j < s.tk; ++j)
        if (perturbed_keys[static_cast<size_t>(b) * s.tk + j]) PerturbKey(perturbed, b, j, moved, static_cast<int>(round));
    const std::optional<AdapterRun> run = law.AttendPerturbed(perturbed);
    if (!run) return law.stop();
    for (int b = 0; b < s.batch; ++b) {
      const uint8_t* row_keys = perturbed_keys.data() + static_cast<size_t>(b) * s.tk;
      for (int i = 0; i < s.tq; ++i) {
        if (s.empty_row[RowIndex(s, b, i)] || SeesAny(s, b, i, row_keys)) continue;
        const std::optional<WorstElement> diff = FirstBitwiseDifference(run->out, base.out, b, i);
        if (!diff) continue;
        std::vector<uint8_t> influence;
        std::vector<int> leaking;
        std::string sampled;
        if (s.tk <= kInfluenceMapMaxKeys) {
          influence = MeasureInfluence(adapter, s, convention, base.out, magnitude);
          for (int j = 0; j < s.tk; ++j)
            if (influence[RowIndex(s, b, i) * s.tk + j] && !s.is_visible(b, i, j)) leaking.push_back(j);
        } else {
          size_t tried = 0;
          leaking = SampledLeaks(adapter, s, convention, base.out, magnitude, b, i, &tried);
          sampled = fmt::format(" (sampled: {} of the keys it cannot see, one at a time; no influence map above {} "
                                "key slots)", tried, kInfluenceMapMaxKeys);
        }
        WorstElement worst = *diff;
        if (!leaking.empty()) worst.key = leaking.front();
        Verdict v = Verdict::Fail(
            fmt::format("query (b={}, i={}, position {}) changed when keys it cannot see were perturbed by ±{:g}: "
                        "out[h={}, d={}] = {:.9g}, was {:.9g}; leaking keys (slots): [{}]{}",
                        b, i, s.query_positions[RowIndex(s, b, i)], moved, diff->h, diff->j, diff->got,
                        diff->want, fmt::join(leaking, ", "), sampled),
            worst, diff->error, 0.0, diff->error / std::max(std::abs(diff->want), 1e-30));
        v.At("blocked keys perturbed", Role::kLeak);
        v.expected_visibility = s.visible;
        v.influence = std::move(influence);
        return v;
      }
    }
  }
  Verdict pass;
  if (options.influence_map) {
    pass.expected_visibility = s.visible;
    pass.influence = MeasureInfluence(adapter, s, convention, base.out, magnitude);
  }
  return pass;
}

}  // namespace attncheck
