// F9 (FINDINGS.md): the C++ frontend's MultiheadAttention applies key_padding_mask inside
// AT_DISPATCH_FLOATING_TYPES (float and double only), so a bf16 module with a padding mask throws.
// Build against libtorch (Debian 12: apt install libtorch-dev) as findings/CMakeLists.txt does.
// Exit 0: the defect shows; 1: it no longer reproduces; 2: the call failed for another reason.
#include <torch/torch.h>

#include <cstdio>
#include <string>

int main() {
  std::printf("libtorch %s (C++ frontend), built with gcc %s, %d intra-op thread(s)\n", TORCH_VERSION, __VERSION__,
              at::get_num_threads());
  torch::NoGradGuard no_grad;
  torch::nn::MultiheadAttention mha(torch::nn::MultiheadAttentionOptions(2, 1));
  mha->to(torch::kBFloat16);
  const torch::Tensor x = torch::ones({2, 1, 2}, torch::kBFloat16);       // [L, N, E]
  const torch::Tensor padding = torch::tensor({false, true}).view({1, 2});  // [N, S]: key 1 is padding
  try {
    const torch::Tensor out = std::get<0>(mha->forward(x, x, x, padding, false));
    std::printf("  bf16 MultiheadAttention with key_padding_mask: ran, out[0] = %g\n",
                out[0][0][0].to(torch::kFloat).item<float>());
    std::printf("F9 no longer reproduces: bf16 with key_padding_mask runs\n");
    return 1;
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    std::printf("  bf16 MultiheadAttention with key_padding_mask throws: %s\n",
                what.substr(0, what.find('\n')).c_str());
    if (what.find("BFloat16") == std::string::npos) {
      std::printf("F9 unclear: the call failed for another reason\n");
      return 2;
    }
    mha->to(torch::kFloat);
    const torch::Tensor out = std::get<0>(mha->forward(x.to(torch::kFloat), x.to(torch::kFloat), x.to(torch::kFloat),
                                                       padding, false));
    std::printf("  the same call in f32 runs (output finite: %s)\n",
                torch::isfinite(out).all().item<bool>() ? "yes" : "no");
    std::printf("F9 reproduces: masked_fill for key_padding_mask is dispatched for float and double only\n");
    return 0;
  }
}
