// The PyTorch adapters (torch-*): process adapters (adapters/process) that start
// `python adapters/torch/backend.py --variant VARIANT` on the attncheck kit (python/)
// with torch 2.13 (CPU), made by scripts/install-deps.sh --with-python. Names and lookups only.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/adapter.h"

namespace attncheck {

struct TorchAdapterName {
  std::string_view name;
  std::string_view variant;  // backend.py --variant
  std::string_view description;
  int call_timeout_s;        // the least per-call limit: FlexAttention traces (eager) or compiles each new
                             // mask form and shape, more than the default 10 s on a loaded machine
};

inline constexpr std::array<TorchAdapterName, 12> kTorchAdapters = {{
    {"torch-sdpa-math-f32", "sdpa-math-f32", "PyTorch 2.13 CPU: scaled_dot_product_attention, MATH backend, f32", 0},
    {"torch-sdpa-math-bf16", "sdpa-math-bf16", "PyTorch 2.13 CPU: scaled_dot_product_attention, MATH backend, bf16", 0},
    {"torch-sdpa-math-f16", "sdpa-math-f16", "PyTorch 2.13 CPU: scaled_dot_product_attention, MATH backend, f16", 0},
    {"torch-sdpa-flash-f32", "sdpa-flash-f32",
     "PyTorch 2.13 CPU: scaled_dot_product_attention, FLASH_ATTENTION backend (fused CPU kernel), f32", 0},
    {"torch-sdpa-flash-bf16", "sdpa-flash-bf16",
     "PyTorch 2.13 CPU: scaled_dot_product_attention, FLASH_ATTENTION backend (fused CPU kernel), bf16", 0},
    {"torch-sdpa-flash-f16", "sdpa-flash-f16",
     "PyTorch 2.13 CPU: scaled_dot_product_attention, FLASH_ATTENTION backend (fused CPU kernel), f16", 0},
    {"torch-flex-eager-f32", "flex-eager-f32",
     "PyTorch 2.13 CPU: flex_attention eager (mask_mod, score_mod), f32", 120},
    {"torch-flex-eager-bf16", "flex-eager-bf16",
     "PyTorch 2.13 CPU: flex_attention eager (mask_mod, score_mod), bf16", 120},
    {"torch-flex-compiled-f32", "flex-compiled-f32",
     "PyTorch 2.13 CPU: torch.compile(flex_attention), Inductor CPU (g++), static shape buckets, f32", 300},
    {"torch-flex-compiled-bf16", "flex-compiled-bf16",
     "PyTorch 2.13 CPU: torch.compile(flex_attention), Inductor CPU (g++), static shape buckets, bf16", 300},
    {"torch-mha-f32", "mha-f32",
     "PyTorch 2.13 CPU: multi_head_attention_forward, key_padding_mask + attn_mask, need_weights=False, f32", 0},
    {"torch-mha-weights-f32", "mha-weights-f32",
     "PyTorch 2.13 CPU: multi_head_attention_forward, need_weights=True, f32", 0},
}};

// Where the backend runs from, or why it cannot: a Python ($ATTNCHECK_TORCH_PYTHON, else
// <source>/third_party/venv/bin/python) with torch 2.13 installed, backend.py and the kit.
struct TorchLookup {
  std::string command_prefix;  // "PYTHONPATH='…/python' exec '…/python' '…/backend.py'"
  std::string missing;         // why not; empty when found
};
TorchLookup FindTorchBackend();

// The shell command of one adapter: prefix + " --variant VARIANT".
std::string TorchCommand(const TorchLookup& lookup, const TorchAdapterName& adapter);

// The adapter: an exec: process adapter named `adapter.name`, its per-call limit at least
// `call_timeout_s` (ATTNCHECK_CALL_TIMEOUT may raise it further).
std::unique_ptr<Adapter> MakeTorchAdapter(const TorchLookup& lookup, const TorchAdapterName& adapter);

}  // namespace attncheck
