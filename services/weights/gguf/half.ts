// 16-bit float conversions done on bits (Node 20 has no Float16Array): IEEE half with
// round-to-nearest-even, and bfloat16 rounded exactly as ggml's ggml_compute_fp32_to_bf16.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function f32ToF16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half: value = m * 2^-24, so shift the 24-bit significand right by 14 - e.
    if (e < -10) return sign;
    const full = mant | 0x800000;
    const shift = 14 - e;
    let h = full >>> shift;
    const rem = full & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1) === 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa bumps the exponent, up to infinity: the right result.
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}

/**
 * The smallest half at or above `value` (>= 0): a block scale rounded up, so the largest value
 * it must reach still fits in the code range. Past 65504 this is infinity, for the caller to refuse.
 */
export function f32ToF16BitsUp(value: number): number {
  const h = f32ToF16Bits(value);
  return f16BitsToF32(h) < value ? h + 1 : h;
}

const F16_TABLE = buildF16Table();

function buildF16Table(): Float32Array {
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0) table[h] = sign * mant * 2 ** -24;
    else if (exp === 31) table[h] = mant !== 0 ? NaN : sign * Infinity;
    else table[h] = sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  return table;
}

export function f16BitsToF32(bits: number): number {
  return F16_TABLE[bits & 0xffff]!;
}

export function f32ToBf16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 64) & 0xffff; // NaN: force quiet
  return ((x + (0x7fff + ((x >>> 16) & 1))) >>> 16) & 0xffff;
}

export function bf16BitsToF32(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0]!;
}
