// GET /metrics end to end: real requests on a server of this file's own, then the exposition parsed
// by Prometheus' Python client (its reference parser), counters checked by how much they moved, and
// who may read it (METRICS_TOKEN here; the operator entity's keys on the shared server).
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";
import { createKey, uniqueEntity } from "../support/keys.js";

const PYTHON = fileURLToPath(new URL("../../.cache/clients/prometheus-client-0.26.0/bin/python", import.meta.url));
const PARSER = fileURLToPath(new URL("./parse_metrics.py", import.meta.url));
const TOKEN = "metrics-token-for-tests-0123456789";
const ENTITY = "metrics-tenant";
const MODEL = "tiny-chat";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number | "+Inf";
}
interface Family {
  name: string;
  type: string;
  samples: Sample[];
}

let isolated: IsolatedServer;
let url = "";

beforeAll(async () => {
  if (!existsSync(PYTHON)) throw new Error(`the parser's environment is missing: run bash scripts/install-client-env.sh prometheus-client-0.26.0`);
  isolated = await startIsolatedServer({ name: "metrics", entity: ENTITY, env: { METRICS_TOKEN: TOKEN } });
  url = isolated.server.url;
}, 120_000);
afterAll(() => isolated?.stop());

function parse(text: string): Promise<Family[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(PYTHON, [PARSER], { maxBuffer: 64 * 2 ** 20 }, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as Family[])));
    child.stdin?.end(text);
  });
}

async function scrape(): Promise<Family[]> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return parse(await response.text());
}

/** The value of one sample: the family's samples named `name` whose labels include `labels` (0 when none). */
function value(families: Family[], name: string, labels: Record<string, string> = {}): number {
  const matching = families.flatMap((f) => f.samples).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  expect(matching.length).toBeLessThanOrEqual(1);
  const found = matching[0]?.value ?? 0;
  return found === "+Inf" ? Infinity : found;
}

function family(families: Family[], name: string): Family {
  const found = families.find((f) => f.name === name);
  if (!found) throw new Error(`no family ${name} in ${families.map((f) => f.name).join(", ")}`);
  return found;
}

const mine = { model_name: MODEL, entity: ENTITY };

