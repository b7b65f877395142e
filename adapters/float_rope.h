// RoPE as a float kernel computes it (shared by the eigen and tiled adapters and
// the mutants built on them): angle = float(p)·float(theta_k), pairs (2k, 2k+1)
// interleaved or (k, k + rotary_dim/2) half-split, only the first rotary_dim dims,
//   x'_a = (x_a cos − x_b sin)·mscale,  x'_b = (x_a sin + x_b cos)·mscale,
// frequencies and mscale from reference::Frequencies (every scaling); the query is
// then scaled by the log-n factor when the spec asks. Values are read from and
// stored back in the storage type S (float, Eigen::half, Eigen::bfloat16).
#pragma once

#include <cmath>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "cases/kernel_spec.h"
#include "reference/rope_scaling.h"

namespace attncheck::adapters {

class FloatRope {
 public:
  FloatRope(const KernelSpec& c, int current_length)
      : spec_(c.encoding.rope), rotary_dim_(c.rotary_dim()), head_dim_(c.head_dim), scratch_(c.head_dim) {
    if (c.encoding.kind != EncodingKind::kRope) {
      throw std::invalid_argument("cannot apply encoding " + std::string(Name(c.encoding.kind)));
    }
    const reference::RopeFrequencies frequencies = reference::Frequencies(spec_, rotary_dim_, current_length);
    for (double theta : frequencies.theta) theta_.push_back(static_cast<float>(theta));
    mscale_ = static_cast<float>(frequencies.mscale);
  }

  // x: [head_dim] of one token at logical `position`, in place: read into float,
  // rotated (and log-n scaled) in float, stored back in S once.
  template <class S>
  void Apply(S* x, int position, bool query) const {
    float* f = scratch_.data();
    for (int d = 0; d < head_dim_; ++d) f[d] = static_cast<float>(x[d]);
    const float* trig = Trig(position);
    const int half = rotary_dim_ / 2;
    for (int k = 0; k < half; ++k) {
      const int a = spec_.layout == RopeLayout::kInterleaved ? 2 * k : k;
      const int b = spec_.layout == RopeLayout::kInterleaved ? 2 * k + 1 : k + half;
      const float cos_angle = trig[2 * k], sin_angle = trig[2 * k + 1];
      const float x_a = f[a], x_b = f[b];
      f[a] = x_a * cos_angle - x_b * sin_angle;
      f[b] = x_a * sin_angle + x_b * cos_angle;
    }
    if (query && spec_.log_n) {
      const float log_n_scale = static_cast<float>(reference::LogNScale(position, spec_.original_context));
      for (int d = 0; d < head_dim_; ++d) f[d] *= log_n_scale;
    }
    for (int d = 0; d < head_dim_; ++d) x[d] = static_cast<S>(f[d]);
  }

  // x [B, H, T, D] (a vector or span of S) in place at positions [B, T].
  template <class Buffer>
  void ApplyAll(Buffer&& x, int batch, int heads, int tokens, std::span<const int> positions,
                bool query) const {
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int t = 0; t < tokens; ++t) {
          auto* row = x.data() + ((static_cast<size_t>(b) * heads + h) * tokens + t) * head_dim_;
          Apply(row, positions[static_cast<size_t>(b) * tokens + t], query);
        }
  }

 private:
  // cos(angle)·mscale, sin(angle)·mscale of every pair k at `position`
  // (angle = float(position)·theta_k), computed once per position: every head
  // and batch row at that position rotates with the same values.
  const float* Trig(int position) const {
    const auto [it, inserted] = trig_rows_.try_emplace(position, trig_.size());
    if (inserted) {
      const float p = static_cast<float>(position);
      for (int k = 0; k < rotary_dim_ / 2; ++k) {
        const float angle = p * theta_[static_cast<size_t>(k)];
        trig_.push_back(std::cos(angle) * mscale_);
        trig_.push_back(std::sin(angle) * mscale_);
      }
    }
    return trig_.data() + it->second;
  }

  RopeSpec spec_;
  int rotary_dim_ = 0, head_dim_ = 0;
  std::vector<float> theta_;
  float mscale_ = 1.0f;
  mutable std::vector<float> scratch_;  // one token in float; an instance serves one thread
  mutable std::unordered_map<int, size_t> trig_rows_;  // position → offset in trig_
  mutable std::vector<float> trig_;
};

}  // namespace attncheck::adapters
