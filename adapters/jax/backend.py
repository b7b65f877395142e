#!/usr/bin/env python3
"""JAX 0.10's CPU attention as attncheck process backends, one per variant:

    python adapters/jax/backend.py --variant dpa-xla-f32

Each variant is one adapter (jax-<variant>) with its own contract, declared in VARIANTS
below with the source of every claim: jax's installed Python source
(jax/_src/nn/functions.py: dot_product_attention, _dot_product_attention_xla,
_dot_product_attention_core, _apply_masks and the mask helpers), checked by
`attncheck probe`. JAX runs on the CPU only (JAX_PLATFORMS=cpu), one XLA thread, its
logs on stderr; the kit (python/attncheck) speaks the process protocol.
--defect-window-one-wider and --defect-backward-unmasked (mha's backward called without
its causal mask, the forward kept) plant deliberate slips for the tests.
"""

import gc
import os
import sys
import zlib

# Before jax is imported: the CPU platform alone (no probing for accelerators), one
# intra-op thread (bitwise repeatable, the harness runs its own workers), C++ logs quiet.
os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import attncheck  # noqa: E402
from attncheck.library import (ALL_ROPE_SCALINGS, F32_THROUGHOUT, HARNESS_ENCODINGS, library_capabilities,  # noqa: E402
                                P_IN_INPUT_DTYPE, backend_arguments, kv_cache_session)

JAX_DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16}

# HARNESS_ENCODINGS: RoPE rotates q and k before the call; a score bias arrives folded
# into the additive mask, which becomes dot_product_attention's `bias`. LIMITS: small cases
# plus a size tier (Tk 256–512, D 64/128); the XLA path materialises the [B, N, T, S]
# logits (no tiling), so the tier checks the same code at the sizes models run.
# Accuracy (_dot_product_attention_core): logits = einsum("BTNH,BSNH->BNTS", q, k,
# preferred_element_type=promote(q.dtype, f32)) with precision BF16_BF16_F32 for bf16
# (f32 accumulation, f32 scores), the softmax "always carried out in fp32", then
# probs.astype(key.dtype) (P rounded to the input dtype: P_IN_INPUT_DTYPE) and
# einsum('BNTS,BSNH->BTNH', probs, value) in the input dtype (XLA's CPU dot accumulates in f32).


def on_device(x, dtype=None):
    """A numpy array as a jax array, cast and laid out on the host: an eager jnp operation
    (astype, indexing, ~) compiles one XLA program per new shape, as long as the call itself.
    The casts are exact (bf16 cases hold bf16 values; answers widen bf16 to f32)."""
    return jax.device_put(np.ascontiguousarray(x if dtype is None else np.asarray(x).astype(dtype)))


def dpa_capabilities(dtype):
    # dot_product_attention's docstring: `mask` "is a boolean mask where `True` indicates the
    # element should take part in attention" (bool-visible; bool-blocked is inverted here),
    # `bias` "to be added to logits" (an additive mask is split as a model passes one: its
    # blocked entries as `mask`, its finite score bias as `bias`), `is_causal` builds
    # jnp.tril(ones(T, S)) (_get_causal_mask: j ≤ i, top-left whatever T and S).
    # The descriptor's forms as JAX's arguments: causal 1 → is_causal, window (left, right)
    # → local_window_size (_get_window_mask: i ≤ j + left and i ≥ j − right, around key i:
    # top-left like the causal mask), seqused_q / seqused_k → query_seq_lengths /
    # key_value_seq_lengths (_get_padding_mask_logits: i < q_len, j < kv_len; no left pad).
    return library_capabilities(
        dtype,
        masks=["descriptor", "bool-visible", "bool-blocked", "add-inf", "causal-top-left"],
        descriptor_forms=["causal_top_left", "window", "seqused_q", "seqused_k"],
        # _apply_masks replaces every masked logit by _get_large_negative (−0.7 · f32 max,
        # finite) with jnp.where, so a row with no visible key is a softmax of equal logits:
        # the mean of all S values of its batch row (padding slots included).
        masked_rows="mean-v",
        # _get_padding_mask_encoded then zeroes the query rows past query_seq_lengths: 0 there.
        pad_query_rows="zeros",
        blocking="fill",
        # jnp.where replaces a blocked key's logit, NaN included, so a NaN K slot stays out;
        # its probability is exp(−huge) = 0, and 0 · NaN in a blocked V slot is NaN in the
        # P·V einsum. The docs' formula is softmax(QKᵀ/√d + B)·V: isolation is not promised.
        nan_isolation=False,
        queries_beyond_keys=True,
        encodings=HARNESS_ENCODINGS, rope_scalings=ALL_ROPE_SCALINGS,
        # _dot_product_attention_xla: query reshaped (B, T, K, G, H), so head n reads kv
        # head n // G. `value` "should have the same shape as the `key` array": Dv = D.
        gqa=True, softcap=False, value_dim_differs=False, scale_argument=True,
        # jax.vjp of the same jitted call (XLA differentiates _dot_product_attention_xla)
        has_backward=True,
        accuracy=P_IN_INPUT_DTYPE if dtype != "f32" else F32_THROUGHOUT)


