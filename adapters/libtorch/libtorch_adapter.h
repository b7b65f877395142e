// Adapters over PyTorch 1.13's C++ API (Debian libtorch-dev), built when CMake
// finds Torch into the module libattncheck_libtorch.so, which the program loads on
// first use (adapters/libtorch/loader.h); see adapters/libtorch/README.md.
//   libtorch-sdpa            at::_scaled_dot_product_attention, bool mask (true = attend)
//                            or is_causal declared top-left (the implementation's tril)
//   libtorch-masked-softmax  scores, at::_masked_softmax (true = masked out), · V
//   libtorch-mha             torch::nn::functional::multi_head_attention_forward with
//                            identity projections, bool attn_mask (true = not allowed)
//                            + key_padding_mask, or a float attn_mask (added)
// This header needs no torch headers: the registry includes it in every build and
// lists the three from it without loading the module.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"

namespace attncheck {

struct LibtorchAdapterName {
  std::string_view name;
  std::string_view description;  // one line for `attncheck list`
};

inline constexpr std::array<LibtorchAdapterName, 3> kLibtorchAdapters = {{
    {"libtorch-sdpa",
     "PyTorch 1.13 at::_scaled_dot_product_attention: bool mask (true = attend) or is_causal (top-left)"},
    {"libtorch-masked-softmax", "PyTorch 1.13 matmul + at::_masked_softmax (true = masked out) + matmul"},
    {"libtorch-mha",
     "PyTorch 1.13 C++ F::multi_head_attention_forward, identity projections, bool attn_mask (true = not "
     "allowed) + key_padding_mask, or float attn_mask (added)"},
}};

// Factories in the order of kLibtorchAdapters (in the module only).
std::vector<std::function<std::unique_ptr<Adapter>()>> LibtorchAdapterFactories();

}  // namespace attncheck
