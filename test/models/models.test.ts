// Models end to end: create (all return_existing cases), isolation between entities, concurrent
// creates, and the delete cascade.
import { beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { sharedBlobStore } from "../support/blob-store.js";
import { Checkpoints } from "../../services/models/checkpoints.js";
import { EventLog } from "../../services/events/event-log.js";
import { connectClient, grpcUnary, rest } from "../support/clients.js";
import { withDatabase } from "../support/db.js";
import { createKey, uniqueEntity } from "../support/keys.js";

interface ModelJson {
  id: string;
  entity: string;
  project: string;
  name: string;
  base_model: string;
  run_id: string | null;
}

let entity = "";
let key = "";
beforeAll(async () => {
  entity = uniqueEntity("models");
  key = await createKey(entity);
});

const createModel = (body: Record<string, unknown>, apiKey = key) => rest("POST", "/v1/preview/models", { key: apiKey, body });

describe("create model", () => {
  it("creates a model with its run and resolves a null entity to the key's", async () => {
    const res = await createModel({ entity: null, project: "demo", name: "agent-001", base_model: "tiny-chat", return_existing: true });
    expect(res.status).toBe(200);
    const model = res.body as ModelJson;
    expect(model).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), entity, project: "demo", name: "agent-001", base_model: "tiny-chat", run_id: expect.stringMatching(/^[a-z0-9]{8}$/), created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });
    const run = await rest("GET", `/v1/preview/runs/${model.run_id}`, { key });
    expect(run.body).toMatchObject({ id: model.run_id, entity, project: "demo", name: "agent-001", model_id: model.id, summary: {} });
    // Every model starts at step 0 (the base model).
    const checkpoints = await rest("GET", `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`, { key });
    expect(checkpoints.body).toMatchObject({ object: "list", has_more: false, data: [{ step: 0, metrics: {} }] });
  });

  it("covers the four return_existing cases", async () => {
    const body = { project: "demo", name: "cases", base_model: "tiny-chat" };
    const fresh = await createModel({ ...body, return_existing: false });
    expect(fresh.status).toBe(200);
    const freshTrue = await createModel({ ...body, name: "cases-2", return_existing: true });
    expect(freshTrue.status).toBe(200);
    const again = await createModel({ ...body, return_existing: true });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(fresh.body);
    const duplicate = await createModel({ ...body, return_existing: false });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toEqual({
      detail: `model "cases" already exists in ${entity}/demo (id ${(fresh.body as ModelJson).id}); pass return_existing: true to get it`,
    });
    const omitted = await createModel(body); // return_existing defaults to false
    expect(omitted.status).toBe(409);
    const otherBase = await createModel({ ...body, base_model: "tiny-chat-2", return_existing: true });
    expect(otherBase.status).toBe(400); // not in the catalog
  });

  it("refuses an unknown base model, a bad name and another entity", async () => {
    const unknown = await createModel({ project: "demo", name: "x", base_model: "Qwen/Qwen3-14B" });
    expect(unknown.status).toBe(400);
    expect((unknown.body as { detail: string }).detail).toBe(
      'unknown base model "Qwen/Qwen3-14B"; this deployment offers: tiny-chat, tiny-tools (GET /v1/preview/base-models)',
    );
    const badName = await createModel({ project: "demo", name: "a/b", base_model: "tiny-chat" });
    expect(badName.status).toBe(400);
    const foreign = await createModel({ entity: "someone-else", project: "demo", name: "x", base_model: "tiny-chat" });
    expect(foreign.status).toBe(403);
  });

  it("gives 20 concurrent creates of one name one model", async () => {
    const body = { project: "race", name: "same-name", base_model: "tiny-chat", return_existing: true };
    const results = await Promise.all(Array.from({ length: 20 }, () => createModel(body)));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(results.map((r) => (r.body as ModelJson).id)).size).toBe(1);
    expect(new Set(results.map((r) => (r.body as ModelJson).run_id)).size).toBe(1);
    const count = await withDatabase((db) => db.db.collection("models").countDocuments({ entity, project: "race", name: "same-name" }));
    expect(count).toBe(1);
  });

  it("works over gRPC and Connect with the same outcome", async () => {
    const viaGrpc = await grpcUnary(Models.method.createModel, { project: "grpc", name: "m", baseModel: "tiny-chat", returnExisting: true }, key);
    expect(viaGrpc.message).toMatchObject({ entity, project: "grpc", name: "m", baseModel: "tiny-chat" });
    const viaConnect = await connectClient(Models, "connect-binary", key).createModel({ project: "grpc", name: "m", baseModel: "tiny-chat", returnExisting: true });
    expect(viaConnect.id).toBe(viaGrpc.message?.id);
    const conflict = await grpcUnary(Models.method.createModel, { project: "grpc", name: "m", baseModel: "tiny-chat" }, key);
    expect(conflict.error?.code).toBe(6); // ALREADY_EXISTS
  });
});

