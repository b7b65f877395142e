// com.microsoft.GroupQueryAttention through the visibility descriptor (protocol 2):
// per-row seqlens_k, local_window_size, causal 0/1, softcap, and attention_bias as the
// dense form. Each declaration and its ORT source: README.md here.
import { FromBsh, HarnessEncodings, Limits, ToBsh } from "./common.mjs";

const DENSE = ["add-inf", "add-lowest"];

// What a request asks of the operator: causal (1) or not (0), local_window_size (keys
// including self, −1: none), each batch row's real queries nq (the first nq query rows)
// and keys nk (slots [0, nk)), and the dense bias [B, Tq, Tk] when the mask is dense.
function Plan(a) {
  const full = Array.from({ length: a.batch }, () => ({ nq: a.tq, nk: a.tk }));
  if (a.convention === "causal-bottom-right") return { causal: 1, window: -1, rows: full, bias: null };
  if (DENSE.includes(a.convention)) return { causal: 0, window: -1, rows: full, bias: a.mask };
  if (a.convention !== "descriptor") throw new Error(`GroupQueryAttention takes no ${a.convention} mask`);
  const d = a.descriptor;
  for (const part of ["cu_seqlens_q", "leftpad_k", "prefix_len", "block_table", "alibi_slopes"]) {
    if (d[part]) throw new Error(`GroupQueryAttention has no ${part} form`);
  }
  if (d.chunk > 0 || d.alibi_max_bias > 0) throw new Error("GroupQueryAttention has no chunk or ALiBi form");
  if (d.causal === 1) throw new Error("GroupQueryAttention's causal mask is bottom-right");
  const causal = d.causal === 2 ? 1 : 0;
  // local_window_size bounds the earlier keys only: a two-sided window is a case the
  // operator has no input for (refused: the law skips it, the dense bias form remains).
  const refused = (why) => Object.assign(new Error(why), { refused: true });
  if (d.window_right > 0 || (d.window_right < 0 && d.window_left >= 0 && !causal)) {
    throw refused("GroupQueryAttention has no right window bound (local_window_size is causal)");
  }
  let window = -1;
  if (d.window_left >= 0) {
    // local_window_size counts the keys including the query's own (PR #25927): left + 1
    if (!causal) throw refused("GroupQueryAttention takes a window only with causal");
    window = d.window_left + 1;
  }
  const rows = full.map((r, b) => ({ nq: d.seqused_q ? d.seqused_q[b] : r.nq, nk: d.seqused_k ? d.seqused_k[b] : r.nk }));
  return { causal, window, rows, bias: null };
}

// [H, T, D] slots [from, from + n) of batch row b of x [B, H, Tk, D], into [1, H, n, D].
function Slots(x, b, heads, tk, dim, from, n) {
  const out = new Float32Array(heads * n * dim);
  for (let h = 0; h < heads; ++h) {
    const base = ((b * heads + h) * tk + from) * dim;
    out.set(x.subarray(base, base + n * dim), h * n * dim);
  }
  return out;
}

// Concatenates per-row [1, H, n, D] blocks into [B', H, n, D].
function Stack(blocks) {
  const out = new Float32Array(blocks.reduce((s, x) => s + x.length, 0));
  let at = 0;
  for (const x of blocks) { out.set(x, at); at += x.length; }
  return out;
}

