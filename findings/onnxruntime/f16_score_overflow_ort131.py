"""ONNX Runtime 1.31 (PyPI) f16 Attention: one query over one key whose score overflows f16
(above 65504) gives NaN, with or without a mask. The ONNX Attention schema runs the softmax
in the inputs' precision unless softmax_precision says otherwise, so the score is stored in
f16 and overflows to inf, and inf - inf is NaN. This is not a library defect (FINDINGS.md,
ONNX Runtime 1.31, "Re-gate of 2026-11-30"); it is a case the harness refuses (the kernel
declares its scores stored in f16).
Run: third_party/venv/bin/python f16_score_overflow_ort131.py
Exit 0 while a score of 80000 gives NaN, 1 once it does not, 77 without onnxruntime.
"""
import math
import sys

try:
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError:
    print(f"skipped: onnx/onnxruntime are not installed for {sys.executable} (scripts/install-deps.sh --with-python)")
    sys.exit(77)


def attention(q, k, with_mask):
    """Attention-23 in f16, scale 1, one query over one key; the value is 0.5."""
    shapes = [("Q", [1, 1, 1, 2]), ("K", [1, 1, 1, 2]), ("V", [1, 1, 1, 1])] + ([("M", [1, 1])] if with_mask else [])
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT16, shape) for name, shape in shapes]
    node = helper.make_node("Attention", [name for name, _ in shapes], ["Y"], scale=1.0)
    output = helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [1, 1, 1, 1])
    model = helper.make_model(helper.make_graph([node], "attention", inputs, [output]),
                              opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {"Q": np.array(q, np.float16).reshape(1, 1, 1, 2), "K": np.array(k, np.float16).reshape(1, 1, 1, 2),
            "V": np.array([0.5], np.float16).reshape(1, 1, 1, 1)}
    if with_mask:
        feed["M"] = np.zeros((1, 1), np.float16)
    return float(session.run(None, feed)[0].ravel()[0])


print(f"onnxruntime {ort.__version__}")
results = {}
for x in (100.0, 200.0):
    for with_mask in (True, False):
        results[x, with_mask] = attention([x, x], [x, x], with_mask)
        print(f"q = k = ({x:g}, {x:g}), score {2 * x * x:g}, {'additive mask 0' if with_mask else 'no mask'}: "
              f"{results[x, with_mask]} (want 0.5)")
if results[100.0, True] == 0.5 and all(math.isnan(results[200.0, m]) for m in (True, False)):
    print("a score above 65504 gives NaN: the f16 score overflows")
    sys.exit(0)
print("no longer reproduces")
sys.exit(1)
