// The worst element's constructors and its one printed form (properties/verdict.h).
#include "properties/verdict.h"
#include "properties/error_ratio.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace attncheck {

double ElementError(double got, double want) {
  if (std::isnan(got) && std::isnan(want)) return 0.0;
  if (std::isfinite(got) != std::isfinite(want) || std::isnan(got) || std::isnan(want)) {
    return std::numeric_limits<double>::infinity();
  }
  if (!std::isfinite(got)) return got == want ? 0.0 : std::numeric_limits<double>::infinity();  // ±inf
  return std::abs(got - want);
}

bool BitwiseBound(double bound) { return bound <= 16 * std::numeric_limits<double>::min(); }

std::string BoundText(double bound) { return BitwiseBound(bound) ? "bitwise" : fmt::format("{:.3g}", bound); }

WorstElement WorstElement::Compared(std::string_view tensor, int b, int h, int i, int j, double got, double want,
                                    double bound) {
  WorstElement e;
  e.tensor = std::string(tensor);
  e.b = b;
  e.h = h;
  e.i = i;
  e.j = j;
  e.got = got;
  e.want = want;
  e.error = ElementError(got, want);
  e.bound = bound;
  return e;
}

WorstElement WorstElement::Leak(std::string_view tensor, int b, int h, int i, int j, double got, double want,
                                int key) {
  WorstElement e = Compared(tensor, b, h, i, j, got, want, 0.0);
  e.key = key;
  return e;
}

WorstElement WorstElement::Row(std::string_view tensor, int b, int h, int i, double bound, double magnitude) {
  WorstElement e = Compared(tensor, b, h, i, -1, 0.0, magnitude, bound);
  e.error = 0.0;  // a row, not an element: nothing was compared
  return e;
}

std::string Describe(const WorstElement& e) {
  if (e.tensor.empty()) return "";
  const std::string last = e.has_last_index() ? fmt::format(", {}={}", e.last_index(), e.j) : "";
  std::string text = fmt::format("{}[b={}, h={}, i={}{}] got {} want {} error {:.3g} bound {}", e.tensor, e.b, e.h,
                                 e.i, last, e.got, e.want, e.error, BoundText(e.bound));
  if (e.key >= 0) text += fmt::format("; key slot {} reached it", e.key);
  return text;
}

double ErrorRatio(const Verdict& v) {
  const double error = v.worst.error != 0.0 ? v.worst.error : v.max_abs;
  const double bound = v.worst.bound != 0.0 ? v.worst.bound : v.bound;
  if (std::isnan(error)) return std::numeric_limits<double>::infinity();
  if (error == 0.0) return 0.0;
  if (!(bound > 0.0)) return std::numeric_limits<double>::infinity();
  return std::abs(error) / bound;
}

}  // namespace attncheck
