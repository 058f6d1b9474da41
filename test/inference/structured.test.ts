// Structured outputs through the openai SDK, enforced while sampling on the tiny model: every
// output of a JSON schema validates (checked by ajv, independently of our compiler), regex and
// choice outputs conform, a GBNF grammar is obeyed, unsupported keywords are a 400 naming them.
import { join } from "node:path";
import Ajv from "ajv";
import { getLlama, type Token } from "node-llama-cpp";
import OpenAI from "openai";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { rest } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

let client: OpenAI;
let key = "";
beforeAll(async () => {
  key = await createKey(uniqueEntity("structured"));
  client = new OpenAI({ baseURL: `${inject("baseUrl")}/v1`, apiKey: key, maxRetries: 0 });
});

const messages = [{ role: "user" as const, content: "Describe a person." }];
type Extra = Record<string, unknown>;
const create = (body: Extra) =>
  client.chat.completions.create({ model: "tiny-chat", messages, temperature: 1, ...body } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);

const schema = {
  type: "object",
  properties: {
    name: { type: "string", pattern: "^[A-Z][a-z]{1,8}$" },
    age: { type: "integer", minimum: 18, maximum: 99 },
    role: { enum: ["admin", "user", "guest"] },
    tags: { type: "array", items: { type: "string", maxLength: 6 }, maxItems: 3 },
    address: { type: "object", properties: { city: { type: "string", maxLength: 10 }, zip: { type: "string", pattern: "^[0-9]{5}$" } }, required: ["city", "zip"], additionalProperties: false },
    contact: { anyOf: [{ type: "string", maxLength: 12 }, { type: "integer", minimum: 0, maximum: 999 }] },
  },
  required: ["name", "age", "role", "tags", "address", "contact"],
  additionalProperties: false,
};

