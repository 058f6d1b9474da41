// runTrainingJob (see ../api.ts): prepares the job in a worker thread (tokenization and planning
// are CPU work the server's event loop must not wait on), then trains it on a trainer of the pool
// (PyTorch, ../engine), relaying its progress in the spec's metric names.
//
// The thread must load .ts sources. `execArgv: ["--import", "tsx"]` does not work on Node 20 (the
// worker's entry is resolved before the hooks apply: ERR_UNKNOWN_FILE_EXTENSION, measured on
// 20.20), so the worker starts from a tiny eval'd ES module bootstrap that registers tsx's ESM
// hooks and then imports ./worker.ts. tsx is located from this file, not from the cwd.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { TrainingInputError, type TrainingJobInput, type TrainingJobResult, type TrainingProgress } from "../api.js";
import type { TrainerPool } from "../engine/trainer-pool.js";
import { TrainingAbortedError, meanMetrics } from "./progress.js";
import type { PrepareContext } from "./prepare.js";
import type { PreparedJob } from "./prepared-job.js";
import type { FromWorker, ToWorker } from "./protocol.js";

const WORKER_URL = new URL("./worker.ts", import.meta.url);

export type TrainFunction = (input: TrainingJobInput, progress: TrainingProgress, signal: AbortSignal) => Promise<TrainingJobResult>;

/** The worker's `train`: every job on `pool`. */
export function trainerFor(pool: TrainerPool): TrainFunction {
  return (input, progress, signal) => runTrainingJob(pool, input, progress, signal);
}

export async function runTrainingJob(pool: TrainerPool, input: TrainingJobInput, progress: TrainingProgress, signal: AbortSignal): Promise<TrainingJobResult> {
  const started = performance.now();
  // The trainer decides what it can train; a quantized base changes an RL default (rl/config.ts).
  const facts = await pool.inspect(input.baseModel);
  if (!facts.trainable) throw new TrainingInputError(`base model ${input.baseModel.name} cannot be trained: ${facts.reason}`);
  const prepared = await prepareInThread(input, { quantizedBase: facts.quantized }, signal);
  if (signal.aborted) throw new TrainingAbortedError();
  if (prepared.skip) {
    progress.started(0);
    return { metrics: { ...prepared.jobMetrics, "time/step_trainer_s": seconds(started) }, trained: false, adapter: null };
  }
  const steps: Record<string, number>[] = [];
  const outcome = await pool.train(
    {
      jobId: input.jobId,
      baseModel: input.baseModel,
      lora: prepared.lora,
      loss: prepared.loss,
      optimizer: prepared.optimizer,
      rows: prepared.rows,
      steps: prepared.steps,
      previousAdapter: input.previousAdapter,
      referenceAdapter: input.referenceAdapter ?? null,
      ...(prepared.logitsChunkTokens !== undefined ? { logitsChunkTokens: prepared.logitsChunkTokens } : {}),
    },
    {
      started: (numSteps, trainer) => progress.started(numSteps, trainer),
      step: (step, metrics) => {
        const reported = stepMetrics(prepared, step, metrics);
        steps.push(reported);
        progress.step(reported);
      },
    },
    signal,
  );
  const { gradient_step: _index, ...averaged } = meanMetrics(steps);
  return {
    metrics: { ...averaged, ...prepared.jobMetrics, "time/step_trainer_s": seconds(started) },
    trained: outcome.trained,
    adapter: outcome.trained ? outcome.adapter : null,
  };
}

/** The spec's per-step metrics: the trainer's, in the order and with the overrides ART reports. */
function stepMetrics(prepared: PreparedJob, step: number, trainer: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = { gradient_step: step, ...trainer };
  if (prepared.reportedLearningRate !== null) out.learning_rate = prepared.reportedLearningRate;
  return { ...out, ...prepared.stepMetrics };
}

function seconds(since: number): number {
  return (performance.now() - since) / 1000;
}

let bootstrap: string | undefined;
function workerBootstrap(): string {
  if (!bootstrap) {
    const pkgPath = createRequire(import.meta.url).resolve("tsx/package.json");
    const pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as { exports?: Record<string, { import?: { default?: string } } | string> };
    const entry = pkg.exports?.["./esm/api"];
    const rel = typeof entry === "object" ? entry.import?.default : undefined;
    if (!rel) throw new Error("tsx/esm/api has no ESM entry; cannot start the preparation thread");
    const api = pathToFileURL(join(dirname(pkgPath), rel)).href;
    bootstrap = `import(${JSON.stringify(api)}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}); });`;
  }
  return bootstrap;
}

function prepareInThread(input: TrainingJobInput, context: PrepareContext, signal: AbortSignal): Promise<PreparedJob> {
  if (signal.aborted) return Promise.reject(new TrainingAbortedError());
  return new Promise<PreparedJob>((resolve, reject) => {
    // Only what preparation reads crosses to the thread (adapters stay here).
    const threadInput: TrainingJobInput = { ...input, previousAdapter: null, referenceAdapter: null };
    const worker = new Worker(workerBootstrap(), { eval: true, workerData: { input: threadInput, context } satisfies ToWorker });
    let settled = false;
    const finish = (outcome: { job: PreparedJob } | { error: Error }) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      if ("job" in outcome) resolve(outcome.job);
      else reject(outcome.error);
    };
    // A preparation is not interruptible; a cancelled job just stops waiting for it. (The thread
    // is never terminated: it may hold a node-llama-cpp instance, see runner/tokenizer.ts.)
    const onAbort = () => finish({ error: new TrainingAbortedError() });
    signal.addEventListener("abort", onAbort, { once: true });
    worker.on("message", (message: FromWorker) => {
      if (message.type === "prepared") finish({ job: message.job });
      else {
        const error = message.kind === "input" ? new TrainingInputError(message.message) : new Error(`preparing the job: ${message.message}`);
        if (message.kind === "internal" && message.stack) error.stack = message.stack;
        finish({ error });
      }
    });
    worker.on("error", (error) => finish({ error }));
    worker.on("exit", (code) => finish({ error: new Error(`the preparation thread exited (code ${code}) without a result`) }));
  });
}
