// Tolerances of DESIGN §6. For adapter output o, oracle r (double) and the naive
// model n of the adapter's declared accuracy (Options::accuracy,
// reference/declared_attention.h), a query row (b, h, i) passes when
//   max_d |o − r| ≤ k·max_d |n − r| + floor
// (FlashAttention's tests compare worst errors so: one element where the naive
// model rounds close to the oracle by luck does not make the bound tight by luck).
// The floor is the rounding noise no implementation of that accuracy can avoid:
//   floor = max|v|·(4u + 2·√n·u_pv)             output rounding; a sum of n weighted values
//         + 2·max|v|·δs                          a score error δs moves softmax weights by ≤ 2δs
//           (where the floor so reaches kUninformative·max|v|, the smaller of that and
//           ScoreErrorEffect's (e^2δs − 1)·max_d Σ_j P_j·|v_jd − O_d|, from the row's P)
//   δs    = |q_i|·max|k_j|·scale·((2√D + 4)·u_s     dot product accumulated in the declared dtype
//                                  + 2u + 4u32    (q/k encoded by the adapter) its rounding of q, k
//                                  + 4·2^−24·(p + 1) (RoPE by the adapter)) angles p·θ in float
//                                                    (not where both runs share them: SharedAngles)
//           + 2u·(|q_i|·max|k_j|·scale + max|bias|)  (S kept in the input dtype) S rounded twice
// u = unit roundoff of the case dtype (f32 2^−24, f16 2^−11, bf16 2^−8), u_s, u_pv
// those of the declared accumulations, n = visible keys, p = largest position.
// A bound of kUninformative·max|v| or more (max over the row's visible values)
// cannot tell a right row from a zeroed, constant or stale one: such a row is never
// a pass, the comparison is a skip that says so. Oracle below is the model's only interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "cases/capabilities.h"
#include "properties/verdict.h"
#include "reference/scenario.h"

namespace attncheck {

// A row bound at or above this fraction of the row's largest |v| is uninformative.
inline constexpr double kUninformative = 1.0 / 4.0;

// `options` with the accuracy and encoding stage an adapter declares (RunLaw uses it).
Options DeclaredOptions(const Capabilities& caps, Options options = {});

// `options` for CheckSelf between two runs that hand the adapter every token at the same
// logical position through the same call (left-padding, packed-isolation, mask
// conventions, GQA): an adapter that encodes computes the same float angle p·θ on
// both sides, so its angle error, up to 4·2^−24·(p + 1) per unit of score and the
// largest term at long positions, cancels instead of being charged twice. Also
// decode-consistency's over a cache the caller owns, or through a session declared
// Capabilities::session_rope_as_call; not another session (it may encode its cache
// on another path), nor rope-relative (positions shifted). A kernel whose angles
// depend on the layout then fails where its error reaches the output: the laws test
// layout invariance.
Options SharedAngles(Options options);

// How far scores each off by at most `delta` can move output row (b, h, i): from the
// row's own softmax (q, k encoded, bias as reference::AttentionCore takes them),
// (e^2δ − 1)·max_d Σ_j P_j·|v_jd − O_d|. A row whose weight sits on keys with like
// values (a near one-hot softmax: large logits) moves far less than the floor's
// first-order 2δ·max|v|, which the floor then takes in its place. Infinite where the
// row's weights do not sum to 1 (no visible key, or scores that overflow).
double ScoreErrorEffect(const reference::Scenario& s, const TensorD& encoded_q, const TensorD& encoded_k,
                        const TensorD* bias, int b, int h, int i, double delta);

// Rows that are real queries with at least one visible key [B·Tq].
std::vector<uint8_t> RealNonEmptyRows(const reference::Scenario& s);

// Whether a and b [B, Hq, Tq, Dv] are bitwise equal on the rows row_mask selects
// (every row when it is empty); CheckSelf passes such outputs without a model.
bool BitwiseEqualRows(const TensorD& a, const TensorD& b, const std::vector<uint8_t>& row_mask);

// The tolerance model of one scenario, computed on first use: metamorphic laws
// usually see bitwise-equal outputs and then never need the oracle, and an output
// within the floor never needs the naive model. Works on a named tensor of the
// scenario (kOutput, "out" [B, Hq, Tq, Dv], today); the verdict's worst element
// names it; with an upstream gradient also "dq", "dk", "dv" (the backward call).
// Rows: row_mask[b·Tq + i] != 0 selects query row i of batch row b (for dk and dv,
// key slot i: b·Tk + i); an empty mask selects every row. The scenario must
// outlive the oracle.
class Oracle {
 public:
  static constexpr std::string_view kOutput = "out";

