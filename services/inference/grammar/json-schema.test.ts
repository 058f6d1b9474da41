// JSON Schema -> GBNF: every grammar must parse in llama.cpp, and llama.cpp's own matcher must
// accept and reject the documents we expect (exhaustively around numeric bounds, against an
// independent BigInt reference).
import type { LlamaGrammar, Llama } from "node-llama-cpp";
import type { JsonValue } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonSchemaToGbnf, UnsupportedSchemaError, type JsonSchemaGbnfOptions } from "./json-schema.js";
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

async function compile(schema: JsonValue, options: JsonSchemaGbnfOptions = {}): Promise<LlamaGrammar> {
  return llama.createGrammar({ grammar: jsonSchemaToGbnf(schema, options) });
}

async function expectLanguage(schema: JsonValue, accept: string[], reject: string[], options: JsonSchemaGbnfOptions = {}): Promise<void> {
  const grammar = await compile(schema, options);
  for (const text of accept) expect(grammarAccepts(grammar, text), `should accept ${text}`).toBe(true);
  for (const text of reject) expect(grammarAccepts(grammar, text), `should reject ${text}`).toBe(false);
}

/** Uniform [0, 1) numbers from the project's seeded generator. */
function seededUniform(seed: number): () => number {
  const prng = new Prng(seed, "grammar-tests");
  return () => prng.uniform();
}

describe("objects", () => {
  it("keeps the declared order, lets optional properties go and refuses unknown ones", async () => {
    await expectLanguage(
      { type: "object", properties: { a: { type: "string", maxLength: 3 }, b: { type: "boolean" }, c: { type: "null" } }, required: ["b"], additionalProperties: false },
      ['{"b":true}', '{"a":"xy","b":false}', '{ "a" : "x",\n  "b": true, "c": null }', '{"b":true,"c":null}'],
      ["{}", '{"a":"xyzw","b":true}', '{"b":true,"d":1}', '{"c":null,"b":true}', '{"b":true,}', '{"a":"x",,"b":true}'],
    );
  });

  it("allows additional properties by default, never repeating a declared name", async () => {
    await expectLanguage(
      { type: "object", properties: { ab: { type: "integer" } } },
      ["{}", '{"ab":1}', '{"ab":1,"a":2}', '{"abc":"x"}', '{"x":[1,{"y":null}]}', '{"a":1}', '{"":0}'],
      ['{"ab":"x"}', '{"ab":1,"ab":2}', '{"a":1,"ab":2}'],
    );
  });

  it("validates additional properties against an additionalProperties schema", async () => {
    await expectLanguage(
      { type: "object", properties: { id: { const: 1 } }, required: ["id"], additionalProperties: { type: "integer", minimum: 0 } },
      ['{"id":1}', '{"id":1,"n":5}', '{"id":1,"n":5,"m":0}'],
      ['{"id":1,"n":-5}', '{"id":1,"n":"5"}', '{"n":5}'],
    );
  });

  it("reads an absent additionalProperties as false with disableAdditionalProperties", async () => {
    const schema = { type: "object", properties: { a: { type: "integer" } } };
    await expectLanguage(schema, ['{"a":1}', "{}"], ['{"a":1,"b":2}'], { disableAdditionalProperties: true });
    await expectLanguage(schema, ['{"a":1,"b":2}'], [], {});
    // explicit true still wins, and a bare object type stays any object
    await expectLanguage({ ...schema, additionalProperties: true }, ['{"a":1,"b":2}'], [], { disableAdditionalProperties: true });
    await expectLanguage({ type: "object" }, ['{"z":[]}'], [], { disableAdditionalProperties: true });
  });

  it("requires a name listed in required but not in properties", async () => {
    await expectLanguage({ type: "object", properties: { a: { type: "integer" } }, required: ["a", "b"] }, ['{"a":1,"b":"anything"}', '{"a":1,"b":2,"c":3}'], ['{"a":1}', '{"b":1,"a":1}']);
    await expectLanguage({ type: "object", required: ["b"], additionalProperties: { type: "integer" } }, ['{"b":2}'], ['{"b":"x"}', "{}"]);
    expect(() => jsonSchemaToGbnf({ type: "object", required: ["b"], additionalProperties: false })).toThrow(/never be satisfied/);
  });

  it("escapes property names", async () => {
    await expectLanguage({ type: "object", properties: { 'q"\\\n': { type: "integer" } }, required: ['q"\\\n'], additionalProperties: false }, ['{"q\\"\\\\\\n":1}'], ['{"q\\"\\\\n":1}']);
  });
});

