// The positional stage of the reference model (positional.h): dispatch on the
// case's encoding kind to the one-formula files (rope, rope_scaling, xpos,
// sinusoidal, learned for q/k; alibi, t5, kerple, sandwich for score biases).
#include "reference/positional.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "reference/alibi.h"
#include "reference/kerple.h"
#include "reference/learned.h"
#include "reference/rope.h"
#include "reference/rope_scaling.h"
#include "reference/sandwich.h"
#include "reference/sinusoidal.h"
#include "reference/t5.h"
#include "reference/xpos.h"

namespace attncheck::reference {

// x: [B, H, T, D], positions: [B, T]; every head of token (b, t) gets position
// positions[b·T + t] (GQA: query and key heads share the token's position).
//   kRope:       RotatePairs with Frequencies(spec, rotary_dim, current_length) and magnitude
//                mscale; with log_n the query vector (all D dims) is then multiplied by
//                LogNScale(position, original_context).
//   kXpos:       ApplyXpos (case's rope layout, base, rotary_dim; xpos_scale_base).
//   kSinusoidal: x += PE(position);  kLearned: x += table row position.
void ApplyPositional(const Case& c, Side side, TensorD& x, std::span<const int> positions,
                     int current_length) {
  ApplyPositional(SpecOf(c), side, x, positions, current_length);
}

void ApplyPositional(const KernelSpec& c, Side side, TensorD& x, std::span<const int> positions,
                     int current_length) {
  if (!EncodesQk(c.encoding.kind)) return;
  const int batch = x.shape[0], heads = x.shape[1], tokens = x.shape[2], head_dim = x.shape[3];
  if (positions.size() != static_cast<size_t>(batch) * tokens) {
    throw std::invalid_argument("positional: " + std::to_string(positions.size()) + " positions for [B=" +
                                std::to_string(batch) + ", T=" + std::to_string(tokens) + "]");
  }
  const RopeSpec& rope = c.encoding.rope;
  const int rotary_dim = c.rotary_dim();
  RopeFrequencies frequencies;
  if (c.encoding.kind == EncodingKind::kRope) {
    frequencies = Frequencies(rope, rotary_dim, current_length);
  }
  const uint64_t learned_seed = LearnedTableSeed(c.weights_seed);

  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      for (int t = 0; t < tokens; ++t) {
        const int position = positions[static_cast<size_t>(b) * tokens + t];
        const std::span<double> vec(&x.at(b, h, t, 0), static_cast<size_t>(head_dim));  // [D]
        switch (c.encoding.kind) {
          case EncodingKind::kRope:
            RotatePairs(rope.layout, vec, rotary_dim, frequencies.theta, position, frequencies.mscale);
            if (rope.log_n && side == Side::kQuery) {
              const double log_n_scale = LogNScale(position, rope.original_context);
              for (double& value : vec) value *= log_n_scale;
            }
            break;
          case EncodingKind::kXpos:
            ApplyXpos(rope.layout, vec, rotary_dim, rope.base, c.encoding.xpos_scale_base, position,
                      side == Side::kKey);
            break;
          case EncodingKind::kSinusoidal:
            AddSinusoidal(vec, position);
            break;
          case EncodingKind::kLearned:
            AddLearned(learned_seed, vec, position);
            break;
          default:
            break;
        }
      }
    }
  }
}

bool HasQkEncoding(const Case& c) { return EncodesQk(c.encoding.kind); }

bool HasScoreBias(const Case& c) {
  switch (c.encoding.kind) {
    case EncodingKind::kAlibi:
    case EncodingKind::kT5:
    case EncodingKind::kKerple:
    case EncodingKind::kSandwich:
      return true;
    default:
      return false;
  }
}

//   kAlibi:    −slope_head·|q − k|, slopes of c.q_heads heads
//   kT5:       table[head][T5Bucket(k − q, bidirectional, buckets, max_distance)]
//   kKerple:   KerpleBias with KerpleHeadParams(kind, head)
//   kSandwich: SandwichBias(sandwich_scale, head_dim, q, k)
double ScoreBias(const Case& c, int head, int query_pos, int key_pos) {
  return ScoreBias(SpecOf(c), head, query_pos, key_pos);
}

double ScoreBias(const KernelSpec& c, int head, int query_pos, int key_pos) {
  const EncodingSpec& encoding = c.encoding;
  switch (encoding.kind) {
    case EncodingKind::kAlibi:
      return AlibiBias(AlibiSlope(c.q_heads, head), query_pos, key_pos);
    case EncodingKind::kT5: {
      const int bucket =
          T5Bucket(key_pos - query_pos, encoding.t5_bidirectional, encoding.t5_buckets, encoding.t5_max_distance);
      return T5TableValue(T5TableSeed(c.weights_seed), head, bucket);
    }
    case EncodingKind::kKerple:
      return KerpleBias(encoding.kerple, KerpleHeadParams(encoding.kerple, head), query_pos, key_pos);
    case EncodingKind::kSandwich:
      return SandwichBias(encoding.sandwich_scale, c.head_dim, query_pos, key_pos);
    default:
      return 0.0;
  }
}

int CurrentLength(std::span<const int> positions) {
  int length = 1;
  for (int position : positions) length = std::max(length, position + 1);
  return length;
}

}  // namespace attncheck::reference
