// The engine under pressure, on a server of its own with one sequence and a short queue: priority
// order, 429 past the queue limit, and recovery after the engine process dies.
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerProcess } from "../support/server-process.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

let isolated: IsolatedServer;
let server: ServerProcess;
let key = "";

beforeAll(async () => {
  isolated = await startIsolatedServer({
    name: "engine",
    entity: "limits",
    env: { ENGINE_SEQUENCES: "1", ENGINE_MAX_QUEUE: "2", PRIORITY_MODELS: "tiny-chat", BASE_MODELS: "offline=hf:someone/some-model-GGUF/model.Q8_0.gguf", ENGINE_HUB_TIMEOUT_MS: "3000" },
  });
  ({ server, key } = isolated);
});
afterAll(() => isolated?.stop());

const complete = (body: Record<string, unknown>) =>
  fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], ignore_eos: true, ...body }),
  });

describe("engine limits", () => {
  it("admits waiting requests by priority and refuses past the queue limit with 429", async () => {
    expect((await complete({ max_tokens: 2 })).status).toBe(200); // warm-up
    const finished: string[] = [];
    // The occupier holds the only sequence until this test lets go of it: wait for its first
    // streamed chunk before queueing others.
    const occupying = await complete({ max_tokens: 100_000, stream: true });
    const reader = (occupying.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    // "low" is long: finishing orders stay apart even when a loaded test process reads both
    // answers in one go (two 4-token replies can arrive together).
    const low = complete({ max_tokens: 200, priority: 5 }).then(async (r) => (await r.text(), finished.push("low")));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const high = complete({ max_tokens: 4, priority: -1 }).then(async (r) => (await r.text(), finished.push("high")));
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Both wait in the engine's queue (its limit is 2): a third is refused.
    const refused = await complete({ max_tokens: 4 });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await refused.json()).toMatchObject({ error: { type: "RateLimitError", code: 429 } });
    expect(finished).toEqual([]);
    // The occupier leaves; the waiting two are admitted by priority, and "low" starts only after
    // "high" is answered (one sequence), then takes 200 tokens.
    await reader.cancel();
    await Promise.all([low, high]);
    expect(finished).toEqual(["high", "low"]);
  });

  it("frees the sequence of a client that disconnects", async () => {
    const abort = new AbortController();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], ignore_eos: true, max_tokens: 100_000, stream: true }),
      signal: abort.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    abort.abort();
    // With one sequence, this completes only if the abandoned generation let go of it.
    const started = performance.now();
    expect((await complete({ max_tokens: 3 })).status).toBe(200);
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it("fails clearly, without hanging, when an hf: base model cannot be fetched", async () => {
    const res = await complete({ model: "offline", max_tokens: 2 });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^could not fetch hf:someone\/some-model-GGUF\/model.Q8_0.gguf from the model hub/);
  });

  it("continues a final message, echoes it, and takes a chat template from the request", async () => {
    const prefill = [{ role: "user", content: "hi" }, { role: "assistant", content: "Once upon" }];
    const continued = await complete({ messages: prefill, add_generation_prompt: false, continue_final_message: true, echo: true, max_tokens: 3, temperature: 0 });
    expect(continued.status).toBe(200);
    const content = ((await continued.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content ?? "";
    expect(content.startsWith("Once upon")).toBe(true);
    const custom = await complete({ chat_template: "{% for m in messages %}{{ m.content }}{% endfor %}", max_tokens: 1, return_token_ids: true });
    const body = (await custom.json()) as { prompt_token_ids: number[] };
    expect(body.prompt_token_ids.length).toBe(2); // "hi": two byte tokens, no ChatML markers
    const broken = await complete({ chat_template: "{% for m in messages %}", max_tokens: 1 });
    expect(broken.status).toBe(400);
  });

  it("answers 400 when a grammar and banned tokens leave nothing to sample, without disturbing the engine", async () => {
    const enginesStarted = async () => [...(await readFile(server.logFile, "utf8")).matchAll(/"inference engine starting"/g)].length;
    expect((await complete({ max_tokens: 1 })).status).toBe(200); // the engine is up
    const before = await enginesStarted();
    // Occupies the engine's only sequence and then waits its turn behind the refused requests:
    // it must finish normally (an engine abort would fail it with 503).
    const bystander = complete({ max_tokens: 200 });
    const refusals = [
      { structured_outputs: { choice: ["a"] }, logit_bias: { 97: -100 } }, // nothing at the first token
      { structured_outputs: { choice: ["zq"] }, logit_bias: { 113: -100 } }, // stuck after "z"
      { structured_outputs: { choice: ["a"] }, allowed_token_ids: [98] },
      { structured_outputs: { regex: "x+" }, bad_words: ["x"] },
    ];
    for (const body of refusals) {
      const res = await complete({ max_tokens: 5, ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toBe("the structured output and logit_bias / bad_words / allowed_token_ids leave no token the model may produce");
    }
    // Bans that leave the grammar a way out are honoured, not refused.
    const spared = await complete({ max_tokens: 5, temperature: 0, structured_outputs: { choice: ["a", "b"] }, logit_bias: { 97: -100 } });
    expect(((await spared.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe("b");
    expect((await bystander).status).toBe(200);
    expect(await enginesStarted()).toBe(before);
  });

  it("fails in-flight requests with 503 when the engine dies, then serves again", async () => {
    const log = await readFile(server.logFile, "utf8");
    // The engine process serving now: the last one started.
    const pid = Number([...log.matchAll(/"inference engine starting".*?"pid":(\d+)/g)].at(-1)?.[1]);
    expect(pid).toBeGreaterThan(0);
    // A stream that has begun holds the engine's only sequence, so the request sent after it waits
    // inside the engine (it cannot finish first, however slow the machine) when the engine dies.
    const streaming = await complete({ max_tokens: 100_000, stream: true });
    const reader = (streaming.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const waiting = complete({ max_tokens: 2 });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    process.kill(pid, "SIGKILL");
    const failed = await waiting;
    expect(failed.status).toBe(503);
    expect(await failed.json()).toMatchObject({ error: { message: "the inference engine stopped unexpectedly; retry the request", code: 503 } });
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(rest).toContain("the inference engine stopped unexpectedly; retry the request");
    const recovered = await complete({ max_tokens: 3 });
    expect(recovered.status).toBe(200);
  });
});
