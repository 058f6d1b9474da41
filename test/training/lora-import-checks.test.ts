// A `lora` artifact logged for a model through the W&B API (as ART's fork does) is checked like a
// trained adapter before it becomes a checkpoint: NaN or infinite weights, `"r": 1e309`, a
// fractional or huge rank, an alpha out of bounds, shapes of another model, and a step alias past
// 2^31-1 are refused, naming why, and leave no checkpoint; a good one is converted by the real
// trainer and served at its step.
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adapterBaseOf } from "../../services/weights/adapter-check.js";
import { ensureBuiltInModel } from "../../services/weights/tiny-model.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";
import { safetensors } from "../support/safetensors.js";

const ENTITY = "importer";
const PROJECT = "imports";
const MODEL = "m";
const RANK = 4;
let isolated: IsolatedServer;
let scratch: string;
let q: [number, number];
let modelId = "";

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "lora-import-"));
  q = (await adapterBaseOf(await ensureBuiltInModel("tiny-chat", scratch))).shapes.get("blk.0.attn_q.weight") as [number, number];
  isolated = await startIsolatedServer({ name: "lora_import", entity: ENTITY });
  const model = await rest("POST", "/v1/preview/models", { project: PROJECT, name: MODEL, base_model: "tiny-chat" });
  expect(model.status).toBe(200);
  modelId = model.body.id as string;
}, 180_000);

afterAll(async () => {
  await isolated?.stop();
  await rm(scratch, { recursive: true, force: true });
});

