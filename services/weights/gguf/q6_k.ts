// Q6_K super-block quantisation in ggml's layout (block_q6_K: ql[128], qh[64], int8 scales[16],
// f16 d): 256 values in 16 sub-blocks of 16, x ≈ (d·sc)·q with signed 6-bit codes q in [-32, 31]
// stored as q + 32, low nibbles in ql and high 2 bits in qh. Decoding follows dequantize_row_q6_K
// in f32, product by product.
//
// Scale search: simpler than ggml's make_qx_quants (an iterated weighted least-squares fit, which
// may clip outliers). Each sub-block's step is the smallest that rounds its extremes into
// [-32, 31] (max / 31.5 and -min / 32.5, so the extra negative code is used), then d is rounded up
// to the next f16 and each int8 scale up to the next multiple of d: no value is clipped and
// |x - x'| <= d·sc / 2, a step at most the sub-block's own plus d. On N(0, 1) the RMS error is ~10%
// above ggml's. Scales are never negative here (ggml's may be); both decode alike.
import { blockCount, decodeBlocks } from "./blocks.js";
import { f16BitsToF32 } from "./half.js";
import { checkedHalf, QK_K } from "./k-quants.js";

export const Q6_K_BLOCK_BYTES = 210;
const SUB = 16;
const SUBS = QK_K / SUB;
const QH_AT = 128;
const SCALES_AT = 192;
const D_AT = 208;

/**
 * Where value e of a super-block keeps its code: in each half of 128, groups g of 32 values take
 * the low / high nibble of ql[l] / ql[32 + l] (g = 0, 1 low; 2, 3 high) and bits 2g of qh[l].
 */
function codeAt(e: number): { ql: number; shift: number; qh: number; hshift: number } {
  const half = e >> 7;
  const g = (e >> 5) & 3;
  const l = e & 31;
  return { ql: 64 * half + 32 * (g & 1) + l, shift: 4 * (g >> 1), qh: QH_AT + 32 * half + l, hshift: 2 * g };
}

export function quantizeQ6_K(values: Float32Array): Uint8Array {
  const blocks = blockCount("Q6_K", QK_K, values.length);
  const out = new Uint8Array(blocks * Q6_K_BLOCK_BYTES);
  const view = new DataView(out.buffer);
  const steps = new Float64Array(SUBS);
  for (let b = 0; b < blocks; b++) {
    const base = b * QK_K;
    let maxStep = 0;
    for (let j = 0; j < SUBS; j++) {
      let lo = 0;
      let hi = 0;
      for (let i = base + j * SUB; i < base + (j + 1) * SUB; i++) {
        lo = Math.min(lo, values[i]!);
        hi = Math.max(hi, values[i]!);
      }
      steps[j] = Math.max(hi / 31.5, -lo / 32.5);
      maxStep = Math.max(maxStep, steps[j]!);
    }
    const dBits = checkedHalf("Q6_K", maxStep / 127);
    const d = f16BitsToF32(dBits);
    const at = b * Q6_K_BLOCK_BYTES;
    view.setUint16(at + D_AT, dBits, true);
    for (let j = 0; j < SUBS; j++) {
      const sc = d > 0 ? Math.min(127, Math.ceil(steps[j]! / d)) : 0;
      view.setInt8(at + SCALES_AT + j, sc);
      const step = Math.fround(d * sc);
      for (let e = j * SUB; e < (j + 1) * SUB; e++) {
        // A zero step (an all-zero sub-block) decodes to 0 whatever the code: store q = 0.
        const q = step > 0 ? Math.max(-32, Math.min(31, Math.round(values[base + e]! / step))) : 0;
        const c = codeAt(e);
        out[at + c.ql] = out[at + c.ql]! | (((q + 32) & 0x0f) << c.shift);
        out[at + c.qh] = out[at + c.qh]! | (((q + 32) >> 4) << c.hshift);
      }
    }
  }
  return out;
}

export function dequantizeQ6_K(bytes: Uint8Array, elements: number): Float32Array {
  return decodeBlocks("Q6_K", QK_K, Q6_K_BLOCK_BYTES, bytes, elements, (view, at, out, base) => {
    const d = f16BitsToF32(view.getUint16(at + D_AT, true));
    for (let e = 0; e < QK_K; e++) {
      const c = codeAt(e);
      const q = (((bytes[at + c.ql]! >> c.shift) & 0x0f) | (((bytes[at + c.qh]! >> c.hshift) & 3) << 4)) - 32;
      // f32 as the C `d * sc[is] * q`: (d·sc) rounded, then times q.
      out[base + e] = Math.fround(d * view.getInt8(at + SCALES_AT + (e >> 4))) * q;
    }
  });
}
