"""transformers 5.24.0: a Llama model whose RoPE rotates 2 dims (head_dim 2, or
partial_rotary_factor · head_dim = 2) with rope_type "dynamic" cannot be built:
LlamaRotaryEmbedding.__init__ calls _compute_dynamic_ntk_parameters, which raises
ZeroDivisionError computing base · α^(dim / (dim − 2)), even at factor 1 and below the
original context (α = 1). "linear", "yarn" and "llama3" build at the same size, and
rope_config_validation accepts the config.
transformers 5.24.0, torch 2.13.0, CPU. Run: python dynamic_ntk_rotary_dim_two.py
Exit 0 while the defect shows, 1 once it builds ("no longer reproduces"), 77 without transformers.
"""
import sys

try:
    import torch
    import transformers
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
except ImportError:
    print(f"skipped: transformers is not installed for {sys.executable} (scripts/install-deps.sh --with-python)")
    sys.exit(77)

print(f"transformers {transformers.__version__}, torch {torch.__version__}")


def config(rope_type, head_dim, **fields):
    return LlamaConfig(hidden_size=head_dim, num_attention_heads=1, num_key_value_heads=1, num_hidden_layers=1,
                       vocab_size=4, intermediate_size=8, head_dim=head_dim, max_position_embeddings=64,
                       rope_parameters={"rope_type": rope_type, "rope_theta": 10000.0, **fields})


for rope_type, fields in (("linear", {"factor": 2.0}), ("llama3", {"factor": 2.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 32})):
    LlamaRotaryEmbedding(config(rope_type, 2, **fields))  # controls: these build
LlamaRotaryEmbedding(config("dynamic", 4, factor=1.0))  # control: 4 rotated dims build
try:
    LlamaRotaryEmbedding(config("dynamic", 2, factor=1.0))
except ZeroDivisionError as e:
    print(f"dynamic, 2 rotated dims, factor 1: ZeroDivisionError: {e} (the defect)")
    sys.exit(0)
print("dynamic, 2 rotated dims: built; no longer reproduces")
sys.exit(1)
