#!/usr/bin/env python3
"""ONNX Runtime 1.31 (PyPI) CPU attention operators as attncheck process backends, one per
variant, beside the Node 1.30 backend (backend.mjs) and over the same operators:

    python adapters/onnxruntime/backend.py --variant attention-f32

Each variant is one adapter (ort131-<variant>): a one-node model built with onnx.helper, its
dimensions symbolic, run by onnxruntime.InferenceSession on the CPU execution provider. The
operators and their contracts are the table OPERATORS below; README.md here cites the ORT
source and the ONNX schema behind each declaration (made for 1.30 and regated on 1.31,
FINDINGS.md "ONNX Runtime 1.31.1 (PyPI, CPU)").
--defect-window-one-wider plants a deliberate slip for the tests.
"""

import argparse
import sys

import numpy as np

import onnx
from onnx import TensorProto, helper
import onnxruntime as ort

import attncheck
from attncheck.library import ALL_ROPE_SCALINGS, F32_THROUGHOUT, HARNESS_ENCODINGS, LIMITS, P_IN_INPUT_DTYPE, \
    kv_cache_session

ELEMENT = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16}
NUMPY = {"f32": np.float32, "f16": np.float16}
CAUSAL = ("causal-top-left", "causal-bottom-right")
DEFECT_WINDOW = False  # --defect-window-one-wider: GroupQueryAttention's window admits one key more
# The ort-* adapters' shapes: small cases plus a quarter of them in the size tier.
ORT_LIMITS = dict(LIMITS, size_tier=dict(LIMITS["size_tier"], percent=25))


class Sessions:
    """InferenceSessions of one-node models, cached by (operator, attributes, inputs); one
    intra-op thread and sequential execution (bitwise repeatable), ORT's logging quiet."""
    cache = {}

    @classmethod
    def run(cls, key, node, inputs, outputs, opsets, feeds):
        if key not in cls.cache:
            graph = helper.make_graph(
                [node], "attncheck", [helper.make_tensor_value_info(n, t, [f"{n}_{i}" for i in range(r)])
                                      for n, t, r in inputs],
                [helper.make_tensor_value_info(n, t, None) for n, t, _ in outputs])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
            model.ir_version = 10
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.log_severity_level = 3
            cls.cache[key] = ort.InferenceSession(model.SerializeToString(), options,
                                                  providers=["CPUExecutionProvider"])
        return cls.cache[key].run(None, feeds)


def mask_feed(call, dtype):
    """The dense mask as the operator's [B, 1, Tq, Tk] input: bool with True = may attend,
    or additive values in the input dtype; None for a causal flag."""
    convention = call.mask_convention
    if convention in CAUSAL:
        return None
    if convention in ("bool-visible", "bool-blocked"):
        visible = np.asarray(call.mask, dtype=bool)
        return (visible if convention == "bool-visible" else ~visible)[:, None]
    return np.asarray(call.mask, dtype=np.float32)[:, None].astype(NUMPY[dtype])


def past_length(call, tk):
    """Keys fed as past_key/past_value: the operators' causal flag is j ≤ i + past, so a
    bottom-right flag (and a session step) has every key but the last Tq in the past; a
    top-left flag has none."""
    return 0 if call.mask_convention == "causal-top-left" else max(0, tk - call.tq)


def attention_op(q, k, v, call, dtype):
    """ONNX Attention (opset 24; the CPU kernel serves 23 and 24): q [B, Hq, Tq, D], k
    [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] in 4-D BNSH, GQA by the head counts."""
    t = ELEMENT[dtype]
    mask = mask_feed(call, dtype)
    past = past_length(call, k.shape[2])
    cast = lambda x: np.ascontiguousarray(x, dtype=NUMPY[dtype])
    feeds = {"Q": cast(q), "K": cast(k[:, :, past:]), "V": cast(v[:, :, past:])}
    inputs = [("Q", t, 4), ("K", t, 4), ("V", t, 4)]
    names = ["Q", "K", "V", "", "", ""]
    if mask is not None:
        names[3] = "attn_mask"
        inputs.append(("attn_mask", TensorProto.BOOL if mask.dtype == bool else t, 4))
        feeds["attn_mask"] = np.ascontiguousarray(mask)
    if past > 0:
        names[4:6] = ["past_key", "past_value"]
        inputs += [("past_key", t, 4), ("past_value", t, 4)]
        feeds["past_key"], feeds["past_value"] = cast(k[:, :, :past]), cast(v[:, :, :past])
    while names[-1] == "":
        names.pop()
    attributes = {"is_causal": int(call.mask_convention in CAUSAL), "scale": float(call.scale)}
    if call.softcap > 0:
        attributes["softcap"] = float(call.softcap)
    outputs = [("Y", t, 4), ("present_key", t, 4), ("present_value", t, 4)]
    node = helper.make_node("Attention", names, [o[0] for o in outputs], **attributes)
    key = ("Attention", dtype, tuple(sorted(attributes.items())), None if mask is None else str(mask.dtype), past > 0)
    return Sessions.run(key, node, inputs, outputs, [("", 24)], feeds)[0]


