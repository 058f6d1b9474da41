// OpenAI's Responses API through the openai SDK on the tiny models: plain, streamed (typed events),
// a forced function call, text.format JSON schema, stored responses (retrieve, input items,
// previous_response_id, delete) and errors in OpenAI's shape.
import OpenAI, { APIError } from "openai";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createKey, uniqueEntity } from "../support/keys.js";

let client: OpenAI;
let other: OpenAI;
beforeAll(async () => {
  const baseURL = `${inject("baseUrl")}/v1`;
  client = new OpenAI({ baseURL, apiKey: await createKey(uniqueEntity("responses")), maxRetries: 0 });
  other = new OpenAI({ baseURL, apiKey: await createKey(uniqueEntity("responses-other")), maxRetries: 0 });
});

async function refusal(promise: Promise<unknown>): Promise<APIError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}

describe("POST /v1/responses", () => {
  it("answers a string input with one message item, usage and the sampled tokens", async () => {
    const response = await client.responses.create({ model: "tiny-chat", input: "Hello there", instructions: "Be brief.", max_output_tokens: 8, temperature: 1, include: ["message.output_text.logprobs"], top_logprobs: 2 } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(response.object).toBe("response");
    expect(response.id).toMatch(/^resp_/);
    expect(["completed", "incomplete"]).toContain(response.status);
    expect(response.instructions).toBe("Be brief.");
    const message = response.output[0] as OpenAI.Responses.ResponseOutputMessage;
    expect(message.type).toBe("message");
    const part = message.content[0] as OpenAI.Responses.ResponseOutputText;
    expect(part.type).toBe("output_text");
    expect(response.output_text).toBe(part.text);
    expect(response.usage?.output_tokens).toBeGreaterThan(0);
    expect(response.usage?.total_tokens).toBe((response.usage?.input_tokens ?? 0) + (response.usage?.output_tokens ?? 0));
    // Log-probabilities of the text's tokens, with the alternatives asked for.
    expect(part.logprobs?.length).toBeGreaterThan(0);
    // (Compared as bytes: a token may hold part of a character. A reply cut at the token limit may
    // end inside a character: the text ends in one U+FFFD for it, where decoding the bytes gives one
    // per invalid sequence, so trailing replacement characters are left out of the comparison.)
    const untilCut = (text: string) => text.replace(/\uFFFD+$/, "");
    expect(untilCut(Buffer.from((part.logprobs ?? []).flatMap((l) => l.bytes)).toString("utf8"))).toBe(untilCut(part.text));
    expect(part.logprobs?.[0]?.top_logprobs.length).toBe(2);
    // ART's exact-token evidence: the prompt's ids and every sampled token with its log-prob.
    const generations = (response as unknown as { token_generations: { prompt_token_ids: number[]; token_ids: number[]; output_tokens: { token_id: number; logprob: number }[]; output_indices: number[] }[] }).token_generations;
    expect(generations).toHaveLength(1);
    const [generation] = generations;
    expect(generation?.prompt_token_ids.length).toBe(response.usage?.input_tokens);
    expect(generation?.token_ids.length).toBe(response.usage?.output_tokens);
    expect(generation?.output_tokens.map((t) => t.token_id)).toEqual(generation?.token_ids);
    expect(generation?.output_tokens.every((t) => typeof t.logprob === "number" && t.logprob <= 0)).toBe(true);
    expect(generation?.output_indices).toEqual([0]);
    if (response.status === "incomplete") expect(response.incomplete_details?.reason).toBe("max_output_tokens");
  });

  it("streams typed events in order; the deltas make the final text", async () => {
    const stream = await client.responses.create({ model: "tiny-chat", input: [{ role: "user", content: [{ type: "input_text", text: "Tell me a story" }] }], max_output_tokens: 12, temperature: 1, stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types.slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", expect.stringMatching(/^response\.(completed|incomplete)$/)]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const deltas = events.filter((e): e is OpenAI.Responses.ResponseTextDeltaEvent => e.type === "response.output_text.delta").map((e) => e.delta);
    const done = events.find((e): e is OpenAI.Responses.ResponseTextDoneEvent => e.type === "response.output_text.done");
    expect(deltas.length).toBeGreaterThan(0);
    expect(done?.text).toBe(deltas.join(""));
    const final = events[events.length - 1] as OpenAI.Responses.ResponseCompletedEvent;
    const item = final.response.output[0] as OpenAI.Responses.ResponseOutputMessage;
    expect((item.content[0] as OpenAI.Responses.ResponseOutputText).text).toBe(done?.text);
    // The stored response is the streamed one.
    expect((await client.responses.retrieve(final.response.id)).output).toEqual(final.response.output);
  });

  it("frames the stream as typed server-sent events without [DONE]", async () => {
    const res = await fetch(`${inject("baseUrl")}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${client.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", input: "Hi", max_output_tokens: 3, stream: true }),
    });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const blocks = (await res.text()).trim().split("\n\n");
    expect(blocks.every((block) => /^event: [a-z_.]+\ndata: \{/.test(block))).toBe(true);
    for (const block of blocks) {
      const [eventLine, dataLine] = block.split("\n");
      expect((JSON.parse(dataLine?.slice(6) ?? "") as { type: string }).type).toBe(eventLine?.slice(7));
    }
    expect(blocks.some((block) => block.includes("[DONE]"))).toBe(false);
  });

  it("calls a function tool when made to (tool_choice named or required), unary and streamed", async () => {
    const tools: OpenAI.Responses.FunctionTool[] = [{ type: "function", name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"], additionalProperties: false }, strict: true }];
    const named = await client.responses.create({ model: "tiny-tools", input: "Weather in Paris?", tools, tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 200 });
    const call = named.output.find((item) => item.type === "function_call") as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call.name).toBe("get_weather");
    expect(typeof (JSON.parse(call.arguments) as { city: unknown }).city).toBe("string");
    expect(call.call_id).toBeTruthy();
    const stream = await client.responses.create({ model: "tiny-tools", input: "Weather in Paris?", tools, tool_choice: "required", parallel_tool_calls: false, max_output_tokens: 200, stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const args = events.filter((e): e is OpenAI.Responses.ResponseFunctionCallArgumentsDeltaEvent => e.type === "response.function_call_arguments.delta").map((e) => e.delta);
    const argsDone = events.find((e): e is OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent => e.type === "response.function_call_arguments.done");
    expect(argsDone?.arguments).toBe(args.join(""));
    expect(JSON.parse(argsDone?.arguments ?? "")).toHaveProperty("city");
    // The call's result goes back as a function_call_output item.
    const next = await client.responses.create({ model: "tiny-tools", previous_response_id: named.id, input: [{ type: "function_call_output", call_id: call.call_id, output: "Sunny" }], tools, max_output_tokens: 4 });
    expect(next.previous_response_id).toBe(named.id);
  });

  it("text.format json_schema: the output parses and matches the schema", async () => {
    const schema = { type: "object", properties: { name: { type: "string", maxLength: 10 }, age: { type: "integer", minimum: 0, maximum: 120 } }, required: ["name", "age"], additionalProperties: false };
    const response = await client.responses.create({ model: "tiny-chat", input: "Make up a person.", text: { format: { type: "json_schema", name: "person", schema, strict: true } }, max_output_tokens: 300, temperature: 1 });
    const person = JSON.parse(response.output_text) as { name: unknown; age: unknown };
    expect(Object.keys(person).sort()).toEqual(["age", "name"]);
    expect(typeof person.name).toBe("string");
    expect(Number.isInteger(person.age)).toBe(true);
    expect(response.text?.format).toMatchObject({ type: "json_schema", name: "person" });
  });

  it("stores responses: retrieve, input items, previous_response_id continues, delete; another entity sees none", async () => {
    const first = await client.responses.create({ model: "tiny-chat", input: "Remember the word apple.", max_output_tokens: 4, metadata: { run: "a" } });
    expect((first as unknown as { store: boolean }).store).toBe(true);
    const got = await client.responses.retrieve(first.id);
    expect(got.id).toBe(first.id);
    expect(got.output).toEqual(first.output);
    expect(got.metadata).toEqual({ run: "a" });
    const items = await client.responses.inputItems.list(first.id);
    expect(items.data).toHaveLength(1);
    expect(items.data[0]).toMatchObject({ type: "message", role: "user", content: [{ type: "input_text", text: "Remember the word apple." }] });
    // The continuation's prompt holds the first exchange: more input tokens than its own input alone.
    const alone = await client.responses.create({ model: "tiny-chat", input: "Which word?", max_output_tokens: 2, store: false });
    const next = await client.responses.create({ model: "tiny-chat", input: "Which word?", previous_response_id: first.id, max_output_tokens: 2 });
    expect(next.usage?.input_tokens).toBeGreaterThan((alone.usage?.input_tokens ?? 0) + 5);
    // store: false is not kept.
    expect((await refusal(client.responses.retrieve(alone.id))).status).toBe(404);
    // Another entity can neither read nor continue it.
    expect((await refusal(other.responses.retrieve(first.id))).status).toBe(404);
    expect((await refusal(other.responses.create({ model: "tiny-chat", input: "x", previous_response_id: first.id }))).status).toBe(404);
    const deleted = (await client.responses.delete(first.id)) as unknown as { id: string; deleted: boolean };
    expect(deleted).toMatchObject({ id: first.id, deleted: true });
    expect((await refusal(client.responses.retrieve(first.id))).status).toBe(404);
  });

  it("refuses what it does not serve with a 400 in OpenAI's shape, naming it", async () => {
    const web = await refusal(client.responses.create({ model: "tiny-chat", input: "x", tools: [{ type: "web_search" }] }));
    expect(web.status).toBe(400);
    expect(web.message).toContain("web_search");
    expect((web.error as { param?: string }).param).toBe("tools.0.type");
    const missing = await refusal(client.responses.create({ model: "tiny-chat", input: "x", previous_response_id: "resp_nope" }));
    expect(missing.status).toBe(404);
    expect(missing.message).toContain("resp_nope");
    const image = await refusal(client.responses.create({ model: "tiny-chat", input: [{ role: "user", content: [{ type: "input_image", image_url: "https://example.com/a.png", detail: "auto" }] }] }));
    expect(image.status).toBe(400);
    expect(image.message).toContain("input_image");
    const unknown = await refusal(client.responses.create({ model: "tiny-chat", input: "x", frobnicate: 1 } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming));
    expect(unknown.status).toBe(400);
    expect(unknown.message).toContain("frobnicate");
    const include = await refusal(client.responses.create({ model: "tiny-chat", input: "x", include: ["reasoning.encrypted_content"] }));
    expect(include.message).toContain("include");
    // An error raised before the stream opens is a plain error, streamed or not.
    expect((await refusal(client.responses.create({ model: "tiny-chat", input: "x", tools: [{ type: "file_search", vector_store_ids: [] }], stream: true }))).status).toBe(400);
  });
});
