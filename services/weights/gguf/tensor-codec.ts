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
    case "Q8_0":
      return quantizeQ8_0(values);
    case "Q4_0":
      return quantizeQ4_0(values);
    case "Q4_1":
      return quantizeQ4_1(values);
    case "Q4_K":
      return quantizeQ4_K(values);
    case "Q5_K":
      return quantizeQ5_K(values);
    case "Q6_K":
      return quantizeQ6_K(values);
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
    case "Q8_0":
      return dequantizeQ8_0(bytes, elements);
    case "Q4_0":
      return dequantizeQ4_0(bytes, elements);
    case "Q4_1":
      return dequantizeQ4_1(bytes, elements);
    case "Q4_K":
      return dequantizeQ4_K(bytes, elements);
    case "Q5_K":
      return dequantizeQ5_K(bytes, elements);
    case "Q6_K":
      return dequantizeQ6_K(bytes, elements);
  }
}
