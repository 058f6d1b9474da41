// Bounds on every request field that sizes work, on a server of this file's own (MAX_PROMPT_BYTES
// raised to 32 MiB and INFERENCE_BODY_LIMIT_BYTES to 64 MiB, so a 30 MiB prompt reaches the engine
// and its byte bound): oversized `n`,
// log-probability counts, stop lists and friends are refused at validation in milliseconds and the
// server keeps serving; a prompt whose bytes cannot fit the context is refused before it is
// tokenized while another tenant's request completes; the same validation holds over Connect and gRPC.
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Inference } from "../../gen/srl/v1/inference_pb.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

let isolated: IsolatedServer;
let url = "";
let key = "";
let contextSize = 0;
const MAX_PROMPT_BYTES = 32 * 1024 * 1024;

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "bounds", entity: "bounds", env: { MAX_PROMPT_BYTES: String(MAX_PROMPT_BYTES), INFERENCE_BODY_LIMIT_BYTES: String(64 * 2 ** 20), ENTITY_REQUESTS_PER_SECOND: "0" } });
  ({ key } = isolated);
  url = isolated.server.url;
  const model = (await (await post("GET", "/v1/models/tiny-chat")).json()) as { max_model_len: number };
  contextSize = model.max_model_len;
  expect(contextSize).toBeGreaterThanOrEqual(512);
}, 180_000);
afterAll(() => isolated?.stop());

