"""transformers 5.24.0: YaRN whose correction range comes out reversed keeps every
frequency unscaled. _compute_yarn_parameters finds the pair indices where the pairs turn
beta_fast and beta_slow times over the original context L (find_correction_range: floor,
ceil, then max(low, 0) and min(high, dim - 1) one side each). When L < 2π·beta_slow (or
the slowest pair still turns beta_fast times over L) high ends below low, and
linear_ramp_factor divides by high - low < 0: the ramp flips and every pair keeps its
unscaled frequency. The paper's NTK-by-parts interpolates every pair that turns fewer than
beta_slow times (by 1/factor); ggml's rope_yarn keeps the step at low (ramp width
max(0.001, high - low)). Degenerate parameters (no real model has L < 13): a convention,
undocumented. transformers 5.24.0, torch 2.13.0, CPU.
Run: python yarn_reversed_correction_range.py
Exit 0 while the flip shows, 1 once the frequencies are scaled ("no longer reproduces"),
77 without transformers.
"""
import math
import sys

try:
    import torch
    import transformers
    from transformers import GPTNeoXConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
except ImportError:
    print(f"skipped: transformers is not installed for {sys.executable} (scripts/install-deps.sh --with-python)")
    sys.exit(77)

print(f"transformers {transformers.__version__}, torch {torch.__version__}")
dim, base, factor, beta_fast, beta_slow = 32, 500000.0, 16.0, 16.0, 2.0


def ratios(context):
    """inv_freq / the unscaled frequency of each pair, for original context `context`."""
    config = GPTNeoXConfig(hidden_size=dim, num_attention_heads=1, max_position_embeddings=context,
                           rope_parameters={"rope_type": "yarn", "rope_theta": base, "partial_rotary_factor": 1.0,
                                            "factor": factor, "original_max_position_embeddings": context,
                                            "beta_fast": beta_fast, "beta_slow": beta_slow})
    inv_freq, _ = ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return (inv_freq.double() / theta).tolist()


control = ratios(4096)  # control: a usual context interpolates its slow pairs by 1/factor
assert abs(control[-1] - 1 / factor) < 1e-6, control
flipped = ratios(4)  # every pair turns fewer than beta_slow times over L = 4 tokens
turns = 4 / (2 * math.pi)
print(f"L = 4: the fastest pair turns {turns:.3f} times (< beta_slow = {beta_slow:g}); "
      f"inv_freq / theta = {min(flipped):.4f} .. {max(flipped):.4f} (the paper: {1 / factor:g} for every pair)")
if all(abs(r - 1.0) < 1e-6 for r in flipped):
    print("every pair unscaled: the reversed correction range flips the ramp (the convention)")
    sys.exit(0)
print("the frequencies are scaled; no longer reproduces")
sys.exit(1)
