"""torch.compile(flex_attention, dynamic=True) on the CPU: a mask_mod reading a captured
mask tensor fails to build, "'cur_kvSplitSize7' was not declared in this scope".

Inductor's C++ FlexAttention template renames its kv split-size symbol (e.g. ks3) in
the generated code with str.replace, which also rewrites a longer symbol with that prefix
(ks37, a size of the captured mask) into the undeclared cur_kvSplitSize7.
torch 2.13.0+cpu; g++ 12. Run: python flex_compile_dynamic_symbol.py
Exit 0 while the defect shows, 1 once dynamic shapes compile ("no longer reproduces").
"""
import sys

try:
    import torch
except ImportError:
    print(f"skipped: torch is not installed for {sys.executable} (scripts/install-deps.sh --with-python)")
    sys.exit(77)
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
torch.manual_seed(0)
q, k, v = (torch.randn(1, 1, t, 4) for t in (5, 7, 7))
visible = torch.rand(1, 5, 7) < 0.7  # a user's dense mask, read by the mask_mod


def mask_mod(b, h, q_idx, kv_idx):
    return visible[b, q_idx, kv_idx]


block_mask = create_block_mask(mask_mod, 1, None, 5, 7, device="cpu")
eager = flex_attention(q, k, v, block_mask=block_mask)
static = torch.compile(flex_attention, dynamic=False)(q, k, v, block_mask=block_mask)
print("static shapes: max |compiled - eager| =", (static - eager).abs().max().item())
try:
    torch._dynamo.reset()
    dynamic = torch.compile(flex_attention, dynamic=True)(q, k, v, block_mask=block_mask)
    print("dynamic shapes: compiled, max |compiled - eager| =", (dynamic - eager).abs().max().item())
    print("no longer reproduces")
    sys.exit(1)
except Exception as e:  # torch._inductor.exc.InductorError: CppCompileError
    lines = [line.strip() for line in str(e).splitlines() if "error:" in line]
    print("dynamic shapes:", type(e).__name__, lines[0] if lines else str(e)[:300])
    sys.exit(0)
