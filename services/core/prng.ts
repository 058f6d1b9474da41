// Deterministic random numbers for weights: one independent stream per (seed, tensor name), so a
// tensor's values do not depend on which tensors were generated before it. Only integer ops and
// + - * / are used (no Math.log/cos): the bytes are the same on every platform and Node version.

/** FNV-1a over the UTF-16 code units, then mixed: a 32-bit seed for a named stream. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** xoshiro128** seeded through splitmix32. */
export class Prng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number, stream = "") {
    let x = hash32(`${seed}/${stream}`);
    const next = () => {
      x = (x + 0x9e3779b9) | 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
  }

  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform in [0, 1). */
  uniform(): number {
    return this.nextU32() / 4294967296;
  }

  /**
   * Approximately N(0, 1): the Irwin–Hall sum of 4 uniforms, centred and scaled to unit variance.
   * Tails stop at ±3.46, which is harmless (even welcome) for weight init.
   */
  normal(): number {
    const sum = this.uniform() + this.uniform() + this.uniform() + this.uniform();
    return (sum - 2) * SQRT3;
  }
}

const SQRT3 = 1.7320508075688772;

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** `count` values ~ N(0, std²) from the stream (seed, name). */
export function normalTensor(seed: number, name: string, count: number, std: number): Float32Array {
  const rng = new Prng(seed, name);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = rng.normal() * std;
  return out;
}
