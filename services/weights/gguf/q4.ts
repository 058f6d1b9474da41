// Q4_0 and Q4_1 block quantisation, as ggml's quantize_row_q4_0_ref / quantize_row_q4_1_ref:
// blocks of 32 values whose 4-bit codes fill 16 bytes, value j in the low nibble of byte j and
// value j + 16 in the high one. Q4_0 is symmetric, an f16 d then the codes, x ≈ (q - 8)·d with
// d = max / -8 for the value of largest magnitude max (which so gets code 0 exactly). Q4_1 is
// affine, f16 d and m then the codes, x ≈ q·d + m with d = (max - min) / 15, m = min.
// Arithmetic is rounded to f32 (Math.fround) and codes truncated as the C casts do, so the bytes
// match llama.cpp's quantiser.
import { blockCount, decodeBlocks } from "./blocks.js";
import { f16BitsToF32, f32ToF16Bits } from "./half.js";

export const Q4_BLOCK = 32;
export const Q4_0_BLOCK_BYTES = 18;
export const Q4_1_BLOCK_BYTES = 20;
const HALF = Q4_BLOCK / 2;

export function quantizeQ4_0(values: Float32Array): Uint8Array {
  const blocks = blockCount("Q4_0", Q4_BLOCK, values.length);
  const out = new Uint8Array(blocks * Q4_0_BLOCK_BYTES);
  const view = new DataView(out.buffer);
  for (let b = 0; b < blocks; b++) {
    const base = b * Q4_BLOCK;
    // The first value of the largest magnitude, sign kept: it takes the code -8, the side of
    // [-8, 7] with room, so the block uses the full range.
    let amax = 0;
    let max = 0;
    for (let j = 0; j < Q4_BLOCK; j++) {
      const v = values[base + j]!;
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = Math.fround(max / -8);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    const at = b * Q4_0_BLOCK_BYTES;
    view.setUint16(at, f32ToF16Bits(d), true);
    for (let j = 0; j < HALF; j++) {
      const lo = code(Math.fround(Math.fround(values[base + j]! * id) + 8.5));
      const hi = code(Math.fround(Math.fround(values[base + HALF + j]! * id) + 8.5));
      out[at + 2 + j] = lo | (hi << 4);
    }
  }
  return out;
}

export function quantizeQ4_1(values: Float32Array): Uint8Array {
  const blocks = blockCount("Q4_1", Q4_BLOCK, values.length);
  const out = new Uint8Array(blocks * Q4_1_BLOCK_BYTES);
  const view = new DataView(out.buffer);
  for (let b = 0; b < blocks; b++) {
    const base = b * Q4_BLOCK;
    let min = Infinity;
    let max = -Infinity;
    for (let j = 0; j < Q4_BLOCK; j++) {
      const v = values[base + j]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = Math.fround(Math.fround(max - min) / 15);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    const at = b * Q4_1_BLOCK_BYTES;
    view.setUint16(at, f32ToF16Bits(d), true);
    view.setUint16(at + 2, f32ToF16Bits(min), true);
    for (let j = 0; j < HALF; j++) {
      const lo = code(Math.fround(Math.fround(Math.fround(values[base + j]! - min) * id) + 0.5));
      const hi = code(Math.fround(Math.fround(Math.fround(values[base + HALF + j]! - min) * id) + 0.5));
      out[at + 4 + j] = lo | (hi << 4);
    }
  }
  return out;
}

/** MIN(15, (int8_t)v): the cast truncates; v is never below 0 here (rounding keeps it >= 0.49). */
function code(v: number): number {
  return Math.min(15, Math.trunc(v));
}

export function dequantizeQ4_0(bytes: Uint8Array, elements: number): Float32Array {
  return decodeBlocks("Q4_0", Q4_BLOCK, Q4_0_BLOCK_BYTES, bytes, elements, (view, at, out, base) => {
    const d = f16BitsToF32(view.getUint16(at, true));
    for (let j = 0; j < HALF; j++) {
      const q = bytes[at + 2 + j]!;
      out[base + j] = ((q & 0x0f) - 8) * d;
      out[base + HALF + j] = ((q >> 4) - 8) * d;
    }
  });
}

export function dequantizeQ4_1(bytes: Uint8Array, elements: number): Float32Array {
  return decodeBlocks("Q4_1", Q4_BLOCK, Q4_1_BLOCK_BYTES, bytes, elements, (view, at, out, base) => {
    const d = f16BitsToF32(view.getUint16(at, true));
    const m = f16BitsToF32(view.getUint16(at + 2, true));
    for (let j = 0; j < HALF; j++) {
      const q = bytes[at + 4 + j]!;
      // q·d rounded to f32 before adding m, as the C expression `x0*d + m` (no fused multiply-add).
      out[base + j] = Math.fround((q & 0x0f) * d) + m;
      out[base + HALF + j] = Math.fround((q >> 4) * d) + m;
    }
  });
}