DEFECT_WINDOW = False  # --defect-window-one-wider: the left window admits one key more


def descriptor_arguments(d, batch, tq, tk):
    """dot_product_attention's keyword arguments for a descriptor, or Refuse where JAX's
    arguments cannot say it (a window around i + nk − nq: local_window_size is top-left)."""
    if d.varlen or d.paged or d.prefix_len is not None or d.chunk > 0 or d.leftpad_k is not None:
        raise attncheck.Refuse("descriptor form not declared")
    if d.causal not in (0, 1):
        raise attncheck.Refuse("is_causal is top-left only (jnp.tril)")
    kwargs = {"is_causal": d.causal == 1}
    q_len = d.seqused_q if d.seqused_q is not None else np.full(batch, tq)
    kv_len = d.seqused_k if d.seqused_k is not None else np.full(batch, tk)
    if d.window_left >= 0 or d.window_right >= 0:
        if d.causal == 0 and np.any(q_len != kv_len):
            raise attncheck.Refuse("local_window_size is aligned top-left (query i's window is around key i); "
                                   "this window is around i + nk - nq")
        unbounded = tq + tk
        left = d.window_left if d.window_left >= 0 else unbounded
        right = d.window_right if d.window_right >= 0 else unbounded
        kwargs["local_window_size"] = (int(left) + (1 if DEFECT_WINDOW and d.window_left >= 0 else 0), int(right))
    if d.seqused_q is not None:
        kwargs["query_seq_lengths"] = on_device(d.seqused_q, np.int32)
    if d.seqused_k is not None:
        kwargs["key_value_seq_lengths"] = on_device(d.seqused_k, np.int32)
    return kwargs


def mask_arguments(call, batch, tq, tk):
    """dot_product_attention's `mask` / `bias` / `is_causal` for a dense convention."""
    convention = call.mask_convention
    if convention == "causal-top-left":
        return {"is_causal": True}
    if convention == "bool-visible":
        return {"mask": on_device(np.asarray(call.mask)[:, None])}
    if convention == "bool-blocked":
        return {"mask": on_device(~np.asarray(call.mask)[:, None])}
    if convention == "add-inf":
        blocked, bias = attncheck.additive_blocked(call)
        kwargs = {"mask": on_device(~np.asarray(blocked)[:, None])}
        if np.any(bias != 0):
            kwargs["bias"] = on_device(np.asarray(bias, np.float32)[:, None])  # added to the f32 logits
        return kwargs
    raise attncheck.Refuse(f"mask convention {convention} is not taken")


def dpa_arguments(q, k, v, call):
    """dot_product_attention's keyword arguments for the call, and q, k, v → BTNH in the dtype."""
    batch, tq, tk = q.shape[0], q.shape[2], k.shape[2]
    if v.shape[3] != k.shape[3]:
        raise attncheck.Refuse("dot_product_attention: value must have the shape of key (Dv = D)")
    if call.mask_convention == "descriptor":
        kwargs = descriptor_arguments(call.descriptor, batch, tq, tk)
    else:
        kwargs = mask_arguments(call, batch, tq, tk)
    dtype = JAX_DTYPES[call.dtype]
    return kwargs, lambda x: on_device(x.transpose(0, 2, 1, 3), dtype)


def from_btnh(x):
    return np.asarray(x).astype(np.float32).transpose(0, 2, 1, 3)


def dpa_xla(q, k, v, call):
    """q [B, Hq, Tq, D], k/v [B, Hkv, Tk, D] (numpy float32 holding the dtype's values) →
    out [B, Hq, Tq, D] float32, through dot_product_attention's BTNH layout."""
    kwargs, to_btnh = dpa_arguments(q, k, v, call)
    return from_btnh(Kernel.attend(to_btnh(q), to_btnh(k), to_btnh(v), scale=float(call.scale), **kwargs))


def dpa_xla_backward(call, dout):
    """dq, dk, dv of dot_product_attention for dO (jax.vjp under jit, the call's arguments)."""
    kwargs, to_btnh = dpa_arguments(call.q, call.k, call.v, call)
    grads = Kernel.pullback(to_btnh(call.q), to_btnh(call.k), to_btnh(call.v), to_btnh(dout),
                            scale=float(call.scale), **kwargs)
    return tuple(from_btnh(g) for g in grads)


