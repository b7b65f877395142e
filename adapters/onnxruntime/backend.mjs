// An attncheck process backend (adapters/process/PROTOCOL.md, version 2) over ONNX
// Runtime's CPU attention operators: one long-lived Node process that builds each
// operator's one-node model in memory and runs it through onnxruntime-node.
//
//   node adapters/onnxruntime/backend.mjs --op attention|mha|gqa|rotary --dtype f32|f16
//
// The packages come from third_party/onnxruntime (scripts/fetch-onnxruntime.sh) or
// from $ATTNCHECK_ONNXRUNTIME_DIR. The declarations and their sources: README.md here.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { Operators } from "./operators.mjs";
import { F16 } from "./half.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const packages = process.env.ATTNCHECK_ONNXRUNTIME_DIR || path.join(here, "..", "..", "third_party", "onnxruntime");
const require = createRequire(path.join(packages, "node_modules", "noop.js"));
const ort = require("onnxruntime-node");
const { onnx } = require("onnx-proto");
ort.env.logLevel = "fatal";  // a kernel's error comes back as the request's answer, not on stderr

const PROTOCOL = 2;  // answers min(2, the harness's): 2 carries the visibility descriptor
const DTYPE_BYTES = { f32: 4, i32: 4, u8: 1 };

function Args(argv) {
  const args = { op: "attention", dtype: "f32" };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--op") args.op = argv[++i];
    else if (argv[i] === "--dtype") args.dtype = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!(args.op in Operators)) throw new Error(`--op: one of ${Object.keys(Operators).join(", ")}`);
  if (!Operators[args.op].dtypes.includes(args.dtype)) throw new Error(`--op ${args.op} runs ${Operators[args.op].dtypes}`);
  return args;
}

// ---- framing ----

class Reader {
  constructor(stream) {
    this.chunks = [];
    this.length = 0;
    this.waiting = null;
    this.ended = false;
    stream.on("data", (c) => { this.chunks.push(c); this.length += c.length; this.wake(); });
    stream.on("end", () => { this.ended = true; this.wake(); });
  }
  wake() { if (this.waiting) { const w = this.waiting; this.waiting = null; w(); } }
  async take(n) {
    while (this.length < n) {
      if (this.ended) return null;
      await new Promise((resolve) => { this.waiting = resolve; });
    }
    if (this.chunks[0].length < n) this.chunks = [Buffer.concat(this.chunks, this.length)];
    const first = this.chunks[0];
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.length -= n;
    return first.subarray(0, n);
  }
}

async function ReadMessage(reader) {
  const prefix = await reader.take(4);
  if (prefix === null) return null;
  const n = prefix.readUInt32LE(0);
  if (n === 0 || n > (1 << 20)) throw new Error(`header length ${n} out of range`);
  const header = JSON.parse((await reader.take(n)).toString("utf8"));
  const tensors = {};
  for (const t of header.tensors || []) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    const raw = await reader.take(count * DTYPE_BYTES[t.dtype]);
    if (raw === null) throw new Error("input ended inside a tensor");
    const copy = new Uint8Array(raw);  // aligned copy
    const data = t.dtype === "f32" ? new Float32Array(copy.buffer, 0, count)
      : t.dtype === "i32" ? new Int32Array(copy.buffer, 0, count) : copy;
    tensors[t.name] = { data, shape: t.shape };
  }
  delete header.tensors;
  return { header, tensors };
}

function WriteMessage(header, tensors = []) {
  const listed = [];
  const payload = [];
  for (const [name, data, shape] of tensors) {
    listed.push({ name, dtype: "f32", shape });
    payload.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }
  if (listed.length) header = { ...header, tensors: listed };
  const text = Buffer.from(JSON.stringify(header), "utf8");
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32LE(text.length, 0);
  process.stdout.write(Buffer.concat([prefix, text, ...payload]));
}

// ---- models and sessions ----

const ELEM = { float: 1, uint8: 2, int32: 6, int64: 7, bool: 9, float16: 10 };

