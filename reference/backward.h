// The backward pass of attention written as its formulas (DESIGN §6, the backward-*
// laws). For query row i of head h over its visible keys J (the forward of
// reference/attention.h):
//   z_j = scale·q_i·k_j,  s_j = c·tanh(z_j / c) (softcap c > 0, else z_j) + bias_ij
//   P_j = softmax_J(s)_j,  O_i = Σ_j P_j v_j
//   dV_j += P_j dO_i,      dP_j = dO_i·v_j,      δ_i = dO_i·O_i (= Σ_j P_j dP_j)
//   dS_j = P_j (dP_j − δ_i),  dZ_j = dS_j·(1 − tanh²(z_j / c))  (softcap; else dS_j)
//   dQ_i = scale·Σ_j dZ_j k_j,  dK_j += scale·dZ_j q_i
// With GQA, dK and dV of kv head ⌊h / (Hq/Hkv)⌋ sum over its query heads. A row with
// no visible key has dQ = 0 and adds nothing to dK or dV.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cases/accuracy.h"
#include "reference/scenario.h"
#include "reference/tensor.h"

namespace attncheck::reference {

struct BackwardResult {
  TensorD dq;  // [B, Hq, Tq, D]
  TensorD dk;  // [B, Hkv, Tk, D]
  TensorD dv;  // [B, Hkv, Tk, Dv]
  // [B, Hq, Tq, 1]: the forward's log-sum-exp log Σ_j exp(s_j) over the row's visible
  // keys (−inf for a row with none), from the scores as the model computes them
  TensorD lse;
};

// How a same-dtype model rounds: O and the gradients to `storage`, the
// intermediates P, dP and dS to `storage` where `intermediates_stored` (a kernel
// that keeps P in the input dtype for its matmuls, as FlashAttention does) and to
// `accumulation` otherwise, every running sum to `accumulation`.
struct BackwardRounding {
  Dtype storage = Dtype::kF32;
  Dtype accumulation = Dtype::kF32;
  bool intermediates_stored = false;
  bool scores_stored = false;  // S rounded to `storage` once biased (scores declared in the input dtype)
};

// The formulas above on q, k already encoded: q [B,Hq,Tq,D], k [B,Hkv,Tk,D],
// v [B,Hkv,Tk,Dv], visible [B,Tq,Tk], bias [B,Hq,Tq,Tk] or nullptr, dout
// [B,Hq,Tq,Dv]. Exact in double without `rounding` (the oracle). With `absolute`,
// every term enters by its magnitude (|P|, |dO|·|v|, |k|, …): the sums a rounding
// error of the computation is proportional to (the tolerance model's floor); with
// `unit_derivative` too, softcap's derivative 1 − tanh² enters as 1 (the sums an
// absolute error of that derivative is proportional to: computed from a rounded
// tanh it has one of a few units of roundoff, whatever its own size); with
// `unit_probability` too, every visible key's P enters as 1 (the sums an absolute
// error of P is proportional to: a P below the smallest normal, flushed to 0 where
// the CPU flushes subnormals, is off by up to that normal, times its multipliers).
BackwardResult BackwardCore(const TensorD& q, const TensorD& k, const TensorD& v, const std::vector<uint8_t>& visible,
                            const TensorD* bias, double scale, double softcap, const TensorD& dout,
                            const std::optional<BackwardRounding>& rounding = std::nullopt, bool absolute = false,
                            bool unit_derivative = false, bool unit_probability = false);

// Of a scenario: q and k encoded by the reference, its score bias, its visibility.
// With `rounding`, q, k, v and a score bias are what a kernel of that dtype is
// handed (rounded to the storage dtype: the harness folds a bias into an additive
// mask of the case dtype).
BackwardResult Backward(const Scenario& s, const TensorD& dout,
                        const std::optional<BackwardRounding>& rounding = std::nullopt, bool absolute = false,
                        bool unit_derivative = false, bool unit_probability = false);

// The rounding of the naive model of a declared accuracy: storage in the case
// dtype, sums in the declared P·V accumulation dtype, intermediates stored where P
// is declared in the input dtype, scores stored where they are declared in it.
BackwardRounding DeclaredBackwardRounding(Dtype dtype, const Accuracy& accuracy);

// Upstream gradient profiles: never all ones (ggml's sum(out) loss has an exactly
// zero softmax gradient, so a wrong softmax backward passes it).
enum class UpstreamProfile {
  kUniform,   // every element uniform in [−1, 1]
  kSparse,    // one row in four nonzero, the rest exactly 0
  kOneRow,    // a single query row of each (batch, head) nonzero
  kLarge,     // uniform in [−64, 64]
};
inline constexpr UpstreamProfile kUpstreamProfiles[] = {UpstreamProfile::kUniform, UpstreamProfile::kSparse,
                                                        UpstreamProfile::kOneRow, UpstreamProfile::kLarge};

// dO [B, Hq, Tq, Dv] for the scenario, a function of (seed, profile) only, its
// values representable in the case dtype; rows of pad queries are 0 unless
// `pad_rows` (a training loss that forgot to mask them).
TensorD UpstreamGradient(const Scenario& s, uint64_t seed, UpstreamProfile profile, bool pad_rows = false);

}  // namespace attncheck::reference