describe("structured outputs", () => {
  it("keeps 50 seeded samples inside a JSON schema (validated by ajv)", async () => {
    const validate = new Ajv({ strict: false }).compile(schema);
    const samples: string[] = [];
    for (let seed = 0; seed < 10; seed++) {
      const result = await create({ seed, n: 5, max_tokens: 300, response_format: { type: "json_schema", json_schema: { name: "person", schema, strict: true } } });
      for (const choice of result.choices) {
        expect(choice.finish_reason).toBe("stop");
        samples.push(choice.message.content ?? "");
      }
    }
    expect(samples.length).toBe(50);
    for (const text of samples) {
      const value: unknown = JSON.parse(text);
      expect(validate(value), `${text}\n${JSON.stringify(validate.errors)}`).toBe(true);
    }
    expect(new Set(samples).size).toBeGreaterThan(40);
  });

  it("reports the raw model's log-probabilities of grammar-constrained samples, whatever the temperature", async () => {
    const validate = new Ajv({ strict: false }).compile(schema);
    const sample = (temperature: number) =>
      create({ seed: 3, n: 2, temperature, max_tokens: 300, logprobs: true, top_logprobs: 2, return_token_ids: true, response_format: { type: "json_schema", json_schema: { name: "person", schema } } }) as unknown as Promise<
        OpenAI.ChatCompletion & { prompt_token_ids: number[]; choices: (OpenAI.ChatCompletion.Choice & { token_ids: number[] })[] }
      >;
    const [warm, cool] = [await sample(1), await sample(0.6)];
    const result = { prompt_token_ids: warm.prompt_token_ids, choices: [...warm.choices, ...cool.choices] };
    // Independently: the same model file, evaluated here, full logits, log-softmax by hand.
    const llama = await getLlama({ gpu: false, build: "never", progressLogs: false });
    const model = await llama.loadModel({ modelPath: join(inject("dataDir"), "models", "tiny-chat.gguf") });
    const context = await model.createContext({ threads: 1, contextSize: 1024, sequences: 1 });
    const sequence = context.getSequence();
    try {
      for (const choice of result.choices) {
        expect(choice.finish_reason).toBe("stop");
        expect(validate(JSON.parse(choice.message.content ?? "")), choice.message.content ?? "").toBe(true);
        const content = choice.logprobs?.content ?? [];
        expect(content.length).toBe(choice.token_ids.length);
        await sequence.clearHistory();
        const prompt = result.prompt_token_ids as Token[];
        const all = [...prompt, ...(choice.token_ids as Token[])];
        const outputs = await sequence.controlledEvaluate(
          all.map((token, index) => (index >= prompt.length - 1 && index < all.length - 1 ? [token, { generateNext: { logits: true } }] : token)) as Parameters<typeof sequence.controlledEvaluate>[0],
        );
        choice.token_ids.forEach((token, step) => {
          const logits = outputs[prompt.length - 1 + step]?.next.logits as Map<Token, number>;
          let max = -Infinity;
          for (const v of logits.values()) max = Math.max(max, v);
          let sum = 0;
          for (const v of logits.values()) sum += Math.exp(v - max);
          // Batched (two choices at once) and single evaluation drift apart by a few thousandths over
          // a hundred tokens; tempered or renormalised values would be off by tenths or more.
          expect(Math.abs((content[step]?.logprob as number) - ((logits.get(token as Token) as number) - max - Math.log(sum)))).toBeLessThan(0.02);
          expect(content[step]?.top_logprobs.length).toBe(2);
          expect(content[step]?.top_logprobs[0]?.logprob).toBeGreaterThanOrEqual((content[step]?.logprob as number) - 1e-6);
        });
      }
    } finally {
      await context.dispose();
      await model.dispose();
    }
  });

  it("follows regex, choice and GBNF constraints", async () => {
    const regex = "[a-c]{2,4}-[0-9]{3}";
    for (let seed = 0; seed < 5; seed++) {
      const byRegex = await create({ seed, max_tokens: 40, structured_outputs: { regex } });
      expect(byRegex.choices[0]?.message.content).toMatch(new RegExp(`^${regex}$`));
    }
    const choices = ["red", "green", "blue"];
    const picked = await create({ seed: 3, n: 6, max_tokens: 10, structured_outputs: { choice: choices } });
    for (const choice of picked.choices) expect(choices).toContain(choice.message.content);
    const grammar = 'root ::= "yes" | "no" | "maybe " [0-9]';
    const byGrammar = await create({ seed: 1, n: 4, max_tokens: 10, structured_outputs: { grammar } });
    for (const choice of byGrammar.choices) expect(choice.message.content).toMatch(/^(yes|no|maybe [0-9])$/);
    // Any JSON object: the random model rarely closes an unbounded object, so only a finished
    // one must parse; every output starts as an object.
    const anyObject = await create({ seed: 2, n: 3, max_tokens: 150, response_format: { type: "json_object" } });
    for (const choice of anyObject.choices) {
      expect(choice.message.content?.trimStart().startsWith("{")).toBe(true);
      if (choice.finish_reason === "stop") expect(typeof JSON.parse(choice.message.content ?? "")).toBe("object");
    }
  });

  it("refuses unsupported keywords by name, and falls back only where allowed", async () => {
    const unsupported = { type: "object", properties: { a: { not: { type: "string" } } } };
    const refused = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, response_format: { type: "json_schema", json_schema: { name: "x", schema: unsupported } } } });
    expect(refused.status).toBe(400);
    expect((refused.body as { error: { message: string } }).error.message).toMatch(/"not"/);
    const loose = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, max_tokens: 60, structured_outputs: { json: unsupported } } });
    expect(loose.status).toBe(200);
    expect(loose.headers.get("srl-structured-output-fallback")).toMatch(/"not"/);
    const strict = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, structured_outputs: { json: unsupported, disable_fallback: true } } });
    expect(strict.status).toBe(400);
    const badRegex = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, structured_outputs: { regex: "(a)\\1" } } });
    expect(badRegex.status).toBe(400);
    const twoAtOnce = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, structured_outputs: { regex: "a", choice: ["a"] } } });
    expect(twoAtOnce.status).toBe(400);
  });
});
