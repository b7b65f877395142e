// The `eigen` adapter: a float32 attention kernel a user could copy. Per (batch,
// head): S = scale·Q·Kᵀ as an Eigen matrix product, softcap, a fused additive mask,
// row softmax with the max trick, O = P·V; GQA; RoPE in float (both layouts,
// partial rotary, every scaling); a KV-cache session of rotated keys.
#pragma once

#include <memory>

#include "adapters/adapter.h"

namespace attncheck {

std::unique_ptr<Adapter> MakeEigenAdapter();

}  // namespace attncheck