function post(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

interface ErrorBody {
  error: { message: string; code: number; param: string | null };
  detail?: { type: string; loc: (string | number)[]; msg: string }[];
}

const chatBody = (extra: Record<string, unknown> = {}) => ({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 2, ...extra });

/** A request answered within `withinMs`, with its status and body. */
async function timed(path: string, body: unknown, withinMs = 3_000): Promise<{ status: number; body: ErrorBody; ms: number }> {
  const started = performance.now();
  const res = await post("POST", path, body);
  const parsed = (await res.json()) as ErrorBody;
  const ms = performance.now() - started;
  expect(ms, `${path} answered in ${Math.round(ms)} ms`).toBeLessThan(withinMs);
  return { status: res.status, body: parsed, ms };
}

async function expectRefused(path: string, body: unknown, loc: (string | number)[], type: string): Promise<ErrorBody> {
  const answer = await timed(path, body);
  expect(answer.status, JSON.stringify(answer.body).slice(0, 400)).toBe(400);
  expect(answer.body.detail?.[0]).toMatchObject({ loc, type });
  return answer.body;
}

async function stillServes(): Promise<void> {
  const res = await post("POST", "/v1/chat/completions", chatBody());
  expect(res.status).toBe(200);
}

describe("bounds checked at validation", () => {
  it("refuses n of 2147483647 and 5000000 at once and keeps serving", async () => {
    for (const n of [2147483647, 5_000_000]) {
      const body = await expectRefused("/v1/chat/completions", chatBody({ n }), ["body", "n"], "less_than_equal");
      expect(body.error.param).toBe("n");
      expect(body.error.message).toContain("less than or equal to 128");
      await stillServes();
      await expectRefused("/v1/completions", { model: "tiny-chat", prompt: "hi", n, max_tokens: 1 }, ["body", "n"], "less_than_equal");
      await expectRefused("/v1/chat/completions", chatBody({ n, stream: true }), ["body", "n"], "less_than_equal");
    }
    await stillServes();
  });

  it("refuses n above the sequences this deployment runs in parallel before generating", async () => {
    const body = await expectRefused("/v1/chat/completions", chatBody({ n: 100 }), ["body", "n"], "less_than_equal");
    expect(body.error.message).toContain("ENGINE_SEQUENCES");
    await expectRefused("/v1/chat/completions", chatBody({ n: 9, use_beam_search: true }), ["body", "n"], "less_than_equal");
    await expectRefused("/v1/completions", { model: "tiny-chat", prompt: "hi", n: 9, best_of: 9, max_tokens: 1 }, ["body", "n"], "less_than_equal");
    // n = 8 (ENGINE_SEQUENCES) is served.
    const ok = await post("POST", "/v1/chat/completions", chatBody({ n: 8 }));
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { choices: unknown[] }).choices).toHaveLength(8);
  });

  it("refuses huge log-probability counts and best_of", async () => {
    const huge = 2147483647;
    await expectRefused("/v1/chat/completions", chatBody({ prompt_logprobs: huge }), ["body", "prompt_logprobs"], "less_than_equal");
    await expectRefused("/v1/chat/completions", chatBody({ logprobs: true, top_logprobs: huge }), ["body", "top_logprobs"], "less_than_equal");
    await expectRefused("/v1/chat/completions", chatBody({ prompt_logprobs: -1 }), ["body", "prompt_logprobs"], "greater_than_equal");
    await expectRefused("/v1/completions", { model: "tiny-chat", prompt: "hi", logprobs: huge }, ["body", "logprobs"], "less_than_equal");
    await expectRefused("/v1/completions", { model: "tiny-chat", prompt: "hi", prompt_logprobs: huge }, ["body", "prompt_logprobs"], "less_than_equal");
    await expectRefused("/v1/completions", { model: "tiny-chat", prompt: "hi", best_of: huge }, ["body", "best_of"], "less_than_equal");
    // The limits themselves are served.
    const ok = await post("POST", "/v1/chat/completions", chatBody({ prompt_logprobs: 20, logprobs: true, top_logprobs: 20 }));
    expect(ok.status).toBe(200);
  });

  it("refuses oversized lists and strings before reading their items", async () => {
    const stops = Array.from({ length: 100_000 }, (_, i) => `stop${i}`);
    const body = await expectRefused("/v1/chat/completions", chatBody({ stop: stops }), ["body", "stop"], "too_long");
    expect(body.error.message).toContain("at most 64 items after validation, not 100000");
    await expectRefused("/v1/completions", { model: "tiny-chat", prompt: "hi", stop: stops }, ["body", "stop"], "too_long");
    await expectRefused("/v1/chat/completions", chatBody({ stop: ["x".repeat(1025)] }), ["body", "stop", 0], "string_too_long");
    await expectRefused("/v1/chat/completions", chatBody({ stop_token_ids: Array.from({ length: 1025 }, () => 1) }), ["body", "stop_token_ids"], "too_long");
    await expectRefused("/v1/chat/completions", chatBody({ bad_words: Array.from({ length: 257 }, (_, i) => `w${i}`) }), ["body", "bad_words"], "too_long");
    await expectRefused("/v1/chat/completions", chatBody({ allowed_token_ids: Array.from({ length: 262_145 }, () => 1) }), ["body", "allowed_token_ids"], "too_long");
    await expectRefused("/v1/chat/completions", chatBody({ logit_bias: Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [String(i), 1])) }), ["body", "logit_bias"], "too_long");
    await expectRefused("/v1/chat/completions", chatBody({ messages: Array.from({ length: 2049 }, () => ({ role: "user", content: "hi" })) }), ["body", "messages"], "too_long");
    const tool = (name: string, description = "") => ({ type: "function", function: { name, description, parameters: { type: "object", properties: {} } } });
    await expectRefused("/v1/chat/completions", chatBody({ model: "tiny-tools", tools: Array.from({ length: 129 }, (_, i) => tool(`f${i}`)) }), ["body", "tools"], "too_long");
    await expectRefused("/v1/chat/completions", chatBody({ model: "tiny-tools", tools: [tool("big", "d".repeat(70_000))] }), ["body", "tools", 0], "bytes_too_long");
    await expectRefused("/v1/chat/completions", chatBody({ structured_outputs: { grammar: `root ::= "a"${" ".repeat(140_000)}` } }), ["body", "structured_outputs", "grammar"], "string_too_long");
    await expectRefused("/v1/chat/completions", chatBody({ structured_outputs: { choice: Array.from({ length: 1025 }, (_, i) => `c${i}`) } }), ["body", "structured_outputs", "choice"], "too_long");
    await expectRefused("/v1/chat/completions", chatBody({ response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object", description: "d".repeat(140_000) } } } }), ["body", "response_format", "json_schema", "schema"], "bytes_too_long");
    await expectRefused("/v1/chat/completions", chatBody({ chat_template: "x".repeat(70_000) }), ["body", "chat_template"], "string_too_long");
    // Legacy prompts: more choices (prompts x n) than a response holds.
    await expectRefused("/v1/completions", { model: "tiny-chat", prompt: Array.from({ length: 200 }, () => "hi"), n: 8, max_tokens: 1 }, ["body", "prompt"], "too_long");
    // At the limits: 64 stops of 1024 bytes are served.
    const ok = await post("POST", "/v1/chat/completions", chatBody({ stop: Array.from({ length: 64 }, (_, i) => `${i}`.padEnd(1024, "z")) }));
    expect(ok.status).toBe(200);
    await stillServes();
  });
});

