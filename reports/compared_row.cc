// Index names, the bitwise-bound text and got against want on the worst row
// (see compared_row.h).
#include "reports/compared_row.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "properties/tolerance.h"

namespace attncheck {

std::string Exact(double x) { return fmt::format("{}", x); }

double UlpDistance(double got, double want, Dtype dtype) {
  if (got == want || (std::isnan(got) && std::isnan(want))) return 0.0;
  if (!std::isfinite(got) || !std::isfinite(want)) return std::numeric_limits<double>::infinity();
  const double larger = std::max(std::abs(got), std::abs(want));
  const double ulp = std::ldexp(2.0 * UnitRoundoff(dtype), std::ilogb(larger));
  return std::abs(got - want) / ulp;
}

std::string BoundText(double bound, double got, double want, Dtype dtype) {
  if (!BitwiseBound(bound)) return Exact(bound);
  const double ulp = UlpDistance(got, want, dtype);
  if (ulp == 0.0) return "must match bitwise";
  if (std::isinf(ulp)) return fmt::format("must match bitwise; got {}", got);
  return fmt::format("must match bitwise; differs by {:.3g} ulp ({})", ulp, Name(dtype));
}

ComparedRow CompareRow(const WorstElement& w, Dtype dtype, int max_dims) {
  ComparedRow row;
  row.header = {"b", "h", "i", std::string(w.last_index()), "got", "want", "error", "bound"};
  row.dims = static_cast<int>(std::min(w.row_got.size(), w.row_want.size()));
  const auto error = [&w](int d) {
    const double e = std::abs(w.row_got[d] - w.row_want[d]);
    return std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
  };
  std::vector<int> dims(row.dims);
  std::iota(dims.begin(), dims.end(), 0);
  if (row.dims > max_dims) {
    std::stable_sort(dims.begin(), dims.end(), [&](int a, int b) { return error(a) > error(b); });
    dims.resize(max_dims);
    if (std::find(dims.begin(), dims.end(), w.j) == dims.end() && w.j >= 0 && w.j < row.dims) dims.back() = w.j;
    std::sort(dims.begin(), dims.end());
  }
  for (int d : dims) {
    const double got = w.row_got[d], want = w.row_want[d];
    row.lines.push_back({std::to_string(w.b), std::to_string(w.h), std::to_string(w.i), std::to_string(d), Exact(got),
                         Exact(want), Exact(std::abs(got - want)), BoundText(w.bound, got, want, dtype)});
    row.worst.push_back(d == w.j);
  }
  return row;
}

}  // namespace attncheck