def to_bsh(x):  # [B, H, T, D] → [B, T, H·D]
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1))


def mha_op(q, k, v, call, dtype):
    """com.microsoft.MultiHeadAttention (CPU kernel: float): query/key/value [B, T, H·D],
    attention_bias [B, 1, Tq, Tk] (additive), past_key/past_value [B, H, past, D]."""
    batch, heads, tq, _ = q.shape
    if k.shape[1] != heads:
        raise attncheck.Refuse("MultiHeadAttention has one head count for Q, K and V")
    mask = mask_feed(call, dtype)
    if mask is not None and mask.dtype == bool:
        raise attncheck.Refuse("MultiHeadAttention takes an additive attention_bias only")
    past = past_length(call, k.shape[2])
    f = TensorProto.FLOAT
    feeds = {"query": to_bsh(q), "key": to_bsh(k[:, :, past:]), "value": to_bsh(v[:, :, past:])}
    inputs = [("query", f, 3), ("key", f, 3), ("value", f, 3)]
    names = ["query", "key", "value", "", "", "", "", ""]
    if mask is not None:
        names[5] = "attention_bias"
        inputs.append(("attention_bias", f, 4))
        feeds["attention_bias"] = np.ascontiguousarray(mask)
    if past > 0:
        names[6:8] = ["past_key", "past_value"]
        inputs += [("past_key", f, 4), ("past_value", f, 4)]
        feeds["past_key"] = np.ascontiguousarray(k[:, :, :past])
        feeds["past_value"] = np.ascontiguousarray(v[:, :, :past])
    while names[-1] == "":
        names.pop()
    attributes = {"num_heads": heads, "unidirectional": int(call.mask_convention in CAUSAL), "scale": float(call.scale)}
    outputs = [("output", f, 3), ("present_key", f, 4), ("present_value", f, 4)]
    node = helper.make_node("MultiHeadAttention", names, [o[0] for o in outputs], domain="com.microsoft", **attributes)
    key = ("MultiHeadAttention", tuple(sorted(attributes.items())), mask is not None, past > 0)
    out = Sessions.run(key, node, inputs, outputs, [("", 24), ("com.microsoft", 1)], feeds)[0]
    return out.reshape(batch, tq, heads, -1).transpose(0, 2, 1, 3)


def gqa_plan(call, batch, tq, tk):
    """What a call asks of GroupQueryAttention: causal (1, bottom-right) or 0, local_window_size
    (keys including the query's own, −1: none), each batch row's (real queries nq, keys nk:
    slots [0, nk)), and the dense bias [B, Tq, Tk] when the mask is dense."""
    full = [(tq, tk)] * batch
    convention = call.mask_convention
    if convention == "causal-bottom-right":
        return 1, -1, full, None
    if convention in ("add-inf", "add-lowest"):
        return 0, -1, full, np.asarray(call.mask, dtype=np.float32)
    d = call.descriptor
    if convention != "descriptor" or d.varlen or d.paged or d.leftpad_k is not None or d.prefix_len is not None or \
            d.chunk > 0 or d.alibi_slopes is not None or d.alibi_max_bias > 0:
        raise attncheck.Refuse("GroupQueryAttention has no input for this form")
    if d.causal == 1:
        raise attncheck.Refuse("GroupQueryAttention's causal mask is bottom-right")
    causal = int(d.causal == 2)
    # local_window_size bounds the earlier keys only, and only with causal: a two-sided window
    # has no input (the dense bias form remains).
    if d.window_right > 0 or (d.window_left >= 0 and not causal):
        raise attncheck.Refuse("GroupQueryAttention has no right window bound (local_window_size is causal)")
    # local_window_size counts the query's own key (PR #25927): left + 1
    window = d.window_left + 1 + int(DEFECT_WINDOW) if d.window_left >= 0 else -1
    rows = [(int(d.seqused_q[b]) if d.seqused_q is not None else tq, int(d.seqused_k[b]) if d.seqused_k is not None
             else tk) for b in range(batch)]
    return causal, window, rows, None


