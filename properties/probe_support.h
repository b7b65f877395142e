// What the experiments of `attncheck probe` share (properties/probe.h): the small
// scenario they start from, the oracle's output under an explicit score rule, and
// which candidate rule an adapter output matches (within a few units of roundoff of
// the dtype at the values' magnitude, clearly closer to it than to other meanings).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "adapters/harness.h"
#include "properties/probe.h"
#include "reference/scenario.h"
#include "reference/tensor.h"

namespace attncheck::probe {

// The adapter crashed, threw or broke the buffer contract: the probe stops (exit 3).
// `refused`: it declined the probe's case instead (AdapterFault::kRefused, a kernel
// with no path for that shape: SDPA's flash backend and a non-square causal case); the
// probe then reports what it was observing as not observable and goes on.
struct ProbeFault {
  std::string message;
  bool refused = false;
};

struct Probing {
  Adapter& adapter;
  Capabilities caps;
  Dtype dtype;
  uint64_t seed;
};

// The run's output; throws ProbeFault on a fault.
TensorD Checked(AdapterRun run);
// One batch row of Tk tokens in one document, Tq queries, D = Dv = 8; built with a
// −inf mask (a flag is handed over at run time).
Case BaseCase(const Probing& p, int tq, int tk, VisibilityKind visibility, int q_heads = 1, int kv_heads = 1);
// The scenario with q, k, v rounded to the dtype: the oracle reads what the adapter reads.
reference::Scenario MakeProbeScenario(const Case& c);
// The case's line with `convention` as its mask.
std::string CaseLine(Case c, MaskConvention convention);
ProbeItem NotObservable(std::string name, std::string declared, const std::string& why);

// The score of query i of head h for key j (scale included); −inf blocks the key.
using ScoreRule = std::function<double(int h, int i, int j)>;
// The kv head query head h reads.
using HeadMap = std::function<int(int h)>;

// scale · q[0, h, i]·k[0, kv, j] of batch row 0.
double Score(const reference::Scenario& s, int h, int kv, int i, int j);
// The declared GQA rule: kv head h / (Hq / Hkv).
int GroupOf(const reference::Scenario& s, int h);
// Score() where pattern [Tq, Tk] is 1, −inf elsewhere; heads mapped by GroupOf.
ScoreRule Masked(const reference::Scenario& s, const std::vector<uint8_t>& pattern);

// The oracle's output [1, Hq, Tq, Dv] under a score rule: reference::AttentionCore
// with q = k = 0 and the scores as the bias, so softmax and the empty-row rule are
// the reference's. Which keys are blocked is read from head 0.
TensorD UnderRule(const reference::Scenario& s, const ScoreRule& score, const HeadMap& kv_of);

// A candidate: its name, what it means for the item ("top-left"), its output.
struct Rule {
  std::string name;
  std::string meaning;
  TensorD out;
};

// 16·u(dtype)·max(1, max|v|): outputs are weighted means of v, and the probe's
// inputs are exact in the dtype.
double Tolerance(const reference::Scenario& s);

// max |got − want| over query rows `rows` of batch row 0 (all when empty); NaN
// against NaN is 0, NaN against a number is inf.
double Distance(const TensorD& got, const TensorD& want, const std::vector<int>& rows = {});

struct Observation {
  std::string observed;  // a rule's meaning, "other" or "undecided"
  std::string evidence;  // the error against each rule and the bound
};

// The meaning of the rules within `tolerance` of `got`: "other" when none is,
// "undecided" when a rule with another meaning is within twice the tolerance.
// "other" prints the outputs of the first compared row (head 0).
Observation Match(const TensorD& got, const std::vector<Rule>& rules, double tolerance,
                  const std::vector<int>& rows = {});

// The item: observed agrees with declared, or the experiment could not tell them apart.
ProbeItem Item(std::string name, std::string declared, const Observation& o, std::string evidence);

}  // namespace attncheck::probe
