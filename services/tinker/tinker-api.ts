// The Tinker API's domain: sessions, training clients and their commands, sampling, futures. A
// command is checked when it arrives (a bad request is a 4xx at once, no future), then recorded
// as a pending future and run in its training client's turn; its outcome goes on the future:
// failures of the caller's making are category "user", others "server".
import type { JsonObject } from "@bufbuild/protobuf";
import type { ForwardBackwardRequest } from "../../gen/tinker/tinker_public_pb.js";
import { ApiError, badRequest, overloaded } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { type AdamSettings, LiveAdapterLostError, TrainingInputError } from "../training/index.js";
import { CommandQueues } from "./command-queue.js";
import { FairGate } from "./fair-gate.js";
import type { FailureCategory, FutureKind, FutureRecord, FutureResult, Futures } from "./futures.js";
import type { TinkerSessions } from "./sessions.js";
import type { TokenSampler, TokenSampleRequest } from "./sampling/token-sampler.js";
import type { TinkerCheckpoints } from "./tinker-checkpoints.js";
import { type TrainingCommands, trainingRunId } from "./training-commands.js";
import type { TinkerLora, TrainingRunRecord, TrainingRuns } from "./training-runs.js";
import { trainerDatums } from "./wire/datums.js";
import { sampleResponse } from "./wire/samples.js";

export interface TinkerApiDeps {
  sessions: TinkerSessions;
  runs: TrainingRuns;
  futures: Futures;
  tinkerCheckpoints: TinkerCheckpoints;
  commands: TrainingCommands;
  sampler: TokenSampler;
  log: Logger;
  limits: TinkerLimits;
}

export interface TinkerLimits {
  /** Training clients (live adapters) an entity may hold (TINKER_ENTITY_MAX_CLIENTS). */
  maxClientsPerEntity: number;
  /** Unfinished requests an entity may have (TINKER_ENTITY_MAX_PENDING). */
  maxPendingPerEntity: number;
  /** Commands on trainers at once: one per trainer. */
  trainerSlots: number;
  /** How long a command waits for an earlier seq_id of its client (TINKER_SEQ_GAP_WAIT_MS). */
  seqGapWaitMs: number;
}

export interface FutureHandle {
  requestId: string;
  modelId: string | null;
  sampleSequenceIds?: string[];
}

export class TinkerApi {
  private readonly queues: CommandQueues;
  private readonly gate: FairGate;
  /** Unfinished requests per entity, in this process. */
  private readonly pending = new Map<string, number>();
  /** Aborted at shutdown: commands run past the request that queued them, not past the process. */
  private readonly lifetime = new AbortController();

  constructor(readonly deps: TinkerApiDeps) {
    this.gate = new FairGate(deps.limits.trainerSlots);
    this.queues = new CommandQueues(deps.limits.seqGapWaitMs);
  }

  stop(): void {
    this.lifetime.abort(new Error("the service is stopping"));
  }

  async createModel(entity: string, input: { sessionId: string; modelSeqId: number; baseModel: string; lora: TinkerLora; userMetadata: JsonObject | null }): Promise<FutureHandle> {
    await this.deps.sessions.getOwned(entity, input.sessionId);
    const retried = await this.existingRun(entity, input.sessionId, input.modelSeqId, "create_model");
    if (retried) return retried;
    await this.checkClientLimit(entity);
    const lora = await this.deps.commands.settleBaseModel(input.baseModel, input.lora);
    const run = await this.deps.commands.newRun({ entity, ...input, lora });
    return this.schedule(entity, "create_model", run._id, null, async (signal) => {
      try {
        return await this.deps.commands.createAdapter(run, signal);
      } catch (error) {
        await this.deps.commands.discardRun(run).catch((cleanup: unknown) => this.deps.log.warn("could not remove a training run whose adapter failed", { model_id: run._id, error: String(cleanup) }));
        throw error;
      }
    });
  }

  /** A new training client holding a training checkpoint's state (load_weights with a session). */
  async createModelFromState(entity: string, input: { sessionId: string; modelSeqId: number; path: string; withOptimizer: boolean; baseModel: string | null; userMetadata: JsonObject | null }): Promise<FutureHandle> {
    await this.deps.sessions.getOwned(entity, input.sessionId);
    const retried = await this.existingRun(entity, input.sessionId, input.modelSeqId, "load_weights");
    if (retried) return retried;
    await this.checkClientLimit(entity);
    const checkpoint = await this.deps.commands.trainingCheckpoint(entity, input.path);
    const baseModel = input.baseModel ?? checkpoint.base_model;
    if (baseModel !== checkpoint.base_model) throw badRequest(`${input.path} was trained on ${checkpoint.base_model}, not ${baseModel}`);
    const lora = await this.deps.commands.settleBaseModel(baseModel, checkpoint.lora);
    const run = await this.deps.commands.newRun({ entity, sessionId: input.sessionId, modelSeqId: input.modelSeqId, baseModel, lora, userMetadata: input.userMetadata });
    return this.schedule(entity, "load_weights", run._id, null, async (signal) => {
      try {
        return await this.deps.commands.loadIntoNewRun(run, checkpoint, input.withOptimizer, signal);
      } catch (error) {
        await this.deps.commands.discardRun(run).catch(() => {});
        throw error;
      }
    });
  }

