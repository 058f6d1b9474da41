// Q4_0 and Q4_1: bytes of hand-worked blocks (quantize_row_q4_*_ref's exact output), the error
// bound each format allows, and the blocks reproduced exactly.
import { describe, expect, it } from "vitest";
import { dequantizeQ4_0, dequantizeQ4_1, quantizeQ4_0, quantizeQ4_1 } from "./q4.js";
import { gaussian, mixedBlocks, rms } from "./quant-test-data.js";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** Half an f16 ulp at v (the most rounding v to an f16 moves it), subnormals included. */
const halfUlp = (v: number) => Math.max(Math.abs(v) * 2 ** -11, 2 ** -25);

describe("Q4_0", () => {
  it("writes the f16 scale max / -8, then value j and j + 16 as the low and high nibble of byte j", () => {
    // (j - 16) / 4: the largest magnitude is -4 (j = 0), so d = 0.5 and code = trunc(2x + 8.5):
    // even j land on their code exactly, odd j sit on a tie and round up, and 3.75 clips to 15.
    const x = Float32Array.from({ length: 32 }, (_, j) => (j - 16) / 4);
    const bytes = quantizeQ4_0(x);
    expect(hex(bytes)).toBe("0038" + "809191a2a2b3b3c4c4d5d5e6e6f7f7f8");
    const back = dequantizeQ4_0(bytes, 32);
    for (let j = 0; j < 32; j++) expect(back[j], `value ${j}`).toBe(j === 31 ? 3.5 : j % 2 === 0 ? x[j] : x[j]! + 0.25);
    // The largest magnitude positive: d < 0, so it is the top of the range that has room.
    expect(hex(quantizeQ4_0(Float32Array.from(x, (v) => -v)).subarray(0, 2))).toBe("00b8");
  });

  it("stays within half a step (a whole one for the clipped side), plus the f16 scale's rounding", () => {
    const x = mixedBlocks(1, 9 * 8, 32);
    const back = dequantizeQ4_0(quantizeQ4_0(x), x.length);
    for (let b = 0; b < x.length / 32; b++) {
      const block = x.subarray(b * 32, b * 32 + 32);
      const max = block.reduce((m, v) => (Math.abs(v) > Math.abs(m) ? v : m), 0);
      const d = Math.abs(max / 8);
      for (let j = 0; j < 32; j++) {
        // Codes reach 8 steps on max's side but only 7 on the other: beyond 7.5 steps a value clips.
        const clipped = Math.sign(block[j]!) !== Math.sign(max) && Math.abs(block[j]!) > 7.5 * d;
        const bound = (clipped ? d : d / 2) + 8 * halfUlp(d) + 1e-6 * d;
        expect(Math.abs(back[b * 32 + j]! - block[j]!), `block ${b} value ${j}`).toBeLessThanOrEqual(bound);
      }
    }
  });

  it("reproduces zero blocks and multiples -8..7 of an f16 step exactly", () => {
    const x = new Float32Array(96);
    for (let j = 0; j < 32; j++) x[32 + j] = ((j % 16) - 8) * 0.375;
    x.fill(-3, 64); // a constant block: code 0 with d = 3 / 8
    const back = dequantizeQ4_0(quantizeQ4_0(x), 96);
    // A zero block's scale is 0 / -8 = -0 in ggml too, so its values come back as -0.
    expect([...back.subarray(0, 32)].every((v) => Object.is(v, -0))).toBe(true);
    expect(back.subarray(32)).toEqual(x.subarray(32));
  });
});

describe("Q4_1", () => {
  it("writes f16 d = (max - min) / 15 and m = min, then the nibbles as Q4_0", () => {
    // 1 + j / 4 up to 8.5 at j = 30, then 1.1: min 1, d 0.5, code = trunc(2(x - 1) + 0.5).
    const x = Float32Array.from({ length: 32 }, (_, j) => (j === 31 ? 1.1 : 1 + j / 4));
    const bytes = quantizeQ4_1(x);
    expect(hex(bytes)).toBe("0038" + "003c" + "809191a2a2b3b3c4c4d5d5e6e6f7f708");
    const back = dequantizeQ4_1(bytes, 32);
    for (let j = 0; j < 31; j++) expect(back[j], `value ${j}`).toBe(j % 2 === 0 ? x[j] : x[j]! + 0.25);
    expect(back[31]).toBe(1);
  });

  it("stays within half a step plus the f16 rounding of d and m", () => {
    const x = mixedBlocks(2, 9 * 8, 32);
    const back = dequantizeQ4_1(quantizeQ4_1(x), x.length);
    for (let b = 0; b < x.length / 32; b++) {
      const block = x.subarray(b * 32, b * 32 + 32);
      const min = Math.min(...block);
      const d = (Math.max(...block) - min) / 15;
      const bound = d / 2 + halfUlp(min) + 15 * halfUlp(d) + 1e-6 * (d + Math.abs(min));
      for (let j = 0; j < 32; j++) expect(Math.abs(back[b * 32 + j]! - block[j]!), `block ${b} value ${j}`).toBeLessThanOrEqual(bound);
    }
  });

  it("reproduces zero blocks, constant f16 blocks and an f16 grid exactly", () => {
    const x = new Float32Array(96);
    for (let j = 0; j < 32; j++) x[32 + j] = -2 + (j % 16) * 0.25;
    x.fill(0.75, 64);
    expect(dequantizeQ4_1(quantizeQ4_1(x), 96)).toEqual(x);
  });
});

describe("Q4_0 / Q4_1 on N(0, 1)", () => {
  it("have the error of a 4-bit code per 32 values", () => {
    const x = gaussian(3, 32 * 2048);
    // Measured 0.086 / 0.078, as ggml's reference quantiser (the same bytes).
    expect(rms(dequantizeQ4_0(quantizeQ4_0(x), x.length), x)).toBeLessThan(0.09);
    expect(rms(dequantizeQ4_1(quantizeQ4_1(x), x.length), x)).toBeLessThan(0.082);
  });

  it("refuse a length that is not whole blocks, and short data", () => {
    expect(() => quantizeQ4_0(new Float32Array(48))).toThrow(/Q4_0 needs a multiple of 32 values, got 48/);
    expect(() => dequantizeQ4_1(new Uint8Array(39), 64)).toThrow(/Q4_1 data is 39 bytes, expected 40/);
  });
});
