// The database fails under a running service: paused (SIGSTOP: it holds its connections and never
// answers) and killed (kill -9). Calls fail fast with 503 and Retry-After instead of hanging, the
// health endpoint says so, and the service recovers by itself: the driver reconnects, and the
// embedded database's supervisor restarts a killed database on the same data.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findProcess, isRunning } from "../support/processes.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

interface Health {
  status: string;
  database: { status: string; kind: string; since: string; restarts: number; error: string | null };
}

let dataDir = "";
let server: ServerProcess;
let key = "";

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "srl-db-faults-"));
  // The embedded default, as `npm start` runs it: the server starts (and supervises) FerretDB.
  // The first restart waits 8 s, so that the window without a database is there to be seen: a
  // request may take up to 3 s to fail, and on a loaded machine a 3 s window had already closed
  // (restarted and reconnected) by the time health was asked.
  server = await startServerProcess({ DATA_DIR: dataDir, MONGODB_URI: "", BOOTSTRAP_ENTITY: "faults", DATABASE_RESTART_DELAY_MS: "8000" }, "faults");
  key = /(srl_[0-9A-Za-z]{43})/.exec(server.stdout())?.[1] ?? "";
  expect(key).not.toBe("");
  kind = (await health()).database.kind;
  expect(["ferretdb", "mongod"]).toContain(kind);
});

afterAll(async () => {
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

// FerretDB here; mongod where one can be had (the launcher prefers it).
let kind = "";
const databasePid = () => findProcess(kind, dataDir);

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; ms: number; body: unknown; headers: Headers }> {
  const started = performance.now();
  const res = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, ms: performance.now() - started, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

const createModel = (name: string) => call("POST", "/v1/preview/models", { project: "faults", name, base_model: "tiny-chat" });
const health = async () => (await call("GET", "/v1/health")).body as Health;

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

// The server's own account of the last failed request, for an assertion message: its log (JSON
// lines on stderr, kept in its log file), read after a pause so the line has been written.
async function lastFailureLogged(): Promise<string> {
  await new Promise((resolve) => setTimeout(resolve, 500));
  const log = await readFile(server.logFile, "utf8").catch(() => "");
  const failures = log.split("\n").filter((line) => line.includes('"msg":"request failed"') || line.includes('"msg":"request handler failed"'));
  return failures.pop()?.slice(0, 1500) ?? "(none logged)";
}

async function expectUnavailable(result: { status: number; ms: number; body: unknown; headers: Headers }, shape: "detail" | "openai") {
  if (result.status !== 503) expect.fail(`expected 503, got ${result.status} ${JSON.stringify(result.body)}; server log: ${await lastFailureLogged()}`);
  expect(result.ms).toBeLessThan(3_000);
  expect(result.headers.get("retry-after")).toBe("1");
  if (shape === "openai") expect(result.body).toMatchObject({ error: { type: "ServiceUnavailableError", code: 503, message: expect.stringContaining("database is unavailable") } });
  else expect(result.body).toMatchObject({ detail: expect.stringContaining("database is unavailable") });
}

describe("the database stops answering (paused)", () => {
  it("answers 503 within 3 s while it is paused, reports it, and serves again once it resumes, without a restart", async () => {
    const model = await createModel("before-pause");
    expect(model.status).toBe(200);
    const modelId = (model.body as { id: string }).id;
    expect((await health()).database).toMatchObject({ status: "ok", kind, restarts: 0 });
    const pid = databasePid();
    process.kill(pid, "SIGSTOP");
    try {
      await expectUnavailable(await createModel("during-pause"), "detail");
      await expectUnavailable(await call("GET", `/v1/preview/models/${modelId}/checkpoints`), "detail");
      await expectUnavailable(await call("POST", "/v1/chat/completions", { model: `faults/before-pause`, messages: [{ role: "user", content: "hi" }], max_tokens: 2 }), "openai");
      expect((await call("GET", "/v1/system-check")).status).toBe(503);
      const degraded = await waitFor("health to report the database unreachable", async () => {
        const seen = await health();
        return seen.status === "degraded" ? seen : undefined;
      });
      expect(degraded.database).toMatchObject({ status: "unreachable", kind, restarts: 0 });
      expect(degraded.database.error).toEqual(expect.any(String));
    } finally {
      process.kill(pid, "SIGCONT");
    }
    const created = await waitFor("a model create to succeed", async () => {
      const result = await createModel("after-pause");
      return result.status === 200 ? result : undefined;
    });
    expect(created.body).toMatchObject({ name: "after-pause" });
    expect((await call("GET", `/v1/preview/models/${modelId}/checkpoints`)).status).toBe(200);
    await waitFor("health to report ok", async () => ((await health()).status === "ok" ? true : undefined));
    expect(databasePid()).toBe(pid); // the same database process: nothing was restarted
    expect(server.child.exitCode).toBeNull();
  });
});

describe("the database dies (kill -9)", () => {
  it("answers 503, the supervisor restarts it on the same data, and calls succeed again with nothing lost", async () => {
    for (const name of ["kept-1", "kept-2", "kept-3"]) expect((await createModel(name)).status).toBe(200);
    const before = (await call("GET", "/v1/preview/models?limit=100")).body as { data: { id: string; name: string }[] };
    const pid = databasePid();
    process.kill(pid, "SIGKILL");
    await waitFor("the database process to end", async () => (isRunning(pid) ? undefined : true), 5_000);
    // The supervisor hears of the exit from the database's guard process, a moment after the
    // database itself is gone.
    const restarting = await waitFor("health to report the database restarting", async () => {
      const seen = await health();
      return seen.database.status === "restarting" ? seen : undefined;
    }, 5_000);
    expect(restarting.status).toBe("degraded");
    expect(restarting.database).toMatchObject({ status: "restarting", kind, restarts: 0, error: expect.stringContaining("exited") });
    await expectUnavailable(await createModel("while-dead"), "detail");

    const created = await waitFor("a model create to succeed", async () => {
      const result = await createModel("after-restart");
      return result.status === 200 ? result : undefined;
    });
    expect(created.body).toMatchObject({ name: "after-restart" });
    expect(databasePid()).not.toBe(pid);
    const after = (await call("GET", "/v1/preview/models?limit=100")).body as { data: { id: string; name: string }[] };
    for (const model of before.data) expect(after.data).toContainEqual(model);
    const healthy = await waitFor("health to report ok", async () => {
      const seen = await health();
      return seen.status === "ok" ? seen : undefined;
    });
    expect(healthy.database).toMatchObject({ status: "ok", kind, restarts: 1, error: null });
    expect(server.child.exitCode).toBeNull();
    expect(await readFile(server.logFile, "utf8")).toMatch(/"msg":"embedded database exited/);
  });
});