async function rest(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${isolated.server.url}${path}`, { method, headers: { authorization: `Bearer ${isolated.key}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function graphql(query: string, variables: Record<string, unknown>): Promise<{ status: number; data: Record<string, unknown> | null | undefined; errors: { message: string }[] | undefined }> {
  const res = await fetch(`${isolated.server.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`api:${isolated.key}`).toString("base64")}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: Record<string, unknown> | null; errors?: { message: string }[] };
  return { status: res.status, data: body.data, errors: body.errors };
}

const md5 = (data: Uint8Array) => createHash("md5").update(data).digest("base64");


/** PEFT files of a rank-4 LoRA on tiny-chat's layer-0 q projection, optionally broken. */
function peft(options: { config?: string; poison?: number; nIn?: number } = {}): Record<string, Buffer> {
  const nIn = options.nIn ?? q[0];
  const a = Float32Array.from({ length: RANK * nIn }, (_, i) => Math.sin(i) / 50);
  const b = Float32Array.from({ length: q[1] * RANK }, (_, i) => Math.cos(i) / 50);
  if (options.poison !== undefined) a[5] = options.poison;
  const prefix = "base_model.model.model.layers.0.self_attn.q_proj";
  return {
    "adapter_config.json": Buffer.from(options.config ?? `{"peft_type": "LORA", "r": ${RANK}, "lora_alpha": 8, "target_modules": ["q_proj"]}`),
    "adapter_model.safetensors": safetensors({ [`${prefix}.lora_A.weight`]: { shape: [RANK, nIn], data: a }, [`${prefix}.lora_B.weight`]: { shape: [q[1], RANK], data: b } }),
  };
}

/** Logs a `lora` artifact for the model as the wandb SDK does; the commit's answer. */
async function logLora(files: Record<string, Buffer>, alias: string) {
  const created = await graphql(
    `mutation ($entity: String!, $project: String!, $name: String!, $alias: String!, $digest: String!) { createArtifact(input: {entityName: $entity, projectName: $project, artifactTypeName: "lora", artifactCollectionNames: [$name], digest: $digest, digestAlgorithm: MANIFEST_MD5, aliases: [{artifactCollectionName: $name, alias: $alias}], metadata: "{}"}) { artifact { id } } }`,
    { entity: ENTITY, project: PROJECT, name: MODEL, alias, digest: `d-${Math.random()}` },
  );
  const id = (created.data?.createArtifact as { artifact: { id: string } }).artifact.id;
  const manifestFile = await graphql(`mutation ($id: ID!) { createArtifactManifest(input: {artifactID: $id, name: "wandb_manifest.json", digest: "", entityName: "e", projectName: "p", runName: "r"}) { artifactManifest { file { uploadUrl } } } }`, { id });
  const manifestUrl = (manifestFile.data?.createArtifactManifest as { artifactManifest: { file: { uploadUrl: string } } }).artifactManifest.file.uploadUrl;
  const names = Object.keys(files);
  const uploads = await graphql(`mutation ($files: [CreateArtifactFileSpecInput!]!) { createArtifactFiles(input: {storageLayout: V2, artifactFiles: $files}) { files { edges { node { name uploadUrl } } } } }`, {
    files: names.map((name) => ({ artifactID: id, name, md5: md5(files[name]!) })),
  });
  for (const { node } of (uploads.data?.createArtifactFiles as { files: { edges: { node: { name: string; uploadUrl: string } }[] } }).files.edges) {
    expect((await fetch(node.uploadUrl, { method: "PUT", body: files[node.name] })).status).toBe(200);
  }
  const manifest = { version: 1, storagePolicy: "wandb-storage-policy-v1", storagePolicyConfig: { storageLayout: "V2" }, contents: Object.fromEntries(names.map((name) => [name, { digest: md5(files[name]!), size: files[name]!.length }])) };
  expect((await fetch(manifestUrl, { method: "PUT", body: JSON.stringify(manifest) })).status).toBe(200);
  return graphql(`mutation ($id: ID!) { commitArtifact(input: {artifactID: $id}) { artifact { id state } } }`, { id });
}

async function steps(): Promise<number[]> {
  return ((await rest("GET", `/v1/preview/models/${modelId}/checkpoints`)).body as { data: { step: number }[] }).data.map((c) => c.step);
}

describe("imported lora artifacts", () => {
  it("refuses NaN, overflowing and out-of-bounds adapters and steps, naming why, with no checkpoint", async () => {
    const cases: [string, Record<string, Buffer>, string, RegExp][] = [
      ["NaN weights", peft({ poison: NaN }), "step1", /q_proj\.lora_A\.weight holds NaN/],
      ["infinite weights", peft({ poison: Infinity }), "step1", /holds an infinite value/],
      ['"r": 1e309', peft({ config: '{"peft_type": "LORA", "r": 1e309, "lora_alpha": 8}' }), "step1", /r must be an integer from 1 to 1024, got Infinity/],
      ["a fractional rank", peft({ config: '{"r": 4.5, "lora_alpha": 8}' }), "step1", /r must be an integer from 1 to 1024, got 4\.5/],
      ["a huge rank", peft({ config: '{"r": 100000, "lora_alpha": 8}' }), "step1", /r must be an integer from 1 to 1024, got 100000/],
      ["an infinite alpha", peft({ config: '{"r": 4, "lora_alpha": 1e400}' }), "step1", /lora_alpha must be a number above 0 and at most 65536, got Infinity/],
      ["another model's shapes", peft({ nIn: q[0] * 2 }), "step1", /blk\.0\.attn_q\.weight is \[\d+ -> \d+\] in the base model with r 4, so lora_A must be/],
      ["a step past 2^31-1", peft(), "step100000000000000000000", /step alias must name a step from 1 to 2147483647; it names one beyond 2147483647/],
      ["step 2^31", peft(), "step2147483648", /one beyond 2147483647/],
    ];
    for (const [what, files, alias, message] of cases) {
      const commit = await logLora(files, alias);
      expect(commit.errors?.[0]?.message, what).toMatch(message);
      expect(commit.errors?.[0]?.message, what).not.toMatch(/internal/i);
      expect([200, 400], what).toContain(commit.status);
      expect(await steps(), what).toEqual([0]);
    }
  }, 120_000);

  it("imports a good adapter at its step alias, converted by the real trainer, and serves it", async () => {
    const commit = await logLora(peft(), "step2147483647");
    expect(commit.errors).toBeUndefined();
    expect(await steps()).toEqual([0, 2147483647]);
    const chat = await rest("POST", "/v1/chat/completions", { model: `wandb-artifact:///${ENTITY}/${PROJECT}/${MODEL}`, messages: [{ role: "user", content: "hi" }], max_tokens: 4, temperature: 0, logprobs: true });
    expect(chat.status).toBe(200);
    const content = (chat.body.choices as { logprobs: { content: { logprob: number }[] } }[])[0]!.logprobs.content;
    expect(content.every((t) => Number.isFinite(t.logprob))).toBe(true);
    // The model is at the last step there is: an import without a step alias has nowhere to go.
    const next = await logLora(peft(), "latest-fork");
    expect(next.errors?.[0]?.message).toMatch(/would be step 2147483648, past 2147483647/);
  }, 240_000);
});
