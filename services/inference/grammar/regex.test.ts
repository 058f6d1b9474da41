// Regex -> GBNF: llama.cpp's matcher agrees with a full-match ECMAScript RegExp on strings drawn
// from each pattern (random walks of its syntax tree) and on random strings, in raw text and inside
// JSON strings (JSON Schema `pattern`). Also the choice and json_object grammars.
import type { Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { choiceToGbnf, jsonObjectGbnf } from "./choice.js";
import { jsonSchemaToGbnf } from "./json-schema.js";
import { parseRegex, regexRule, regexToGbnf, UnsupportedRegexError, type RegexNode } from "./regex.js";
import { grammarAccepts } from "./test-support.js";
import { loadLlama } from "../engine/llama/binary.js";
import { Prng } from "../../core/prng.js";

let llama: Llama;
beforeAll(async () => {
  llama = await loadLlama();
});
afterAll(async () => {
  await llama?.dispose();
});

/** A random string the regex matches (preferring printable ASCII members of each set). */
function walk(node: RegexNode, rng: () => number): string {
  switch (node.kind) {
    case "start":
    case "end":
      return "";
    case "seq":
      return node.items.map((n) => walk(n, rng)).join("");
    case "alt":
      return walk(node.options[Math.floor(rng() * node.options.length)] as RegexNode, rng);
    case "repeat": {
      const max = node.max ?? node.min + 3;
      const count = node.min + Math.floor(rng() * (max - node.min + 1));
      return Array.from({ length: count }, () => walk(node.node, rng)).join("");
    }
    case "set": {
      const printable = node.set.intervals.flatMap(([a, b]) => {
        const lo = Math.max(a, 0x20);
        const hi = Math.min(b, 0x7e);
        return lo <= hi ? [[lo, hi] as const] : [];
      });
      const pool = printable.length > 0 && rng() < 0.9 ? printable : node.set.intervals.filter(([a]) => a < 0xd800 || a > 0xdfff);
      const [a, b] = pool[Math.floor(rng() * pool.length)] as readonly [number, number];
      let c = a + Math.floor(rng() * Math.min(b - a + 1, 2000));
      if (c >= 0xd800 && c <= 0xdfff) c = 0x41;
      return String.fromCodePoint(c);
    }
  }
}

function randomString(alphabet: string[], rng: () => number): string {
  const length = Math.floor(rng() * 9);
  return Array.from({ length }, () => alphabet[Math.floor(rng() * alphabet.length)]).join("");
}

const PATTERNS = [
  "^[A-Z]{2,4}-\\d{2,3}(\\.[a-z]{1,3})?$",
  "(?:foo|ba[rz])_\\w{1,4}",
  "a*b+c?",
  "[^abc]{2}x|y{2,}",
  "\\s\\S\\d\\D\\w\\W",
  "(ab|a)(bc|c)?",
  "[\\-\\]\\\\^]+",
  "\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\/",
  "x{2}y{0,1}z{1,}",
  "[a-c]{0,3}?d",
  "é+ü?[α-ω]",
  "\\u0041\\x42\\u{1F600}",
  "(?<year>\\d{4})-(?<m>0[1-9]|1[0-2])",
  '^"[^"\\\\]{0,3}"$',
  ".{1,3}",
  "(|a)b",
];

/** Uniform [0, 1) numbers from the project's seeded generator. */
function seededUniform(seed: number): () => number {
  const prng = new Prng(seed, "grammar-tests");
  return () => prng.uniform();
}

describe("regex", () => {
  it.each(PATTERNS)("%s: raw grammar agrees with RegExp", async (pattern) => {
    const grammar = await llama.createGrammar({ grammar: regexToGbnf(pattern) });
    const regex = new RegExp(`^(?:${pattern})$`, "u");
    const node = parseRegex(pattern);
    const rng = seededUniform(pattern.length * 7919);
    const alphabet = [...new Set([...pattern, "a", "Z", "0", "9", " ", "_", "-", ".", "\n", "\t", "é", '"', "\\"])];
    const positives = Array.from({ length: 25 }, () => walk(node, rng));
    for (const text of positives) {
      expect(regex.test(text), `walk produced a non-match ${JSON.stringify(text)}`).toBe(true);
      expect(grammarAccepts(grammar, text), `accepts ${JSON.stringify(text)}`).toBe(true);
    }
    for (let i = 0; i < 40; i++) {
      const text = randomString(alphabet, rng);
      expect(grammarAccepts(grammar, text), `${JSON.stringify(text)}`).toBe(regex.test(text));
    }
  });

  it.each(PATTERNS)("%s: JSON-string grammar agrees with RegExp on the decoded string", async (pattern) => {
    const grammar = await llama.createGrammar({ grammar: jsonSchemaToGbnf({ type: "string", pattern }) });
    const regex = new RegExp(`^(?:${pattern})$`, "u");
    const node = parseRegex(pattern);
    const rng = seededUniform(pattern.length * 104729);
    const alphabet = [...new Set([...pattern, "a", "0", " ", "\n", "\t", '"', "\\", "/", "é"])];
    const texts = [...Array.from({ length: 20 }, () => walk(node, rng)), ...Array.from({ length: 30 }, () => randomString(alphabet, rng))];
    for (const text of texts) {
      expect(grammarAccepts(grammar, JSON.stringify(text)), JSON.stringify(text)).toBe(regex.test(text));
    }
  });

  it("writes control characters as JSON escapes and never as raw characters", async () => {
    const grammar = await llama.createGrammar({ grammar: jsonSchemaToGbnf({ type: "string", pattern: "^[\\x00-\\x1f]$" }) });
    expect(grammarAccepts(grammar, '"\\n"')).toBe(true);
    expect(grammarAccepts(grammar, '"\\u0001"')).toBe(true);
    expect(grammarAccepts(grammar, '"\n"')).toBe(false);
    expect(grammarAccepts(grammar, '"a"')).toBe(false);
  });

  it("embeds with regexRule under a given name", async () => {
    const rules = regexRule("[a-z]{2}", "id-part");
    expect(rules.startsWith("id-part ::= ")).toBe(true);
    const grammar = await llama.createGrammar({ grammar: `root ::= "<" id-part ">"\n${rules}` });
    expect(grammarAccepts(grammar, "<ab>")).toBe(true);
    expect(grammarAccepts(grammar, "<abc>")).toBe(false);
    const raw = regexRule('"+', "quotes", { encoding: "raw" });
    const rawGrammar = await llama.createGrammar({ grammar: `root ::= quotes\n${raw}` });
    expect(grammarAccepts(rawGrammar, '"""')).toBe(true);
    expect(() => regexRule("a", "bad_name")).toThrow(/rule name/);
  });

  it("handles repetition counts beyond llama.cpp's limit", async () => {
    const grammar = await llama.createGrammar({ grammar: regexToGbnf("(ab){2100,2500}") });
    expect(grammarAccepts(grammar, "ab".repeat(2100))).toBe(true);
    expect(grammarAccepts(grammar, "ab".repeat(2500))).toBe(true);
    expect(grammarAccepts(grammar, "ab".repeat(2099))).toBe(false);
    expect(grammarAccepts(grammar, "ab".repeat(2501))).toBe(false);
  });

  const unsupported: [string, RegExp][] = [
    ["(a)\\1", /backreference \\1/],
    ["(?<x>a)\\k<x>", /backreference \\k<name>/],
    ["a(?=b)", /lookahead \(\?=/],
    ["a(?!b)", /negative lookahead/],
    ["(?<=a)b", /lookbehind \(\?<=/],
    ["(?<!a)b", /negative lookbehind/],
    ["\\bword\\b", /word boundary \\b/],
    ["\\p{L}+", /unicode property escape \\p/],
    ["(?i)abc", /group modifier \(\?i/],
    ["a^b", /anchor \^ \(not at the start\)/],
    ["a$b", /anchor \$ \(not at the end\)/],
    ["[]", /empty character class/],
    ["a**", /nothing to repeat/],
    ["(ab", /unterminated group/],
    ["[z-a]", /range out of order/],
  ];
  it.each(unsupported)("refuses %s", (pattern, message) => {
    expect(() => regexToGbnf(pattern)).toThrow(UnsupportedRegexError);
    expect(() => regexToGbnf(pattern)).toThrow(message);
  });
});

describe("choice and json_object", () => {
  it("accepts exactly the choices", async () => {
    const grammar = await llama.createGrammar({ grammar: choiceToGbnf(["yes", "no", 'say "hi"\n', "é\\"]) });
    for (const c of ["yes", "no", 'say "hi"\n', "é\\"]) expect(grammarAccepts(grammar, c)).toBe(true);
    for (const c of ["maybe", "ye", "yes ", "No"]) expect(grammarAccepts(grammar, c)).toBe(false);
    expect(() => choiceToGbnf([])).toThrow();
  });

  it("accepts any JSON object and nothing else", async () => {
    const grammar = await llama.createGrammar({ grammar: jsonObjectGbnf() });
    for (const t of ["{}", '{"a": [1, 2.5e3, "x\\n", true, null, {"b": {}}]}', '{\n  "k": -0.25\n}']) expect(grammarAccepts(grammar, t), t).toBe(true);
    for (const t of ["[]", '"x"', '{"a":}', "{'a':1}", '{"a":1,}']) expect(grammarAccepts(grammar, t), t).toBe(false);
    const compact = await llama.createGrammar({ grammar: jsonObjectGbnf({ disableAnyWhitespace: true }) });
    expect(grammarAccepts(compact, '{"a":1}')).toBe(true);
    expect(grammarAccepts(compact, '{"a": 1}')).toBe(false);
  });
});
