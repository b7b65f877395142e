// The head dims a kernel takes (Capabilities::head_dim_multiple, head_dims; the
// plugin ABI's shape constraints): Decode draws only those, and an adapter with
// constraints skips the rest. FlashAttention, for one, takes D % 8 == 0.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "cases/capabilities.h"

namespace attncheck {

// D is one the kernel takes.
inline bool HeadDimAllowed(const Capabilities& caps, int head_dim) {
  if (caps.head_dim_multiple > 1 && head_dim % caps.head_dim_multiple != 0) return false;
  return caps.head_dims.empty() || std::find(caps.head_dims.begin(), caps.head_dims.end(), head_dim) != caps.head_dims.end();
}

// The head dims to draw from: `candidates` (ascending, at most max_head_dim, of
// one parity), or the declared head_dims of that parity up to max_head_dim, each
// a multiple of head_dim_multiple. Unconstrained capabilities give `candidates`.
inline std::vector<int> AllowedHeadDims(const Capabilities& caps, std::vector<int> candidates, int max_head_dim,
                                        bool odd) {
  if (!caps.head_dims.empty()) {
    candidates.clear();
    for (int d : caps.head_dims) {
      if (d >= 1 && d <= max_head_dim && (d % 2 == 1) == odd) candidates.push_back(d);
    }
    std::sort(candidates.begin(), candidates.end());
  }
  std::erase_if(candidates, [&caps](int d) { return !HeadDimAllowed(caps, d); });
  return candidates;
}

}  // namespace attncheck
