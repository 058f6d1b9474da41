// Training-job records and their event log through the public API: creation, reading, cancelling,
// listing events with pagination, watching them live (SSE and Connect streaming), and the log's
// invariants. Events are appended the way the worker will, through the event-log module.
import { beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { Events } from "../../gen/srl/v1/events_pb.js";
import { Training } from "../../gen/srl/v1/training_pb.js";
import { EventLog } from "../../services/events/event-log.js";
import { TrainingJobs } from "../../services/jobs/training-jobs.js";
import { sharedBlobStore } from "../support/blob-store.js";
import { connectClient, grpcUnary, rest } from "../support/clients.js";
import { withDatabase } from "../support/db.js";
import { createKey, uniqueEntity } from "../support/keys.js";

interface EventJson {
  id: string;
  type: string;
  data: Record<string, unknown>;
}
interface Page<T> {
  data: T[];
  has_more: boolean;
  first_id: string;
  last_id: string;
}

let key = "";
let modelId = "";
const groups = [{ trajectories: [{ messages_and_choices: [{ role: "user", content: "hi" }], reward: 1 }, { reward: 0 }] }];

beforeAll(async () => {
  key = await createKey(uniqueEntity("jobs"));
  modelId = ((await rest("POST", "/v1/preview/models", { key, body: { project: "jobs", name: "m", base_model: "tiny-chat" } })).body as { id: string }).id;
});

async function createJob(): Promise<string> {
  const res = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: modelId, trajectory_groups: groups, experimental_config: { learning_rate: 1e-5, epsilon: null } } });
  expect(res.status).toBe(200);
  return (res.body as { id: string }).id;
}

const append = (jobId: string, type: "training_started" | "gradient_step" | "training_ended" | "training_failed", data: Record<string, number | string> = {}) =>
  withDatabase(({ db }) => new EventLog(db).append(jobId, type, data));

describe("training jobs", () => {
  it("queues an RL job and returns only its id; the job reads back as queued", async () => {
    const id = await createJob();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const job = await rest("GET", `/v1/preview/training-jobs/${id}`, { key });
    expect(job.body).toEqual({
      id,
      model_id: modelId,
      type: "rl",
      status: "queued",
      created_at: expect.any(String),
      training_start: null,
      training_end: null,
      error_message: null,
      step: null,
    });
    // The trajectories were stored exactly as sent, for the worker.
    const input = await withDatabase(async ({ db }) => {
      const jobs = new TrainingJobs(db, sharedBlobStore(), new EventLog(db));
      return jobs.inputOf(await jobs.getOwned((await db.collection("training_jobs").findOne({ _id: id as never }))?.entity as string, id));
    });
    expect(input).toEqual(groups);
  });

  it("refuses empty groups, bad config combinations and SFT data that does not resolve", async () => {
    expect(await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: modelId, trajectory_groups: [] } })).toMatchObject({
      status: 400,
      body: { detail: "trajectory_groups must not be empty" },
    });
    const combo = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: modelId, trajectory_groups: groups, experimental_config: { ppo: true, loss_fn: "cispo" } } });
    expect(combo).toMatchObject({ status: 400, body: { detail: 'experimental_config: ppo=true contradicts loss_fn="cispo"' } });
    const sft = (url: string, config?: unknown) => rest("POST", "/v1/preview/sft-training-jobs", { key, body: { model_id: modelId, training_data_url: url, config } });
    expect((await sft("wandb-artifact:///nobody/p/data:v0")).status).toBe(400);
    expect((await sft("https://data.example/train.jsonl")).body).toEqual({ detail: "training_data_url host data.example is not allowed here (operator setting ARTIFACT_HTTPS_HOSTS)" });
    expect((await sft("s3://bucket/x")).status).toBe(400);
    expect((await sft("wandb-artifact:///a/b/c:v0", { batch_size: 2.5 })).body).toEqual({ detail: 'config.batch_size must be a positive integer or "auto", got 2.5' });
    expect((await sft("wandb-artifact:///a/b/c:v0", { learning_rate: [1e-5, -1] })).body).toEqual({
      detail: [{ type: "greater_than_equal", loc: ["body", "config", "learning_rate", 1], msg: "Input should be greater than or equal to 0", input: -1, ctx: { ge: 0 } }],
    });
  });

  it("cancels a queued job with a terminal training_failed event", async () => {
    const id = await createJob();
    const cancelled = await rest("POST", `/v1/preview/training-jobs/${id}/cancel`, { key });
    expect(cancelled.body).toMatchObject({ id, status: "failed", error_message: "cancelled", training_end: expect.any(String) });
    const events = (await rest("GET", `/v1/preview/training-jobs/${id}/events`, { key })).body as Page<EventJson>;
    expect(events.data.map((e) => [e.type, e.data])).toEqual([["training_failed", { error_message: "cancelled" }]]);
    // Cancelling again changes nothing and adds no event.
    await rest("POST", `/v1/preview/training-jobs/${id}/cancel`, { key });
    expect(((await rest("GET", `/v1/preview/training-jobs/${id}/events`, { key })).body as Page<EventJson>).data.length).toBe(1);
  });
});

