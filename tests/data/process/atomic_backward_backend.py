#!/usr/bin/env python3
"""A test backend: float32 attention in numpy whose backward sums dq over key tiles of 8
in a random order on every call, as a GPU backward that adds its tiles' dQ with atomics
does (FlashAttention-2's): two calls on the same inputs differ in the last bits. It
declares backward_deterministic false. Bool-visible masks only, no encoding, f32.
--declare-deterministic declares it true instead (the contract the kernel breaks);
--defect-dq-one-key-more lets dq's probabilities read the first blocked key right of
each row's visible keys (a mask applied in the forward and shifted in the backward).

    attncheck gate --adapter 'exec:/usr/bin/python3 tests/data/process/atomic_backward_backend.py'
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import attncheck  # noqa: E402

DECLARE_DETERMINISTIC = "--declare-deterministic" in sys.argv[1:]
ONE_KEY_MORE = "--defect-dq-one-key-more" in sys.argv[1:]
TILE = 8
RNG = np.random.default_rng()  # a new order every call, as the scheduling of atomics gives


def probabilities(call, visible):
    group = call.q.shape[1] // call.k.shape[1]
    k = np.repeat(call.k, group, axis=1).astype(np.float64)
    s = np.where(visible, call.scale * np.einsum("bhid,bhjd->bhij", call.q.astype(np.float64), k), -np.inf)
    top = np.max(s, axis=-1, keepdims=True)
    p = np.where(visible, np.exp(s - np.where(np.isfinite(top), top, 0.0)), 0.0)
    total = p.sum(axis=-1, keepdims=True)
    return np.divide(p, total, out=np.zeros_like(p), where=total > 0)


def attention(call):
    p = probabilities(call, call.mask[:, None, :, :] != 0)
    group = call.q.shape[1] // call.v.shape[1]
    return np.einsum("bhij,bhjd->bhid", p, np.repeat(call.v, group, axis=1)).astype(np.float32)


def backward(call, dout):
    visible = call.mask[:, None, :, :] != 0
    group = call.q.shape[1] // call.k.shape[1]
    k, v = np.repeat(call.k, group, axis=1), np.repeat(call.v, group, axis=1)
    p = probabilities(call, visible)
    out = np.einsum("bhij,bhjd->bhid", p, v)
    ds = p * (np.einsum("bhid,bhjd->bhij", dout, v) - np.sum(dout * out, axis=-1, keepdims=True))
    if ONE_KEY_MORE:  # dq's P also reads the key right of each row's last visible one
        last = visible.shape[-1] - 1 - np.argmax(visible[..., ::-1], axis=-1)
        wider = visible.copy()
        rows = np.nonzero(visible.any(axis=-1) & (last + 1 < visible.shape[-1]))
        wider[rows + (last[rows] + 1,)] = True
        pw = probabilities(call, wider)
        dq_ds = pw * (np.einsum("bhid,bhjd->bhij", dout, v) - np.sum(dout * out, axis=-1, keepdims=True))
    else:
        dq_ds = ds
    # dq: each tile's partial sum in f32, the tiles added in a random order (atomics)
    tk = k.shape[2]
    partials = [(call.scale * np.einsum("bhij,bhjd->bhid", dq_ds[..., j:j + TILE], k[:, :, j:j + TILE]))
                .astype(np.float32) for j in range(0, tk, TILE)]
    dq = np.zeros(partials[0].shape, np.float32)
    for t in RNG.permutation(len(partials)):
        dq = dq + partials[t]
    dk = call.scale * np.einsum("bhij,bhid->bhjd", ds, call.q)
    dv = np.einsum("bhij,bhid->bhjd", p, dout)
    b, hkv = call.k.shape[0], call.k.shape[1]
    fold = lambda g: g.reshape(b, hkv, group, *g.shape[2:]).sum(axis=2)  # noqa: E731 — GQA: sum the group
    return dq, fold(dk).astype(np.float32), fold(dv).astype(np.float32)


CAPABILITIES = attncheck.capabilities(
    dtypes=["f32"], masks=["bool-visible"], encodings=["none"], gqa=True, has_backward=True,
    backward_deterministic=DECLARE_DETERMINISTIC, max_tokens=40, max_head_dim=16)

if __name__ == "__main__":
    sys.exit(attncheck.serve(attention, name="numpy-atomic-backward", capabilities=CAPABILITIES, backward=backward,
                             description="numpy attention; its backward adds dq's key tiles in a random order"))
