// `attncheck probe`: a kernel's contract inferred by experiment (DESIGN §5). Each
// item is a small hand-built scenario run through the harness in a convention the
// adapter accepts, its output matched against the oracle under each candidate rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/adapter.h"

namespace attncheck {

// One inferred promise. `observed` is a candidate rule's name, "other" (no rule
// matched), "undecided" (rules with different meanings matched) or "not
// observable: <why>". `agrees` is false only when the observation contradicts the
// declaration (a contract that allows anything agrees with everything).
struct ProbeItem {
  std::string name;      // "causal alignment (causal-br)"
  std::string declared;  // "bottom-right"
  std::string observed;
  bool agrees = true;
  std::string evidence;  // the case line, what was changed by hand, the error against each rule
};

struct ProbeReport {
  std::string adapter;
  std::vector<ProbeItem> items;
  std::string fault;  // the adapter crashed, threw or answered garbage: the probe stopped there
  bool agrees() const;
};

// Runs every item on `adapter`; `seed` draws the q, k, v values (case seed).
ProbeReport Probe(Adapter& adapter, uint64_t seed);

std::string ToText(const ProbeReport& report);
nlohmann::json ToJson(const ProbeReport& report);

}  // namespace attncheck
