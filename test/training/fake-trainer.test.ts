// The worker does not trust its trainer. The real server is started with TRAINER_URLS naming a
// fake trainer written here: a real gRPC server over TLS speaking the trainer's contract (gen/),
// which checks the shared secret and answers each job as the test tells it. Garbage (NaN tensors,
// a file named `..`, a 300-character name, wrong shapes, a layer the base lacks) fails the job
// with a message naming it and writes no checkpoint; a job the trainer never answers fails by the
// job deadline (TRAINER_JOB_TIMEOUT_MS, short here); after each, a good job of the same model
// still trains and its checkpoint is served.
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdapterRole, FileChunkSchema, Trainer, TrainResponseSchema, type TrainRequest, type TrainResponse } from "../../gen/srl/trainer/v1/trainer_pb.js";
import { adapterBaseOf } from "../../services/weights/adapter-check.js";
import { writeLoraAdapter, type LoraPair } from "../../services/weights/lora.js";
import { ensureBuiltInModel } from "../../services/weights/tiny-model.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const SECRET = "fake-trainer-shared-secret-0123456789";
const JOB_DEADLINE_MS = 6_000;
type Answer = { kind: "files"; files: { format: string; filename: string; data: Uint8Array }[] } | { kind: "hang" };

let scratch: string;
let isolated: IsolatedServer;
let trainer: http2.Http2SecureServer;
/** What the fake trainer answers to the next Train calls, in order. */
const answers: Answer[] = [];
const calls = { authenticated: 0, refused: 0, hungCancelled: 0 };
let shapes: { q: [number, number]; blocks: number };

/** A LoRA GGUF for tiny-chat's layer-0 q projection, optionally broken. */
async function adapterGguf(options: { poison?: number; nIn?: number; layer?: number } = {}): Promise<Uint8Array> {
  const [nIn, nOut] = [options.nIn ?? shapes.q[0], shapes.q[1]];
  const pair: LoraPair = { a: Float32Array.from({ length: 4 * nIn }, (_, i) => Math.sin(i) / 50), b: Float32Array.from({ length: nOut * 4 }, (_, i) => Math.cos(i) / 50) };
  if (options.poison !== undefined) pair.b[3] = options.poison;
  const path = join(scratch, `adapter-${Math.random().toString(36).slice(2)}.gguf`);
  await writeLoraAdapter({ path, base: { architecture: "llama" }, rank: 4, alpha: 8, tensors: new Map([[`blk.${options.layer ?? 0}.attn_q.weight`, pair]]) });
  return readFile(path);
}

function authenticate(context: HandlerContext): void {
  if (context.requestHeader.get("authorization") !== `Bearer ${SECRET}`) {
    calls.refused++;
    throw new ConnectError("missing or wrong trainer secret", Code.Unauthenticated);
  }
  calls.authenticated++;
}

function routes(router: ConnectRouter): void {
  router.service(Trainer, {
    describe(_request, context) {
      authenticate(context);
      return { device: "fake", threads: 1, architectures: ["llama"] };
    },
    inspectBaseModel(_request, context) {
      authenticate(context);
      return { trainable: true, architecture: "llama", quantized: false, contextLength: 2048 };
    },
    async *train(requests: AsyncIterable<TrainRequest>, context: HandlerContext): AsyncIterable<TrainResponse> {
      authenticate(context);
      let steps = 0;
      for await (const request of requests) {
        if (request.message.case === "spec") steps = request.message.value.steps.length;
        if (request.message.case === "end") break;
      }
      const answer = answers.shift() ?? { kind: "hang" };
      yield create(TrainResponseSchema, { message: { case: "started", value: { numSteps: steps, device: "fake", threads: 1 } } });
      if (answer.kind === "hang") {
        // Alive and connected, never answering: until the caller gives up.
        await new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve(), { once: true }));
        calls.hungCancelled++;
        return;
      }
      for (let step = 1; step <= steps; step++) yield create(TrainResponseSchema, { message: { case: "step", value: { step, metrics: { loss: 1, grad_norm: 0.5 } } } });
      for (const file of answer.files) yield create(TrainResponseSchema, { message: { case: "file", value: create(FileChunkSchema, { role: AdapterRole.OUTPUT, ...file }) } });
      yield create(TrainResponseSchema, { message: { case: "finished", value: { trained: true } } });
    },
  });
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "fake-trainer-"));
  const base = await adapterBaseOf(await ensureBuiltInModel("tiny-chat", scratch));
  shapes = { q: base.shapes.get("blk.0.attn_q.weight") as [number, number], blocks: base.blockCount };
  // TLS as a remote trainer would serve it (--tls-cert/--tls-key), trusted through TRAINER_CA_FILE.
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=fake-trainer", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", join(scratch, "key.pem"), "-out", join(scratch, "cert.pem")], { stdio: "ignore" });
  trainer = http2.createSecureServer({ key: await readFile(join(scratch, "key.pem")), cert: await readFile(join(scratch, "cert.pem")) }, connectNodeAdapter({ routes }));
  await new Promise<void>((resolve) => trainer.listen(0, "127.0.0.1", resolve));
  const port = (trainer.address() as AddressInfo).port;
  isolated = await startIsolatedServer({
    name: "fake_trainer",
    entity: "faker",
    env: { TRAINER_URLS: `https://127.0.0.1:${port}`, TRAINER_SECRET: SECRET, TRAINER_CA_FILE: join(scratch, "cert.pem"), TRAINER_JOB_TIMEOUT_MS: String(JOB_DEADLINE_MS), WORKER_LEASE_MS: "3000" },
  });
}, 180_000);

