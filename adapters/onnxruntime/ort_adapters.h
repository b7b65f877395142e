// The ONNX Runtime adapters (ort-*): process adapters (adapters/process) that start
// `node adapters/onnxruntime/backend.mjs --op OP --dtype DTYPE` over onnxruntime-node,
// installed by scripts/fetch-onnxruntime.sh. Names and lookups only; no ORT here.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/adapter.h"

namespace attncheck {

struct OrtAdapterName {
  std::string_view name;
  std::string_view op;     // backend.mjs --op
  std::string_view dtype;  // backend.mjs --dtype
  std::string_view description;
};

inline constexpr std::array<OrtAdapterName, 7> kOrtAdapters = {{
    {"ort-attention-f32", "attention", "f32", "ONNX Runtime 1.30 CPU: ONNX Attention opset 24, f32 (Node process)"},
    {"ort-attention-f16", "attention", "f16", "ONNX Runtime 1.30 CPU: ONNX Attention opset 24, f16 (Node process)"},
    {"ort-mha-f32", "mha", "f32", "ONNX Runtime 1.30 CPU: com.microsoft.MultiHeadAttention, f32 (Node process)"},
    {"ort-gqa-f32", "gqa", "f32",
     "ONNX Runtime 1.30 CPU: com.microsoft.GroupQueryAttention (visibility descriptor, attention_bias), f32 (Node process)"},
    {"ort-gqa-f16", "gqa", "f16",
     "ONNX Runtime 1.30 CPU: com.microsoft.GroupQueryAttention (visibility descriptor, attention_bias), f16 (Node process)"},
    {"ort-rotary-f32", "rotary", "f32",
     "ONNX Runtime 1.30 CPU: ONNX RotaryEmbedding opset 23 (rope stage) + Attention opset 24, f32 (Node process)"},
    {"ort-rotary-f16", "rotary", "f16",
     "ONNX Runtime 1.30 CPU: ONNX RotaryEmbedding opset 23 (rope stage) + Attention opset 24, f16 (Node process)"},
}};

// Where the backend runs from, or why it cannot: node on PATH, backend.mjs (an
// installed share/attncheck/onnxruntime, else this source tree) and the npm packages
// ($ATTNCHECK_ONNXRUNTIME_DIR, else <source>/third_party/onnxruntime).
struct OrtLookup {
  std::string command_prefix;  // "ATTNCHECK_ONNXRUNTIME_DIR='…' exec '/usr/bin/node' '…/backend.mjs'"
  std::string missing;         // why not; empty when found
};
OrtLookup FindOrtBackend();

// The shell command of one adapter: prefix + " --op OP --dtype DTYPE".
std::string OrtCommand(const OrtLookup& lookup, const OrtAdapterName& adapter);

// The adapter: an exec: process adapter named `adapter.name` (the backend declares the
// head dims its operator takes, `head_dim_multiple`).
std::unique_ptr<Adapter> MakeOrtAdapter(const OrtLookup& lookup, const OrtAdapterName& adapter);

}  // namespace attncheck