// A one-node model: inputs/outputs [name, element type, rank] with symbolic dims.
function ModelBytes(node, inputs, outputs, opsets) {
  const info = ([name, type, rank]) => ({
    name,
    type: { tensorType: { elemType: ELEM[type], shape: { dim: Array.from({ length: rank }, (_, i) => ({ dimParam: `${name}_${i}` })) } } },
  });
  const attribute = Object.entries(node.attributes || {}).map(([name, v]) =>
    Number.isInteger(v.i) ? { name, type: 2, i: v.i } : { name, type: 1, f: v.f });
  const model = onnx.ModelProto.create({
    irVersion: 10,
    producerName: "attncheck",
    opsetImport: opsets,
    graph: {
      name: node.opType,
      node: [{ opType: node.opType, domain: node.domain || "", input: node.inputs, output: node.outputs, attribute }],
      input: inputs.map(info),
      output: outputs.map(info),
    },
  });
  return onnx.ModelProto.encode(model).finish();
}

const sessions = new Map();  // key: operator, attributes, dtype, signature → InferenceSession

async function Session(spec) {
  const key = JSON.stringify(spec.key);
  let s = sessions.get(key);
  if (!s) {
    const bytes = ModelBytes(spec.node, spec.inputs, spec.outputs, spec.opsets);
    s = await ort.InferenceSession.create(bytes, {
      intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: "sequential",
      logSeverityLevel: 3, executionProviders: ["cpu"],
      enableProfiling: process.env.ATTNCHECK_ORT_PROFILE ? true : false,
      profileFilePrefix: process.env.ATTNCHECK_ORT_PROFILE || undefined,
    });
    sessions.set(key, s);
  }
  return s;
}

// ---- tensors ----

const Ctx = { ort, F16 };

function Feed(dtype, data, dims) {
  if (dtype === "f16") return new ort.Tensor("float16", F16.FromF32(data), dims);
  return new ort.Tensor("float32", Float32Array.from(data), dims);
}

function Out(tensor) {
  return tensor.type === "float16" ? F16.ToF32(tensor.data) : Float32Array.from(tensor.data);
}

// ---- requests ----

class Backend {
  constructor(args) {
    this.args = args;
    this.op = Operators[args.op];
    this.sessions = new Map();
  }

  hello(h) {
    const versions = ort.env.versions;
    const caps = this.op.capabilities(this.args);
    return [{
      op: "hello", protocol: Math.min(PROTOCOL, h.protocol || 1),
      name: `onnxruntime ${versions.node}`,
      description: `${this.op.description} (${this.args.dtype}), onnxruntime-node ${versions.node}, CPU EP, 1 thread`,
      versions: { onnxruntime: versions.node },
      capabilities: caps,
    }];
  }

  Call(h) {
    return { dtype: this.args.dtype, scale: h.scale, softcap: h.softcap, feed: Feed, out: Out, session: Session, ctx: Ctx };
  }

  // q [B, H, T, D] rotated by the operator's rope stage when the request carries RoPE.
  async Rotated(h, x, positions, heads, tokens, rope = h.rope) {
    if (!rope) return x;
    if (!this.op.rotate) throw new Error("this adapter does not own RoPE");
    if (rope.log_n) throw new Error("RotaryEmbedding has no log-n query scaling");
    return this.op.rotate(this.Call(h), x, positions, rope, h.batch, heads, tokens, h.head_dim);
  }

  async rope(h, t) {
    const out = await this.Rotated(h, t.x.data, t.positions.data, h.heads, h.tokens);
    return [{ op: "result" }, [["out", out, [h.batch, h.heads, h.tokens, h.head_dim]]]];
  }

  async attention(h, t) {
    if (h.apply_bias) throw new Error("the harness folds score biases into the mask");
    const q = await this.Rotated(h, t.q.data, t.query_positions.data, h.q_heads, h.tq);
    const k = await this.Rotated(h, t.k.data, t.key_positions.data, h.kv_heads, h.tk);
    const out = await this.op.attention(this.Call(h), {
      batch: h.batch, qHeads: h.q_heads, kvHeads: h.kv_heads, tq: h.tq, tk: h.tk, d: h.head_dim, dv: h.value_dim,
      convention: h.mask_convention, descriptor: h.descriptor, q, k, v: t.v.data, mask: t.mask ? t.mask.data : null,
      // ORT's is_causal is j ≤ i + past: a bottom-right flag goes in as past + the last tq keys
      past: h.mask_convention === "causal-bottom-right" ? Math.max(0, h.tk - h.tq) : 0,
    });
    return [{ op: "result" }, [["out", out.y, [h.batch, h.q_heads, h.tq, h.value_dim]]]];
  }

