// Crash recovery: standalone workers share the database; the one running a job is killed with
// SIGKILL, its lease expires, another worker retries the job from the start and finishes it, with
// one checkpoint and one terminal event.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmbeddedDatabase } from "../../services/store/launcher.js";
import type { Database } from "../../services/store/mongo.js";
import type { ServerProcess } from "../support/server-process.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const repoRoot = join(import.meta.dirname, "..", "..");
let isolated: IsolatedServer;
let dataDir = "";
let database: EmbeddedDatabase;
let db: Database;
let server: ServerProcess;
let key = "";
const workers: ChildProcess[] = [];

function startWorker(): ChildProcess {
  const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "services/app/worker-main.ts")], {
    cwd: repoRoot,
    env: { ...process.env, MONGODB_URI: database.uri, MONGODB_DB: "srl_crash", DATA_DIR: dataDir, WORKER_LEASE_MS: "2000", LOG_LEVEL: "warn" },
    stdio: "ignore",
  });
  workers.push(child);
  return child;
}

const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

/** Every event of a job, in order, through the API's pagination. */
async function eventTypes(jobId: string): Promise<string[]> {
  const types: string[] = [];
  for (let after = ""; ; ) {
    const page = (await call("GET", `/v1/preview/training-jobs/${jobId}/events?limit=100${after ? `&after=${after}` : ""}`)).body as { data: { type: string }[]; has_more: boolean; last_id: string };
    types.push(...page.data.map((e) => e.type));
    if (!page.has_more) return types;
    after = page.last_id;
  }
}

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "crash", entity: "crash", env: { TRAINING_WORKER: "0" } });
  ({ dataDir, database, db, server, key } = isolated);
});
afterAll(async () => {
  for (const worker of workers) if (worker.exitCode === null) worker.kill("SIGKILL");
  await isolated?.stop();
});

describe("a worker killed during a job", () => {
  it("loses the job to another worker, which finishes it with one checkpoint and one terminal event", async () => {
    const model = (await call("POST", "/v1/preview/models", { project: "crash", name: "m", base_model: "tiny-chat" })).body as { id: string };
    const lines = Array.from({ length: 160 }, (_, i) => JSON.stringify({ messages: [{ role: "user", content: `question ${i}` }, { role: "assistant", content: `answer ${i}` }] }));
    const upload = await fetch(`${server.url}/v1/preview/artifacts?project=crash&name=data`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: lines.join("\n") });
    const artifact = (await upload.json()) as { url: string };
    const job = (await call("POST", "/v1/preview/sft-training-jobs", { model_id: model.id, training_data_url: artifact.url, config: { batch_size: 1 } })).body as { id: string };

    const first = startWorker();
    // Wait until the job is running and has made progress, then kill its worker.
    const jobs = db.db.collection("training_jobs");
    for (let i = 0; i < 120; i++) {
      if ((await eventTypes(job.id)).filter((t) => t === "gradient_step").length >= 2) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const running = await jobs.findOne({ _id: job.id as never });
    expect(running?.status).toBe("running");
    expect(String(running?.lease_owner)).toContain(`:${first.pid}:`);
    first.kill("SIGKILL");

    startWorker();
    let done: Record<string, unknown> | null = null;
    for (let i = 0; i < 240 && !done; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const state = (await call("GET", `/v1/preview/training-jobs/${job.id}`)).body;
      if (state.status === "succeeded" || state.status === "failed") done = state;
    }
    expect(done).toMatchObject({ status: "succeeded", step: 1 });
    const attempts = (await jobs.findOne({ _id: job.id as never }))?.attempts;
    expect(attempts).toBe(2);
    const checkpoints = (await call("GET", `/v1/preview/models/${model.id}/checkpoints`)).body as { data: { step: number }[] };
    expect(checkpoints.data.map((c) => c.step)).toEqual([0, 1]);
    const types = await eventTypes(job.id);
    expect(types.length).toBeGreaterThan(100); // several pages
    expect(types[0]).toBe("training_started");
    expect(types.filter((t) => t === "training_started").length).toBe(1);
    expect(types.filter((t) => t === "training_ended" || t === "training_failed")).toEqual(["training_ended"]);
  }, 300000);
});
