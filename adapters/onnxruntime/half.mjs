// IEEE binary16 <-> binary32 for tensors that travel as raw uint16 (Node 20 has
// no Float16Array): round to nearest even, overflow to ±inf, NaN kept NaN,
// subnormals exact.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function HalfOf(x) {
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);  // inf / NaN
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;  // overflow
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let m = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && (m & 1))) m += 1;
    return sign | m;
  }
  let h = sign | (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h += 1;  // may carry into the exponent: still right
  return h;
}

function FloatOf(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export const F16 = {
  FromF32(values) {
    const out = new Uint16Array(values.length);
    for (let i = 0; i < values.length; ++i) out[i] = HalfOf(values[i]);
    return out;
  },
  ToF32(halves) {
    const out = new Float32Array(halves.length);
    for (let i = 0; i < halves.length; ++i) out[i] = FloatOf(halves[i]);
    return out;
  },
};
