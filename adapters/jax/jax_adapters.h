// The JAX adapters (jax-*): process adapters (adapters/process) that start
// `python adapters/jax/backend.py --variant VARIANT` on the attncheck kit (python/) with
// jax and jaxlib 0.10 (CPU). Names only; the lookup is adapters/python_backend.h's (kJaxLibrary).
#pragma once

#include <array>

#include "adapters/python_backend.h"

namespace attncheck {

// call_timeout_s: XLA compiles each new shape and mask form (jit), a second or more on a loaded
// machine; a Pallas kernel in interpret mode several seconds.
inline constexpr std::array<PythonAdapterName, 6> kJaxAdapters = {{
    {"jax-dpa-xla-f32", "dpa-xla-f32",
     "JAX 0.10 CPU: jax.nn.dot_product_attention(implementation='xla'), f32", 60},
    {"jax-dpa-xla-bf16", "dpa-xla-bf16",
     "JAX 0.10 CPU: jax.nn.dot_product_attention(implementation='xla'), bf16", 60},
    {"jax-pallas-mha-f32", "pallas-mha-f32",
     "JAX 0.10 CPU: Pallas FlashAttention (pallas.ops.gpu.attention.mha, segment_ids) in interpret mode, f32", 120},
    {"jax-pallas-mha-bf16", "pallas-mha-bf16",
     "JAX 0.10 CPU: Pallas FlashAttention (pallas.ops.gpu.attention.mha, segment_ids) in interpret mode, bf16", 120},
    {"jax-pallas-decode-f32", "pallas-decode-f32",
     "JAX 0.10 CPU: Pallas decode attention (pallas.ops.gpu.decode_attention.gqa, split K) in interpret mode, f32", 120},
    {"jax-pallas-decode-bf16", "pallas-decode-bf16",
     "JAX 0.10 CPU: Pallas decode attention (pallas.ops.gpu.decode_attention.gqa, split K) in interpret mode, bf16",
     120},
}};

}  // namespace attncheck
