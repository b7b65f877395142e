"""F.scaled_dot_product_attention on CUDA, cuDNN backend: a bool attn_mask blocks with a
finite fill, so a blocked key whose score is large enough takes part in attention, and a
row whose every key is blocked attends to all of them.

SDPA's documentation: a boolean attn_mask "indicates that the element should take part
in attention" where True. Before cuDNN, aten converts a bool mask with
convert_boolean_attn_mask_cudnn (aten/src/ATen/native/transformers/attention.cpp), a finite
fill where the other backends use -inf (pytorch PR #140837 moved it from -65504 to -1024).
One query, two keys: key 0 visible with score 0, key 1 blocked with score x; values 0 and
1, so the output is the weight the blocked key gets.
Run on a machine with an NVIDIA GPU: python cudnn_bool_mask_fill.py
Exit 0 while the defect shows, 1 once it no longer reproduces, 77 without CUDA.
"""
import math
import sys

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:
    print(f"skipped: torch is not installed for {sys.executable}")
    sys.exit(77)
if not torch.cuda.is_available():
    print(f"skipped: torch {torch.__version__} sees no CUDA device (this defect is in the cuDNN backend)")
    sys.exit(77)


def sdpa(backend, q, k, v, mask):
    with sdpa_kernel([backend]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
      f"{torch.cuda.get_device_name(0)}")
options = {"device": "cuda", "dtype": torch.float16}
q = torch.zeros(1, 1, 1, 16, **options)
q[..., 0] = 1.0
k = torch.zeros(1, 1, 2, 16, **options)
v = torch.zeros(1, 1, 2, 16, **options)
v[..., 1, :] = 1.0
visible = torch.tensor([True, False], device="cuda").view(1, 1, 1, 2)
additive = torch.zeros(1, 1, 1, 2, **options).masked_fill(~visible, float("-inf"))
leaked, fills = [], []
for x in (16.0, 512.0, 1000.0, 1024.0, 1040.0, 2048.0, 16384.0, 65504.0):
    k[..., 1, 0] = x
    try:
        weight = sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, visible)[0, 0, 0, 0].item()
    except RuntimeError as e:
        print(f"skipped: the cuDNN backend refuses the call ({str(e).splitlines()[0]})")
        sys.exit(77)
    neg_inf = sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, additive)[0, 0, 0, 0].item()
    reference = sdpa(SDPBackend.MATH, q, k, v, visible)[0, 0, 0, 0].item()
    print(f"blocked key's score {x:7g}: its weight with the bool mask {weight:.4g} (cuDNN), "
          f"{neg_inf:.4g} (cuDNN, -inf mask), {reference:.4g} (math, bool mask)")
    if weight > 1e-3:
        leaked.append(x)
    if 1e-3 < weight < 1 - 1e-3:
        fills.append(math.log(weight / (1 - weight)) - x)
if fills:
    print(f"the fill the bool mask became: about {sum(fills) / len(fills):.1f}")
k[..., 1, 0] = 1.0
none = torch.zeros(1, 1, 1, 2, dtype=torch.bool, device="cuda")
row = sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, none)[0, 0, 0, 0].item()
row_neg_inf = sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v,
                   torch.full((1, 1, 1, 2), float("-inf"), **options))[0, 0, 0, 0].item()
row_math = sdpa(SDPBackend.MATH, q, k, v, none)[0, 0, 0, 0].item()
print(f"a row with every key blocked: {row:.4g} (cuDNN, bool), {row_neg_inf:.4g} (cuDNN, -inf), "
      f"{row_math:.4g} (math, bool: a row with no key gives 0)")
if leaked or abs(row - row_math) > 1e-3:
    print(f"reproduces: blocked keys take part at scores {leaked}; the empty row reads its keys")
    sys.exit(0)
print("no longer reproduces")
sys.exit(1)
