// Q4_K, Q5_K and Q6_K: hand-built blocks decode as dequantize_row_q*_K does (the packed 6-bit
// scales and mins, Q5_K's fifth bits, Q6_K's split codes), and quantising stays within the bound
// the rounded-up scales guarantee, with zeros reproduced exactly.
import { describe, expect, it } from "vitest";
import { dequantizeQ4_K, dequantizeQ5_K, quantizeQ4_K, quantizeQ5_K } from "./k-quants.js";
import { dequantizeQ6_K, quantizeQ6_K } from "./q6_k.js";
import { gaussian, mixedBlocks, rms } from "./quant-test-data.js";

const fromHex = (text: string) => Uint8Array.from(Buffer.from(text.replace(/\s/g, ""), "hex"));

// Sub-block scales and mins whose packing uses every field of get_scale_min_k4, worked by hand:
// bytes 0-3 are sc 0-3 with sc 4-7's top 2 bits above, bytes 4-7 the same for m, bytes 8-11 the
// low nibbles of sc 4-7 (low) and m 4-7 (high).
const SC = [1, 2, 3, 4, 40, 50, 60, 63];
const M = [0, 5, 10, 15, 20, 33, 48, 63];
const PACKED = "81c2c3c4 4085cacf 48120cff";
const D_1_DMIN_HALF = "003c 0038"; // d = 1, dmin = 0.5

describe("K-quant block layouts", () => {
  it("Q4_K: x = d·sc·q - dmin·m, sub-block 2c in the low nibbles of bytes 32c.., 2c + 1 in the high", () => {
    const block = fromHex(D_1_DMIN_HALF + PACKED + "21".repeat(128));
    const back = dequantizeQ4_K(block, 256);
    for (let i = 0; i < 256; i++) {
      const j = i >> 5;
      expect(back[i], `value ${i}`).toBe(SC[j]! * (j % 2 === 0 ? 1 : 2) - 0.5 * M[j]!);
    }
  });

  it("Q5_K: the fifth bit of sub-block j's value l is bit j of qh[l]", () => {
    // qh = 0b10101010: odd sub-blocks get +16.
    const block = fromHex(D_1_DMIN_HALF + PACKED + "aa".repeat(32) + "21".repeat(128));
    const back = dequantizeQ5_K(block, 256);
    for (let i = 0; i < 256; i++) {
      const j = i >> 5;
      expect(back[i], `value ${i}`).toBe(SC[j]! * (j % 2 === 0 ? 1 : 18) - 0.5 * M[j]!);
    }
  });

  it("Q6_K: x = d·sc·(q - 32), groups of 32 split over ql nibbles and qh bit pairs, int8 scales", () => {
    // In each half of 128: group g's low nibble is ql[l] (g = 0, 2) or ql[32 + l] (g = 1, 3), low
    // for g < 2; its top 2 bits are bits 2g of qh[l]. With ql = 0x21, qh = 0b11100100 the codes
    // are 1, 17, 34, 50, i.e. q = -31, -15, 2, 18. Scales are k - 8 for sub-block k, d = 0.5.
    const scales = Buffer.from(Int8Array.from({ length: 16 }, (_, k) => k - 8).buffer).toString("hex");
    const block = fromHex("21".repeat(128) + "e4".repeat(64) + scales + "0038");
    const back = dequantizeQ6_K(block, 256);
    const q = [-31, -15, 2, 18];
    for (let i = 0; i < 256; i++) expect(back[i], `value ${i}`).toBe(0.5 * ((i >> 4) - 8) * q[(i >> 5) & 3]!);
  });
});

/** An f16 scale rounded up: at most one ulp above (subnormals included). */
const f16Up = (v: number) => v * (1 + 2 ** -10) + 2 ** -24;

/**
 * Q4_K / Q5_K: per sub-block, the grid [-dmin·m, -dmin·m + nmax·d·sc] covers the values (min
 * taken <= 0) and each value is within half a step d·sc, a step at most the sub-block's own
 * (range + dmin) / nmax plus d; d and dmin are the super-block's largest step and min / 63.
 */