  Oracle(const reference::Scenario& s, const Options& options);
  // With the upstream gradient dout [B, Hq, Tq, Dv] of a backward call: the tensors
  // "dq" [B, Hq, Tq, D], "dk" [B, Hkv, Tk, D] and "dv" [B, Hkv, Tk, Dv] have models
  // too (reference/backward.h). Their rows: query rows for dq, key slots [B·Tk] for
  // dk and dv; floor = ε·max_d A + 2u·max_d |oracle| over the row (the gradient
  // rounded to the dtype), A the magnitude sums of the backward's formulas (every
  // term by its absolute value) and
  //   ε = u + 4u_mid + 2√n·u_acc + 2·δs   (O stored in the dtype for δ = dO·O; P, dP,
  //       dS rounded in u_mid: the dtype's where P is declared in the input dtype, else
  //       the accumulation's; sums of n terms; P moved by 2δs by a score error δs),
  // n the longest sum (Tk, Tq·Hq/Hkv, D, Dv), δs the forward's score error at the
  // case's largest |q|·|k|·scale; with softcap, + 4·u_acc·max_d A₁ (A₁: A with the
  // derivative 1 − tanh² taken as 1, which a rounded tanh knows only to 4·u_acc
  // absolutely), + the smallest normal of the dtype and n of the accumulation's
  // (underflow, subnormals flushed included), + that normal of the accumulation times
  // max_d A_P (A with every visible P taken as 1: a P flushed to 0 times what multiplies
  // it); δs also counts P = exp(S − lse) rounded with |S| and |lse|
  // (4·u_acc·(max|S| + log Tk)); bound = k·max_d|naive − oracle| + floor, the naive
  // model rounding as the declared accuracy says (reference/backward.h); a row's
  // magnitude is max_d |oracle|. A gradient's rows cancel often (Σ_j dS_ij = 0), so
  // up to a quarter of its compared rows may be uninformative and are left out of a
  // pass (never passed themselves; more, or all, make it a skip). A gradient row whose
  // right values all lie below the dtype's smallest normal (f16 2^−14) is informative
  // whatever its bound: the floor lets a CPU flush it, so 0 is a right answer there.
  // "lse" [B, Hq, Tq, 1] (Capabilities::backward_lse), rows as dq's: floor = bound =
  // δs + u·max|bias| + 6·u_acc·|lse| + 4·u_acc·log Tk (no naive model), its magnitude
  // max(|lse|, 1) (a log: an error δ scales the P recomputed from it by e^δ). dout must
  // outlive the oracle.
  Oracle(const reference::Scenario& s, const Options& options, const TensorD& dout);
  ~Oracle();
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  // `got` against the oracle: NaN/inf first, then |got − want| ≤ bound; a skip
  // when a selected row's bound is uninformative and nothing failed. The verdict
  // (a pass too) reports its worst element against the full bound.
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
  // k·max_d|naive − oracle| + floor of the element's row (the first two do not
  // run the naive model); Magnitude: max |v| over each row's visible values [B, Hq, Tq].
  const TensorD& Want(std::string_view tensor = kOutput);
  const TensorD& Floor(std::string_view tensor = kOutput);
  const TensorD& Bound(std::string_view tensor = kOutput);
  const std::vector<double>& Magnitude(std::string_view tensor = kOutput);
  // What has been computed so far (the fast paths promise not to).
  const reference::Scenario& scenario() const { return scenario_; }
  bool oracle_computed() const;
  bool naive_computed() const;

 private:
  struct Model;
  Model& Of(std::string_view tensor);
  Model& WithFloor(std::string_view tensor);
  Model& WithWant(std::string_view tensor);
  Model& WithBound(std::string_view tensor);

  const reference::Scenario& scenario_;
  Options options_;
  const TensorD* dout_ = nullptr;
  std::unique_ptr<Model> output_;
  std::unique_ptr<Model> gradients_[4];  // dq, dk, dv, lse (all made on the first use of one)
  void MakeGradientModels();
};

}  // namespace attncheck
