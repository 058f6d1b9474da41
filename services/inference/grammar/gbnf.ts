// Writing GBNF (llama.cpp's grammar format) text: literals, rule names, a rule set that dedupes
// bodies and keeps rule names unique, and bounded repetition that stays within llama.cpp's parser
// limits.
//
// Facts about the bundled llama.cpp parser (src/llama-grammar.cpp) this relies on:
// - rule names are [a-zA-Z0-9-]+ (no underscores);
// - escapes in literals and classes: \x.. \u.... \U........ \t \r \n \\ \" \[ \] \- and nothing else
//   (e.g. "\^" is a parse error);
// - X{m,n} is expanded into up to n rules and refused when m > 2000 or when n times the number of
//   rules X itself generated exceeds 2000; an n above 2000 is silently treated as unbounded. So
//   repeat() only ever repeats a single symbol (a rule reference, class or literal) and splits
//   larger counts into chunks of rules itself;
// - left recursion is refused when the grammar is created.
import { hexEscape } from "./charset.js";

/** A GBNF string literal matching `text` exactly (code points above 0x7e and controls as escapes). */
export function gbnfLiteral(text: string): string {
  let out = '"';
  for (const ch of text) {
    const c = ch.codePointAt(0) as number;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c >= 0x20 && c < 0x7f) out += ch;
    else out += hexEscape(c);
  }
  return `${out}"`;
}

const RULE_NAME = /^[a-zA-Z0-9-]+$/;

export function isRuleName(name: string): boolean {
  return RULE_NAME.test(name);
}

/** Turns any hint into a valid rule-name stem. */
export function ruleStem(hint: string): string {
  const stem = hint
    .replace(/[^a-zA-Z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-|-$/g, "")
    .slice(0, 40)
    .replace(/-$/, "");
  return stem || "r";
}

/** llama.cpp's MAX_REPETITION_THRESHOLD. */
const REPEAT_LIMIT = 2000;
const CHUNK = 1000;

export class GrammarBuilder {
  private readonly bodies = new Map<string, string>();
  private readonly order: string[] = [];
  private readonly byBody = new Map<string, string>();
  private readonly taken = new Set<string>();

  /** A fresh rule name derived from `hint`. */
  reserve(hint: string): string {
    const stem = ruleStem(hint);
    let name = stem;
    for (let i = 2; this.taken.has(name); i++) name = `${stem}-${i}`;
    this.taken.add(name);
    return name;
  }

  /** Reserves exactly `name` (throws when taken or invalid). */
  reserveExact(name: string): string {
    if (!isRuleName(name)) throw new Error(`invalid GBNF rule name ${JSON.stringify(name)} (use letters, digits and '-')`);
    if (this.taken.has(name)) throw new Error(`GBNF rule name ${name} is already used`);
    this.taken.add(name);
    return name;
  }

  /** Sets the body of a reserved rule. */
  set(name: string, body: string): void {
    if (!this.taken.has(name)) throw new Error(`rule ${name} was not reserved`);
    if (!this.bodies.has(name)) this.order.push(name);
    this.bodies.set(name, body);
  }

  /** A rule with this body: an existing one with the same body, or a new one named after `hint`. */
  define(hint: string, body: string): string {
    const existing = this.byBody.get(body);
    if (existing !== undefined) return existing;
    const name = this.reserve(hint);
    this.set(name, body);
    this.byBody.set(body, name);
    return name;
  }

  /** `expr` as one symbol: itself when it already is one, otherwise a rule. */
  symbol(hint: string, expr: string): string {
    return isSingleSymbol(expr) ? expr : this.define(hint, expr);
  }

  /**
   * `atom` (one symbol) repeated min..max times (max null = unbounded), as an expression. Counts
   * beyond llama.cpp's limit are built from chunk rules instead of relying on its {m,n}.
   */
  repeat(atom: string, min: number, max: number | null, hint: string): string {
    if (!Number.isInteger(min) || min < 0 || (max !== null && (!Number.isInteger(max) || max < min))) throw new Error(`invalid repetition {${min},${max ?? ""}}`);
    if (min <= REPEAT_LIMIT && (max === null || max <= REPEAT_LIMIT)) return simpleRepeat(atom, min, max);
    const parts: string[] = [];
    let chunk: string | null = null;
    const chunkRule = () => (chunk ??= this.define(`${hint}-x${CHUNK}`, `${atom}{${CHUNK}}`));
    if (min > REPEAT_LIMIT) {
      const q = Math.floor(min / CHUNK);
      if (q > REPEAT_LIMIT) throw new Error(`repetition count ${min} is too large`);
      parts.push(simpleRepeat(chunkRule(), q, q), simpleRepeat(atom, min % CHUNK, min % CHUNK));
    } else {
      parts.push(simpleRepeat(atom, min, min));
    }
    if (max === null) {
      parts.push(`${atom}*`);
    } else {
      // atom{0,k} = atom{0,CHUNK-1} | atom{CHUNK} atom{0,k-CHUNK}: disjoint lengths, k/CHUNK rules.
      const optional = (k: number): string => {
        if (k <= REPEAT_LIMIT) return simpleRepeat(atom, 0, k);
        return this.define(`${hint}-upto${k}`, `${simpleRepeat(atom, 0, CHUNK - 1)} | ${chunkRule()} ${optional(k - CHUNK)}`);
      };
      parts.push(optional(max - min));
    }
    const used = parts.filter((p) => p !== '""');
    return used.length === 0 ? '""' : used.join(" ");
  }

  /** The grammar text, `first` (normally root) first. */
  render(first: string): string {
    const names = [first, ...this.order.filter((n) => n !== first)];
    return names.map((name) => `${name} ::= ${this.bodies.get(name) ?? '""'}`).join("\n") + "\n";
  }
}

function simpleRepeat(atom: string, min: number, max: number | null): string {
  if (max === 0) return '""';
  if (min === 0 && max === null) return `${atom}*`;
  if (min === 1 && max === null) return `${atom}+`;
  if (min === 0 && max === 1) return `${atom}?`;
  if (min === 1 && max === 1) return atom;
  if (min === max) return `${atom}{${min}}`;
  return `${atom}{${min},${max ?? ""}}`;
}

/** True for a rule name, one literal, one class or `.`, which GBNF repeats as a whole. */
export function isSingleSymbol(expr: string): boolean {
  if (isRuleName(expr) || expr === ".") return true;
  if (/^"(?:[^"\\]|\\.)*"$/.test(expr)) return true;
  if (/^\[(?:[^\]\\]|\\.)*\]$/.test(expr)) return true;
  return false;
}

/** Alternatives as one expression (parenthesised when there are several). */
export function alternatives(options: string[]): string {
  const unique = [...new Set(options)];
  if (unique.length === 0) throw new Error("no alternatives");
  return unique.length === 1 ? (unique[0] as string) : `(${unique.join(" | ")})`;
}

/** Concatenation, dropping empty literals. */
export function sequence(items: string[]): string {
  const used = items.filter((i) => i !== '""' && i !== "");
  return used.length === 0 ? '""' : used.join(" ");
}
