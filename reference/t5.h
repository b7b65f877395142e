// T5 relative position bias (Raffel et al. 2020; HF `T5Attention._relative_position_bucket`,
// from Mesh TensorFlow): the relative position key − query is put into one of
// num_buckets log-spaced buckets and the score of head h gets table[h][bucket].
#pragma once

#include <cstdint>

namespace attncheck::reference {

inline constexpr uint64_t kT5TableSalt = 0x7435726561626961ULL;  // "t5reabia"

// Bucket of relative_position = key_pos − query_pos, in [0, num_buckets):
//   bidirectional: num_buckets /= 2, offset num_buckets if relative > 0, n = |relative|;
//   causal:        offset 0, n = −min(relative, 0) (keys after the query all share bucket 0);
//   max_exact = num_buckets/2; n < max_exact → offset + n; else
//   offset + min(max_exact + ⌊ln(n/max_exact)/ln(max_distance/max_exact)·(num_buckets − max_exact)⌋,
//                num_buckets − 1).
// The log branch is computed in float32 as HF and Mesh TF do (log of a float tensor
// divided by a scalar); a scan of nb ∈ {4…128}, max_distance ∈ {8…1000}, |rel| < 3000
// found no bucket where double would differ. Degenerate parameters (num_buckets/2 = 0
// after the bidirectional halving, or max_distance ≤ max_exact), where HF computes
// NaN or inf, put every n ≥ max_exact in the last bucket, num_buckets − 1.
int T5Bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance);

// The table seed of a case: case_seed ^ kT5TableSalt.
uint64_t T5TableSeed(uint64_t case_seed);

// table[head][bucket] in [−1, 1): splitmix64 of (table_seed, head, bucket), 2u − 1.
double T5TableValue(uint64_t table_seed, int head, int bucket);

}  // namespace attncheck::reference