describe("event log", () => {
  it("lists events oldest first with after/limit and exact has_more; no after = from the start", async () => {
    const id = await createJob();
    expect((await rest("GET", `/v1/preview/training-jobs/${id}/events`, { key })).body).toEqual({ object: "list", data: [], has_more: false, first_id: "", last_id: "" });
    await append(id, "training_started", { num_sequences: 41 });
    for (let step = 1; step <= 41; step++) await append(id, "gradient_step", { loss: 1 / step, step });
    await append(id, "training_ended");
    const seen: EventJson[] = [];
    let after = "";
    const pages: [number, boolean][] = [];
    for (;;) {
      const page = (await rest("GET", `/v1/preview/training-jobs/${id}/events?limit=20${after ? `&after=${after}` : ""}`, { key })).body as Page<EventJson>;
      pages.push([page.data.length, page.has_more]);
      seen.push(...page.data);
      if (!page.has_more) break;
      after = page.last_id;
    }
    expect(pages).toEqual([[20, true], [20, true], [3, false]]);
    expect(seen.map((e) => e.type)).toEqual(["training_started", ...Array(41).fill("gradient_step"), "training_ended"]);
    expect(seen[0]?.data).toEqual({ num_sequences: 41 });
    expect(seen[41]?.data).toEqual({ loss: 1 / 41, step: 41 });
    expect(new Set(seen.map((e) => e.id)).size).toBe(43);

    const viaGrpc = await grpcUnary(Events.method.listTrainingJobEvents, { trainingJobId: id, after: seen[40]?.id, limit: 100 }, key);
    expect(viaGrpc.message?.data.map((e) => e.type)).toEqual(["gradient_step", "training_ended"]);
  });

  it("pages through a long job (events in several storage buckets, some appended concurrently) exactly once each", async () => {
    const id = await createJob();
    await withDatabase(async ({ db }) => {
      const log = new EventLog(db);
      await log.append(id, "training_started", { num_sequences: 600 });
      // In parallel batches, so bucket creation races and pushes land out of order.
      for (let step = 1; step <= 600; step += 50) await Promise.all(Array.from({ length: 50 }, (_, i) => log.append(id, "gradient_step", { step: step + i })));
      await log.append(id, "training_ended");
    });
    const seen: EventJson[] = [];
    let after = "";
    for (let pages = 0; pages < 20; pages++) {
      const page = (await rest("GET", `/v1/preview/training-jobs/${id}/events?limit=100${after ? `&after=${after}` : ""}`, { key })).body as Page<EventJson>;
      seen.push(...page.data);
      if (!page.has_more) break;
      after = page.last_id;
    }
    expect(seen.length).toBe(602);
    expect(new Set(seen.map((e) => e.id)).size).toBe(602);
    expect(seen.map((e) => e.type)).toEqual(["training_started", ...Array(600).fill("gradient_step"), "training_ended"]);
    // Appended concurrently, numbered atomically: every step is there once.
    expect(new Set(seen.slice(1, 601).map((e) => e.data.step)).size).toBe(600);
    // A cursor from another job is refused rather than misread.
    const other = await createJob();
    expect((await rest("GET", `/v1/preview/training-jobs/${other}/events?after=${seen[5]?.id}`, { key })).status).toBe(400);
  });

  it("reads past numbers a dead writer reserved but never stored", async () => {
    const id = await createJob();
    await append(id, "training_started", { num_sequences: 1 });
    // A writer that took numbers 2..301 and died before storing them (a gap across buckets).
    await withDatabase(({ db }) => db.collection("event_streams").updateOne({ _id: id as never }, { $inc: { seq: 300 } }));
    await append(id, "gradient_step", { loss: 1 });
    await append(id, "training_ended");
    const events = (await rest("GET", `/v1/preview/training-jobs/${id}/events`, { key })).body as Page<EventJson>;
    expect(events.data.map((e) => e.type)).toEqual(["training_started", "gradient_step", "training_ended"]);
    const after = (await rest("GET", `/v1/preview/training-jobs/${id}/events?after=${events.data[0]?.id}`, { key })).body as Page<EventJson>;
    expect(after.data.map((e) => e.type)).toEqual(["gradient_step", "training_ended"]);
  });

  it("enforces the invariants: started first, numeric steps, one terminal event, nothing after", async () => {
    const id = await createJob();
    await expect(append(id, "gradient_step", { loss: 1 })).rejects.toThrow("training_started must come before gradient_step");
    await append(id, "training_started", { num_sequences: 1 });
    await expect(append(id, "training_started", { num_sequences: 1 })).rejects.toThrow("has already started");
    await expect(append(id, "gradient_step", { loss: "low" })).rejects.toThrow('gradient_step data must hold only finite numbers; loss is "low"');
    await append(id, "gradient_step", { loss: 0.5 });
    await append(id, "training_ended");
    await expect(append(id, "training_failed", { error_message: "late" })).rejects.toThrow("has already ended");
    await expect(append(id, "gradient_step", { loss: 1 })).rejects.toThrow("has already ended");
    const events = (await rest("GET", `/v1/preview/training-jobs/${id}/events`, { key })).body as Page<EventJson>;
    expect(events.data.map((e) => e.type)).toEqual(["training_started", "gradient_step", "training_ended"]);
  });

  it("watch over SSE replays from after, follows new events and ends on the terminal one", async () => {
    const id = await createJob();
    const started = await append(id, "training_started", { num_sequences: 3 });
    await append(id, "gradient_step", { loss: 0.9 });
    const response = await fetch(`${inject("baseUrl")}/v1/preview/training-jobs/${id}/events/watch?after=${started.id}`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const reader = response.body?.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) {
        const chunk = await reader?.read();
        if (!chunk || chunk.done) break;
        text += decoder.decode(chunk.value);
      }
    };
    await readUntil("0.9");
    // Appended after the watch started, by another process as a standalone worker would: the
    // server's fallback poll picks it up (in-process appends wake the watch at once).
    await append(id, "gradient_step", { loss: 0.5 });
    await readUntil("0.5");
    await append(id, "training_ended");
    await readUntil("[DONE]");
    const events = text
      .split("\n\n")
      .filter((line) => line.startsWith("data: {"))
      .map((line) => JSON.parse(line.slice(6)) as EventJson);
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ["gradient_step", { loss: 0.9 }],
      ["gradient_step", { loss: 0.5 }],
      ["training_ended", {}],
    ]);
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });

  it("watch of a quiet job answers its headers without waiting for an event", async () => {
    const id = await createJob();
    const started = await append(id, "training_started", { num_sequences: 1 });
    const abort = new AbortController();
    // Nothing after `started` yet: the stream is open, its first event still to come.
    const response = await fetch(`${inject("baseUrl")}/v1/preview/training-jobs/${id}/events/watch?after=${started.id}`, { headers: { authorization: `Bearer ${key}` }, signal: abort.signal });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const reader = response.body?.getReader();
    await append(id, "training_ended");
    let text = "";
    while (!text.includes("[DONE]")) {
      const chunk = await reader?.read();
      if (!chunk || chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    expect(text).toMatch(/^: waiting for the first message\n\ndata: \{.*"training_ended"/s);
    abort.abort();
  });

  it("watch over Connect and gRPC-Web streams the same events", async () => {
    const id = await createJob();
    await append(id, "training_started", { num_sequences: 2 });
    for (const flavor of ["connect-http2", "grpc-web"] as const) {
      const received: string[] = [];
      const stream = connectClient(Events, flavor, key).watchTrainingJobEvents({ trainingJobId: id });
      const done = (async () => {
        for await (const event of stream) received.push(event.type);
      })();
      if (flavor === "connect-http2") {
        await new Promise((resolve) => setTimeout(resolve, 200));
        await append(id, "gradient_step", { loss: 1 });
        await append(id, "training_failed", { error_message: "boom" });
      }
      await done;
      expect(received, flavor).toEqual(["training_started", "gradient_step", "training_failed"]);
    }
  });

  it("hides another entity's job and rejects an unknown cursor", async () => {
    const id = await createJob();
    const otherKey = await createKey(uniqueEntity("other"));
    expect((await rest("GET", `/v1/preview/training-jobs/${id}/events`, { key: otherKey })).status).toBe(404);
    expect((await rest("GET", `/v1/preview/training-jobs/${id}`, { key: otherKey })).status).toBe(404);
    const error = await (async () => {
      for await (const _ of connectClient(Events, "connect-json", otherKey).watchTrainingJobEvents({ trainingJobId: id })) void _;
    })().then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.NotFound);
    expect((await rest("GET", `/v1/preview/training-jobs/${id}/events?after=nope`, { key })).status).toBe(400);
  });
});

