// Regular expressions (a practical ECMAScript subset) to GBNF, matched against the whole text.
//
// Supported: literals and escapes (\n \r \t \f \v \0 \xHH \uHHHH \u{H...} \cX and escaped
// punctuation), `.` (any character but a line terminator), classes [...] / [^...] with ranges and
// \d \w \s \D \W \S inside or outside them, groups (...), (?:...) and (?<name>...) (captures mean
// nothing without backreferences), alternation |, quantifiers * + ? {n} {n,} {n,m} (a lazy `?`
// suffix is accepted and means the same here), and anchors ^ at the start and $ at the end (of the
// pattern, of a top-level alternative, or of a group that itself starts / ends the match).
// Unsupported, with UnsupportedRegexError naming the construct: backreferences (\1, \k<name>),
// lookahead/lookbehind, word boundaries \b \B, unicode property escapes \p{..}, inline flags and
// other (?...) groups, anchors anywhere else, and empty classes [].
//
// Two encodings of the matched text:
// - "raw": the grammar matches the text itself (regexToGbnf, guided regex, whitespace patterns);
// - "json-string": the grammar matches what stands between the quotes of a JSON string whose
//   decoded value matches the regex (JSON Schema `pattern`). Every character is produced in one
//   canonical encoding: itself when JSON allows it raw, otherwise \" \\ \b \t \n \f \r or \u00XX.
//   So the decoded string is exactly what the regex accepted, for every character (printable ASCII,
//   controls and non-ASCII alike); the only JSON spellings never produced are the optional ones
//   (\/ and \uXXXX for characters that need no escape).
import { CharSet, DIGIT, LINE_TERMINATORS, SPACE, WORD, charClassGbnf, jsonCharGbnf } from "./charset.js";
import { GrammarBuilder, alternatives, gbnfLiteral, sequence } from "./gbnf.js";

export class UnsupportedRegexError extends Error {
  constructor(
    readonly construct: string,
    readonly pattern: string,
    readonly index: number,
  ) {
    super(`unsupported regex construct ${construct} at index ${index} of ${JSON.stringify(pattern)}`);
    this.name = "UnsupportedRegexError";
  }
}

export type RegexNode =
  | { kind: "set"; set: CharSet }
  | { kind: "seq"; items: RegexNode[] }
  | { kind: "alt"; options: RegexNode[] }
  | { kind: "repeat"; node: RegexNode; min: number; max: number | null }
  | { kind: "start"; index: number }
  | { kind: "end"; index: number };

export type RegexEncoding = "raw" | "json-string";

/** Parses `pattern` (code points, as with the `u` flag) and checks that its anchors are where this compiler handles them. */
export function parseRegex(pattern: string): RegexNode {
  const node = new Parser(pattern).parse();
  checkAnchors(node, true, true, pattern);
  return node;
}

/** A complete grammar whose `root` matches exactly the strings the regex fully matches. */
export function regexToGbnf(pattern: string): string {
  return regexRule(pattern, "root", { encoding: "raw" });
}

/**
 * GBNF rules, the first named `ruleName` and the helpers `ruleName-...`, for embedding in a larger
 * grammar. By default (encoding "json-string") the rule matches the content of a JSON string (no
 * quotes) whose decoded value fully matches the regex; "raw" matches the text itself.
 */
export function regexRule(pattern: string, ruleName: string, options: { encoding?: RegexEncoding } = {}): string {
  const builder = new GrammarBuilder();
  builder.reserveExact(ruleName);
  const body = emitRegex(parseRegex(pattern), builder, ruleName, options.encoding ?? "json-string");
  builder.set(ruleName, body);
  return builder.render(ruleName);
}

/** The regex as a GBNF expression, helper rules going into `builder` (named after `hint`). */
export function emitRegex(node: RegexNode, builder: GrammarBuilder, hint: string, encoding: RegexEncoding): string {
  const charExpr = (set: CharSet) => (encoding === "raw" ? charClassGbnf(set) : jsonCharGbnf(set));
  const emit = (n: RegexNode): string => {
    switch (n.kind) {
      case "start":
      case "end":
        return '""';
      case "set": {
        const single = n.set.single();
        if (single !== null && (encoding === "raw" || (single >= 0x20 && single !== 0x22 && single !== 0x5c))) return gbnfLiteral(String.fromCodePoint(single));
        return charExpr(n.set);
      }
      case "seq": {
        const parts: string[] = [];
        let literal = "";
        const flush = () => {
          if (literal) parts.push(gbnfLiteral(literal));
          literal = "";
        };
        for (const item of n.items) {
          const single = item.kind === "set" ? item.set.single() : null;
          if (single !== null && (encoding === "raw" || (single >= 0x20 && single !== 0x22 && single !== 0x5c))) {
            literal += String.fromCodePoint(single);
            continue;
          }
          flush();
          parts.push(emit(item));
        }
        flush();
        return sequence(parts);
      }
      case "alt":
        return alternatives(n.options.map((o) => emit(o)));
      case "repeat": {
        const inner = emit(n.node);
        if (inner === '""') return '""';
        const atom = builder.symbol(`${hint}-r`, inner);
        return builder.repeat(atom, n.min, n.max, `${hint}-r`);
      }
    }
  };
  return emit(node);
}

