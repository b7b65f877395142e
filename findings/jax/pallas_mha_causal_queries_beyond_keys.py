"""Pallas's FlashAttention kernel (jax.experimental.pallas.ops.gpu.attention.mha) with
causal=True and more queries than keys reads past the end of K and V: in interpret mode
the rows of the second query block come out NaN.

mha_forward_kernel loops over key blocks up to
    upper_bound = lax.div(block_q * (start_q + 1) + block_k - 1, block_k)
for causal, without clamping it to the number of key blocks (pl.cdiv(seq_len, block_k),
the non-causal bound). With T = 32 queries, S = 16 keys and 16 x 16 blocks, query block 1
runs two key blocks and loads keys 16..31 of a 16-key array (the interpreter returns NaN
for the out-of-bounds slice; a GPU reads whatever lies there). mha checks only that T and
S are multiples of their blocks. jax.nn.dot_product_attention(is_causal=True), the same
top-left mask (jnp.tril), gives finite rows.
jax 0.10.2, jaxlib 0.10.2, CPU (interpret=True). Run: python pallas_mha_causal_queries_beyond_keys.py
Exit 0 while the defect shows, 1 once the rows agree ("no longer reproduces"), 77 without jax.
"""
import os
import sys

os.environ["JAX_PLATFORMS"] = "cpu"
try:
    import jax
    import jax.numpy as jnp
    from jax.experimental.pallas.ops.gpu import attention
except ImportError:
    print(f"skipped: jax is not installed for {sys.executable} (scripts/install-deps.sh --with-python)")
    sys.exit(77)

print(f"jax {jax.__version__}, jaxlib {jax.lib.__version__}, {jax.devices()[0].platform}, interpret mode")
key_q, key_k, key_v = jax.random.split(jax.random.key(0), 3)
q = jax.random.normal(key_q, (1, 32, 1, 8))  # [batch, 32 queries, heads, head dim]
k = jax.random.normal(key_k, (1, 16, 1, 8))  # 16 keys
v = jax.random.normal(key_v, (1, 16, 1, 8))
blocks = attention.BlockSizes(block_q=16, block_k=16)
out = attention.mha(q, k, v, None, sm_scale=0.35, causal=True, block_sizes=blocks, interpret=True)
want = jax.nn.dot_product_attention(q, k, v, scale=0.35, is_causal=True)
error = jnp.abs(out - want).max(axis=(0, 2, 3))  # per query
print("max |mha - dot_product_attention|, queries 0-15:", float(error[:16].max()))
print("max |mha - dot_product_attention|, queries 16-31:", float(error[16:].max()))
if bool(jnp.all(error < 1e-5)):
    print("no longer reproduces")
    sys.exit(1)
sys.exit(0)
