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
// collapses to 0. Oracle below is the model's only interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "properties/verdict.h"
#include "reference/scenario.h"

namespace attncheck {

double UnitRoundoff(Dtype dtype);

// Rows that are real queries with at least one visible key [B·Tq].
std::vector<uint8_t> RealNonEmptyRows(const reference::Scenario& s);

// The tolerance model of one scenario, computed on first use: metamorphic laws
// usually see bitwise-equal outputs and then never need the oracle, and an output
// within the floor never needs the naive model. Works on a named tensor of the
// scenario (kOutput, "out" [B, Hq, Tq, Dv], today); the verdict's worst element
// names it. Rows: row_mask[b·Tq + i] != 0 selects query row i of batch row b; an
// empty mask selects every row. The scenario must outlive the oracle.
class Oracle {
 public:
  static constexpr std::string_view kOutput = "out";

  Oracle(const reference::Scenario& s, const Options& options);
  ~Oracle();
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  // `got` against the oracle: NaN/inf first, then |got − want| ≤ bound. The
  // verdict (a pass too) reports its worst element against the full bound.
  Verdict Check(const TensorD& got, const std::vector<uint8_t>& row_mask, std::string_view what,
                std::string_view tensor = kOutput);
  // Check's outcome for a caller that keeps only a failing verdict: an output
  // within the floor passes without running the naive model (that pass reports its
  // worst element against the floor); any other verdict is Check's.
  Verdict CheckOutcome(const TensorD& got, const std::vector<uint8_t>& row_mask, std::string_view what,
                       std::string_view tensor = kOutput);
  // The adapter against itself (metamorphic laws): |a − b| ≤ 2·bound, both sides
  // may carry their own rounding. Selected rows bitwise equal pass without
  // computing anything.
  Verdict CheckSelf(const TensorD& a, const TensorD& b, const std::vector<uint8_t>& row_mask, std::string_view what,
                    std::string_view tensor = kOutput);

  // Report data (row_error.h): per-row error of Check's and of CheckSelf's comparison.
  RowErrors MeasureRows(const TensorD& got, const std::vector<uint8_t>& row_mask, std::string_view what,
                        std::string_view tensor = kOutput);
  RowErrors MeasureSelfRows(const TensorD& a, const TensorD& b, const std::vector<uint8_t>& row_mask,
                            std::string_view what, std::string_view tensor = kOutput);

  // The model's numbers, element by element: want = oracle, floor, and bound =
  // k·|naive − oracle| + floor (the first two do not run the naive model).
  const TensorD& Want(std::string_view tensor = kOutput);
  const TensorD& Floor(std::string_view tensor = kOutput);
  const TensorD& Bound(std::string_view tensor = kOutput);
  // What has been computed so far (the fast paths promise not to).
  bool oracle_computed() const;
  bool naive_computed() const;

 private:
  struct Model;
  Model& Of(std::string_view tensor);
  Model& WithFloor(std::string_view tensor);
  Model& WithBound(std::string_view tensor);

  const reference::Scenario& scenario_;
  Options options_;
  std::unique_ptr<Model> output_;
};

}  // namespace attncheck
