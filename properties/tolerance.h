// Tolerances of DESIGN §6. For adapter output o, oracle r (double) and the naive
// same-dtype model n, an element passes when |o − r| ≤ k·|n − r| + floor, where
// the floor is the rounding noise no implementation in that dtype can avoid at
// that magnitude (the naive model's own error can cancel by luck, so it is not
// enough alone):
//   floor = max|v|·(4u + 2·√n·u32)          output rounding; a sum of n weighted values
//         + 2·max|v|·δs                      a score error δs moves softmax weights by ≤ 2δs
//   δs    = |q_i|·max|k_j|·scale·((2√D + 4)·u32          dot product accumulated in float
//                                  + 4u      (q/k encoding)  encoded q, k rounded to the dtype
//                                  + 4·2^−24·(p + 1) (RoPE)) angles p·θ computed in float
// u = unit roundoff of the case dtype (f32 2^−24, f16 2^−11, bf16 2^−8), u32 = 2^−24,
// n = number of visible keys, p = largest position in the row. The floor never
// collapses to 0.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "properties/verdict.h"
#include "reference/attention.h"
#include "reference/scenario.h"

namespace attncheck {

double UnitRoundoff(Dtype dtype);

// Per-element bounds [B, Hq, Tq, Dv] for a scenario's outputs.
struct Bounds {
  TensorD bound;  // element bound
  TensorD want;   // oracle
};
Bounds ComputeBounds(const reference::Scenario& s, const Options& options);

// Compares `got` [B, Hq, Tq, Dv] with the oracle inside `bounds`, over query rows
// with row_mask[b·Tq + i] != 0 (empty mask = every non-empty row). NaN/inf first,
// then the metric. `what` names the comparison in the message.
Verdict CompareWithBounds(const TensorD& got, const Bounds& bounds, const std::vector<uint8_t>& row_mask,
                          std::string_view what);

// The outcome of CompareWithBounds(got, ComputeBounds(s, options), row_mask, what)
// for a caller that keeps only a failing verdict: an output within the floor is
// passed without running the naive same-dtype model (the pass verdict's worst and
// bound are then measured against the floor); otherwise the full comparison's
// verdict, identical to CompareWithBounds.
Verdict CompareWithOracleOutcome(const TensorD& got, const reference::Scenario& s, const Options& options,
                                 const std::vector<uint8_t>& row_mask, std::string_view what);

// The floor alone (bound = floor, want = oracle; the naive model is not run), and
// the full bounds from it: bound = k·|naive − oracle| + floor, the same numbers
// ComputeBounds gives, paying only for the naive model.
Bounds ComputeFloorBounds(const reference::Scenario& s, const Options& options);
Bounds AddNaiveError(const reference::Scenario& s, const Options& options, const Bounds& floor);

// Bounds computed on first use: metamorphic laws usually see bitwise-equal
// outputs and then never need the oracle. floor() computes the oracle and floor
// only; a later get() then adds the naive model's error without redoing them.
class LazyBounds {
 public:
  LazyBounds(const reference::Scenario& s, const Options& options) : scenario_(s), options_(options) {}
  const Bounds& get() {
    if (!bounds_) bounds_ = floor_ ? AddNaiveError(scenario_, options_, *floor_) : ComputeBounds(scenario_, options_);
    return *bounds_;
  }
  const Bounds& floor() {
    if (!floor_) floor_ = ComputeFloorBounds(scenario_, options_);
    return *floor_;
  }

 private:
  const reference::Scenario& scenario_;
  Options options_;
  std::optional<Bounds> floor_;
  std::optional<Bounds> bounds_;
};

// CompareWithOracleOutcome on shared lazy bounds (same outcome; the oracle and
// floor are computed once for this and any later comparison on `bounds`).
Verdict CompareWithOracleOutcome(const TensorD& got, LazyBounds& bounds, const Options& options,
                                 const std::vector<uint8_t>& row_mask, std::string_view what);

// Adapter against itself (metamorphic laws): |a − b| ≤ 2·bound (both sides may
// carry their own rounding). Same row selection rules; selected rows that are
// bitwise equal pass without computing the bounds.
Verdict CompareSelf(const TensorD& a, const TensorD& b, LazyBounds& bounds,
                    const std::vector<uint8_t>& row_mask, std::string_view what);

// Rows that are real queries with at least one visible key [B·Tq].
std::vector<uint8_t> RealNonEmptyRows(const reference::Scenario& s);

}  // namespace attncheck
