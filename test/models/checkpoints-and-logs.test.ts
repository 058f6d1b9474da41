// Checkpoint pagination and deletion, trajectory logs with their metrics, tracking-run history.
import { beforeAll, describe, expect, it } from "vitest";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { sharedBlobStore } from "../support/blob-store.js";
import { Checkpoints } from "../../services/models/checkpoints.js";
import { Runs } from "../../services/models/runs.js";
import { grpcUnary, rest, type ListPage } from "../support/clients.js";
import { withDatabase } from "../support/db.js";
import { createKey, uniqueEntity } from "../support/keys.js";

interface CheckpointJson {
  id: string;
  step: number;
  metrics: Record<string, number>;
}

let key = "";
beforeAll(async () => {
  key = await createKey(uniqueEntity("checkpoints"));
});

async function newModel(name: string): Promise<{ id: string; run_id: string }> {
  const res = await rest("POST", "/v1/preview/models", { key, body: { project: "ckpt", name, base_model: "tiny-chat" } });
  expect(res.status).toBe(200);
  return res.body as { id: string; run_id: string };
}

/** Follows `after` pagination exactly as the OpenAI SDK's cursor page does. */
async function allPages(path: string, query: string): Promise<{ items: CheckpointJson[]; pages: ListPage<CheckpointJson>[] }> {
  const items: CheckpointJson[] = [];
  const pages: ListPage<CheckpointJson>[] = [];
  let after = "";
  for (;;) {
    const res = await rest("GET", `${path}?${query}${after ? `&after=${after}` : ""}`, { key });
    expect(res.status).toBe(200);
    const page = res.body as ListPage<CheckpointJson>;
    pages.push(page);
    items.push(...page.data);
    if (!page.has_more || page.data.length === 0) return { items, pages };
    after = page.data[page.data.length - 1]?.id ?? "";
  }
}

describe("checkpoints", () => {
  it("keep their latest step right through deletions, gaps, re-creation and a lost head", async () => {
    const model = await newModel("latest");
    await withDatabase(async ({ db }) => {
      const checkpoints = new Checkpoints(db, sharedBlobStore());
      const latest = async () => (await checkpoints.latest(model.id))?.step;
      expect(await latest()).toBe(0);
      for (const step of [1, 2, 3]) await checkpoints.create(model.id, step, {});
      expect(await latest()).toBe(3);
      await checkpoints.deleteSteps(model.id, [3]);
      expect(await latest()).toBe(2);
      await checkpoints.deleteSteps(model.id, [1]);
      expect(await latest()).toBe(2);
      const again = await checkpoints.create(model.id, 3, { reward: 1 });
      expect(await latest()).toBe(3);
      expect((await checkpoints.atStep(model.id, 3))?._id).toBe(again._id);
      await expect(checkpoints.create(model.id, 3, {})).rejects.toThrow("already has a checkpoint at step 3");
      // A head that went missing (or was never written): the slow way finds the same answer.
      await db.collection("checkpoint_heads").deleteOne({ _id: model.id as never });
      expect(await latest()).toBe(3);
      // A head left pointing at a deleted step (another process deleted it): still right.
      await db.collection("checkpoint_heads").updateOne({ _id: model.id as never }, { $set: { step: 9 } }, { upsert: true });
      expect(await latest()).toBe(3);
    });
  });

  it("paginates 45 checkpoints in both orders across page boundaries with exact has_more", async () => {
    const model = await newModel("paged");
    await withDatabase(async ({ db }) => {
      const checkpoints = new Checkpoints(db, sharedBlobStore());
      // Steps 1..44 on top of step 0, written out of order.
      for (const step of [...Array.from({ length: 44 }, (_, i) => i + 1)].reverse()) await checkpoints.create(model.id, step, { "train/loss": 1 / step });
    });
    const path = `/v1/preview/models/${model.id}/checkpoints`;
    const asc = await allPages(path, "limit=20");
    expect(asc.items.map((c) => c.step)).toEqual(Array.from({ length: 45 }, (_, i) => i));
    expect(asc.pages.map((p) => [p.data.length, p.has_more])).toEqual([[20, true], [20, true], [5, false]]);
    expect(asc.pages[0]).toMatchObject({ object: "list", first_id: asc.items[0]?.id, last_id: asc.items[19]?.id });

    const desc = await allPages(path, "limit=15&order=desc");
    expect(desc.items.map((c) => c.step)).toEqual(Array.from({ length: 45 }, (_, i) => 44 - i));
    // 45 = 3 x 15: the last full page already knows nothing follows.
    expect(desc.pages.map((p) => [p.data.length, p.has_more])).toEqual([[15, true], [15, true], [15, false]]);

    const defaults = await rest("GET", path, { key });
    expect((defaults.body as ListPage<CheckpointJson>).data.length).toBe(20);
    const latest = await rest("GET", `${path}?limit=1&order=desc`, { key });
    expect((latest.body as ListPage<CheckpointJson>).data).toEqual([{ id: desc.items[0]?.id, step: 44, metrics: { "train/loss": 1 / 44 } }]);

    const unknownCursor = await rest("GET", `${path}?after=00000000-0000-4000-8000-000000000000`, { key });
    expect(unknownCursor.status).toBe(400);

    const viaGrpc = await grpcUnary(Models.method.listCheckpoints, { modelId: model.id, limit: 2, order: "desc", after: desc.items[1]?.id }, key);
    expect(viaGrpc.message?.data.map((c) => c.step)).toEqual([42, 41]);
    expect(viaGrpc.message?.hasMore).toBe(true);
  });

  it("deletes checkpoints by step and reports the missing ones", async () => {
    const model = await newModel("pruned");
    await withDatabase(async ({ db }) => {
      const checkpoints = new Checkpoints(db, sharedBlobStore());
      for (const step of [1, 2, 3, 4]) await checkpoints.create(model.id, step, {}, { gguf: Buffer.alloc(100, step), peft: null });
    });
    const res = await rest("DELETE", `/v1/preview/models/${model.id}/checkpoints`, { key, body: { steps: [1, 3, 7, 3, 9] } });
    expect(res).toMatchObject({ status: 200, body: { deleted_count: 2, not_found_steps: [7, 9] } });
    const left = (await rest("GET", `/v1/preview/models/${model.id}/checkpoints`, { key })).body as ListPage<CheckpointJson>;
    expect(left.data.map((c) => c.step)).toEqual([0, 2, 4]);
    // The remaining steps' adapters are in the blob store (the deleted ones go once the collector runs).
    const remaining = await withDatabase(({ db }) => db.collection<{ adapter_sha256: string | null }>("checkpoints").find({ model_id: model.id, step: { $gt: 0 } }).toArray());
    expect(remaining).toHaveLength(2);
    for (const checkpoint of remaining) expect(await sharedBlobStore().stat(checkpoint.adapter_sha256 as string)).not.toBeNull();
  });
});

