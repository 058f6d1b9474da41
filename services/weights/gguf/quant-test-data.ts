// Inputs for the quantiser tests: Gaussian blocks at several scales and offsets, and the cases a
// scale search can get wrong (all zeros, one sign only, an outlier, zero runs inside a block).
import { Prng } from "../../core/prng.js";

/** True N(0, std²) by Box–Muller (prng.ts's normal() stops at ±3.46, too kind to a quantiser). */
export function gaussian(seed: number, count: number, std = 1): Float32Array {
  const rng = new Prng(seed, "quant-test");
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = Math.sqrt(-2 * Math.log(1 - rng.uniform())) * Math.cos(2 * Math.PI * rng.uniform()) * std;
  return out;
}

const KINDS: ReadonlyArray<(x: number, j: number, block: number) => number> = [
  (x) => x, // N(0, 1)
  (x) => x * 1e-3, // small: scales near f16's subnormals
  (x) => x * 100, // large
  (x) => Math.abs(x) + 3, // all positive, away from 0
  (x) => -Math.abs(x) - 3, // all negative
  () => 0, // all zero
  (x, j) => (j === 5 ? 40 : x * 0.1), // one outlier
  (x, j) => (j % 8 === 0 ? x : 0), // mostly zeros
  (x, j, block) => (j < block / 2 ? 0 : x), // a zero first half (zero sub-blocks in a super-block)
];

/** `blocks` blocks of `block` values, cycling through the kinds above. */
export function mixedBlocks(seed: number, blocks: number, block: number): Float32Array {
  const out = gaussian(seed, blocks * block);
  for (let i = 0; i < out.length; i++) out[i] = KINDS[Math.floor(i / block) % KINDS.length]!(out[i]!, i % block, block);
  return out;
}

export function rms(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i]! - b[i]!) ** 2;
  return Math.sqrt(sum / a.length);
}