describe("list models", () => {
  it("pages newest first, exactly once each, even when models share a creation time", async () => {
    const listKey = await createKey(uniqueEntity("lister"));
    const made: ModelJson[] = [];
    for (const name of ["m1", "m2", "m3", "m4", "m5"]) made.push((await createModel({ project: "list", name, base_model: "tiny-chat" }, listKey)).body as ModelJson);
    // Three of them in one millisecond, as concurrent creates can be.
    const tie = new Date();
    await withDatabase(async ({ db }) => {
      await db.collection("models").updateMany({ _id: { $in: made.slice(1, 4).map((m) => m.id) } as never }, { $set: { created_at: tie } });
      await db.collection("models").updateOne({ _id: made[4]?.id as never }, { $set: { created_at: new Date(tie.getTime() + 1) } });
    });
    const seen: string[] = [];
    let after = "";
    for (let page = 0; page < 10; page++) {
      const res = await rest("GET", `/v1/preview/models?limit=2${after ? `&after=${after}` : ""}`, { key: listKey });
      expect(res.status).toBe(200);
      const body = res.body as { data: ModelJson[]; has_more: boolean; last_id: string };
      seen.push(...body.data.map((m) => m.name));
      if (!body.has_more) break;
      after = body.last_id;
    }
    expect(seen.length).toBe(5);
    expect(new Set(seen).size).toBe(5);
    expect(seen[0]).toBe("m5");
    expect(seen[4]).toBe("m1");
  });
});

