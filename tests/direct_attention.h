// One attention call straight on an adapter, outside the harness (no guard
// buffers, no conversion): the scenario's q, k, v as they are, the mask as given.
// For tests that compare two ways of handing the same visibility to one kernel.
#pragma once

#include <vector>

#include "adapters/adapter.h"
#include "reference/scenario.h"

namespace attncheck::test {

// out [B, Hq, Tq, Dv], every element first set to 123 (so an unwritten one shows).
inline std::vector<float> DirectAttention(Adapter& adapter, const reference::Scenario& s, const MaskArgs& mask) {
  const Case& c = s.c;
  const std::vector<float> q(s.q.data.begin(), s.q.data.end()), k(s.k.data.begin(), s.k.data.end()),
      v(s.v.data.begin(), s.v.data.end());
  std::vector<float> out(static_cast<size_t>(s.batch) * c.q_heads * s.tq * c.value_dim, 123.0f);
  AttentionArgs a;
  a.spec = SpecOf(c);
  a.batch = s.batch;
  a.q_heads = c.q_heads;
  a.kv_heads = c.kv_heads;
  a.tq = s.tq;
  a.tk = s.tk;
  a.head_dim = c.head_dim;
  a.value_dim = c.value_dim;
  a.q = q;
  a.k = k;
  a.v = v;
  a.query_positions = s.query_positions;
  a.key_positions = s.key_positions;
  a.mask = mask;
  a.scale = c.effective_scale();
  a.current_length = s.tk;
  a.out = out;
  adapter.attention(a);
  return out;
}

}  // namespace attncheck::test
