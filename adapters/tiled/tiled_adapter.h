// The `tiled-f32`, `tiled-f16`, `tiled-bf16` adapters: a FlashAttention-2-style
// kernel templated on its storage type. Q, K, V (and the KV cache) are stored in
// the dtype, scores and the output accumulate in float over key blocks of 64 with
// an online softmax (running max m, running sum l, acc rescaled by exp(m_old − m_new));
// key blocks fully masked for a block of query rows are skipped; the output is
// rounded to the dtype at the end. Bool masks, causal flags or the padded batch's
// descriptor; RoPE in float. The padded kernels have a FlashAttention-2 backward
// (Adapter::backward, Capabilities::backward_saved: the saved O and log-sum-exp handed
// over, P recomputed per block from that lse, δ from that O, blocks the visibility
// excludes skipped). The varlen variants (`tiled-varlen-f32`,
// `tiled-paged-bf16`) take only descriptors, FlashAttention's varlen forms: packed
// sequences (cu_seqlens), and K/V in pages through a block table.
#pragma once

#include <memory>
#include <string>

#include "adapters/adapter.h"
#include "adapters/descriptor_rule.h"

namespace attncheck {

// "tiled-f32", "tiled-f16", "tiled-bf16".
std::string TiledAdapterName(Dtype dtype);
std::unique_ptr<Adapter> MakeTiledAdapter(Dtype dtype);

// "tiled-varlen-<dtype>" (page_size 0) or "tiled-paged-<dtype>": descriptors only,
// adapters::VarlenDescriptorForms(page_size); sessions as the padded kernel's.
std::string TiledVarlenAdapterName(Dtype dtype, int page_size);
std::unique_ptr<Adapter> MakeTiledVarlenAdapter(Dtype dtype, int page_size);

// The tiled kernel's forward on one call in storage `dtype`, reading the
// descriptor with `slips` (the varlen mutants' kernel).
void TiledAttention(Dtype dtype, const AttentionArgs& args, const adapters::DescriptorSlips& slips);

}  // namespace attncheck
