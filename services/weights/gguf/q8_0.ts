// Q8_0 block quantisation, as ggml's quantize_row_q8_0_ref: blocks of 32 values, each stored as
// an f16 scale d = max|x| / 127 followed by 32 int8 q = round(x / d); x ≈ q * d. Arithmetic is
// rounded to f32 (Math.fround) like the C reference, so files match llama.cpp's quantiser.
import { f16BitsToF32, f32ToF16Bits } from "./half.js";

export const Q8_0_BLOCK = 32;
export const Q8_0_BLOCK_BYTES = 34;

export function quantizeQ8_0(values: Float32Array): Uint8Array {
  if (values.length % Q8_0_BLOCK !== 0) throw new Error(`Q8_0 needs a multiple of ${Q8_0_BLOCK} values, got ${values.length}`);
  const blocks = values.length / Q8_0_BLOCK;
  const out = new Uint8Array(blocks * Q8_0_BLOCK_BYTES);
  const view = new DataView(out.buffer);
  for (let b = 0; b < blocks; b++) {
    const base = b * Q8_0_BLOCK;
    let amax = 0;
    for (let j = 0; j < Q8_0_BLOCK; j++) amax = Math.max(amax, Math.abs(values[base + j]!));
    const d = Math.fround(amax / 127);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    const at = b * Q8_0_BLOCK_BYTES;
    view.setUint16(at, f32ToF16Bits(d), true);
    for (let j = 0; j < Q8_0_BLOCK; j++) {
      const x = Math.fround(values[base + j]! * id);
      // C roundf: halves away from zero (Math.round would send -0.5 to 0).
      const q = Math.sign(x) * Math.round(Math.abs(x));
      view.setInt8(at + 2 + j, Math.max(-128, Math.min(127, q)));
    }
  }
  return out;
}

export function dequantizeQ8_0(bytes: Uint8Array, elements: number): Float32Array {
  if (elements % Q8_0_BLOCK !== 0) throw new Error(`Q8_0 needs a multiple of ${Q8_0_BLOCK} values, got ${elements}`);
  const blocks = elements / Q8_0_BLOCK;
  if (bytes.length < blocks * Q8_0_BLOCK_BYTES) throw new Error(`Q8_0 data is ${bytes.length} bytes, expected ${blocks * Q8_0_BLOCK_BYTES}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(elements);
  for (let b = 0; b < blocks; b++) {
    const at = b * Q8_0_BLOCK_BYTES;
    const d = f16BitsToF32(view.getUint16(at, true));
    for (let j = 0; j < Q8_0_BLOCK; j++) out[b * Q8_0_BLOCK + j] = view.getInt8(at + 2 + j) * d;
  }
  return out;
}
