// Training end to end through the REST API: SFT on uploaded data and RL on completions sampled
// from the service itself, each followed with the ART client's polling loop; the new checkpoint is
// listed and served at once. Also the failure and cancellation paths.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Training } from "../../gen/srl/v1/training_pb.js";
import { GgufReader } from "../../services/weights/gguf/index.js";
import { rest as restAt } from "../support/clients.js";
import { followJob as followJobAt } from "../support/art-client.js";
import type { ServerProcess } from "../support/server-process.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

// A server of its own, with the in-process training worker on.
let isolated: IsolatedServer;
let server: ServerProcess;
let key = "";
const entity = "trainer";
const rest = (method: string, path: string, options: Parameters<typeof restAt>[2] = {}) => restAt(method, path, { ...options, base: server.url });
const followJob = (apiKey: string, jobId: string, modelId: string) => followJobAt(apiKey, jobId, modelId, server.url);

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "train", entity, env: { WORKER_LEASE_MS: "3000" } });
  ({ server, key } = isolated);
});
afterAll(() => isolated?.stop());

async function newModel(name: string): Promise<{ id: string; run_id: string }> {
  const res = await rest("POST", "/v1/preview/models", { key, body: { project: "e2e", name, base_model: "tiny-chat" } });
  expect(res.status).toBe(200);
  return res.body as { id: string; run_id: string };
}