describe("queue for workers", () => {
  it("claims one job per model at a time in creation order, renews leases and retakes expired ones", async () => {
    const first = await createJob();
    const second = await createJob();
    await withDatabase(async ({ db }) => {
      const jobs = new TrainingJobs(db, sharedBlobStore(), new EventLog(db));
      // Jobs of this file's other tests are queued too: drain to ours, failing the others.
      const claimOurs = async (worker: string, lease: number) => {
        for (;;) {
          const job = await jobs.claim(worker, lease);
          if (!job || job.model_id === modelId) return job;
        }
      };
      // Cancelled and finished jobs of earlier tests are not claimable; queued ones ahead of ours
      // are, so the first claim for this model is the oldest queued job of the model.
      const claimed: string[] = [];
      for (;;) {
        const job = await claimOurs("worker-a", 60_000);
        if (!job) break;
        claimed.push(job._id);
        if (job._id === first) break;
        await jobs.finish(job._id, "worker-a", 0);
      }
      expect(claimed.at(-1)).toBe(first);
      // The model is busy: its second job is not handed out.
      expect((await claimOurs("worker-b", 60_000))?._id).toBeUndefined();
      expect(await jobs.heartbeat(first, "worker-a", 60_000)).toBe(true);
      expect(await jobs.heartbeat(first, "worker-b", 60_000)).toBe(false);
      // An expired lease is taken over, and the old holder learns it lost the job.
      await db.collection("training_jobs").updateOne({ _id: first as never }, { $set: { lease_expires_at: new Date(Date.now() - 1) } });
      await db.collection("model_locks").updateOne({ _id: modelId as never }, { $set: { expires_at: new Date(Date.now() - 1) } });
      const retaken = await claimOurs("worker-b", 60_000);
      expect(retaken?._id).toBe(first);
      expect(retaken?.attempts).toBe(2);
      expect(await jobs.heartbeat(first, "worker-a", 60_000)).toBe(false);
      expect(await jobs.finish(first, "worker-b", 1)).toBe(true);
      expect((await claimOurs("worker-a", 60_000))?._id).toBe(second);
      expect(await jobs.fail(second, "trainer exploded", "worker-a")).toBe(true);
    });
    expect((await rest("GET", `/v1/preview/training-jobs/${first}`, { key })).body).toMatchObject({ status: "succeeded", step: 1 });
    expect((await rest("GET", `/v1/preview/training-jobs/${second}`, { key })).body).toMatchObject({ status: "failed", error_message: "trainer exploded" });
  });
});

