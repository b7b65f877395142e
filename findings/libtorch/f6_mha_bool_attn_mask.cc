// F6 (FINDINGS.md): the C++ frontend's MultiheadAttention adds a bool attn_mask to the
// scores (true → +1) instead of blocking the keys it marks (pytorch #80494, open).
// Build against libtorch (Debian 12: apt install libtorch-dev) as findings/CMakeLists.txt does.
// Exit 0: the defect shows; 1: it no longer reproduces.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <limits>

int main() {
  std::printf("libtorch %s (C++ frontend), built with gcc %s, %d intra-op thread(s)\n", TORCH_VERSION, __VERSION__,
              at::get_num_threads());
  torch::NoGradGuard no_grad;
  // One head, E = 2, identity projections: out = softmax(q·kᵀ/√2 + mask) · v.
  torch::nn::MultiheadAttention mha(torch::nn::MultiheadAttentionOptions(2, 1));
  mha->in_proj_weight.copy_(torch::cat({torch::eye(2), torch::eye(2), torch::eye(2)}));
  mha->in_proj_bias.zero_();
  mha->out_proj->weight.copy_(torch::eye(2));
  mha->out_proj->bias.zero_();
  // [L, N, E]: two tokens, every score 0; value 1 for token 0, 3 for token 1.
  const torch::Tensor q = torch::zeros({2, 1, 2});
  const torch::Tensor v = torch::tensor({1.0f, 1.0f, 3.0f, 3.0f}).view({2, 1, 2});
  // Causal: query 0 must not see key 1. Documented: a bool mask's true is "not allowed to attend".
  const torch::Tensor blocked = torch::tensor({false, true, false, false}).view({2, 2});
  const float inf = std::numeric_limits<float>::infinity();
  const torch::Tensor additive = torch::tensor({0.0f, -inf, 0.0f, 0.0f}).view({2, 2});
  const float with_bool = std::get<0>(mha->forward(q, q, v, {}, false, blocked))[0][0][0].item<float>();
  const float with_float = std::get<0>(mha->forward(q, q, v, {}, false, additive))[0][0][0].item<float>();
  const float plus_one = (1.0f + 3.0f * std::exp(1.0f)) / (1.0f + std::exp(1.0f));
  std::printf("  query 0, bool attn_mask [[false, true], [false, false]]: out = %g, right 1 "
              "(the weighted mean with key 1's score raised by 1: %g)\n", with_bool, plus_one);
  std::printf("  query 0, float attn_mask [[0, -inf], [0, 0]]: out = %g, right 1\n", with_float);
  if (with_bool == 1.0f) {
    std::printf("F6 no longer reproduces: the bool attn_mask blocks key 1\n");
    return 1;
  }
  std::printf("F6 reproduces: the bool attn_mask is added to the scores as 0/1\n");
  return 0;
}
