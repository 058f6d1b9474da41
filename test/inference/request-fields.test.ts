// Every field of an inference request is honoured, refused with a 400 naming it, or accepted and
// ignored as the README lists: none is dropped silently (issue 39).
import { readFileSync } from "node:fs";
import { getOption, hasOption } from "@bufbuild/protobuf";
import OpenAI from "openai";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { ChatCompletionRequestSchema, CompletionRequestSchema } from "../../gen/srl/v1/inference_pb.js";
import { CreateMessageRequestSchema } from "../../gen/srl/v1/messages_pb.js";
import { CreateResponseRequestSchema } from "../../gen/srl/v1/responses_pb.js";
import { message as messageOption } from "../../gen/srl/v1/options_pb.js";
import { createKey, uniqueEntity } from "../support/keys.js";

let client: OpenAI;
const messages = [{ role: "user" as const, content: "Say hi." }];
type Extra = Record<string, unknown>;
const chat = (body: Extra) => client.chat.completions.create({ model: "tiny-chat", messages, max_tokens: 2, ...body } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
const complete = (body: Extra) => client.completions.create({ model: "tiny-chat", prompt: "Hello", max_tokens: 2, ...body } as unknown as OpenAI.CompletionCreateParamsNonStreaming);

async function refusal(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

beforeAll(async () => {
  client = new OpenAI({ baseURL: `${inject("baseUrl")}/v1`, apiKey: await createKey(uniqueEntity("fields")), maxRetries: 0 });
});

describe("request fields", () => {
  it("refuses a key that is no field of the API, naming it, on chat and legacy completions", async () => {
    const chatError = await refusal(chat({ temprature: 0.5 }));
    expect(chatError.status).toBe(400);
    expect(chatError.message).toContain("temprature");
    expect(chatError.message).toContain("Unrecognized request argument");
    expect(chatError.param).toBe("temprature");
    const completionError = await refusal(complete({ guided_json: { type: "object" } }));
    expect(completionError.message).toContain("guided_json");
    // camelCase spellings are not the API's names either
    expect((await refusal(chat({ maxTokens: 3 }))).message).toContain("maxTokens");
  });

  it("accepts and ignores the fields the README lists, and says why it refuses the others", async () => {
    const ok = await chat({ store: true, metadata: { run: "a" }, service_tier: "auto", prompt_cache_key: "k", safety_identifier: "u1", verbosity: "low", prediction: { type: "content", content: "hi" }, modalities: ["text"] });
    expect(ok.choices[0]?.message.role).toBe("assistant");
    for (const [field, value, words] of [
      ["audio", { voice: "alloy", format: "wav" }, "audio output is not served"],
      ["web_search_options", {}, "web search"],
      ["functions", [{ name: "f", parameters: {} }], "use `tools`"],
      ["function_call", "auto", "tool_choice"],
    ] as const) {
      const error = await refusal(chat({ [field]: value }));
      expect(error.message).toContain(field);
      expect(error.message).toContain(words);
    }
    expect((await refusal(chat({ modalities: ["text", "audio"] }))).message).toContain('"audio"');
  });

  it("lists in the README every field the contract accepts and ignores, with its reason", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    for (const schema of [ChatCompletionRequestSchema, CompletionRequestSchema, CreateResponseRequestSchema, CreateMessageRequestSchema]) {
      expect(hasOption(schema, messageOption) && getOption(schema, messageOption).refuseUnknownFields, schema.typeName).toBe(true);
      const rules = getOption(schema, messageOption);
      // Compared as booleans: a failed toContain would print the whole README.
      // Chat and legacy completions list each reason verbatim in a table; the Responses and Messages
      // sections name each field with its reason in words.
      const verbatim = schema === ChatCompletionRequestSchema || schema === CompletionRequestSchema;
      for (const note of rules.ignoredFields) expect(readme.includes(`\`${note.name}\``) && (!verbatim || readme.includes(note.reason)), `${schema.typeName}.${note.name}: ${note.reason}`).toBe(true);
      for (const note of rules.refusedFields) expect(readme.includes(`\`${note.name}\``), `${schema.typeName}.${note.name}`).toBe(true);
    }
  });
});