/** Shortest and longest match in characters (null = unbounded). */
export function regexLengthBounds(node: RegexNode): { min: number; max: number | null } {
  switch (node.kind) {
    case "start":
    case "end":
      return { min: 0, max: 0 };
    case "set":
      return { min: 1, max: 1 };
    case "seq":
      return node.items.map(regexLengthBounds).reduce((a, b) => ({ min: a.min + b.min, max: a.max === null || b.max === null ? null : a.max + b.max }), { min: 0, max: 0 });
    case "alt": {
      const all = node.options.map(regexLengthBounds);
      return { min: Math.min(...all.map((b) => b.min)), max: all.some((b) => b.max === null) ? null : Math.max(...all.map((b) => b.max as number)) };
    }
    case "repeat": {
      const inner = regexLengthBounds(node.node);
      return { min: inner.min * node.min, max: node.max === null ? (inner.max === 0 ? 0 : null) : inner.max === null ? (node.max === 0 ? 0 : null) : inner.max * node.max };
    }
  }
}

function checkAnchors(node: RegexNode, atStart: boolean, atEnd: boolean, pattern: string): void {
  switch (node.kind) {
    case "start":
      if (!atStart) throw new UnsupportedRegexError("anchor ^ (not at the start)", pattern, node.index);
      return;
    case "end":
      if (!atEnd) throw new UnsupportedRegexError("anchor $ (not at the end)", pattern, node.index);
      return;
    case "set":
      return;
    case "alt":
      for (const option of node.options) checkAnchors(option, atStart, atEnd, pattern);
      return;
    case "repeat":
      // a{2} repeats any anchor inside, so only the trivial {1} or {0,1} keep its position.
      checkAnchors(node.node, atStart && (node.max ?? 2) <= 1, atEnd && (node.max ?? 2) <= 1, pattern);
      return;
    case "seq":
      node.items.forEach((item, i) => {
        const before = node.items.slice(0, i).every(isAnchorOnly);
        const after = node.items.slice(i + 1).every(isAnchorOnly);
        checkAnchors(item, atStart && before, atEnd && after, pattern);
      });
      return;
  }
}

function isAnchorOnly(node: RegexNode): boolean {
  return node.kind === "start" || node.kind === "end";
}

class Parser {
  private pos = 0;
  private readonly cps: number[];

  constructor(private readonly pattern: string) {
    this.cps = Array.from(pattern, (ch) => ch.codePointAt(0) as number);
  }

  parse(): RegexNode {
    const node = this.alternation();
    if (this.pos < this.cps.length) {
      // Only a stray ')' stops the top-level alternation early.
      throw new UnsupportedRegexError("unmatched )", this.pattern, this.pos);
    }
    return node;
  }

  private peek(offset = 0): string | undefined {
    const c = this.cps[this.pos + offset];
    return c === undefined ? undefined : String.fromCodePoint(c);
  }

  private fail(construct: string, at = this.pos): never {
    throw new UnsupportedRegexError(construct, this.pattern, at);
  }

  private alternation(): RegexNode {
    const options = [this.sequence()];
    while (this.peek() === "|") {
      this.pos++;
      options.push(this.sequence());
    }
    return options.length === 1 ? (options[0] as RegexNode) : { kind: "alt", options };
  }

  private sequence(): RegexNode {
    const items: RegexNode[] = [];
    for (;;) {
      const ch = this.peek();
      if (ch === undefined || ch === "|" || ch === ")") break;
      items.push(this.quantifier(this.atom()));
    }
    return items.length === 1 ? (items[0] as RegexNode) : { kind: "seq", items };
  }

