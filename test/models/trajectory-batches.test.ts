// Stored trajectories read back: every /log call and every RL job's input is a batch, listed newest
// first across both, filtered by split and paginated; a batch's groups come back exactly as sent
// (any keys, large groups kept in the blob store included), through REST and gRPC, and only to their owner.
// Also GetModel, which the console's pages use.
import { beforeAll, describe, expect, it } from "vitest";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { grpcUnary, rest, type ListPage } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

interface Batch {
  id: string;
  source: string;
  split: string;
  step: number;
  num_groups: number;
  created_at: string;
  training_job_id?: string;
  training_job_status?: string;
}
interface Group {
  id: string;
  index: number;
  group: Record<string, unknown>;
}

let key = "";
let model = { id: "" };
const valGroups = [
  { trajectories: [{ messages_and_choices: [{ role: "user", content: "2+2?" }, { role: "assistant", content: "4" }], reward: 1, metrics: { correct: true }, custom_key: { kept: [1, 2] } }], metadata: { task: "add" } },
  { trajectories: [{ messages_and_choices: [{ role: "user", content: "3+3?" }, { role: "assistant", content: "7" }], reward: 0 }] },
];
const trainGroups = [0, 1, 2].map((i) => ({ trajectories: [{ messages_and_choices: [{ role: "user", content: `q${i}` }], reward: i / 2 }, { reward: 0.25 }] }));
const jobGroups = [0, 1].map((i) => ({ trajectories: [{ messages_and_choices: [{ role: "user", content: `job ${i}` }, { role: "assistant", content: "a" }], reward: i }, { messages_and_choices: [], reward: 1 - i }] }));
let jobId = "";

const batchesOf = async (query = "", as = key) => rest("GET", `/v1/preview/models/${model.id}/trajectory-batches${query}`, { key: as });
const groupsOf = async (batchId: string, query = "") => rest("GET", `/v1/preview/models/${model.id}/trajectory-batches/${batchId}/groups${query}`, { key });

beforeAll(async () => {
  key = await createKey(uniqueEntity("trajbatches"));
  model = (await rest("POST", "/v1/preview/models", { key, body: { project: "traj", name: "browse", base_model: "tiny-chat" } })).body as { id: string };
  expect((await rest("POST", `/v1/preview/models/${model.id}/log`, { key, body: { split: "val", trajectory_groups: valGroups } })).status).toBe(200);
  expect((await rest("POST", `/v1/preview/models/${model.id}/log`, { key, body: { split: "train", trajectory_groups: trainGroups } })).status).toBe(200);
  const job = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: jobGroups } });
  expect(job.status).toBe(200);
  jobId = (job.body as { id: string }).id;
});

