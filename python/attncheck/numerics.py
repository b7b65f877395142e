"""Numbers the kit converts and the float32 numpy attention it offers as a helper:
bf16 bits, f16, RoPE rotation, additive masks and the reference attention (the
example backend's own, examples/process/attention_backend.py)."""

import numpy as np

F32 = np.float32
NEG_INF = F32(-np.inf)

# The value that marks a blocked key in each additive convention (float32).
ADDITIVE_FILL = {
    "add-inf": NEG_INF,
    "add-lowest": np.finfo(np.float32).min,
    "add-1e4": F32(-1e4),
    "add-1e9": F32(-1e9),
}
# The bool conventions: which u8 value (True) marks a blocked key.
BOOL_BLOCKED_WHEN = {"bool-visible": False, "bool-blocked": True}


def bf16_bits(x):
    """float32 array -> uint16 bf16 bits, rounded to nearest even (NaN stays a quiet NaN)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        rounded[nan] = ((bits[nan] >> 16).astype(np.uint16) & np.uint16(0x8000)) | np.uint16(0x7FC0)
    return rounded


def from_bf16_bits(bits):
    """uint16 bf16 bits -> float32 (exact)."""
    bits = np.ascontiguousarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def rotate(x, positions, rope, query_scale=None):
    """RoPE on x [B, H, T, D] at positions [B, T], in float32 as a GPU kernel does:
    angle = float(p) * theta_k, pairs (2k, 2k+1) interleaved or (k, k + r/2)
    half-split over the first rotary_dim dims, both scaled by mscale; then the
    query's log-n factor [B, T] when given."""
    x = np.array(x, dtype=F32, copy=True)
    theta = np.asarray(rope["theta"], dtype=F32)
    half = int(rope["rotary_dim"]) // 2
    ks = np.arange(half)
    if rope["layout"] == "interleaved":
        a, b = 2 * ks, 2 * ks + 1
    else:
        a, b = ks, ks + half
    angle = np.asarray(positions).astype(F32)[:, None, :, None] * theta[None, None, None, :]  # [B, 1, T, half]
    mscale = F32(rope["mscale"])
    cos = np.cos(angle) * mscale
    sin = np.sin(angle) * mscale
    xa, xb = x[..., a].copy(), x[..., b].copy()
    x[..., a] = xa * cos - xb * sin
    x[..., b] = xa * sin + xb * cos
    if query_scale is not None:
        x *= np.asarray(query_scale).astype(F32)[:, None, :, None]
    return x


def blocked_and_bias(convention, mask, shape, descriptor=None):
    """(blocked [B, Tq, Tk] bool, additive float32 [B, Tq, Tk]) for any convention.
    mask is the call's (float32 additive or bool); descriptor a Descriptor."""
    if convention == "descriptor":
        return descriptor.blocked(*shape), np.zeros(shape, F32)
    if convention in ADDITIVE_FILL:
        blocked = mask == ADDITIVE_FILL[convention]
        return blocked, np.where(blocked, F32(0), mask).astype(F32)
    if convention in BOOL_BLOCKED_WHEN:
        return np.asarray(mask, dtype=bool) == BOOL_BLOCKED_WHEN[convention], np.zeros(shape, F32)
    if convention in ("causal-top-left", "causal-bottom-right"):
        b, tq, tk = shape
        i, j = np.arange(tq)[:, None], np.arange(tk)[None, :]
        diagonal = i if convention == "causal-top-left" else i + tk - tq
        return np.broadcast_to(j > diagonal, shape).copy(), np.zeros(shape, F32)
    raise ValueError(f"mask convention {convention} is not accepted")


def reference_attention(q, k, v, blocked, bias, scale, softcap):
    """q [B, Hq, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] -> [B, Hq, Tq, Dv] float32.
    S = scale·QKᵀ (softcapped), blocked keys -inf, row softmax; a row with no
    visible key answers 0; blocked keys are left out of P·V, so NaN or huge
    values in them cannot leak."""
    group = q.shape[1] // k.shape[1]
    kk = np.repeat(k, group, axis=1)  # query head h reads kv head h // group
    vv = np.repeat(v, group, axis=1)
    with np.errstate(all="ignore"):
        scores = np.matmul(q, kk.transpose(0, 1, 3, 2)) * F32(scale)
        if softcap > 0:
            cap = F32(softcap)
            scores = cap * np.tanh(scores / cap)
        blocked = blocked[:, None, :, :]
        scores = np.where(blocked, NEG_INF, scores + bias[:, None, :, :]).astype(F32)
        if scores.shape[-1]:
            row_max = scores.max(axis=-1, keepdims=True)
        else:
            row_max = np.full(scores.shape[:-1] + (1,), NEG_INF, F32)
        empty = ~(row_max > NEG_INF)
        e = np.exp(scores - np.where(empty, F32(0), row_max))
        e = np.where(blocked, F32(0), e)
        total = e.sum(axis=-1, keepdims=True)
        p = np.where(empty, F32(0), e / np.where(empty, F32(1), total)).astype(F32)
        weighted = np.where(p[..., None] > 0, p[..., None] * vv[:, :, None, :, :], F32(0))
        return weighted.sum(axis=3).astype(F32)