  private quantifier(atom: RegexNode): RegexNode {
    const at = this.pos;
    const ch = this.peek();
    let bounds: [number, number | null] | null;
    if (ch === "*") bounds = [0, null];
    else if (ch === "+") bounds = [1, null];
    else if (ch === "?") bounds = [0, 1];
    else if (ch === "{") bounds = this.braces();
    else bounds = null;
    if (bounds === null) return atom; // a '{' that starts no quantifier is read as a literal next
    if (ch !== "{") this.pos++;
    if (this.peek() === "?") this.pos++; // lazy: the same language
    const [min, max] = bounds;
    if (atom.kind === "start" || atom.kind === "end") this.fail("quantifier on an anchor", at);
    if (max !== null && max < min) this.fail(`quantifier {${min},${max}} out of order`, at);
    const next = this.peek();
    if (next === "*" || next === "+" || next === "?" || (next === "{" && this.lookBraces())) this.fail("nothing to repeat", this.pos);
    return { kind: "repeat", node: atom, min, max };
  }

  private lookBraces(): boolean {
    const save = this.pos;
    const result = this.braces();
    this.pos = save;
    return result !== null;
  }

  /** {n} {n,} {n,m} at pos: on success pos moves past '}', otherwise it stays and the result is null. */
  private braces(): [number, number | null] | null {
    const save = this.pos;
    this.pos++;
    const readInt = (): number | null => {
      const start = this.pos;
      while (/^[0-9]$/.test(this.peek() ?? "")) this.pos++;
      return this.pos > start ? Number(String.fromCodePoint(...this.cps.slice(start, this.pos))) : null;
    };
    const min = readInt();
    let max: number | null = min;
    if (min !== null && this.peek() === ",") {
      this.pos++;
      max = readInt();
    }
    if (min === null || this.peek() !== "}") {
      this.pos = save;
      return null;
    }
    this.pos++;
    return [min, max];
  }

  private atom(): RegexNode {
    const at = this.pos;
    const ch = this.peek() as string;
    switch (ch) {
      case "^":
        this.pos++;
        return { kind: "start", index: at };
      case "$":
        this.pos++;
        return { kind: "end", index: at };
      case ".":
        this.pos++;
        return { kind: "set", set: LINE_TERMINATORS.complement() };
      case "(":
        return this.group();
      case "[":
        return { kind: "set", set: this.charClass() };
      case "\\":
        return this.escape(false);
      case "*":
      case "+":
      case "?":
        return this.fail("nothing to repeat");
      case "{":
        if (this.lookBraces()) this.fail("nothing to repeat");
        this.pos++;
        return literal("{");
      default:
        this.pos++;
        return { kind: "set", set: CharSet.of(this.cps[at] as number) };
    }
  }

  private group(): RegexNode {
    const at = this.pos;
    this.pos++; // (
    if (this.peek() === "?") {
      const next = this.peek(1);
      if (next === ":") this.pos += 2;
      else if (next === "=" || next === "!") this.fail(next === "=" ? "lookahead (?=" : "negative lookahead (?!", at);
      else if (next === "<" && (this.peek(2) === "=" || this.peek(2) === "!")) this.fail(this.peek(2) === "=" ? "lookbehind (?<=" : "negative lookbehind (?<!", at);
      else if (next === "<") {
        // Named capture group: a plain group here (no backreferences are supported).
        const close = this.pattern.indexOf(">", this.offsetOf(this.pos + 2));
        const name = close < 0 ? "" : this.pattern.slice(this.offsetOf(this.pos + 2), close);
        if (!/^[A-Za-z_$][\w$]*$/.test(name)) this.fail("malformed named group", at);
        this.pos += 3 + Array.from(name).length;
      } else this.fail(`group modifier (?${next ?? ""}`, at);
    }
    const inner = this.alternation();
    if (this.peek() !== ")") this.fail("unterminated group (", at);
    this.pos++;
    return inner;
  }

  /** UTF-16 offset of code point index i. */
  private offsetOf(i: number): number {
    let offset = 0;
    for (let k = 0; k < i && k < this.cps.length; k++) offset += (this.cps[k] as number) > 0xffff ? 2 : 1;
    return offset;
  }

