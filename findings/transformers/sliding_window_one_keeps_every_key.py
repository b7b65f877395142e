"""transformers 5.24.0: a sliding window of one key (config.sliding_window = 1, each token
attends only to itself) with a DynamicCache: DynamicSlidingWindowLayer.update keeps
`full_key_states[:, :, -self.sliding_window + 1:, :]`, which for sliding_window 1 is the
slice [-0:], i.e. every key instead of none, while get_mask_sizes reports the window's sizes
(sliding_window − 1 + query_length keys). The mask create_sliding_window_causal_mask builds
then has fewer key columns than the keys the cache returns: for one query SDPA broadcasts
the [1 × 1] mask over both keys and the query reads the past key it must not see; for more
queries the shapes clash (RuntimeError). sliding_window 2 and larger keep the right keys.
transformers 5.24.0, torch 2.13.0, CPU. Run: python sliding_window_one_keeps_every_key.py
Exit 0 while the defect shows, 1 once a window of one is the query's own key, 77 without transformers.
"""
import sys

try:
    import torch
    import transformers
    from transformers import DynamicCache, LlamaConfig
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import create_sliding_window_causal_mask
except ImportError:
    print(f"skipped: transformers is not installed for {sys.executable} (scripts/install-deps.sh --with-python)")
    sys.exit(77)

print(f"transformers {transformers.__version__}, torch {torch.__version__}")


class Layer:  # what sdpa_attention_forward reads from an attention module
    num_key_value_groups, is_causal, training = 1, True, False


def decode_one(window):
    """One past token in the cache, then one query: its output and the value of its own key."""
    config = LlamaConfig(hidden_size=8, num_attention_heads=1, num_key_value_heads=1, num_hidden_layers=1,
                         vocab_size=4, intermediate_size=8, sliding_window=window, layer_types=["sliding_attention"])
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    k, v, q = torch.randn(1, 1, 2, 4), torch.randn(1, 1, 2, 4), torch.randn(1, 1, 1, 4)
    cache = DynamicCache(config=config)
    cache.update(k[:, :, :1], v[:, :, :1], 0)  # the prompt's one token
    mask = create_sliding_window_causal_mask(config, torch.zeros(1, 1, 8), torch.ones(1, 2, dtype=torch.long), cache)
    keys, values = cache.update(k[:, :, 1:], v[:, :, 1:], 0)
    out, _ = sdpa_attention_forward(Layer(), q, keys, values, mask)
    return out[0, 0, 0], v[0, 0, 1], keys.shape[2], None if mask is None else tuple(mask.shape)


out, own, n_keys, mask_shape = decode_one(1)
print(f"sliding_window 1: the cache returned {n_keys} keys, the mask has shape {mask_shape}")
print(f"  output {out.tolist()}\n  own value {own.tolist()}")
out2, own2, n_keys2, _ = decode_one(2)
assert n_keys2 == 2, "control: sliding_window 2 returns the past key and the new one"
if n_keys == 2 and (out - own).abs().max() > 1e-3:
    print("sliding_window 1: the query also read the past key (the defect)")
    sys.exit(0)
print("sliding_window 1: the query read its own key alone; no longer reproduces")
sys.exit(1)