  async forwardBackward(entity: string, request: ForwardBackwardRequest): Promise<FutureHandle> {
    const run = await this.runOf(entity, request.modelId);
    if (request.data.length === 0) throw badRequest("data is empty");
    if (request.lossFn === "") throw badRequest("loss_fn is required");
    // Checked now, so a malformed batch is a 400 rather than a failed future.
    const datums = trainerDatums(request.data);
    return this.command(run, "forward_backward", request.seqId || null, (signal) => this.deps.commands.forwardBackward(run, request, datums, signal));
  }

  async optimStep(entity: string, modelId: string, seqId: number | null, adam: AdamSettings): Promise<FutureHandle> {
    const run = await this.runOf(entity, modelId);
    return this.command(run, "optim_step", seqId, (signal) => this.deps.commands.optimStep(run, adam, signal));
  }

  async saveWeights(entity: string, modelId: string, seqId: number | null, options: { name: string | null; ttlSeconds: number | null; overwrite: boolean; userMetadata: Record<string, string> | null }): Promise<FutureHandle> {
    const run = await this.runOf(entity, modelId);
    return this.command(run, "save_weights", seqId, (signal) => this.deps.commands.saveWeights(run, options, signal));
  }

  async loadWeights(entity: string, modelId: string, seqId: number | null, path: string, withOptimizer: boolean): Promise<FutureHandle> {
    const run = await this.runOf(entity, modelId);
    await this.deps.commands.trainingCheckpoint(entity, path);
    return this.command(run, "load_weights", seqId, (signal) => this.deps.commands.loadWeights(run, path, withOptimizer, signal));
  }

  async saveForSampler(entity: string, modelId: string, seqId: number | null, options: { name: string | null; ttlSeconds: number | null; userMetadata: Record<string, string> | null; withSession: boolean }): Promise<FutureHandle> {
    const run = await this.runOf(entity, modelId);
    return this.command(run, "save_weights_for_sampler", seqId, async (signal) => {
      const saved = await this.deps.commands.exportAdapter(run, "sampler", options, signal);
      // Without a name the SDK wants a sampling session on the new weights (save_weights_and_get_sampling_client).
      const session = options.withSession ? await this.deps.sessions.createSampling(entity, run.session_id, { baseModel: run.base_model, modelPath: saved.path }) : null;
      return { json: { path: saved.path, sampling_session_id: session?._id ?? null, type: "save_weights_for_sampler" } };
    });
  }

  async saveExternal(entity: string, modelId: string, seqId: number | null, options: { name: string; ttlSeconds: number | null }): Promise<FutureHandle> {
    const run = await this.runOf(entity, modelId);
    return this.command(run, "save_weights_external", seqId, async (signal) => {
      const saved = await this.deps.commands.exportAdapter(run, "external", { ...options, userMetadata: null }, signal);
      return { json: { path: saved.path, type: "save_weights_external" } };
    });
  }

  async unloadModel(entity: string, modelId: string): Promise<FutureHandle> {
    const run = await this.runOf(entity, modelId);
    const handle = await this.command(run, "unload_model", null, (signal) => this.deps.commands.unload(run, signal));
    return handle;
  }

  /** Samples at once (no client order): the engines' admission and fairness apply. */
  async sample(entity: string, request: Omit<TokenSampleRequest, "entity" | "signal">): Promise<FutureHandle> {
    const future = await this.newFuture(entity, "sample", null, null);
    const ids = Array.from({ length: request.numSamples }, (_, i) => `${future._id}:${i}`);
    void this.run(future, async (signal) => ({ bytes: sampleResponse(await this.deps.sampler.sample({ ...request, entity, signal })) })).finally(() => this.release(entity));
    return { requestId: future._id, modelId: null, sampleSequenceIds: ids };
  }

  /**
   * A training client the session made already under this number: a retried request (the SDK
   * retries on connection errors). Its future answers the same id at once; a different request
   * under a number in use would not reach here, since the SDK numbers its clients itself.
   */
  private async existingRun(entity: string, sessionId: string, modelSeqId: number, kind: "create_model" | "load_weights"): Promise<FutureHandle | null> {
    const id = trainingRunId(sessionId, modelSeqId);
    const existing = await this.deps.runs.find(entity, id);
    if (!existing) return null;
    return this.schedule(entity, kind, id, null, async () => ({ json: kind === "create_model" ? { model_id: id, type: "create_model" } : { model_id: id, type: "load_weights" } }));
  }

