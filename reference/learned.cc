// Seeded learned absolute position table (learned.h).
#include "reference/learned.h"

namespace attncheck::reference {
namespace {

// splitmix64 finaliser (Steele, Lea, Flood 2014).
uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t LearnedTableSeed(uint64_t case_seed) { return case_seed ^ kLearnedTableSalt; }

// h = Mix(Mix(Mix(seed) ^ p) ^ d); value = (h >> 11)·2^−53 − 0.5.
double LearnedTableValue(uint64_t table_seed, int position, int dim) {
  uint64_t h = Mix(table_seed);
  h = Mix(h ^ static_cast<uint32_t>(position));
  h = Mix(h ^ static_cast<uint32_t>(dim));
  const double unit = static_cast<double>(h >> 11) * 0x1.0p-53;
  return unit - 0.5;
}

void AddLearned(uint64_t table_seed, std::span<double> x, int position) {
  for (int dim = 0; dim < static_cast<int>(x.size()); ++dim) {
    x[dim] += LearnedTableValue(table_seed, position, dim);
  }
}

}  // namespace attncheck::reference
