// Anthropic's Messages API (`POST /v1/messages`) through Anthropic's own TypeScript SDK: plain and
// streamed messages, forced tool use and the tool_result turn after it, stop sequences, the token
// extensions ART trains on, and errors in Anthropic's shape. Tiny models: tool use is forced with
// tool_choice {type: "tool"}, since a random tiny model never decides to call a tool itself.
import Anthropic from "@anthropic-ai/sdk";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createKey, uniqueEntity } from "../support/keys.js";

let client: Anthropic;
let key: string;
let baseUrl: string;
beforeAll(async () => {
  baseUrl = inject("baseUrl");
  key = await createKey(uniqueEntity("messages"));
  // The SDK sends the key as `x-api-key` (and `anthropic-version`).
  client = new Anthropic({ baseURL: baseUrl, apiKey: key, maxRetries: 0 });
});

const weather = { name: "get_weather", description: "Weather in a city", input_schema: { type: "object" as const, properties: { city: { type: "string", enum: ["Paris", "Rome"] } }, required: ["city"], additionalProperties: false } };

// The SDK's types (1.14) no longer list the sampling fields; the service still honours them.
const greedy: object = { temperature: 0 };

function textOf(message: Anthropic.Message): string {
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

describe("messages", () => {
  it("creates a message with Anthropic's fields", async () => {
    const message = await client.messages.create({ model: "tiny-chat", max_tokens: 6, system: "Be brief.", messages: [{ role: "user", content: "Hello there" }], ...greedy });
    expect(message.id).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(message.type).toBe("message");
    expect(message.role).toBe("assistant");
    expect(message.model).toBe("tiny-chat");
    expect(["end_turn", "max_tokens"]).toContain(message.stop_reason);
    expect(message.stop_sequence).toBeNull();
    // Prompt tokens the prefix cache supplied are cache_read_input_tokens (this server is shared).
    expect(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0)).toBeGreaterThan(3);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeLessThanOrEqual(6);
    if (message.stop_reason === "max_tokens") expect(message.usage.output_tokens).toBe(6);
    expect(message.content.every((block) => block.type === "text")).toBe(true);
    // No token extensions unless asked for.
    expect((message as unknown as Record<string, unknown>).token_ids).toBeNull();
  });

  it("accepts text blocks, Authorization: Bearer, and stops on a stop sequence", async () => {
    const body = { model: "tiny-chat", max_tokens: 12, temperature: 0, messages: [{ role: "user", content: [{ type: "text", text: "Tell me" }, { type: "text", text: "a story" }] }] };
    const post = (extra: object) => fetch(`${baseUrl}/v1/messages`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ ...body, ...extra }) });
    const first = (await (await post({})).json()) as Anthropic.Message;
    const text = textOf(first);
    expect(text.length).toBeGreaterThan(2);
    // A stop sequence taken from the greedy text itself: generation stops there, without it.
    const stop = text.slice(1, 2);
    const stopped = (await (await post({ stop_sequences: [stop] })).json()) as Anthropic.Message;
    expect(stopped.stop_reason).toBe("stop_sequence");
    expect(stopped.stop_sequence).toBe(stop);
    expect(text.startsWith(textOf(stopped))).toBe(true);
    expect(textOf(stopped)).not.toContain(stop);
  });

  it("returns token ids and log-probs when asked (vLLM-style extensions ART trains on)", async () => {
    const message = (await client.messages.create({ model: "tiny-chat", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] }, { body: { model: "tiny-chat", max_tokens: 5, messages: [{ role: "user", content: "Hi" }], return_token_ids: true, logprobs: true } })) as unknown as Anthropic.Message & { prompt_token_ids: number[]; token_ids: number[]; logprobs: number[] };
    expect(message.prompt_token_ids.length).toBe(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0));
    expect(message.token_ids.length).toBe(message.usage.output_tokens);
    expect(message.logprobs.length).toBe(message.token_ids.length);
    expect(message.logprobs.every((value) => value <= 0)).toBe(true);
  });

  it("streams Anthropic's events in order, the deltas making the final message", async () => {
    const stream = client.messages.stream({ model: "tiny-chat", max_tokens: 10, temperature: 0, messages: [{ role: "user", content: "Count to three" }] });
    const types: string[] = [];
    let deltas = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") deltas += event.delta.text;
    }
    const final = await stream.finalMessage();
    expect(types[0]).toBe("message_start");
    expect(types.slice(-2)).toEqual(["message_delta", "message_stop"]);
    const blocks = types.filter((t) => t.startsWith("content_block"));
    expect(blocks[0]).toBe("content_block_start");
    expect(blocks[blocks.length - 1]).toBe("content_block_stop");
    expect(deltas.length).toBeGreaterThan(0);
    expect(textOf(final)).toBe(deltas);
    expect(final.id).toMatch(/^msg_/);
    expect(["end_turn", "max_tokens"]).toContain(final.stop_reason);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(final.usage.input_tokens).toBeGreaterThan(0);
  });

  it("frames the stream as typed server-sent events without [DONE]", async () => {
    const response = await fetch(`${baseUrl}/v1/messages`, { method: "POST", headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" }, body: JSON.stringify({ model: "tiny-chat", max_tokens: 3, stream: true, messages: [{ role: "user", content: "Hi" }] }) });
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = (await response.text()).split("\n\n").filter((block) => block.trim() !== "");
    for (const block of events) {
      const [eventLine, dataLine] = block.split("\n");
      const data = JSON.parse((dataLine ?? "").replace(/^data: /, "")) as { type: string };
      expect(eventLine).toBe(`event: ${data.type}`);
    }
    expect(events.some((block) => block.includes("[DONE]"))).toBe(false);
    expect(events[events.length - 1]).toMatch(/^event: message_stop\n/);
  });

  it("forces a tool call with tool_choice tool, then takes the tool_result turn", async () => {
    const request = { model: "tiny-tools", max_tokens: 80, temperature: 0, tools: [weather], tool_choice: { type: "tool" as const, name: "get_weather" }, messages: [{ role: "user" as const, content: "Weather in Paris?" }] };
    const message = await client.messages.create(request);
    expect(message.stop_reason).toBe("tool_use");
    const use = message.content.find((block): block is Anthropic.ToolUseBlock => block.type === "tool_use");
    expect(use?.name).toBe("get_weather");
    expect(["Paris", "Rome"]).toContain((use?.input as { city?: string }).city);
    expect(typeof use?.id).toBe("string");
    const reply = await client.messages.create({
      model: "tiny-tools",
      max_tokens: 5,
      tools: [weather],
      messages: [...request.messages, { role: "assistant", content: message.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use?.id ?? "", content: "Sunny, 21 C" }] }],
    });
    expect(reply.type).toBe("message");
    // Anthropic counts prefix-cache reads apart from input_tokens.
    const prompt = (usage: Anthropic.Usage) => usage.input_tokens + (usage.cache_read_input_tokens ?? 0);
    expect(prompt(reply.usage)).toBeGreaterThan(prompt(message.usage));
  });

  it("streams a forced tool call as input_json_delta", async () => {
    const stream = client.messages.stream({ model: "tiny-tools", max_tokens: 80, temperature: 0, tools: [weather], tool_choice: { type: "tool", name: "get_weather" }, messages: [{ role: "user", content: "Weather in Rome?" }] });
    let json = "";
    let started: Anthropic.ContentBlock | undefined;
    for await (const event of stream) {
      if (event.type === "content_block_start") started = event.content_block;
      if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") json += event.delta.partial_json;
    }
    const final = await stream.finalMessage();
    expect(started?.type).toBe("tool_use");
    expect(final.stop_reason).toBe("tool_use");
    const use = final.content.find((block): block is Anthropic.ToolUseBlock => block.type === "tool_use");
    expect(use?.input).toEqual(JSON.parse(json));
  });
});

