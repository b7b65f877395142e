// The ONNX Runtime operators the backend runs: for each, its one-node model (inputs,
// attributes), how a request's tensors feed it, and the capabilities it declares.
// Why each declaration holds (with ORT source and doc citations): README.md here.

import { FromBsh, HarnessEncodings, Limits, Split, ToBsh } from "./common.mjs";
import { GroupQueryAttention } from "./gqa.mjs";

const CAUSAL = ["causal-top-left", "causal-bottom-right"];

// The dense mask a request carries, as the operator's mask input [B, 1, Tq, Tk]:
// additive values in the input dtype, or bool with true = may attend.
function MaskFeed(call, a) {
  if (CAUSAL.includes(a.convention)) return null;
  const dims = [a.batch, 1, a.tq, a.tk];
  if (a.convention === "bool-visible" || a.convention === "bool-blocked") {
    const flip = a.convention === "bool-blocked";
    const values = new Uint8Array(a.mask.length);
    for (let i = 0; i < values.length; ++i) values[i] = (a.mask[i] !== 0) !== flip ? 1 : 0;
    return { type: "bool", tensor: new call.ctx.ort.Tensor("bool", values, dims) };
  }
  return { type: "float", tensor: call.feed(call.dtype, a.mask, dims) };
}

function FloatAttributes(call) {
  const attributes = { scale: { f: call.scale } };
  if (call.softcap > 0) attributes.softcap = { f: call.softcap };
  return attributes;
}

// ONNX Attention (opset 24; the CPU kernel is registered for opsets 23 and 24).
const Attention = {
  description: "ONNX Attention opset 24 (CPU EP kernel)",
  dtypes: ["f32", "f16"],
  capabilities(args) {
    return Limits({
      owns_rope: false, owns_bias: false, has_rope_stage: false, has_session: true,
      dtypes: [args.dtype],
      masks: ["add-inf", "add-lowest", "bool-visible", "bool-blocked", ...CAUSAL],
      // attn_mask is "added to the attention score": a key at a finite fill whose score
      // outweighs it is read; a row all at the fill (lowest, -inf, bool false) is 0 (onnx#8068)
      masked_rows: "zeros", blocking: "fill-rows", nan_isolation: false,
      ...HarnessEncodings,
      gqa: true, softcap: true, value_dim_differs: true, scale_argument: true,
      accuracy: args.dtype === "f16"
        ? { score_accum: "f32", pv_accum: "f32", scores_in_input_dtype: true, p_in_input_dtype: true }
        : { score_accum: "f32", pv_accum: "f32", scores_in_input_dtype: false, p_in_input_dtype: false },
    });
  },
  async attention(call, a) {
    const T = call.dtype === "f16" ? "float16" : "float";
    const mask = MaskFeed(call, a);
    const causal = CAUSAL.includes(a.convention) ? 1 : 0;
    const [pastK, k] = Split(a.k, a.batch, a.kvHeads, a.tk, a.d, a.past);
    const [pastV, v] = Split(a.v, a.batch, a.kvHeads, a.tk, a.dv, a.past);
    const withPast = a.past > 0;
    const inputs = [["Q", T, 4], ["K", T, 4], ["V", T, 4]];
    const names = ["Q", "K", "V", mask ? "attn_mask" : "", withPast ? "past_key" : "", withPast ? "past_value" : ""];
    if (mask) inputs.push(["attn_mask", mask.type === "bool" ? "bool" : T, 4]);
    if (withPast) inputs.push(["past_key", T, 4], ["past_value", T, 4]);
    while (names[names.length - 1] === "") names.pop();
    const outputs = [["Y", T, 4], ["present_key", T, 4], ["present_value", T, 4]];
    const attributes = { is_causal: { i: causal }, ...FloatAttributes(call) };
    const session = await call.session({
      key: ["Attention", 24, call.dtype, attributes, mask && mask.type, withPast],
      node: { opType: "Attention", inputs: names, outputs: outputs.map((o) => o[0]), attributes },
      inputs, outputs, opsets: [{ domain: "", version: 24 }],
    });
    const feeds = {
      Q: call.feed(call.dtype, a.q, [a.batch, a.qHeads, a.tq, a.d]),
      K: call.feed(call.dtype, k, [a.batch, a.kvHeads, a.tk - a.past, a.d]),
      V: call.feed(call.dtype, v, [a.batch, a.kvHeads, a.tk - a.past, a.dv]),
    };
    if (mask) feeds.attn_mask = mask.tensor;
    if (withPast) {
      feeds.past_key = call.feed(call.dtype, pastK, [a.batch, a.kvHeads, a.past, a.d]);
      feeds.past_value = call.feed(call.dtype, pastV, [a.batch, a.kvHeads, a.past, a.dv]);
    }
    const r = await session.run(feeds);
    return { y: call.out(r.Y), presentK: call.out(r.present_key), presentV: call.out(r.present_value) };
  },
};

