// The tolerance floor of properties/tolerance.h predicted before a case's data is
// drawn, as a fraction of a row's largest |v|: the floor's formula with q and k at
// their profile's typical norms (cases/value_profiles.h). Decode keeps the draws of
// a law that judges against the oracle (LawNeeds::informative_oracle) where it
// stays at or below kInformativeFloor.
#pragma once

#include "cases/capabilities.h"
#include "cases/case.h"

namespace attncheck {

// Three quarters of the line (tolerance.h kUninformative = 1/4) at which a row's
// bound can no longer tell a right row from a zeroed one: the rest is left to the
// naive model's term k·|naive − oracle|.
inline constexpr double kInformativeFloor = 3.0 / 16.0;

// floor / max|v| = 4u + 2√n·u_pv + 2δs, with δs as tolerance.h writes it for the
// adapter's declared accuracy (caps.accuracy) and encoding stage (caps.owns_rope),
// the case's dtype, encoding kind, head dim, scale, softcap and profile, n =
// `visible_keys` and p = `largest_position`; |q_i|·max|k_j| is taken as twice
// D·QkMeanSquare(profile), plus extreme-logits' largest offset, times RoPE's
// magnitudes (YaRN's mscale² and log-n's query scale at p: cases/rope_magnitudes.h)
// and xPos's growth of a key's norm (c.encoding.xpos_scale_base; none while it is
// 0). Score biases are not predicted (0).
double PredictedFloor(const Capabilities& caps, const Case& c, int largest_position, int visible_keys);

// The widest typical spread of one row's scores over its keys at which a gradient
// stays informative. Beyond it the softmax is near one-hot: dS = P ∘ (dP − δ)
// cancels to almost nothing against the magnitude sums the gradient floor scales
// with. Measured on the example plugin in descriptor mode (1000 cases per backward
// law, seed 3, every profile drawn): cases with spread above 8 were skips in 49–70 %;
// with the need, its laws skip 6–14 % (self-consistency, bf16 first, the most).
// Large logits never qualify (√2·64/8 = 11.3 at the narrowest draw): the gradient
// laws judged by a tolerance draw none, nor extreme logits, and
// backward-non-interference, which compares bitwise, keeps drawing both.
inline constexpr double kGradientScoreSpread = 8.0;

// Typical spread of a row's scores over its keys: √D·QkMeanSquare(profile)·scale
// (the standard deviation of q·k·scale for independent draws). extreme-logits:
// infinite. Its keys share an offset of 10^4 that leaves the spread normal, but the
// scores' rounding at that size swamps the gradient through them (23–80 % skips).
double TypicalScoreSpread(const Case& c);

}  // namespace attncheck
