// The positional stage of the reference model, in double: the query/key-side
// encodings (sinusoidal, learned table, RoPE with every scaling and log-n,
// xPos) and the score-side biases (ALiBi, T5, KERPLE, Sandwich). Formulas and
// sources are in reference/rope.h, rope_scaling.h, alibi.h, t5.h, kerple.h,
// xpos.h, sandwich.h, sinusoidal.h, learned.h; this header is the entry point
// the attention model and the harness use.
#pragma once

#include <span>

#include "cases/case.h"
#include "cases/kernel_spec.h"
#include "reference/tensor.h"

namespace attncheck::reference {

enum class Side { kQuery, kKey };

// Applies the case's q/k-side encoding in place. x: [B, H, T, D] (D = head_dim);
// positions: [B, T] logical positions; current_length: the sequence length the
// dynamic scalings see (dynamic NTK; HF uses max(position) + 1 of the call).
// Encodings without a q/k side (none, ALiBi, T5, KERPLE, Sandwich) leave x as is.
void ApplyPositional(const Case& c, Side side, TensorD& x, std::span<const int> positions,
                     int current_length);
// The same from what a kernel is told (cases/kernel_spec.h); the Case form calls it.
void ApplyPositional(const KernelSpec& spec, Side side, TensorD& x, std::span<const int> positions,
                     int current_length);

// True when the case's encoding has a q/k side (ApplyPositional changes x).
bool HasQkEncoding(const Case& c);
// True when the case's encoding adds a score bias (ScoreBias may be non-zero).
bool HasScoreBias(const Case& c);

// Additive score bias for query head h, query at logical position query_pos,
// key at key_pos (ALiBi, T5, KERPLE, Sandwich); 0 for other encodings.
double ScoreBias(const Case& c, int head, int query_pos, int key_pos);
double ScoreBias(const KernelSpec& spec, int head, int query_pos, int key_pos);

// The smallest current_length ≥ 1 consistent with the positions (max + 1).
int CurrentLength(std::span<const int> positions);

}  // namespace attncheck::reference
