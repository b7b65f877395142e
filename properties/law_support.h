// What several laws share: choosing a mask convention that can express a derived
// scenario, turning a broken buffer contract into a verdict, and copying token
// data between scenarios that describe the same tokens in different layouts.
#pragma once

#include <optional>
#include <span>
#include <vector>
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

// The same for a backward call (adapters/harness.h WhyBackwardUnsupported).
std::optional<MaskConvention> ChooseBackwardConvention(const Adapter& adapter, const reference::Scenario& s,
                                                       std::string* why);

// The case with rows that see no key (masked-rows, backward-masked-rows): a pad
// query next to real ones when it has none (one more left pad in row 0, every slot
// a query), and one more batch row made only of pads (with leading queries, Tq > Tk:
// right pads after an empty first document, which they join).
Case WithEmptyRows(const Case& c);

// The case with rows that see no key that `adapter` can take, and whose empty rows its
// kernel produces (for its backward call when `backward`): WithEmptyRows where it can;
// else with the pad query at the end of every row (a padded descriptor without
// cu_seqlens_q takes no query inside a left pad, but takes pad queries after seqused_q);
// else, where the adapter takes Tq > Tk, one leading query before every row's first key
// and a row whose only document is empty (a varlen kernel produces nothing for pad
// queries, but does for a sequence's queries before its first key: FlashAttention's
// cu_seqlens with more queries than keys). The last when none fits: the law then
// skips with its reason.
Case EmptyRowsCaseFor(const Adapter& adapter, const Case& c, bool backward);

// Sets the rows (b, ·, i, ·) of t [B, H, T, D] where rows[b·T + i] != 0 to 0.
void ZeroRows(TensorD& t, const std::vector<uint8_t>& rows);

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

// A large finite perturbation Δ for keys and values (each element moved by ±Δ, then
// rounded to the dtype): at most 256 (f16) or 1000, and small enough that no score
// of the scenario, with its keys so perturbed and encoded at their positions (RoPE
// rotates the perturbation, xPos also scales it), outgrows `convention`'s finite fill
// (adapters/harness.h FillHeadroom), so a kernel that reads the fill as a score still
// blocks every key the law expects blocked.
double PerturbationMagnitude(const reference::Scenario& s, MaskConvention convention);

// Where the adapter declares its scores in f16 (reference::ScoresMayOverflow,
// `accuracy`), per key slot [B·Tk] the largest perturbation under which no score of
// the key that a row sees passes f16's 65504, which would make the harness refuse
// the call (ScoreOverflowReason: non-interference and packed-isolation lost 37 of
// 2000 cases so on ort-rotary-f16, seed 3); +inf for a key no row sees, whose score
// may pass 65504 and must still be blocked (F12: ONNX Runtime's finite f16 sentinel
// cannot). Empty where nothing limits (f32 scores, or a softcap keeping them small).
// Computed once per case: the laws' rounds perturb different keys of it.
std::vector<double> ScoreSafeLimits(const reference::Scenario& s, const Accuracy& accuracy);

// `magnitude`, or the least limit (ScoreSafeLimits) of a key marked in
// `perturbed_keys` [B·Tk] where that is smaller.
double ScoreSafeMagnitude(const std::vector<double>& limits, const std::vector<uint8_t>& perturbed_keys,
                          double magnitude);

// Why the perturbed scenario t is no test of blocking for `adapter` in `convention`:
// its finite fill no longer blocks every key a row does not see (adapters/harness.h
// FillHeadroom ≤ 0; the rounding of a perturbed key can still get there), and the
// contract does not promise that the fill blocks whatever the score (blocking
// "neg-inf" or "fill-rows": the kernel adds the fill to the score). nullopt: hand it over.
std::optional<std::string> WhyPerturbedFillCannotBlock(const Adapter& adapter, const reference::Scenario& t,
                                                       MaskConvention convention);

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

// Real query rows with at least one visible key in row b whose visible sets are
// distinct, in row order (the anchors a leak law perturbs around).
std::vector<int> DistinctVisibleRows(const reference::Scenario& s, int b);

// A non-empty document of a batch row that packs two or more (packed-isolation,
// backward-packed-isolation): its key slots first_slot … first_slot + length − 1.
struct DocumentSpan {
  int b = 0, doc = 0, first_slot = 0, length = 0;
};
std::vector<DocumentSpan> PackedDocuments(const reference::Scenario& s);

// The case gqa regroups (gqa, backward-gqa): Hkv = Hq becomes the largest proper
// divisor of Hq that is ≥ 2 (so a wrong mapping such as h mod Hkv shows), or MQA
// (Hkv = 1) when Hq has none; a grouped case is kept.
Case GroupedCase(const Case& c);
// The grouped scenario as multi-head attention: kv head h of the result is kv head
// ⌊h / (Hq/Hkv)⌋ of s, q and the layout unchanged.
reference::Scenario RepeatedKvHeads(const reference::Scenario& s);

// Key slots of row b that no query of the row may read.
std::vector<int> UnreadKeys(const reference::Scenario& s, int b);

// Round r's anchor among a row's distinct visible rows: the first (most keys hidden),
// the middle, then spread by the seed; −1 when there is none.
int AnchorFor(const std::vector<int>& anchors, int round, uint64_t seed);

// Bitwise comparison of two output rows (every head and value dim); returns the
// first differing element or nullopt.
std::optional<WorstElement> FirstBitwiseDifference(const TensorD& a, const TensorD& b, int batch_row, int query,
                                                  std::string_view tensor = "out");

}  // namespace attncheck
