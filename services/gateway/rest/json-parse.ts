// JSON.parse loses integers beyond 2^53, which matters for 64-bit fields such as `seed` whose bounds
// must be checked exactly. The fast path is JSON.parse; only a document that holds such an integer
// is parsed again by the small lossless parser below, which keeps those integers as BigInt.
export type LosslessJson = null | boolean | number | bigint | string | LosslessJson[] | { [key: string]: LosslessJson };

export class JsonSyntaxError extends Error {
  constructor(message: string, readonly position: number) {
    super(message);
  }
}

export function parseJsonLossless(text: string): LosslessJson {
  let unsafe = false;
  let parsed: LosslessJson;
  try {
    parsed = JSON.parse(text, (_key, value: unknown) => {
      if (typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value)) unsafe = true;
      return value;
    }) as LosslessJson;
  } catch {
    // Re-parse to report a position and a Python-like message (FastAPI's json_invalid ctx.error).
    return new LosslessParser(text).parseDocument();
  }
  return unsafe ? new LosslessParser(text).parseDocument() : parsed;
}

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
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.text.slice(this.pos, this.pos + 400));
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
