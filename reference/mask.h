// Conversion of the visibility relation into each mask convention (DESIGN §2).
// The harness converts; adapters never see the relation itself.
#pragma once

#include <cstdint>
#include <vector>

#include "cases/case.h"

namespace attncheck::reference {

// Fill value for blocked entries of an additive convention, as stored in the
// case dtype: −inf, the dtype's lowest finite value (−3.4e38 f32, −65504 f16,
// −3.39e38 bf16), −1e4, −1e9 (which is −inf once stored in f16).
double AdditiveFill(MaskConvention m, Dtype dtype);

// visible [B, Tq, Tk] → additive [B, Tq, Tk] (0 visible, fill blocked).
std::vector<float> ToAdditive(const std::vector<uint8_t>& visible, MaskConvention m, Dtype dtype);
// visible → bool mask in the convention (kBoolVisible: 1 = attend; kBoolBlocked: 1 = masked).
std::vector<uint8_t> ToBool(const std::vector<uint8_t>& visible, MaskConvention m);
// The visibility a causal-flag convention produces for Tq queries over Tk keys:
// top-left j ≤ i, bottom-right j ≤ i + Tk − Tq. [Tq, Tk]
std::vector<uint8_t> CausalFlagPattern(MaskConvention m, int tq, int tk);

}  // namespace attncheck::reference