afterAll(async () => {
  await isolated?.stop();
  trainer?.close();
  await rm(scratch, { recursive: true, force: true });
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${isolated.server.url}${path}`, { method, headers: { authorization: `Bearer ${isolated.key}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

let modelId = "";

/** A new version of the training data per job: SFT creation is idempotent per (model, data URL). */
async function newData(): Promise<string> {
  const lines = Array.from({ length: 4 }, (_, i) => JSON.stringify({ messages: [{ role: "user", content: `q${i}` }, { role: "assistant", content: `a${i}` }] }));
  const upload = await fetch(`${isolated.server.url}/v1/preview/artifacts?project=fake&name=data`, { method: "POST", headers: { authorization: `Bearer ${isolated.key}` }, body: lines.join("\n") });
  expect(upload.status).toBe(200);
  return ((await upload.json()) as { url: string }).url;
}

/** Runs one SFT job of the model with the fake trainer answering `answer`; its final record. */
async function job(answer: Answer): Promise<{ status: string; error_message?: string; step?: number; seconds: number }> {
  answers.push(answer);
  const started = Date.now();
  const created = await call("POST", "/v1/preview/sft-training-jobs", { model_id: modelId, training_data_url: await newData(), config: { batch_size: 2 } });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  for (let i = 0; i < 240; i++) {
    const state = (await call("GET", `/v1/preview/training-jobs/${created.body.id as string}`)).body as { status: string; error_message?: string; step?: number };
    if (state.status === "succeeded" || state.status === "failed") return { ...state, seconds: (Date.now() - started) / 1000 };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error("the job did not end in 60 s");
}

async function steps(): Promise<number[]> {
  const listed = (await call("GET", `/v1/preview/models/${modelId}/checkpoints`)).body as { data: { step: number }[] };
  return listed.data.map((c) => c.step);
}

async function chat(): Promise<number> {
  const res = await call("POST", "/v1/chat/completions", { model: "wandb-artifact:///faker/fake/m", messages: [{ role: "user", content: "hi" }], max_tokens: 4, temperature: 0, logprobs: true });
  return res.status;
}

describe("a trainer that returns garbage or hangs (fake trainer over TLS, with the shared secret)", () => {
  it("fails each bad result clearly, writes no checkpoint, and trains the model's next good job", async () => {
    const model = await call("POST", "/v1/preview/models", { project: "fake", name: "m", base_model: "tiny-chat" });
    expect(model.status).toBe(200);
    modelId = model.body.id as string;

    const good = await adapterGguf();
    const gguf = (data: Uint8Array) => ({ format: "gguf", filename: "adapter.gguf", data });
    const cases: [string, Answer, RegExp][] = [
      ["NaN tensor", { kind: "files", files: [gguf(await adapterGguf({ poison: NaN }))] }, /invalid adapter.*blk\.0\.attn_q\.weight\.lora_b holds NaN/],
      ["infinite tensor", { kind: "files", files: [gguf(await adapterGguf({ poison: Infinity }))] }, /invalid adapter.*holds an infinite value/],
      ["a file named ..", { kind: "files", files: [gguf(good), { format: "peft", filename: "..", data: new Uint8Array(8) }] }, /invalid adapter: adapter file "\.\." \(format "peft"\) names a directory/],
      ["a 300-character name", { kind: "files", files: [gguf(good), { format: "peft", filename: "n".repeat(300), data: new Uint8Array(8) }] }, /invalid adapter: adapter file "n{60}\.\.\." .* is 300 characters long/],
      ["a path", { kind: "files", files: [{ format: "gguf", filename: "../../adapter.gguf", data: good }] }, /invalid adapter: .* is a path/],
      ["wrong shapes", { kind: "files", files: [gguf(await adapterGguf({ nIn: shapes.q[0] + 8 }))] }, /invalid adapter.*blk\.0\.attn_q\.weight is \[\d+ -> \d+\] in the base model/],
      ["a layer the base lacks", { kind: "files", files: [gguf(await adapterGguf({ layer: shapes.blocks + 3 }))] }, /invalid adapter.*is not the LoRA A\/B of a llama projection/],
      ["no adapter at all", { kind: "files", files: [] }, /sent no GGUF adapter/],
    ];
    for (const [what, answer, message] of cases) {
      const outcome = await job(answer);
      expect(outcome.status, what).toBe("failed");
      expect(outcome.error_message, what).toMatch(message);
      expect(await steps(), what).toEqual([0]);
    }

    const trained = await job({ kind: "files", files: [gguf(good)] });
    expect(trained).toMatchObject({ status: "succeeded", step: 1 });
    expect(await steps()).toEqual([0, 1]);
    expect(await chat()).toBe(200); // the checkpoint is served
    expect(calls).toMatchObject({ refused: 0 });
    expect(calls.authenticated).toBeGreaterThan(cases.length);
  }, 300_000);

  it("fails a job the trainer never answers by the job deadline, and the worker goes on to the next", async () => {
    const hung = await job({ kind: "hang" });
    expect(hung.status).toBe("failed");
    expect(hung.error_message).toMatch(/^the trainer at https:\/\/127\.0\.0\.1:\d+ did not answer within 6 s \(TRAINER_JOB_TIMEOUT_MS\); the call was stopped$/);
    expect(hung.seconds).toBeLessThan(JOB_DEADLINE_MS / 1000 + 20);
    expect(calls.hungCancelled).toBe(1); // the call was ended on the trainer's side too
    expect(await steps()).toEqual([0, 1]);

    const next = await job({ kind: "files", files: [{ format: "gguf", filename: "adapter.gguf", data: await adapterGguf() }] });
    expect(next).toMatchObject({ status: "succeeded", step: 2 });
    expect(await chat()).toBe(200);
  }, 180_000);
});
