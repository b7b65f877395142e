// ALiBi slopes and bias (alibi.h).
#include "reference/alibi.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace attncheck::reference {
namespace {

bool IsPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

// slope_i = 2^(−8i/n), i = 1 … n, for n a power of two (start = ratio = 2^(−8/n)).
double PowerOfTwoSlope(int n, int i) { return std::exp2(-8.0 * i / n); }

}  // namespace

double AlibiSlope(int heads, int head) {
  if (heads <= 0 || head < 0 || head >= heads) {
    throw std::invalid_argument("alibi: head out of range");
  }
  if (IsPowerOfTwo(heads)) return PowerOfTwoSlope(heads, head + 1);
  int closest = 1;  // m = 2^⌊log2 n⌋
  while (closest * 2 <= heads) closest *= 2;
  if (head < closest) return PowerOfTwoSlope(closest, head + 1);
  // slopes of the 2m rule, every other one starting at index 0: index 2j → i = 2j + 1.
  const int j = head - closest;
  return PowerOfTwoSlope(2 * closest, 2 * j + 1);
}

std::vector<double> AlibiSlopes(int heads) {
  std::vector<double> slopes(static_cast<size_t>(heads));
  for (int h = 0; h < heads; ++h) slopes[h] = AlibiSlope(heads, h);
  return slopes;
}

double AlibiBias(double slope, int query_pos, int key_pos) {
  return -slope * std::abs(query_pos - key_pos);
}

}  // namespace attncheck::reference