def gqa_run(q, k, v, call, dtype, plan, rows, S):
    """One GroupQueryAttention run over batch rows `rows` [(b, nq, nk)] with S new tokens each.
    Prompt (S = every key): each row's first S slots as K/V, seqlens_k = nk − 1 (right
    padding). Cached: row b's keys [nk − S, nk) as K/V, [0, nk − S) as past_key/past_value
    (zero-padded to the longest row), so query s sees keys up to nk − S + s (bottom-right).
    → [len(rows), Hq, S, D]."""
    causal, window, _, bias = plan
    t, f = ELEMENT[dtype], NUMPY[dtype]
    total = max([S] + [nk for _, _, nk in rows])
    past = 0 if total == S else max(nk - S for _, _, nk in rows)
    kv_heads, dim = k.shape[1], k.shape[3]
    first = [0 if past == 0 else max(nk, S) - S for _, _, nk in rows]
    feeds = {"query": to_bsh(np.stack([q[b, :, :S] for b, _, _ in rows])).astype(f),
             "key": to_bsh(np.stack([k[b, :, a:a + S] for (b, _, _), a in zip(rows, first)])).astype(f),
             "value": to_bsh(np.stack([v[b, :, a:a + S] for (b, _, _), a in zip(rows, first)])).astype(f),
             "seqlens_k": np.array([max(nk, 1) - 1 for _, _, nk in rows], dtype=np.int32),
             "total_sequence_length": np.array(total, dtype=np.int32)}
    names = ["query", "key", "value", "", "", "seqlens_k", "total_sequence_length", "", "", "", ""]
    inputs = [("query", t, 3), ("key", t, 3), ("value", t, 3), ("seqlens_k", TensorProto.INT32, 1),
              ("total_sequence_length", TensorProto.INT32, 0)]
    if past > 0:
        for name, x in (("past_key", k), ("past_value", v)):
            cache = np.zeros((len(rows), kv_heads, past, dim), dtype=f)
            for g, ((b, _, _), a) in enumerate(zip(rows, first)):
                cache[g, :, :a] = x[b, :, :a]
            feeds[name] = cache
        names[3:5] = ["past_key", "past_value"]
        inputs += [("past_key", t, 4), ("past_value", t, 4)]
    if bias is not None:
        feeds["attention_bias"] = np.stack([bias[b, :S, :total] for b, _, _ in rows])[:, None].astype(f)
        names[10] = "attention_bias"
        inputs.append(("attention_bias", t, 4))
    while names[-1] == "":
        names.pop()
    attributes = {"num_heads": q.shape[1], "kv_num_heads": kv_heads, "causal": causal, "local_window_size": window,
                  "scale": float(call.scale)}
    if call.softcap > 0:
        attributes["softcap"] = float(call.softcap)
    outputs = [("output", t, 3), ("present_key", t, 4), ("present_value", t, 4)]
    node = helper.make_node("GroupQueryAttention", names, [o[0] for o in outputs], domain="com.microsoft",
                            **attributes)
    key = ("GroupQueryAttention", dtype, tuple(sorted(attributes.items())), past > 0, bias is not None)
    out = Sessions.run(key, node, inputs, outputs, [("", 24), ("com.microsoft", 1)], feeds)[0]
    return out.astype(np.float32).reshape(len(rows), S, q.shape[1], dim).transpose(0, 2, 1, 3)


