#!/usr/bin/env python3
"""A test backend: float32 attention in numpy that owns RoPE (every case rotary: the
kit's rotate, angle float32(p)·theta) and decodes through the kit's kv_cache_session,
each step one attention call over every key so far, so the kit declares
session_rope_as_call for it. Additive -inf masks, f32.
--undeclared says session_rope_as_call false instead (the same kernel, charged its angle
error on both sides of decode-consistency's comparison);
--session-angles-f64 keeps a cache of its own whose keys are rotated once, when
appended, with angles p·theta computed in float64 (as accurate, another float path),
and still declares session_rope_as_call: the promise it breaks (with --undeclared too,
it keeps no promise and is charged the angle error).

    attncheck gate --adapter 'exec:/usr/bin/python3 tests/data/process/session_rope_backend.py'
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import attncheck  # noqa: E402
from attncheck.library import kv_cache_session  # noqa: E402

FLAGS = set(sys.argv[1:])
F64_SESSION = "--session-angles-f64" in FLAGS

CAPABILITIES = attncheck.capabilities(
    owns_rope=True, dtypes=["f32"], masks=["add-inf"], masked_rows="zeros", encodings=["rope"],
    rope_layouts=["half-split", "interleaved"], rope_scalings=["none", "linear"], rope_log_n=False, gqa=True,
    **({"session_rope_as_call": False} if "--undeclared" in FLAGS else
       {"session_rope_as_call": True} if F64_SESSION else {}))


def run(q, k, v, call, key_positions):
    if call.rope:
        q = attncheck.rotate(q, call.query_positions, call.rope)
        k = attncheck.rotate(k, key_positions, call.rope)
    blocked, bias = attncheck.additive_blocked(call)
    return attncheck.reference_attention(q, k, v, blocked, bias, call.scale, call.softcap)


def attention(call):
    return run(call.q, call.k, call.v, call, call.key_positions)


def rotate_f64(x, positions, rope):
    """The kit's rotate with the angle p·theta taken in float64 before cos and sin."""
    x = np.array(x, dtype=np.float32, copy=True)
    half = int(rope["rotary_dim"]) // 2
    ks = np.arange(half)
    a, b = (2 * ks, 2 * ks + 1) if rope["layout"] == "interleaved" else (ks, ks + half)
    angle = np.asarray(positions, dtype=np.float64)[:, None, :, None] * np.asarray(rope["theta"], dtype=np.float64)
    cos = (np.cos(angle) * rope["mscale"]).astype(np.float32)
    sin = (np.sin(angle) * rope["mscale"]).astype(np.float32)
    xa, xb = x[..., a].copy(), x[..., b].copy()
    x[..., a] = xa * cos - xb * sin
    x[..., b] = xa * sin + xb * cos
    return x


class RotatedOnAppend:
    """Keys rotated once, as appended (float64 angles); each step rotates its queries."""

    def __init__(self, spec):
        self.spec, self.k, self.v = spec, [], []

    def append(self, k, v, positions):
        self.k.append(rotate_f64(k, positions, self.spec.rope) if self.spec.rope else k)
        self.v.append(v)

    def attend(self, call):
        q = attncheck.rotate(call.q, call.query_positions, self.spec.rope) if self.spec.rope else call.q
        blocked, bias = attncheck.additive_blocked(call)
        return attncheck.reference_attention(q, np.concatenate(self.k, axis=2), np.concatenate(self.v, axis=2),
                                             blocked, bias, self.spec.scale, self.spec.softcap)


if __name__ == "__main__":
    sys.exit(attncheck.serve(attention, name="numpy-session-rope", description="float32 numpy attention, RoPE owned "
                             "(tests/data/process/session_rope_backend.py)", capabilities=CAPABILITIES,
                             session=RotatedOnAppend if F64_SESSION else kv_cache_session(run, np.concatenate)))