describe("long prompts", () => {
  it("refuses a 30 MiB prompt before tokenizing it, while another request completes promptly", async () => {
    const text = "The quick brown fox jumps over the lazy dog. ".repeat(Math.ceil((30 * 2 ** 20) / 45)).slice(0, 30 * 2 ** 20);
    const big = timed("/v1/chat/completions", chatBody({ messages: [{ role: "user", content: text }] }), 15_000);
    const bigLegacy = timed("/v1/completions", { model: "tiny-chat", prompt: text, max_tokens: 1 }, 15_000);
    // Small chats meanwhile, one after another until both are answered: none waits behind tokenizing.
    let settled = false;
    void Promise.allSettled([big, bigLegacy]).then(() => (settled = true));
    const latencies: number[] = [];
    while (!settled) {
      const started = performance.now();
      await stillServes();
      latencies.push(performance.now() - started);
    }
    for (const answer of [await big, await bigLegacy]) {
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toMatch(/^the prompt has at least \d+ tokens \(31457\d+ bytes of text; no token of this model covers more than \d+ bytes\); this model's context holds \d+ here/);
    }
    expect(Math.max(...latencies)).toBeLessThan(2_000);
    await stillServes();
  });

  it("refuses a prompt over MAX_PROMPT_BYTES at validation", async () => {
    const text = "x".repeat(MAX_PROMPT_BYTES + 1);
    const chat = await timed("/v1/chat/completions", chatBody({ messages: [{ role: "user", content: text }] }), 15_000);
    expect(chat.status).toBe(400);
    expect(chat.body.error.param).toBe("messages");
    expect(chat.body.error.message).toContain("MAX_PROMPT_BYTES");
    // Text in tools and documents counts too.
    const split = await timed("/v1/chat/completions", chatBody({ messages: [{ role: "user", content: "x".repeat(MAX_PROMPT_BYTES - 10) }], documents: [{ text: "y".repeat(20) }] }), 15_000);
    expect(split.status).toBe(400);
    expect(split.body.error.message).toContain("MAX_PROMPT_BYTES");
    const legacy = await timed("/v1/completions", { model: "tiny-chat", prompt: [text.slice(0, 2 ** 24), text.slice(2 ** 24)], max_tokens: 1 }, 15_000);
    expect(legacy.status).toBe(400);
    expect(legacy.body.error.param).toBe("prompt");
  });

  it("serves a prompt just within the context, and counts tokens exactly past the byte bound", async () => {
    // One byte per token on the tiny model: this prompt (plus BOS) leaves room for one token.
    const fits = await post("POST", "/v1/completions", { model: "tiny-chat", prompt: "a".repeat(contextSize - 2), max_tokens: 1, add_special_tokens: false });
    const fitsBody = (await fits.json()) as { usage: { prompt_tokens: number } };
    expect(fits.status, JSON.stringify(fitsBody)).toBe(200);
    expect(fitsBody.usage.prompt_tokens).toBe(contextSize - 2);
    // Too long by token count, though its bytes could fit: tokenized and refused with the exact count.
    const over = await post("POST", "/v1/completions", { model: "tiny-chat", prompt: "a".repeat(contextSize + 5), max_tokens: 1, add_special_tokens: false });
    expect(over.status).toBe(400);
    expect(((await over.json()) as ErrorBody).error.message).toContain(`the prompt has ${contextSize + 5} tokens`);
    // truncate_prompt_tokens keeps the end of a long prompt: no byte bound applies.
    const truncated = await post("POST", "/v1/completions", { model: "tiny-chat", prompt: "a".repeat(20 * contextSize), max_tokens: 1, truncate_prompt_tokens: 16, add_special_tokens: false });
    expect(truncated.status).toBe(200);
    expect(((await truncated.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens).toBe(16);
  });
});

describe("the same bounds over Connect and gRPC", () => {
  const clients = (): [string, Client<typeof Inference>][] => {
    const auth: Interceptor[] = [(next) => (req) => (req.header.set("authorization", `Bearer ${key}`), next(req))];
    return [
      ["connect", createClient(Inference, createConnectTransport({ baseUrl: url, httpVersion: "1.1", interceptors: auth }))],
      ["grpc", createClient(Inference, createGrpcTransport({ baseUrl: url, interceptors: auth }))],
    ];
  };

  async function refusal(call: () => Promise<unknown>): Promise<ConnectError> {
    const started = performance.now();
    const error = await call().then(() => null, (e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(error).toBeInstanceOf(ConnectError);
    return error as ConnectError;
  }

  it("refuses huge n, long stop lists and a 30 MiB prompt with InvalidArgument", async () => {
    for (const [name, client] of clients()) {
      const messages = [{ role: "user", content: { kind: { case: "stringValue" as const, value: "hi" } } }];
      const n = await refusal(() => client.createChatCompletion({ model: "tiny-chat", messages, n: 2147483647, maxTokens: 2 }));
      expect(n.code, name).toBe(Code.InvalidArgument);
      expect(n.rawMessage, name).toContain("n: Input should be less than or equal to 128");
      const stops = await refusal(() => client.createChatCompletion({ model: "tiny-chat", messages, stop: Array.from({ length: 100_000 }, (_, i) => `s${i}`), maxTokens: 2 }));
      expect(stops.code, name).toBe(Code.InvalidArgument);
      expect(stops.rawMessage, name).toContain("stop: List should have at most 64 items");
      const logprobs = await refusal(() => client.createCompletion({ model: "tiny-chat", prompt: { kind: { case: "stringValue", value: "hi" } }, promptLogprobs: 2147483647 }));
      expect(logprobs.code, name).toBe(Code.InvalidArgument);
      const text = "y".repeat(30 * 2 ** 20);
      const long = await refusal(() => client.createChatCompletion({ model: "tiny-chat", messages: [{ role: "user", content: { kind: { case: "stringValue", value: text } } }], maxTokens: 2 }));
      expect(long.code, name).toBe(Code.InvalidArgument);
      expect(long.rawMessage, name).toMatch(/^the prompt has at least \d+ tokens/);
      const ok = await client.createChatCompletion({ model: "tiny-chat", messages, maxTokens: 2 });
      expect(ok.choices, name).toHaveLength(1);
    }
  });
});
