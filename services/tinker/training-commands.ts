// What each Tinker training command does, once its turn has come (./command-queue.ts): the
// trainer's live-adapter command, and what the service keeps of it (checkpoints, the run). Each
// returns the future's result; a thrown error fails the future (./tinker-api.ts says how).
import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { ForwardBackwardRequest } from "../../gen/tinker/tinker_public_pb.js";
import { badRequest, notFound } from "../core/errors.js";
import { type BaseModelCatalog, type Checkpoints, type ModelDeletion, type ModelRegistry, parseTinkerPath, TINKER_SEGMENT_OF_TYPE, type TinkerCheckpointType, type Trainability } from "../models/index.js";
import type { BlobStore } from "../store/index.js";
import { readBlob } from "../store/index.js";
import { type AdamSettings, type BaseModelRef, baseModelRefOf, type LiveAdapterCommand, type LiveAdapterDatum, type LiveAdapterLora, LiveAdapterLostError, type LiveAdapterResult } from "../training/index.js";
import type { FutureResult } from "./futures.js";
import type { TinkerSessions } from "./sessions.js";
import { CHECKPOINT_NAME, type TinkerCheckpointRecord, type TinkerCheckpoints, tinkerPath } from "./tinker-checkpoints.js";
import type { TinkerLora, TrainingRunRecord, TrainingRuns } from "./training-runs.js";
import { forwardBackwardOutput } from "./wire/outputs.js";

/** The project a training run's registered model lives in (its name is `run-<uuid>`). */
const TINKER_PROJECT = "tinker";

export interface TrainingCommandDeps {
  catalog: BaseModelCatalog;
  trainability: Trainability;
  registry: ModelRegistry;
  checkpoints: Checkpoints;
  deletion: ModelDeletion;
  blobs: BlobStore;
  runs: TrainingRuns;
  tinkerCheckpoints: TinkerCheckpoints;
  sessions: TinkerSessions;
  /** A base model's GGUF on this machine (downloading an `hf:` one once). */
  baseModelPath(source: string): Promise<string>;
  adapterCommand(command: LiveAdapterCommand, signal: AbortSignal): Promise<LiveAdapterResult>;
}

export interface NewRunInput {
  entity: string;
  sessionId: string;
  /** The SDK's number of the training client in its session: the run's id is `{session}:train:{n}`, which the SDK derives itself. */
  modelSeqId: number;
  baseModel: string;
  lora: TinkerLora;
  userMetadata: JsonObject | null;
}

export class TrainingCommands {
  constructor(private readonly deps: TrainingCommandDeps) {}

  /**
   * Checks a new training client's base model before its future is made (a bad one is a 400 at
   * once) and settles its LoRA: on a base model whose unembedding is its token embedding (no
   * `output.weight`: SmolLM2, Gemma, Llama 3.2 1B) the unembedding is not trained, because
   * llama.cpp cannot apply a LoRA to a tied output projection; the SDK sends `train_unembed: true`
   * by default, so this is accepted, reported by get_info/weights_info, and said in the README.
   */
  async settleBaseModel(baseModel: string, lora: TinkerLora): Promise<TinkerLora> {
    if (!this.deps.catalog.has(baseModel)) throw badRequest(`unknown base model "${baseModel}"; this deployment offers: ${this.deps.catalog.names().join(", ")} (GET /api/v1/get_server_capabilities)`);
    const refusal = await this.deps.trainability.refusal(baseModel);
    if (refusal) throw badRequest(refusal);
    const facts = await this.deps.trainability.of(baseModel);
    return lora.train_unembed && facts?.tiedEmbeddings === true ? { ...lora, train_unembed: false } : lora;
  }

  /** A training run and its registered model, recorded before the trainer is asked (the id is the future's answer). */
  async newRun(input: NewRunInput): Promise<TrainingRunRecord> {
    const id = trainingRunId(input.sessionId, input.modelSeqId);
    const { model } = await this.deps.registry.create({ entity: input.entity, project: TINKER_PROJECT, name: `run-${randomUUID()}`, baseModel: input.baseModel, returnExisting: false, id });
    const now = new Date();
    const run: TrainingRunRecord = { _id: model._id, entity: input.entity, session_id: input.sessionId, base_model: input.baseModel, lora: input.lora, user_metadata: input.userMetadata, created_at: now, last_request_at: now, next_sampler_index: 0, unloaded: false };
    await this.deps.runs.create(run);
    return run;
  }

  /** A run whose adapter could not be made is removed again, with its registered model. */
  async discardRun(run: TrainingRunRecord): Promise<void> {
    const model = await this.deps.registry.get(run._id);
    if (model) await this.deps.deletion.delete(model);
    await this.deps.tinkerCheckpoints.removeRun(run._id);
    await this.deps.runs.remove(run._id);
  }

  async createAdapter(run: TrainingRunRecord, signal: AbortSignal): Promise<FutureResult> {
    await this.deps.adapterCommand({ kind: "create", adapterId: run._id, baseModel: await this.baseModelRef(run.base_model), lora: trainerLora(run.lora) }, signal);
    return { json: { model_id: run._id, type: "create_model" } };
  }

