// Float32Array <-> tensor bytes for the supported ggml types. GGUF is little-endian; typed arrays
// use the host order, so a big-endian host is refused rather than silently writing garbage.
import { endianness } from "node:os";
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "./half.js";
import { dequantizeQ4_K, dequantizeQ5_K, quantizeQ4_K, quantizeQ5_K } from "./k-quants.js";
import { dequantizeQ4_0, dequantizeQ4_1, quantizeQ4_0, quantizeQ4_1 } from "./q4.js";
import { dequantizeQ6_K, quantizeQ6_K } from "./q6_k.js";
import { dequantizeQ8_0, quantizeQ8_0 } from "./q8_0.js";
import type { SupportedTensorType } from "./types.js";

if (endianness() !== "LE") throw new Error("GGUF codec needs a little-endian host");

type BlockType = Exclude<SupportedTensorType, "F32" | "F16" | "BF16">;

/** The block-quantized types, each a quantizer and its ggml-exact dequantizer. */
const BLOCK_CODECS: Record<BlockType, { encode(values: Float32Array): Uint8Array; decode(bytes: Uint8Array, elements: number): Float32Array }> = {
  Q8_0: { encode: quantizeQ8_0, decode: dequantizeQ8_0 },
  Q4_0: { encode: quantizeQ4_0, decode: dequantizeQ4_0 },
  Q4_1: { encode: quantizeQ4_1, decode: dequantizeQ4_1 },
  Q4_K: { encode: quantizeQ4_K, decode: dequantizeQ4_K },
  Q5_K: { encode: quantizeQ5_K, decode: dequantizeQ5_K },
  Q6_K: { encode: quantizeQ6_K, decode: dequantizeQ6_K },
};

export function encodeTensor(type: SupportedTensorType, values: Float32Array): Uint8Array {
  switch (type) {
    case "F32":
      return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    case "F16": {
      const out = new Uint16Array(values.length);
      for (let i = 0; i < values.length; i++) out[i] = f32ToF16Bits(values[i]!);
      return new Uint8Array(out.buffer);
    }
    case "BF16": {
      const out = new Uint16Array(values.length);
      for (let i = 0; i < values.length; i++) out[i] = f32ToBf16Bits(values[i]!);
      return new Uint8Array(out.buffer);
    }
    default:
      return BLOCK_CODECS[type].encode(values);
  }
}

export function decodeTensor(type: SupportedTensorType, bytes: Uint8Array, elements: number): Float32Array {
  switch (type) {
    case "F32": {
      // Copy into a fresh, aligned buffer: `bytes` may sit at an odd offset of a larger one.
      const out = new Float32Array(elements);
      new Uint8Array(out.buffer).set(bytes.subarray(0, elements * 4));
      return out;
    }
    case "F16":
    case "BF16": {
      const halves = new Uint16Array(elements);
      new Uint8Array(halves.buffer).set(bytes.subarray(0, elements * 2));
      const convert = type === "F16" ? f16BitsToF32 : bf16BitsToF32;
      const out = new Float32Array(elements);
      for (let i = 0; i < elements; i++) out[i] = convert(halves[i]!);
      return out;
    }
    default:
      return BLOCK_CODECS[type].decode(bytes, elements);
  }
}
