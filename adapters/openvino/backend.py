#!/usr/bin/env python3
"""OpenVINO 2026.4's ScaledDotProductAttention on the CPU plugin as attncheck process
backends, one per variant:

    python adapters/openvino/backend.py --variant sdpa-f32

Each variant is one adapter (openvino-<variant>): a one-node model
(openvino.opset13.scaled_dot_product_attention; opset 15 exports the same
ScaledDotProductAttention-13) compiled for the CPU plugin once per mask form, its shapes
dynamic. Its contract is declared in VARIANTS below with the source of every claim: the
operation specification (docs.openvino.ai, "ScaledDotProductAttention-13") and what the
compiled model's runtime graph says runs, checked by `attncheck probe`.
--defect-last-key-visible plants a deliberate slip for the tests.
"""

import argparse
import sys

import numpy as np

import openvino as ov
import openvino.opset13 as ops

import attncheck
from attncheck.library import ALL_ROPE_SCALINGS, F32_THROUGHOUT, HARNESS_ENCODINGS, library_capabilities, \
    kv_cache_session

# One inference thread: bitwise repeatable, and the harness runs its own workers.
# INFERENCE_PRECISION_HINT f32: on a CPU with native bf16 (AVX512-BF16 or AMX) the plugin's
# default inference precision is bf16 ("Precision Control" in OpenVINO's CPU device docs), so
# the f32 variant asks for f32, as a user who wants f32 must; without it such a machine runs
# the one-node model in bf16 (the compiled model reports hint bf16) and misses f32 by 2e-4.
# The bf16 variant asks for bf16; the plugin runs it only where the CPU has native bf16
# (runtime_precisions() reads what the compiled model's runtime graph really runs).
CPU_CONFIG = {"INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1, "INFERENCE_PRECISION_HINT": "f32"}


def sdpa_capabilities(dtype, accuracy=F32_THROUGHOUT):
    # The specification's pseudo-code: `attn_bias = Select(LogicalNot(attn_mask), -inf, 0)`
    # for a boolean mask (True = attend: bool-visible; bool-blocked is inverted here), `attn_bias
    # += attn_mask` for a float one (added: a finite fill is a very negative score, only −inf
    # blocks), `numpy.triu(-inf, k=1)` over [L, S] when `causal` (j ≤ i: top-left whatever L
    # and S; the mask input is then ignored).
    return library_capabilities(
        dtype,
        masks=["bool-visible", "bool-blocked", "add-inf", "add-lowest", "causal-top-left"],
        blocking="neg-inf",
        # Softmax over a row that is −inf everywhere (all False, or all −inf) is 0/0: the
        # specification's formula gives NaN and the CPU plugin returns NaN (probe).
        masked_rows="nan",
        # The formula is Softmax(QKᵀ·scale + bias)·V: a NaN key gives a NaN score that −inf
        # added keeps NaN, a NaN value meets probability 0 in the MatMul. Nothing is promised.
        nan_isolation=False,
        queries_beyond_keys=True,
        encodings=HARNESS_ENCODINGS, rope_scalings=ALL_ROPE_SCALINGS,
        # Query [N, ..., L, E], key [N, ..., S, E], value [N, ..., S, Ev] with the `...` dims
        # broadcast: GQA is q [B, Hkv, G, L, E] against k/v [B, Hkv, 1, S, E] (query head n
        # reads kv head n // G), the form OpenVINO's PyTorch frontend builds; Ev may differ;
        # `scale` is an input. No softcap in the operation.
        gqa=True, softcap=False, value_dim_differs=True, scale_argument=True,
        # Asked for f32 (CPU_CONFIG), the CPU plugin runs every node of the runtime model in f32
        # and the compiled model's INFERENCE_PRECISION_HINT reads f32, on an AVX2 machine and
        # on one with AVX512-BF16 alike (runtime_precisions() below, in the description).
        accuracy=accuracy)


# bf16 (where the CPU runs it), measured on an AVX512-BF16 machine (openvino 2026.4.1), since the
# runtime graph shows one fused `Subgraph` and no per-op precision: q·k accumulates in f32 (a
# score of 63·4 + 0.5 keeps its 0.5), the output and P are bf16; the rank-4 model keeps the scores
# in f32, but the rank-5 one that GQA needs ([B, Hkv, G, L, E]) rounds them to bf16: key scores
# 252.5 and 252 get weights 0.5/0.5 there and 0.621/0.379 in rank 4, and a gate case's output
# equals the scores-in-bf16 model to 1e-4. The declaration is the rank-5 one, the less accurate.
BF16_REDUCED = {"score_accum": "f32", "pv_accum": "f32", "scores_in_input_dtype": True, "p_in_input_dtype": True}


DEFECT_LAST_KEY = False  # --defect-last-key-visible: a bool mask's last key always takes part


class Models:
    """The compiled one-node models, one per (mask element type, causal, rank)."""
    core = None
    compiled = {}
    config = CPU_CONFIG
    refusal = ""  # why every case is refused (bf16 asked on a CPU that runs it in f32)

    @classmethod
    def get(cls, mask_type, causal, rank):
        key = (mask_type, causal, rank)
        if key not in cls.compiled:
            shape = ov.PartialShape([-1] * rank)
            q = ops.parameter(shape, ov.Type.f32, name="q")
            k = ops.parameter(shape, ov.Type.f32, name="k")
            v = ops.parameter(shape, ov.Type.f32, name="v")
            scale = ops.parameter(ov.PartialShape([]), ov.Type.f32, name="scale")
            params = [q, k, v]
            if mask_type is not None:
                mask = ops.parameter(shape, mask_type, name="attn_mask")
                params.append(mask)
            else:
                mask = ops.constant(np.float32(0))  # the specification's "scalar float type zero value"
            node = ops.scaled_dot_product_attention(q, k, v, mask, scale, causal=causal)
            model = ov.Model([node], params + [scale], "sdpa")
            cls.compiled[key] = cls.core.compile_model(model, "CPU", cls.config)
        return cls.compiled[key]


def runtime_precisions():
    """{layer type: runtime precision} of a compiled bool-mask model's runtime graph, and the
    precision hint the compiled model reports: what the CPU plugin really runs."""
    compiled = Models.get(ov.Type.boolean, False, 4)
    layers = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        layer = info["layerType"].astype(str)
        if layer not in ("Input", "Output", "Const"):
            layers[layer] = info["runtimePrecision"].astype(str)
    return layers, str(compiled.get_property("INFERENCE_PRECISION_HINT"))


def mask_input(call):
    """(attn_mask [B, 1, Tq, Tk] or None, causal) for a dense convention."""
    convention = call.mask_convention
    if convention == "causal-top-left":
        return None, True
    if convention in ("bool-visible", "bool-blocked"):
        visible = np.asarray(call.mask, dtype=bool)
        visible = visible if convention == "bool-visible" else ~visible
        if DEFECT_LAST_KEY:
            visible[..., -1] = True
        return visible[:, None], False
    if convention in ("add-inf", "add-lowest"):
        return np.asarray(call.mask, dtype=np.float32)[:, None], False
    raise attncheck.Refuse(f"mask convention {convention} is not taken")


def sdpa(q, k, v, call):
    """q [B, Hq, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] float32 → [B, Hq, Tq, Dv]."""
    batch, heads, tq, _ = q.shape
    kv_heads, tk = k.shape[1], k.shape[2]
    mask, causal = mask_input(call)
    feeds = [q, k, v]
    if heads != kv_heads:  # [B, Hkv, G, T, ·] against [B, Hkv, 1, S, ·]
        group = heads // kv_heads
        feeds = [q.reshape(batch, kv_heads, group, tq, q.shape[3]), k[:, :, None], v[:, :, None]]
        mask = None if mask is None else mask[:, :, None]
    rank = feeds[0].ndim
    inputs = [np.ascontiguousarray(x, dtype=np.float32) for x in feeds]
    if mask is not None:
        inputs.append(np.ascontiguousarray(mask))
    inputs.append(np.array(call.scale, dtype=np.float32))
    mask_type = None if mask is None else (ov.Type.boolean if mask.dtype == bool else ov.Type.f32)
    if Models.refusal:
        raise attncheck.Refuse(Models.refusal)
    out = Models.get(mask_type, causal, rank)(inputs)[0]
    return np.asarray(out, dtype=np.float32).reshape(batch, heads, tq, v.shape[3])


def attention(call):
    if call.softcap:
        raise attncheck.Refuse("ScaledDotProductAttention has no softcap")
    return sdpa(call.q, call.k, call.v, call)


VARIANTS = {
    "sdpa-f32": (lambda: sdpa_capabilities("f32"), "f32",
                 "opset13.scaled_dot_product_attention, CPU plugin, dynamic shapes, f32"),
    "sdpa-bf16": (lambda: sdpa_capabilities("bf16", BF16_REDUCED), "bf16",
                  "opset13.scaled_dot_product_attention, CPU plugin, dynamic shapes, INFERENCE_PRECISION_HINT "
                  "bf16 (where the CPU has native bf16)"),
}


def main():
    global DEFECT_LAST_KEY
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    parser.add_argument("--defect-last-key-visible", action="store_true")
    args = parser.parse_args()
    DEFECT_LAST_KEY = args.defect_last_key_visible
    capabilities, precision, description = VARIANTS[args.variant]
    Models.core = ov.Core()
    Models.config = dict(CPU_CONFIG, INFERENCE_PRECISION_HINT=precision)
    layers, hint = runtime_precisions()
    if hint != str({"f32": ov.Type.f32, "bf16": ov.Type.bf16}[precision]):
        # "Precision Control" in the CPU device docs: bf16 runs where the CPU has AVX512-BF16 or
        # AMX; elsewhere the compiled model keeps f32 whatever the hint (it reports hint f32, and
        # the SDPA subgraph runs f32: FINDINGS.md, OpenVINO), and the variant would test f32
        Models.refusal = (f"asked for INFERENCE_PRECISION_HINT {precision}, the CPU plugin compiled the model "
                          f"with hint {hint} (no native {precision} on this CPU: AVX512-BF16 or AMX)")
    runs = ", ".join(f"{layer} {runtime}" for layer, runtime in sorted(layers.items()))
    return attncheck.serve(
        attention, name=f"openvino-{args.variant}",
        description=f"openvino {ov.__version__.split('-')[0]} CPU: {description} (runs: {runs}; hint {hint})"
                    + (f"; refuses every case: {Models.refusal}" if Models.refusal else ""),
        capabilities=capabilities(), versions={"openvino": ov.__version__},
        session=kv_cache_session(lambda q, k, v, call, key_positions: sdpa(q, k, v, call), np.concatenate),
        tensors="numpy", native_dtype=False)


if __name__ == "__main__":
    sys.exit(main())