describe("arrays", () => {
  it("applies prefixItems, items and the item count bounds", async () => {
    await expectLanguage(
      { type: "array", prefixItems: [{ type: "integer" }, { const: "x" }], items: { type: "boolean" }, minItems: 1, maxItems: 4 },
      ["[1]", '[1,"x"]', '[1, "x", true, false]'],
      ["[]", '["x"]', '[1,"x",true,false,true]', "[1,2]", '[1,"x",1]'],
    );
  });

  it("reads draft-07 tuple items with additionalItems", async () => {
    await expectLanguage({ type: "array", items: [{ type: "integer" }, { type: "string", maxLength: 1 }], additionalItems: false }, ["[]", "[1]", '[1,"a"]'], ['[1,"a",2]', '["a"]']);
  });

  it("counts items", async () => {
    await expectLanguage({ type: "array", items: { enum: [0, 1] }, minItems: 2, maxItems: 3 }, ["[0,1]", "[1,1,1]", "[ 0 , 1 ]"], ["[]", "[0]", "[0,0,0,0]"]);
    await expectLanguage({ type: "array", items: { type: "null" }, maxItems: 0 }, ["[]"], ["[null]"]);
  });
});

describe("strings", () => {
  it("counts code points for minLength / maxLength, escapes included", async () => {
    await expectLanguage({ type: "string", minLength: 2, maxLength: 3 }, ['"ab"', '"a\\"c"', '"é€😀"', '"\\u00e9x"', '"\\n\\t"'], ['"a"', '"abcd"', '"a"b"', '"\\ud83d\\ude00x"', '"\\x"']);
  });

  it("splits lengths beyond llama.cpp's 2000 repetition limit into chunks", async () => {
    await expectLanguage({ type: "string", minLength: 2500, maxLength: 4100 }, [`"${"a".repeat(2500)}"`, `"${"a".repeat(4100)}"`, `"${"b".repeat(3333)}"`], [`"${"a".repeat(2499)}"`, `"${"a".repeat(4101)}"`]);
  });

  it("matches pattern against the whole decoded string", async () => {
    await expectLanguage({ type: "string", pattern: "^[A-Z]{2}-\\d{3}$" }, ['"AB-123"'], ['"AB-1234"', '"xAB-123"', '"ab-123"']);
    // an unanchored pattern is still matched in full (vLLM's reading; a subset of JSON Schema's)
    await expectLanguage({ type: "string", pattern: "b+" }, ['"bbb"'], ['"abc"']);
    // the decoded characters are what the regex sees: quote, backslash, newline
    await expectLanguage({ type: "string", pattern: '^a"\\\\.\\n$' }, ['"a\\"\\\\x\\n"'], ['"a\\"\\\\x\\u000a"', '"a"\\\\x\\n"']);
  });

  it("accepts a length bound the pattern implies and refuses one it does not", async () => {
    await expectLanguage({ type: "string", pattern: "^[a-z]{2,4}$", maxLength: 4, minLength: 1 }, ['"abcd"'], ['"abcde"']);
    expect(() => jsonSchemaToGbnf({ type: "string", pattern: "^[a-z]+$", maxLength: 4 })).toThrow(/"maxLength" at #/);
  });

  it("writes the formats", async () => {
    await expectLanguage({ type: "string", format: "date" }, ['"2024-02-28"', '"1999-12-31"', '"2023-04-30"'], ['"2024-02-30"', '"2024-04-31"', '"2024-13-01"', '"2024-00-10"', '"24-01-01"']);
    await expectLanguage({ type: "string", format: "time" }, ['"23:59:59Z"', '"00:00:00.123+05:30"'], ['"24:00:00Z"', '"12:00:00"', '"12:60:00Z"']);
    await expectLanguage({ type: "string", format: "date-time" }, ['"2024-01-31T23:59:59.5Z"', '"2024-06-01T00:00:00-07:00"'], ['"2024-01-31 23:59:59Z"', '"2024-01-31T23:59:59"']);
    await expectLanguage({ type: "string", format: "uuid" }, ['"123e4567-e89b-12d3-a456-426614174000"'], ['"123e4567e89b12d3a456426614174000"', '"123E4567-E89B-12D3-A456-426614174000x"']);
    await expectLanguage({ type: "string", format: "email" }, ['"a.b+c@ex-ample.co.uk"', '"x@y.io"'], ['"a@b"', '"a..b@c.de"', '"@c.de"', '"a@-c.de"']);
    await expectLanguage({ type: "string", format: "ipv4" }, ['"192.168.0.255"', '"0.0.0.0"'], ['"256.1.1.1"', '"01.1.1.1"', '"1.1.1"']);
  });
});

describe("enum, const, anyOf, oneOf, allOf, $ref", () => {
  it("writes enum and const values exactly", async () => {
    await expectLanguage({ enum: ["a", 1, null, { x: [1] }, 'q"'] }, ['"a"', "1", "null", '{"x":[1]}', '"q\\""'], ['"b"', "1.0", '{"x": [1]}']);
    await expectLanguage({ const: "only" }, ['"only"'], ['"Only"']);
    // sibling type / bounds / pattern filter the listed values
    await expectLanguage({ type: "integer", enum: [1, 2.5, "3", 40], maximum: 10 }, ["1"], ["2.5", '"3"', "40"]);
  });

  it("alternates anyOf / oneOf branches, merging sibling keywords into each", async () => {
    await expectLanguage({ anyOf: [{ type: "string", pattern: "^[a-c]{2}$" }, { type: "integer", minimum: 5, maximum: 6 }] }, ['"ab"', "5", "6"], ['"abc"', "7"]);
    await expectLanguage(
      { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, additionalProperties: false, oneOf: [{ required: ["a"] }, { required: ["b"] }] },
      ['{"a":1}', '{"b":1}', '{"a":1,"b":2}'],
      ["{}"],
    );
    // a branch the siblings make impossible is dropped
    await expectLanguage({ type: "string", anyOf: [{ type: "integer" }, { maxLength: 1 }] }, ['"x"'], ["1", '"xy"']);
  });

  it("merges allOf members, additionalProperties of each applying to the others' names", async () => {
    await expectLanguage(
      { allOf: [{ type: "object", properties: { a: { type: "integer" } }, required: ["a"] }, { properties: { b: { type: "string" } }, required: ["b"] }] },
      ['{"a":1,"b":"x"}', '{"a":1,"b":"x","c":2}'],
      ['{"a":1}', '{"a":"1","b":"x"}'],
    );
    await expectLanguage(
      { allOf: [{ properties: { a: { type: "integer", minimum: 0 } }, additionalProperties: false }, { properties: { a: { maximum: 3 }, b: { type: "string" } } }], type: "object" },
      ['{"a":3}', "{}"],
      ['{"a":4}', '{"a":-1}', '{"b":"x"}'],
    );
    expect(() => jsonSchemaToGbnf({ allOf: [{ type: "string" }, { type: "integer" }] })).toThrow(/can never be satisfied/);
  });

  it("resolves $ref, including recursive definitions", async () => {
    await expectLanguage(
      {
        $defs: { node: { type: "object", properties: { v: { type: "integer", minimum: 0, maximum: 9 }, next: { anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }] } }, required: ["v", "next"], additionalProperties: false } },
        $ref: "#/$defs/node",
      },
      ['{"v":1,"next":null}', '{"v":1,"next":{"v":2,"next":{"v":3,"next":null}}}'],
      ['{"v":1}', '{"v":10,"next":null}'],
    );
    await expectLanguage({ definitions: { leaf: { type: "boolean" } }, type: "array", items: { anyOf: [{ $ref: "#/definitions/leaf" }, { $ref: "#" }] } }, ["[]", "[true,[false,[]]]"], ["[1]"]);
    // $ref with sibling constraints is merged
    await expectLanguage({ $defs: { s: { type: "string" } }, $ref: "#/$defs/s", maxLength: 2 }, ['"ab"'], ['"abc"']);
  });

  it("refuses left-recursive references", () => {
    const schema: JsonValue = { $defs: { a: { anyOf: [{ $ref: "#/$defs/b" }, { type: "null" }] }, b: { anyOf: [{ $ref: "#/$defs/a" }, { type: "integer" }] } }, $ref: "#/$defs/a" };
    expect(() => jsonSchemaToGbnf(schema)).toThrow(/left-recursive/);
    const hidden: JsonValue = { $defs: { r: { anyOf: [{ type: "array", items: { $ref: "#/$defs/m" } }, { $ref: "#/$defs/m" }] }, m: { anyOf: [{ $ref: "#/$defs/r" }, { const: 1 }] } }, $ref: "#/$defs/r" };
    expect(() => jsonSchemaToGbnf(hidden)).toThrow(/left-recursive/);
  });

  it("treats true, {} and annotation-only schemas as any value", async () => {
    const schemas: JsonValue[] = [true, {}, { description: "anything", title: "t", examples: [1] }];
    for (const schema of schemas) {
      await expectLanguage(schema, ["1", '"x"', "[1,{}]", '{"a":null}', "true", "null", "-0.5e3"], ["", "tru", "{"]);
    }
  });

  it("handles type lists", async () => {
    await expectLanguage({ type: ["string", "null"], maxLength: 1 }, ['"a"', "null"], ['"ab"', "1"]);
  });
});

