// How close a verdict came to its bound: the gate's "worst error / bound" cell
// (reports/summary.h) and a law that keeps the closest of several passing
// comparisons (properties/backward_support.h) rank verdicts by it.
#pragma once

#include "properties/verdict.h"

namespace attncheck {

// error / bound of a verdict's worst element (else its max_abs and bound); +inf
// when the bound is 0 and the error is not (exact laws), 0 when both are 0.
double ErrorRatio(const Verdict& v);

}  // namespace attncheck
