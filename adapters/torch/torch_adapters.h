// The PyTorch adapters (torch-*): process adapters (adapters/process) that start
// `python adapters/torch/backend.py --variant VARIANT` on the attncheck kit (python/)
// with torch 2.13 (CPU), made by scripts/install-deps.sh --with-python. Names only; the
// lookup is adapters/python_backend.h's (kTorchLibrary).
#pragma once

#include <array>

#include "adapters/python_backend.h"

namespace attncheck {

inline constexpr std::array<PythonAdapterName, 12> kTorchAdapters = {{
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

// On an NVIDIA GPU, with ATTNCHECK_TORCH_CUDA_PYTHON naming a Python whose torch has CUDA
// (kTorchCudaLibrary): SDPA's fused CUDA backends (and its math path, the control) and
// compiled FlexAttention's Triton kernel, f16 and bf16.
inline constexpr std::array<PythonAdapterName, 10> kTorchCudaAdapters = {{
    {"torch-cuda-sdpa-flash-f16", "cuda-sdpa-flash-f16", "PyTorch on CUDA: SDPA, FLASH_ATTENTION backend, f16", 60},
    {"torch-cuda-sdpa-flash-bf16", "cuda-sdpa-flash-bf16", "PyTorch on CUDA: SDPA, FLASH_ATTENTION backend, bf16", 60},
    {"torch-cuda-sdpa-efficient-f16", "cuda-sdpa-efficient-f16",
     "PyTorch on CUDA: SDPA, EFFICIENT_ATTENTION backend, f16", 60},
    {"torch-cuda-sdpa-efficient-bf16", "cuda-sdpa-efficient-bf16",
     "PyTorch on CUDA: SDPA, EFFICIENT_ATTENTION backend, bf16", 60},
    {"torch-cuda-sdpa-cudnn-f16", "cuda-sdpa-cudnn-f16", "PyTorch on CUDA: SDPA, CUDNN_ATTENTION backend, f16", 60},
    {"torch-cuda-sdpa-cudnn-bf16", "cuda-sdpa-cudnn-bf16", "PyTorch on CUDA: SDPA, CUDNN_ATTENTION backend, bf16", 60},
    {"torch-cuda-sdpa-math-f16", "cuda-sdpa-math-f16", "PyTorch on CUDA: SDPA, MATH backend, f16", 60},
    {"torch-cuda-sdpa-math-bf16", "cuda-sdpa-math-bf16", "PyTorch on CUDA: SDPA, MATH backend, bf16", 60},
    {"torch-cuda-flex-compiled-f16", "cuda-flex-compiled-f16",
     "PyTorch on CUDA: torch.compile(flex_attention), Triton, static shape buckets, f16", 300},
    {"torch-cuda-flex-compiled-bf16", "cuda-flex-compiled-bf16",
     "PyTorch on CUDA: torch.compile(flex_attention), Triton, static shape buckets, bf16", 300},
}};

}  // namespace attncheck
