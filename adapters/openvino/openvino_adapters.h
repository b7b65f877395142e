// The OpenVINO adapters (openvino-*): process adapters (adapters/process) that start
// `python adapters/openvino/backend.py --variant VARIANT` on the attncheck kit (python/) with
// openvino 2026.4 (CPU plugin). Names only; the lookup is adapters/python_backend.h's (kOpenVinoLibrary).
#pragma once

#include <array>

#include "adapters/python_backend.h"

namespace attncheck {

// call_timeout_s: the CPU plugin compiles one model per mask form (dynamic shapes), a second
// or two on a loaded machine.
inline constexpr std::array<PythonAdapterName, 2> kOpenVinoAdapters = {{
    {"openvino-sdpa-f32", "sdpa-f32",
     "OpenVINO 2026.4 CPU plugin: ScaledDotProductAttention-13 one-node model (bool/additive mask, causal), f32", 60},
    {"openvino-sdpa-bf16", "sdpa-bf16",
     "OpenVINO 2026.4 CPU plugin: the same model under INFERENCE_PRECISION_HINT bf16 (refuses every case on a CPU "
     "without native bf16)", 60},
}};

}  // namespace attncheck
