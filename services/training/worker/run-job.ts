// One claimed job, start to finish: gather the input, run the trainer with heartbeats, then write
// the checkpoint (adapter first, then the row, listed and servable) before `training_ended`. Any
// failure ends the job with exactly one `training_failed` carrying the reason.
import type { JsonObject } from "@bufbuild/protobuf";
import type { Artifacts } from "../../artifacts/index.js";
import { isDatabaseUnavailable } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import { instruments } from "../../core/metrics/index.js";
import type { EventLog } from "../../events/index.js";
import type { AdapterBytes, AdapterFiles, BaseModelCatalog, Checkpoints, ModelRegistry, Runs } from "../../models/index.js";
import { resolveTrainingData } from "../artifact-url.js";
import type { TrainingJobRecord, TrainingJobs } from "../../jobs/index.js";
import { resolveKlReference } from "../kl-reference.js";
import { parseTrainJsonl, readSftRows } from "../sft-data.js";
import { baseModelRefOf, TrainingInputError, type InputAdapter, type TrainerStartInfo, type TrainingJobInput, type TrainingJobResult, type TrainingProgress } from "../trainer/api.js";
import { TrainerLostError } from "../trainer/engine/trainer-client.js";
import { AdapterCheckError, adapterBaseOf, checkAdapterFiles } from "../../weights/index.js";
import { gradientStepRow, metricLoggingOf } from "./metric-logging.js";

export interface WorkerDeps {
  jobs: TrainingJobs;
  events: EventLog;
  registry: ModelRegistry;
  catalog: BaseModelCatalog;
  checkpoints: Checkpoints;
  runs: Runs;
  artifacts: Artifacts;
  /** Checkpoint adapters cached on this machine (the database is slow to read them back). */
  adapters: AdapterFiles;
  /** The base model's GGUF path for a catalog source (built-in, file or hf:). */
  baseModelPath(source: string): Promise<string>;
  train(input: TrainingJobInput, progress: TrainingProgress, signal: AbortSignal): Promise<TrainingJobResult>;
  /** Hosts https training data may come from (ARTIFACT_HTTPS_HOSTS). */
  artifactHttpsHosts: readonly string[];
  log: Logger;
}

export interface JobRunOptions {
  workerId: string;
  leaseMs: number;
  /** Attempts a job gets when its trainer process dies under it. */
  maxAttempts: number;
  /** Set when the worker shuts down: the job goes back to the queue instead of failing. */
  shutdown: AbortSignal;
}

export async function runJob(deps: WorkerDeps, job: TrainingJobRecord, options: JobRunOptions): Promise<void> {
  const { jobs, events, log } = deps;
  const abort = new AbortController();
  const lost = { value: false };
  const heartbeat = setInterval(() => {
    jobs.heartbeat(job._id, options.workerId, options.leaseMs).then(
      (held) => {
        if (!held) {
          lost.value = true; // cancelled, deleted or taken over: stop working on it
          abort.abort();
        }
      },
      (error: unknown) => log.warn("heartbeat failed", { job_id: job._id, error }),
    );
  }, Math.max(200, Math.floor(options.leaseMs / 3)));
  const onShutdown = () => abort.abort();
  options.shutdown.addEventListener("abort", onShutdown);
  const started = performance.now();
  try {
    const checkpoint = await train(deps, job, abort.signal);
    if (!(await jobs.finish(job._id, options.workerId, checkpoint.step))) {
      // Cancelled, deleted or taken over while the checkpoint was being written: take it back,
      // so a job that did not succeed leaves no checkpoint behind.
      if (checkpoint.created) await deps.checkpoints.deleteById(checkpoint.id);
      return;
    }
    const step = checkpoint.step;
    const logging = metricLoggingOf(JSON.parse(job.config_json) as JsonObject);
    if (logging.gradientSteps) {
      for (const [index, metrics] of checkpoint.gradientSteps.entries()) await deps.runs.append(checkpoint.runId, logging.step(step), "sft", gradientStepRow(index + 1, metrics));
    }
    if (logging.averages) await deps.runs.append(checkpoint.runId, logging.step(step), "train", prefixTrain(checkpoint.metrics));
    await events.append(job._id, "training_ended", { step });
    log.info("training job succeeded", { job_id: job._id, model_id: job.model_id, step, seconds: Math.round((performance.now() - started) / 100) / 10 });
  } catch (error) {
    if (options.shutdown.aborted && !lost.value) {
      await jobs.requeue(job._id, options.workerId);
      log.info("training job handed back to the queue (worker stopping)", { job_id: job._id });
      return;
    }
    if (lost.value) return;
    if (error instanceof TrainerLostError && job.attempts < options.maxAttempts) {
      // As a lost lease: the attempt counts, and the job is tried again (the trainer restarts).
      log.warn("training job interrupted: its trainer stopped; the job will be tried again", { job_id: job._id, attempt: job.attempts, error });
      await jobs.release(job._id, options.workerId);
      return;
    }
    if (isDatabaseUnavailable(error)) {
      // Not the job's fault: leave it claimed; once its lease runs out it is tried again (a new
      // attempt), by this worker or another, when the database answers.
      log.warn("training job interrupted: the database is unavailable; it will be retried after its lease", { job_id: job._id, error });
      return;
    }
    const message =
      error instanceof TrainerLostError ? `the trainer stopped during each of the job's ${job.attempts} attempts; last: ${error.message}` : error instanceof Error ? error.message : String(error);
    if (!(error instanceof TrainingInputError)) log.error("training job failed", { job_id: job._id, error });
    if (await jobs.fail(job._id, message, options.workerId)) {
      if (!(await events.hasEnded(job._id))) await events.append(job._id, "training_failed", { error_message: message });
    }
  } finally {
    clearInterval(heartbeat);
    options.shutdown.removeEventListener("abort", onShutdown);
  }
}

