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

interface Served {
  tokens: number[];
  /** Which weights answered: equal exactly when the same adapter (or none) served both. */
  fingerprint: string;
}

async function greedy(model: string): Promise<Served> {
  const res = await rest("POST", "/v1/chat/completions", {
    key,
    body: { model, messages: [{ role: "user", content: "Tell me about adapters." }], temperature: 0, max_tokens: 12, ignore_eos: true, return_token_ids: true },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const body = res.body as { choices: { token_ids: number[] }[]; system_fingerprint: string };
  expect(body.system_fingerprint).toMatch(/^fp_[0-9a-f]{12}$/);
  return { tokens: body.choices[0]?.token_ids ?? [], fingerprint: body.system_fingerprint };
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
  // Different weights must change the greedy tokens (random adapters move them far); the same
  // weights are told by the fingerprint, as two requests for them need not give the same tokens
  // (a cached prompt prefix is evaluated in another batch shape, and a near tie can turn).
  it("serves the latest checkpoint by name, step 0 as the base model, and a new step at once", async () => {
    const base = await greedy("tiny-chat");
    const model = (await rest("POST", "/v1/preview/models", { key, body: { project: "adapters", name: "agent", base_model: "tiny-chat" } })).body as { id: string };
    const latest = `wandb-artifact:///${entity}/adapters/agent`;
    // Before any training the latest checkpoint is step 0: the base model.
    expect((await greedy(latest)).fingerprint).toBe(base.fingerprint);

    await addCheckpoint(model.id, 1, 11);
    const stepOne = await greedy(latest);
    expect(stepOne.tokens).not.toEqual(base.tokens);
    expect(stepOne.fingerprint).not.toBe(base.fingerprint);
    expect((await greedy(`${latest}:step1`)).fingerprint).toBe(stepOne.fingerprint);
    expect((await greedy(`wandb-artifact://${entity}/adapters/agent:latest`)).fingerprint).toBe(stepOne.fingerprint);
    expect((await greedy("adapters/agent:step1")).fingerprint).toBe(stepOne.fingerprint);
    expect((await greedy(`${latest}:step0`)).fingerprint).toBe(base.fingerprint);

    await addCheckpoint(model.id, 2, 22);
    const stepTwo = await greedy(latest);
    expect(stepTwo.tokens).not.toEqual(stepOne.tokens);
    expect(stepTwo.fingerprint).not.toBe(stepOne.fingerprint);
    expect((await greedy(`${latest}:step1`)).fingerprint).toBe(stepOne.fingerprint);

    // A deleted step made again by a later job (same step, so the same checkpoint id) serves its
    // new adapter, not the one cached for the deleted step.
    const deleted = await rest("DELETE", `/v1/preview/models/${model.id}/checkpoints`, { key, body: { steps: [2] } });
    expect(deleted.body).toEqual({ deleted_count: 1, not_found_steps: [] });
    expect((await greedy(latest)).fingerprint).toBe(stepOne.fingerprint);
    await addCheckpoint(model.id, 2, 33);
    const again = await greedy(latest);
    expect(again.tokens).not.toEqual(stepTwo.tokens);
    expect(again.tokens).not.toEqual(stepOne.tokens);
    expect(again.fingerprint).not.toBe(stepTwo.fingerprint);

    // Legacy completions and streamed chunks name the same weights.
    const completion = await rest("POST", "/v1/completions", { key, body: { model: latest, prompt: "Adapters", max_tokens: 2 } });
    expect(completion.status, JSON.stringify(completion.body)).toBe(200);
    expect((completion.body as { system_fingerprint: string }).system_fingerprint).toBe(again.fingerprint);
    const streamed = await rest("POST", "/v1/chat/completions", { key, body: { model: latest, messages: [{ role: "user", content: "x" }], max_tokens: 2, stream: true } });
    const chunks = streamed.text
      .split("\n")
      .filter((line) => line.startsWith("data: {"))
      .map((line) => JSON.parse(line.slice("data: ".length)) as { system_fingerprint?: string });
    expect(chunks.length).toBeGreaterThan(1);
    expect(new Set(chunks.map((chunk) => chunk.system_fingerprint))).toEqual(new Set([again.fingerprint]));

    const missing = await rest("POST", "/v1/chat/completions", { key, body: { model: `${latest}:step9`, messages: [{ role: "user", content: "x" }] } });
    expect(missing).toMatchObject({ status: 404, body: { error: { message: `The model \`${latest}:step9\` has no checkpoint at step 9.` } } });
  });
});