async function upload(name: string, text: string, filename = "train.jsonl"): Promise<{ url: string; version: number }> {
  const res = await rest("POST", `/v1/preview/artifacts?project=e2e&name=${name}&type=dataset&filename=${filename}`, {
    key,
    rawBody: text,
    headers: { "content-type": "application/jsonl" },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { url: string; version: number };
}

async function greedy(model: string, question: string, maxTokens = 8): Promise<string> {
  const res = await rest("POST", "/v1/chat/completions", { key, body: { model, messages: [{ role: "user", content: question }], temperature: 0, max_tokens: maxTokens } });
  expect(res.status).toBe(200);
  return (res.body as { choices: { message: { content: string } }[] }).choices[0]?.message.content ?? "";
}

describe("artifacts", () => {
  it("uploads versions v0, v1 and refuses an empty file", async () => {
    const first = await upload("versions", '{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}\n');
    expect(first).toMatchObject({ version: 0, url: `wandb-artifact:///${entity}/e2e/versions:v0`, files: [{ name: "train.jsonl", size: expect.any(Number) }] });
    expect((await upload("versions", "{}\n")).version).toBe(1);
    const empty = await rest("POST", "/v1/preview/artifacts?project=e2e&name=empty", { key, rawBody: "" });
    expect(empty.status).toBe(422);

    // Downloads: the bytes as uploaded, by version or latest.
    const download = (url: string, filename?: string) =>
      fetch(`${server.url}/v1/preview/artifacts/download?url=${encodeURIComponent(url)}${filename ? `&filename=${filename}` : ""}`, { headers: { authorization: `Bearer ${key}` } });
    const v0 = await download(`wandb-artifact:///${entity}/e2e/versions:v0`);
    expect(v0.status).toBe(200);
    expect(v0.headers.get("content-type")).toBe("application/jsonl");
    expect(v0.headers.get("content-disposition")).toBe('attachment; filename="train.jsonl"');
    expect(await v0.text()).toBe('{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}\n');
    expect(await (await download(`wandb-artifact:///${entity}/e2e/versions:latest`, "train.jsonl")).text()).toBe("{}\n");
    const elsewhere = await download("wandb-artifact:///someone-else/e2e/versions:v0");
    expect(elsewhere.status).toBe(404);
    expect(await (await download(`wandb-artifact:///${entity}/e2e/versions:v0`, "other.json")).json()).toEqual({ detail: "versions:v0 has no file other.json (files: train.jsonl)" });
    expect((await download("tiny-chat")).status).toBe(400);
  }, 180000);

  it("takes several files as a multipart form (as fetch sends FormData), adds to a version, refuses clashes", async () => {
    const post = (form: FormData, query = "") => fetch(`${server.url}/v1/preview/artifacts${query}`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    const trajectory = (answer: string) =>
      JSON.stringify({ messages_and_choices: [{ role: "user", content: "Colour?" }, { finish_reason: "stop", index: 0, message: { role: "assistant", content: answer } }], reward: 1 });
    const form = new FormData();
    form.set("project", "e2e");
    form.set("name", "multipart");
    form.append("file", new Blob([`${trajectory("blue")}\n${trajectory("blue")}\n`]), "trajectories.jsonl");
    form.append("file", new Blob(['{"source":"test"}']), "metadata.json");
    const created = await post(form, "?project=ignored-when-the-form-has-it");
    expect(created.status).toBe(200);
    const artifact = (await created.json()) as { url: string; project: string; version: number; files: { name: string; size: number }[] };
    expect(artifact).toMatchObject({ project: "e2e", version: 0, files: [{ name: "trajectories.jsonl" }, { name: "metadata.json", size: 17 }] });

    const fetchFile = (filename?: string) =>
      fetch(`${server.url}/v1/preview/artifacts/download?url=${encodeURIComponent(artifact.url)}${filename ? `&filename=${filename}` : ""}`, { headers: { authorization: `Bearer ${key}` } });
    expect(await (await fetchFile()).json()).toEqual({ detail: "multipart:v0 has several files (trajectories.jsonl, metadata.json): give filename" });
    const metadata = await fetchFile("metadata.json");
    expect(metadata.headers.get("content-type")).toBe("application/json");
    expect(await metadata.text()).toBe('{"source":"test"}');

    const more = new FormData();
    more.append("notes", new Blob(["x"]), "notes.txt");
    expect((await post(more, "?project=e2e&name=multipart&version=0")).status).toBe(200);
    const clash = await post(more, "?project=e2e&name=multipart&version=0");
    expect(clash.status).toBe(409);
    expect(await clash.json()).toEqual({ detail: "artifact multipart:v0 already has a file notes.txt" });
    const noFiles = new FormData();
    noFiles.set("project", "e2e");
    noFiles.set("name", "multipart");
    const missing = await post(noFiles);
    expect(missing.status).toBe(422);
    expect(await missing.json()).toMatchObject({ detail: [{ type: "missing", loc: ["body", "files"] }] });
    const broken = await fetch(`${server.url}/v1/preview/artifacts?project=e2e&name=multipart`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "multipart/form-data; boundary=zz" },
      body: '--zz\r\nContent-Disposition: form-data; name="file"; filename="train.jsonl"\r\n\r\n{}',
    });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toEqual({ detail: "the multipart body ends without its closing boundary" });

    // The trajectories layout trains as the spec describes it.
    const model = await newModel("multipart-sft");
    const job = await rest("POST", "/v1/preview/sft-training-jobs", { key, body: { model_id: model.id, training_data_url: artifact.url, config: { batch_size: 2 } } });
    expect(job.status).toBe(200);
    const outcome = await followJob(key, (job.body as { id: string }).id, model.id);
    expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
    expect(outcome.step).toBe(1);
  }, 180000);
});

describe("SFT", () => {
  it("trains on uploaded data; the new checkpoint is listed and serves the trained answers", async () => {
    const model = await newModel("sft");
    const pairs = [
      ["2+2?", "four"],
      ["Capital of France?", "Paris"],
    ];
    const before = await Promise.all(pairs.map(([q]) => greedy(`wandb-artifact:///${entity}/e2e/sft`, q as string)));
    pairs.forEach(([, answer], i) => expect(before[i]?.startsWith(answer as string)).toBe(false));
    const lines = Array.from({ length: 24 }, (_, i) => pairs[i % pairs.length] as string[]).map(([q, a]) => JSON.stringify({ messages: [{ role: "user", content: q }, { role: "assistant", content: a }] }));
    const data = await upload("sft-data-0123456789ab", lines.join("\n") + "\n");
    const job = await rest("POST", "/v1/preview/sft-training-jobs", {
      key,
      body: { model_id: model.id, training_data_url: data.url, config: { batch_size: 2, learning_rate: 0.01, metric_logging: { enabled: true, target_training_step: 1 } } },
    });
    expect(job.status).toBe(200);
    const outcome = await followJob(key, (job.body as { id: string }).id, model.id);
    expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
    expect(outcome.step).toBe(1);
    expect(outcome.gradientSteps.length).toBe(outcome.numSequences);
    // The first event says where the job ran and the memory settings the trainer chose there.
    const trainer = outcome.started?.trainer as { device: string; micro_batch_tokens: number; gradient_checkpointing: string; activation_bytes_per_token: number; resources: string };
    expect(trainer.device).toBe("cpu");
    expect(trainer.micro_batch_tokens).toBeGreaterThanOrEqual(128);
    expect(trainer.activation_bytes_per_token).toBeGreaterThan(0);
    expect(trainer.resources).toMatch(/tokens per micro-batch, checkpointing (auto|on|off)/);
    for (const [question, answer] of pairs) expect(await greedy(`wandb-artifact:///${entity}/e2e/sft`, question as string)).toMatch(new RegExp(`^${answer}`));
    // Step 0 is still the base model.
    expect(await greedy(`wandb-artifact:///${entity}/e2e/sft:step0`, pairs[0]?.[0] as string)).toBe(before[0]);
    const history = await rest("GET", `/v1/preview/runs/${model.run_id}/metrics?name=train/loss`, { key });
    expect((history.body as { data: { step: number }[] }).data.map((m) => m.step)).toEqual([1]);

    // The trained adapter can be taken away: llama.cpp's LoRA GGUF, the same bytes over REST and Connect.
    const adapter = await fetch(`${server.url}/v1/preview/artifacts/download?url=${encodeURIComponent("e2e/sft:step1")}`, { headers: { authorization: `Bearer ${key}` } });
    expect(adapter.status).toBe(200);
    expect(adapter.headers.get("content-disposition")).toBe('attachment; filename="sft-step1.gguf"');
    const bytes = new Uint8Array(await adapter.arrayBuffer());
    expect(bytes.byteLength).toBe(Number(adapter.headers.get("content-length")));
    const path = join(isolated.dataDir, "downloaded.gguf");
    await writeFile(path, bytes);
    const reader = await GgufReader.open(path);
    try {
      expect(reader.metadata.get("adapter.type")?.value).toBe("lora");
    } finally {
      await reader.close();
    }
    const training = createClient(Training, createConnectTransport({ baseUrl: server.url, httpVersion: "2", interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${key}`), next(req))] }));
    const chunks: Uint8Array[] = [];
    for await (const chunk of training.downloadArtifactFile({ url: `wandb-artifact:///${entity}/e2e/sft:latest` })) chunks.push(chunk.data);
    expect(Buffer.concat(chunks).equals(Buffer.from(bytes))).toBe(true);
    const base = await fetch(`${server.url}/v1/preview/artifacts/download?url=${encodeURIComponent("e2e/sft:step0")}`, { headers: { authorization: `Bearer ${key}` } });
    expect(base.status).toBe(404);
    expect(await base.json()).toEqual({ detail: "step 0 of e2e/sft is the base model tiny-chat itself: it has no adapter" });
  }, 180000);

  it("fails a job on bad data with one training_failed naming the line", async () => {
    const model = await newModel("sft-bad");
    const data = await upload("bad-data", '{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}\n{"messages":[{"role":"user","content":"only a question"}]}\n');
    const job = (await rest("POST", "/v1/preview/sft-training-jobs", { key, body: { model_id: model.id, training_data_url: data.url } })).body as { id: string };
    const outcome = await followJob(key, job.id, model.id);
    expect(outcome.terminal).toMatchObject({ type: "training_failed", data: { error_message: "train.jsonl line 2: the last message must be the assistant's (it is \"user\")" } });
    expect(outcome.step).toBe(0);
    const events = (await rest("GET", `/v1/preview/training-jobs/${job.id}/events?limit=100`, { key })).body as { data: { type: string }[] };
    expect(events.data.filter((e) => e.type === "training_failed" || e.type === "training_ended").length).toBe(1);
  }, 180000);
});

describe("RL", () => {
  it("trains on completions sampled from the service; the next request is served by the new adapter", async () => {
    const model = await newModel("rl");
    const name = `wandb-artifact:///${entity}/e2e/rl`;
    const prompt = [{ role: "system", content: "Answer briefly." }, { role: "user", content: "Say something." }];
    const groups = [];
    for (let group = 0; group < 2; group++) {
      const sampled = await rest("POST", "/v1/chat/completions", {
        key,
        body: { model: name, messages: prompt, n: 4, temperature: 1, seed: group, max_tokens: 12, logprobs: true, return_tokens_as_token_ids: true, return_token_ids: true },
      });
      expect(sampled.status).toBe(200);
      const choices = (sampled.body as { choices: { message: { content: string } }[] }).choices;
      // Reward: the share of the letter "e" in the reply.
      groups.push({
        trajectories: choices.map((choice) => ({
          messages_and_choices: [...prompt, choice],
          reward: [...choice.message.content].filter((c) => c === "e").length / Math.max(1, choice.message.content.length),
        })),
      });
    }
    const before = await greedy(`${name}:step0`, "Say something.", 12);
    const job = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.05 } } });
    expect(job.status).toBe(200);
    const outcome = await followJob(key, (job.body as { id: string }).id, model.id);
    expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
    expect(outcome.step).toBe(1);
    expect(outcome.numSequences).toBeGreaterThan(0);
    const after = await greedy(name, "Say something.", 12);
    expect(after).not.toBe(before);
    expect(await greedy(`${name}:step0`, "Say something.", 12)).toBe(before);
  }, 180000);

  it("takes the KL reference from the named step, the step lag or a checkpoint name, never from a server path", async () => {
    const model = await newModel("rl-kl");
    const prompt = [{ role: "user", content: "Say something." }];
    const sampled = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages: prompt, n: 4, temperature: 1, seed: 5, max_tokens: 10, logprobs: true } });
    const choices = (sampled.body as { choices: { message: { content: string } }[] }).choices;
    const groups = [{ trajectories: choices.map((choice, i) => ({ messages_and_choices: [...prompt, choice], reward: i })) }];
    const train = async (experimental: Record<string, unknown>) => {
      const job = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.05, ...experimental } } });
      expect(job.status, JSON.stringify(job.body)).toBe(200);
      const outcome = await followJob(key, (job.body as { id: string }).id, model.id);
      const latest = (await rest("GET", `/v1/preview/models/${model.id}/checkpoints?order=desc&limit=1`, { key })).body as { data: { step: number; metrics: Record<string, number> }[] };
      return { outcome, metrics: latest.data[0]?.metrics ?? {} };
    };
    const refused = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups, experimental_config: { kl_penalty_coef: 0.5, kl_ref_adapter_path: "/etc/passwd" } } });
    expect(refused.status).toBe(400);
    expect((refused.body as { detail: string }).detail).toMatch(/^experimental_config.kl_ref_adapter_path: name a checkpoint as \{project\}\/\{name\}:step\{N\}/);

    expect((await train({})).outcome.step).toBe(1);
    // A learning rate too small to move the policy within a job, and the divergence measured from
    // the learner (not from the sampler, here the base model): against the policy being trained
    // (step 1) the penalty then sees none...
    const still = { learning_rate: 1e-9, kl_penalty_coef: 0.5, kl_penalty_source: "current_learner" };
    const itself = await train({ ...still, kl_penalty_reference_step: 1 });
    expect(itself.outcome.terminal.type, JSON.stringify(itself.outcome.terminal.data)).toBe("training_ended");
    expect(Math.abs(itself.metrics.kl_policy_ref ?? NaN)).toBeLessThan(1e-3);
    // ...against the base model (two steps behind step 2) it does; by name the same as by step.
    const lagged = await train({ ...still, kl_penalty_step_lag: 2 });
    expect(Math.abs(lagged.metrics.kl_policy_ref ?? 0)).toBeGreaterThan(1e-2);
    const named = await train({ ...still, kl_ref_adapter_path: "e2e/rl-kl:step3" });
    expect(named.outcome.step).toBe(4);
    expect(Math.abs(named.metrics.kl_policy_ref ?? NaN)).toBeLessThan(1e-3);
    const missing = await train({ kl_penalty_coef: 0.5, kl_penalty_reference_step: 9 });
    expect(missing.outcome.terminal).toMatchObject({ type: "training_failed", data: { error_message: "KL reference: e2e/rl-kl has no checkpoint at step 9" } });
  }, 180000);

  it("cancels a running and a queued job, each with exactly one terminal event and no checkpoint", async () => {
    const model = await newModel("rl-cancel");
    // A long SFT job keeps the model busy, so the RL job behind it stays queued.
    const lines = Array.from({ length: 400 }, (_, i) => JSON.stringify({ messages: [{ role: "user", content: `q${i}` }, { role: "assistant", content: `a${i}` }] }));
    const data = await upload("long-data", lines.join("\n"));
    const running = (await rest("POST", "/v1/preview/sft-training-jobs", { key, body: { model_id: model.id, training_data_url: data.url, config: { batch_size: 1 } } })).body as { id: string };
    const groups = [{ trajectories: [{ messages_and_choices: [{ role: "user", content: "x" }], reward: 1 }, { reward: 0 }] }];
    const queued = (await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups } })).body as { id: string };
    for (let i = 0; i < 60; i++) {
      const state = (await rest("GET", `/v1/preview/training-jobs/${running.id}`, { key })).body as { status: string };
      if (state.status === "running") break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect((await rest("GET", `/v1/preview/training-jobs/${queued.id}`, { key })).body).toMatchObject({ status: "queued" });
    for (const id of [queued.id, running.id]) {
      expect((await rest("POST", `/v1/preview/training-jobs/${id}/cancel`, { key })).body).toMatchObject({ status: "failed", error_message: "cancelled" });
      const outcome = await followJob(key, id, model.id);
      expect(outcome.terminal).toMatchObject({ type: "training_failed", data: { error_message: "cancelled" } });
    }
    // Give the worker time to notice (its next heartbeat) and make sure nothing else appears.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    for (const id of [queued.id, running.id]) {
      const events = (await rest("GET", `/v1/preview/training-jobs/${id}/events?limit=100`, { key })).body as { data: { type: string }[]; has_more: boolean };
      expect(events.data.filter((e) => e.type === "training_failed" || e.type === "training_ended").length).toBe(1);
    }
    expect((await rest("GET", `/v1/preview/models/${model.id}/checkpoints?order=desc&limit=1`, { key })).body).toMatchObject({ data: [{ step: 0 }] });
  }, 180000);

  it("advances the step even when nothing is trainable (the adapter carries over)", async () => {
    const model = await newModel("rl-flat");
    // Equal rewards: every advantage is zero.
    const groups = [{ trajectories: [{ messages_and_choices: [{ role: "user", content: "x" }], reward: 1 }, { reward: 1 }] }];
    const job = (await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups } })).body as { id: string };
    const outcome = await followJob(key, job.id, model.id);
    expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
    expect(outcome.step).toBe(1);
  }, 180000);
});
