// A process-protocol proxy for tests/onnxruntime_test.cc: starts the backend given on
// its command line and forwards every message both ways, but drops the descriptor's
// window and used lengths on the way in. An adapter behind it must fail where the
// descriptor matters, which shows that ort-gqa's descriptor reaches the operator.
import { spawn } from "node:child_process";

const child = spawn(process.argv[2], process.argv.slice(3), { stdio: ["pipe", "pipe", "inherit"] });
child.stdout.pipe(process.stdout);
child.on("exit", (code) => process.exit(code ?? 1));

let pending = Buffer.alloc(0);
let need = null;  // bytes of tensors still to pass through unchanged
process.stdin.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  for (;;) {
    if (need !== null) {
      const n = Math.min(need, pending.length);
      child.stdin.write(pending.subarray(0, n));
      pending = pending.subarray(n);
      need -= n;
      if (need > 0) return;
      need = null;
    }
    if (pending.length < 4) return;
    const length = pending.readUInt32LE(0);
    if (pending.length < 4 + length) return;
    const header = JSON.parse(pending.subarray(4, 4 + length).toString("utf8"));
    pending = pending.subarray(4 + length);
    if (header.descriptor) {
      for (const part of ["seqused_q", "seqused_k"]) delete header.descriptor[part];
      header.descriptor.window_left = -1;
    }
    const text = Buffer.from(JSON.stringify(header), "utf8");
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32LE(text.length, 0);
    child.stdin.write(Buffer.concat([prefix, text]));
    const size = { f32: 4, i32: 4, u8: 1 };
    need = (header.tensors || []).reduce((s, t) => s + t.shape.reduce((a, b) => a * b, 1) * size[t.dtype], 0);
  }
});
process.stdin.on("end", () => child.stdin.end());