/** Trains and writes the checkpoint (or finds the one an earlier attempt wrote). */
async function train(
  deps: WorkerDeps,
  job: TrainingJobRecord,
  signal: AbortSignal,
): Promise<{ id: string; step: number; created: boolean; runId: string; metrics: Record<string, number>; gradientSteps: Record<string, number>[] }> {
  const { registry, catalog, checkpoints, events } = deps;
  const model = await registry.get(job.model_id);
  if (!model) throw new TrainingInputError(`model ${job.model_id} no longer exists`);
  // A previous attempt that got as far as writing the checkpoint: finish with it, never a second one.
  const done = await checkpoints.ofJob(model._id, job._id);
  const config = JSON.parse(job.config_json) as JsonObject;
  if (done) return { id: done._id, step: done.step, created: false, runId: model.run_id, metrics: done.metrics, gradientSteps: [] };

  const base = catalog.get(model.base_model);
  if (!base) throw new TrainingInputError(`base model ${model.base_model} is no longer offered by this deployment`);
  const latest = await checkpoints.latest(model._id);
  const step = (latest?.step ?? 0) + 1;
  const previous = latest ? await deps.adapters.read(latest) : null;
  const ggufPath = await deps.baseModelPath(base.source);
  const common = {
    jobId: job._id,
    baseModel: await baseModelRefOf(base, ggufPath),
    previousAdapter: previous ? inputAdapter(previous) : null,
    // The same data trains the same way (row order, LoRA init): seeded by the new step.
    seed: step,
  };
  let input: TrainingJobInput;
  if (job.type === "rl") {
    const kl = await resolveKlReference(deps, model, latest?.step ?? 0, config);
    const reference = kl.reference ? await deps.adapters.read(kl.reference) : null;
    const trainedModel = { entity: model.entity, project: model.project, name: model.name };
    input = { ...common, kind: "rl", groups: await deps.jobs.inputOf(job), trainedModel, experimentalConfig: kl.config, referenceAdapter: reference ? inputAdapter(reference) : null };
  } else {
    input = { ...common, kind: "sft", sftRows: await sftRows(deps, job), sftConfig: (config.config ?? {}) as JsonObject };
  }

  const alreadyStarted = await events.hasStarted(job._id);
  // Progress arrives as callbacks; the appends are chained so events keep their order and all
  // are written before the terminal one.
  const gradientSteps: Record<string, number>[] = [];
  let appended: Promise<unknown> = Promise.resolve();
  const appendInOrder = (write: () => Promise<unknown>) => {
    appended = appended.then(write).catch((error: unknown) => deps.log.warn("could not append a progress event", { job_id: job._id, error }));
  };
  let lastStep = performance.now();
  const progress: TrainingProgress = {
    started: (numSequences, trainer) => {
      lastStep = performance.now();
      // The trainer's device and the memory settings it chose there, for whoever reads the job's events.
      const data: JsonObject = { num_sequences: numSequences, ...(trainer ? { trainer: trainerData(trainer) } : {}) };
      if (!alreadyStarted) appendInOrder(() => events.append(job._id, "training_started", data));
    },
    step: (metrics) => {
      instruments.trainingStepDuration.observe({ type: job.type }, (performance.now() - lastStep) / 1000);
      lastStep = performance.now();
      gradientSteps.push(numericOnly(metrics));
      appendInOrder(() => events.append(job._id, "gradient_step", numericOnly(metrics)));
    },
  };
  const result = await deps.train(input, progress, signal);
  await appended;
  if (signal.aborted) throw new Error("aborted");

  const adapter = await newAdapter(result, previous, ggufPath);
  const checkpoint = await checkpoints.create(model._id, step, result.metrics, adapter, job._id);
  // Served (and continued from) at once: keep the bytes here rather than read them back.
  if (adapter) await deps.adapters.remember(checkpoint, adapter).catch((error: unknown) => deps.log.warn("could not cache the new adapter", { job_id: job._id, error }));
  return { id: checkpoint._id, step, created: true, runId: model.run_id, metrics: result.metrics, gradientSteps };
}

