// The W&B run records' index change applied on start to data stored before it (on the test
// database's kind: the embedded launcher's mongod or FerretDB): records without a `run_name`
// are named by their id, nothing is lost, a second start changes nothing, and the new unique
// index (entity, run_name) holds.
import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectDatabase, type Database } from "../../services/store/mongo.js";
import { WandbRunStates } from "../../services/wandb/run-state.js";
import { TEST_DATABASE_TIMEOUT_MS } from "../support/db-timeout.js";

describe("W&B run records: per-entity names on existing data", () => {
  let database: Database;

  beforeAll(async () => {
    database = await connectDatabase(inject("mongoUri"), `srl_migration_${randomUUID().slice(0, 8)}`, { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
  });

  afterAll(async () => {
    await database?.db.dropDatabase();
    await database?.close();
  });

  it("names old records by their id, keeps them whole, and then enforces one name per entity", async () => {
    const collection = database.db.collection<Record<string, unknown> & { _id: string }>("wandb_runs");
    const legacy = (id: string, entity: string) => ({ _id: id, entity, project: "p", display_name: null, config: '{"lr": {"value": 0.1}}', summary: "{}", history_line_count: 3, history_tail: ["{}"], state: "finished" });
    await collection.insertMany([legacy("run-1", "alice"), legacy("run-2", "alice"), legacy("run-3", "bob")]);

    const states = new WandbRunStates(database.db);
    await states.ensureIndexes();
    await states.ensureIndexes(); // a second start (or a worker process) finds nothing to do

    const all = await collection.find({}).sort({ _id: 1 }).toArray();
    expect(all.map((r) => [r._id, r.run_name, r.entity, r.config, r.history_line_count])).toEqual([
      ["run-1", "run-1", "alice", '{"lr": {"value": 0.1}}', 3],
      ["run-2", "run-2", "alice", '{"lr": {"value": 0.1}}', 3],
      ["run-3", "run-3", "bob", '{"lr": {"value": 0.1}}', 3],
    ]);
    expect((await states.findByName("alice", "run-1"))?._id).toBe("run-1");
    expect(await states.findByName("bob", "run-1")).toBeNull();

    // Another entity may take the same name; the same entity may not, under another service id.
    await states.upsert("w-other", { entity: "bob", project: "p", runName: "run-1" }, {});
    await expect(states.upsert("w-again", { entity: "alice", project: "q", runName: "run-1" }, {})).rejects.toThrow(/duplicate/i);
    expect((await states.findByName("bob", "run-1"))?._id).toBe("w-other");
  });
});
