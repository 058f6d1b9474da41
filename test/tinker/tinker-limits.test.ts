// What protects the trainer and the other tenants from one Tinker user, and what survives a
// restart: training clients per entity (429 past TINKER_ENTITY_MAX_CLIENTS, freed by unload,
// by closing the session, and by the session's heartbeats stopping), unfinished requests per entity
// (429 past TINKER_ENTITY_MAX_PENDING), and futures kept in the database across a restart.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";
import { decodeForwardBackward, forwardBackwardBody, type PlainDatum } from "../support/tinker-wire.js";

const env = { TINKER_RETRIEVE_WAIT_MS: "300", TINKER_ENTITY_MAX_CLIENTS: "2", TINKER_ENTITY_MAX_PENDING: "3", TINKER_SESSION_TIMEOUT_MS: "10000" };
let isolated: IsolatedServer;
let key = "";

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "tinker-limits", entity: "carol", env });
  key = `tml-${isolated.key}`;
}, 120_000);
afterAll(() => isolated?.stop());

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown>; bytes: Uint8Array }> {
  const binary = body instanceof Uint8Array;
  const res = await fetch(`${isolated.server.url}${path}`, {
    method,
    headers: { "x-api-key": key, ...(body !== undefined ? { "content-type": binary ? "application/x-protobuf" : "application/json" } : {}), ...headers },
    ...(body !== undefined ? { body: binary ? body : JSON.stringify(body) } : {}),
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const json = (res.headers.get("content-type") ?? "").includes("json") ? (JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>) : {};
  return { status: res.status, json, bytes };
}

async function result(requestId: string, protobuf = false) {
  for (;;) {
    const answer = await call("POST", "/api/v1/retrieve_future", { request_id: requestId }, protobuf ? { accept: "application/x-protobuf" } : {});
    if (answer.status !== 408) return answer;
  }
}

async function session(): Promise<string> {
  return (await call("POST", "/api/v1/create_session", { tags: [], sdk_version: "test" })).json.session_id as string;
}

async function createModel(sessionId: string, seq: number) {
  return call("POST", "/api/v1/create_model", { session_id: sessionId, model_seq_id: seq, base_model: "tiny-chat", lora_config: { rank: 2, train_unembed: false } });
}

const datum: PlainDatum = { tokens: [5, 6, 7], targets: [6, 7, 8], floats: { weights: [1, 1, 1] } };

describe("limits per entity", () => {
  it("holds at most TINKER_ENTITY_MAX_CLIENTS training clients; unloading or closing a session frees them", async () => {
    const first = await session();
    const a = await createModel(first, 0);
    const b = await createModel(first, 1);
    expect([a.status, b.status]).toEqual([200, 200]);
    const modelA = (await result(a.json.request_id as string)).json.model_id as string;
    expect(modelA).toBe(`${first}:train:0`);
    await result(b.json.request_id as string);
    const third = await createModel(first, 2);
    expect(third.status).toBe(429);
    expect(JSON.stringify(third.json)).toContain("TINKER_ENTITY_MAX_CLIENTS");
    // The same create again (a retried request) is not a new client: it answers the same id.
    const again = await createModel(first, 0);
    expect((await result(again.json.request_id as string)).json.model_id).toBe(modelA);

    const unload = await call("POST", "/api/v1/unload_model", { model_id: modelA });
    expect((await result(unload.json.request_id as string)).json).toMatchObject({ model_id: modelA, type: "unload_model" });
    expect((await call("POST", "/api/v1/forward_backward", forwardBackwardBody(modelA, 1, [datum], "cross_entropy"))).status).toBe(200);
    const c = await createModel(first, 2);
    expect(c.status).toBe(200);
    await result(c.json.request_id as string);
    expect((await createModel(first, 3)).status).toBe(429);
    // Closing the session (the SDK's ServiceClient.close) releases its clients.
    expect((await call("POST", `/api/v1/sessions/${first}/finish`, { reason: { type: "success" }, detail: null })).status).toBe(200);
    const second = await session();
    let created = await createModel(second, 0);
    for (let i = 0; i < 50 && created.status === 429; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      created = await createModel(second, 0);
    }
    expect(created.status).toBe(200);
    await result(created.json.request_id as string);
  }, 120_000);

  it("ends a session whose heartbeats stop, releasing its clients", async () => {
    const quiet = await session();
    const made = await createModel(quiet, 0);
    const modelId = (await result(made.json.request_id as string)).json.model_id as string;
    const other = await session();
    // Heartbeats keep one session; the quiet one times out (10 s) and its client is released.
    const deadline = Date.now() + 40_000;
    let released = false;
    while (Date.now() < deadline && !released) {
      await call("POST", "/api/v1/session_heartbeat", { session_id: other });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const fb = await call("POST", "/api/v1/forward_backward", forwardBackwardBody(modelId, 1, [datum], "cross_entropy", { forwardOnly: true }));
      const answer = await result(fb.json.request_id as string, true);
      released = answer.status === 200 && JSON.stringify(answer.json).includes("unloaded");
    }
    expect(released).toBe(true);
    expect((await call("POST", "/api/v1/session_heartbeat", { session_id: other })).status).toBe(200);
  }, 120_000);

  it("refuses requests past TINKER_ENTITY_MAX_PENDING with 429 while earlier ones wait", async () => {
    const sessionId = await session();
    const made = await createModel(sessionId, 0);
    const modelId = (await result(made.json.request_id as string)).json.model_id as string;
    // seq 1 is missing: these wait for it (up to 5 s), so they stay unfinished meanwhile.
    const waiting = await Promise.all([2, 3, 4].map((seq) => call("POST", "/api/v1/forward_backward", forwardBackwardBody(modelId, seq, [datum], "cross_entropy", { forwardOnly: true }))));
    expect(waiting.map((w) => w.status)).toEqual([200, 200, 200]);
    const over = await call("POST", "/api/v1/forward_backward", forwardBackwardBody(modelId, 5, [datum], "cross_entropy", { forwardOnly: true }));
    expect(over.status).toBe(429);
    expect(JSON.stringify(over.json)).toContain("TINKER_ENTITY_MAX_PENDING");
    // A command that has not started can be cancelled; its future then says so.
    expect((await call("POST", "/api/v1/cancel_future", { request_id: waiting[2]?.json.request_id })).status).toBe(200);
    expect((await result(waiting[2]?.json.request_id as string)).json).toMatchObject({ error: "cancelled by the client", category: "user" });
    for (const w of waiting.slice(0, 2)) expect((await result(w.json.request_id as string, true)).status).toBe(200);
    expect((await call("POST", "/api/v1/forward_backward", forwardBackwardBody(modelId, 6, [datum], "cross_entropy", { forwardOnly: true }))).status).toBe(200);
  }, 120_000);
});

describe("a restart", () => {
  // A server of its own where a command waits long for a missing seq_id, so one is surely still
  // waiting when the server stops.
  let carol: IsolatedServer;
  beforeAll(async () => {
    await isolated.stop();
    carol = await startIsolatedServer({ name: "tinker-restart", entity: "carol", env: { ...env, TINKER_SEQ_GAP_WAIT_MS: "120000" } });
    isolated = carol;
    key = `tml-${carol.key}`;
  }, 120_000);

  it("keeps every finished result, and fails what was still waiting with a reason", async () => {
    const sessionId = await session();
    const made = await createModel(sessionId, 0);
    const modelId = (await result(made.json.request_id as string)).json.model_id as string;
    const done = await call("POST", "/api/v1/forward_backward", forwardBackwardBody(modelId, 1, [datum], "cross_entropy", { forwardOnly: true }));
    const before = decodeForwardBackward((await result(done.json.request_id as string, true)).bytes);
    const stuck = await call("POST", "/api/v1/forward_backward", forwardBackwardBody(modelId, 9, [datum], "cross_entropy", { forwardOnly: true }));
    await isolated.restart();
    const after = decodeForwardBackward((await result(done.json.request_id as string, true)).bytes);
    expect(after.perDatum).toEqual(before.perDatum);
    expect(after.output.metrics).toEqual(before.output.metrics);
    const failed = await result(stuck.json.request_id as string);
    expect(failed.json).toMatchObject({ error: expect.stringContaining("restarted"), category: "server" });
    // The trainer restarted with it: the client's live state is gone, and its next command says so,
    // at once: its order goes on from the seq_ids stored (not waiting 120 s for seq 1 to 9 again).
    const asked = Date.now();
    const next = await call("POST", "/api/v1/forward_backward", forwardBackwardBody(modelId, 10, [datum], "cross_entropy", { forwardOnly: true }));
    const lost = await result(next.json.request_id as string);
    expect(Date.now() - asked).toBeLessThan(60_000);
    expect(lost.json).toMatchObject({ error: expect.stringContaining("load_state"), category: "server" });
  }, 180_000);
});
