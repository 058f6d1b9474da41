// runTrainingJob end to end, through the worker thread: progress events, the adapter file,
// resuming from it, input errors, cancellation, and RL (trained, and the nothing-to-train path).
import { readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuiltInModel } from "../../weights/tiny-model.js";
import { runTrainingJob, TrainingAbortedError, TrainingInputError, type TrainingJobInput, type TrainingJobResult } from "./index.js";
import { CausalLm } from "./model/causal-lm.js";
import { loadLora } from "./model/lora.js";

let dir: string;
let basePath: string;
let lm: CausalLm;
/** Token ids of a text, for Choices whose logprobs name sampled tokens as "token_id:<n>". */
let encode: (text: string) => number[];
let disposeVocab: () => Promise<void>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "trainer-job-"));
  basePath = await ensureBuiltInModel("tiny-chat", dir);
  lm = await CausalLm.load(basePath);
  const llama = await getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error });
  const vocab = await llama.loadModel({ modelPath: basePath, vocabOnly: true });
  encode = (text) => vocab.tokenize(text, false).map(Number);
  disposeVocab = async () => {
    await vocab.dispose();
    await llama.dispose();
  };
});

afterAll(async () => {
  await disposeVocab?.();
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

async function run(input: Partial<TrainingJobInput> & Pick<TrainingJobInput, "kind" | "adapterOutPath">, signal = new AbortController().signal, onStep?: () => void): Promise<Run> {
  const started: number[] = [];
  const steps: Record<string, number>[] = [];
  const result = await runTrainingJob(
    { baseModelPath: basePath, previousAdapterPath: null, ...input },
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

function choice(text: string, logprob: number): JsonObject {
  const content = [...encode(text), 767].map((id) => ({ token: `token_id:${id}`, logprob, bytes: null, top_logprobs: [] }));
  return { finish_reason: "stop", index: 0, message: { role: "assistant", content: text }, logprobs: { content } };
}

function group(question: string, answers: [string, number][]): JsonObject {
  return { trajectories: answers.map(([a, reward]) => ({ messages_and_choices: [{ role: "user", content: question }, choice(a, -3)], reward })) };
}

describe("runTrainingJob (worker thread)", () => {
  it("runs SFT with progress, writes the adapter, and resumes from it", async () => {
    const first = join(dir, "sft-1.gguf");
    const a = await run({ kind: "sft", adapterOutPath: first, sftRows, sftConfig: { batch_size: 2, learning_rate: [2e-3, 1e-3] } });
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
    const lora = await loadLora(first, lm.base);
    expect(lora.spec).toEqual({ rank: 8, alpha: 16, targets: ["q", "k", "v", "o", "gate", "up", "down"] });
    expect([...lora.tensors.values()].some((t) => t.b.some((v) => v !== 0))).toBe(true);

    // Resumed: the same data again starts from the trained adapter, so its first loss is lower.
    const second = join(dir, "sft-2.gguf");
    const b = await run({ kind: "sft", previousAdapterPath: first, adapterOutPath: second, sftRows, sftConfig: { batch_size: 2, learning_rate: 1e-3 } });
    expect(b.steps[0]!.loss).toBeLessThan(a.steps[0]!.loss! - 0.1);
    expect(await readFile(second)).not.toEqual(await readFile(first));
  });

  it("reports bad input as TrainingInputError and stops between steps when aborted", async () => {
    await expect(run({ kind: "sft", adapterOutPath: join(dir, "bad.gguf"), sftRows, sftConfig: { batch_size: 1, learning_rate: [1e-3, 1e-3] } })).rejects.toBeInstanceOf(TrainingInputError);

    const controller = new AbortController();
    const steps: number[] = [];
    const aborted = run({ kind: "sft", adapterOutPath: join(dir, "aborted.gguf"), sftRows, sftConfig: { batch_size: 1 } }, controller.signal, () => {
      steps.push(1);
      controller.abort();
    });
    await expect(aborted).rejects.toBeInstanceOf(TrainingAbortedError);
    expect(steps.length).toBeLessThan(3);
  });

  it("runs RL, and carries the adapter over when nothing is trainable", async () => {
    const trainedPath = join(dir, "rl-1.gguf");
    const groups = [group("Capital of France?", [["Paris", 1], ["Rome", 0]]), group("Sky color?", [["Blue", 1], ["Blue", 1]])];
    const rl = await run({ kind: "rl", adapterOutPath: trainedPath, groups, experimentalConfig: { learning_rate: 1e-4, kl_penalty_coef: null }, seed: 7 });
    expect(rl.started).toEqual([2]); // the zero-variance group adds no rows
    expect(rl.result.trained).toBe(true);
    for (const key of ["loss", "grad_norm", "learning_rate", "entropy", "num_trainable_tokens", "num_groups_trainable"]) expect(Number.isFinite(rl.steps[0]![key]), key).toBe(true);
    expect(rl.steps[0]!.num_groups_trainable).toBe(1);
    expect(rl.result.metrics.num_gradient_steps).toBe(2);

    const carried = join(dir, "rl-2.gguf");
    const skip = await run({ kind: "rl", previousAdapterPath: trainedPath, adapterOutPath: carried, groups: [group("Sky color?", [["Blue", 1], ["Green", 1]])] });
    expect(skip.started).toEqual([0]);
    expect(skip.steps).toEqual([]);
    expect(skip.result.trained).toBe(false);
    expect(skip.result.metrics.num_gradient_steps).toBe(0);
    expect(await readFile(carried)).toEqual(await readFile(trainedPath));
  });
});
