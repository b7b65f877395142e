// Shared by the operator modules: the tensor layouts the operators take (past/new
// split, BNSH <-> BSH) and the capabilities every ort-* adapter shares (limits, size
// tier, the encodings the harness applies for it).

// Slices keys [B, H, T, D] into the first `past` positions and the rest.
export function Split(x, batch, heads, total, dim, past) {
  const rest = total - past;
  const a = new Float32Array(batch * heads * past * dim);
  const b = new Float32Array(batch * heads * rest * dim);
  for (let bh = 0; bh < batch * heads; ++bh) {
    const base = bh * total * dim;
    a.set(x.subarray(base, base + past * dim), bh * past * dim);
    b.set(x.subarray(base + past * dim, base + total * dim), bh * rest * dim);
  }
  return [a, b];
}

// [B, H, T, D] <-> [B, T, H·D] (MultiHeadAttention's 3-D layout).
export function ToBsh(x, batch, heads, tokens, dim) {
  const out = new Float32Array(x.length);
  for (let b = 0; b < batch; ++b)
    for (let h = 0; h < heads; ++h)
      for (let t = 0; t < tokens; ++t)
        for (let d = 0; d < dim; ++d)
          out[((b * tokens + t) * heads + h) * dim + d] = x[((b * heads + h) * tokens + t) * dim + d];
  return out;
}
export function FromBsh(x, batch, heads, tokens, dim) {
  const out = new Float32Array(x.length);
  for (let b = 0; b < batch; ++b)
    for (let h = 0; h < heads; ++h)
      for (let t = 0; t < tokens; ++t)
        for (let d = 0; d < dim; ++d)
          out[((b * heads + h) * tokens + t) * dim + d] = x[((b * tokens + t) * heads + h) * dim + d];
  return out;
}

// Positional encodings and score biases arrive applied by the harness (owns_rope and
// owns_bias false; biases folded into the additive mask), so every kind and scaling.
export const HarnessEncodings = {
  encodings: ["none", "rope", "sinusoidal", "learned", "xpos", "alibi", "t5", "kerple", "sandwich"],
  rope_scalings: ["none", "linear", "ntk-aware", "dynamic-ntk", "yarn", "llama3", "ntk-mixed", "yarn-paper"],
};

// Common limits and the size tier: Tk up to 512 in a quarter of the cases.
export function Limits(caps) {
  caps.max_batch = caps.max_batch || 3;
  caps.max_heads = 4;
  caps.max_tokens = 40;
  caps.max_head_dim = 32;
  caps.size_tier = { percent: 25, max_tokens: 512, max_query_len: 256, max_head_dim: 128, max_heads: 4, max_batch: 1 };
  return caps;
}
