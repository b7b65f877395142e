#!/usr/bin/env python3
"""An attncheck process backend: float32 attention in numpy.

Run it under the harness (it speaks on stdin/stdout, logs go to stderr):

    attncheck gate --adapter 'exec:/usr/bin/python3 examples/process/attention_backend.py'

The protocol (adapters/process/PROTOCOL.md): every message is a 4-byte
little-endian length, that many bytes of a JSON header, then the raw
little-endian tensors the header's "tensors" list names, in order. This backend
declares the same capabilities as the in-tree `eigen` kernel: float32; additive
and bool masks and the visibility descriptor (protocol 2: FlashAttention's
padded-batch forms, computed into a mask here); RoPE with every layout and scaling applied by the backend itself
(the harness sends the frequencies), score biases folded into the additive mask
by the harness; a rotation stage; cached-decode sessions; GQA; softcap; fully
masked rows answer zeros.

With --descriptor it runs in descriptor mode: no mask tensor ever, the
"descriptor" convention only (bottom-right causal, window,
seqused_q/seqused_k/leftpad_k, prefix, chunk, softcap); it computes the
visibility from the descriptor itself. With --descriptor --varlen it takes
FlashAttention's varlen forms instead (flash_attn_varlen_func): the documents
packed on one token axis, batch 1, sequences through cu_seqlens_q/k. With
--descriptor --paged (with or without --varlen) it also takes the paged form,
page size 16 (flash_attn_with_kvcache's block_table): k and v arrive as pages
[num_pages, Hkv, page_size, D] and are read through the block table.
--defect-block-table-row0 (with --paged) is a deliberate slip for the tests:
every sequence reads row 0 of the block table.

Only the standard library and numpy are used.
"""

import json
import struct
import sys

try:
    import numpy as np
except ImportError:
    sys.stderr.write(f"attention_backend.py: numpy is not installed for {sys.executable} "
                     "(Debian: apt-get install python3-numpy, then run it with /usr/bin/python3)\n")
    sys.exit(1)

PROTOCOL = 2
DTYPES = {"f32": np.dtype("<f4"), "i32": np.dtype("<i4"), "u8": np.dtype("u1")}
NAMES = {v: k for k, v in DTYPES.items()}
F32 = np.float32
NEG_INF = F32(-np.inf)

# The value that marks a blocked key in each additive convention (float32).
ADDITIVE_FILL = {
    "add-inf": NEG_INF,
    "add-lowest": np.finfo(np.float32).min,
    "add-1e4": F32(-1e4),
    "add-1e9": F32(-1e9),
}

CAPABILITIES = {
    "owns_rope": True,
    "owns_bias": False,
    "has_rope_stage": True,
    "has_session": True,
    "dtypes": ["f32"],
    "masks": ["add-inf", "add-lowest", "add-1e4", "add-1e9", "bool-visible", "bool-blocked", "descriptor"],
    "descriptor_forms": ["causal_bottom_right", "window", "seqused_q", "seqused_k", "leftpad_k", "prefix", "chunk",
                         "softcap"],
    "masked_rows": "zeros",
    "encodings": ["none", "rope", "alibi", "t5", "kerple", "sandwich"],
    "rope_layouts": ["half-split", "interleaved"],
    "rope_scalings": ["none", "linear", "ntk-aware", "dynamic-ntk", "yarn", "llama3", "ntk-mixed", "yarn-paper"],
    "gqa": True,
    "softcap": True,
    "value_dim_differs": True,
    "queries_beyond_keys": True,
}
if "--descriptor" in sys.argv[1:]:
    CAPABILITIES["masks"] = ["descriptor"]
if "--varlen" in sys.argv[1:]:
    CAPABILITIES["descriptor_forms"] = ["causal_bottom_right", "window", "varlen", "prefix", "chunk", "softcap"]
if "--paged" in sys.argv[1:]:
    CAPABILITIES["descriptor_forms"] = CAPABILITIES["descriptor_forms"] + ["paged"]
    CAPABILITIES["page_size"] = 16