// One GroupQueryAttention run over the batch rows `rows` ([b, nq, nk]) with S new
// tokens each. Prompt (S = total): every row's first S slots go in as K/V, seqlens_k
// = nk − 1 (right padding). Cached (S < total): row b's keys [nk − S, nk) as K/V and
// [0, nk − S) as past_key/past_value (padded to the longest row), seqlens_k = nk − 1,
// so query s sees keys up to nk − S + s: the bottom-right diagonal of the row.
async function Run(call, a, plan, rows, S) {
  const T = call.dtype === "f16" ? "float16" : "float";
  const total = Math.max(S, ...rows.map(([, , nk]) => nk));
  const prompt = total === S;
  const past = prompt ? 0 : Math.max(...rows.map(([, , nk]) => nk - S));
  const B = rows.length;
  const newK = [], newV = [], pastK = [], pastV = [], queries = [], bias = [];
  for (const [b, , nk] of rows) {
    const first = prompt ? 0 : Math.max(nk, S) - S;  // a row with no query and no key still feeds one slot
    newK.push(Slots(a.k, b, a.kvHeads, a.tk, a.d, first, S));
    newV.push(Slots(a.v, b, a.kvHeads, a.tk, a.d, first, S));
    if (past > 0) {
      const keys = Slots(a.k, b, a.kvHeads, a.tk, a.d, 0, first), values = Slots(a.v, b, a.kvHeads, a.tk, a.d, 0, first);
      const pk = new Float32Array(a.kvHeads * past * a.d), pv = new Float32Array(a.kvHeads * past * a.d);
      for (let h = 0; h < a.kvHeads; ++h) {
        pk.set(keys.subarray(h * first * a.d, (h + 1) * first * a.d), h * past * a.d);
        pv.set(values.subarray(h * first * a.d, (h + 1) * first * a.d), h * past * a.d);
      }
      pastK.push(pk);
      pastV.push(pv);
    }
    queries.push(Slots(a.q, b, a.qHeads, a.tq, a.d, 0, S));
    if (plan.bias) {
      const m = new Float32Array(S * total);
      for (let i = 0; i < S; ++i) m.set(plan.bias.subarray((b * a.tq + i) * a.tk, (b * a.tq + i) * a.tk + total), i * total);
      bias.push(m);
    }
  }
  const inputs = [["query", T, 3], ["key", T, 3], ["value", T, 3], past ? ["past_key", T, 4] : null,
    past ? ["past_value", T, 4] : null, ["seqlens_k", "int32", 1], ["total_sequence_length", "int32", 0], null, null,
    null, plan.bias ? ["attention_bias", T, 4] : null];
  while (inputs[inputs.length - 1] === null) inputs.pop();
  const outputs = [["output", T, 3], ["present_key", T, 4], ["present_value", T, 4]];
  const attributes = { num_heads: { i: a.qHeads }, kv_num_heads: { i: a.kvHeads }, causal: { i: plan.causal },
    local_window_size: { i: plan.window }, scale: { f: call.scale } };
  if (call.softcap > 0) attributes.softcap = { f: call.softcap };
  const session = await call.session({
    key: ["GroupQueryAttention", call.dtype, attributes, !!past, !!plan.bias],
    node: { opType: "GroupQueryAttention", domain: "com.microsoft", inputs: inputs.map((i) => (i ? i[0] : "")),
      outputs: outputs.map((o) => o[0]), attributes },
    inputs: inputs.filter((i) => i), outputs, opsets: [{ domain: "", version: 24 }, { domain: "com.microsoft", version: 1 }],
  });
  const ort = call.ctx.ort;
  const feeds = {
    query: call.feed(call.dtype, ToBsh(Stack(queries), B, a.qHeads, S, a.d), [B, S, a.qHeads * a.d]),
    key: call.feed(call.dtype, ToBsh(Stack(newK), B, a.kvHeads, S, a.d), [B, S, a.kvHeads * a.d]),
    value: call.feed(call.dtype, ToBsh(Stack(newV), B, a.kvHeads, S, a.d), [B, S, a.kvHeads * a.d]),
    seqlens_k: new ort.Tensor("int32", Int32Array.from(rows, ([, , nk]) => Math.max(nk, 1) - 1), [B]),
    total_sequence_length: new ort.Tensor("int32", Int32Array.of(total), []),
  };
  if (past) {
    feeds.past_key = call.feed(call.dtype, Stack(pastK), [B, a.kvHeads, past, a.d]);
    feeds.past_value = call.feed(call.dtype, Stack(pastV), [B, a.kvHeads, past, a.d]);
  }
  if (plan.bias) feeds.attention_bias = call.feed(call.dtype, Stack(bias), [B, 1, S, total]);
  const r = await session.run(feeds);
  return { y: FromBsh(call.out(r.output), B, a.qHeads, S, a.d), present: [call.out(r.present_key), call.out(r.present_value)] };
}

export const GroupQueryAttention = {
  description: "com.microsoft.GroupQueryAttention (CPU EP kernel)",
  dtypes: ["f32", "f16"],
  capabilities(args) {
    return Limits({
      owns_rope: false, owns_bias: false, has_rope_stage: false, has_session: true,
      dtypes: [args.dtype],
      masks: ["descriptor", "causal-bottom-right", ...DENSE],
      descriptor_forms: ["causal_bottom_right", "window", "seqused_q", "seqused_k", "softcap"],
      masked_rows: "unspecified", blocking: "neg-inf", nan_isolation: false,
      ...HarnessEncodings,
      gqa: true, softcap: true, value_dim_differs: false, scale_argument: true,
      // "head_size must be a multiple of 8" (CheckInputs)
      head_dim_multiple: 8,
      // the tiled CPU path converts Q, K, V to f32 and keeps scores, P and the sums in f32
      accuracy: { score_accum: "f32", pv_accum: "f32", scores_in_input_dtype: false, p_in_input_dtype: false },
    });
  },
  // Rows go in one batched run where ORT takes the batch (decode: one query; prompt:
  // Tq = Tk and every row as many queries as keys); otherwise each row runs alone
  // ("batch_size must be 1 when sequence_length > 1 and past context is given") with
  // its real queries as the new tokens. Query rows past a row's nq are not computed: 0.
  async attention(call, a) {
    if (a.d !== a.dv) throw new Error("GroupQueryAttention needs the value head size of the key");
    // declared (head_dim_multiple); a shrunk case may still ask
    if (a.d % 8 !== 0) throw Object.assign(new Error("head_size must be a multiple of 8"), { refused: true });
    const plan = Plan(a);
    const y = new Float32Array(a.batch * a.qHeads * a.tq * a.dv);
    const rows = plan.rows.map((r, b) => [b, r.nq, r.nk]);
    for (const [b, nq, nk] of rows) {
      if (nq > nk) throw Object.assign(new Error(`row ${b}: ${nq} queries for ${nk} keys (seqlens_k + 1 < S)`), { refused: true });
    }
    const square = a.tq === a.tk && rows.every(([, nq, nk]) => nq === nk);
    const groups = a.tq === 1 || square ? [[rows, a.tq]] : rows.filter(([, nq]) => nq > 0).map((row) => [[row], row[1]]);
    let present = null;
    for (const [group, S] of groups) {
      const r = await Run(call, a, plan, group, S);
      group.forEach(([b, nq], g) => {
        for (let h = 0; h < a.qHeads; ++h) {
          const from = (g * a.qHeads + h) * S * a.dv;
          y.set(r.y.subarray(from, from + nq * a.dv), ((b * a.qHeads + h) * a.tq) * a.dv);
        }
      });
      // ORT's own present_key/present_value serve as the session cache when they hold the batch's keys
      if (groups.length === 1 && rows.every(([, , nk]) => nk === a.tk)) present = r.present;
    }
    return { y, presentK: present && present[0], presentV: present && present[1] };
  },
};
