// Request bodies as JSON, with three things JSON.parse does not do:
// - nesting is limited (MAX_JSON_DEPTH): deeper documents are refused before parsing, because
//   every later step (validation, protobuf, BSON, whose own limit is 100 levels) recurses;
// - integers beyond 2^53 keep every digit (as BigInt), since 64-bit fields such as `seed` are
//   checked exactly: only a document holding a long digit run is parsed by the lossless parser;
// - numbers beyond a double's range (1e309 parses as Infinity) are reported with their place,
//   since no JSON answer or protobuf value can carry them.
// One linear scan finds the first and flags the other two, so the common document is one
// JSON.parse with no reviver.
export type LosslessJson = null | boolean | number | bigint | string | LosslessJson[] | { [key: string]: LosslessJson };

/** Objects and arrays nested deeper than this are refused. */
export const MAX_JSON_DEPTH = 64;

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

/** A number that a double cannot hold (as ±Infinity), and where it is in the document. */
export interface NonFiniteNumber {
  path: (string | number)[];
  value: number;
}

export interface ParsedJson {
  value: LosslessJson;
  /** Numbers that overflowed to ±Infinity (empty for nearly every document). */
  nonFinite: NonFiniteNumber[];
}

export function parseJsonLossless(text: string): ParsedJson {
  const scan = scanJson(text);
  let value: LosslessJson;
  if (scan.longDigits) value = new LosslessParser(text).parseDocument();
  else {
    try {
      value = JSON.parse(text) as LosslessJson;
    } catch {
      // Re-parse to report a position and a Python-like message (FastAPI's json_invalid ctx.error).
      value = new LosslessParser(text).parseDocument();
    }
  }
  return { value, nonFinite: scan.exponent || scan.longDigits ? findNonFinite(value) : [] };
}

interface Scan {
  /** A number with 16 or more digits before any fraction: maybe beyond 2^53, or beyond a double. */
  longDigits: boolean;
  /** A number with an exponent (the only other way to overflow a double). */
  exponent: boolean;
}

/** One pass over the text outside strings: nesting depth (throws past the limit) and number shapes. */
function scanJson(text: string): Scan {
  const scan: Scan = { longDigits: false, exponent: false };
  let depth = 0;
  let digits = 0;
  let inNumber = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      inNumber = false;
      // Skip the string, escapes included; an unterminated one is the parser's to report.
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c /* \ */) i++;
        else if (s === 0x22) break;
      }
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      inNumber = false;
      if (++depth > MAX_JSON_DEPTH) throw new JsonSyntaxError(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`, i);
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      inNumber = false;
      depth--;
    } else if (c >= 0x30 && c <= 0x39 /* 0-9 */) {
      if (!inNumber) (inNumber = true), (digits = 0);
      if (digits >= 0 && ++digits >= 16) scan.longDigits = true;
    } else if (c === 0x2e /* . */) {
      digits = -1; // the fraction's digits do not make an integer long
    } else if (c === 0x65 || c === 0x45 /* e E */) {
      if (inNumber) scan.exponent = true;
    } else if (c !== 0x2d && c !== 0x2b /* - + */) {
      inNumber = false;
    }
  }
  return scan;
}

function findNonFinite(value: LosslessJson, path: (string | number)[] = [], out: NonFiniteNumber[] = []): NonFiniteNumber[] {
  if (typeof value === "number" || typeof value === "bigint") {
    // A BigInt beyond a double's range would become Infinity wherever it is not a 64-bit field.
    if (!Number.isFinite(Number(value))) out.push({ path: [...path], value: Number(value) });
  } else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
      path.push(key);
      findNonFinite(item, path, out);
      path.pop();
    }
  }
  return out;
}

const NUMBER = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

class LosslessParser {
  private pos = 0;
  constructor(private readonly text: string) {}

  parseDocument(): LosslessJson {
    this.skipWhitespace();
    const value = this.parseValue();
    this.skipWhitespace();
    if (this.pos < this.text.length) throw new JsonSyntaxError("Extra data", this.pos);
    return value;
  }

  private parseValue(): LosslessJson {
    const ch = this.text[this.pos];
    if (ch === "{") return this.parseObject();
    if (ch === "[") return this.parseArray();
    if (ch === '"') return this.parseString();
    if (ch === "-" || (ch !== undefined && ch >= "0" && ch <= "9")) return this.parseNumber();
    for (const [word, value] of [["true", true], ["false", false], ["null", null]] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return value;
      }
    }
    throw new JsonSyntaxError("Expecting value", this.pos);
  }

  private parseObject(): LosslessJson {
    const out: { [key: string]: LosslessJson } = {};
    this.pos++;
    this.skipWhitespace();
    if (this.text[this.pos] === "}") {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.pos] !== '"') throw new JsonSyntaxError("Expecting property name enclosed in double quotes", this.pos);
      const key = this.parseString();
      this.skipWhitespace();
      if (this.text[this.pos] !== ":") throw new JsonSyntaxError("Expecting ':' delimiter", this.pos);
      this.pos++;
      this.skipWhitespace();
      out[key] = this.parseValue();
      this.skipWhitespace();
      const next = this.text[this.pos];
      this.pos++;
      if (next === "}") return out;
      if (next !== ",") throw new JsonSyntaxError("Expecting ',' delimiter", this.pos - 1);
    }
  }

  private parseArray(): LosslessJson {
    const out: LosslessJson[] = [];
    this.pos++;
    this.skipWhitespace();
    if (this.text[this.pos] === "]") {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      out.push(this.parseValue());
      this.skipWhitespace();
      const next = this.text[this.pos];
      this.pos++;
      if (next === "]") return out;
      if (next !== ",") throw new JsonSyntaxError("Expecting ',' delimiter", this.pos - 1);
    }
  }

  private parseString(): string {
    const start = this.pos;
    this.pos++;
    while (this.pos < this.text.length) {
      const ch = this.text[this.pos];
      if (ch === "\\") this.pos += 2;
      else if (ch === '"') {
        this.pos++;
        try {
          return JSON.parse(this.text.slice(start, this.pos)) as string;
        } catch {
          throw new JsonSyntaxError("Invalid \\escape or control character in string", start);
        }
      } else this.pos++;
    }
    throw new JsonSyntaxError("Unterminated string starting at", start);
  }

  private parseNumber(): number | bigint {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (!match) throw new JsonSyntaxError("Expecting value", this.pos);
    this.pos += match[0].length;
    const isInteger = match[2] === undefined && match[3] === undefined;
    const asNumber = Number(match[0]);
    return isInteger && !Number.isSafeInteger(asNumber) ? BigInt(match[0]) : asNumber;
  }

  private skipWhitespace(): void {
    while (this.pos < this.text.length && " \t\n\r".includes(this.text[this.pos] as string)) this.pos++;
  }
}
