// Declared features and their pairs (issue 26 point 3, pairwise coverage): a
// feature is one value of one dimension of what a kernel declares (a mask
// convention, ALiBi or a RoPE scaling, softcap, GQA, Tq > Tk, sessions, a descriptor
// layout, a page size). Values of
// one dimension exclude each other, so a pair joins two dimensions. After AETG's
// and PICT's pairwise testing: every two declared features should meet in a share
// of each law's cases; CLI campaigns steer a share of cases toward each pair
// (SteeredSource) and the reports count the pairs the decoded cases really have.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cases/capabilities.h"
#include "cases/case.h"
#include "cases/law_needs.h"
#include "cases/steered_source.h"

namespace attncheck {

struct Feature {
  std::string dimension;                // "mask", "encoding", "softcap", "gqa", "tq>tk", "session", "layout", "page size"
  std::string name;                     // "mask=bool-visible", "alibi", "rope=linear", "softcap", …
  std::function<bool(const Case&)> has; // whether a decoded case has it
  std::vector<ForcedDraw> steer;        // the draws of Decode (cases/decode.h) that aim at it
};

struct FeaturePair {
  size_t first = 0, second = 0;  // indices into the declared features, of two dimensions
  std::string name;              // "alibi × softcap"
  // The largest share of cases every pair of these two dimensions can reach at once:
  // the a·b value pairs of two dimensions exclude each other, so 1 / (a·b); 0 for a
  // pair Decode never draws (`limit` says why).
  double max_share = 1.0;
  std::string limit;  // "mask × encoding: 56 pairs that exclude each other", or why never drawn
};

// The features the capabilities (the adapter's, narrowed by the law's needs:
// NarrowToNeeds) declare and the law can use, in dimension-table order.
std::vector<Feature> DeclaredFeatures(const Capabilities& caps, const LawNeeds& needs = {});
// The names of the declared features case `c` has.
std::vector<std::string> FeaturesOf(const Case& c, const Capabilities& caps, const LawNeeds& needs = {});
// Every two features of different dimensions, in order.
std::vector<FeaturePair> FeaturePairs(const std::vector<Feature>& features);
// The forced draws that aim a case at both features of `pair`.
std::vector<ForcedDraw> Steering(const std::vector<Feature>& features, const FeaturePair& pair);

// The share of a law's cases each declared pair should have (issue 26 point 3);
// reports/coverage.h reports the pairs below it.
inline constexpr double kFeaturePairShare = 0.02;

// After the first kUnsteeredFirst, of every kSteeredCycle consecutive case indices
// the first kSteeredPerCycle are steered: index i is the k-th steered one, aimed at
// entry k mod `pairs` of the steering schedule (FeatureSteering: each rare pair as
// many times as it has turns). From the index alone, so case i of a seed is the same
// on every machine and shard. nullopt: drawn unsteered (also when there is no pair).
inline constexpr uint64_t kSteeredCycle = 4;
inline constexpr uint64_t kSteeredPerCycle = 3;
// The first cases of a stream are never steered: a short run (a CI gate of a few
// dozen cases per law) draws its cases as Decode alone does, each feature at its
// natural share, rather than spread over pairs it has too few cases to cover.
// A multiple of kSteeredCycle, so the estimate's indices stay unsteered.
inline constexpr uint64_t kUnsteeredFirst = 100;
std::optional<size_t> SteeredPair(uint64_t index, size_t pairs);

// The pairs steered are all those Decode can draw but the common ones: drawn in
// kSteerBelow or more of the first kEstimateCases unsteered cases of the stream
// (decoded only, never run). The unsteered quarter of the cases alone gives such a
// pair over 6 %; steering it too would only thin the steering of the rare ones.
inline constexpr double kSteerBelow = 0.25;
// The schedule is kTurnsPerRarePair turns per rare pair, chosen one by one: each turn
// goes to the rare pair whose projected share is lowest against kSteerTarget (twice the
// reported share), or against its max_share where that is lower. A pair's projected
// share is its natural one (the estimate) in the unsteered cases, kSteeredShare of them
// steered, plus what the turns so far give it: 1 for a turn toward it, the estimated
// share of its other feature for a turn that forces one of its features, 0 for one
// forcing another value of its dimensions, and its natural share for the rest. So a
// pair the other turns already bring along (a frequent feature with a steered one)
// takes few turns of its own, and one the plain stream almost never draws many.
inline constexpr double kSteerTarget = 2 * kFeaturePairShare;
inline constexpr size_t kTurnsPerRarePair = 8;
// The steered share of a 1000-case run: 3 of every 4 cases after the first 100.
inline constexpr double kSteeredShare = 0.675;
inline constexpr uint64_t kEstimateCases = 256;

// A law's case stream steered toward the pairs of the features its capabilities
// declare (the CLI campaigns': cli/run_engine.h PairRunner). RapidCheck, libFuzzer
// and corpus files decode unsteered.
class FeatureSteering {
 public:
  FeatureSteering() = default;
  // For the stream of `stream_seed` (cases/random_source.h LawStreamSeed).
  FeatureSteering(const Capabilities& caps, const LawNeeds& needs, uint64_t stream_seed);

  const std::vector<FeaturePair>& pairs() const { return pairs_; }
  // Case `index` of the stream of `stream_seed` (cases/random_source.h), decoded
  // under `caps` and `needs` (those the steering was made with), steered when
  // SteeredPair says so.
  Case Draw(uint64_t stream_seed, uint64_t index, const Capabilities& caps, const LawNeeds& needs) const;
  // The names of the pairs whose two features case `c` has.
  std::vector<std::string> PairsOf(const Case& c) const;

 private:
  std::vector<Feature> features_;
  std::vector<FeaturePair> pairs_;
  std::vector<std::vector<ForcedDraw>> steering_;  // one per steered pair, in pairs_ order
};

}  // namespace attncheck