def gqa_op(q, k, v, call, dtype):
    """com.microsoft.GroupQueryAttention: rows in one batched run where ORT takes the batch
    (one query, or Tq = Tk and every row as many queries as keys), else each row alone ("batch_size
    must be 1 when sequence_length > 1 and past context is given") with its real queries as the
    new tokens. Query rows past a row's nq are not computed: 0."""
    batch, _, tq, dim = q.shape
    tk = k.shape[2]
    if v.shape[3] != dim:
        raise attncheck.Refuse("GroupQueryAttention needs the value head size of the key")
    if dim % 8 != 0:  # declared (head_dim_multiple); a shrunk case may still ask
        raise attncheck.Refuse("head_size must be a multiple of 8")
    plan = gqa_plan(call, batch, tq, tk)
    rows = [(b, nq, nk) for b, (nq, nk) in enumerate(plan[2])]
    for b, nq, nk in rows:
        if nq > nk:
            raise attncheck.Refuse(f"row {b}: {nq} queries for {nk} keys (seqlens_k + 1 < S)")
    square = tq == tk and all(nq == nk for _, nq, nk in rows)
    groups = [(rows, tq)] if tq == 1 or square else [([row], row[1]) for row in rows if row[1] > 0]
    y = np.zeros((batch, q.shape[1], tq, dim), dtype=np.float32)
    for group, S in groups:
        out = gqa_run(q, k, v, call, dtype, plan, group, S)
        for g, (b, nq, _) in enumerate(group):
            y[b, :, :nq] = out[g, :, :nq]
    return y


def rotate_op(x, positions, rope, dtype):
    """ONNX RotaryEmbedding (opset 23) on x [B, H, T, D]: cos/sin caches [B, T, r/2] built
    from the harness's angle per pair (every scaling applied): f32(p·θ), times mscale;
    interleaved = 1 pairs (2k, 2k+1), 0 pairs (k, k + r/2)."""
    if rope.get("log_n"):
        raise attncheck.Refuse("RotaryEmbedding has no log-n query scaling")
    t = ELEMENT[dtype]
    angle = np.asarray(positions, dtype=np.float32)[:, :, None] * np.asarray(rope["theta"], dtype=np.float32)
    mscale = np.float32(rope["mscale"])
    attributes = {"interleaved": int(rope["layout"] == "interleaved"), "rotary_embedding_dim": int(rope["rotary_dim"])}
    node = helper.make_node("RotaryEmbedding", ["X", "cos_cache", "sin_cache"], ["Y"], **attributes)
    feeds = {"X": np.ascontiguousarray(x, dtype=NUMPY[dtype]),
             "cos_cache": (np.cos(angle) * mscale).astype(NUMPY[dtype]),
             "sin_cache": (np.sin(angle) * mscale).astype(NUMPY[dtype])}
    key = ("RotaryEmbedding", dtype, tuple(sorted(attributes.items())))
    inputs = [("X", t, 4), ("cos_cache", t, 3), ("sin_cache", t, 3)]
    return Sessions.run(key, node, inputs, [("Y", t, 4)], [("", 23)], feeds)[0].astype(np.float32)


def rotary_attention_op(q, k, v, call, dtype, key_positions):
    """RotaryEmbedding on q and k (the call's positions), then ONNX Attention."""
    if call.rope is not None:
        q = rotate_op(q, call.query_positions, call.rope, dtype)
        k = rotate_op(k, key_positions, call.rope, dtype)
    return attention_op(q, k, v, call, dtype)


def attention_capabilities(dtype):
    # The ONNX schema: attn_mask "is added to the attention score" (float) or says which keys
    # "take part" (bool, True); a key at a finite fill whose score outweighs it is read, a row
    # all at the fill (lowest, −inf, bool False) is 0 (onnx/onnx#8068, onnxruntime PR #28958):
    # blocking fill-rows, masked rows zeros. is_causal: j ≤ i + past (both causal flags via past).
    # f16 (attention.cc, x86 without an fp16 GEMM): scores and P stored in f16 between steps.
    return dict(ORT_LIMITS, **attncheck.capabilities(
        owns_rope=False, owns_bias=False, has_rope_stage=False, has_session=True, dtypes=[dtype],
        masks=["add-inf", "add-lowest", "bool-visible", "bool-blocked", *CAUSAL],
        masked_rows="zeros", blocking="fill-rows", nan_isolation=False,
        encodings=HARNESS_ENCODINGS, rope_scalings=ALL_ROPE_SCALINGS,
        gqa=True, softcap=True, value_dim_differs=True, scale_argument=True,
        accuracy=dict(P_IN_INPUT_DTYPE, scores_in_input_dtype=True) if dtype == "f16" else F32_THROUGHOUT))


