// The Hugging Face transformers adapters (hf-*): process adapters (adapters/process) that start
// `python adapters/transformers/backend.py --variant VARIANT` on the attncheck kit (python/) with
// transformers 5.24 on torch (CPU). Names only; the lookup is adapters/python_backend.h's
// (kTransformersLibrary).
#pragma once

#include <array>

#include "adapters/python_backend.h"

namespace attncheck {

// call_timeout_s: importing transformers takes seconds on a loaded machine; each call builds its
// mask with transformers' builders and runs eager PyTorch (no compilation).
inline constexpr std::array<PythonAdapterName, 9> kTransformersAdapters = {{
    {"hf-sdpa-causal-f32", "sdpa-causal-f32",
     "transformers 5.24: create_causal_mask (padding, cache, prefix blocks, bidirectional) → sdpa_attention_forward, "
     "f32",
     60},
    {"hf-sdpa-causal-bf16", "sdpa-causal-bf16",
     "transformers 5.24: create_causal_mask → sdpa_attention_forward, bf16", 60},
    {"hf-eager-causal-f32", "eager-causal-f32",
     "transformers 5.24: create_causal_mask (eager_mask) → llama eager_attention_forward, f32", 60},
    {"hf-sdpa-sliding-f32", "sdpa-sliding-f32",
     "transformers 5.24: create_sliding_window_causal_mask, sliding-window cache → sdpa_attention_forward, f32", 60},
    {"hf-eager-sliding-f32", "eager-sliding-f32",
     "transformers 5.24: create_sliding_window_causal_mask (eager_mask) → eager_attention_forward, f32", 60},
    {"hf-sdpa-chunked-f32", "sdpa-chunked-f32",
     "transformers 5.24: create_chunked_causal_mask → sdpa_attention_forward, f32", 60},
    {"hf-sdpa-packed-f32", "sdpa-packed-f32",
     "transformers 5.24: create_causal_mask, packed documents from position_ids → sdpa_attention_forward, f32", 60},
    {"hf-sdpa-bisliding-f32", "sdpa-bisliding-f32",
     "transformers 5.24: create_bidirectional_sliding_window_mask (symmetric window) → sdpa_attention_forward, f32",
     60},
    {"hf-rope-f32", "rope-f32",
     "transformers 5.24: ROPE_INIT_FUNCTIONS + GPTNeoXRotaryEmbedding + apply_rotary_pos_emb (rope stage), f32", 60},
}};

}  // namespace attncheck
