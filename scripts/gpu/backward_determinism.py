"""Three backward calls on the same inputs per SDPA backend: how many dq/dk/dv elements differ
in their bits (scripts/gpu/torch-cuda-check.sh; FINDINGS.md "PyTorch on CUDA")."""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
g = torch.Generator().manual_seed(0)
for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH):
    for dtype in (torch.float16, torch.bfloat16):
        q, k, v, do = (torch.randn(1, 4, 512, 64, generator=g).to("cuda", dtype) for _ in range(4))
        grads = []
        for _ in range(3):
            qq, kk, vv = (x.clone().requires_grad_(True) for x in (q, k, v))
            with sdpa_kernel([backend]):
                out = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True)
            out.backward(do)
            grads.append([x.grad.view(torch.int16).clone() for x in (qq, kk, vv)])
        diff = [max(int((grads[0][t] != grads[r][t]).sum()) for r in (1, 2)) for t in range(3)]
        print(f"{backend.name:20s} {str(dtype)[6:]:9s} elements whose bits differ between calls: "
              f"dq {diff[0]}, dk {diff[1]}, dv {diff[2]} of {q.numel()}", flush=True)
