// Sets of Unicode code points as sorted, disjoint, non-adjacent inclusive intervals, and their
// rendering as GBNF: plain character classes, or the JSON-string-content encodings of the
// characters (what may appear between the quotes of a JSON string for each character in the set).

export type Interval = readonly [number, number];

export const MAX_CODE_POINT = 0x10ffff;

export class CharSet {
  private constructor(readonly intervals: readonly Interval[]) {}

  static empty(): CharSet {
    return new CharSet([]);
  }

  static all(): CharSet {
    return new CharSet([[0, MAX_CODE_POINT]]);
  }

  static of(...codePoints: number[]): CharSet {
    return CharSet.fromIntervals(codePoints.map((c) => [c, c] as const));
  }

  static range(lo: number, hi: number): CharSet {
    return CharSet.fromIntervals([[lo, hi]]);
  }

  /** Normalises any list of intervals (unsorted, overlapping, adjacent). */
  static fromIntervals(intervals: readonly Interval[]): CharSet {
    const sorted = intervals.filter(([a, b]) => a <= b).map(([a, b]) => [Math.max(0, a), Math.min(MAX_CODE_POINT, b)] as [number, number]);
    sorted.sort((x, y) => x[0] - y[0]);
    const out: [number, number][] = [];
    for (const [a, b] of sorted) {
      const last = out[out.length - 1];
      if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
      else out.push([a, b]);
    }
    return new CharSet(out);
  }

  isEmpty(): boolean {
    return this.intervals.length === 0;
  }

  isAll(): boolean {
    const first = this.intervals[0];
    return this.intervals.length === 1 && first !== undefined && first[0] === 0 && first[1] === MAX_CODE_POINT;
  }

  has(c: number): boolean {
    return this.intervals.some(([a, b]) => a <= c && c <= b);
  }

  size(): number {
    return this.intervals.reduce((n, [a, b]) => n + b - a + 1, 0);
  }

  /** The only member, or null. */
  single(): number | null {
    const first = this.intervals[0];
    return this.intervals.length === 1 && first !== undefined && first[0] === first[1] ? first[0] : null;
  }

  union(other: CharSet): CharSet {
    return CharSet.fromIntervals([...this.intervals, ...other.intervals]);
  }

  complement(): CharSet {
    const out: [number, number][] = [];
    let next = 0;
    for (const [a, b] of this.intervals) {
      if (a > next) out.push([next, a - 1]);
      next = b + 1;
    }
    if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
    return new CharSet(out);
  }

  intersect(other: CharSet): CharSet {
    return this.complement().union(other.complement()).complement();
  }

  minus(other: CharSet): CharSet {
    return this.intersect(other.complement());
  }
}

/** UTF-16 surrogates never occur as code points of well-formed text. */
export const SURROGATES = CharSet.range(0xd800, 0xdfff);
/**
 * Appended to every negated class: values llama.cpp's grammar decoder produces from malformed
 * UTF-8 (encoded surrogates, values above U+10FFFF). Excluding them works byte by byte too: its
 * partial-character check rejects a lead byte whose every completion is excluded. What no grammar
 * can exclude is *overlong* UTF-8 (e.g. E0 8A A2 for U+02A2): after each byte its partial state is
 * identical to that of the valid encoding, so a model that emits single-byte tokens can write one,
 * and the text then decodes to U+FFFD replacement characters. Only the sampler can prevent that
 * (e.g. by banning the single-byte tokens C0 C1 E0 F0 F5-FF; see test-support.ts).
 */
const NEVER_RAW = "\\uD800-\\uDFFF\\U00110000-\\UFFFFFFFF";
export const DIGIT = CharSet.range(0x30, 0x39);
export const WORD = CharSet.fromIntervals([
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
]);
/** ECMAScript's WhiteSpace and LineTerminator (what \s matches). */
export const SPACE = CharSet.fromIntervals([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);
/** ECMAScript's LineTerminator: what `.` does not match. */
export const LINE_TERMINATORS = CharSet.of(0x0a, 0x0d, 0x2028, 0x2029);

/** One code point inside a GBNF character class. */
function classChar(c: number): string {
  if ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)) return String.fromCodePoint(c);
  if (c >= 0x20 && c < 0x7f && !"\\]-[^\"".includes(String.fromCodePoint(c))) return String.fromCodePoint(c);
  return hexEscape(c);
}

