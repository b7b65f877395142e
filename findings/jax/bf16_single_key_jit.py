"""jax.jit(jax.nn.dot_product_attention) on the CPU in bfloat16 with one query and one key
(batch 1, one head: a first decode step) fails to compile: "INVALID_ARGUMENT: Algorithm not
supported by the ElementalIrEmitter: ALG_DOT_BF16_BF16_F32".

_dot_product_attention_core asks for precision=DotAlgorithmPreset.BF16_BF16_F32 on bf16
inputs and falls back to the default precision in a try/except around the einsum. Eagerly,
the einsum itself raises this error inside the try and the fallback runs; under jit the error
comes when XLA compiles the whole function, after tracing, so the fallback never runs. Only
the one-query, one-key dot fails (XLA:CPU's elemental emitter takes no dot algorithm); two
keys, two queries, more heads or a batch of two compile.
jax 0.10.2, jaxlib 0.10.2, CPU. Run: python bf16_single_key_jit.py
Exit 0 while the defect shows, 1 once it compiles ("no longer reproduces"), 77 without jax.
"""
import os
import sys

os.environ["JAX_PLATFORMS"] = "cpu"
try:
    import jax
    import jax.numpy as jnp
except ImportError:
    print(f"skipped: jax is not installed for {sys.executable} (scripts/install-deps.sh --with-python)")
    sys.exit(77)

print(f"jax {jax.__version__}, jaxlib {jax.lib.__version__}, {jax.devices()[0].platform}")
q = jnp.ones((1, 1, 1, 8), jnp.bfloat16)  # [batch, query tokens, heads, head dim]
kv = jnp.ones((1, 1, 1, 8), jnp.bfloat16)  # one key
two = jnp.ones((1, 2, 1, 8), jnp.bfloat16)  # two keys
print("eager, one key:", jax.nn.dot_product_attention(q, kv, kv).ravel()[:2])
print("jit, two keys:", jax.jit(jax.nn.dot_product_attention)(q, two, two).ravel()[:2])
try:
    out = jax.jit(jax.nn.dot_product_attention)(q, kv, kv)
    print("jit, one key: compiled,", out.ravel()[:2])
    print("no longer reproduces")
    sys.exit(1)
except Exception as e:  # jaxlib's JaxRuntimeError
    print("jit, one key:", type(e).__name__, str(e).splitlines()[0][:200])
    sys.exit(0)
