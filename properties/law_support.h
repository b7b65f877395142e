// What several laws share: choosing a mask convention that can express a derived
// scenario, turning a broken buffer contract into a verdict, and copying token
// data between scenarios that describe the same tokens in different layouts.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "adapters/adapter.h"
#include "adapters/harness.h"
#include "properties/verdict.h"
#include "reference/scenario.h"

namespace attncheck {

// The case's own convention when it can express the scenario, else the first
// accepted convention that can; nullopt (with the reason in *why) when none can.
std::optional<MaskConvention> ChooseConvention(const Adapter& adapter, const reference::Scenario& s,
                                               std::string* why);

// The convention of a cached-decode session in `steps`: `preferred` (the base
// run's) when every step can be handed over in it, else the first accepted
// convention that can (a causal flag keeps its own rule in each step; see
// include/attncheck/adapter.h); nullopt with the reason in *why when none can.
std::optional<MaskConvention> ChooseSessionConvention(const Adapter& adapter, const reference::Scenario& s,
                                                      std::span<const int> steps, MaskConvention preferred,
                                                      std::string* why);

// Verdict for a faulty adapter run: a broken buffer contract fails the law
// (memory safety); an adapter that threw, crashed, hung or answered garbage gets
// an error verdict with that classification (exit code 3, not a law failure); a
// kernel that refused the case (CaseRefused) gets a skip, "refused: <reason>".
Verdict FaultVerdict(const AdapterRun& run, std::string_view what);

// Copies the token data of key slot `from_slot` of row `from_b` in `from` into key
// slot `to_slot` of row `to_b` in `to` (k and v, every kv head), and the query
// data when both slots are query slots.
void CopyToken(const reference::Scenario& from, int from_b, int from_slot, reference::Scenario& to, int to_b,
               int to_slot);

// A large finite perturbation for keys and values that keeps every score far from
// the case's additive fill (so a correct kernel with a finite fill still blocks it).
double PerturbationMagnitude(const reference::Scenario& s);

// Whether the convention's fill leaves a row with no visible key under the contract
// (a bool mask, a flag, −inf, or a finite fill where the kernel blocks by "fill" or
// "fill-rows").
bool FillEmptiesRows(MaskConvention m, Dtype dtype, Blocking blocking);
// Whether the convention's fill blocks a key whatever its score under the contract
// (not under "neg-inf" or "fill-rows", where a finite fill is added to the score).
bool FillBlocksEveryKey(MaskConvention m, Dtype dtype, Blocking blocking);
// Whether a row with no visible key may read keys under the adapter's contract: a
// finite fill under "neg-inf" blocking (the row attends to every key), or policy mean-v.
bool EmptyRowsMayRead(const Capabilities& caps, MaskConvention m, Dtype dtype);

// Visible keys and rows, indexed as the scenario's arrays.
inline size_t RowIndex(const reference::Scenario& s, int b, int i) { return static_cast<size_t>(b) * s.tq + i; }

// Bitwise comparison of two output rows (every head and value dim); returns the
// first differing element or nullopt.
std::optional<WorstElement> FirstBitwiseDifference(const TensorD& a, const TensorD& b, int batch_row, int query);

}  // namespace attncheck