describe("artifacts over Connect", () => {
  it("stores several named files in one call and refuses content and files together", async () => {
    const client = connectClient(Training, "connect-binary", key);
    const bytes = (text: string) => new TextEncoder().encode(text);
    const artifact = await client.createArtifact({
      project: "jobs",
      name: "connect-files",
      files: [
        { filename: "trajectories.jsonl", content: bytes("{}\n") },
        { filename: "metadata.json", content: bytes("{}") },
      ],
    });
    expect(artifact.version).toBe(0);
    expect(artifact.files.map((f) => [f.name, Number(f.size)])).toEqual([["trajectories.jsonl", 3], ["metadata.json", 2]]);
    const both = await client.createArtifact({ project: "jobs", name: "connect-files", content: bytes("{}"), files: [{ filename: "a.json", content: bytes("{}") }] }).catch((error: unknown) => error);
    expect(both).toBeInstanceOf(ConnectError);
    expect((both as ConnectError).code).toBe(Code.InvalidArgument);
    expect((both as ConnectError).rawMessage).toBe("give the artifact's files either as content or as files, not both");
    const twice = await client.createArtifact({ project: "jobs", name: "connect-files", files: [{ filename: "a.json", content: bytes("1") }, { filename: "a.json", content: bytes("2") }] }).catch((error: unknown) => error);
    expect((twice as ConnectError).rawMessage).toBe("the file a.json is given twice");
  });
});
