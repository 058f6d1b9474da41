// runTrainingJob end to end on a real trainer process (PyTorch, started and supervised as in
// production): progress, the adapter in both formats, resuming from either format, per-job LoRA
// settings, input errors, cancellation, RL (trained, and the nothing-to-train path), and a trainer
// that dies mid-job.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../core/logger.js";
import { GgufReader, getNumber, getString } from "../../weights/gguf/index.js";
import { ensureBuiltInModel } from "../../weights/tiny-model.js";
import { DEFAULT_TRAINER_PYTHON, LocalTrainer } from "./engine/local-trainer.js";
import { TrainerClient, TrainerLostError } from "./engine/trainer-client.js";
import { TrainerPool } from "./engine/trainer-pool.js";
import { TRAINER_TIMEOUT_DEFAULTS } from "./engine/trainer-settings.js";
import { TRAINABLE_ARCHITECTURES } from "../../models/trainability.js";
import { TrainingInputError, type TrainingJobInput, type TrainingJobResult } from "./api.js";
import { runTrainingJob } from "./runner/run-training-job.js";

let dir: string;
let basePath: string;
let local: LocalTrainer;
let pool: TrainerPool;
/** Token ids of a text, for Choices whose logprobs name sampled tokens as "token_id:<n>". */
let encode: (text: string) => number[];
let disposeVocab: () => Promise<void>;
/** The secret the trainers "on other machines" are started with, as an operator would. */
const REMOTE_SECRET = "remote-trainers-secret-for-tests";
const remoteSettings = { secret: REMOTE_SECRET, ca: undefined, ...TRAINER_TIMEOUT_DEFAULTS };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "trainer-job-"));
  basePath = await ensureBuiltInModel("tiny-chat", dir);
  local = new LocalTrainer({ python: DEFAULT_TRAINER_PYTHON, dataDir: dir, threads: 1, log: createLogger({ level: "warn" }) });
  pool = new TrainerPool([], local);
  const llama = await getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error });
  const vocab = await llama.loadModel({ modelPath: basePath, vocabOnly: true });
  encode = (text) => vocab.tokenize(text, false).map(Number);
  disposeVocab = async () => {
    await vocab.dispose();
    await llama.dispose();
  };
}, 240_000);

afterAll(async () => {
  await disposeVocab?.();
  await pool?.stop();
  await rm(dir, { recursive: true, force: true });
});

