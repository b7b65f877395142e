// ALiBi (Press, Smith, Lewis 2022, "Train Short, Test Long"): no q/k encoding; the
// score of query head h gets the bias −slope_h·|q_pos − k_pos|, slopes a geometric
// sequence per head from the paper's reference `get_slopes`.
#pragma once

#include <vector>

namespace attncheck::reference {

// Slopes for `heads` heads, [heads]:
//   n a power of two: slope_i = 2^(−8i/n), i = 1 … n;
//   otherwise m = 2^⌊log2 n⌋: the m slopes of the m rule, then the first n − m of
//   every other slope (indices 0, 2, 4, …) of the 2m rule.
// Worked: 8 heads → 1/2, 1/4, …, 1/256; 6 heads → [1/4, 1/16, 1/64, 1/256, 1/2, 1/8].
std::vector<double> AlibiSlopes(int heads);

// slope of head `head` (0-based) among `heads`: AlibiSlopes(heads)[head].
double AlibiSlope(int heads, int head);

// Bias = −slope·|query_pos − key_pos| (the symmetric form; causal implementations
// that add slope·key_pos differ by a per-query constant, which softmax ignores).
double AlibiBias(double slope, int query_pos, int key_pos);

}  // namespace attncheck::reference
