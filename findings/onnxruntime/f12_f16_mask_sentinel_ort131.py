"""F12 (FINDINGS.md) on onnxruntime 1.31 from PyPI: ONNX Attention (opset 24) in float16 on the
CPU EP blocks a bool-masked or causally hidden key with the finite sentinel -65504
(mask_filter_value<MLFloat16>), so a blocked key whose score exceeds ~65504 takes the weight.
The schema: a bool mask's False elements do not take part in attention; is_causal hides
future keys. Query 200, visible key 0 (value 1), blocked key 400 (value 2), scale 1: the
blocked score is 80000, the right output 1.
Run: python f12_f16_mask_sentinel_ort131.py (needs onnxruntime 1.31 and onnx).
Exit 0 while the defect shows, 1 once it no longer reproduces, 77 without the packages.
"""
import sys

import numpy as np

try:
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError as error:
    print(f"skipped: onnxruntime / onnx not installed for {sys.executable} ({error}; "
          "scripts/install-deps.sh --with-python)")
    sys.exit(77)


def attend(dtype, q, k, v, mask=None, causal=0):
    """One Attention node; q [1, 1, Tq, 1], k/v [1, 1, Tk, 1], mask [1, 1, Tq, Tk] → Y."""
    element = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    names = ["Q", "K", "V"] + (["attn_mask"] if mask is not None else [])
    inputs = [helper.make_tensor_value_info(n, element, None) for n in ("Q", "K", "V")]
    feeds = {"Q": q.astype(dtype), "K": k.astype(dtype), "V": v.astype(dtype)}
    if mask is not None:
        mask_type = TensorProto.BOOL if mask.dtype == bool else element
        inputs.append(helper.make_tensor_value_info("attn_mask", mask_type, None))
        feeds["attn_mask"] = mask if mask.dtype == bool else mask.astype(dtype)
    node = helper.make_node("Attention", names, ["Y"], is_causal=causal, scale=1.0)
    graph = helper.make_graph([node], "f12", inputs, [helper.make_tensor_value_info("Y", element, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0].astype(np.float32).ravel()


col = lambda *x: np.array(x, dtype=np.float32).reshape(1, 1, len(x), 1)
q, k, v = col(200.0), col(0.0, 400.0), col(1.0, 2.0)
print(f"onnxruntime {ort.__version__}, CPU EP, intra_op_num_threads 1")
shows = 0
for label, dtype, mask, causal, defect in (
        ("f16, bool mask [true, false]", np.float16, np.array([[[[True, False]]]]), 0, True),
        ("f16, is_causal = 1 (Tq = Tk = 2, query 0)", np.float16, None, 1, True),
        ("f32, bool mask [true, false]", np.float32, np.array([[[[True, False]]]]), 0, False),
        ("f16, additive mask [0, -inf]", np.float16, np.array([[[[0.0, -np.inf]]]], np.float32), 0, False)):
    queries = col(200.0, 0.0) if causal else q
    out = attend(dtype, queries, k, v, mask, causal)[0]
    wrong = abs(out - 1.0) > 1e-3
    shows += wrong and defect
    print(f"  {label}: out = {out:g}, right 1{'   <- F12' if wrong and defect else ''}")
if shows:
    print(f"F12 reproduces: {shows} of 2 f16 bool/causal masks let the blocked key through")
    sys.exit(0)
print("F12 no longer reproduces")
sys.exit(1)
