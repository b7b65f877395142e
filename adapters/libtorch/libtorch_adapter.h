// Adapters over PyTorch 1.13's C++ API (Debian libtorch-dev), built when CMake
// finds Torch (ATTNCHECK_HAVE_LIBTORCH); see adapters/libtorch/README.md.
//   libtorch-sdpa            at::_scaled_dot_product_attention, bool mask (true = attend)
//                            or is_causal declared top-left (the implementation's tril)
//   libtorch-masked-softmax  scores, at::_masked_softmax (true = masked out), · V
//   libtorch-mha             torch::nn::functional::multi_head_attention_forward with
//                            identity projections, bool attn_mask (true = not allowed)
//                            + key_padding_mask, or a float attn_mask (added)
// This header needs no torch headers: the registry includes it in every build.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"

namespace attncheck {

inline constexpr std::array<std::string_view, 3> kLibtorchAdapterNames = {"libtorch-sdpa", "libtorch-masked-softmax",
                                                                          "libtorch-mha"};

// Factories in the order of kLibtorchAdapterNames (only in a build with libtorch).
std::vector<std::function<std::unique_ptr<Adapter>()>> LibtorchAdapterFactories();

}  // namespace attncheck
