// Learned absolute position table (BERT / GPT-2 `wpe`), stood in for by a seeded
// deterministic table: element (p, d) = hash(table_seed, p, d) mapped to [−0.5, 0.5),
// with table_seed = case.seed ^ kLearnedTableSalt. Added to q and k; nothing stored.
#pragma once

#include <cstdint>
#include <span>

namespace attncheck::reference {

inline constexpr uint64_t kLearnedTableSalt = 0x6c6561726e656450ULL;  // "learnedP"

// The table seed of a case: case_seed ^ kLearnedTableSalt.
uint64_t LearnedTableSeed(uint64_t case_seed);

// Table element (position, dim) in [−0.5, 0.5): splitmix64 of (table_seed, position, dim),
// top 53 bits as u ∈ [0, 1), value u − 0.5. Same on every machine and build.
double LearnedTableValue(uint64_t table_seed, int position, int dim);

// x += table row `position`. x: [head_dim] one token's head vector.
void AddLearned(uint64_t table_seed, std::span<double> x, int position);

}  // namespace attncheck::reference
