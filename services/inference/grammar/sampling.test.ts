// Grammar-constrained sampling on the built-in tiny model (random weights, so it writes whatever
// the grammar lets through): every completion must end by the grammar forcing an end-of-generation
// token, and must parse / validate / match.
import type { JsonValue } from "@bufbuild/protobuf";
import Ajv from "ajv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { choiceToGbnf } from "./choice.js";
import { jsonSchemaToGbnf } from "./json-schema.js";
import { regexToGbnf } from "./regex.js";
import { loadTinyModel, sampleWithGrammar, type Sample, type TinyModel } from "./test-support.js";

let tiny: TinyModel;
beforeAll(async () => {
  tiny = await loadTinyModel();
});
afterAll(async () => {
  await tiny?.dispose();
});

async function sampleMany(grammarText: string, seeds: number, maxTokens: number, label: string): Promise<Sample[]> {
  const grammar = await tiny.llama.createGrammar({ grammar: grammarText });
  const started = performance.now();
  const samples: Sample[] = [];
  for (let seed = 1; seed <= seeds; seed++) samples.push(await sampleWithGrammar(tiny, grammar, seed, maxTokens));
  const ms = performance.now() - started;
  const tokens = samples.reduce((n, s) => n + s.tokens, 0);
  console.log(`[grammar sampling] ${label}: ${seeds} samples, ${tokens} tokens (max ${Math.max(...samples.map((s) => s.tokens))}) in ${ms.toFixed(0)} ms (${(ms / seeds).toFixed(1)} ms/sample)`);
  for (const s of samples) expect(s.finished, `not finished within ${maxTokens} tokens: ${JSON.stringify(s.text)}`).toBe(true);
  return samples;
}

const SCHEMA: JsonValue = {
  type: "object",
  properties: {
    id: { type: "string", pattern: "^[A-Z]{2}-\\d{3}$" },
    kind: { enum: ["alpha", "beta", "gamma"] },
    score: { type: "number", minimum: -1.5, exclusiveMaximum: 2.25 },
    count: { type: "integer", minimum: 3, maximum: 117 },
    tags: { type: "array", items: { type: "string", maxLength: 4 }, minItems: 1, maxItems: 3 },
    owner: {
      type: "object",
      properties: { name: { type: "string", minLength: 1, maxLength: 6 }, active: { type: "boolean" } },
      required: ["name"],
      additionalProperties: false,
    },
    ref: { anyOf: [{ type: "null" }, { type: "integer", exclusiveMinimum: -10, maximum: -2 }, { type: "string", pattern: "^x[0-9a-f]{1,4}$" }] },
  },
  required: ["id", "kind", "score", "tags", "owner", "ref"],
  additionalProperties: false,
};

describe("sampling under grammars", () => {
  it("stops on the end-of-generation token the grammar forces once complete", async () => {
    const [sample] = await sampleMany('root ::= "ok"', 1, 20, "literal");
    expect(sample).toEqual({ text: "ok", tokens: expect.any(Number), finished: true });
  });

  it("50 samples under a JSON schema all parse and validate", async () => {
    const validate = new Ajv({ strict: false }).compile(SCHEMA);
    const samples = await sampleMany(jsonSchemaToGbnf(SCHEMA), 50, 300, "json schema");
    const kinds = new Set<string>();
    for (const { text } of samples) {
      const value: unknown = JSON.parse(text);
      expect(validate(value), `${text}: ${JSON.stringify(validate.errors)}`).toBe(true);
      kinds.add(typeof (value as { ref: unknown }).ref);
    }
    // the anyOf branches all occur
    expect(kinds.size).toBeGreaterThanOrEqual(2);
  });

  it("formats are well-formed", async () => {
    const schema: JsonValue = {
      type: "object",
      properties: Object.fromEntries(["date", "time", "date-time", "uuid", "email"].map((f) => [f, { type: "string", format: f }])),
      required: ["date", "time", "date-time", "uuid", "email"],
      additionalProperties: false,
    };
    const samples = await sampleMany(jsonSchemaToGbnf(schema, { disableAnyWhitespace: true }), 20, 300, "formats");
    const time = /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
    const realDate = (d: string) => /^\d{4}-\d{2}-\d{2}$/.test(d) && new Date(`${d}T00:00:00Z`).toISOString().slice(0, 10) === d;
    for (const { text } of samples) {
      const v = JSON.parse(text) as Record<string, string>;
      expect(realDate(v.date ?? ""), text).toBe(true);
      expect(v.time, text).toMatch(time);
      const [date = "", t = ""] = (v["date-time"] ?? "").split("T");
      expect(realDate(date) && time.test(t), text).toBe(true);
      expect(v.uuid, text).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(v.email, text).toMatch(/^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i);
    }
  });

  it("regex outputs fully match", async () => {
    for (const pattern of ["^[A-Z]{2,4}-\\d{2,3}(\\.[a-z]{1,3})?$", "(?:foo|ba[rz])_\\w{1,4}( [^\\s]{2})?"]) {
      const regex = new RegExp(`^(?:${pattern})$`, "u");
      const samples = await sampleMany(regexToGbnf(pattern), 20, 100, `regex ${pattern}`);
      for (const { text } of samples) expect(text).toMatch(regex);
    }
  });

  it("choice outputs are members", async () => {
    const choices = ["yes", "no", "yes, definitely", 'maybe "so"\n'];
    const samples = await sampleMany(choiceToGbnf(choices), 20, 50, "choice");
    for (const { text } of samples) expect(choices).toContain(text);
  });

  it("a hand-written GBNF grammar is obeyed", async () => {
    const grammar = ['root ::= "(" expr ")"', 'expr ::= term (op term){0,3}', 'op ::= "+" | "*"', 'term ::= [1-9] [0-9]? | "x"'].join("\n");
    const samples = await sampleMany(grammar, 20, 60, "hand-written");
    for (const { text } of samples) expect(text).toMatch(/^\((?:[1-9][0-9]?|x)(?:[+*](?:[1-9][0-9]?|x)){0,3}\)$/);
  });
});
