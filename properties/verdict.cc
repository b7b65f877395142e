// How a verdict's worst element reads in a report (properties/verdict.h).
#include "properties/verdict.h"

#include <fmt/format.h>

namespace attncheck {

std::string Describe(const WorstElement& e) {
  if (e.tensor.empty()) return "";
  std::string text = fmt::format("{}[b={}, h={}, i={}, {}={}]", e.tensor, e.b, e.h, e.i, e.last_index(), e.j);
  if (e.key >= 0) text += fmt::format("; key slot {} reached it", e.key);
  return text;
}

}  // namespace attncheck