  async forwardBackward(run: TrainingRunRecord, request: ForwardBackwardRequest, datums: LiveAdapterDatum[], signal: AbortSignal): Promise<FutureResult> {
    this.checkLoaded(run);
    const config: Record<string, number> = { ...request.lossFnConfig };
    const text: Record<string, string> = {};
    // The SDK writes both maps; v2 wins where it has the key (it alone carries text values).
    for (const [key, value] of Object.entries(request.lossFnConfigV2)) {
      if (value.value.case === "number") config[key] = value.value.value;
      else if (value.value.case === "text") {
        delete config[key];
        text[key] = value.value.value;
      }
    }
    if (request.lossFn === "custom") throw badRequest("loss_fn \"custom\" (a loss uploaded with create_custom_loss) is not offered: this server sets custom_loss_server_side false, so the SDK runs custom losses on the client through forward and cross_entropy");
    const result = await this.deps.adapterCommand(
      { kind: request.forwardOnly ? "forward" : "forward_backward", adapterId: run._id, lossFn: request.lossFn, lossFnConfig: config, lossFnConfigText: text, datums },
      signal,
    );
    return { bytes: forwardBackwardOutput(result.outputs, result.metrics) };
  }

  async optimStep(run: TrainingRunRecord, adam: AdamSettings, signal: AbortSignal): Promise<FutureResult> {
    this.checkLoaded(run);
    const result = await this.deps.adapterCommand({ kind: "optim_step", adapterId: run._id, adam }, signal);
    return { json: { metrics: result.metrics } };
  }

  async saveWeights(run: TrainingRunRecord, options: { name: string | null; ttlSeconds: number | null; overwrite: boolean; userMetadata: Record<string, string> | null }, signal: AbortSignal): Promise<FutureResult> {
    this.checkLoaded(run);
    const name = options.name ?? `state-${String(await this.deps.runs.takeSamplerIndex(run._id)).padStart(6, "0")}`;
    checkName(name);
    const result = await this.deps.adapterCommand({ kind: "save_state", adapterId: run._id, withOptimizer: true }, signal);
    const stateFiles: { name: string; sha256: string }[] = [];
    let size = 0;
    for (const [file, data] of Object.entries(result.stateFiles)) {
      stateFiles.push({ name: file, sha256: (await this.deps.blobs.write(data, { maxBytes: data.byteLength })).sha256 });
      size += data.byteLength;
    }
    const record = this.checkpointRecord(run, "training", name, options, size);
    await this.deps.tinkerCheckpoints.put({ ...record, state_files: stateFiles, with_optimizer: true }, options.overwrite);
    return { json: { path: tinkerPath(record), type: "save_weights" } };
  }

  /** Restores a training checkpoint onto an existing training client. */
  async loadWeights(run: TrainingRunRecord, path: string, withOptimizer: boolean, signal: AbortSignal): Promise<FutureResult> {
    const checkpoint = await this.trainingCheckpoint(run.entity, path);
    if (checkpoint.base_model !== run.base_model) throw badRequest(`${path} was trained on ${checkpoint.base_model}, not on this training client's ${run.base_model}`);
    if (checkpoint.lora.rank !== run.lora.rank) throw badRequest(`${path} has LoRA rank ${checkpoint.lora.rank}, this training client ${run.lora.rank}`);
    await this.load(run, checkpoint, withOptimizer, signal);
    if (run.unloaded) await this.deps.runs.markUnloaded(run._id, false);
    return { json: { path: tinkerPath(checkpoint), model_id: run._id, type: "load_weights" } };
  }

  /** A training checkpoint of the caller's as the state of a new training client (`run`, made from it). */
  async loadIntoNewRun(run: TrainingRunRecord, checkpoint: TinkerCheckpointRecord, withOptimizer: boolean, signal: AbortSignal): Promise<FutureResult> {
    await this.load(run, checkpoint, withOptimizer, signal);
    return { json: { path: tinkerPath(checkpoint), model_id: run._id, type: "load_weights" } };
  }

  /** The training checkpoint at a tinker:// path, the caller's own. */
  async trainingCheckpoint(entity: string, path: string): Promise<TinkerCheckpointRecord> {
    const parsed = parseTinkerPath(path);
    if (!parsed) throw badRequest(`"${path}" is not a checkpoint path: tinker://{training_run_id}/weights/{name}`);
    if (parsed.checkpointType !== "training") throw badRequest(`${path} holds sampler weights only (no optimizer state, not loadable for training): load a tinker://.../weights/... checkpoint made by save_state`);
    return this.deps.tinkerCheckpoints.getOwned(entity, parsed.trainingRunId, parsed.checkpointId);
  }

