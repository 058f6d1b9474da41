// JSON numbers within bounds, as GBNF.
//
// Integers: the classic range-to-digit-pattern split. [lo, hi] is cut at every power of ten into
// ranges of one digit count, and each of those into patterns of the form <fixed prefix> [a-b]
// [0-9]{k}; e.g. [7, 123] -> [7-9] | [1-9][0-9] | "1" [0-1][0-9] | "12" [0-3]. The grammar then
// accepts exactly the integers of the range, written the one JSON way (no leading zeros, no "-0").
//
// Numbers: decided exactly, in decimal, on the written digits. A non-negative decimal I.F lies in
// [lo, hi] when its integer part I is strictly between those of the bounds (any fraction), or
// equals a bound's integer part and its fraction passes a digit-by-digit comparison with that
// bound's fraction (again a finite pattern, recursing one digit at a time; exclusive bounds
// handled). Negative numbers are "-" followed by the mirrored range.
//
// What is guaranteed, and the limits that make it so:
// - Every number has at most MAX_DIGITS (15) digits in all (integer part plus fraction, leading "0."
//   included), no exponent, no leading zeros, and never "-0"; integer parts are below 10^15. A
//   range reaching further is cut there (a range entirely beyond it is refused). An integer with
//   no bounds is likewise at most 15 digits; a number with no bounds additionally may have an
//   exponent ([eE][-+]?[0-9]{1,3}) and keeps at most 15 digits before it and 15 after the point.
// - Bounds are read as the shortest decimal that round-trips the schema's double (String(n)), so
//   a maximum of 0.1 means the decimal 0.1.
// - With at most 15 significant digits, distinct decimals parse (JSON.parse / IEEE round-to-
//   nearest) to distinct doubles in the same order, and no such decimal parses onto a bound it
//   differs from. So the decimal comparison the grammar makes is also the one a validator makes
//   on the parsed double: inclusive and exclusive bounds both hold after JSON.parse (e.g. with
//   exclusiveMaximum 1 the grammar allows 0.99999999999999 (15 digits) but not
//   0.9999999999999999999, which would parse to 1).
// - Not covered: multipleOf; a bound that is not a finite number (refused).
import { alternatives, sequence } from "./gbnf.js";

export const MAX_DIGITS = 15;
const MAX_INT = 10n ** BigInt(MAX_DIGITS) - 1n;

/** An exact non-negative-or-negative decimal: sign, integer part, fraction digits without trailing zeros. */
export interface Decimal {
  negative: boolean;
  int: bigint;
  frac: string;
}

export interface Bound {
  value: Decimal;
  exclusive: boolean;
}