describe("isolation between entities", () => {
  it("makes another entity's model, run and jobs indistinguishable from absent ones", async () => {
    const mine = (await createModel({ project: "iso", name: "private", base_model: "tiny-chat" })).body as ModelJson;
    const otherKey = await createKey(uniqueEntity("intruder"));
    const absent = "00000000-0000-4000-8000-000000000000";
    for (const id of [mine.id, absent]) {
      expect(await rest("GET", `/v1/preview/models/${id}/checkpoints`, { key: otherKey })).toMatchObject({ status: 404, body: { detail: `model ${id} not found` } });
      expect((await rest("DELETE", `/v1/preview/models/${id}`, { key: otherKey })).status).toBe(404);
      expect((await rest("POST", `/v1/preview/models/${id}/log`, { key: otherKey, body: { split: "val", trajectory_groups: [] } })).status).toBe(404);
      expect((await rest("POST", "/v1/preview/training-jobs", { key: otherKey, body: { model_id: id, trajectory_groups: [{ trajectories: [] }] } })).status).toBe(404);
    }
    expect((await rest("GET", `/v1/preview/runs/${mine.run_id}`, { key: otherKey })).status).toBe(404);
    // The W&B API (wandb SDK): the model's run (by id or by the model's name), its lora artifacts.
    const basic = { authorization: `Basic ${Buffer.from(`api:${otherKey}`).toString("base64")}`, "content-type": "application/json" };
    const ownerEntity = ((await rest("GET", "/v1/preview/whoami", { key })).body as { entity: string }).entity;
    for (const runName of [mine.run_id, mine.name]) {
      const stream = await rest("POST", `/files/${ownerEntity}/iso/${runName}/file_stream`, { headers: basic, body: { files: { "wandb-history.jsonl": { offset: 0, content: ['{"_step": 0, "x": 1}'] } } } });
      expect(stream.status).toBe(404);
      const graphql = await rest("POST", "/graphql", {
        headers: basic,
        body: { query: `query ($e: String, $r: String!, $a: String!) { project(name: "iso", entityName: $e) { run(name: $r) { id } artifact(name: $a) { id } } }`, variables: { e: ownerEntity, r: runName, a: `${mine.name}:latest` } },
      });
      expect(graphql).toMatchObject({ status: 200, body: { data: { project: null } } });
      // Nor in a project of the intruder's own of the same name.
      const own = await rest("POST", "/graphql", { headers: basic, body: { query: `query ($r: String!) { project(name: "iso") { run(name: $r) { id } } }`, variables: { r: runName } } });
      expect(own).toMatchObject({ status: 200, body: { data: { project: { run: null } } } });
    }
    const error = await connectClient(Models, "connect-json", otherKey)
      .deleteModel({ modelId: mine.id })
      .then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.NotFound);
    // Still there for its owner.
    expect((await rest("GET", `/v1/preview/models/${mine.id}/checkpoints`, { key })).status).toBe(200);
  });
});

describe("delete model", () => {
  it("removes the model and everything it owns, cancelling its running job first", async () => {
    const model = (await createModel({ project: "cascade", name: "doomed", base_model: "tiny-chat" })).body as ModelJson;
    const keep = (await createModel({ project: "cascade", name: "bystander", base_model: "tiny-chat" })).body as ModelJson;
    await withDatabase(async ({ db }) => {
      const checkpoints = new Checkpoints(db, sharedBlobStore());
      for (const step of [1, 2, 3]) await checkpoints.create(model.id, step, { loss: step }, { gguf: Buffer.alloc(300_000, step), peft: null });
      await checkpoints.create(keep.id, 1, {}, { gguf: Buffer.alloc(1000), peft: null });
    });
    const groups = [{ trajectories: [{ messages_and_choices: [{ role: "user", content: "hi" }], reward: 1 }] }];
    expect((await rest("POST", `/v1/preview/models/${model.id}/log`, { key, body: { split: "val", trajectory_groups: groups } })).status).toBe(200);
    const job = (await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups } })).body as { id: string };
    const queuedJob = (await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups } })).body as { id: string };
    await withDatabase(async ({ db }) => {
      await db.collection("training_jobs").updateOne({ _id: job.id as never }, { $set: { status: "running", lease_owner: "test-worker", lease_expires_at: new Date(Date.now() + 60_000) } });
      await new EventLog(db).append(job.id, "training_started", { num_sequences: 1 });
    });
    // A watcher following the running job sees its terminal event when the model goes.
    const watch = fetch(`${(await import("vitest")).inject("baseUrl")}/v1/preview/training-jobs/${job.id}/events/watch`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.text());

    // The wandb SDK logged into the model's run too (by the model's name, as ART does).
    const ownerEntity = ((await rest("GET", "/v1/preview/whoami", { key })).body as { entity: string }).entity;
    const basic = { authorization: `Basic ${Buffer.from(`api:${key}`).toString("base64")}`, "content-type": "application/json" };
    const upsert = await rest("POST", "/graphql", { headers: basic, body: { query: `mutation { upsertBucket(input: {name: "doomed", modelName: "cascade"}) { bucket { name } } }` } });
    expect(upsert).toMatchObject({ status: 200, body: { data: { upsertBucket: { bucket: { name: "doomed" } } } } });
    expect((await rest("POST", `/files/${ownerEntity}/cascade/doomed/file_stream`, { headers: basic, body: { files: { "wandb-history.jsonl": { offset: 0, content: ['{"_step": 0, "x": 1}'] } } } })).status).toBe(200);

    const before = await countOwned(model);
    expect(before).toMatchObject({ models: 1, checkpoints: 4, runs: 1, wandb_runs: 1, trajectories: 1, training_jobs: 2, blobs: 5 }); // 3 adapters, 2 job inputs
    expect(before.run_metrics).toBeGreaterThan(0);
    expect(before.events).toBeGreaterThan(0);

    const res = await rest("DELETE", `/v1/preview/models/${model.id}`, { key });
    expect(res).toMatchObject({ status: 200, body: { model_id: model.id, deleted_checkpoints: 4, deleted_run: true } });
    const streamed = await watch;
    expect(streamed).toContain('"type":"training_started"');
    expect(streamed).toContain('"type":"training_failed","data":{"error_message":"cancelled: the model was deleted"}');

    expect(await countOwned(model)).toEqual({ models: 0, checkpoints: 0, checkpoint_heads: 0, runs: 0, wandb_runs: 0, run_metrics: 0, trajectories: 0, training_jobs: 0, events: 0, event_streams: 0, blobs: 0 });
    expect((await countOwned(keep)).checkpoints).toBe(2);
    expect((await rest("DELETE", `/v1/preview/models/${model.id}`, { key })).status).toBe(404);
    expect((await rest("GET", `/v1/preview/training-jobs/${queuedJob.id}`, { key })).status).toBe(404);
  });
});