/** The adapter to continue from: PEFT's files when the checkpoint has them (exact f32, the
 * trainer's own layout), else the GGUF (checkpoints written before PEFT export). */
function inputAdapter(adapter: AdapterBytes): InputAdapter {
  return adapter.peft ? { format: "peft", files: adapter.peft } : { format: "gguf", files: { "adapter.gguf": adapter.gguf } };
}

/**
 * The new checkpoint's adapter; with nothing trained, the previous one carries over (none at step
 * 0). What the trainer sent is checked first (names, tensors, shapes, finite values: weights'
 * adapter-check.ts): a bad adapter fails the job and never becomes a checkpoint the engine serves
 * or a later job continues from.
 */
async function newAdapter(result: TrainingJobResult, previous: AdapterBytes | null, baseGgufPath: string): Promise<AdapterBytes | undefined> {
  if (result.adapter) {
    const gguf = result.adapter.gguf["adapter.gguf"];
    if (!gguf) throw new Error("the trainer reported success but sent no GGUF adapter");
    try {
      await checkAdapterFiles(result.adapter, await adapterBaseOf(baseGgufPath));
    } catch (error) {
      if (error instanceof AdapterCheckError) throw new Error(`the trainer returned an invalid adapter; no checkpoint was written: ${error.message}`);
      throw error;
    }
    return { gguf, peft: Object.keys(result.adapter.peft).length > 0 ? result.adapter.peft : null };
  }
  if (result.trained) throw new Error("the trainer reported success but sent no adapter");
  return previous ?? undefined;
}

async function sftRows(deps: WorkerDeps, job: TrainingJobRecord): Promise<JsonObject[]> {
  const url = job.training_data_url ?? "";
  const artifact = await resolveTrainingData(deps.artifacts, job.entity, url, deps.artifactHttpsHosts).catch((error: unknown) => {
    throw new TrainingInputError(error instanceof Error ? error.message : String(error));
  });
  if (artifact) return readSftRows(deps.artifacts, artifact);
  // An https URL on an allowed host (checked again above): a train.jsonl file.
  const response = await fetch(url, { signal: AbortSignal.timeout(60_000) }).catch((error: unknown) => {
    throw new TrainingInputError(`could not download ${url}: ${error instanceof Error ? error.message : String(error)}`);
  });
  if (!response.ok) throw new TrainingInputError(`could not download ${url}: HTTP ${response.status}`);
  return parseTrainJsonl(await response.text());
}

function trainerData(info: TrainerStartInfo): JsonObject {
  return {
    device: info.device,
    threads: info.threads,
    load_seconds: info.loadSeconds,
    micro_batch_tokens: info.microBatchTokens,
    gradient_checkpointing: info.gradientCheckpointing,
    activation_budget_bytes: info.activationBudgetBytes,
    activation_bytes_per_token: info.activationBytesPerToken,
    resources: info.resources,
  };
}

function prefixTrain(metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics).map(([name, value]) => [name.includes("/") ? name : `train/${name}`, value]));
}

function numericOnly(metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics).filter(([, value]) => typeof value === "number" && Number.isFinite(value)));
}
