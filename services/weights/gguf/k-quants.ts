// Q4_K and Q5_K super-block quantisation in ggml's layouts (block_q4_K, block_q5_K): 256 values
// in 8 sub-blocks of 32, each x ≈ (d·sc)·q - dmin·m with 6-bit sub-block scales sc and mins m
// (packed as get_scale_min_k4 reads them) under two f16 super-block scales d and dmin, and codes
// q of 4 bits (Q4_K) or 5 (Q5_K: the fifth bit in qh). Decoding follows dequantize_row_q4_K /
// q5_K in f32, product by product.
//
// Scale search: simpler than ggml's make_qkx2_quants (a weighted least-squares fit of scale and
// min per sub-block, which may clip outliers). Per sub-block the range [min(0, lo), hi] is
// covered by rounding every scale *up*: dmin and d to the next f16, m and sc to the next multiple
// of them. The grid then reaches both ends, so no value is clipped and each is within half a step
// of its code: |x - x'| <= d·sc / 2, a step at most (range + dmin) / nmax + d. On N(0, 1) the RMS
// error is ~10% above ggml's (README.md); llama.cpp reads both the same way.
import { blockCount, decodeBlocks } from "./blocks.js";
import { f16BitsToF32, f32ToF16BitsUp } from "./half.js";

export const QK_K = 256;
export const Q4_K_BLOCK_BYTES = 144;
export const Q5_K_BLOCK_BYTES = 176;
const SUB = 32;
const SUBS = QK_K / SUB;
const SCALES_AT = 4; // after d and dmin
const SCALE_BYTES = 12;

/** One format's code width and where its codes live in a block. */
interface ScaleMinFormat {
  type: "Q4_K" | "Q5_K";
  blockBytes: number;
  nmax: number;
  /** Codes (0..nmax) of one super-block into the block at `at`. */
  pack(codes: Uint8Array, out: Uint8Array, at: number): void;
  unpack(bytes: Uint8Array, at: number, codes: Uint8Array): void;
}

// Codes: in each 64 values, value l in the low nibble of byte l and value 32 + l in the high one;
// Q5_K's fifth bits are bit `sub-block` of qh[l], with qh before the nibbles.
const Q4_K: ScaleMinFormat = {
  type: "Q4_K",
  blockBytes: Q4_K_BLOCK_BYTES,
  nmax: 15,
  pack: (codes, out, at) => packNibbles(codes, out, at + SCALES_AT + SCALE_BYTES),
  unpack: (bytes, at, codes) => unpackNibbles(bytes, at + SCALES_AT + SCALE_BYTES, codes),
};

const Q5_K: ScaleMinFormat = {
  type: "Q5_K",
  blockBytes: Q5_K_BLOCK_BYTES,
  nmax: 31,
  pack(codes, out, at) {
    const qh = at + SCALES_AT + SCALE_BYTES;
    packNibbles(codes, out, qh + SUB);
    for (let e = 0; e < QK_K; e++) out[qh + (e % SUB)]! |= (codes[e]! >> 4) << Math.floor(e / SUB);
  },
  unpack(bytes, at, codes) {
    const qh = at + SCALES_AT + SCALE_BYTES;
    unpackNibbles(bytes, qh + SUB, codes);
    for (let e = 0; e < QK_K; e++) codes[e]! |= ((bytes[qh + (e % SUB)]! >> Math.floor(e / SUB)) & 1) << 4;
  },
};

function packNibbles(codes: Uint8Array, out: Uint8Array, at: number): void {
  for (let e = 0; e < QK_K; e++) out[at + 32 * (e >> 6) + (e & 31)]! |= (codes[e]! & 0x0f) << (((e >> 5) & 1) * 4);
}

function unpackNibbles(bytes: Uint8Array, at: number, codes: Uint8Array): void {
  for (let e = 0; e < QK_K; e++) codes[e] = (bytes[at + 32 * (e >> 6) + (e & 31)]! >> (((e >> 5) & 1) * 4)) & 0x0f;
}

export function quantizeQ4_K(values: Float32Array): Uint8Array {
  return quantizeScaleMin(Q4_K, values);
}

export function quantizeQ5_K(values: Float32Array): Uint8Array {
  return quantizeScaleMin(Q5_K, values);
}

export function dequantizeQ4_K(bytes: Uint8Array, elements: number): Float32Array {
  return dequantizeScaleMin(Q4_K, bytes, elements);
}

export function dequantizeQ5_K(bytes: Uint8Array, elements: number): Float32Array {
  return dequantizeScaleMin(Q5_K, bytes, elements);
}