describe("whitespace", () => {
  const schema = { type: "array", items: { type: "integer" } };

  it("allows bounded whitespace by default", async () => {
    await expectLanguage(schema, ["[1, 2]", "[\n  1,\n  2\n]", "[ ]"], [`[${" ".repeat(2)}1]`, `[\n${" ".repeat(21)}1]`, "[1,\n\n\n2]"]);
  });

  it("allows none with disableAnyWhitespace", async () => {
    await expectLanguage(schema, ["[1,2]", "[]"], ["[1, 2]", "[ ]"], { disableAnyWhitespace: true });
  });

  it("compiles whitespacePattern", async () => {
    await expectLanguage(schema, ["[1, 2]", "[ 1 ]", "[1,2]"], ["[1,  2]", "[\n1]"], { whitespacePattern: "[ ]?" });
    expect(() => jsonSchemaToGbnf(schema, { whitespacePattern: "(?=x)" })).toThrow(/whitespacePattern/);
  });
});

// ---- numbers: exact bounds, checked against a BigInt reference --------------------------------

const SCALE = 40;
function scaled(text: string): bigint {
  const negative = text.startsWith("-");
  const [int = "", frac = ""] = text.replace("-", "").split(".");
  const value = BigInt(int + frac.padEnd(SCALE, "0"));
  return negative ? -value : value;
}

