// The influence map (DESIGN §7): which keys each query row actually reads,
// measured by perturbing one key slot at a time and watching which output rows
// change bitwise. Set against the reference visibility it shows leaks (influence
// where the key is not visible) and over-masking (visible, but no influence).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "cases/case.h"
#include "reference/scenario.h"
#include "reference/tensor.h"

namespace attncheck {

// Adds ±magnitude to key slot j of batch row b (k and v, every kv head, every
// dim), rounded to the case dtype. The sign of each element follows a fixed
// pattern; round r + 1 flips every sign of round r, so two rounds cannot both
// cancel out in a kernel's sums.
void PerturbKey(reference::Scenario& s, int b, int j, double magnitude, int round);

// influence [B, Tq, Tk]: 1 when perturbing key slot j (in every batch row at once)
// changes some element of out[b, :, i, :] bitwise. Each key runs once; keys that
// left some row unchanged run again with the signs flipped, and the two are
// OR-ed. `base` is the adapter's unperturbed output [B, Hq, Tq, Dv]. Runs in
// which the adapter breaks the buffer contract count as no influence, and so do
// perturbations that outgrow a fill the kernel adds to the score (not run:
// law_support.h WhyPerturbedFillCannotBlock).
std::vector<uint8_t> MeasureInfluence(Adapter& adapter, const reference::Scenario& s, MaskConvention convention,
                                      const TensorD& base, double magnitude);

struct InfluenceMap {
  int batch = 0, tq = 0, tk = 0;
  std::vector<uint8_t> expected_visibility;  // [B, Tq, Tk] from the reference
  std::vector<uint8_t> influence;            // [B, Tq, Tk] measured
  std::vector<uint8_t> query_valid;          // [B, Tq] real query rows
};

// The influence map of a case's attention call on an adapter: the scenario, a
// convention the adapter accepts, the base run, then MeasureInfluence. nullopt
// with the reason in *why when the adapter cannot run the case, the base run
// breaks the buffer contract, or the case has more than max_keys key slots (each
// costs up to two adapter calls).
std::optional<InfluenceMap> MeasureInfluence(Adapter& adapter, const Case& c, std::string* why, int max_keys = 512);

// The gradient influence map of a case's backward call (the backward-* laws'
// reports): influence[b, i, j] = 1 when an upstream gradient on query row i alone
// (every head, every batch row at once; pad rows too) reaches dk or dv of key slot
// j of batch row b: some element nonzero or NaN. A row may give gradient only to
// keys it can see, so a leak here is a key the backward reads that the forward
// must not. One backward call per query row: nullopt with the reason in *why when
// the adapter has no backward for the case, a run breaks the buffer contract, or
// the case has more than max_queries query rows.
std::optional<InfluenceMap> MeasureGradientInfluence(Adapter& adapter, const Case& c, std::string* why,
                                                     int max_queries = 128);

}  // namespace attncheck
