#include "properties/verdict.h"

#include <fmt/format.h>

namespace attncheck {

std::string_view Name(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kSkip: return "skip";
    case Outcome::kError: return "error";
  }
  return "?";
}

std::string_view Name(Fault f) {
  switch (f) {
    case Fault::kNone: return "none";
    case Fault::kCrash: return "crash";
    case Fault::kTimeout: return "timeout";
    case Fault::kException: return "exception";
    case Fault::kGarbage: return "garbage";
  }
  return "?";
}

std::string Describe(const WorstElement& e) {
  if (e.tensor.empty()) return "";
  std::string text = fmt::format("{}[b={}, h={}, i={}, j={}]", e.tensor, e.b, e.h, e.i, e.j);
  if (e.key >= 0) text += fmt::format("; key slot {} reached it", e.key);
  return text;
}

}  // namespace attncheck
