// The worst element's row as a report prints it (DESIGN §7): got against want,
// one line per dim, the last index named for the tensor (WorstElement::
// last_index), and the bound in words where it collapsed to zero or to the
// denormal floor ("must match bitwise; differs by 2 ulp").
#pragma once

#include <array>
#include <string>
#include <vector>

#include "cases/case.h"
#include "properties/verdict.h"

namespace attncheck {

// BitwiseBound (properties/verdict.h): a bound of 0, or one that collapsed to the
// denormal floor (k · 2.2e-308): the comparison wants the same bits.
// |got − want| in units in the last place of `dtype` at the larger magnitude; inf
// when either is not finite (or exactly one is NaN).
double UlpDistance(double got, double want, Dtype dtype);
// The bound as a report shows it: "must match bitwise; differs by 3 ulp" (or
// "; got nan") for a bitwise bound, else the shortest exact text.
std::string BoundText(double bound, double got, double want, Dtype dtype);
// The shortest text that reads back as exactly x ("0.1", "1e-30", "nan").
std::string Exact(double x);

// b, h, i, <last index>, got, want, error, bound: the header and one line per
// dim of the worst element's row (the max_dims dims with the largest error, in
// dim order, when the row is longer); `worst` marks the worst element's line.
using ComparedLine = std::array<std::string, 8>;
struct ComparedRow {
  ComparedLine header;
  std::vector<ComparedLine> lines;
  std::vector<bool> worst;
  int dims = 0;  // dims in the row (lines.size() or more)
};
ComparedRow CompareRow(const WorstElement& w, Dtype dtype, int max_dims = 16);

}  // namespace attncheck
