// The verdict codec of the fuzz worker protocol.
#include "properties/verdict_json.h"

#include <limits>
#include <string>

namespace attncheck {

using nlohmann::json;

json VerdictJson(const Verdict& v) {
  return {{"outcome", Name(v.outcome)},
          {"fault", Name(v.fault)},
          {"max_abs", v.max_abs},
          {"max_rel", v.max_rel},
          {"bound", v.bound},
          {"worst",
           {{"b", v.worst.b}, {"h", v.worst.h}, {"i", v.worst.i}, {"j", v.worst.j}, {"got", v.worst.got},
            {"want", v.worst.want}, {"error", v.worst.error}, {"bound", v.worst.bound}, {"tensor", v.worst.tensor},
            {"key", v.worst.key}}},
          {"message", v.message},
          {"step", v.step},
          {"role", Name(v.role)}};
}

Verdict VerdictFromJson(const json& j) {
  Verdict v;
  v.outcome = OutcomeFromName(j.at("outcome").get<std::string>());
  v.fault = FaultFromName(j.at("fault").get<std::string>());
  // JSON has no NaN or inf: nlohmann writes them as null; read null back as NaN.
  const auto number = [](const json& x) {
    return x.is_number() ? x.get<double>() : std::numeric_limits<double>::quiet_NaN();
  };
  v.max_abs = number(j.at("max_abs"));
  v.max_rel = number(j.at("max_rel"));
  v.bound = number(j.at("bound"));
  const json& w = j.at("worst");
  v.worst.b = w.at("b").get<int>();
  v.worst.h = w.at("h").get<int>();
  v.worst.i = w.at("i").get<int>();
  v.worst.j = w.at("j").get<int>();
  v.worst.got = number(w.at("got"));
  v.worst.want = number(w.at("want"));
  v.worst.error = number(w.at("error"));
  v.worst.bound = number(w.at("bound"));
  v.worst.tensor = w.at("tensor").get<std::string>();
  v.worst.key = w.at("key").get<int>();
  v.message = j.at("message").get<std::string>();
  v.step = j.value("step", std::string());
  v.role = RoleFromName(j.value("role", std::string("none")));
  return v;
}

}  // namespace attncheck
