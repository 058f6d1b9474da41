// Tinker sampler paths as model names, resolved on the test server's real database:
// `tinker://{training_run_id}/sampler_weights/{name}` is the named checkpoint of the caller's
// registered model whose id is the run id; anything else of it is a 404 in the words an unknown
// model gets, and a training-state path is a 400 that says what to do instead.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sharedBlobStore } from "../../../test/support/blob-store.js";
import { TEST_DATABASE_TIMEOUT_MS } from "../../../test/support/db-timeout.js";
import { ApiError } from "../../core/errors.js";
import { AdapterFiles, BaseModelCatalog, Checkpoints, ModelRegistry, Runs } from "../../models/index.js";
import { connectDatabase, type Database } from "../../store/index.js";
import { ModelResolver } from "./resolve-model.js";

let database: Database;
let scratch = "";
let checkpoints: Checkpoints;
let registry: ModelRegistry;
let resolver: ModelResolver;

beforeAll(async () => {
  database = await connectDatabase(inject("mongoUri"), inject("mongoDb"), { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
  scratch = await mkdtemp(join(tmpdir(), "srl-resolve-"));
  const catalog = new BaseModelCatalog([]);
  checkpoints = new Checkpoints(database.db, sharedBlobStore());
  registry = new ModelRegistry(database.db, catalog, new Runs(database.db), checkpoints);
  resolver = new ModelResolver({ catalog, registry, checkpoints, adapters: new AdapterFiles(scratch, checkpoints) });
});
afterAll(async () => {
  await database?.close();
  await rm(scratch, { recursive: true, force: true });
});

async function refusal(work: Promise<unknown>): Promise<ApiError> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe("tinker:// model names", () => {
  it("resolve to the named checkpoint of the caller's model whose id is the training run id", async () => {
    const entity = `tinker-${randomUUID()}`;
    const { model } = await registry.create({ entity, project: "tinker", name: `run-${randomUUID().slice(0, 8)}`, baseModel: "tiny-chat", returnExisting: false });
    const made = await checkpoints.create(model._id, 1, {}, { gguf: new Uint8Array([7, 7, 7]), peft: null }, undefined, { name: "sampler_weights/000001" });
    const path = `tinker://${model._id}/sampler_weights/000001`;

    const found = await resolver.find(entity, path);
    expect(found).toMatchObject({ kind: "registered", step: 1, model: { _id: model._id }, base: { name: "tiny-chat" } });
    expect(found.kind === "registered" && found.step === 1 ? found.checkpoint?._id : null).toBe(made._id);
    const target = await resolver.resolve(entity, path);
    expect(target).toMatchObject({ entity, step: 1, base: { name: "tiny-chat" } });
    expect(target.adapterPath).toMatch(/adapter\.gguf$/);

    // Another entity's run reads exactly as a run that does not exist.
    const absent = await refusal(resolver.find(entity, `tinker://${randomUUID()}/sampler_weights/000001`));
    const foreign = await refusal(resolver.find("someone-else", path));
    expect(absent.kind).toBe("not_found");
    expect(foreign.kind).toBe("not_found");
    expect(foreign.message).toBe(`The model \`${path}\` does not exist.`);
    expect(absent.message.replace(/tinker:\/\/[^/]+/, "tinker://R")).toBe(foreign.message.replace(/tinker:\/\/[^/]+/, "tinker://R"));

    const missing = await refusal(resolver.find(entity, `tinker://${model._id}/sampler_weights/000002`));
    expect(missing.kind).toBe("not_found");
    expect(missing.message).toContain("has no checkpoint named `sampler_weights/000002`");

    const training = await refusal(resolver.find(entity, `tinker://${model._id}/weights/000001`));
    expect(training.kind).toBe("bad_request");
    expect(training.message).toContain("save_weights_for_sampler");
    expect((await refusal(resolver.find(entity, `tinker://${model._id}/external_weights/x`))).kind).toBe("bad_request");

    const malformed = await refusal(resolver.find(entity, `tinker://${model._id}/sampler_weights`));
    expect(malformed.kind).toBe("not_found");
  });
});