interface Bounds {
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

/** What the grammar should accept: canonical JSON, at most 15 digits, no "-0", within the bounds. */
function reference(text: string, bounds: Bounds, integer: boolean): boolean {
  if (!/^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(text)) return false;
  if (integer && text.includes(".")) return false;
  if (text.replace(/[-.]/g, "").length > 15) return false;
  const value = scaled(text);
  if (text.startsWith("-") && value === 0n) return false;
  const at = (n: number) => scaled(plain(n));
  if (bounds.minimum !== undefined && value < at(bounds.minimum)) return false;
  if (bounds.exclusiveMinimum !== undefined && value <= at(bounds.exclusiveMinimum)) return false;
  if (bounds.maximum !== undefined && value > at(bounds.maximum)) return false;
  if (bounds.exclusiveMaximum !== undefined && value >= at(bounds.exclusiveMaximum)) return false;
  return true;
}

/** A number's shortest round-trip decimal, without exponent. */
function plain(n: number): string {
  const text = String(n);
  if (!text.includes("e")) return text;
  const [mantissa = "", exponent = "0"] = text.split("e");
  const negative = mantissa.startsWith("-");
  const [int = "", frac = ""] = mantissa.replace("-", "").split(".");
  const exp = Number(exponent);
  const digits = int + frac;
  const point = int.length + exp;
  const body = point <= 0 ? `0.${"0".repeat(-point)}${digits}` : point >= digits.length ? digits + "0".repeat(point - digits.length) : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return (negative ? "-" : "") + body.replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
}

function candidates(bounds: Bounds, seed: number, count: number): string[] {
  const rng = seededUniform(seed);
  const anchors = Object.values(bounds).filter((v): v is number => typeof v === "number");
  const out = new Set<string>(["0", "-0", "0.0", "1", "-1", "999999999999999", "1000000000000000", "-999999999999999", "0.00000000000001", "0.000000000000001"]);
  for (const a of anchors) {
    const p = plain(a);
    out.add(p);
    out.add(p.includes(".") ? `${p}0` : `${p}.0`);
    out.add(p.includes(".") ? `${p}000000000000000001` : `${p}.000000000000001`);
  }
  while (out.size < count) {
    const anchor = anchors.length > 0 && rng() < 0.8 ? (anchors[Math.floor(rng() * anchors.length)] as number) : (rng() - 0.5) * 2000;
    const spread = [0, 1e-13, 1e-9, 1e-4, 0.01, 0.5, 1, 7, 100][Math.floor(rng() * 9)] as number;
    const value = anchor + (rng() - 0.5) * 2 * spread;
    out.add(value.toFixed(Math.floor(rng() * 17)));
  }
  return [...out];
}

describe("numeric bounds", () => {
  const numberCases: Bounds[] = [
    { minimum: -1.5, exclusiveMaximum: 2.25 },
    { exclusiveMinimum: 0, maximum: 1 },
    { minimum: 0.001, maximum: 0.0015 },
    { exclusiveMinimum: -100.125, exclusiveMaximum: -99.5 },
    { minimum: 1e-7, maximum: 1e-6 },
    { maximum: 12345.678 },
    { exclusiveMinimum: 99.99 },
    { minimum: 3, maximum: 3 },
    { minimum: -0.5, maximum: 0.5, exclusiveMaximum: 0.25 },
  ];
  it.each(numberCases)("number %j is exact", async (bounds) => {
    const grammar = await compile({ type: "number", ...bounds });
    const verdicts = candidates(bounds, 17, 160).map((text) => {
      const expected = reference(text, bounds, false);
      expect(grammarAccepts(grammar, text), `${text} within ${JSON.stringify(bounds)}`).toBe(expected);
      return expected;
    });
    expect(verdicts.filter(Boolean).length).toBeGreaterThanOrEqual(5);
    expect(verdicts.filter((v) => !v).length).toBeGreaterThanOrEqual(20);
  });

  const integerCases: Bounds[] = [
    { minimum: -12, maximum: 345 },
    { exclusiveMinimum: 9.5, exclusiveMaximum: 1000 },
    { minimum: 0 },
    { maximum: -7 },
    { minimum: 123456, maximum: 123999 },
    { exclusiveMinimum: -3, exclusiveMaximum: 3 },
    {},
  ];
  it.each(integerCases)("integer %j is exact", async (bounds) => {
    const grammar = await compile({ type: "integer", ...bounds });
    const ints = candidates(bounds, 5, 200).map((t) => t.split(".")[0] as string);
    const verdicts = [...new Set(ints), "5.0", "007", "1e3"].map((text) => {
      const expected = reference(text, bounds, true);
      expect(grammarAccepts(grammar, text), `${text} within ${JSON.stringify(bounds)}`).toBe(expected);
      return expected;
    });
    expect(verdicts.filter(Boolean).length).toBeGreaterThanOrEqual(3);
    expect(verdicts.filter((v) => !v).length).toBeGreaterThanOrEqual(3);
  });

  it("refuses bounds no number satisfies", () => {
    expect(() => jsonSchemaToGbnf({ type: "integer", minimum: 5, maximum: 4 })).toThrow(UnsupportedSchemaError);
    expect(() => jsonSchemaToGbnf({ type: "integer", exclusiveMinimum: 4, exclusiveMaximum: 5 })).toThrow(/never be satisfied/);
    expect(() => jsonSchemaToGbnf({ type: "number", minimum: 1e16 })).toThrow(/"minimum"/);
  });

  it("reads draft-4 boolean exclusive bounds", async () => {
    await expectLanguage({ type: "integer", minimum: 1, exclusiveMinimum: true, maximum: 3, exclusiveMaximum: true }, ["2"], ["1", "3"]);
  });
});

describe("unsupported keywords", () => {
  const cases: [JsonValue, string, string][] = [
    [{ type: "object", properties: { a: { not: { type: "string" } } } }, "not", "#/properties/a"],
    [{ if: { type: "string" }, then: { maxLength: 2 } }, "if", "#"],
    [{ type: "object", patternProperties: { "^x": {} } }, "patternProperties", "#"],
    [{ type: "object", minProperties: 1 }, "minProperties", "#"],
    [{ type: "number", multipleOf: 0.5 }, "multipleOf", "#"],
    [{ type: "array", items: { type: "integer" }, uniqueItems: true }, "uniqueItems", "#"],
    [{ type: "array", contains: { type: "integer" } }, "contains", "#"],
    [{ type: "array", items: { type: "string", format: "hostname" } }, "format", "#/items"],
    [{ $ref: "https://example.com/schema.json" }, "$ref", "#"],
    [{ $ref: "#/$defs/missing" }, "$ref", "#"],
    [{ type: "object", properties: { "a/b": { type: "string", pattern: "(?=x)x" } } }, "pattern", "#/properties/a~1b"],
    [{ anyOf: [{ type: "string" }], oneOf: [{ type: "string" }] }, "oneOf", "#"],
    [{ type: "string", format: "date", maxLength: 10 }, "format", "#"],
    [{ type: "object", nullable: true }, "nullable", "#"],
    [{ type: "integer", enum: [1], multipleOf: 1 }, "multipleOf", "#"],
    [{ $defs: { x: { type: "object", dependentRequired: { a: ["b"] } } }, $ref: "#/$defs/x" }, "dependentRequired", "#/$defs/x"],
  ];
  it.each(cases)("%j names %s at %s", (schema, keyword, path) => {
    let error: unknown;
    try {
      jsonSchemaToGbnf(schema);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UnsupportedSchemaError);
    const e = error as UnsupportedSchemaError;
    expect(e.keyword).toBe(keyword);
    expect(e.path).toBe(path);
    expect(e.message).toContain(`unsupported JSON schema keyword "${keyword}" at ${path}`);
  });

  it("names the regex construct in a refused pattern", () => {
    expect(() => jsonSchemaToGbnf({ type: "string", pattern: "(a)\\1" })).toThrow(/"pattern" at #: unsupported regex construct backreference \\1/);
  });
});