class Kernel:
    """The jitted functions a model calls: dot_product_attention(implementation="xla")
    under jax.jit, the flags static (one compiled program per shape and mask form), Pallas
    mha (itself jitted) and the vjp of each; and the variant's function that calls them."""
    attend = None
    pullback = None
    mha = None
    mha_pullback = None
    variant = None
    backward_unmasked = False  # --defect-backward-unmasked

    @staticmethod
    def make():
        return jax.jit(lambda q, k, v, bias=None, mask=None, query_seq_lengths=None, key_value_seq_lengths=None,
                       *, scale, is_causal=False, local_window_size=None:
                       jax.nn.dot_product_attention(q, k, v, bias, mask, scale=scale, is_causal=is_causal,
                                                    query_seq_lengths=query_seq_lengths,
                                                    key_value_seq_lengths=key_value_seq_lengths,
                                                    local_window_size=local_window_size, implementation="xla"),
                       static_argnames=("scale", "is_causal", "local_window_size"))

    @staticmethod
    def make_pullback():
        """The vjp of make()'s function at (q, k, v) applied to dO, jitted the same way."""
        def pullback(q, k, v, dout, bias=None, mask=None, query_seq_lengths=None, key_value_seq_lengths=None, *,
                     scale, is_causal=False, local_window_size=None):
            forward = lambda q_, k_, v_: jax.nn.dot_product_attention(
                q_, k_, v_, bias, mask, scale=scale, is_causal=is_causal, query_seq_lengths=query_seq_lengths,
                key_value_seq_lengths=key_value_seq_lengths, local_window_size=local_window_size,
                implementation="xla")
            return jax.vjp(forward, q, k, v)[1](dout)
        return jax.jit(pullback, static_argnames=("scale", "is_causal", "local_window_size"))

    @staticmethod
    def make_mha():
        """mha in interpret mode with the variants' blocks, and its vjp (backward_pass_impl
        "triton": the Pallas backward kernels) under jax.jit, scale and causal static."""
        from jax.experimental.pallas.ops.gpu import attention as pallas_attention
        blocks = pallas_attention.BlockSizes(block_q=PALLAS_BLOCK, block_k=PALLAS_BLOCK, block_q_dkv=PALLAS_BLOCK,
                                             block_kv_dkv=PALLAS_BLOCK, block_q_dq=PALLAS_BLOCK,
                                             block_kv_dq=PALLAS_BLOCK)

        def forward(q, k, v, segment_ids=None, *, scale, causal):
            return pallas_attention.mha(q, k, v, segment_ids, sm_scale=scale, causal=causal, block_sizes=blocks,
                                        backward_pass_impl="triton", interpret=True)

        def pullback(q, k, v, dout, segment_ids=None, *, scale, causal):
            backward_causal = causal and not Kernel.backward_unmasked
            return jax.vjp(lambda q_, k_, v_: forward(q_, k_, v_, segment_ids, scale=scale, causal=backward_causal),
                           q, k, v)[1](dout)
        return forward, jax.jit(pullback, static_argnames=("scale", "causal"))


# ---- Pallas FlashAttention (jax.experimental.pallas.ops.gpu.attention.mha), interpret mode ----

# The block sizes of the variants: 16 queries × 16 keys, so the online softmax runs over
# several key blocks (and the grid over several query blocks) at the sizes drawn; mha's
# default is 128 × 128 (BlockSizes.get_default()), one block below 128 tokens. The backward
# kernels' four blocks (block_q_dkv, block_kv_dkv, block_q_dq, block_kv_dq; default 32) too.
PALLAS_BLOCK = 16
# mha takes no bias and no dense mask: only the encodings the harness applies to q and k.
QK_ENCODINGS = ["none", "rope", "sinusoidal", "learned", "xpos"]