describe("trajectory batches", () => {
  it("lists each log call and each RL job as a batch, newest first, with split, step and group count", async () => {
    const res = await batchesOf();
    expect(res.status).toBe(200);
    const page = res.body as ListPage<Batch>;
    expect(page.object).toBe("list");
    expect(page.data.map((b) => [b.source, b.split, b.step, b.num_groups])).toEqual([
      ["training_job", "train", 0, 2],
      ["log", "train", 0, 3],
      ["log", "val", 0, 2],
    ]);
    expect(page.data[0]).toMatchObject({ id: jobId, training_job_id: jobId, training_job_status: "queued" });
    expect(page.data[1]?.training_job_id ?? null).toBeNull();
    const times = page.data.map((b) => Date.parse(b.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(page.has_more).toBe(false);
    expect(page.first_id).toBe(jobId);
  });

  it("filters by split and pages with after", async () => {
    expect(((await batchesOf("?split=val")).body as ListPage<Batch>).data.map((b) => b.split)).toEqual(["val"]);
    expect(((await batchesOf("?split=train")).body as ListPage<Batch>).data.map((b) => b.source)).toEqual(["training_job", "log"]);
    expect(((await batchesOf("?split=test")).body as ListPage<Batch>).data).toEqual([]);
    const first = (await batchesOf("?limit=1")).body as ListPage<Batch>;
    expect(first.has_more).toBe(true);
    const second = (await batchesOf(`?limit=1&after=${first.last_id}`)).body as ListPage<Batch>;
    const third = (await batchesOf(`?limit=1&after=${second.last_id}`)).body as ListPage<Batch>;
    expect([first, second, third].map((p) => p.data[0]?.source)).toEqual(["training_job", "log", "log"]);
    expect(third.has_more).toBe(false);
    const bad = await batchesOf("?after=nope");
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain("no trajectory batch with id nope");
  });

  it("returns a batch's groups exactly as they were sent, paged by position", async () => {
    const [, trainLog, valLog] = ((await batchesOf()).body as ListPage<Batch>).data;
    const val = (await groupsOf(valLog?.id ?? "")).body as ListPage<Group>;
    expect(val.data.map((g) => g.group)).toEqual(valGroups);
    expect(val.data.map((g) => g.id)).toEqual([`${valLog?.id}:0`, `${valLog?.id}:1`]);
    const page1 = (await groupsOf(trainLog?.id ?? "", "?limit=2")).body as ListPage<Group>;
    expect(page1.has_more).toBe(true);
    const page2 = (await groupsOf(trainLog?.id ?? "", `?limit=2&after=${page1.last_id}`)).body as ListPage<Group>;
    expect(page2.has_more).toBe(false);
    expect([...page1.data, ...page2.data].map((g) => g.group)).toEqual(trainGroups);
    expect([...page1.data, ...page2.data].map((g) => g.index)).toEqual([0, 1, 2]);
    // A training job's batch is the groups it was given.
    const job = (await groupsOf(jobId, "?limit=1")).body as ListPage<Group>;
    expect(job.data.map((g) => g.group)).toEqual([jobGroups[0]]);
    expect(job.has_more).toBe(true);
    expect(((await groupsOf(jobId, `?after=${job.last_id}`)).body as ListPage<Group>).data.map((g) => g.group)).toEqual([jobGroups[1]]);
  });

  it("reads back groups too large for a document (kept in the blob store), a page holding at most 16 MiB past its first group", async () => {
    const sized = (mb: number, tag: string) => ({ trajectories: [{ messages_and_choices: [{ role: "user", content: tag.repeat(mb * 1024 * 1024) }], reward: 0.5 }], metadata: { tag } });
    const big = [sized(9, "a"), sized(6, "b"), sized(6, "c")];
    expect((await rest("POST", `/v1/preview/models/${model.id}/log`, { key, body: { split: "big", trajectory_groups: big } })).status).toBe(200);
    const [batch] = ((await batchesOf("?split=big")).body as ListPage<Batch>).data;
    expect(batch?.num_groups).toBe(3);
    const first = (await groupsOf(batch?.id ?? "")).body as ListPage<Group>;
    expect(first.data.map((g) => g.group)).toEqual(big.slice(0, 2)); // 9 + 6 MiB; a third would pass 16
    expect(first.has_more).toBe(true);
    const second = (await groupsOf(batch?.id ?? "", `?after=${first.last_id}`)).body as ListPage<Group>;
    expect(second.data.map((g) => g.group)).toEqual(big.slice(2));
    expect(second.has_more).toBe(false);
  });

  it("refuses unknown batches, bad cursors, and other entities' models; gRPC gives the same", async () => {
    const missing = await groupsOf("00000000-0000-0000-0000-000000000000");
    expect(missing.status).toBe(404);
    expect(JSON.stringify(missing.body)).toContain("trajectory batch 00000000-0000-0000-0000-000000000000 not found");
    const [, trainLog] = ((await batchesOf()).body as ListPage<Batch>).data;
    expect((await groupsOf(trainLog?.id ?? "", "?after=other:3")).status).toBe(400);
    expect((await groupsOf(trainLog?.id ?? "", "?limit=501")).status).toBe(422);
    const stranger = await createKey(uniqueEntity("trajstranger"));
    expect((await batchesOf("", stranger)).status).toBe(404);
    const viaGrpc = await grpcUnary(Models.method.listTrajectoryGroups, { modelId: model.id, batchId: jobId, limit: 5 }, key);
    expect(viaGrpc.message?.data.map((g) => g.group)).toEqual(jobGroups);
    const listed = await grpcUnary(Models.method.listTrajectoryBatches, { modelId: model.id, split: "val" }, key);
    expect(listed.message?.data[0]).toMatchObject({ source: "log", split: "val", step: 0, numGroups: 2 });
  });

  it("gives one model by id with its creation time, and only to its entity", async () => {
    const listed = (await rest("GET", "/v1/preview/models", { key })).body as ListPage<{ id: string; created_at: string }>;
    const one = await rest("GET", `/v1/preview/models/${model.id}`, { key });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(listed.data.find((m) => m.id === model.id));
    const created = (one.body as { created_at: string }).created_at;
    expect(Math.abs(Date.now() - Date.parse(created))).toBeLessThan(3600 * 1000);
    expect(created).toMatch(/^\d{4}-\d\d-\d\dT/);
    const stranger = await createKey(uniqueEntity("modelstranger"));
    expect(await rest("GET", `/v1/preview/models/${model.id}`, { key: stranger })).toMatchObject({ status: 404, body: { detail: `model ${model.id} not found` } });
    expect((await rest("GET", "/v1/preview/models/no-such-id", { key })).status).toBe(404);
    expect((await grpcUnary(Models.method.getModel, { modelId: model.id }, key)).message?.createdAt).toBe(created);
  });
});