function quantizeScaleMin(f: ScaleMinFormat, values: Float32Array): Uint8Array {
  const blocks = blockCount(f.type, QK_K, values.length);
  const out = new Uint8Array(blocks * f.blockBytes);
  const view = new DataView(out.buffer);
  const codes = new Uint8Array(QK_K);
  const lo = new Float64Array(SUBS);
  const hi = new Float64Array(SUBS);
  const sc = new Uint8Array(SUBS);
  const m = new Uint8Array(SUBS);
  const mins = new Float64Array(SUBS);
  const steps = new Float64Array(SUBS);
  for (let b = 0; b < blocks; b++) {
    const base = b * QK_K;
    let maxMin = 0;
    for (let j = 0; j < SUBS; j++) {
      // The grid starts at 0 or below (ggml stores the min as a non-negative amount subtracted).
      lo[j] = 0;
      hi[j] = -Infinity;
      for (let i = base + j * SUB; i < base + (j + 1) * SUB; i++) {
        lo[j] = Math.min(lo[j]!, values[i]!);
        hi[j] = Math.max(hi[j]!, values[i]!);
      }
      maxMin = Math.max(maxMin, -lo[j]!);
    }
    const dminBits = checkedHalf(f.type, maxMin / 63);
    const dmin = f16BitsToF32(dminBits);
    // Mins first (rounded up, so each grid starts at or below its lowest value), then the steps
    // that carry each grid from there past its highest value.
    let maxStep = 0;
    for (let j = 0; j < SUBS; j++) {
      m[j] = dmin > 0 ? Math.min(63, Math.ceil(-lo[j]! / dmin)) : 0;
      mins[j] = Math.fround(dmin * m[j]!);
      steps[j] = Math.max(0, (hi[j]! + mins[j]!) / f.nmax);
      maxStep = Math.max(maxStep, steps[j]!);
    }
    const dBits = checkedHalf(f.type, maxStep / 63);
    const d = f16BitsToF32(dBits);
    for (let j = 0; j < SUBS; j++) {
      sc[j] = d > 0 ? Math.min(63, Math.ceil(steps[j]! / d)) : 0;
      const step = Math.fround(d * sc[j]!);
      for (let i = j * SUB; i < (j + 1) * SUB; i++) {
        // A zero step (a sub-block of one value, -min) decodes to -min whatever the code.
        codes[i] = step > 0 ? Math.max(0, Math.min(f.nmax, Math.round((values[base + i]! + mins[j]!) / step))) : 0;
      }
    }
    const at = b * f.blockBytes;
    view.setUint16(at, dBits, true);
    view.setUint16(at + 2, dminBits, true);
    packScaleMins(sc, m, out, at + SCALES_AT);
    f.pack(codes, out, at);
  }
  return out;
}

function dequantizeScaleMin(f: ScaleMinFormat, bytes: Uint8Array, elements: number): Float32Array {
  const codes = new Uint8Array(QK_K);
  return decodeBlocks(f.type, QK_K, f.blockBytes, bytes, elements, (view, at, out, base) => {
    const d = f16BitsToF32(view.getUint16(at, true));
    const dmin = f16BitsToF32(view.getUint16(at + 2, true));
    f.unpack(bytes, at, codes);
    for (let j = 0; j < SUBS; j++) {
      const [sc, m] = scaleMin(j, bytes, at + SCALES_AT);
      // f32 throughout, as the C: d1 = d * sc, m1 = min * m, y = d1 * q - m1 (no fused multiply-add).
      const step = Math.fround(d * sc);
      const min = Math.fround(dmin * m);
      for (let i = j * SUB; i < (j + 1) * SUB; i++) out[base + i] = Math.fround(step * codes[i]!) - min;
    }
  });
}

/** The inverse of scaleMin: sub-blocks 0-3 in the low 6 bits of bytes 0-3 / 4-7, 4-7 split across the rest. */
function packScaleMins(sc: Uint8Array, m: Uint8Array, out: Uint8Array, at: number): void {
  for (let j = 0; j < 4; j++) {
    out[at + j] = sc[j]! | ((sc[j + 4]! >> 4) << 6);
    out[at + j + 4] = m[j]! | ((m[j + 4]! >> 4) << 6);
    out[at + j + 8] = (sc[j + 4]! & 0x0f) | ((m[j + 4]! & 0x0f) << 4);
  }
}

/** ggml's get_scale_min_k4: sub-block j's 6-bit scale and min. */
function scaleMin(j: number, q: Uint8Array, at: number): [number, number] {
  if (j < 4) return [q[at + j]! & 63, q[at + j + 4]! & 63];
  return [(q[at + j + 4]! & 0x0f) | ((q[at + j - 4]! >> 6) << 4), (q[at + j + 4]! >> 4) | ((q[at + j]! >> 6) << 4)];
}

/** f16 bits of the scale rounded up, refusing one too large for a half. */
export function checkedHalf(type: string, scale: number): number {
  const bits = f32ToF16BitsUp(scale);
  if (!(bits < 0x7c00)) throw new Error(`${type}: a block scale of ${scale} does not fit an f16 (values too large or not finite)`);
  return bits;
}
