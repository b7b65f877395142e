"""What each SDPA CUDA backend takes: one line per (backend, dtype, config, forward or
backward): ok, refused (with sdp_utils's reasons) or error (scripts/gpu/torch-cuda-check.sh;
FINDINGS.md "PyTorch on CUDA")."""
import re
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
TRIG = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?")
dev = "cuda"
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      torch.cuda.get_device_name(0), flush=True)

def call(backend, dtype, B=2, Hq=4, Hkv=4, Tq=64, Tk=64, D=64, Dv=None, causal=False, mask=None, grad=False,
         poison=False, empty_row=False):
    Dv = Dv or D
    g = torch.Generator(device="cpu").manual_seed(0)
    q = torch.randn(B, Hq, Tq, D, generator=g).to(dev, dtype)
    k = torch.randn(B, Hkv, Tk, D, generator=g).to(dev, dtype)
    v = torch.randn(B, Hkv, Tk, Dv, generator=g).to(dev, dtype)
    am = None
    if mask is not None:
        vis = torch.rand(B, 1, Tq, Tk, generator=g) > 0.3
        vis[..., 0] = True
        if empty_row:
            vis[:, :, 0, :] = False
        if poison:
            vis[:, :, :, Tk - 1] = False
            v[:, :, Tk - 1, :] = float("nan")
        am = vis.to(dev) if mask == "bool" else torch.zeros(vis.shape).masked_fill(~vis, float("-inf")).to(dev, dtype)
    if grad:
        q, k, v = (x.requires_grad_(True) for x in (q, k, v))
    with warnings.catch_warnings(record=True) as caught, sdpa_kernel([backend]):
        warnings.simplefilter("always")
        try:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=am, is_causal=causal, enable_gqa=Hq != Hkv)
            if grad:
                out.backward(torch.randn_like(out))
            torch.cuda.synchronize()
        except RuntimeError as e:
            if "No available kernel" in str(e):
                reasons = "; ".join(TRIG.sub("", str(w.message)).strip() for w in caught)
                return "REFUSED: " + reasons[:400]
            return "ERROR: " + str(e).splitlines()[0][:300]
    o = out.float()
    extra = ""
    if empty_row:
        r = o[:, :, 0]
        extra = " empty-row=" + ("nan" if r.isnan().any() else "zeros" if (r == 0).all() else f"other(max {r.abs().max().item():.3g})")
    if poison:
        extra += " poisoned-visible-rows-nan=%d/%d" % (int(o[:, :, 1:].isnan().any(-1).sum()), o[:, :, 1:].shape[0] * o.shape[1] * (Tq - 1))
    if grad:
        extra += " grads-finite=%s" % all(torch.isfinite(x.grad).all().item() for x in (q, k, v))
    return "ok" + extra

configs = {
    "D64": {}, "D8": {"D": 8}, "D12": {"D": 12}, "D16": {"D": 16}, "D100": {"D": 100}, "D128": {"D": 128},
    "D192": {"D": 192}, "D256": {"D": 256}, "D512": {"D": 512}, "D64-Dv32": {"Dv": 32},
    "gqa4:2": {"Hkv": 2}, "gqa4:1": {"Hkv": 1},
    "causal": {"causal": True}, "causal-Tq16-Tk64": {"causal": True, "Tq": 16}, "causal-Tq64-Tk16": {"causal": True, "Tk": 16},
    "Tq1-Tk37": {"Tq": 1, "Tk": 37}, "Tq5-Tk300": {"Tq": 5, "Tk": 300},
    "bool-mask": {"mask": "bool"}, "float-mask": {"mask": "float"}, "float-mask-gqa": {"mask": "float", "Hkv": 2},
    "float-mask-Dv32": {"mask": "float", "Dv": 32},
    "empty-row-float": {"mask": "float", "empty_row": True}, "empty-row-bool": {"mask": "bool", "empty_row": True},
    "poison-float": {"mask": "float", "poison": True},
}
for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH):
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for name, cfg in configs.items():
            for grad in (False, True):
                try:
                    r = call(backend, dtype, grad=grad, **cfg)
                except Exception as e:
                    r = "EXC: " + repr(e)[:300]
                print(f"{backend.name:20s} {str(dtype)[6:]:9s} {name:18s} {'bwd' if grad else 'fwd'} {r}", flush=True)
