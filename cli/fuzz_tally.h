// A fuzz worker's per-pair tallies (reports/summary.h LawResult: counts, skip
// reasons, seconds, worst verdict, feature pair counts) as one JSON object each, sent to the parent in
// the worker's "done" message and merged there into the run's summary.json.
#pragma once

#include <nlohmann/json.hpp>

#include "reports/summary.h"

namespace attncheck::cli {

nlohmann::json TallyJson(const LawResult& r);
// Throws nlohmann::json::exception on a malformed tally.
LawResult TallyFromJson(const nlohmann::json& j);

}  // namespace attncheck::cli