/** \xHH, \uHHHH or \UHHHHHHHH: the escapes llama.cpp's grammar parser reads in literals and classes. */
export function hexEscape(c: number): string {
  if (c <= 0xff) return `\\x${c.toString(16).toUpperCase().padStart(2, "0")}`;
  if (c <= 0xffff) return `\\u${c.toString(16).toUpperCase().padStart(4, "0")}`;
  return `\\U${c.toString(16).toUpperCase().padStart(8, "0")}`;
}

function classBody(intervals: readonly Interval[]): string {
  return intervals
    .map(([a, b]) => {
      if (a === b) return classChar(a);
      if (b === a + 1) return classChar(a) + classChar(b);
      return `${classChar(a)}-${classChar(b)}`;
    })
    .join("");
}

/**
 * A GBNF class matching exactly the code points of `set` (never a surrogate or a value above
 * U+10FFFF): `[...]` or `[^...]`, whichever lists fewer intervals. Throws on an empty set.
 */
export function charClassGbnf(set: CharSet): string {
  const usable = set.minus(SURROGATES);
  if (usable.isEmpty()) throw new Error("empty character set");
  return rawClass(usable);
}

function rawClass(usable: CharSet): string {
  const negated = usable.complement().minus(SURROGATES);
  if (negated.intervals.length < usable.intervals.length) return `[^${classBody(negated.intervals)}${NEVER_RAW}]`;
  return `[${classBody(usable.intervals)}]`;
}

const CONTROL = CharSet.range(0x00, 0x1f);
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SHORT_ESCAPES = new Map<number, string>([
  [0x08, "b"],
  [0x09, "t"],
  [0x0a, "n"],
  [0x0c, "f"],
  [0x0d, "r"],
]);
/** Characters that must be escaped inside a JSON string. */
export const JSON_MUST_ESCAPE = CONTROL.union(CharSet.of(QUOTE, BACKSLASH));

/**
 * A GBNF expression for the JSON-string-content encodings of one character of `set`: the character
 * itself when JSON allows it raw, otherwise its escape (\" \\ \b \t \n \f \r, or \u00XX / \u00xx
 * for other control characters). Only these canonical encodings are produced, so decoding the matched text
 * always yields a member of `set` (a character outside the set cannot sneak in as \uXXXX).
 */
export function jsonCharGbnf(set: CharSet): string {
  const usable = set.minus(SURROGATES);
  if (usable.isEmpty()) throw new Error("empty character set");
  const parts: string[] = [];
  const raw = usable.minus(JSON_MUST_ESCAPE);
  if (!raw.isEmpty()) parts.push(rawClass(raw));
  if (usable.has(QUOTE)) parts.push(`"\\\\\\""`);
  if (usable.has(BACKSLASH)) parts.push(`"\\\\\\\\"`);
  const controls = usable.intersect(CONTROL);
  if (controls.size() === 32) {
    parts.push(`"\\\\" ([bfnrt] | "u00" [01] [0-9a-fA-F])`);
  } else {
    for (const [a, b] of controls.intervals) {
      for (let c = a; c <= b; c++) {
        const short = SHORT_ESCAPES.get(c);
        parts.push(short ? `"\\\\${short}"` : controlEscape(c));
      }
    }
  }
  return parts.length === 1 ? (parts[0] as string) : `(${parts.join(" | ")})`;
}

/** \u00XX for a control character, the hex letter in either case (JSON.stringify writes lowercase). */
function controlEscape(c: number): string {
  const hex = c.toString(16).padStart(2, "0");
  const last = hex[1] as string;
  return /[a-f]/.test(last) ? `"\\\\u00${hex[0]}" [${last}${last.toUpperCase()}]` : `"\\\\u00${hex}"`;
}