def mha_capabilities(dtype):
    # docs/ContribOperators.md: attention_bias is added; a row all at −inf is 0/0 (NaN) in
    # ComputeAttentionSoftmaxInplace, nothing documented: masked rows unspecified, only −inf
    # blocks (a row all at the f32 lowest averages V). unidirectional: j ≤ i + past.
    return dict(ORT_LIMITS, **attncheck.capabilities(
        owns_rope=False, owns_bias=False, has_rope_stage=False, has_session=True, dtypes=[dtype],
        masks=["add-inf", "add-lowest", "causal-bottom-right"],
        masked_rows="unspecified", blocking="neg-inf", nan_isolation=False,
        encodings=HARNESS_ENCODINGS, rope_scalings=ALL_ROPE_SCALINGS,
        gqa=False, softcap=False, value_dim_differs=False, scale_argument=True))


def rotary_capabilities(dtype):
    # Attention's contract, RoPE owned (RotaryEmbedding: both layouts, any rotary_dim, no
    # log-n); xPos and the absolute encodings are not RotaryEmbedding's.
    return dict(attention_capabilities(dtype), owns_rope=True, has_rope_stage=True, rope_log_n=False,
                encodings=["none", "rope", "alibi", "t5", "kerple", "sandwich"],
                rope_layouts=["half-split", "interleaved"])


def gqa_capabilities(dtype):
    # The visibility descriptor as GroupQueryAttention's inputs (seqlens_k, local_window_size,
    # causal bottom-right), attention_bias as the dense form. A row all at −inf is NaN under
    # causal 1 and 0 (F16): masked rows unspecified; only −inf blocks. "head_size must be a
    # multiple of 8" (CheckInputs). The tiled CPU path converts Q, K, V to f32 and keeps the
    # scores, P and the sums in f32.
    return dict(ORT_LIMITS, **attncheck.capabilities(
        owns_rope=False, owns_bias=False, has_rope_stage=False, has_session=True, dtypes=[dtype],
        masks=["descriptor", "causal-bottom-right", "add-inf", "add-lowest"],
        descriptor_forms=["causal_bottom_right", "window", "seqused_q", "seqused_k", "softcap"],
        masked_rows="unspecified", blocking="neg-inf", nan_isolation=False,
        encodings=HARNESS_ENCODINGS, rope_scalings=ALL_ROPE_SCALINGS,
        gqa=True, softcap=True, value_dim_differs=False, scale_argument=True, head_dim_multiple=8,
        accuracy=F32_THROUGHOUT))


# operator: (run(q, k, v, call, dtype, key_positions), capabilities(dtype), owns a rope stage, description, dtypes)
OPERATORS = {
    "attention": (lambda q, k, v, call, dtype, positions: attention_op(q, k, v, call, dtype), attention_capabilities,
                  False, "ONNX Attention opset 24", ("f32", "f16")),
    "mha": (lambda q, k, v, call, dtype, positions: mha_op(q, k, v, call, dtype), mha_capabilities, False,
            "com.microsoft.MultiHeadAttention", ("f32",)),
    "gqa": (lambda q, k, v, call, dtype, positions: gqa_op(q, k, v, call, dtype), gqa_capabilities, False,
            "com.microsoft.GroupQueryAttention (visibility descriptor, attention_bias)", ("f32", "f16")),
    "rotary": (rotary_attention_op, rotary_capabilities, True,
               "ONNX RotaryEmbedding opset 23 (rope stage) + Attention opset 24", ("f32", "f16")),
}
VARIANTS = {f"{op}-{dtype}": (op, dtype) for op, row in OPERATORS.items() for dtype in row[4]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    parser.add_argument("--defect-window-one-wider", action="store_true")
    args = parser.parse_args()
    global DEFECT_WINDOW
    DEFECT_WINDOW = args.defect_window_one_wider
    op, dtype = VARIANTS[args.variant]
    run, capabilities, has_rope, description, _ = OPERATORS[op]

    def attention(call):
        if call.apply_bias:
            raise attncheck.Refuse("the harness folds score biases into the mask")
        return run(call.q, call.k, call.v, call, dtype, call.key_positions)

    def rope(call):
        return rotate_op(call.x, call.positions, call.rope, dtype)

    return attncheck.serve(
        attention, name=f"ort131-{args.variant}",
        description=f"onnxruntime {ort.__version__} CPU (PyPI): {description}, {dtype}",
        capabilities=capabilities(dtype), versions={"onnxruntime": ort.__version__, "onnx": onnx.__version__},
        rope=rope if has_rope else None,
        session=kv_cache_session(lambda q, k, v, call, key_positions: run(q, k, v, call, dtype, key_positions),
                                 np.concatenate),
        tensors="numpy", native_dtype=False)


if __name__ == "__main__":
    sys.exit(main())
