// Seeded learned absolute position table (learned.h).
#include "reference/learned.h"

#include "cases/random_source.h"

namespace attncheck::reference {

uint64_t LearnedTableSeed(uint64_t case_seed) { return case_seed ^ kLearnedTableSalt; }

// h = SplitMix64(SplitMix64(SplitMix64(seed) ^ p) ^ d); value = (h >> 11)·2^−53 − 0.5.
double LearnedTableValue(uint64_t table_seed, int position, int dim) {
  uint64_t h = SplitMix64(table_seed);
  h = SplitMix64(h ^ static_cast<uint32_t>(position));
  h = SplitMix64(h ^ static_cast<uint32_t>(dim));
  const double unit = static_cast<double>(h >> 11) * 0x1.0p-53;
  return unit - 0.5;
}

void AddLearned(uint64_t table_seed, std::span<double> x, int position) {
  for (int dim = 0; dim < static_cast<int>(x.size()); ++dim) {
    x[dim] += LearnedTableValue(table_seed, position, dim);
  }
}

}  // namespace attncheck::reference