const sftRows: JsonObject[] = [
  { messages: [{ role: "user", content: "Capital of France?" }, { role: "assistant", content: "Paris" }] },
  { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Sky color?" }, { role: "assistant", content: "Blue" }] },
  { messages: [{ role: "user", content: "Cat legs?" }, { role: "assistant", content: "Four" }] },
];

interface Run {
  result: TrainingJobResult;
  started: number[];
  steps: Record<string, number>[];
}

async function run(input: Partial<TrainingJobInput> & Pick<TrainingJobInput, "kind">, signal = new AbortController().signal, onStep?: () => void): Promise<Run> {
  const started: number[] = [];
  const steps: Record<string, number>[] = [];
  const size = (await stat(basePath)).size;
  const result = await runTrainingJob(
    pool,
    { jobId: "test", baseModel: { name: "tiny-chat", ggufPath: basePath, ggufSize: size, source: "builtin:tiny-chat", trainWeights: "" }, previousAdapter: null, ...input },
    {
      started: (n) => started.push(n),
      step: (m) => {
        steps.push(m);
        onStep?.();
      },
    },
    signal,
  );
  return { result, started, steps };
}

async function ggufFacts(data: Buffer): Promise<{ type: string | undefined; alpha: number | undefined; tensors: string[]; rank: number }> {
  const path = join(dir, `read-${Math.random().toString(36).slice(2)}.gguf`);
  await writeFile(path, data);
  const reader = await GgufReader.open(path);
  await reader.close();
  const a = reader.tensors.find((t) => t.name.endsWith(".lora_a"))!;
  return { type: getString(reader.metadata, "adapter.type"), alpha: getNumber(reader.metadata, "adapter.lora.alpha"), tensors: reader.tensors.map((t) => t.name), rank: a.dims[1]! };
}

function choice(text: string, logprob: number): JsonObject {
  const content = [...encode(text), 767].map((id) => ({ token: `token_id:${id}`, logprob, bytes: null, top_logprobs: [] }));
  return { finish_reason: "stop", index: 0, message: { role: "assistant", content: text }, logprobs: { content } };
}

function group(question: string, answers: [string, number][]): JsonObject {
  return { trajectories: answers.map(([a, reward]) => ({ messages_and_choices: [{ role: "user", content: question }, choice(a, -3)], reward })) };
}

describe("runTrainingJob (PyTorch trainer process)", () => {
  it("agrees with the service on the architectures it trains", async () => {
    const info = await (await local.client()).describe();
    expect([...info.architectures].sort()).toEqual([...TRAINABLE_ARCHITECTURES].sort());
    expect(info.device).toBe("cpu");
  });

  it("runs SFT with progress, returns the adapter as GGUF and PEFT, and resumes from either", async () => {
    const a = await run({ kind: "sft", sftRows, sftConfig: { batch_size: 2, learning_rate: [2e-3, 1e-3] } });
    expect(a.started).toEqual([2]);
    expect(a.steps.map((s) => s.gradient_step)).toEqual([1, 2]);
    expect(a.steps.map((s) => s.learning_rate)).toEqual([2e-3, 1e-3]);
    for (const s of a.steps) {
      for (const key of ["loss", "grad_norm", "num_tokens", "num_trainable_tokens", "tokens_per_second"]) expect(Number.isFinite(s[key]), key).toBe(true);
    }
    expect(a.steps[0]!.num_trainable_tokens).toBeGreaterThan(0);
    expect(a.result.trained).toBe(true);
    expect(a.result.metrics.num_gradient_steps).toBe(2);
    expect(a.result.metrics.loss).toBeCloseTo((a.steps[0]!.loss! + a.steps[1]!.loss!) / 2, 6);
    const adapter = a.result.adapter!;
    const gguf = await ggufFacts(adapter.gguf["adapter.gguf"]!);
    expect(gguf).toMatchObject({ type: "lora", alpha: 16, rank: 8 });
    // 4 layers x 7 projections x (A, B), named as llama.cpp names the base tensors.
    expect(gguf.tensors).toHaveLength(56);
    expect(gguf.tensors).toContain("blk.3.ffn_gate.weight.lora_b");
    const config = JSON.parse(adapter.peft["adapter_config.json"]!.toString()) as JsonObject;
    expect(config).toMatchObject({ peft_type: "LORA", r: 8, lora_alpha: 16, target_modules: ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"] });
    expect(adapter.peft["adapter_model.safetensors"]!.length).toBeGreaterThan(100_000);

    // Resumed: the same data again starts from the trained adapter, so its first loss is lower;
    // from the GGUF (how checkpoints written before PEFT export resume) exactly as from PEFT's
    // files: a wrong Q/K permutation on import would change it.
    const fromPeft = await run({ kind: "sft", previousAdapter: { format: "peft", files: adapter.peft }, sftRows, sftConfig: { batch_size: 2, learning_rate: 1e-3 } });
    const fromGguf = await run({ kind: "sft", previousAdapter: { format: "gguf", files: adapter.gguf }, sftRows, sftConfig: { batch_size: 2, learning_rate: 1e-3 } });
    expect(fromPeft.steps[0]!.loss).toBeLessThan(a.steps[0]!.loss! - 0.1);
    expect(fromGguf.steps[0]!.loss).toBeCloseTo(fromPeft.steps[0]!.loss!, 5);
    expect(fromPeft.result.adapter!.gguf["adapter.gguf"]).not.toEqual(adapter.gguf["adapter.gguf"]);
  }, 180_000);

  it("takes LoRA settings per job and refuses to change them on a trained adapter", async () => {
    const small = await run({ kind: "sft", sftRows, sftConfig: { batch_size: 3, lora_config: { rank: 4, alpha: 8, target_modules: ["q_proj", "v_proj"] } } });
    const gguf = await ggufFacts(small.result.adapter!.gguf["adapter.gguf"]!);
    expect(gguf).toMatchObject({ rank: 4, alpha: 8 });
    expect(gguf.tensors.filter((t) => t.endsWith(".lora_a")).sort()).toEqual([0, 1, 2, 3].flatMap((l) => [`blk.${l}.attn_q.weight.lora_a`, `blk.${l}.attn_v.weight.lora_a`]).sort());
    // Unset settings follow the previous adapter; a different rank is refused.
    const follows = await run({ kind: "sft", previousAdapter: { format: "peft", files: small.result.adapter!.peft }, sftRows, sftConfig: { batch_size: 3 } });
    expect((await ggufFacts(follows.result.adapter!.gguf["adapter.gguf"]!)).rank).toBe(4);
    await expect(run({ kind: "sft", previousAdapter: { format: "peft", files: small.result.adapter!.peft }, sftRows, sftConfig: { lora_config: { rank: 8 } } })).rejects.toThrow(/adapter has rank 4.*cannot change/);
    await expect(run({ kind: "sft", sftRows, sftConfig: { lora_config: { target_modules: ["attn_q"] } } })).rejects.toThrow(/do not exist in llama/);
    await expect(run({ kind: "sft", sftRows, sftConfig: { lora_config: { rank: 0 } } })).rejects.toBeInstanceOf(TrainingInputError);
  }, 180_000);

  it("reports bad input as TrainingInputError and stops between steps when aborted", async () => {
    await expect(run({ kind: "sft", sftRows, sftConfig: { batch_size: 1, learning_rate: [1e-3, 1e-3] } })).rejects.toBeInstanceOf(TrainingInputError);
    await expect(run({ kind: "sft", previousAdapter: { format: "peft", files: { "adapter_config.json": Buffer.from("{}") } }, sftRows })).rejects.toBeInstanceOf(TrainingInputError);
    await expect(run({ kind: "sft", previousAdapter: { format: "gguf", files: { "adapter.gguf": Buffer.from("not a gguf") } }, sftRows })).rejects.toBeInstanceOf(TrainingInputError);

    const controller = new AbortController();
    let steps = 0;
    const many = Array.from({ length: 40 }, () => sftRows).flat();
    const aborted = run({ kind: "sft", sftRows: many, sftConfig: { batch_size: 1 } }, controller.signal, () => {
      steps++;
      controller.abort();
    });
    await expect(aborted).rejects.toMatchObject({ name: "AbortError" });
    expect(steps).toBeLessThan(5);
    // The trainer is free for the next job at once.
    expect((await run({ kind: "sft", sftRows, sftConfig: { batch_size: 3 } })).result.trained).toBe(true);
  }, 180_000);

  it("runs RL, and returns no adapter when nothing is trainable", async () => {
    const groups = [group("Capital of France?", [["Paris", 1], ["Rome", 0]]), group("Sky color?", [["Blue", 1], ["Blue", 1]])];
    const rl = await run({ kind: "rl", groups, experimentalConfig: { learning_rate: 1e-4, kl_penalty_coef: null }, seed: 7 });
    expect(rl.started).toEqual([2]); // the zero-variance group adds no rows
    expect(rl.result.trained).toBe(true);
    for (const key of ["loss", "grad_norm", "learning_rate", "entropy", "num_trainable_tokens", "num_groups_trainable", "sampler_logprob_abs_diff", "sampler_trainer_kl"]) {
      expect(Number.isFinite(rl.steps[0]![key]), key).toBe(true);
    }
    expect(rl.steps[0]!.learning_rate).toBe(1e-4);
    expect(rl.steps[0]!.num_groups_trainable).toBe(1);
    expect(rl.result.metrics.num_gradient_steps).toBe(2);

    const skip = await run({ kind: "rl", previousAdapter: { format: "peft", files: rl.result.adapter!.peft }, groups: [group("Sky color?", [["Blue", 1], ["Green", 1]])] });
    expect(skip.started).toEqual([0]);
    expect(skip.steps).toEqual([]);
    expect(skip.result).toMatchObject({ trained: false, adapter: null });
    expect(skip.result.metrics.num_gradient_steps).toBe(0);
  }, 180_000);

  it("ends a job whose trainer dies as lost, and starts the trainer again for the next", async () => {
    const generation = local.generation;
    const many = Array.from({ length: 60 }, () => sftRows).flat();
    let killed = false;
    const job = run({ kind: "sft", sftRows: many, sftConfig: { batch_size: 1 } }, new AbortController().signal, () => {
      if (killed) return;
      killed = true;
      // The whole process group: the guard and python.
      process.kill(-local.pid!, "SIGKILL");
    });
    await expect(job).rejects.toBeInstanceOf(TrainerLostError);
    const next = await run({ kind: "sft", sftRows, sftConfig: { batch_size: 3 } });
    expect(next.result.trained).toBe(true);
    expect(local.generation).toBe(generation + 1);
  }, 240_000);

  it("trains on trainers named by URL (TRAINER_URLS), passing a job on when a trainer is busy or unreachable", async () => {
    const [first, second] = await Promise.all([startTrainer(), startTrainer()]);
    try {
      const remote = new TrainerPool([first.url, second.url], null, remoteSettings);
      const size = (await stat(basePath)).size;
      const baseModel = { name: "tiny-chat", ggufPath: basePath, ggufSize: size, source: "builtin:tiny-chat", trainWeights: "" };
      // Keep the first trainer busy with a long job of its own.
      const busy = new AbortController();
      let busySteps = 0;
      const long = runTrainingJob(
        new TrainerPool([first.url], null, remoteSettings),
        { jobId: "long", kind: "sft", baseModel, previousAdapter: null, sftRows: Array.from({ length: 300 }, () => sftRows).flat(), sftConfig: { batch_size: 1 } },
        { started: () => undefined, step: () => void busySteps++ },
        busy.signal,
      ).catch((error: unknown) => error);
      while (busySteps === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await new TrainerClient(first.url, { secret: REMOTE_SECRET }).describe()).busy).toBe(true);
      // The pool tries the first trainer first (its rotation starts there), finds it busy, moves on.
      const result = await runTrainingJob(remote, { jobId: "remote", kind: "sft", baseModel, previousAdapter: null, sftRows, sftConfig: { batch_size: 3 } }, { started: () => undefined, step: () => undefined }, new AbortController().signal);
      expect(result.trained).toBe(true);
      expect((await new TrainerClient(first.url, { secret: REMOTE_SECRET }).describe()).busy).toBe(true);
      busy.abort();
      expect(await long).toMatchObject({ name: "AbortError" });
      // A trainer that cannot be reached is passed over too (port 9 answers nothing here).
      const withDead = new TrainerPool(["http://127.0.0.1:9", second.url], null, remoteSettings);
      const afterDead = await runTrainingJob(withDead, { jobId: "dead", kind: "sft", baseModel, previousAdapter: null, sftRows, sftConfig: { batch_size: 3 } }, { started: () => undefined, step: () => undefined }, new AbortController().signal);
      expect(afterDead.trained).toBe(true);
    } finally {
      first.process.kill();
      second.process.kill();
    }
  }, 240_000);
});

/** A trainer process as an operator starts one on another machine. */
async function startTrainer(): Promise<{ url: string; process: ChildProcess }> {
  const packageDir = join(import.meta.dirname, "../torch_trainer");
  const child = spawn(DEFAULT_TRAINER_PYTHON, ["-m", "srl_trainer", "--listen", "127.0.0.1:0", "--threads", "1"], { cwd: packageDir, env: { ...process.env, PYTHONPATH: packageDir, TRAINER_SECRET: REMOTE_SECRET }, stdio: ["ignore", "pipe", "ignore"] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /LISTENING (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`the trainer exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}`, process: child };
}
