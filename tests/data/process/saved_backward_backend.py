#!/usr/bin/env python3
"""A test backend: float32 attention in numpy whose backward takes the forward's saved
output and log-sum-exp (capability backward_saved; the kit calls backward(call, dout,
out=..., lse=...)), as FlashAttention's backward does: P = exp(s - lse) over the visible
keys, delta = rowsum(dO * O). Bool-visible masks only, no encoding, f32.
--defect-lse-row reads the saved lse of the next query row (a planted bug).

    attncheck gate --adapter 'exec:/usr/bin/python3 tests/data/process/saved_backward_backend.py'
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import attncheck  # noqa: E402

LSE_ROW_DEFECT = "--defect-lse-row" in sys.argv[1:]
if LSE_ROW_DEFECT:
    np.seterr(all="ignore")  # the planted bug overflows exp(); its gradients are wrong, not its warnings


def scores(call):
    """s [B, Hq, Tq, Tk] (scaled, softcapped) and the visibility [B, 1, Tq, Tk]."""
    group = call.q.shape[1] // call.k.shape[1]
    k = np.repeat(call.k, group, axis=1)
    s = call.scale * np.einsum("bhid,bhjd->bhij", call.q, k)
    if call.softcap:
        s = call.softcap * np.tanh(s / call.softcap)
    return s, call.mask[:, None, :, :] != 0


def attention(call):
    s, visible = scores(call)
    s = np.where(visible, s, -np.inf)
    top = np.max(s, axis=-1, keepdims=True)
    p = np.where(visible, np.exp(s - np.where(np.isfinite(top), top, 0.0)), 0.0)
    total = p.sum(axis=-1, keepdims=True)
    p = np.divide(p, total, out=np.zeros_like(p), where=total > 0)
    group = call.q.shape[1] // call.v.shape[1]
    return np.einsum("bhij,bhjd->bhid", p, np.repeat(call.v, group, axis=1)).astype(np.float32)


def backward(call, dout, out, lse):
    s, visible = scores(call)
    row_lse = np.roll(lse, -1, axis=2) if LSE_ROW_DEFECT else lse
    # a row with no visible key: its lse is not read (every key is masked out there)
    p = np.where(visible, np.exp(s - np.where(visible, row_lse[..., None], 0.0)), 0.0)
    group = call.q.shape[1] // call.k.shape[1]
    k, v = np.repeat(call.k, group, axis=1), np.repeat(call.v, group, axis=1)
    delta = np.sum(dout * out, axis=-1, keepdims=True)
    ds = p * (np.einsum("bhid,bhjd->bhij", dout, v) - delta)
    if call.softcap:
        ds = ds * (1.0 - (s / call.softcap) ** 2)  # s = c·tanh(z/c): tanh' = 1 - (s/c)^2
    dq = call.scale * np.einsum("bhij,bhjd->bhid", ds, k)
    dk = call.scale * np.einsum("bhij,bhid->bhjd", ds, call.q)
    dv = np.einsum("bhij,bhid->bhjd", p, dout)
    b, hkv = call.k.shape[0], call.k.shape[1]
    fold = lambda g: g.reshape(b, hkv, group, *g.shape[2:]).sum(axis=2)  # noqa: E731 — GQA: sum the group
    return dq.astype(np.float32), fold(dk).astype(np.float32), fold(dv).astype(np.float32)


CAPABILITIES = attncheck.capabilities(
    dtypes=["f32"], masks=["bool-visible"], encodings=["none"], softcap=True, gqa=True,
    has_backward=True, backward_saved=True, max_tokens=24, max_head_dim=16)

if __name__ == "__main__":
    sys.exit(attncheck.serve(attention, name="numpy-saved-backward", capabilities=CAPABILITIES, backward=backward,
                             description="numpy attention; its backward reads the saved out and lse"))
