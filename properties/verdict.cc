#include "properties/verdict.h"

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

}  // namespace attncheck