function scaleMinBounds(x: Float32Array, nmax: number): number[] {
  const subs = Array.from({ length: 8 }, (_, j) => x.subarray(32 * j, 32 * j + 32));
  const lows = subs.map((s) => Math.min(0, ...s));
  const ranges = subs.map((s, j) => Math.max(...s) - lows[j]!);
  const dmin = f16Up(Math.max(...lows.map((l) => -l)) / 63);
  const d = f16Up((Math.max(...ranges) + dmin) / nmax / 63);
  return ranges.map((r) => ((r + dmin) / nmax + d) / 2);
}

/** Q6_K: per sub-block of 16, half a step of max / 31.5 or -min / 32.5, plus d = largest / 127. */
function q6Bounds(x: Float32Array): number[] {
  const steps = Array.from({ length: 16 }, (_, j) => {
    const s = x.subarray(16 * j, 16 * j + 16);
    return Math.max(Math.max(0, ...s) / 31.5, -Math.min(0, ...s) / 32.5);
  });
  const d = f16Up(Math.max(...steps) / 127);
  return steps.map((s) => (s + d) / 2);
}

const FORMATS = [
  { type: "Q4_K", sub: 32, quantize: quantizeQ4_K, dequantize: dequantizeQ4_K, bounds: (x: Float32Array) => scaleMinBounds(x, 15) },
  { type: "Q5_K", sub: 32, quantize: quantizeQ5_K, dequantize: dequantizeQ5_K, bounds: (x: Float32Array) => scaleMinBounds(x, 31) },
  { type: "Q6_K", sub: 16, quantize: quantizeQ6_K, dequantize: dequantizeQ6_K, bounds: q6Bounds },
] as const;

describe.each(FORMATS)("$type quantisation", ({ type, sub, quantize, dequantize, bounds }) => {
  it("stays within half a (rounded-up) step of each sub-block: nothing is clipped", () => {
    const x = mixedBlocks(4, 9 * 3, 256);
    const back = dequantize(quantize(x), x.length);
    for (let b = 0; b < x.length / 256; b++) {
      const block = x.subarray(256 * b, 256 * b + 256);
      const limits = bounds(block);
      const largest = Math.max(...block.map(Math.abs));
      for (let i = 0; i < 256; i++) {
        const bound = limits[Math.floor(i / sub)]! + largest * 2 ** -20; // f32 rounding
        expect(Math.abs(back[256 * b + i]! - block[i]!), `block ${b} value ${i}`).toBeLessThanOrEqual(bound);
      }
    }
  });

  it("reproduces an all-zero block and zero sub-blocks beside non-zero ones exactly", () => {
    const x = new Float32Array(512);
    x.set(gaussian(5, 128), 256 + 128); // block 1: the first half zero
    const back = dequantize(quantize(x), 512);
    expect([...back.subarray(0, 256 + 128)].every((v) => v === 0)).toBe(true);
  });

  it("refuses a length that is not whole super-blocks of 256", () => {
    expect(() => quantize(new Float32Array(128))).toThrow(`${type} needs a multiple of 256 values, got 128`);
    expect(() => quantize(Float32Array.of(...new Float32Array(255), 1e9))).toThrow(/does not fit an f16/);
  });
});

describe("K-quants on N(0, 1)", () => {
  it("have about the error of their code width", () => {
    const x = gaussian(6, 256 * 512);
    // Measured 0.080 / 0.039 / 0.0197; ggml's least-squares search gets 0.071 / 0.036 / 0.0177.
    expect(rms(dequantizeQ4_K(quantizeQ4_K(x), x.length), x)).toBeLessThan(0.084);
    expect(rms(dequantizeQ5_K(quantizeQ5_K(x), x.length), x)).toBeLessThan(0.041);
    expect(rms(dequantizeQ6_K(quantizeQ6_K(x), x.length), x)).toBeLessThan(0.021);
  });
});