  /** Ends a session (the SDK's ServiceClient.close): its training clients' live adapters are released, their checkpoints stay. */
  async finishSession(entity: string, sessionId: string, reason: string): Promise<void> {
    await this.deps.sessions.finish(entity, sessionId, reason);
    for (const run of await this.deps.runs.ofSession(entity, sessionId)) {
      if (!run.unloaded) await this.unloadModel(entity, run._id);
    }
  }

  private async runOf(entity: string, modelId: string): Promise<TrainingRunRecord> {
    return this.deps.runs.touchOwned(entity, modelId);
  }

  private async command(run: TrainingRunRecord, kind: FutureKind, seqId: number | null, work: (signal: AbortSignal) => Promise<FutureResult>): Promise<FutureHandle> {
    return this.schedule(run.entity, kind, run._id, seqId, work);
  }

  private async schedule(entity: string, kind: FutureKind, clientId: string, seqId: number | null, work: (signal: AbortSignal) => Promise<FutureResult>): Promise<FutureHandle> {
    // A client this process has not seen (the service restarted): its order goes on after the
    // highest seq_id its futures hold, so its next command does not wait for numbers long used.
    if (!this.queues.has(clientId)) this.queues.seed(clientId, await this.deps.futures.highestSeq(clientId).catch(() => 0));
    const future = await this.newFuture(entity, kind, clientId, seqId);
    // In the client's order, then in the entity's turn on a trainer.
    this.queues.submit(clientId, seqId, () => this.gate.run(entity, () => this.run(future, work)).finally(() => this.release(entity)));
    return { requestId: future._id, modelId: clientId };
  }

  /**
   * A new pending future, counted against the entity's unfinished requests (429 past
   * TINKER_ENTITY_MAX_PENDING: the SDK backs off); `release` uncounts it once it ends.
   */
  private async newFuture(entity: string, kind: FutureKind, clientId: string | null, seqId: number | null): Promise<FutureRecord> {
    const count = this.pending.get(entity) ?? 0;
    if (count >= this.deps.limits.maxPendingPerEntity) throw overloaded(`this entity has ${count} unfinished Tinker requests, the most it may have (TINKER_ENTITY_MAX_PENDING); wait for some to finish`, 2);
    this.pending.set(entity, count + 1);
    try {
      return await this.deps.futures.create(entity, kind, clientId, seqId);
    } catch (error) {
      this.release(entity);
      throw error;
    }
  }

  private release(entity: string): void {
    const count = (this.pending.get(entity) ?? 1) - 1;
    if (count <= 0) this.pending.delete(entity);
    else this.pending.set(entity, count);
  }

  private async checkClientLimit(entity: string): Promise<void> {
    const live = await this.deps.runs.countLoaded(entity);
    if (live >= this.deps.limits.maxClientsPerEntity) {
      throw overloaded(`this entity holds ${live} training clients, the most it may (TINKER_ENTITY_MAX_CLIENTS); unload_model one, or close a ServiceClient, first`, 5);
    }
  }

  /** Sessions whose SDK stopped sending heartbeats: ended, their training clients released. */
  async expireSessions(silentSince: Date): Promise<number> {
    const stale = await this.deps.sessions.silentSince(silentSince);
    for (const session of stale) await this.finishSession(session.entity, session._id, "expired");
    return stale.length;
  }

  /** Runs a future's work and records its outcome (a cancelled future is skipped). */
  private async run(future: FutureRecord, work: (signal: AbortSignal) => Promise<FutureResult>): Promise<void> {
    if (!(await this.deps.futures.markRunning(future._id))) return;
    try {
      await this.deps.futures.complete(future._id, await work(this.lifetime.signal));
    } catch (error) {
      const { message, category } = describeFailure(error);
      if (category === "server") this.deps.log.error("tinker request failed", { request_id: future._id, kind: future.kind, model_id: future.model_id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      await this.deps.futures.fail(future._id, message, category).catch((failed: unknown) => this.deps.log.error("could not record a failed tinker request", { request_id: future._id, error: String(failed) }));
    }
  }
}

function describeFailure(error: unknown): { message: string; category: FailureCategory } {
  if (error instanceof ApiError) {
    const user = error.kind === "validation" || error.kind === "bad_request" || error.kind === "not_found" || error.kind === "conflict" || error.kind === "permission_denied";
    return { message: error.message, category: user ? "user" : "server" };
  }
  if (error instanceof TrainingInputError) return { message: error.message, category: "user" };
  if (error instanceof LiveAdapterLostError) return { message: `the training client's live state is gone from the trainer (it restarted): load_state from your last save_state. ${error.message}`, category: "server" };
  return { message: error instanceof Error ? error.message : String(error), category: "server" };
}
