// What a kernel under test implements and promises (DESIGN §5). Decode draws
// cases inside these capabilities, so it lives with the vocabulary.
#pragma once

#include <string>
#include <vector>

#include "cases/accuracy.h"
#include "cases/case.h"

namespace attncheck {

enum class MaskedRowPolicy { kZeros, kNaN, kUnspecified };
std::string_view Name(MaskedRowPolicy);

struct Capabilities {
  // stages the adapter computes itself; the harness runs the reference for the rest
  bool owns_rope = false;        // applies RoPE / xPos / absolute encodings from positions
  bool owns_bias = false;        // applies ALiBi / T5 / KERPLE / Sandwich score bias
  bool has_rope_stage = false;   // implements Adapter::rope (rotation alone)
  bool has_session = false;      // implements a cached-decode session

  std::vector<Dtype> dtypes = {Dtype::kF32};
  std::vector<MaskConvention> masks = {MaskConvention::kAdditiveNegInf};  // accepted; [0] preferred
  MaskedRowPolicy masked_rows = MaskedRowPolicy::kUnspecified;
  std::vector<EncodingKind> encodings = {EncodingKind::kNone};
  std::vector<RopeLayout> rope_layouts = {RopeLayout::kHalfSplit, RopeLayout::kInterleaved};
  std::vector<RopeScaling> rope_scalings = {RopeScaling::kNone};
  bool gqa = true;
  bool softcap = false;
  bool value_dim_differs = true;  // Dv ≠ D allowed
  Accuracy accuracy;              // how it computes: sets its tolerance (cases/accuracy.h)

  // limits of the shapes Decode draws (also `attncheck bench --max-*`)
  int max_batch = 3;
  int max_heads = 4;
  int max_tokens = 40;
  int max_head_dim = 32;
  int max_position = 70000;  // largest logical position drawn
};

}  // namespace attncheck
