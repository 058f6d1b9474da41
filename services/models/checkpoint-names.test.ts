// Named checkpoints (Tinker's `sampler_weights/{name}`) on the test server's real database: a
// name is unique within its model, found by byName with `_id` lookups only, released when its
// checkpoint is deleted, and a claim left by a create that died is taken over once abandoned.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sharedBlobStore } from "../../test/support/blob-store.js";
import { TEST_DATABASE_TIMEOUT_MS } from "../../test/support/db-timeout.js";
import { ApiError } from "../core/errors.js";
import { connectDatabase, type Database } from "../store/index.js";
import { checkpointNameId, Checkpoints } from "./checkpoints.js";

let database: Database;
let checkpoints: Checkpoints;
const adapter = (byte: number) => ({ gguf: new Uint8Array([byte, 1, 2, 3]), peft: null });

beforeAll(async () => {
  database = await connectDatabase(inject("mongoUri"), inject("mongoDb"), { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
  checkpoints = new Checkpoints(database.db, sharedBlobStore());
  await checkpoints.ensureIndexes();
});
afterAll(async () => {
  await database?.close();
});

async function refusal(work: Promise<unknown>): Promise<ApiError> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe("named checkpoints", () => {
  it("are created with a name, found by it, and listed with it; unnamed ones stay as they were", async () => {
    const model = randomUUID();
    await checkpoints.ensureStepZero(model);
    const one = await checkpoints.create(model, 1, { loss: 1 }, adapter(1), undefined, { name: "sampler_weights/000001" });
    const two = await checkpoints.create(model, 2, {}, adapter(2));
    expect(one.name).toBe("sampler_weights/000001");
    expect(two.name).toBeUndefined();
    expect((await checkpoints.byName(model, "sampler_weights/000001"))?._id).toBe(one._id);
    expect(await checkpoints.byName(model, "sampler_weights/000002")).toBeNull();
    // Names belong to their model.
    expect(await checkpoints.byName(randomUUID(), "sampler_weights/000001")).toBeNull();
    const listed = await checkpoints.list(model, { limit: 10, order: "asc" });
    expect(listed.items.map((c) => [c.step, c.name ?? null])).toEqual([
      [0, null],
      [1, "sampler_weights/000001"],
      [2, null],
    ]);
    // Another model may use the same name.
    const other = randomUUID();
    await checkpoints.create(other, 1, {}, adapter(3), undefined, { name: "sampler_weights/000001" });
    expect((await checkpoints.byName(other, "sampler_weights/000001"))?.model_id).toBe(other);
  });

  it("refuses a name the model already holds, and a step conflict leaves the name free", async () => {
    const model = randomUUID();
    await checkpoints.create(model, 1, {}, adapter(1), undefined, { name: "sampler_weights/a" });
    const taken = await refusal(checkpoints.create(model, 2, {}, adapter(2), undefined, { name: "sampler_weights/a" }));
    expect(taken.kind).toBe("conflict");
    expect(taken.message).toContain('already has a checkpoint named "sampler_weights/a" (step 1)');
    expect(await checkpoints.atStep(model, 2)).toBeNull();

    const step = await refusal(checkpoints.create(model, 1, {}, adapter(3), undefined, { name: "sampler_weights/b" }));
    expect(step.kind).toBe("conflict");
    expect(step.message).toContain("already has a checkpoint at step 1");
    expect(await checkpoints.byName(model, "sampler_weights/b")).toBeNull();
    // The name the failed create claimed is free again.
    await checkpoints.create(model, 3, {}, adapter(4), undefined, { name: "sampler_weights/b" });
    expect((await checkpoints.byName(model, "sampler_weights/b"))?.step).toBe(3);
    expect((await refusal(checkpoints.create(model, 4, {}, adapter(5), undefined, { name: "" }))).kind).toBe("bad_request");
  });

  it("releases a name with its checkpoint: deleteSteps, deleteById, deleteAll", async () => {
    const model = randomUUID();
    const one = await checkpoints.create(model, 1, {}, adapter(1), undefined, { name: "sampler_weights/x" });
    await checkpoints.create(model, 2, {}, adapter(2), undefined, { name: "sampler_weights/y" });
    await checkpoints.create(model, 3, {}, adapter(3), undefined, { name: "sampler_weights/z" });

    await checkpoints.deleteById(one._id);
    expect(await checkpoints.byName(model, "sampler_weights/x")).toBeNull();
    await checkpoints.create(model, 4, {}, adapter(4), undefined, { name: "sampler_weights/x" });
    expect((await checkpoints.byName(model, "sampler_weights/x"))?.step).toBe(4);

    expect(await checkpoints.deleteSteps(model, [2])).toEqual({ deleted: 1, notFound: [] });
    expect(await checkpoints.byName(model, "sampler_weights/y")).toBeNull();
    // A step made again (the same checkpoint id) under another name: the old name stays free.
    await checkpoints.create(model, 2, {}, adapter(5), undefined, { name: "sampler_weights/w" });
    expect(await checkpoints.byName(model, "sampler_weights/y")).toBeNull();
    expect((await checkpoints.byName(model, "sampler_weights/w"))?.step).toBe(2);

    expect(await checkpoints.deleteAll(model)).toBe(3);
    for (const name of ["x", "z", "w"]) expect(await checkpoints.byName(model, `sampler_weights/${name}`)).toBeNull();
    const claims = database.db.collection("checkpoint_names");
    expect(await claims.countDocuments({ model_id: model })).toBe(0);
  });

  it("takes over a claim whose create died before its row, once the claim is abandoned", async () => {
    const model = randomUUID();
    const claims = database.db.collection<{ _id: string; model_id: string; name: string; checkpoint_id: string; claimed_at: Date }>("checkpoint_names");
    const claim = (at: Date) => ({ _id: checkpointNameId(model, "sampler_weights/lost"), model_id: model, name: "sampler_weights/lost", checkpoint_id: randomUUID(), claimed_at: at });
    // A fresh claim: a create in progress.
    await claims.insertOne(claim(new Date()));
    expect(await checkpoints.byName(model, "sampler_weights/lost")).toBeNull();
    const busy = await refusal(checkpoints.create(model, 1, {}, adapter(1), undefined, { name: "sampler_weights/lost" }));
    expect(busy.message).toContain("is creating a checkpoint");
    // The same claim, abandoned long ago.
    await claims.replaceOne({ _id: checkpointNameId(model, "sampler_weights/lost") }, claim(new Date(Date.now() - 10 * 60_000)));
    const made = await checkpoints.create(model, 1, {}, adapter(1), undefined, { name: "sampler_weights/lost" });
    expect((await checkpoints.byName(model, "sampler_weights/lost"))?._id).toBe(made._id);
  });
});
