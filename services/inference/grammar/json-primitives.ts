// Rules shared by the JSON grammars: whitespace, one string character, strings, numbers and any
// JSON value.
import { CharSet, JSON_MUST_ESCAPE, charClassGbnf } from "./charset.js";
import { GrammarBuilder } from "./gbnf.js";
import { numberGbnf } from "./numeric.js";
import { emitRegex, parseRegex } from "./regex.js";

export interface WhitespaceOptions {
  /** No whitespace at all between tokens (wins over whitespacePattern). */
  disableAnyWhitespace?: boolean;
  /** A regex (raw text, full match) for the whitespace allowed between tokens; a construct outside regex.ts's subset throws UnsupportedRegexError. */
  whitespacePattern?: string;
}

/**
 * Default whitespace between tokens: nothing, one space, or one or two newlines and up to 20
 * spaces/tabs of indentation. Bounded, so sampling cannot spin on whitespace forever, and enough
 * for compact and pretty-printed JSON.
 */
export const DEFAULT_WHITESPACE = '(" " | "\\n"{1,2} [ \\t]{0,20})?';

/** The whitespace symbol to put between tokens, or "" for none. */
export function whitespaceRule(b: GrammarBuilder, options: WhitespaceOptions): string {
  if (options.disableAnyWhitespace) return "";
  if (options.whitespacePattern !== undefined) {
    const name = b.reserve("ws");
    b.set(name, emitRegex(parseRegex(options.whitespacePattern), b, name, "raw"));
    return name;
  }
  return b.define("ws", DEFAULT_WHITESPACE);
}

/**
 * One character of JSON string content: any character JSON allows raw, or an escape. \u escapes
 * of UTF-16 surrogates are left out, so each match is exactly one code point of the decoded string
 * (what minLength / maxLength count).
 */
export function jsonCharRule(b: GrammarBuilder): string {
  const hex = "[0-9a-fA-F]";
  const nonSurrogateHex4 = `([0-9a-cA-Ce-fE-F] ${hex}{3} | [dD] [0-7] ${hex}{2})`;
  const raw = charClassGbnf(CharSet.all().minus(JSON_MUST_ESCAPE));
  return b.define("char", `${raw} | "\\\\" (["\\\\/bfnrt] | "u" ${nonSurrogateHex4})`);
}

/** Any JSON string. */
export function jsonStringRule(b: GrammarBuilder): string {
  return b.define("string", `"\\"" ${jsonCharRule(b)}* "\\""`);
}

/** Any JSON number (at most 15 digits before and after the point, optional exponent). */
export function jsonNumberRule(b: GrammarBuilder): string {
  return b.define("number", numberGbnf(null, null) as string);
}

/** Any JSON value (objects and arrays nest through it). */
export function jsonValueRule(b: GrammarBuilder, ws: string): string {
  return anyJson(b, ws).value;
}

/** Any JSON object. */
export function jsonObjectRule(b: GrammarBuilder, ws: string): string {
  return anyJson(b, ws).object;
}

const cache = new WeakMap<GrammarBuilder, { value: string; object: string }>();

function anyJson(b: GrammarBuilder, ws: string): { value: string; object: string } {
  const existing = cache.get(b);
  if (existing) return existing;
  const value = b.reserve("value");
  const string = jsonStringRule(b);
  const sep = join(ws, '","', ws);
  const member = b.define("member", join(string, ws, '":"', ws, value));
  const object = b.define("object", `"{" ${join(ws, '"}"')} | "{" ${join(ws, member, `(${join(sep, member)})*`, ws, '"}"')}`);
  const array = b.define("array", `"[" ${join(ws, '"]"')} | "[" ${join(ws, value, `(${join(sep, value)})*`, ws, '"]"')}`);
  const boolean = b.define("boolean", '"true" | "false"');
  const nul = b.define("null", '"null"');
  b.set(value, [object, array, string, jsonNumberRule(b), boolean, nul].join(" | "));
  const rules = { value, object };
  cache.set(b, rules);
  return rules;
}

function join(...items: string[]): string {
  return items.filter((i) => i !== "").join(" ");
}
