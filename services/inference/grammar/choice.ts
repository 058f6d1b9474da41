// Grammars for a fixed list of choices and for "any JSON object" (json_object response format).
import { GrammarBuilder, alternatives, gbnfLiteral } from "./gbnf.js";
import { jsonObjectRule, whitespaceRule, type WhitespaceOptions } from "./json-primitives.js";

/** A grammar (rule `root`) accepting exactly one of `choices`, verbatim. */
export function choiceToGbnf(choices: readonly string[]): string {
  if (choices.length === 0) throw new Error("choiceToGbnf needs at least one choice");
  const options = alternatives(choices.map((c) => gbnfLiteral(c)));
  return `root ::= ${options.startsWith("(") ? options.slice(1, -1) : options}\n`;
}

/**
 * A grammar (rule `root`) accepting any JSON object: bounded whitespace between tokens by
 * default (see json-primitives.ts), none with disableAnyWhitespace, or whitespacePattern's.
 */
export function jsonObjectGbnf(options: WhitespaceOptions = {}): string {
  const b = new GrammarBuilder();
  const root = b.reserveExact("root");
  const object = jsonObjectRule(b, whitespaceRule(b, options));
  b.set(root, object);
  return b.render(root);
}
