// Worker tallies over the fuzz pipe (fuzz_tally.h).
#include "cli/fuzz_tally.h"

#include "properties/verdict_json.h"

namespace attncheck::cli {

nlohmann::json TallyJson(const LawResult& r) {
  nlohmann::json j = {{"law", r.law},         {"adapter", r.adapter}, {"cases", r.cases},
                      {"passed", r.passed},   {"failed", r.failed},   {"skipped", r.skipped},
                      {"errors", r.errors},   {"hazards", r.hazards}, {"skip_reasons", r.skip_reasons},
                      {"seconds", r.seconds}, {"worst_is_failure", r.worst_is_failure}};
  if (r.has_worst) j["worst"] = VerdictJson(r.worst);
  nlohmann::json pairs = nlohmann::json::object();
  for (const auto& [name, pair] : r.feature_pairs) {
    pairs[name] = {{"cases", pair.cases}, {"max_share", pair.max_share}, {"limit", pair.limit}};
  }
  j["feature_pairs"] = std::move(pairs);
  return j;
}

LawResult TallyFromJson(const nlohmann::json& j) {
  LawResult r;
  r.law = j.at("law").get<std::string>();
  r.adapter = j.at("adapter").get<std::string>();
  for (auto [field, count] : {std::pair{"cases", &r.cases}, {"passed", &r.passed}, {"failed", &r.failed},
                              {"skipped", &r.skipped}, {"errors", &r.errors}, {"hazards", &r.hazards}}) {
    *count = j.at(field).get<int>();
  }
  r.skip_reasons = j.at("skip_reasons").get<std::map<std::string, int>>();
  r.seconds = j.at("seconds").get<double>();
  r.worst_is_failure = j.at("worst_is_failure").get<bool>();
  if (j.contains("worst")) {
    r.worst = VerdictFromJson(j.at("worst"));
    r.has_worst = true;
  }
  for (const auto& [name, pair] : j.at("feature_pairs").items()) {
    r.feature_pairs[name] = {.cases = pair.at("cases").get<int>(),
                             .max_share = pair.at("max_share").get<double>(),
                             .limit = pair.at("limit").get<std::string>()};
  }
  return r;
}

}  // namespace attncheck::cli