describe("messages errors in Anthropic's shape", () => {
  async function failure(promise: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Anthropic.APIError);
    return error as InstanceType<typeof Anthropic.APIError>;
  }

  it("404 not_found_error for an unknown model", async () => {
    const error = await failure(client.messages.create({ model: "no-such-model", max_tokens: 4, messages: [{ role: "user", content: "Hi" }] }));
    expect(error.status).toBe(404);
    expect(error.error).toMatchObject({ type: "error", error: { type: "not_found_error", message: expect.stringContaining("no-such-model") } });
  });

  it("400 invalid_request_error naming a missing max_tokens", async () => {
    const error = await failure(client.messages.create({ model: "tiny-chat", messages: [{ role: "user", content: "Hi" }] } as unknown as Anthropic.MessageCreateParamsNonStreaming));
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("max_tokens") } });
  });

  it("401 authentication_error for a bad key", async () => {
    const bad = new Anthropic({ baseURL: baseUrl, apiKey: "srl_not-a-key", maxRetries: 0 });
    const error = await failure(bad.messages.create({ model: "tiny-chat", max_tokens: 4, messages: [{ role: "user", content: "Hi" }] }));
    expect(error.status).toBe(401);
    expect(error.error).toMatchObject({ type: "error", error: { type: "authentication_error" } });
  });

  it("400 naming image blocks, server tools and refused fields", async () => {
    const image = await failure(client.messages.create({ model: "tiny-chat", max_tokens: 4, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] }] }));
    expect(image.status).toBe(400);
    expect(image.error).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("image") } });
    const server = await failure(client.messages.create({ model: "tiny-tools", max_tokens: 4, tools: [{ type: "web_search_20250305", name: "web_search" }], messages: [{ role: "user", content: "Hi" }] }));
    expect(server.status).toBe(400);
    expect(server.message).toContain("web_search_20250305");
    for (const [field, value] of [["container", "c1"], ["mcp_servers", []], ["no_such_field", 1]] as const) {
      const refused = await failure(client.messages.create({ model: "tiny-chat", max_tokens: 4, messages: [{ role: "user", content: "Hi" }] }, { body: { model: "tiny-chat", max_tokens: 4, messages: [{ role: "user", content: "Hi" }], [field]: value } }));
      expect(refused.status).toBe(400);
      expect(refused.message).toContain(field);
    }
    // Accepted and ignored (README says why).
    const ignored = await client.messages.create({ model: "tiny-chat", max_tokens: 2, service_tier: "auto", messages: [{ role: "user", content: "Hi" }] });
    expect(ignored.usage.service_tier).toBe("standard");
    const stream = await failure(client.messages.create({ model: "tiny-chat", max_tokens: 4, stream: true, messages: [{ role: "user", content: [{ type: "document", source: { type: "text", media_type: "text/plain", data: "x" } }] }] }));
    expect(stream.status).toBe(400);
    expect(stream.message).toContain("document");
  });
});
