// Naive attention, templated on the scalar type (DESIGN §4). Attention<double>
// is the oracle; with float, Eigen::half or Eigen::bfloat16 every intermediate is
// rounded to that type after each operation, giving the naive same-dtype model
// that sets tolerances (DESIGN §6).
//   S_ij = scale · q_i·k_j  (softcap: c·tanh(S/c)) + bias_ij, blocked where !V_ij
//   P_ij = exp(S_ij − max_j S) / Σ_j exp(...),  out_i = Σ_j P_ij v_j
// A row with no visible key has out = 0, lse = −inf and is flagged in empty_row.
#pragma once

#include <memory>
#include <vector>

#include "reference/scenario.h"
#include "reference/tensor.h"

namespace attncheck::reference {

struct AttentionResult {
  TensorD out;                   // [B, Hq, Tq, Dv]
  std::vector<double> lse;       // [B, Hq, Tq] natural log-sum-exp of the scores
  std::vector<uint8_t> empty_row;  // [B, Tq]
};

// Core: q, k already encoded. q [B,Hq,Tq,D], k [B,Hkv,Tk,D], v [B,Hkv,Tk,Dv];
// visible [B,Tq,Tk]; bias [B,Hq,Tq,Tk] or nullptr; kv head of query head h is
// h / (Hq / Hkv).
template <class T>
AttentionResult AttentionCore(const TensorD& q, const TensorD& k, const TensorD& v,
                              const std::vector<uint8_t>& visible, const TensorD* bias,
                              double scale, double softcap);

// Full pipeline of a scenario: positional stage on q and k (in double, then
// rounded to T), bias, core in T.
template <class T>
AttentionResult Attention(const Scenario& s);

// The same-dtype model selected by the case's dtype (f32 → float, f16 → half, bf16 → bfloat16).
AttentionResult NaiveSameDtype(const Scenario& s);

// Encoded q and k (double) of a scenario, as the harness hands them to an adapter
// that does not own the positional stage.
void EncodeQk(const Scenario& s, TensorD& q, TensorD& k);
// Score bias tensor [B, Hq, Tq, Tk] of a scenario (zeros when the encoding has none).
TensorD BiasTensor(const Scenario& s);
// The same tensor without a copy: the scenario's cache (shared by its copies).
std::shared_ptr<const TensorD> SharedBiasTensor(const Scenario& s);

// One attention row of the oracle: P[b, h, i, j] over the Tk keys (0 where not
// visible; all 0 for an empty row). For printing and reports.
std::vector<double> AttentionProbabilities(const Scenario& s, int b, int h, int i);
// The same row from q and k already encoded (and bias, as AttentionCore takes them).
std::vector<double> ProbabilityRow(const TensorD& q, const TensorD& k, const std::vector<uint8_t>& visible,
                                   const TensorD* bias, double scale, double softcap, int b, int h, int i);

}  // namespace attncheck::reference
