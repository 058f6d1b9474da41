import { describe, expect, it } from "vitest";
import { JsonSyntaxError, MAX_JSON_DEPTH, parseJsonLossless } from "./json-parse.js";

const syntaxError = (text: string) => {
  try {
    parseJsonLossless(text);
  } catch (error) {
    if (error instanceof JsonSyntaxError) return { message: error.message, position: error.position };
    throw error;
  }
  throw new Error("parsed");
};

describe("request JSON", () => {
  it("parses ordinary documents as JSON.parse does", () => {
    const text = '{"a": [1, 2.5, -3e-2, "x\\"]{[", true, null], "b": {"c": "é"}}';
    expect(parseJsonLossless(text)).toEqual({ value: JSON.parse(text), nonFinite: [] });
  });

  it("keeps integers beyond 2^53 whole, and only those", () => {
    const { value } = parseJsonLossless('{"seed": 9223372036854775807, "n": 9007199254740991, "f": 1234567890123456.5, "s": "12345678901234567890"}');
    expect(value).toEqual({ seed: 9223372036854775807n, n: 9007199254740991, f: 1234567890123456.5, s: "12345678901234567890" });
    // Digits as long as you like: a 400-digit integer is still a number, not a syntax error.
    const long = "9".repeat(400);
    expect(parseJsonLossless(`[${long}]`).value).toEqual([BigInt(long)]);
  });

  it("reports numbers no double can hold, with their place", () => {
    expect(parseJsonLossless('{"config": -1e309, "x": [1, {"y": 1e400}], "ok": 1e308, "tiny": 1e-400}').nonFinite).toEqual([
      { path: ["config"], value: -Infinity },
      { path: ["x", 1, "y"], value: Infinity },
    ]);
    expect(parseJsonLossless(`{"big": ${"9".repeat(400)}}`).nonFinite).toEqual([{ path: ["big"], value: Infinity }]);
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels before parsing, saying so`, () => {
    const ok = "[".repeat(MAX_JSON_DEPTH) + "]".repeat(MAX_JSON_DEPTH);
    expect(() => parseJsonLossless(ok)).not.toThrow();
    const deep = "[".repeat(10_000) + "]".repeat(10_000);
    expect(syntaxError(deep)).toEqual({ message: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, position: MAX_JSON_DEPTH });
    // Brackets inside strings do not count.
    const quoted = `{"a": "${"[".repeat(1000)}"}`;
    expect(parseJsonLossless(quoted).value).toEqual({ a: "[".repeat(1000) });
  });

  it("reports syntax errors with a position and Python's wording", () => {
    expect(syntaxError('{"a": }')).toEqual({ message: "Expecting value", position: 6 });
    expect(syntaxError('{"a": 1,}')).toEqual({ message: "Expecting property name enclosed in double quotes", position: 8 });
    expect(syntaxError('{"a": 1} x')).toEqual({ message: "Extra data", position: 9 });
    expect(syntaxError('{"a": "b')).toEqual({ message: "Unterminated string starting at", position: 6 });
  });
});
