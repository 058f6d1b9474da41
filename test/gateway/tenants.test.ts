// Many tenants on one server: one entity's flood of generations, queued requests and calls must
// not starve another. A server of its own with a small engine (3 sequences, 4 places in the
// queue), a limit of 6 generations in flight per entity and a low request rate, so each limit is
// reached with a handful of requests.
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

let isolated: IsolatedServer;
let url = "";
let keyA = "";
let keyB = "";
let keyC = "";

beforeAll(async () => {
  isolated = await startIsolatedServer({
    name: "tenants",
    entity: "tenant-a",
    env: { ENGINE_SEQUENCES: "3", ENGINE_MAX_QUEUE: "4", ENTITY_MAX_GENERATIONS: "6", ENTITY_REQUESTS_PER_SECOND: "10", ENTITY_REQUEST_BURST: "20" },
  });
  url = isolated.server.url;
  keyA = isolated.key;
  const keys = new ApiKeys(isolated.db.db);
  keyB = (await keys.create("tenant-b")).key;
  keyC = (await keys.create("tenant-c")).key;
});
afterAll(() => isolated?.stop());

const chat = (key: string, body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], ...body }),
    ...(signal ? { signal } : {}),
  });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("fair share between entities", () => {
  it("keeps a sequence and a place in the queue for B while A floods the engine; A's excess gets 429 naming the limit", async () => {
    expect((await chat(keyB, { max_tokens: 2 })).status).toBe(200); // B uses the model: A's share is all sequences but one
    const abort = new AbortController();
    const long = { max_tokens: 1_900, ignore_eos: true, stream: true };
    const runningA = [chat(keyA, long, abort.signal), chat(keyA, long, abort.signal)];
    // Both of A's first streams run (their first chunks arrive); four more of A's wait in the queue.
    const readers = await Promise.all(runningA.map(async (response) => (await response).body!.getReader()));
    await Promise.all(readers.map((reader) => reader.read()));
    const queuedA = Array.from({ length: 4 }, () => chat(keyA, long, abort.signal).then((r) => r, (e: unknown) => e));
    await sleep(1_000);
    // A's seventh generation in flight is over its entity's limit: refused at the gateway.
    const seventh = await chat(keyA, { max_tokens: 2 });
    expect(seventh.status).toBe(429);
    expect(seventh.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(((await seventh.json()) as { error: { message: string } }).error.message).toContain("ENTITY_MAX_GENERATIONS=6");
    // B is answered at once: the queue is full of A's requests (one of them gives B its place)
    // and A may hold only two of the three sequences while B uses the model.
    const started = performance.now();
    const b = await chat(keyB, { max_tokens: 4 });
    const bSeconds = (performance.now() - started) / 1000;
    expect(b.status).toBe(200);
    let aFinished = 0;
    for (const reader of readers) {
      const { done } = await Promise.race([reader.read(), sleep(0).then(() => ({ done: false }))]);
      if (done) aFinished++;
    }
    expect(aFinished).toBe(0); // B did not wait for A's long generations
    // The one of A's queued requests that gave B its place was refused at once with 429 and why;
    // the other three still wait for A's own streams.
    const settled: (Response | unknown)[] = [];
    for (const request of queuedA) void request.then((answer) => settled.push(answer));
    for (let waited = 0; settled.length === 0 && waited < 10_000; waited += 100) await sleep(100);
    expect(settled).toHaveLength(1);
    const displaced = settled[0] as Response;
    expect(displaced.status).toBe(429);
    expect(((await displaced.json()) as { error: { message: string } }).error.message).toContain("another entity needed this request's place");
    abort.abort();
    process.stdout.write(`B answered in ${bSeconds.toFixed(2)} s while A held ${runningA.length} streams and ${queuedA.length} queued requests\n`);
  });

  it("refuses a chat body over INFERENCE_BODY_LIMIT_BYTES with 413 before reading it", async () => {
    // Headers announcing 9 MiB and no body at all: the answer comes from the headers alone.
    const started = performance.now();
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${keyB}`, "content-type": "application/json", "content-length": String(9 * 2 ** 20) } }, (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      req.flushHeaders();
    });
    expect(answer.status).toBe(413);
    expect(answer.body).toContain("exceeds the limit of 8388608 bytes");
    expect(performance.now() - started).toBeLessThan(10_000);
    expect((await chat(keyB, { max_tokens: 2 })).status).toBe(200);
  });

  it("limits each entity's request rate with 429 and Retry-After on every protocol, without slowing another entity", async () => {
    await sleep(2_500); // the buckets of the test above refill
    const list = (key: string) => fetch(`${url}/v1/preview/models`, { headers: { authorization: `Bearer ${key}` } });
    const answers = await Promise.all(Array.from({ length: 80 }, () => list(keyC)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(20);
    const refused = answers.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(((await refused[0]!.json()) as { detail: string }).detail).toContain("ENTITY_REQUESTS_PER_SECOND=10");
    expect((await list(keyB)).status).toBe(200);
    // Connect: resource_exhausted with the same message, Retry-After in the response metadata.
    const client = createClient(Models, createConnectTransport({ baseUrl: url, httpVersion: "1.1", interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${keyC}`), next(req))] }));
    // A burst of them (the bucket refills while the REST answers above are read): some are refused.
    const results = await Promise.all(Array.from({ length: 30 }, () => client.listModels({}).then(() => null, (e: unknown) => ConnectError.from(e))));
    const error = results.find((result) => result !== null);
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(error?.rawMessage).toContain("ENTITY_REQUESTS_PER_SECOND=10");
    expect(error?.metadata.get("retry-after")).toMatch(/^[1-9]\d*$/);
  });
});
