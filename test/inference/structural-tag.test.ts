// Structural tags on a real model (SmolLM2-135M-Instruct), through the `openai` SDK with vLLM's
// fields: the assistant message is continued from the tag's trigger, so the grammar makes the model
// finish the tag it started; the tagged JSON validates against its schema (ajv, independently of
// the grammar compiler), and the text around it stays free.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import Ajv from "ajv";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const SMOLLM2 = resolve(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
const present = existsSync(SMOLLM2);

const weather = {
  type: "object",
  properties: { city: { type: "string", minLength: 1, maxLength: 24 }, unit: { enum: ["celsius", "fahrenheit"] } },
  required: ["city", "unit"],
};
const structuralTag = { structures: [{ begin: "<function=get_weather>", schema: weather, end: "</function>" }], triggers: ["<function="] };
const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: "system", content: "To call a tool, write <function=NAME>{JSON arguments}</function>. Tool get_weather takes city and unit." },
  { role: "user", content: "What is the weather in Paris, in celsius?" },
  { role: "assistant", content: "<function=" },
];

describe.skipIf(!present)("structural tags on SmolLM2", () => {
  let server: IsolatedServer;
  let client: OpenAI;

  beforeAll(async () => {
    server = await startIsolatedServer({ name: "structural-tag", entity: "tags", env: { BASE_MODELS: `smollm2=${SMOLLM2}` } });
    client = new OpenAI({ baseURL: `${server.server.url}/v1`, apiKey: server.key, maxRetries: 0 });
  }, 240_000);
  afterAll(async () => {
    await server?.stop();
  });

  /** The tag the reply completes (the message began with the trigger), validated against its schema. */
  const completedTag = (content: string) => {
    const match = /^get_weather>([\s\S]*?)<\/function>/.exec(content);
    expect(match, content).not.toBeNull();
    const value: unknown = JSON.parse((match as RegExpExecArray)[1] as string);
    const validate = new Ajv({ strict: false }).compile(weather);
    expect(validate(value), `${content}\n${JSON.stringify(validate.errors)}`).toBe(true);
    return value as { city: string; unit: string };
  };

  it("makes the model finish the tag its continued message started, with arguments its schema accepts", async () => {
    const params = { model: "smollm2", messages, continue_final_message: true, add_generation_prompt: false, max_tokens: 60 };
    const greedy = await client.chat.completions.create({ ...params, temperature: 0, structured_outputs: { structural_tag: JSON.stringify(structuralTag) } } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const args = completedTag(greedy.choices[0]?.message.content ?? "");
    expect(args.city).toMatch(/paris/i);
    // Sampled, through response_format: every sample completes a valid tag.
    const sampled = await client.chat.completions.create({ ...params, temperature: 0.9, seed: 7, n: 4, response_format: { type: "structural_tag", ...structuralTag } } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    for (const choice of sampled.choices) completedTag(choice.message.content ?? "");
  }, 120_000);

  it("leaves the model free where the message does not reach the trigger", async () => {
    const free = await client.chat.completions.create({
      model: "smollm2",
      messages: messages.slice(0, 2),
      temperature: 0,
      max_tokens: 40,
      structured_outputs: { structural_tag: JSON.stringify(structuralTag) },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const plain = await client.chat.completions.create({ model: "smollm2", messages: messages.slice(0, 2), temperature: 0, max_tokens: 40 });
    // The greedy reply writes no trigger, so the constraint never engages and the reply is the unconstrained one.
    expect(plain.choices[0]?.message.content).not.toContain("<function=");
    expect(free.choices[0]?.message.content).toBe(plain.choices[0]?.message.content);
  }, 120_000);
});