def pallas_capabilities(dtype):
    # attention.py mha(q, k, v, segment_ids, sm_scale, causal, block_sizes, interpret): q
    # [B, T, N, H], k and v [B, S, N, H] (one head count: no GQA; "q, k, and v to have the
    # same head dimension": Dv = D), segment_ids [B, S] read for the query block too
    # (segment_ids_ref[curr_q_slice]): a key is visible when its id equals the query's, so a
    # varlen descriptor with as many queries as keys per sequence is its segment ids.
    # causal: span_q >= span_k on global indices (top-left); T and S multiples of the block.
    return library_capabilities(
        dtype,
        masks=["descriptor", "causal-top-left"],
        # varlen_backward: pallas_mha_backward builds the same segment_ids as the forward.
        descriptor_forms=["varlen", "causal_top_left", "varlen_backward"],
        # mha_forward_kernel: a masked logit is DEFAULT_MASK_VALUE (−0.7 · f32 max, finite)
        # through jnp.where, m_i starts at −inf: a row whose loaded keys are all masked
        # averages their values. Its forms never leave a row without a key (each token
        # sees itself), and nothing is documented for one.
        masked_rows="unspecified",
        blocking="fill",
        # exp2(DEFAULT_MASK_VALUE − m) = 0 times a NaN V in the same key block is NaN.
        nan_isolation=False,
        queries_beyond_keys=True,
        encodings=QK_ENCODINGS, rope_scalings=ALL_ROPE_SCALINGS,
        gqa=False, softcap=False, value_dim_differs=False, scale_argument=True,
        # jax.vjp through mha's custom_vjp with backward_pass_impl="triton": the Pallas kernels
        # _preprocess_backward and mha_backward_kernel, which mask with the forward's segment and
        # causal rules (the same jnp.where) and recompute P from its saved log-sum-exp.
        has_backward=True,
        # q·kᵀ by pl.dot (f32 out), the running softmax in f32, s_curr.astype(v.dtype) for the
        # P·V dot (P in the input dtype), the accumulator o in f32 until the final store. The
        # backward: P and dS cast to the input dtype for their dots (p.astype(do.dtype),
        # ds.astype(q.dtype)), sums in f32, dQ/dK/dV stored in the input dtype.
        accuracy=P_IN_INPUT_DTYPE if dtype != "f32" else F32_THROUGHOUT)


