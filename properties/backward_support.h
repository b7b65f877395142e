// What the backward-* laws share (properties/backward_*.cc): the rows a backward
// law distinguishes, exact-zero and bitwise checks of key and query gradients, and
// the verdict of gradients compared with the reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/harness.h"
#include "properties/error_ratio.h"
#include "properties/tolerance.h"
#include "properties/verdict.h"
#include "reference/backward.h"
#include "reference/scenario.h"

namespace attncheck {

// Whether query (b, i)'s visible keys all lie among query (b, anchor)'s (anchor −1: none).
bool VisibleWithin(const reference::Scenario& s, int b, int i, int anchor);

// The first element of dk or dv at key slot j of batch row b (every kv head, every
// dim) that is not exactly 0, named by tensor.
std::optional<WorstElement> NonZeroKeyGradient(const AdapterRun& run, int b, int j);

// The first element of dk or dv at key slot j of batch row b that differs bitwise
// between the two runs.
std::optional<WorstElement> KeyGradientDifference(const AdapterRun& got, const AdapterRun& want, int b, int j);

// How far two backward runs of an adapter on the same inputs may differ, per element
// of dq, dk and dv. Exact (by value, as below) where it declares backward_deterministic;
// else the rounding of a run-dependent summation order (atomic adds across tiles, as
// FlashAttention-2's dQ): two orders of recursive summation of the same n terms in an
// accumulation of unit roundoff u differ by at most 2(n − 1)·u·Σ|terms| (Higham, Accuracy
// and Stability, §4.2); the kernel's terms are its own rounded ones, so twice that, with
// Σ|terms| from the reference backward by magnitude (reference::Backward, absolute); then
// each run's sum is rounded to the case dtype, which may part them by one unit in the
// last place. A blocked key that really reaches an element moves it far beyond this.
class SummationOrder {
 public:
  SummationOrder() = default;  // exact
  SummationOrder(const Capabilities& caps, const reference::Scenario& s, const TensorD& dout);
  bool exact() const { return !sums_.has_value(); }
  // The bound of tensor[b, h, i, d] ("dq", "dk", "dv") whose two runs answered x and y.
  double Bound(std::string_view tensor, int b, int h, int i, int d, double x, double y) const;

 private:
  std::optional<reference::BackwardResult> sums_;
  Dtype storage_ = Dtype::kF32;
  double unit_ = 0.0;
  int dq_terms_ = 0, key_terms_ = 0;  // keys a dq element sums; queries (of a kv head's group) a dk, dv element sums
};

// The same by value: equal but for the sign of a zero (0·x for a blocked x of either
// sign gives ±0, the same gradient; XLA's masked einsums do), and NaN against NaN;
// beyond `order`'s bound where the adapter's summation order is run-dependent.
std::optional<WorstElement> KeyGradientValueDifference(const AdapterRun& got, const AdapterRun& want, int b, int j,
                                                       const SummationOrder& order = {});
// " (by X, beyond the Y two summation orders may differ by: backward_deterministic is false)"
// for a difference found under a bound; "" for one found by value.
std::string BeyondOrder(const WorstElement& diff);
// The first element of dq row (b, ·, i, ·) whose value differs between a and b, by value as above.
std::optional<WorstElement> DqValueDifference(const TensorD& a, const TensorD& b, int batch_row, int i,
                                              const SummationOrder& order = {});

// A skip when the reference gradient `name` has an element beyond the case dtype's
// range (f16 tops at 65504): no kernel can answer it in that dtype.
std::optional<Verdict> BeyondRange(Oracle& oracle, std::string_view name, std::string_view what);

// A backward law's failure whose worst element is NaN or inf, on a case (the one
// the law ran) with a row that sees no key, from an adapter whose masked-row policy
// allows NaN there (nan, unspecified): that row's NaN softmax spreading into the
// gradients (0 · NaN, pytorch #41508) is behaviour its contract allows — a hazard,
// as in the forward's masked-rows. Any other verdict is returned unchanged.
Verdict NanFromEmptyRowsIsAHazard(Verdict v, const Capabilities& caps, const Case& c);

// `pass` in place of `kept` when it came closer to its bound (ErrorRatio): a law that
// compares several tensors or runs reports the closest as its case's worst element.
void KeepCloser(Verdict& kept, Verdict pass);

// dq, dk and dv of `run` against the oracle (which carries the upstream gradient
// the run had): dq on the rows of dq_rows (empty: every row), dk and dv on every
// key slot; a run with "lse" (Capabilities::backward_lse) also lse on dq's rows,
// which then must see a key. The first failure; else the first skip (an
// uninformative bound); else the pass that came closest to its bound.
Verdict CheckGradients(Oracle& oracle, const AdapterRun& run, const std::vector<uint8_t>& dq_rows,
                       std::string_view what);

}  // namespace attncheck