async function post(path: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${url}${path}`, { method: "POST", headers: { authorization: `Bearer ${isolated.key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
}

async function waitFor(check: (families: Family[]) => boolean): Promise<Family[]> {
  for (let tries = 0; ; tries++) {
    const families = await scrape();
    if (check(families) || tries > 50) return families;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("GET /metrics", () => {
  it("counts requests, tokens and latencies of real generations by model and entity", async () => {
    // Warm the engine up so the first scrape already has its contexts.
    expect((await post("/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 1 })).status).toBe(200);
    const before = await scrape();

    const chat = await post("/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "hello" }], max_tokens: 4, ignore_eos: true });
    expect(chat.status).toBe(200);
    const chatUsage = ((await chat.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    const streamed = await post("/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "a story" }], max_tokens: 5, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
    expect(streamed.status).toBe(200);
    const usageLine = (await streamed.text()).split("\n").filter((line) => line.startsWith("data: {")).map((line) => JSON.parse(line.slice(6)) as { usage?: { prompt_tokens: number; completion_tokens: number } | null }).find((chunk) => chunk.usage)?.usage;
    const completion = await post("/v1/completions", { model: MODEL, prompt: "once upon", max_tokens: 3, ignore_eos: true });
    expect(completion.status).toBe(200);
    const completionUsage = ((await completion.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    expect((await post("/v1/chat/completions", { model: "no-such-model", messages: [{ role: "user", content: "x" }] })).status).toBe(404);
    expect((await post("/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "x" }], temperature: -1 })).status).toBe(400);

    const after = await scrape();
    const moved = (name: string, labels: Record<string, string> = mine) => value(after, name, labels) - value(before, name, labels);
    expect([chatUsage.completion_tokens, usageLine?.completion_tokens, completionUsage.completion_tokens]).toEqual([4, 5, 3]);
    expect(moved("vllm:prompt_tokens_total")).toBe(chatUsage.prompt_tokens + (usageLine?.prompt_tokens ?? NaN) + completionUsage.prompt_tokens);
    expect(moved("vllm:generation_tokens_total")).toBe(12);
    expect(moved("vllm:request_success_total", { ...mine, finished_reason: "length" })).toBe(3);
    for (const histogram of ["vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"]) expect(moved(`${histogram}_count`)).toBe(3);
    // One gap per token after each choice's first: 3 + 4 + 2.
    expect(moved("vllm:inter_token_latency_seconds_count")).toBe(9);
    expect(moved("vllm:e2e_request_latency_seconds_sum")).toBeGreaterThan(0);

    // Histograms: cumulative buckets ending in +Inf, which equals the count.
    const ttft = family(after, "vllm:time_to_first_token_seconds");
    expect(ttft.type).toBe("histogram");
    const buckets = ttft.samples.filter((s) => s.name.endsWith("_bucket") && s.labels.entity === ENTITY);
    expect(buckets.length).toBeGreaterThan(10);
    const counts = buckets.map((s) => s.value as number);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(buckets.at(-1)?.labels.le).toBe("+Inf");
    expect(counts.at(-1)).toBe(value(after, "vllm:time_to_first_token_seconds_count", mine));

    // Every protocol's requests by RPC and status class.
    const endpoint = (rpc: string, status_class: string) => ({ endpoint: `srl.v1.Inference/${rpc}`, entity: ENTITY, status_class });
    expect(moved("srl:requests_total", endpoint("CreateChatCompletion", "2xx"))).toBe(1);
    expect(moved("srl:requests_total", endpoint("StreamChatCompletion", "2xx"))).toBe(1);
    expect(moved("srl:requests_total", endpoint("CreateCompletion", "2xx"))).toBe(1);
    expect(moved("srl:requests_total", endpoint("CreateChatCompletion", "4xx"))).toBe(2);
    expect(family(after, "srl:requests").type).toBe("counter");

    // Idle: nothing waits or runs, and the engine, its contexts and the database are reported.
    expect(value(after, "vllm:num_requests_running", mine)).toBe(0);
    expect(value(after, "vllm:num_requests_waiting", mine)).toBe(0);
    expect(value(after, "srl:engine_sequences", { model_name: MODEL, state: "total" })).toBeGreaterThanOrEqual(1);
    expect(value(after, "srl:engine_sequences", { model_name: MODEL, state: "in_use" })).toBe(0);
    expect(value(after, "vllm:kv_cache_usage_perc", { model_name: MODEL })).toBe(0);
    expect(value(after, "srl:engine_up", { engine: "embedded" })).toBe(1);
    expect(value(after, "srl:engine_starts_total")).toBe(1);
    expect(value(after, "srl:database_up")).toBe(1);
    expect(value(after, "srl:database_ping_seconds")).toBeGreaterThan(0);
    expect(family(after, "srl:training_jobs").type).toBe("gauge");
  });

  it("shows a generation running while it runs, and back at 0 once its client has gone", async () => {
    const abort = new AbortController();
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${isolated.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "go on" }], max_tokens: 100_000, ignore_eos: true, stream: true }),
      signal: abort.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const before = await scrape();
    expect(value(before, "vllm:num_requests_running", mine)).toBe(1);
    expect(value(before, "vllm:num_requests_waiting", mine)).toBe(0);
    expect(value(before, "srl:engine_sequences", { model_name: MODEL, state: "in_use" })).toBe(1);
    expect(value(before, "vllm:kv_cache_usage_perc", { model_name: MODEL })).toBeGreaterThan(0);
    abort.abort();
    const aborted = (families: Family[]) => value(families, "vllm:request_success_total", { ...mine, finished_reason: "abort" });
    const after = await waitFor((families) => value(families, "vllm:num_requests_running", mine) === 0 && value(families, "srl:engine_sequences", { model_name: MODEL, state: "in_use" }) === 0 && aborted(families) > aborted(before));
    expect(value(after, "vllm:num_requests_running", mine)).toBe(0);
    expect(value(after, "srl:engine_sequences", { model_name: MODEL, state: "in_use" })).toBe(0);
    expect(aborted(after) - aborted(before)).toBe(1);
    expect(value(after, "srl:generation_failures_total", { ...mine, code: "internal" })).toBe(0);
  });

  it("is refused without METRICS_TOKEN, even with a tenant's API key", async () => {
    const none = await fetch(`${url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe("Bearer");
    expect(((await none.json()) as { detail: string }).detail).toContain("METRICS_TOKEN");
    expect((await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
    expect((await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${isolated.key}` } })).status).toBe(401);
  });
});

describe("GET /metrics without METRICS_TOKEN (the shared server)", () => {
  it("answers the operator entity's keys only", async () => {
    const base = inject("baseUrl");
    const operator = await createKey("local");
    const tenant = await createKey(uniqueEntity("metrics-other"));
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    const refused = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${tenant}` } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { detail: string }).detail).toContain("BOOTSTRAP_ENTITY");
    const served = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${operator}` } });
    expect(served.status).toBe(200);
    const families = await parse(await served.text());
    expect(family(families, "srl:database_up").samples[0]?.value).toBe(1);
  });
});