describe("trajectory logs", () => {
  it("stores groups as sent and computes the split metrics (hand-computed example)", async () => {
    const model = await newModel("logged");
    const choice = {
      finish_reason: "stop",
      index: 0,
      logprobs: { content: [{ token: "token_id:42", bytes: null, logprob: -0.5, top_logprobs: [] }], refusal: null },
      message: { content: "4", refusal: null, role: "assistant", annotations: null, audio: null, function_call: null, tool_calls: null },
      stop_reason: null,
      token_ids: [42],
    };
    const groups = [
      {
        trajectories: [
          { messages_and_choices: [{ role: "user", content: "2+2?" }, choice], reward: 1, metrics: { correct: true, duration: 2 } },
          { messages_and_choices: [{ role: "user", content: "2+2?" }], reward: 0, metrics: { correct: false }, initial_policy_version: null, start_time: null },
        ],
        exceptions: [{ type: "<class 'TimeoutError'>", message: "slow", traceback: "..." }],
        metadata: { prompt_id: "p1" },
        metrics: { difficulty: 3 },
        extra_key: "kept",
      },
      { trajectories: [{ reward: 0.5, metrics: { duration: 4 } }], metrics: { difficulty: 1 } },
    ];
    const res = await rest("POST", `/v1/preview/models/${model.id}/log`, { key, body: { split: "val", trajectory_groups: groups, model_id: model.id } });
    expect(res.status).toBe(200);
    // reward: (1 + 0 + 0.5) / 3; exception_rate: 1 / (3 + 1); reward_std_dev: population std of
    // [1, 0] = 0.5 (the one-trajectory group does not count); correct: (1 + 0) / 2;
    // duration: (2 + 4) / 2; group_difficulty: (3 + 1) / 2.
    const expected = {
      "val/reward": 0.5,
      "val/exception_rate": 0.25,
      "val/reward_std_dev": 0.5,
      "val/correct": 0.5,
      "val/duration": 3,
      "val/group_difficulty": 2,
    };
    expect(res.body).toEqual({ step: 0, num_groups: 2, num_trajectories: 3, metrics: expected });

    const checkpoint = (await rest("GET", `/v1/preview/models/${model.id}/checkpoints?order=desc&limit=1`, { key })).body as ListPage<CheckpointJson>;
    expect(checkpoint.data[0]?.metrics).toEqual(expected);

    const stored = await withDatabase(({ db }) => db.collection("trajectories").find({ model_id: model.id }).sort({ index: 1 }).toArray());
    expect(stored.map((g) => ({ split: g.split, step: g.step }))).toEqual([{ split: "val", step: 0 }, { split: "val", step: 0 }]);
    expect(JSON.parse(stored[0]?.group_json as string)).toEqual(groups[0]); // every key, as sent

    const history = await rest("GET", `/v1/preview/runs/${model.run_id}/metrics?name=val/reward`, { key });
    expect(history.body).toMatchObject({ object: "list", has_more: false, data: [{ step: 0, split: "val", name: "val/reward", value: 0.5 }] });
    const run = await rest("GET", `/v1/preview/runs/${model.run_id}`, { key });
    expect((run.body as { summary: Record<string, number> }).summary).toEqual(expected);
  });

  it("logs at the model's current step and keeps a paginated history", async () => {
    const model = await newModel("stepped");
    await withDatabase(async ({ db }) => {
      await new Checkpoints(db, sharedBlobStore()).create(model.id, 1, { "train/loss": 0.3 });
    });
    const log = (split: string, reward: number) =>
      rest("POST", `/v1/preview/models/${model.id}/log`, { key, body: { split, trajectory_groups: [{ trajectories: [{ reward }, { reward }] }] } });
    expect(((await log("train", 0.25)).body as { step: number }).step).toBe(1);
    await log("val", 0.75);
    const checkpoint = (await rest("GET", `/v1/preview/models/${model.id}/checkpoints?order=desc&limit=1`, { key })).body as ListPage<CheckpointJson>;
    expect(checkpoint.data[0]?.metrics).toEqual({
      "train/loss": 0.3,
      "train/reward": 0.25,
      "train/exception_rate": 0,
      "train/reward_std_dev": 0,
      "val/reward": 0.75,
      "val/exception_rate": 0,
      "val/reward_std_dev": 0,
    });
    const first = (await rest("GET", `/v1/preview/runs/${model.run_id}/metrics?limit=4`, { key })).body as ListPage<{ id: string; name: string; step: number }>;
    expect(first.data.length).toBe(4);
    expect(first.has_more).toBe(true);
    const rest2 = (await rest("GET", `/v1/preview/runs/${model.run_id}/metrics?limit=4&after=${first.last_id}`, { key })).body as ListPage<{ name: string }>;
    expect(rest2.data.map((m) => m.name)).toEqual(["val/exception_rate", "val/reward_std_dev"]);
    expect(rest2.has_more).toBe(false);
  });

  it("pages a long metric history (several storage buckets) in order, filtered by name, each row once", async () => {
    const model = await newModel("long-history");
    await withDatabase(async ({ db }) => {
      const runs = new Runs(db);
      // Four metrics per step, some steps logged concurrently.
      for (let step = 1; step <= 150; step += 30) {
        await Promise.all(Array.from({ length: 30 }, (_, i) => runs.append(model.run_id, step + i, "train", { "train/loss": 1 / (step + i), "train/reward": step + i, "train/grad_norm": 2, "train/entropy": 1 })));
      }
    });
    const all = async (query: string) => {
      const rows: { id: string; name: string; step: number; value: number }[] = [];
      for (let after = ""; ; ) {
        const page = (await rest("GET", `/v1/preview/runs/${model.run_id}/metrics?limit=100${query}${after ? `&after=${after}` : ""}`, { key })).body as ListPage<{ id: string; name: string; step: number; value: number }>;
        rows.push(...page.data);
        if (!page.has_more) return rows;
        after = page.last_id;
      }
    };
    const everything = await all("");
    expect(everything.length).toBe(600);
    expect(new Set(everything.map((m) => m.id)).size).toBe(600);
    const rewards = await all("&name=train/reward");
    expect(rewards.map((m) => m.value).sort((a, b) => a - b)).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));
    expect(rewards.every((m) => m.name === "train/reward" && m.step === m.value)).toBe(true);
    expect((await rest("GET", `/v1/preview/runs/${model.run_id}/metrics?after=${everything[0]?.id.replace(/.$/, "f")}`, { key })).status).toBe(400);
  });

  it("accepts the compact trajectories of the newest client and an empty log", async () => {
    const model = await newModel("compact");
    const res = await rest("POST", `/v1/preview/models/${model.id}/log`, { key, body: { split: "train", trajectory_groups: [{ trajectories: [{}, { reward: 1 }] }] } });
    expect(res.body).toMatchObject({ num_trajectories: 2, metrics: { "train/reward": 0.5, "train/reward_std_dev": 0.5 } });
    const empty = await rest("POST", `/v1/preview/models/${model.id}/log`, { key, body: { split: "train", trajectory_groups: [] } });
    expect(empty.body).toEqual({ step: 0, num_groups: 0, num_trajectories: 0, metrics: {} });
  });
});