  /**
   * The adapter exported as a checkpoint of the run's model (GGUF and PEFT files): sampler weights
   * the engines serve, or external weights to download.
   */
  async exportAdapter(run: TrainingRunRecord, type: "sampler" | "external", options: { name: string | null; ttlSeconds: number | null; userMetadata: Record<string, string> | null }, signal: AbortSignal): Promise<{ path: string; checkpoint: TinkerCheckpointRecord }> {
    this.checkLoaded(run);
    const name = options.name ?? String(await this.deps.runs.takeSamplerIndex(run._id)).padStart(6, "0");
    checkName(name);
    const result = await this.deps.adapterCommand({ kind: "export", adapterId: run._id, outputFormats: ["gguf", "peft"] }, signal);
    const gguf = Object.values(result.adapter?.gguf ?? {})[0];
    if (!gguf) throw new Error("the trainer exported no GGUF adapter");
    const latest = await this.deps.checkpoints.latest(run._id);
    const step = (latest?.step ?? 0) + 1;
    const checkpointId = `${TINKER_SEGMENT_OF_TYPE[type]}/${name}`;
    // Saving under a name again replaces what it named (its path then serves the new weights).
    const replaced = await this.deps.checkpoints.byName(run._id, checkpointId);
    if (replaced) await this.deps.checkpoints.deleteById(replaced._id);
    await this.deps.checkpoints.create(run._id, step, {}, { gguf, peft: result.adapter?.peft ?? null }, undefined, { name: checkpointId });
    const size = gguf.byteLength + Object.values(result.adapter?.peft ?? {}).reduce((n, f) => n + f.byteLength, 0);
    const record = { ...this.checkpointRecord(run, type, name, options, size), model_step: step };
    await this.deps.tinkerCheckpoints.put(record, true);
    return { path: tinkerPath(record), checkpoint: record };
  }

  async unload(run: TrainingRunRecord, signal: AbortSignal): Promise<FutureResult> {
    // An adapter the trainer no longer holds (it restarted) is as unloaded as can be.
    await this.deps.adapterCommand({ kind: "close", adapterId: run._id }, signal).catch((error: unknown) => {
      if (!(error instanceof LiveAdapterLostError)) throw error;
    });
    await this.deps.runs.markUnloaded(run._id, true);
    return { json: { model_id: run._id, type: "unload_model" } };
  }

  private async load(run: TrainingRunRecord, checkpoint: TinkerCheckpointRecord, withOptimizer: boolean, signal: AbortSignal): Promise<void> {
    const stateFiles: Record<string, Uint8Array> = {};
    for (const file of checkpoint.state_files ?? []) stateFiles[file.name] = await readBlob(this.deps.blobs, file.sha256);
    await this.deps.adapterCommand({ kind: "load_state", adapterId: run._id, baseModel: await this.baseModelRef(run.base_model), lora: trainerLora(run.lora), stateFiles, withOptimizer }, signal);
  }

  private checkpointRecord(run: TrainingRunRecord, type: TinkerCheckpointType, name: string, options: { ttlSeconds: number | null; userMetadata: Record<string, string> | null }, size: number): TinkerCheckpointRecord {
    const checkpointId = `${TINKER_SEGMENT_OF_TYPE[type]}/${name}`;
    const now = new Date();
    return {
      _id: `${run._id}/${checkpointId}`,
      entity: run.entity,
      training_run_id: run._id,
      checkpoint_id: checkpointId,
      type,
      base_model: run.base_model,
      lora: run.lora,
      created_at: now,
      expires_at: options.ttlSeconds ? new Date(now.getTime() + options.ttlSeconds * 1000) : null,
      user_metadata: options.userMetadata,
      size_bytes: size,
    };
  }

  private checkLoaded(run: TrainingRunRecord): void {
    if (run.unloaded) throw badRequest(`the training client ${run._id} was unloaded; load_state a checkpoint of it into a new training client`);
  }

  private async baseModelRef(name: string): Promise<BaseModelRef> {
    const base = this.deps.catalog.get(name);
    if (!base) throw notFound(`The base model \`${name}\` is no longer offered by this deployment.`);
    const ggufPath = await this.deps.baseModelPath(base.source);
    return baseModelRefOf(base, ggufPath);
  }
}

/** A training run's id as Tinker's SDK derives it (service_client.py: `f"{session_id}:train:{model_seq_id}"`). */
export function trainingRunId(sessionId: string, modelSeqId: number): string {
  return `${sessionId}:train:${modelSeqId}`;
}

/** Tinker's switches as the trainer's target modules (Hugging Face names of llama-family models). */
function trainerLora(lora: TinkerLora): LiveAdapterLora {
  const targetModules = [
    ...(lora.train_attn ? ["q_proj", "k_proj", "v_proj", "o_proj"] : []),
    ...(lora.train_mlp ? ["gate_proj", "up_proj", "down_proj"] : []),
    ...(lora.train_unembed ? ["lm_head"] : []),
  ];
  if (targetModules.length === 0) throw badRequest("lora_config trains nothing: set train_attn, train_mlp or train_unembed");
  return { rank: lora.rank, alpha: 0, seed: lora.seed, targetModules };
}

function checkName(name: string): void {
  if (!CHECKPOINT_NAME.test(name)) throw badRequest(`the checkpoint name "${name.slice(0, 80)}" must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit`);
}