  async session_open(h) {
    if (h.apply_bias) throw new Error("the harness folds score biases into the mask");
    if (h.rope && !this.op.rotate) throw new Error("this adapter does not own RoPE");
    this.sessions.set(h.session, { h, cacheK: null, cacheV: null, cached: 0, pendingK: [], pendingV: [], pending: 0 });
    return [{ op: "ok" }];
  }

  async session_append(h, t) {
    const s = this.sessions.get(h.session);
    s.pendingK.push(await this.Rotated(s.h, t.k.data, t.positions.data, s.h.kv_heads, h.n));
    s.pendingV.push(t.v.data);
    s.pending += h.n;
    return [{ op: "ok" }];
  }

  // Keys reach ORT through past_key/past_value: the cache is ORT's own present_key/
  // present_value from the previous step, the appended keys join it, and the last tq
  // keys go in as K/V (so is_causal means j ≤ i + past: bottom-right). A causal-top-left
  // step has no past form in ORT: it runs every key as K/V without past.
  async session_attend(h, t) {
    const s = this.sessions.get(h.session);
    const o = s.h;
    const total = s.cached + s.pending;
    const keys = Concat(o.batch, o.kv_heads, o.head_dim, s.cacheK, s.cached, s.pendingK, s.pending);
    const values = Concat(o.batch, o.kv_heads, o.value_dim, s.cacheV, s.cached, s.pendingV, s.pending);
    const past = h.mask_convention === "causal-top-left" ? 0 : Math.max(0, total - h.tq);
    const out = await this.op.attention(this.Call(o), {
      batch: o.batch, qHeads: o.q_heads, kvHeads: o.kv_heads, tq: h.tq, tk: total, d: o.head_dim, dv: o.value_dim,
      convention: h.mask_convention, descriptor: h.descriptor,
      q: await this.Rotated(o, t.q.data, t.positions.data, o.q_heads, h.tq), k: keys,
      v: values, mask: t.mask ? t.mask.data : null, past,
    });
    s.cacheK = out.presentK || keys;
    s.cacheV = out.presentV || values;
    s.cached = total;
    s.pendingK = [];
    s.pendingV = [];
    s.pending = 0;
    return [{ op: "result" }, [["out", out.y, [o.batch, o.q_heads, h.tq, o.value_dim]]]];
  }

  async session_close(h) {
    this.sessions.delete(h.session);
    return [{ op: "ok" }];
  }
}

// [B, H, cached + Σ n, D] from a cache [B, H, cached, D] and chunks [B, H, n, D].
function Concat(batch, heads, dim, cache, cached, chunks, pending) {
  const total = cached + pending;
  const out = new Float32Array(batch * heads * total * dim);
  for (let bh = 0; bh < batch * heads; ++bh) {
    let at = bh * total * dim;
    if (cached) {
      out.set(cache.subarray(bh * cached * dim, (bh + 1) * cached * dim), at);
      at += cached * dim;
    }
    for (const chunk of chunks) {
      const n = chunk.length / (batch * heads * dim);
      out.set(chunk.subarray(bh * n * dim, (bh + 1) * n * dim), at);
      at += n * dim;
    }
  }
  return out;
}

async function Main() {
  const backend = new Backend(Args(process.argv.slice(2)));
  const reader = new Reader(process.stdin);
  for (;;) {
    const message = await ReadMessage(reader);
    if (message === null) break;
    const { header, tensors } = message;
    if (header.op === "shutdown") break;
    let answer;
    try {
      // requests are the lower-case methods (hello, attention, rope, session_*)
      const handler = typeof header.op === "string" && /^[a-z_]+$/.test(header.op) && header.op !== "constructor"
        ? backend[header.op] : undefined;
      if (typeof handler !== "function") throw new Error(`unknown op ${JSON.stringify(header.op)}`);
      answer = await handler.call(backend, header, tensors);
    } catch (e) {
      // an error marked `refused` is a shape the operator has no path for: the law skips it
      answer = [{ op: "error", ...(e && e.refused ? { kind: "refused" } : {}),
        message: String(e && e.message ? e.message : e).split("\n")[0] }];
    }
    WriteMessage(...answer);
  }
  // ATTNCHECK_ORT_PROFILE=PREFIX: ORT's profile per session (which kernel ran, in which dtype)
  if (process.env.ATTNCHECK_ORT_PROFILE) for (const s of sessions.values()) await s.endProfiling();
  process.exit(0);
}

Main().catch((e) => {
  process.stderr.write(`backend.mjs: ${e.stack || e}\n`);
  process.exit(1);
});