/** The decimal the shortest round-trip representation of `n` spells. */
export function toDecimal(n: number): Decimal {
  if (!Number.isFinite(n)) throw new RangeError(`${n} is not a finite number`);
  const text = String(n);
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(text);
  if (!match) throw new RangeError(`cannot read ${text} as a decimal`);
  const [, sign = "", intDigits = "", fracDigits = "", expText = "0"] = match;
  const exp = Number(expText);
  let digits = intDigits + fracDigits;
  let point = intDigits.length + exp; // position of the decimal point within digits
  if (point < 0) {
    digits = "0".repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits += "0".repeat(point - digits.length);
  const int = BigInt(digits.slice(0, point) || "0");
  const frac = digits.slice(point).replace(/0+$/, "");
  return { negative: sign === "-" && (int !== 0n || frac !== ""), int, frac };
}

function negate(d: Decimal): Decimal {
  const zero = d.int === 0n && d.frac === "";
  return { ...d, negative: zero ? false : !d.negative };
}

export function compareDecimal(a: Decimal, b: Decimal): number {
  if (a.negative !== b.negative) return a.negative ? -1 : 1;
  const sign = a.negative ? -1 : 1;
  if (a.int !== b.int) return a.int < b.int ? -sign : sign;
  const length = Math.max(a.frac.length, b.frac.length);
  const fa = a.frac.padEnd(length, "0");
  const fb = b.frac.padEnd(length, "0");
  return fa === fb ? 0 : fa < fb ? -sign : sign;
}

// ---- integers -------------------------------------------------------------------------------

type DigitClass = readonly [number, number];

/** Patterns (one digit class per position) for the integers lo..hi of the same digit count. */
function sameLength(a: string, b: string): DigitClass[][] {
  if (a.length === 0) return [[]];
  const a0 = Number(a[0]);
  const b0 = Number(b[0]);
  const restA = a.slice(1);
  const restB = b.slice(1);
  if (a0 === b0) return sameLength(restA, restB).map((p) => [[a0, a0] as const, ...p]);
  const out: DigitClass[][] = [];
  const tail = restA.length;
  const any = (): DigitClass[] => Array.from({ length: tail }, () => [0, 9] as const);
  let midLo = a0;
  let midHi = b0;
  if (!/^0*$/.test(restA)) {
    out.push(...sameLength(restA, "9".repeat(tail)).map((p) => [[a0, a0] as const, ...p]));
    midLo = a0 + 1;
  }
  const highSplit = !/^9*$/.test(restB);
  if (highSplit) midHi = b0 - 1;
  if (midLo <= midHi) out.push([[midLo, midHi], ...any()]);
  if (highSplit) out.push(...sameLength("0".repeat(tail), restB).map((p) => [[b0, b0] as const, ...p]));
  return out;
}

/** GBNF patterns for the non-negative integers lo..hi, with the digit count of each. */
export function integerRangePatterns(lo: bigint, hi: bigint): { pattern: string; digits: number }[] {
  if (lo < 0n) throw new RangeError("integerRangePatterns needs lo >= 0");
  const out: { pattern: string; digits: number }[] = [];
  if (lo > hi) return out;
  const loLength = lo.toString().length;
  const hiLength = hi.toString().length;
  for (let length = loLength; length <= hiLength; length++) {
    const floor = length === 1 ? 0n : 10n ** BigInt(length - 1);
    const ceiling = 10n ** BigInt(length) - 1n;
    const a = lo > floor ? lo : floor;
    const b = hi < ceiling ? hi : ceiling;
    if (a > b) continue;
    for (const classes of sameLength(a.toString(), b.toString())) out.push({ pattern: renderDigits(classes), digits: length });
  }
  return out;
}

function digitClass(a: number, b: number): string {
  return a === b ? `"${a}"` : b === a + 1 ? `[${a}${b}]` : `[${a}-${b}]`;
}

/** Merges the patterns of whole digit counts ([1-9] [0-9]{k} for k = a..b) into one. */
function mergeWholeLengths(patterns: { pattern: string; digits: number }[]): string[] {
  const out: string[] = [];
  let run: { from: number; to: number } | null = null;
  const flush = () => {
    if (run) out.push(run.from === run.to ? wholeLength(run.from) : `[1-9] [0-9]{${run.from - 1},${run.to - 1}}`);
    run = null;
  };
  for (const p of patterns) {
    if (p.pattern === wholeLength(p.digits)) {
      if (run && run.to === p.digits - 1) run.to = p.digits;
      else {
        flush();
        run = { from: p.digits, to: p.digits };
      }
    } else {
      flush();
      out.push(p.pattern);
    }
  }
  flush();
  return out;
}

function wholeLength(digits: number): string {
  return digits === 1 ? "[1-9]" : digits === 2 ? "[1-9] [0-9]" : `[1-9] [0-9]{${digits - 1}}`;
}

function renderDigits(classes: DigitClass[]): string {
  const parts: string[] = [];
  let literal = "";
  let anyRun = 0;
  const flush = () => {
    if (literal) parts.push(`"${literal}"`);
    literal = "";
    if (anyRun) parts.push(anyRun === 1 ? "[0-9]" : `[0-9]{${anyRun}}`);
    anyRun = 0;
  };
  for (const [a, b] of classes) {
    if (a === b) {
      if (anyRun) flush();
      literal += String(a);
    } else if (a === 0 && b === 9) {
      if (literal) {
        parts.push(`"${literal}"`);
        literal = "";
      }
      anyRun++;
    } else {
      flush();
      parts.push(digitClass(a, b));
    }
  }
  flush();
  return parts.join(" ");
}

/**
 * A GBNF expression for the JSON integers in [lo, hi] (inclusive; null = unbounded, cut at
 * 15 digits). Returns null when no integer fits.
 */
export function integerGbnf(lo: bigint | null, hi: bigint | null): string | null {
  const low = lo === null || lo < -MAX_INT ? -MAX_INT : lo;
  const high = hi === null || hi > MAX_INT ? MAX_INT : hi;
  if (low > high) return null;
  const options: string[] = [];
  if (low < 0n) {
    const magnitudeLo = high < 0n ? -high : 1n;
    const patterns = mergeWholeLengths(integerRangePatterns(magnitudeLo, -low));
    if (patterns.length > 0) options.push(`"-" ${alternatives(patterns)}`);
  }
  if (high >= 0n) {
    options.push(...mergeWholeLengths(integerRangePatterns(low > 0n ? low : 0n, high)));
  }
  return options.length === 0 ? null : alternatives(options);
}

/** Integer bounds from (possibly fractional, possibly exclusive) decimal bounds. */
export function integerBounds(lower: Bound | null, upper: Bound | null): { lo: bigint | null; hi: bigint | null } {
  const floor = (d: Decimal) => (d.negative ? -d.int - (d.frac ? 1n : 0n) : d.int);
  const ceil = (d: Decimal) => (d.negative ? -d.int : d.int + (d.frac ? 1n : 0n));
  let lo: bigint | null = null;
  let hi: bigint | null = null;
  if (lower) lo = lower.exclusive ? floor(lower.value) + 1n : ceil(lower.value);
  if (upper) hi = upper.exclusive ? ceil(upper.value) - 1n : floor(upper.value);
  return { lo, hi };
}

// ---- decimals -------------------------------------------------------------------------------

interface FracLanguage {
  /** The empty fraction (no "." part, value 0) is allowed. */
  empty: boolean;
  /** GBNF for the allowed non-empty digit strings, or null for none. */
  nonEmpty: string | null;
}

/**
 * Digit strings s (possibly empty, at most `budget` digits) with lo <(=) 0.s <(=) hi, where lo and
 * hi are fraction digit strings without trailing zeros ("" = 0) or null for no bound.
 */
function fracRange(lo: string | null, loExclusive: boolean, hi: string | null, hiExclusive: boolean, budget: number): FracLanguage {
  if (lo === "" && !loExclusive) lo = null;
  const emptyLow = lo === null;
  const emptyHigh = hi === null || hi !== "" || !hiExclusive;
  const empty = emptyLow && emptyHigh;
  if (budget <= 0) return { empty, nonEmpty: null };
  const lo0 = lo === null || lo === "" ? 0 : Number(lo[0]);
  const hi0 = hi === null ? 9 : hi === "" ? 0 : Number(hi[0]);
  if (lo0 > hi0) return { empty, nonEmpty: null };
  const anyTail = budget - 1 > 0 ? ` [0-9]{0,${budget - 1}}` : "";
  const options: string[] = [];
  const withRest = (digit: number, rest: FracLanguage) => {
    if (rest.nonEmpty === null) {
      if (rest.empty) options.push(`"${digit}"`);
    } else options.push(`"${digit}" ${rest.empty ? `(${rest.nonEmpty})?` : rest.nonEmpty}`);
  };
  const loRest = lo === null ? null : lo.slice(1);
  const hiRest = hi === null ? null : hi.slice(1);
  if (lo !== null && hi !== null && lo0 === hi0) {
    withRest(lo0, fracRange(loRest, loExclusive, hiRest, hiExclusive, budget - 1));
  } else {
    if (lo !== null) withRest(lo0, fracRange(loRest, loExclusive, null, false, budget - 1));
    const midLo = lo === null ? lo0 : lo0 + 1;
    const midHi = hi === null ? hi0 : hi0 - 1;
    if (midLo <= midHi) options.push(`${digitClass(midLo, midHi)}${anyTail}`);
    if (hi !== null) withRest(hi0, fracRange(null, false, hiRest, hiExclusive, budget - 1));
  }
  return { empty, nonEmpty: options.length === 0 ? null : alternatives(options) };
}

function withFraction(intPattern: string, frac: FracLanguage): string | null {
  if (frac.nonEmpty === null) return frac.empty ? intPattern : null;
  const part = `"." ${frac.nonEmpty}`;
  return sequence([intPattern, frac.empty ? `(${part})?` : `(${part})`]);
}

/** Non-negative decimals (written without a sign) from `lower` (>= 0) to `upper` (null = cut at 15 digits). */
function nonNegativeDecimals(lower: Bound, upper: Bound | null): string[] {
  const a = lower.value.int;
  let b = upper ? upper.value.int : MAX_INT;
  let upperFrac: string | null = upper ? upper.value.frac : null;
  let upperExclusive = upper?.exclusive ?? false;
  if (b > MAX_INT) {
    b = MAX_INT;
    upperFrac = null;
    upperExclusive = false;
  }
  if (a > b) return [];
  const budget = (i: bigint) => MAX_DIGITS - i.toString().length;
  const options: string[] = [];
  const push = (expr: string | null) => {
    if (expr !== null) options.push(expr);
  };
  if (a === b) {
    push(withFraction(`"${a}"`, fracRange(lower.value.frac, lower.exclusive, upperFrac, upperExclusive, budget(a))));
    return options;
  }
  push(withFraction(`"${a}"`, fracRange(lower.value.frac, lower.exclusive, null, false, budget(a))));
  for (const { pattern, digits } of integerRangePatterns(a + 1n, b - 1n)) {
    const room = MAX_DIGITS - digits;
    push(room > 0 ? `${pattern} ("." [0-9]{1,${room}})?` : pattern);
  }
  push(withFraction(`"${b}"`, fracRange(null, false, upperFrac, upperExclusive, budget(b))));
  return options;
}

const ZERO: Decimal = { negative: false, int: 0n, frac: "" };

/** A GBNF expression for the JSON numbers within the bounds (see the file comment), or null if none fit. */
export function numberGbnf(lower: Bound | null, upper: Bound | null): string | null {
  if (!lower && !upper) {
    return `"-"? ("0" | [1-9] [0-9]{0,${MAX_DIGITS - 1}}) ("." [0-9]{1,${MAX_DIGITS}})? ([eE] [-+]? [0-9]{1,3})?`;
  }
  const options: string[] = [];
  const isNonNegative = (d: Decimal) => !d.negative;
  // x >= 0 part: from max(lower, 0) to upper.
  if (!upper || isNonNegative(upper.value)) {
    const from: Bound = lower && isNonNegative(lower.value) ? lower : { value: ZERO, exclusive: false };
    options.push(...nonNegativeDecimals(from, upper));
  }
  // x < 0 part: "-" y with y > 0, y from max(-upper, 0) to -lower.
  if (!lower || lower.value.negative) {
    const yLower: Bound = upper && upper.value.negative ? { value: negate(upper.value), exclusive: upper.exclusive } : { value: ZERO, exclusive: true };
    const yUpper: Bound | null = lower ? { value: negate(lower.value), exclusive: lower.exclusive } : null;
    const magnitudes = nonNegativeDecimals(yLower, yUpper);
    if (magnitudes.length > 0) options.push(`"-" ${alternatives(magnitudes)}`);
  }
  return options.length === 0 ? null : alternatives(options);
}
