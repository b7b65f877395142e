// F12 (FINDINGS.md): ONNX Attention (opset 24) in float16 on the CPU EP blocks a bool-masked
// or causally hidden key with the finite sentinel -65504 (mask_filter_value<MLFloat16>), so a
// blocked key whose score exceeds ~65504 takes the weight. The schema: a bool mask's False
// elements do not take part in attention; is_causal hides future keys.
//   npm install onnxruntime-node@1.30.0 onnx-proto@8.0.1 && node f12_f16_mask_sentinel.mjs
// ($ORT_NODE_MODULES: the node_modules folder to load them from.) Exit 0: the defect shows;
// 1: it no longer reproduces; 77: onnxruntime-node or onnx-proto not installed.
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.ORT_NODE_MODULES ||
  path.join(here, "..", "..", "third_party", "onnxruntime", "node_modules");
let ort, onnx;
try {
  const require = createRequire(path.join(modules, "noop.js"));
  ort = require("onnxruntime-node");
  ({ onnx } = require("onnx-proto"));
} catch (error) {
  console.log(`skip: onnxruntime-node / onnx-proto not found in ${modules} (${error.code || error.message})`);
  process.exit(77);
}

// Exact small values only: 0, ±1, ±2, 200, 400 (normal halves, 10 mantissa bits suffice).
const Half = (x) => {
  if (x === 0) return 0;
  const e = Math.floor(Math.log2(Math.abs(x)));
  return (x < 0 ? 0x8000 : 0) | ((e + 15) << 10) | Math.round((Math.abs(x) / 2 ** e - 1) * 1024);
};
const FloatOfHalf = (h) => {
  const sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 0x3ff;
  return e === 31 ? (m ? NaN : sign * Infinity) : sign * (e ? (1 + m / 1024) * 2 ** (e - 15) : m * 2 ** -24);
};

// One Attention node: Q, K, V [1, 1, T, 1]; mask [1, 1, Tq, Tk] bool or additive (optional).
async function Attend(dtype, { q, k, v, mask, maskType, causal }) {
  const elem = dtype === "f16" ? 10 : 1;
  const info = (name, type) => ({ name, type: { tensorType: { elemType: type,
    shape: { dim: [0, 1, 2, 3].map((i) => ({ dimParam: `${name}${i}` })) } } } });
  const inputs = [info("Q", elem), info("K", elem), info("V", elem)];
  if (mask) inputs.push(info("attn_mask", maskType === "bool" ? 9 : elem));
  const model = onnx.ModelProto.encode(onnx.ModelProto.create({
    irVersion: 10, opsetImport: [{ domain: "", version: 24 }],
    graph: { name: "f12", input: inputs, output: [info("Y", elem)], node: [{ opType: "Attention",
      input: inputs.map((i) => i.name), output: ["Y"],
      attribute: [{ name: "is_causal", type: 2, i: causal ? 1 : 0 }, { name: "scale", type: 1, f: 1 }] }] },
  })).finish();
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  const tensor = (x) => dtype === "f16" ? new ort.Tensor("float16", Uint16Array.from(x, Half), [1, 1, x.length, 1])
    : new ort.Tensor("float32", Float32Array.from(x), [1, 1, x.length, 1]);
  const feeds = { Q: tensor(q), K: tensor(k), V: tensor(v) };
  if (mask) {
    const dims = [1, 1, q.length, k.length];
    feeds.attn_mask = maskType === "bool" ? new ort.Tensor("bool", Uint8Array.from(mask), dims)
      : dtype === "f16" ? new ort.Tensor("float16", Uint16Array.from(mask, (m) => m === -65504 ? 0xfbff
        : m === -Infinity ? 0xfc00 : Half(m)), dims) : new ort.Tensor("float32", Float32Array.from(mask), dims);
  }
  const y = (await session.run(feeds)).Y.data;
  return Array.from(y, (h) => dtype === "f16" ? FloatOfHalf(h) : h);
}

console.log(`onnxruntime-node ${ort.env.versions.common} (${process.platform}-${process.arch}, ` +
  `${os.cpus()[0].model.trim()}), CPU EP, intraOpNumThreads 1`);
// Query 200 against key 0 (visible, score 0) and key 1 = 400 (blocked, score 80000, finite in f32
// where the CPU kernel adds the mask; above the f16 maximum 65504): out must be V[0] = 1; the
// blocked key's value is 2.
const one = { q: [200], k: [0, 400], v: [1, 2] };
const causalCase = { q: [200, 0], k: [0, 400], v: [1, 2] };  // query 0 must not see key 1
const rows = [
  ["f16, bool mask [true, false]", "f16", { ...one, mask: [1, 0], maskType: "bool" }, 0, true],
  ["f16, is_causal = 1 (Tq = Tk = 2, query 0)", "f16", { ...causalCase, causal: true }, 0, true],
  ["f32, bool mask [true, false]", "f32", { ...one, mask: [1, 0], maskType: "bool" }, 0, false],
  ["f16, additive mask [0, -inf]", "f16", { ...one, mask: [0, -Infinity], maskType: "float" }, 0, false],
  ["f16, additive mask [0, -65504] (the user's finite value: added as the schema says)", "f16",
    { ...one, mask: [0, -65504], maskType: "float" }, 0, false],
];
let defects = 0;
for (const [what, dtype, inputs, query, counts] of rows) {
  const out = (await Attend(dtype, inputs))[query];
  const wrong = out !== 1;
  if (counts && wrong) ++defects;
  console.log(`  ${what}: out = ${out}, right ${1}${wrong ? (counts ? "   <- F12" : "   (not a defect)") : ""}`);
}
if (defects === 0) {
  console.log("F12 no longer reproduces: bool and causal masks block the key in f16");
  process.exit(1);
}
console.log(`F12 reproduces: ${defects} of 2 f16 bool/causal masks let the blocked key through`);
