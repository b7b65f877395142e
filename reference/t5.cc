// T5 relative position buckets and the seeded bias table (t5.h).
#include "reference/t5.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cases/random_source.h"

namespace attncheck::reference {

int T5Bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance) {
  int bucket = 0;
  int n = 0;  // distance, ≥ 0
  if (bidirectional) {
    num_buckets /= 2;
    if (relative_position > 0) bucket += num_buckets;
    n = std::abs(relative_position);
  } else {
    n = -std::min(relative_position, 0);
  }
  // half of the buckets are exact increments, the other half log-spaced up to max_distance
  const int max_exact = num_buckets / 2;
  if (n < max_exact) return bucket + n;
  // Degenerate ranges HF leaves to NaN/inf: no log-spaced buckets, all go to the last one.
  if (max_exact <= 0 || max_distance <= max_exact) return bucket + std::max(num_buckets - 1, 0);
  const float ratio = static_cast<float>(n) / static_cast<float>(max_exact);
  const float log_range = static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact));
  const float scaled = std::log(ratio) / log_range * static_cast<float>(num_buckets - max_exact);
  const int if_large = max_exact + static_cast<int>(scaled);  // truncation, as `.to(torch.long)`
  return bucket + std::min(if_large, num_buckets - 1);
}

uint64_t T5TableSeed(uint64_t case_seed) { return case_seed ^ kT5TableSalt; }

// h = SplitMix64(SplitMix64(SplitMix64(seed) ^ head) ^ bucket); value = 2·(h >> 11)·2^−53 − 1.
double T5TableValue(uint64_t table_seed, int head, int bucket) {
  uint64_t h = SplitMix64(table_seed);
  h = SplitMix64(h ^ static_cast<uint32_t>(head));
  h = SplitMix64(h ^ static_cast<uint32_t>(bucket));
  const double unit = static_cast<double>(h >> 11) * 0x1.0p-53;
  return 2.0 * unit - 1.0;
}

}  // namespace attncheck::reference
