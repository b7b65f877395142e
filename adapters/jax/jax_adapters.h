// The JAX adapters (jax-*): process adapters (adapters/process) that start
// `python adapters/jax/backend.py --variant VARIANT` on the attncheck kit (python/) with
// jax and jaxlib 0.10 (CPU). Names only; the lookup is adapters/python_backend.h's (kJaxLibrary).
#pragma once

#include <array>

#include "adapters/python_backend.h"

namespace attncheck {

// call_timeout_s: XLA compiles each new shape and mask form (jit), a second or more on a loaded machine.
inline constexpr std::array<PythonAdapterName, 2> kJaxAdapters = {{
    {"jax-dpa-xla-f32", "dpa-xla-f32",
     "JAX 0.10 CPU: jax.nn.dot_product_attention(implementation='xla'), f32", 60},
    {"jax-dpa-xla-bf16", "dpa-xla-bf16",
     "JAX 0.10 CPU: jax.nn.dot_product_attention(implementation='xla'), bf16", 60},
}};

}  // namespace attncheck
