// Case files shared by the library adapters' tests (tests/onnxruntime_test.cc,
// tests/torch_test.cc, tests/jax_test.cc): windowed GQA cases in the descriptor convention,
// causal cases in the causal-top-left flag.
#pragma once

#include <string>

namespace attncheck::test {

// An f32 case with no encoding and head dims 8, `fields` (heads, mask, shape, visibility)
// spliced in.
inline std::string PlainCase(const std::string& fields) {
  return R"({"chunk": 0, "decode_chunks": [], "dtype": "f32",
  "encoding": {"kerple": "log", "kind": "none", "rope": {"attn_factor": 0.0, "base": 10000.0, "beta_fast": 32.0,
    "beta_slow": 1.0, "factor": 1.0, "high_freq_factor": 4.0, "layout": "half-split", "log_n": false,
    "low_freq_factor": 1.0, "mixed_b": 0.5, "ntk_exact_exponent": true, "original_context": 4096, "rotary_dim": 0,
    "scaling": "none"}, "sandwich_scale": 1.0, "t5_bidirectional": false, "t5_buckets": 32, "t5_max_distance": 128,
    "xpos_scale_base": 512.0}, "head_dim": 8, "value_dim": 8, "profile": "normal", "scale": 0.0, "seed": 5,
  "softcap": 0.0, )" + fields + "}";
}

// A window of 3 keys, GQA 2/1, no encoding, in the descriptor convention, with `shape`
// (query_len and rows) spliced in.
inline std::string WindowCase(const std::string& shape) {
  return PlainCase(R"("q_heads": 2, "kv_heads": 1, "mask": "descriptor", "visibility": "sliding-window",
  "window": 3, )" + shape);
}

// Causal top-left over one row of `tokens` queries and keys, with `heads` ("q_heads": …,
// "kv_heads": …) spliced in.
inline std::string CausalCase(const std::string& heads, int tokens) {
  const std::string n = std::to_string(tokens);
  return PlainCase(heads + R"(, "mask": "causal-top-left", "visibility": "causal", "window": 0, "query_len": )" + n +
                   R"(, "rows": [{"documents": [)" + n +
                   R"(], "left_pad": 0, "right_pad": 0, "position_offset": 0, "prefix_len": 0}])");
}

// Batch 2 with the second row right-padded by 2 (seqused_q = 1, seqused_k = 7), Tq = 3 < Tk = 9.
inline const std::string kWindowedCase = WindowCase(R"("query_len": 3,
  "rows": [{"documents": [9], "left_pad": 0, "right_pad": 0, "position_offset": 0, "prefix_len": 0},
           {"documents": [7], "left_pad": 0, "right_pad": 2, "position_offset": 0, "prefix_len": 0}])");

// Square (Tq = Tk = 9, one row, no padding), which a kernel with top-left windows only
// (JAX's local_window_size) expresses.
inline const std::string kSquareWindowCase = WindowCase(R"("query_len": 9,
  "rows": [{"documents": [9], "left_pad": 0, "right_pad": 0, "position_offset": 0, "prefix_len": 0}])");

}  // namespace attncheck::test