async function countOwned(model: ModelJson) {
  return withDatabase(async ({ db }) => {
    const jobIds = (await db.collection("training_jobs").find({ model_id: model.id }).toArray()).map((j) => j._id);
    // Not distinct(): FerretDB refuses the maxTimeMS that the driver's timeoutMS adds to it.
    const eventJobIds = (await db.collection("events").find({ job_id: { $in: jobIds } }, { projection: { job_id: 1 } }).toArray()).map((e) => e.job_id as (typeof jobIds)[number]);
    const allJobIds = [...new Set([...jobIds, ...eventJobIds])];
    return {
      models: await db.collection("models").countDocuments({ _id: model.id as never }),
      checkpoints: await db.collection("checkpoints").countDocuments({ model_id: model.id }),
      checkpoint_heads: await db.collection("checkpoint_heads").countDocuments({ _id: model.id as never }),
      runs: await db.collection("runs").countDocuments({ _id: model.run_id as never }),
      wandb_runs: await db.collection("wandb_runs").countDocuments({ _id: model.run_id as never }),
      run_metrics: await db.collection("run_metrics").countDocuments({ run_id: model.run_id }),
      trajectories: await db.collection("trajectories").countDocuments({ model_id: model.id }),
      training_jobs: jobIds.length,
      events: allJobIds.length === 0 ? await db.collection("events").countDocuments({ job_id: { $in: [] } }) : await db.collection("events").countDocuments({ job_id: { $in: allJobIds } }),
      event_streams: await db.collection("event_streams").countDocuments({ _id: { $in: allJobIds } }),
      // Records naming a blob that is stored (the collector removes blobs once no record names them).
      blobs: await storedBlobsNamedBy([
        ...(await db.collection<{ adapter_sha256?: string | null }>("checkpoints").find({ model_id: model.id }).toArray()).map((c) => c.adapter_sha256),
        ...(await db.collection<{ input_sha256?: string | null }>("training_jobs").find({ model_id: model.id }).toArray()).map((j) => j.input_sha256),
      ]),
    };
  });
}

async function storedBlobsNamedBy(names: (string | null | undefined)[]): Promise<number> {
  const store = sharedBlobStore();
  let stored = 0;
  for (const name of names) if (name && (await store.stat(name))) stored++;
  return stored;
}
