// Adapters over the ggml CPU backend (third_party/llama.cpp/ggml, fetched by
// scripts/fetch-ggml.sh): `ggml` (rope_ext + mul_mat + soft_max_ext, f32, cached
// decode session), `ggml-flash` (flash_attn_ext, F16 K/V) and `ggml-flash-ref`
// (the same with the CPU backend's reference path). See adapters/ggml/README.md.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "adapters/adapter.h"

namespace attncheck {

// Factories of ggml, ggml-flash, ggml-flash-ref, in that order. The registry adds
// them with the built-ins when the build has ggml (ATTNCHECK_HAVE_GGML).
std::vector<std::function<std::unique_ptr<Adapter>()>> GgmlAdapterFactories();

}  // namespace attncheck
