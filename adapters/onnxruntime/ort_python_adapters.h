// The ONNX Runtime 1.31 adapters from PyPI (ort131-*): process adapters (adapters/process) that
// start `python adapters/onnxruntime/backend.py --variant VARIANT` on the attncheck kit (python/)
// with onnxruntime 1.31 and onnx, beside the Node 1.30 ort-* adapters (ort_adapters.h) and over
// the same operators. Names only; the lookup is adapters/python_backend.h's (kOrtPythonLibrary).
#pragma once

#include <array>

#include "adapters/python_backend.h"

namespace attncheck {

// call_timeout_s: each new attribute set (scale, causal, mask type, past) is a session of its
// own, created in well under a second.
inline constexpr std::array<PythonAdapterName, 7> kOrtPythonAdapters = {{
    {"ort131-attention-f32", "attention-f32", "ONNX Runtime 1.31 CPU (PyPI): ONNX Attention opset 24, f32", 30},
    {"ort131-attention-f16", "attention-f16", "ONNX Runtime 1.31 CPU (PyPI): ONNX Attention opset 24, f16", 30},
    {"ort131-mha-f32", "mha-f32", "ONNX Runtime 1.31 CPU (PyPI): com.microsoft.MultiHeadAttention, f32", 30},
    {"ort131-gqa-f32", "gqa-f32",
     "ONNX Runtime 1.31 CPU (PyPI): com.microsoft.GroupQueryAttention (visibility descriptor, attention_bias), f32",
     30},
    {"ort131-gqa-f16", "gqa-f16",
     "ONNX Runtime 1.31 CPU (PyPI): com.microsoft.GroupQueryAttention (visibility descriptor, attention_bias), f16",
     30},
    {"ort131-rotary-f32", "rotary-f32",
     "ONNX Runtime 1.31 CPU (PyPI): ONNX RotaryEmbedding opset 23 (rope stage) + Attention opset 24, f32", 30},
    {"ort131-rotary-f16", "rotary-f16",
     "ONNX Runtime 1.31 CPU (PyPI): ONNX RotaryEmbedding opset 23 (rope stage) + Attention opset 24, f16", 30},
}};

}  // namespace attncheck