def blocks_of(n):
    """n padded to what mha takes: block = min(PALLAS_BLOCK, n) must divide it."""
    return n if n <= PALLAS_BLOCK else -(-n // PALLAS_BLOCK) * PALLAS_BLOCK


# Shape buckets. XLA compiles one program per shape and flag set (1–3 s for mha's forward
# or backward in interpret mode on this CPU), a compiled call takes milliseconds, and the
# cases draw a new (B, H, T, D) almost every time: 4–10 s a case, so 1000 cases per law
# were out of reach. mha is therefore called as a model calls a compiled kernel, padded
# to a few shapes (what its users do for the same reason):
# - D to the next power of two: mha pads the head dim itself (head_dim_padded =
#   pl.next_power_of_2(head_dim), loads masked with other=0), so zero columns are the
#   same arithmetic (bitwise, checked);
# - T, when Tq = Tk, to at least one block: 16, 32, 48, 64, then multiples of MHA_SMALL,
#   the added tokens in segment −1, which no token of the case shares (the padding mha
#   already had);
# - up to MHA_SMALL tokens, B to MHA_BUCKET_BATCH and H to MHA_BUCKET_HEADS with zero rows
#   and heads (grid programs of their own, results dropped). Not above: the interpreter runs
#   the grid one program after another, and a 512-token backward padded so took 3 s a call.
# A row of the case computes what it did at its own shape up to the order of XLA's fused
# operations: zero D columns and batch rows are bitwise the same, segment_ids or more heads
# change the fusion (checked at T = 16, D = 3, inputs of σ = 3: 2e-6 on the f32 output,
# 2e-5 on its gradients), within the declared accuracy. One drawn shape in MHA_EXACT_SHARE,
# chosen by a hash of the shape (so a replay runs it the same way), runs as drawn, single
# partial blocks included.
MHA_BUCKET_BATCH, MHA_BUCKET_HEADS = 3, 4  # the kit's LIMITS (max_batch, max_heads)
MHA_EXACT_SHARE = 16
MHA_SMALL = 4 * PALLAS_BLOCK


def runs_as_drawn(*shape):
    """One drawn shape in MHA_EXACT_SHARE, by a CRC of the shape (a replay does the same)."""
    return zlib.crc32(" ".join(map(str, shape)).encode()) % MHA_EXACT_SHARE == 0


def next_power_of_two(n):
    return 1 << (n - 1).bit_length()


def mha_bucket(batch, heads, tq, tk, dim):
    """(B, H, Tq, Tk, D) mha runs at for a drawn shape (the comment above)."""
    if runs_as_drawn(batch, heads, tq, tk, dim):
        return batch, heads, blocks_of(tq), blocks_of(tk), dim
    dim = next_power_of_two(dim)
    if tq != tk:  # one segment array serves queries and keys: no padded tokens
        length_q, length_k = blocks_of(tq), blocks_of(tk)
    else:
        length_q = length_k = max(PALLAS_BLOCK, blocks_of(tq))
        if length_q > MHA_SMALL:
            length_q = length_k = -(-length_q // MHA_SMALL) * MHA_SMALL
    if max(length_q, length_k) <= MHA_SMALL:
        batch, heads = max(batch, MHA_BUCKET_BATCH), max(heads, MHA_BUCKET_HEADS)
    return batch, heads, length_q, length_k, dim


def mha_arguments(q, k, v, call):
    """The call as mha's arguments: a varlen descriptor as segment ids (padding tokens in
    segment −1), the causal flag as causal=True; the shape padded to its bucket
    (mha_bucket). Returns (keyword arguments, lengths (Tq, Tk) padded, x [B, H, T, D] →
    BTNH padded to the bucket and a length, answer BTNH → [B, H, n, D] of the case)."""
    batch, heads, tq, dim = q.shape
    tk = k.shape[2]
    if k.shape[1] != heads:
        raise attncheck.Refuse("mha: one head count for q, k and v")
    if tk == 0:  # block_k = min(block, 0): mha divides by it
        raise attncheck.Refuse("mha: no keys")
    if v.shape[3] != dim:
        raise attncheck.Refuse("mha: q, k and v need the same head dimension")
    segments = None
    if call.mask_convention == "descriptor":
        d = call.descriptor
        if not d.varlen or d.window_left >= 0 or d.window_right >= 0 or d.chunk > 0 or d.prefix_len is not None:
            raise attncheck.Refuse("descriptor form not declared")
        if not np.array_equal(d.cu_seqlens_q, d.cu_seqlens_k):
            raise attncheck.Refuse("mha: one segment_ids array for queries and keys, so every sequence needs as "
                                   "many queries as keys")
        if d.causal == 2:
            raise attncheck.Refuse("mha's causal is top-left")
        causal = d.causal == 1
        segments = np.full((batch, tq), -1, np.int32)
        for s in range(d.num_sequences):
            segments[0, d.cu_seqlens_q[s]:d.cu_seqlens_q[s + 1]] = s
    elif call.mask_convention == "causal-top-left":
        causal = True
    else:
        raise attncheck.Refuse(f"mask convention {call.mask_convention} is not taken")
    if (blocks_of(tq), blocks_of(tk)) != (tq, tk) and tq != tk:
        raise attncheck.Refuse(f"mha: Tq {tq} != Tk {tk} and not multiples of the block ({PALLAS_BLOCK})")
    batch_p, heads_p, length_q, length_k, dim_p = mha_bucket(batch, heads, tq, tk, dim)
    if length_q != tq and segments is None:  # padded tokens (Tq = Tk): out of every token's segment
        segments = np.zeros((batch, tq), np.int32)
    if segments is not None:  # and padded rows
        segments = np.pad(segments, ((0, batch_p - batch), (0, length_q - tq)), constant_values=-1)
    dtype = JAX_DTYPES[call.dtype]

    def to_btnh(x, length):
        return on_device(np.pad(x.transpose(0, 2, 1, 3), ((0, batch_p - batch), (0, length - x.shape[2]),
                                                          (0, heads_p - heads), (0, dim_p - dim))), dtype)

    def from_bucket(x, n):
        return from_btnh(x)[:batch, :heads, :n, :dim]

    kwargs = {"segment_ids": None if segments is None else on_device(segments), "scale": float(call.scale),
              "causal": causal}
    return kwargs, (length_q, length_k), to_btnh, from_bucket


def pallas_mha(q, k, v, call):
    if q.shape[2] == 0:  # no query (an empty document alone): nothing to call mha for
        return np.zeros(q.shape[:3] + v.shape[3:], np.float32)
    kwargs, (length_q, length_k), to_btnh, from_bucket = mha_arguments(q, k, v, call)
    out = Kernel.mha(to_btnh(q, length_q), to_btnh(k, length_k), to_btnh(v, length_k), **kwargs)
    return from_bucket(out, q.shape[2])


def pallas_mha_backward(call, dout):
    """dq, dk, dv of mha for dO: jax.vjp through mha's custom_vjp, whose backward with
    backward_pass_impl="triton" runs the Pallas kernels _preprocess_backward (delta =
    rowsum(O ∘ dO)) and mha_backward_kernel (dK, dV over query blocks, then dQ over key
    blocks, P recomputed from the forward's saved log-sum-exp) in interpret mode."""
    q, k, v = call.q, call.k, call.v
    if q.shape[2] == 0:  # no query: no gradient
        return np.zeros(q.shape, np.float32), np.zeros(k.shape, np.float32), np.zeros(v.shape, np.float32)
    kwargs, (length_q, length_k), to_btnh, from_bucket = mha_arguments(q, k, v, call)
    # _mha_backward: one grid axis serves the key blocks of dK/dV and the query blocks of dQ, so it
    # raises unless q_seq_len // block_q_dq == kv_seq_len // block_kv_dkv.
    if length_q // min(PALLAS_BLOCK, length_q) != length_k // min(PALLAS_BLOCK, length_k):
        raise attncheck.Refuse(f"mha's fused backward: Tq {length_q} and Tk {length_k} must make as many blocks of "
                               f"{PALLAS_BLOCK} (one grid axis serves dK/dV's key blocks and dQ's query blocks)")
    grads = Kernel.mha_pullback(to_btnh(q, length_q), to_btnh(k, length_k), to_btnh(v, length_k),
                                to_btnh(dout, length_q), **kwargs)
    return tuple(from_bucket(g, n) for g, n in zip(grads, (q.shape[2], k.shape[2], v.shape[2])))


# ---- Pallas decode attention (jax.experimental.pallas.ops.gpu.decode_attention.gqa) ----

# The variants' split of the keys: 2 splits of whole 16-key blocks (gqa asserts block_k >= 16
# and k_seq_len / k_splits >= 16), so the cross-split merge runs at the sizes drawn; its
# defaults are block_k 128, k_splits 16.
DECODE_BLOCK, DECODE_SPLITS = 16, 2


def decode_capabilities(dtype):
    # decode_attention.py gqa(q [B, Hq, D], k/v [B, S, Hkv, D], start_idx [B], kv_seq_len [B]):
    # one query per sequence reading keys start_idx <= j < kv_seq_len (attn_forward_kernel's
    # mask), query head n reading kv head n // (Hq/Hkv) (q reshaped [B, Hkv, G, D]). A
    # padded batch's descriptor is that: leftpad_k → start_idx, seqused_k → kv_seq_len. A
    # step of Tq queries is Tq calls, query i bottom-right: kv_seq_len = leftpad + i + nk − nq + 1
    # (what a decode loop passes after each append); rows past seqused_q read no key.
    return library_capabilities(
        dtype,
        masks=["descriptor"],
        descriptor_forms=["causal_bottom_right", "seqused_q", "seqused_k", "leftpad_k"],
        # decode_attn_unbatched: a split with start_idx >= kv_seq_len is skipped
        # (lax.cond), keeping o = 0, l = 0; the merge divides by l + eps: 0.
        masked_rows="zeros",
        blocking="fill",
        # a masked key's score is qk + 0.7 · f32 min (added, not replaced), so a NaN K or V
        # slot inside a computed block reaches the row.
        nan_isolation=False,
        queries_beyond_keys=True,
        encodings=QK_ENCODINGS, rope_scalings=ALL_ROPE_SCALINGS,
        gqa=True, softcap=False, value_dim_differs=False, scale_argument=True,
        # q·kᵀ and P·V by pl.dot (f32 out), P rounded to the input dtype; each split's
        # partial output is stored in q's dtype (o.astype(o_ref.dtype)) and the splits are
        # merged in it: in bf16, P·V ends in bf16 sums.
        accuracy=F32_THROUGHOUT if dtype == "f32" else dict(P_IN_INPUT_DTYPE, pv_accum="bf16"))


def decode_bucket(batch, kv_heads, group, tk, dim):
    """(B, Hkv, Hq/Hkv, key slots, D) gqa runs at for a drawn shape, as a server calls it
    over a fixed cache: the slots past kv_seq_len are never read (attn_forward_kernel's
    mask, and a split past kv_seq_len is skipped). Slots: 64, then multiples of 64 (as
    drawn: whole splits of 16-key blocks, at least 32); D zero-padded to the next power of
    two (zero products: the same sums up to XLA's order); up to 64 slots, B to 3 rows
    reading no key (kv_seq_len 0: zeros), Hkv to 4 and the group to 4 with zero heads (the
    kernel pads a group's heads to block_h = 16 itself). One drawn shape in
    MHA_EXACT_SHARE runs as drawn, as for mha."""
    split = DECODE_BLOCK * DECODE_SPLITS
    length = max(split, -(-tk // split) * split)
    if runs_as_drawn("decode", batch, kv_heads, group, tk, dim):
        return batch, kv_heads, group, length, dim
    if length > 2 * split:
        length = -(-length // (2 * split)) * (2 * split)
    else:
        length = 2 * split
        batch, kv_heads, group = max(batch, MHA_BUCKET_BATCH), max(kv_heads, MHA_BUCKET_HEADS), max(group, 4)
    return batch, kv_heads, group, length, next_power_of_two(dim)


def pallas_decode(q, k, v, call):
    """One gqa call per query row of the step (same shapes: compiled once), each with the
    row's key range per batch row; the shape padded to its bucket (decode_bucket)."""
    from jax.experimental.pallas.ops.gpu import decode_attention

    batch, heads, tq, dim = q.shape
    kv_heads, tk = k.shape[1], k.shape[2]
    group = heads // kv_heads
    d = call.descriptor
    if call.mask_convention != "descriptor" or d.varlen or d.window_left >= 0 or d.window_right >= 0 or \
            d.chunk > 0 or d.prefix_len is not None:
        raise attncheck.Refuse("descriptor form not declared")
    if d.causal == 1 and tq > 1:
        raise attncheck.Refuse("decode attention reads every key below kv_seq_len: bottom-right only")
    if v.shape[3] != dim:
        raise attncheck.Refuse("decode attention: v needs q's head dimension")
    batch_p, kv_heads_p, group_p, length, dim_p = decode_bucket(batch, kv_heads, group, tk, dim)
    rows = (0, batch_p - batch)  # padded rows: start 0, kv_seq_len 0, no query

    def row_lengths(x, default):
        return np.pad(np.asarray(x if x is not None else np.full(batch, default), np.int64), rows)
    start = row_lengths(d.leftpad_k, 0)
    used = row_lengths(d.seqused_k, tk)
    queries = row_lengths(d.seqused_q, tq)
    dtype = JAX_DTYPES[call.dtype]

    def to_bshd(x):  # [B, Hkv, T, D] → [B', length, Hkv', D'], zero keys past T
        return on_device(np.pad(x.transpose(0, 2, 1, 3), (rows, (0, length - x.shape[2]), (0, kv_heads_p - kv_heads),
                                                          (0, dim_p - dim))), dtype)

    # q heads: head j·G + g reads kv head j; padded to [B', Hkv'·G', Tq, D'] keeping that map
    grouped = np.pad(q.reshape(batch, kv_heads, group, tq, dim),
                     (rows, (0, kv_heads_p - kv_heads), (0, group_p - group), (0, 0), (0, dim_p - dim)))
    queries_p = grouped.reshape(batch_p, kv_heads_p * group_p, tq, dim_p)
    keys, values = to_bshd(k), to_bshd(v)
    out = np.zeros((batch, heads, tq, dim), np.float32)
    for i in range(tq):
        # bottom-right: query i of the step sees the keys up to its diagonal, all when causal is 0
        end = start + (used - start) - (queries - 1 - i) if d.causal == 2 else used
        end = np.where(i < queries, end, start)
        row = decode_attention.gqa(
            on_device(queries_p[:, :, i, :], dtype), keys, values, on_device(start, np.int32),
            on_device(np.maximum(end, 0), np.int32),
            sm_scale=float(call.scale), block_k=DECODE_BLOCK, k_splits=DECODE_SPLITS, interpret=True)
        row = np.asarray(row).astype(np.float32).reshape(batch_p, kv_heads_p, group_p, dim_p)
        out[:, :, i, :] = row[:batch, :kv_heads, :group, :dim].reshape(batch, heads, dim)
    return out


# variant: (forward, capabilities, description, backward or None)
VARIANTS = {
    f"dpa-xla-{dtype}": (dpa_xla, lambda d=dtype: dpa_capabilities(d),
                         f"jax.nn.dot_product_attention(implementation='xla') under jax.jit, {dtype}",
                         dpa_xla_backward)
    for dtype in ("f32", "bf16")
} | {
    f"pallas-decode-{dtype}": (pallas_decode, lambda d=dtype: decode_capabilities(d),
                               f"jax.experimental.pallas.ops.gpu.decode_attention.gqa, interpret=True, "
                               f"block_k {DECODE_BLOCK}, k_splits {DECODE_SPLITS}, {dtype}", None)
    for dtype in ("f32", "bf16")
} | {
    f"pallas-mha-{dtype}": (pallas_mha, lambda d=dtype: pallas_capabilities(d),
                            f"jax.experimental.pallas.ops.gpu.attention.mha, interpret=True, blocks "
                            f"{PALLAS_BLOCK}x{PALLAS_BLOCK} (backward blocks too), {dtype}", pallas_mha_backward)
    for dtype in ("f32", "bf16")
}


def attention(call):
    if call.descriptor is not None and call.descriptor.paged:
        raise attncheck.Refuse("paged K/V is not declared")
    return Kernel.variant(call.q, call.k, call.v, call)


class Profile:
    """$ATTNCHECK_JAX_PROFILE=FILE: one JSON line per request appended to FILE, its wall
    seconds and the part JAX spent tracing, lowering and compiling (its monitoring events;
    "compile" includes persistent-cache lookups, "cache_read" the hits' retrieval), and
    the number of XLA programs it compiled or fetched."""
    EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace",
              "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
              "/jax/core/compile/backend_compile_duration": "compile",
              "/jax/compilation_cache/cache_retrieval_time_sec": "cache_read"}
    spent = None

    @classmethod
    def wrap(cls, op, fn):
        where = os.environ.get("ATTNCHECK_JAX_PROFILE")
        if not where or fn is None:
            return fn
        import json
        import time
        if cls.spent is None:
            cls.spent = {}

            def spend(event, seconds, **_):
                if event in cls.EVENTS:
                    cls.spent[cls.EVENTS[event]] = cls.spent.get(cls.EVENTS[event], 0.0) + seconds
                    if cls.EVENTS[event] == "compile":
                        cls.spent["programs"] = cls.spent.get("programs", 0) + 1
            jax.monitoring.register_event_duration_secs_listener(spend)

        def timed(*args):  # (q, k, v, call) or (call, dout)
            q, k, call = (args[0], args[1], args[3]) if len(args) == 4 else (args[0].q, args[0].k, args[0])
            cls.spent.clear()
            start = time.perf_counter()
            try:
                return fn(*args)
            finally:
                line = {"op": op, "wall": time.perf_counter() - start, "mask": call.mask_convention,
                        "shape": [q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]],
                        **cls.spent}
                with open(where, "a") as f:
                    f.write(json.dumps(line) + "\n")
        return timed


def use_compilation_cache():
    """XLA compiles each new shape and mask form (about a second on the CPU); JAX's
    persistent compilation cache keeps the executables across backend processes (one per
    law and adapter): $ATTNCHECK_JAX_CACHE ("off": none), else ~/.cache/attncheck/jax."""
    where = os.environ.get("ATTNCHECK_JAX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "attncheck", "jax")
    if where == "off":
        return
    jax.config.update("jax_compilation_cache_dir", where)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


# of Linux's default vm.max_map_count, 65,530; $ATTNCHECK_JAX_MAX_MAPPINGS overrides it
MAX_MAPPINGS = int(os.environ.get("ATTNCHECK_JAX_MAX_MAPPINGS", "40000"))


def bounded_mappings(fn):
    """fn, with JAX's in-memory compiled programs dropped (jax.clear_caches) once the process
    holds MAX_MAPPINGS memory mappings. XLA:CPU maps each program's code (~16 mappings a
    program, /proc/self/maps) and jax.jit keeps every program it compiled, so a backend that
    compiles a new shape per case ran out of mappings after ~4,000 programs: LLVM's mmap
    failed ("Cannot allocate memory"), then a call raised "Failed to materialize symbols" or
    the process aborted ("Unable to allocate section memory") or crashed, late in a gate's
    longest pairs (FINDINGS, JAX). Dropped programs recompile, or come from the persistent
    cache, when a shape returns; what runs is the same program."""
    if not os.path.exists("/proc/self/maps"):  # not Linux: no count to bound
        return fn
    calls = 0

    def call(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls % 16 == 0:
            with open("/proc/self/maps") as maps:
                held = sum(1 for _ in maps)
            if held > MAX_MAPPINGS:
                jax.clear_caches()
                gc.collect()
                with open("/proc/self/maps") as maps:
                    print(f"jax backend: {held} memory mappings, over {MAX_MAPPINGS}: dropped the compiled "
                          f"programs (jax.clear_caches), {sum(1 for _ in maps)} left", file=sys.stderr, flush=True)
        return fn(*args, **kwargs)
    return call


def main():
    global DEFECT_WINDOW
    args = backend_arguments(__doc__, VARIANTS, defects=("backward-unmasked",))
    DEFECT_WINDOW = args.defect_window_one_wider
    Kernel.backward_unmasked = args.defect_backward_unmasked
    variant, capabilities, description, backward = VARIANTS[args.variant]
    Kernel.variant = bounded_mappings(Profile.wrap("attention", variant))
    use_compilation_cache()
    Kernel.attend = Kernel.make()
    Kernel.pullback = Kernel.make_pullback()
    if args.variant.startswith("pallas-mha"):
        Kernel.mha, Kernel.mha_pullback = Kernel.make_mha()
    return attncheck.serve(
        attention, name=f"jax-{args.variant}",
        description=f"jax {jax.__version__} CPU: {description}",
        capabilities=capabilities(), versions={"jax": jax.__version__, "jaxlib": jax.lib.__version__},
        session=kv_cache_session(lambda q, k, v, call, key_positions: Kernel.variant(q, k, v, call), np.concatenate),
        tensors="numpy", native_dtype=False,
        backward=bounded_mappings(Profile.wrap("backward", backward)))


if __name__ == "__main__":
    sys.exit(main())
