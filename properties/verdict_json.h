// A verdict as JSON and back: what a fuzz worker sends the campaign over its pipe
// (the report needs all of it but the report data). Names go through the outcome
// and fault tables; an unknown name read back is an error, never a pass.
#pragma once

#include <nlohmann/json.hpp>

#include "properties/verdict.h"

namespace attncheck {

nlohmann::json VerdictJson(const Verdict& v);
// Throws std::invalid_argument for an unknown outcome or fault name and
// nlohmann::json::exception for a missing field.
Verdict VerdictFromJson(const nlohmann::json& j);

}  // namespace attncheck