// com.microsoft.MultiHeadAttention (CPU kernel: float only).
const MultiHeadAttention = {
  description: "com.microsoft.MultiHeadAttention (CPU EP kernel)",
  dtypes: ["f32"],
  capabilities(args) {
    return Limits({
      owns_rope: false, owns_bias: false, has_rope_stage: false, has_session: true,
      dtypes: [args.dtype],
      masks: ["add-inf", "add-lowest", "causal-bottom-right"],
      masked_rows: "unspecified", blocking: "neg-inf", nan_isolation: false,
      ...HarnessEncodings,
      gqa: false, softcap: false, value_dim_differs: false, scale_argument: true,
    });
  },
  async attention(call, a) {
    if (a.qHeads !== a.kvHeads) throw new Error("MultiHeadAttention has one head count for Q, K and V");
    const mask = MaskFeed(call, a);
    if (mask && mask.type === "bool") throw new Error("MultiHeadAttention takes an additive attention_bias only");
    const causal = CAUSAL.includes(a.convention) ? 1 : 0;
    const H = a.qHeads;
    const [pastK, k] = Split(a.k, a.batch, H, a.tk, a.d, a.past);
    const [pastV, v] = Split(a.v, a.batch, H, a.tk, a.dv, a.past);
    const withPast = a.past > 0;
    const fresh = a.tk - a.past;
    const inputs = [["query", "float", 3], ["key", "float", 3], ["value", "float", 3]];
    const names = ["query", "key", "value", "", "", mask ? "attention_bias" : "", withPast ? "past_key" : "",
      withPast ? "past_value" : ""];
    if (mask) inputs.push(["attention_bias", "float", 4]);
    if (withPast) inputs.push(["past_key", "float", 4], ["past_value", "float", 4]);
    while (names[names.length - 1] === "") names.pop();
    const outputs = [["output", "float", 3], ["present_key", "float", 4], ["present_value", "float", 4]];
    const attributes = { num_heads: { i: H }, unidirectional: { i: causal }, scale: { f: call.scale } };
    const session = await call.session({
      key: ["MultiHeadAttention", call.dtype, attributes, !!mask, withPast],
      node: { opType: "MultiHeadAttention", domain: "com.microsoft", inputs: names, outputs: outputs.map((o) => o[0]),
        attributes },
      inputs, outputs, opsets: [{ domain: "", version: 24 }, { domain: "com.microsoft", version: 1 }],
    });
    const feeds = {
      query: call.feed("f32", ToBsh(a.q, a.batch, H, a.tq, a.d), [a.batch, a.tq, H * a.d]),
      key: call.feed("f32", ToBsh(k, a.batch, H, fresh, a.d), [a.batch, fresh, H * a.d]),
      value: call.feed("f32", ToBsh(v, a.batch, H, fresh, a.dv), [a.batch, fresh, H * a.dv]),
    };
    if (mask) feeds.attention_bias = mask.tensor;
    if (withPast) {
      feeds.past_key = call.feed("f32", pastK, [a.batch, H, a.past, a.d]);
      feeds.past_value = call.feed("f32", pastV, [a.batch, H, a.past, a.dv]);
    }
    const r = await session.run(feeds);
    return { y: FromBsh(call.out(r.output), a.batch, H, a.tq, a.dv), presentK: call.out(r.present_key),
      presentV: call.out(r.present_value) };
  },
};

// ONNX RotaryEmbedding (opset 23) as the rope stage, in front of ONNX Attention: the
// harness sends the angle per pair (every scaling applied) and the positions; the
// backend builds cos/sin caches [B, T, r/2] from them (angle = f32(p·θ), times mscale),
// and ORT rotates: interleaved = 1 pairs (2k, 2k+1), 0 pairs (k, k + r/2).
async function Rotate(call, x, positions, rope, batch, heads, tokens, dim) {
  const T = call.dtype === "f16" ? "float16" : "float";
  const half = rope.rotary_dim / 2;
  const cos = new Float32Array(batch * tokens * half);
  const sin = new Float32Array(batch * tokens * half);
  for (let bt = 0; bt < batch * tokens; ++bt) {
    for (let k = 0; k < half; ++k) {
      const angle = Math.fround(Math.fround(positions[bt]) * Math.fround(rope.theta[k]));
      cos[bt * half + k] = Math.fround(Math.cos(angle) * rope.mscale);
      sin[bt * half + k] = Math.fround(Math.sin(angle) * rope.mscale);
    }
  }
  const attributes = { interleaved: { i: rope.layout === "interleaved" ? 1 : 0 },
    rotary_embedding_dim: { i: rope.rotary_dim } };
  const session = await call.session({
    key: ["RotaryEmbedding", 23, call.dtype, attributes],
    node: { opType: "RotaryEmbedding", inputs: ["X", "cos_cache", "sin_cache"], outputs: ["Y"], attributes },
    inputs: [["X", T, 4], ["cos_cache", T, 3], ["sin_cache", T, 3]], outputs: [["Y", T, 4]],
    opsets: [{ domain: "", version: 23 }],
  });
  const r = await session.run({
    X: call.feed(call.dtype, x, [batch, heads, tokens, dim]),
    cos_cache: call.feed(call.dtype, cos, [batch, tokens, half]),
    sin_cache: call.feed(call.dtype, sin, [batch, tokens, half]),
  });
  return call.out(r.Y);
}

const Rotary = {
  description: "ONNX RotaryEmbedding opset 23 + ONNX Attention opset 24 (CPU EP kernels)",
  dtypes: ["f32", "f16"],
  capabilities(args) {
    const caps = Attention.capabilities(args);
    // session_rope_as_call: a session rotates each appended key by this same Rotate
    return { ...caps, owns_rope: true, has_rope_stage: true, rope_log_n: false, session_rope_as_call: true,
      encodings: ["none", "rope", "alibi", "t5", "kerple", "sandwich"],
      rope_layouts: ["half-split", "interleaved"] };
  },
  attention: Attention.attention,
  rotate: Rotate,
};

export const Operators = { attention: Attention, mha: MultiHeadAttention, rotary: Rotary, gqa: GroupQueryAttention };