  private charClass(): CharSet {
    const at = this.pos;
    this.pos++; // [
    let negated = false;
    if (this.peek() === "^") {
      negated = true;
      this.pos++;
    }
    let set = CharSet.empty();
    for (;;) {
      const ch = this.peek();
      if (ch === undefined) this.fail("unterminated character class [", at);
      if (ch === "]") {
        this.pos++;
        break;
      }
      const lo = this.classAtom();
      if (this.peek() === "-" && this.peek(1) !== "]" && this.peek(1) !== undefined) {
        const dashAt = this.pos;
        this.pos++;
        const hi = this.classAtom();
        const a = lo.single();
        const b = hi.single();
        if (a === null || b === null) {
          // [\d-z]: Annex B reads the '-' literally.
          set = set.union(lo).union(hi).union(CharSet.of(0x2d));
        } else {
          if (b < a) this.fail("character class range out of order", dashAt);
          set = set.union(CharSet.range(a, b));
        }
      } else {
        set = set.union(lo);
      }
    }
    if (negated) return set.complement();
    if (set.isEmpty()) this.fail("empty character class []", at);
    return set;
  }

  private classAtom(): CharSet {
    if (this.peek() === "\\") {
      const node = this.escape(true);
      if (node.kind !== "set") this.fail("escape in character class");
      return node.set;
    }
    return CharSet.of(this.cps[this.pos++] as number);
  }

  private escape(inClass: boolean): RegexNode {
    const at = this.pos;
    this.pos++; // backslash
    const ch = this.peek();
    if (ch === undefined) this.fail("trailing backslash", at);
    this.pos++;
    const set = (s: CharSet): RegexNode => ({ kind: "set", set: s });
    switch (ch) {
      case "d":
        return set(DIGIT);
      case "D":
        return set(DIGIT.complement());
      case "w":
        return set(WORD);
      case "W":
        return set(WORD.complement());
      case "s":
        return set(SPACE);
      case "S":
        return set(SPACE.complement());
      case "n":
        return literal("\n");
      case "r":
        return literal("\r");
      case "t":
        return literal("\t");
      case "f":
        return literal("\f");
      case "v":
        return literal("\v");
      case "b":
        if (inClass) return literal("\b");
        return this.fail("word boundary \\b", at);
      case "B":
        return this.fail("word boundary \\B", at);
      case "0":
        if (this.peek() !== undefined && /[0-9]/.test(this.peek() as string)) return this.fail("octal escape", at);
        return literal("\0");
      case "x": {
        const hex = this.hexDigits(2);
        if (hex === null) return this.fail("malformed \\x escape", at);
        return set(CharSet.of(hex));
      }
      case "u": {
        if (this.peek() === "{") {
          const close = this.cps.indexOf(0x7d, this.pos);
          const digits = close < 0 ? "" : String.fromCodePoint(...this.cps.slice(this.pos + 1, close));
          if (!/^[0-9a-fA-F]{1,6}$/.test(digits) || parseInt(digits, 16) > 0x10ffff) return this.fail("malformed \\u{...} escape", at);
          this.pos = close + 1;
          return set(CharSet.of(parseInt(digits, 16)));
        }
        const hex = this.hexDigits(4);
        if (hex === null) return this.fail("malformed \\u escape", at);
        // A surrogate pair written as two escapes is one character.
        if (hex >= 0xd800 && hex <= 0xdbff && this.peek() === "\\" && this.peek(1) === "u") {
          const save = this.pos;
          this.pos += 2;
          const low = this.hexDigits(4);
          if (low !== null && low >= 0xdc00 && low <= 0xdfff) return set(CharSet.of(0x10000 + ((hex - 0xd800) << 10) + (low - 0xdc00)));
          this.pos = save;
        }
        return set(CharSet.of(hex));
      }
      case "c": {
        const letter = this.peek();
        if (letter === undefined || !/[A-Za-z]/.test(letter)) return this.fail("malformed \\c escape", at);
        this.pos++;
        return set(CharSet.of(letter.charCodeAt(0) % 32));
      }
      case "k":
        return this.fail("backreference \\k<name>", at);
      case "p":
      case "P":
        return this.fail(`unicode property escape \\${ch}`, at);
      default:
        if (/[1-9]/.test(ch)) return this.fail(`backreference \\${ch}`, at);
        if (/[A-Za-z0-9_]/.test(ch)) return this.fail(`escape \\${ch}`, at);
        return set(CharSet.of(this.cps[this.pos - 1] as number));
    }
  }

  private hexDigits(n: number): number | null {
    const digits = this.cps.slice(this.pos, this.pos + n).map((c) => String.fromCodePoint(c)).join("");
    if (digits.length !== n || !/^[0-9a-fA-F]+$/.test(digits)) return null;
    this.pos += n;
    return parseInt(digits, 16);
  }
}

function literal(ch: string): RegexNode {
  return { kind: "set", set: CharSet.of(ch.codePointAt(0) as number) };
}
