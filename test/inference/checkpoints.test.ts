// Checkpoints are served as LoRA adapters: a trained step changes the output, step 0 and the base
// model do not, and a new checkpoint is served by the very next request.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sharedBlobStore } from "../support/blob-store.js";
import { Checkpoints } from "../../services/models/checkpoints.js";
import { makeRandomLora } from "../../services/weights/lora.js";
import { rest } from "../support/clients.js";
import { withDatabase } from "../support/db.js";
import { createKey, uniqueEntity } from "../support/keys.js";

let key = "";
let entity = "";
let scratch = "";
beforeAll(async () => {
  entity = uniqueEntity("lora");
  key = await createKey(entity);
  scratch = await mkdtemp(join(tmpdir(), "srl-lora-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function greedyTokens(model: string): Promise<number[]> {
  const res = await rest("POST", "/v1/chat/completions", {
    key,
    body: { model, messages: [{ role: "user", content: "Tell me about adapters." }], temperature: 0, max_tokens: 12, ignore_eos: true, return_token_ids: true },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body as { choices: { token_ids: number[] }[] }).choices[0]?.token_ids ?? [];
}

async function addCheckpoint(modelId: string, step: number, seed: number): Promise<void> {
  const path = join(scratch, `adapter-${step}-${seed}.gguf`);
  await makeRandomLora({ basePath: join(inject("dataDir"), "models", "tiny-chat.gguf"), path, seed, rank: 8, alpha: 16, targets: ["q", "k", "v", "o", "gate", "up", "down"] });
  const data = await readFile(path);
  await withDatabase(async ({ db }) => {
    await new Checkpoints(db, sharedBlobStore()).create(modelId, step, { loss: 1 }, { gguf: data, peft: null });
  });
}

describe("checkpoints as LoRA adapters", () => {
  it("serves the latest checkpoint by name, step 0 as the base model, and a new step at once", async () => {
    const base = await greedyTokens("tiny-chat");
    const model = (await rest("POST", "/v1/preview/models", { key, body: { project: "adapters", name: "agent", base_model: "tiny-chat" } })).body as { id: string };
    const latest = `wandb-artifact:///${entity}/adapters/agent`;
    // Before any training the latest checkpoint is step 0: the base model.
    expect(await greedyTokens(latest)).toEqual(base);

    await addCheckpoint(model.id, 1, 11);
    const stepOne = await greedyTokens(latest);
    expect(stepOne).not.toEqual(base);
    expect(await greedyTokens(`${latest}:step1`)).toEqual(stepOne);
    expect(await greedyTokens(`wandb-artifact://${entity}/adapters/agent:latest`)).toEqual(stepOne);
    expect(await greedyTokens("adapters/agent:step1")).toEqual(stepOne);
    expect(await greedyTokens(`${latest}:step0`)).toEqual(base);

    await addCheckpoint(model.id, 2, 22);
    const stepTwo = await greedyTokens(latest);
    expect(stepTwo).not.toEqual(stepOne);
    expect(await greedyTokens(`${latest}:step1`)).toEqual(stepOne);

    // A deleted step made again by a later job (same step, so the same checkpoint id) serves its
    // new adapter, not the one cached for the deleted step.
    const deleted = await rest("DELETE", `/v1/preview/models/${model.id}/checkpoints`, { key, body: { steps: [2] } });
    expect(deleted.body).toEqual({ deleted_count: 1, not_found_steps: [] });
    expect(await greedyTokens(latest)).toEqual(stepOne);
    await addCheckpoint(model.id, 2, 33);
    const again = await greedyTokens(latest);
    expect(again).not.toEqual(stepTwo);
    expect(again).not.toEqual(stepOne);

    const missing = await rest("POST", "/v1/chat/completions", { key, body: { model: `${latest}:step9`, messages: [{ role: "user", content: "x" }] } });
    expect(missing).toMatchObject({ status: 404, body: { error: { message: `The model \`${latest}:step9\` has no checkpoint at step 9.` } } });
  });
});
