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

describe("structural tags", () => {
  const weather = {
    type: "object",
    properties: { city: { type: "string", minLength: 1, maxLength: 8 }, unit: { enum: ["celsius", "fahrenheit"] } },
    required: ["city", "unit"],
  };
  const time = { type: "object", properties: { zone: { type: "string", pattern: "^[A-Z]{3}$" } }, required: ["zone"] };
  const tag = {
    structures: [
      { begin: "<function=get_weather>", schema: weather, end: "</function>" },
      { begin: "<function=get_time>", schema: time, end: "</function>" },
    ],
    triggers: ["<function="],
  };
  /** Every tag in `text`: each trigger must start a whole tag whose JSON its schema accepts. */
  const tagsIn = (text: string) => {
    const validators: Record<string, ReturnType<Ajv["compile"]>> = { get_weather: new Ajv({ strict: false }).compile(weather), get_time: new Ajv({ strict: false }).compile(time) };
    const found: { name: string; value: unknown }[] = [];
    for (let at = text.indexOf("<function="); at >= 0; at = text.indexOf("<function=", at + 1)) {
      const match = /^<function=(get_weather|get_time)>([\s\S]*?)<\/function>/.exec(text.slice(at));
      expect(match, `a whole tag at ${at} in ${JSON.stringify(text)}`).not.toBeNull();
      const [, name, json] = match as RegExpExecArray;
      const value: unknown = JSON.parse(json as string);
      const validate = validators[name as string] as ReturnType<Ajv["compile"]>;
      expect(validate(value), `${json}\n${JSON.stringify(validate.errors)}`).toBe(true);
      found.push({ name: name as string, value });
    }
    return found;
  };
  const continuing = (prefix: string): OpenAI.ChatCompletionMessageParam[] => [
    { role: "user", content: "What is the weather in Paris?" },
    { role: "assistant", content: prefix },
  ];

  it("forces a whole tag after a continued message ending in the trigger (structured_outputs, 20 seeded samples)", async () => {
    const prefix = "Let me check. <function=";
    for (let seed = 0; seed < 4; seed++) {
      const result = await create({
        seed,
        n: 5,
        max_tokens: 250,
        messages: continuing(prefix),
        continue_final_message: true,
        add_generation_prompt: false,
        structured_outputs: { structural_tag: JSON.stringify(tag) },
      });
      for (const choice of result.choices) {
        expect(tagsIn(prefix + (choice.message.content ?? "")).length).toBeGreaterThanOrEqual(1);
      }
    }
  });

  it("takes vLLM's response_format form and xgrammar's format, and starts part-way through a begin string", async () => {
    const partial = await create({
      seed: 5,
      n: 3,
      max_tokens: 200,
      messages: continuing("<function=get_t"),
      continue_final_message: true,
      add_generation_prompt: false,
      response_format: { type: "structural_tag", ...tag },
    });
    for (const choice of partial.choices) {
      expect(choice.message.content?.startsWith("ime>")).toBe(true);
      expect(tagsIn(`<function=get_t${choice.message.content ?? ""}`)[0]?.name).toBe("get_time");
    }
    // at_least_one + stop_after_first: the output is exactly one tag.
    const format = {
      type: "triggered_tags",
      triggers: ["<function="],
      tags: [{ type: "tag", begin: "<function=get_weather>", content: { type: "json_schema", json_schema: weather }, end: "</function>" }],
      at_least_one: true,
      stop_after_first: true,
    };
    const exact = await create({ seed: 1, n: 4, max_tokens: 200, response_format: { type: "structural_tag", format } });
    for (const choice of exact.choices) {
      expect(choice.finish_reason).toBe("stop");
      expect(choice.message.content).toMatch(/^<function=get_weather>[\s\S]*<\/function>$/);
      expect(tagsIn(choice.message.content ?? "")).toHaveLength(1);
    }
  });

  it("refuses malformed tags and continued messages it cannot resume, naming them", async () => {
    const refused = async (body: Extra, pattern: RegExp) => {
      const res = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, max_tokens: 5, ...body } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect((res.body as { error: { message: string } }).error.message).toMatch(pattern);
    };
    await refused({ structured_outputs: { structural_tag: "{not json" } }, /structured_outputs\.structural_tag: the structural tag is not valid JSON/);
    await refused({ structured_outputs: { structural_tag: JSON.stringify({ ...tag, triggers: ["<call="] }) } }, /structures\[0\]\.begin must start with one of the triggers/);
    await refused({ response_format: { type: "structural_tag" } }, /response_format: type "structural_tag" needs "structures" and "triggers"/);
    await refused({ response_format: { type: "structural_tag", format: { type: "regex", pattern: "a+" } } }, /unsupported structural tag format type "regex"/);
    await refused(
      { messages: continuing('<function=get_weather>{"city"'), continue_final_message: true, add_generation_prompt: false, response_format: { type: "structural_tag", ...tag } },
      /ends inside a structural tag's content/,
    );
  });
});
