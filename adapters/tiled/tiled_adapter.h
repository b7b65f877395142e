// The `tiled-f32`, `tiled-f16`, `tiled-bf16` adapters: a FlashAttention-2-style
// kernel templated on its storage type. Q, K, V (and the KV cache) are stored in
// the dtype, scores and the output accumulate in float over key blocks of 64 with
// an online softmax (running max m, running sum l, acc rescaled by exp(m_old − m_new));
// key blocks fully masked for a block of query rows are skipped; the output is
// rounded to the dtype at the end. Bool masks or causal flags; RoPE in float.
#pragma once

#include <memory>
#include <string>

#include "adapters/adapter.h"

namespace attncheck {

// "tiled-f32", "tiled-f16", "tiled-bf16".
std::string TiledAdapterName(Dtype dtype);
std::unique_ptr<Adapter> MakeTiledAdapter(Dtype dtype);

}  // namespace attncheck