ROW0_DEFECT = "--defect-block-table-row0" in sys.argv[1:]


# ---- framing -------------------------------------------------------------


def read_exact(stream, n):
    data = bytearray()
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def read_message(stream):
    """(header, {name: array}) or None at the end of input."""
    prefix = read_exact(stream, 4)
    if prefix is None:
        return None
    (length,) = struct.unpack("<I", prefix)
    if length == 0 or length > (1 << 20):
        raise ValueError(f"header length {length} out of range")
    header = json.loads(read_exact(stream, length))
    tensors = {}
    for t in header.pop("tensors", []):
        dtype = DTYPES[t["dtype"]]
        shape = tuple(int(d) for d in t["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        raw = read_exact(stream, count * dtype.itemsize)
        if raw is None:
            raise ValueError("input ended inside a tensor")
        tensors[t["name"]] = np.frombuffer(raw, dtype=dtype).reshape(shape)
    return header, tensors


def write_message(stream, header, tensors=()):
    """tensors: (name, array) pairs; arrays are sent as they are (f32, i32 or u8)."""
    payload = []
    listed = []
    for name, array in tensors:
        array = np.ascontiguousarray(array)
        listed.append({"name": name, "dtype": NAMES[array.dtype.newbyteorder("<")], "shape": list(array.shape)})
        payload.append(array.tobytes())
    if listed:
        header = dict(header, tensors=listed)
    text = json.dumps(header).encode()
    stream.write(struct.pack("<I", len(text)) + text + b"".join(payload))
    stream.flush()


# ---- the kernel -----------------------------------------------------------


def rotate(x, positions, rope, query_scale=None):
    """RoPE on x [B, H, T, D] at positions [B, T], in float32 as a GPU kernel does:
    angle = float(p) * theta_k, pairs (2k, 2k+1) interleaved or (k, k + r/2)
    half-split over the first rotary_dim dims, both scaled by mscale; then the
    query's log-n factor [B, T] when given."""
    x = x.astype(F32, copy=True)
    theta = np.asarray(rope["theta"], dtype=F32)
    half = int(rope["rotary_dim"]) // 2
    ks = np.arange(half)
    if rope["layout"] == "interleaved":
        a, b = 2 * ks, 2 * ks + 1
    else:
        a, b = ks, ks + half
    angle = positions.astype(F32)[:, None, :, None] * theta[None, None, None, :]  # [B, 1, T, half]
    mscale = F32(rope["mscale"])
    cos = np.cos(angle) * mscale
    sin = np.sin(angle) * mscale
    xa, xb = x[..., a].copy(), x[..., b].copy()
    x[..., a] = xa * cos - xb * sin
    x[..., b] = xa * sin + xb * cos
    if query_scale is not None:
        x *= query_scale.astype(F32)[:, None, :, None]
    return x


def descriptor_blocked(d, shape):
    """blocked [B, Tq, Tk] from a padded-batch descriptor, FlashAttention's rule
    (block_info.h, mask.h): row b's keys are slots [leftpad_k, seqused_k), its
    real queries rows [0, seqused_q); query i's diagonal is i (causal 1) or
    i + nk - nq; key j is inside causal, the window and the chunk of the
    diagonal, or in the prefix when the diagonal is."""
    batch, tq, tk = shape
    blocked = np.ones(shape, dtype=bool)
    if "cu_seqlens_q" in d:  # varlen: batch 1, sequence s a diagonal block of the packed axes
        cq, ck = d["cu_seqlens_q"], d["cu_seqlens_k"]
        for s in range(d["num_sequences"]):
            nq, nk = cq[s + 1] - cq[s], ck[s + 1] - ck[s]
            prefix = d["prefix_len"][s] if "prefix_len" in d else 0
            blocked[0, cq[s]:cq[s + 1], ck[s]:ck[s + 1]] = sequence_blocked(d, nq, nk, 0, prefix, nq, nk)
        return blocked
    for b in range(batch):
        nq = d["seqused_q"][b] if "seqused_q" in d else tq
        pad = d["leftpad_k"][b] if "leftpad_k" in d else 0
        nk = (d["seqused_k"][b] if "seqused_k" in d else tk) - pad
        prefix = d["prefix_len"][b] if "prefix_len" in d else 0
        blocked[b] = sequence_blocked(d, nq, nk, pad, prefix, tq, tk)
    return blocked


def unpage(d, pages, batch, tk):
    """pages [num_pages, Hkv, page_size, dim] → [batch, Hkv, tk, dim] through the
    block table: sequence s's key j is at page block_table[s][j // page_size],
    offset j % page_size; it is batch row s, slot j (padded batch, j < seqused_k)
    or batch 0, slot cu_seqlens_k[s] + j (varlen). Slots in no sequence are NaN
    (never visible, never read)."""
    size, blocks = d["page_size"], d["max_blocks"]
    expected = (d["num_pages"], pages.shape[1], size)
    if pages.shape[:3] != expected:
        raise ValueError(f"paged k/v of shape {list(pages.shape)}, expected [num_pages, Hkv, page_size, dim] = "
                         f"{list(expected) + [pages.shape[3]]}")
    table = np.asarray(d["block_table"], dtype=np.int64).reshape(d["num_sequences"], blocks)
    out = np.full((batch, pages.shape[1], tk, pages.shape[3]), np.nan, F32)
    for s in range(d["num_sequences"]):
        if "cu_seqlens_k" in d:
            row, first, n = 0, d["cu_seqlens_k"][s], d["cu_seqlens_k"][s + 1] - d["cu_seqlens_k"][s]
        else:
            row, first, n = s, 0, d["seqused_k"][s] if "seqused_k" in d else tk
        j = np.arange(n)
        page = table[0 if ROW0_DEFECT else s, j // size]
        out[row, :, first:first + n, :] = pages[page, :, j % size, :].transpose(1, 0, 2)
    return out


def sequence_blocked(d, nq, nk, pad, prefix, tq, tk):
    """blocked [tq, tk] of one sequence: nq real queries, nk keys after `pad` slots."""
    i = np.arange(tq)[:, None]
    j = np.arange(tk)[None, :] - pad
    diagonal = i if d["causal"] == 1 else i + nk - nq
    seen = (i < nq) & (j >= 0) & (j < nk)
    inside = np.ones((tq, tk), dtype=bool)
    if d["causal"] != 0:
        inside &= j <= diagonal
    if d["window_left"] >= 0:
        inside &= j >= diagonal - d["window_left"]
    if d["window_right"] >= 0:
        inside &= j <= diagonal + d["window_right"]
    if d["chunk"] > 0:
        inside &= (j // d["chunk"]) == (diagonal // d["chunk"])
    in_prefix = (diagonal >= 0) & (diagonal < prefix) & (j < prefix)
    return ~(seen & (inside | in_prefix))


def blocked_and_bias(convention, mask, shape, descriptor=None):
    """(blocked [B, Tq, Tk] bool, additive float32 [B, Tq, Tk])."""
    if convention == "descriptor":
        return descriptor_blocked(descriptor, shape), np.zeros(shape, F32)
    if convention in ADDITIVE_FILL:
        fill = ADDITIVE_FILL[convention]
        blocked = mask == fill
        return blocked, np.where(blocked, F32(0), mask).astype(F32)
    if convention == "bool-visible":
        return mask == 0, np.zeros(shape, F32)
    if convention == "bool-blocked":
        return mask != 0, np.zeros(shape, F32)
    raise ValueError(f"mask convention {convention} is not accepted")


def attend(q, k, v, blocked, bias, scale, softcap):
    """q [B, Hq, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] → [B, Hq, Tq, Dv].
    S = scale·QKᵀ (softcapped), blocked keys −inf, row softmax; a row with no
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
        row_max = scores.max(axis=-1, keepdims=True) if scores.shape[-1] else np.full(scores.shape[:-1] + (1,), NEG_INF, F32)
        empty = ~(row_max > NEG_INF)
        e = np.exp(scores - np.where(empty, F32(0), row_max))
        e = np.where(blocked, F32(0), e)
        total = e.sum(axis=-1, keepdims=True)
        p = np.where(empty, F32(0), e / np.where(empty, F32(1), total)).astype(F32)
        weighted = np.where(p[..., None] > 0, p[..., None] * vv[:, :, None, :, :], F32(0))
        out = weighted.sum(axis=3).astype(F32)
    return out


# ---- requests ---------------------------------------------------------------


class Backend:
    def __init__(self):
        self.sessions = {}

    def hello(self, h, t):
        return {"op": "hello", "protocol": PROTOCOL, "name": "numpy-attention",
                "description": "float32 numpy attention (examples/process/attention_backend.py)",
                "capabilities": CAPABILITIES}, []

    def attention(self, h, t):
        if h["apply_bias"]:
            raise ValueError("this backend does not apply score biases itself")
        q, k, v = t["q"], t["k"], t["v"]
        d = h.get("descriptor")
        if d and d.get("page_size", 0) > 0:  # K/V in pages: back onto the logical key axis
            k, v = (unpage(d, x, h["batch"], h["tk"]) for x in (k, v))
        if h.get("rope"):
            q = rotate(q, t["query_positions"], h["rope"], t.get("query_scale"))
            k = rotate(k, t["key_positions"], h["rope"])
        shape = (h["batch"], h["tq"], h["tk"])
        blocked, bias = blocked_and_bias(h["mask_convention"], t.get("mask"), shape, d)
        out = attend(q, k, v, blocked, bias, h["scale"], h["softcap"])
        return {"op": "result"}, [("out", out)]

    def rope(self, h, t):
        return {"op": "result"}, [("out", rotate(t["x"], t["positions"], h["rope"]))]

    def session_open(self, h, t):
        if h["apply_bias"]:
            raise ValueError("this backend does not apply score biases itself")
        self.sessions[h["session"]] = {"h": h, "k": [], "v": []}
        return {"op": "ok"}, []

    def session_append(self, h, t):
        s = self.sessions[h["session"]]
        k = t["k"]
        if s["h"].get("rope"):
            k = rotate(k, t["positions"], s["h"]["rope"])
        s["k"].append(k)
        s["v"].append(t["v"])
        return {"op": "ok"}, []

    def session_attend(self, h, t):
        s = self.sessions[h["session"]]
        q = t["q"]
        if s["h"].get("rope"):
            q = rotate(q, t["positions"], s["h"]["rope"], t.get("query_scale"))
        k = np.concatenate(s["k"], axis=2)
        v = np.concatenate(s["v"], axis=2)
        shape = (q.shape[0], h["tq"], k.shape[2])
        blocked, bias = blocked_and_bias(h["mask_convention"], t.get("mask"), shape, h.get("descriptor"))
        out = attend(q, k, v, blocked, bias, s["h"]["scale"], s["h"]["softcap"])
        return {"op": "result"}, [("out", out)]

    def session_close(self, h, t):
        self.sessions.pop(h["session"], None)
        return {"op": "ok"}, []


def main():
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    backend = Backend()
    while True:
        message = read_message(stdin)
        if message is None:
            return 0
        header, tensors = message
        op = header.get("op")
        if op == "shutdown":
            return 0
        handler = getattr(backend, op, None) if isinstance(op, str) and not op.startswith("_") else None
        try:
            if handler is None:
                raise ValueError(f"unknown op {op!r}")
            answer, out = handler(header, tensors)
        except Exception as e:  # noqa: BLE001 — every failure is answered, not fatal
            answer, out = {"op": "error", "message": f"{type(e).__name__}: {e}"}, []
        write_message(stdout, answer, out)


if __name__ == "__main__":
    sys.exit(main())
