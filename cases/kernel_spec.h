// What a kernel is told about a case besides its tensors (issue 14 point 4): the
// dtype, softcap, the q/k encoding or score bias it may own, the head counts and
// dims those formulas read, and the seed of the model weights the reference
// derives (learned position table, T5 buckets). No rows, documents, padding,
// visibility kind, window, chunk or decode plan: visibility reaches a kernel only
// as its mask or descriptor (adapters/adapter.h MaskArgs).
#pragma once

#include <cstdint>

#include "cases/case.h"

namespace attncheck {

struct KernelSpec {
  Dtype dtype = Dtype::kF32;
  double softcap = 0.0;  // 0 = off
  EncodingSpec encoding;
  int q_heads = 1, kv_heads = 1, head_dim = 8, value_dim = 8;  // ALiBi slopes, Sandwich, rotary dim
  uint64_t weights_seed = 0;  // learned position table, T5 bucket table (the case's seed)

  int rotary_dim() const { return encoding.rope.rotary_dim == 0 ? head_dim : encoding.rope.rotary_dim; }
};

// The spec of a case: its dtype, softcap, encoding, heads, dims and seed.
KernelSpec SpecOf(const Case& c);

}  // namespace attncheck
