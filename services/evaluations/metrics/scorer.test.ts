// The metrics on outputs chosen to pass and to fail (the end-to-end suite, test/evaluations, checks
// them on a real model's outputs, which a tiny model rarely makes pass for a schema).
import { create, type JsonObject } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EvaluationItemSchema, EvaluationMetricSchema } from "../../../gen/srl/v1/evaluations_pb.js";
import { ApiError } from "../../core/errors.js";
import { MatchBudget } from "./bounded.js";
import { scorerOf, TOO_LONG } from "./scorer.js";

const item = (prompt: string, expected?: string) => create(EvaluationItemSchema, { prompt, expected });
const metric = (init: { type: string; pattern?: string; flags?: string; schema?: JsonObject; ignoreCase?: boolean }) => create(EvaluationMetricSchema, init);
const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return `${error.kind}: ${error.message}`;
    throw error;
  }
  return "accepted";
};

describe("exact_match", () => {
  it("compares trimmed text, optionally ignoring case, and names what was expected", () => {
    const items = [item("a", " Paris\n")];
    const exact = scorerOf(metric({ type: "exact_match" }), items);
    expect(exact.score("Paris ", items[0]!)).toEqual({ passed: true, reason: "" });
    expect(exact.score("paris", items[0]!)).toEqual({ passed: false, reason: "expected 'Paris'" });
    expect(scorerOf(metric({ type: "exact_match", ignoreCase: true }), items).score("PARIS", items[0]!).passed).toBe(true);
  });
  it("needs expected on every item", () => {
    expect(refusal(() => scorerOf(metric({ type: "exact_match" }), [item("a", "x"), item("b")]))).toMatch(/^bad_request: items\[1\]\.expected is required/);
  });
});

describe("regex", () => {
  it("searches the output and says which pattern found nothing", () => {
    const scorer = scorerOf(metric({ type: "regex", pattern: "\\bfour\\b", flags: "i" }), [item("a")]);
    expect(scorer.score("It is Four.", item("a"))).toEqual({ passed: true, reason: "" });
    expect(scorer.score("fourteen", item("a"))).toEqual({ passed: false, reason: "no match for /\\bfour\\b/i" });
  });
  it("refuses a pattern that does not compile and flags outside i, m, s, u", () => {
    expect(refusal(() => scorerOf(metric({ type: "regex", pattern: "(" }), []))).toMatch(/^bad_request: metric\.pattern is not a valid regular expression: Invalid regular expression/);
    expect(refusal(() => scorerOf(metric({ type: "regex", pattern: "a", flags: "g" }), []))).toBe("bad_request: metric.flags may only hold i, m, s and u, not 'g'");
    expect(refusal(() => scorerOf(metric({ type: "regex", pattern: "a", flags: "ii" }), []))).toBe("bad_request: metric.flags repeats 'i'");
    expect(refusal(() => scorerOf(metric({ type: "regex" }), []))).toBe("bad_request: metric.pattern is required for the regex metric");
  });
  it("stops a catastrophic pattern within its time limit and spends at most the evaluation's budget", () => {
    const budget = new MatchBudget(100, 250);
    const scorer = scorerOf(metric({ type: "regex", pattern: "([\\s\\S]+)+\\u0000" }), [], budget);
    const started = performance.now();
    const verdicts = Array.from({ length: 5 }, () => scorer.score("hello world, this is an output of a model", item("a")));
    expect(verdicts).toEqual(Array.from({ length: 5 }, () => ({ passed: false, reason: TOO_LONG })));
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe("json_schema", () => {
  const schema = { type: "object", properties: { answer: { type: "integer" } }, required: ["answer"] };
  it("parses the trimmed output (or one fenced block) and names the first error with its path", () => {
    const scorer = scorerOf(metric({ type: "json_schema", schema }), []);
    expect(scorer.score(' {"answer": 4}\n', item("a"))).toEqual({ passed: true, reason: "" });
    expect(scorer.score('```json\n{"answer": 4}\n```', item("a"))).toEqual({ passed: true, reason: "" });
    expect(scorer.score('{"answer": "four"}', item("a"))).toEqual({ passed: false, reason: "/answer must be integer" });
    expect(scorer.score("{}", item("a"))).toEqual({ passed: false, reason: "/ must have required property 'answer'" });
    expect(scorer.score("four", item("a")).reason).toMatch(/^not JSON: /);
  });
  it("reads draft-07 by its $schema and 2020-12 otherwise", () => {
    // An array `items` is a tuple in draft-07; 2020-12 spells it `prefixItems`.
    const tuple = { $schema: "http://json-schema.org/draft-07/schema#", type: "array", items: [{ type: "integer" }], additionalItems: false };
    expect(scorerOf(metric({ type: "json_schema", schema: tuple }), []).score("[1, 2]", item("a")).passed).toBe(false);
    expect(scorerOf(metric({ type: "json_schema", schema: tuple }), []).score("[1]", item("a")).passed).toBe(true);
    const prefix = { type: "array", prefixItems: [{ type: "integer" }], items: false };
    expect(scorerOf(metric({ type: "json_schema", schema: prefix }), []).score("[1, 2]", item("a")).passed).toBe(false);
  });
  it("refuses schemas that do not compile, remote references and other drafts, in the compiler's words", () => {
    expect(refusal(() => scorerOf(metric({ type: "json_schema", schema: { type: "nope" } }), []))).toMatch(/^bad_request: metric\.schema does not compile: schema is invalid: data\/type must be equal to one of the allowed values/);
    expect(refusal(() => scorerOf(metric({ type: "json_schema", schema: { $ref: "https://example.com/schema.json" } }), []))).toMatch(/^bad_request: metric\.schema does not compile: can't resolve reference https:\/\/example\.com\/schema\.json/);
    expect(refusal(() => scorerOf(metric({ type: "json_schema", schema: { $schema: "http://json-schema.org/draft-04/schema#" } }), []))).toMatch(/^bad_request: metric\.schema\.\$schema must be draft 2020-12/);
    expect(refusal(() => scorerOf(metric({ type: "json_schema" }), []))).toBe("bad_request: metric.schema is required for the json_schema metric");
  });
  it("bounds a schema's own pattern as a regex is", () => {
    const scorer = scorerOf(metric({ type: "json_schema", schema: { type: "string", pattern: "([\\s\\S]+)+\\u0000" } }), [], new MatchBudget(100, 1_000));
    expect(scorer.score(JSON.stringify("hello world, this is an output of a model"), item("a"))).toEqual({ passed: false, reason: TOO_LONG });
  });
});
