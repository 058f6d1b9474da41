// The Tinker service's RPC handlers: the SDK's messages in and out (proto/srl/tinker/v1), the work
// in ./tinker-api.ts. Unset SDK fields take the SDK's own defaults (AdamParams, LoraConfig).
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { type CheckpointSchema, type SupportedModelSchema, Tinker, type TrainingRunSchema } from "../../gen/srl/tinker/v1/tinker_pb.js";
import { badRequest } from "../core/errors.js";
import { defineHandlers, principalOf } from "../core/rpc/index.js";
import { type BaseModelCatalog, type Checkpoints, parseTinkerPath, type Trainability } from "../models/index.js";
import type { UrlSigner } from "../store/index.js";
import { CheckpointDownloads } from "./checkpoint-downloads.js";
import { futureResult } from "./future-results.js";
import { adamSettings, optionalNumber, stopOf, stringMap } from "./request-fields.js";
import type { FutureHandle, TinkerApi } from "./tinker-api.js";
import type { TokenSampleRequest } from "./sampling/token-sampler.js";
import { type TinkerCheckpointRecord, tinkerPath } from "./tinker-checkpoints.js";
import type { TrainingRunRecord } from "./training-runs.js";

export interface TinkerHandlerDeps {
  api: TinkerApi;
  catalog: BaseModelCatalog;
  trainability: Trainability;
  checkpoints: Checkpoints;
  /** Whether a base model has an engine to sample it on. */
  sampleable(baseModel: string): boolean;
  /** How long retrieve_future holds a request for a running result before answering 408 (TINKER_RETRIEVE_WAIT_MS). */
  retrieveWaitMs: number;
  /** Signs checkpoint download URLs (they carry their grant: the SDK downloads without a key). */
  signer: UrlSigner;
}


export function tinkerHandlers(deps: TinkerHandlerDeps) {
  const { api } = deps;
  const { sessions, runs, futures, tinkerCheckpoints } = api.deps;
  const downloads = new CheckpointDownloads({ tinkerCheckpoints, checkpoints: deps.checkpoints, signer: deps.signer });
  return defineHandlers(Tinker, {
    clientConfig() {
      return {
        pjwtAuthEnabled: false,
        credentialDefaultSource: "api_key",
        protoCompressFwdbwd: true,
        usePyqwestTransport: true,
        sampleUseRetrieveFutures: false,
        customLossServerSide: false,
        sampleJoinSamplingSession: false,
        parallelFwdbwdChunks: true,
        fwdbwdMaxChunkLen: 1024n,
        fwdbwdMaxChunkBytesCount: 5_000_000n,
      };
    },
    clientDynamicConfig() {
      return { refreshIntervalSec: 300n, sampleCancelEnabled: false };
    },
    healthz() {
      return { status: "ok" };
    },
    async getServerCapabilities() {
      const supportedModels: MessageInitShape<typeof SupportedModelSchema>[] = [];
      for (const name of deps.catalog.names()) {
        const facts = await deps.trainability.of(name);
        supportedModels.push({ modelName: name, maxContextLength: BigInt(facts?.contextLength ?? 0), trainable: facts?.trainable !== false, sampleable: deps.sampleable(name) });
      }
      return { supportedModels };
    },
    async createSession(request, context) {
      const session = await sessions.create(principalOf(context).entity, {
        tags: request.tags,
        user_metadata: request.userMetadata ? (request.userMetadata as unknown as JsonObject) : null,
        sdk_version: request.sdkVersion,
        project_id: request.projectId ?? null,
        display_name: request.displayName ?? null,
      });
      return { type: "create_session", sessionId: session._id };
    },
    async sessionHeartbeat(request, context) {
      await sessions.heartbeat(principalOf(context).entity, request.sessionId);
      return { type: "session_heartbeat" };
    },
    async finishSession(request, context) {
      await api.finishSession(principalOf(context).entity, request.sessionId, request.reason?.type || "success");
      return {};
    },
    async listSessions(request, context) {
      const sessionsOf = await sessions.list(principalOf(context).entity, Number(request.offset), Number(request.limit || 20n));
      return { sessions: sessionsOf.map((session) => session._id) };
    },
    async getSession(request, context) {
      const entity = principalOf(context).entity;
      const session = await sessions.getOwned(entity, request.sessionId);
      const [runsOf, samplers] = await Promise.all([runs.ofSession(entity, session._id), sessions.samplingOf(entity, session._id)]);
      return {
        trainingRunIds: runsOf.map((run) => run._id),
        samplerIds: samplers.map((sampler) => sampler._id),
        userMetadata: stringMap(session.user_metadata),
        ...(session.display_name !== null ? { displayName: session.display_name } : {}),
      };
    },
    whoami(_request, context) {
      const entity = principalOf(context).entity;
      return { userUrn: `urn:srl:entity:${entity}`, orgUrn: `urn:srl:entity:${entity}` };
    },
    telemetry() {
      return { status: "accepted" };
    },
    async createModel(request, context) {
      if (request.optimizerConfig && request.optimizerConfig.type !== "" && request.optimizerConfig.type !== "adamw") throw badRequest(`optimizer_config.type "${request.optimizerConfig.type}" is not offered: only "adamw"`);
      const lora = request.loraConfig;
      return futureMessage(
        await api.createModel(principalOf(context).entity, {
          sessionId: request.sessionId,
          modelSeqId: Number(request.modelSeqId),
          baseModel: request.baseModel,
          lora: {
            rank: Number(lora?.rank ?? 32n),
            seed: lora?.seed !== undefined ? Number(BigInt.asUintN(32, lora.seed)) : Math.floor(Math.random() * 2 ** 31),
            train_unembed: lora?.trainUnembed ?? true,
            train_mlp: lora?.trainMlp ?? true,
            train_attn: lora?.trainAttn ?? true,
          },
          userMetadata: request.userMetadata ? (request.userMetadata as unknown as JsonObject) : null,
        }),
      );
    },
    async getInfo(request, context) {
      const run = await runs.getOwned(principalOf(context).entity, request.modelId);
      const facts = await deps.trainability.of(run.base_model);
      return {
        type: "get_info",
        modelData: { arch: facts?.architecture ?? undefined, modelName: run.base_model, tokenizerId: run.base_model },
        modelId: run._id,
        optimizerConfig: { type: "adamw" },
        isLora: true,
        loraRank: BigInt(run.lora.rank),
        modelName: run.base_model,
      };
    },
    async forwardBackward(request, context) {
      return futureMessage(await api.forwardBackward(principalOf(context).entity, request));
    },
    async optimStep(request, context) {
      if (request.optimizerParams) throw badRequest("optimizer_params of another optimizer family is not offered: only AdamW (adam_params)");
      const params = request.adamParams ?? request.optimParams;
      return futureMessage(await api.optimStep(principalOf(context).entity, request.modelId, optionalNumber(request.seqId), adamSettings(params)));
    },
    async saveWeights(request, context) {
      return futureMessage(
        await api.saveWeights(principalOf(context).entity, request.modelId, optionalNumber(request.seqId), {
          name: request.path ?? null,
          ttlSeconds: optionalNumber(request.ttlSeconds),
          overwrite: request.overwrite,
          userMetadata: Object.keys(request.userMetadata).length > 0 ? { ...request.userMetadata } : null,
        }),
      );
    },
    async loadWeights(request, context) {
      const entity = principalOf(context).entity;
      if (request.modelId !== undefined && request.modelId !== "") {
        return futureMessage(await api.loadWeights(entity, request.modelId, optionalNumber(request.seqId), request.path, request.optimizer));
      }
      if (request.sessionId === undefined) throw badRequest("load_weights needs model_id (an existing training client) or session_id (a new one)");
      return futureMessage(
        await api.createModelFromState(entity, {
          sessionId: request.sessionId,
          modelSeqId: Number(request.modelSeqId ?? 0n),
          path: request.path,
          withOptimizer: request.optimizer,
          baseModel: request.baseModel ?? null,
          userMetadata: request.userMetadata ? (request.userMetadata as unknown as JsonObject) : null,
        }),
      );
    },
    async saveWeightsForSampler(request, context) {
      return futureMessage(
        await api.saveForSampler(principalOf(context).entity, request.modelId, optionalNumber(request.seqId), {
          name: request.path ?? null,
          ttlSeconds: optionalNumber(request.ttlSeconds),
          userMetadata: Object.keys(request.userMetadata).length > 0 ? { ...request.userMetadata } : null,
          withSession: request.path === undefined,
        }),
      );
    },
    async saveWeightsExternal(request, context) {
      if (request.ageEncryptionRecipients.length > 0) throw badRequest("age_encryption_recipients: encrypted exports are not offered by this server; export without it (the download URLs are signed and expire)");
      return futureMessage(await api.saveExternal(principalOf(context).entity, request.modelId, optionalNumber(request.seqId), { name: request.path, ttlSeconds: optionalNumber(request.ttlSeconds) }));
    },
    async getExternalWeightsUrls(request, context) {
      const files = await downloads.fileUrls(principalOf(context).entity, request.trainingRunId, request.checkpointId, baseUrlOf(context.requestHeader));
      return { urls: files.urls, expires: files.expires.toISOString() };
    },
    async getCheckpointArchiveUrl(request, context) {
      const archive = await downloads.archiveUrl(principalOf(context).entity, request.trainingRunId, request.checkpointId, baseUrlOf(context.requestHeader));
      return { url: archive.url, expires: archive.expires.toISOString() };
    },
    async setCheckpointTtl(request, context) {
      const checkpoint = await tinkerCheckpoints.getOwned(principalOf(context).entity, request.trainingRunId, request.checkpointId);
      const ttl = optionalNumber(request.ttlSeconds);
      await tinkerCheckpoints.setExpiry(checkpoint._id, ttl === null ? null : new Date(Date.now() + ttl * 1000));
      return {};
    },
    async *downloadCheckpointFile(request) {
      const source = await downloads.open(request.token, request.filename);
      let first = true;
      for await (const chunk of source.chunks) {
        yield first ? { contentType: source.contentType, filename: source.filename, size: BigInt(source.size), data: chunk } : { data: chunk };
        first = false;
      }
      if (first) yield { contentType: source.contentType, filename: source.filename, size: BigInt(source.size) };
    },
    async unloadModel(request, context) {
      return futureMessage(await api.unloadModel(principalOf(context).entity, request.modelId));
    },
    async createSamplingSession(request, context) {
      const entity = principalOf(context).entity;
      await sessions.getOwned(entity, request.sessionId);
      const target = await samplingTarget(entity, request.baseModel ?? null, request.modelPath ?? null);
      const session = await sessions.createSampling(entity, request.sessionId, target);
      return { type: "create_sampling_session", samplingSessionId: session._id };
    },
    async getSampler(request, context) {
      const session = await sessions.getSampling(principalOf(context).entity, request.samplerId);
      return { samplerId: session._id, baseModel: session.base_model, modelPath: session.model_path ?? undefined };
    },
    async asample(request, context) {
      const entity = principalOf(context).entity;
      if (request.targetPromptLogprobs !== undefined) throw badRequest("target_prompt_logprobs is not offered by this server");
      if (request.promptAltTokensK > 0n) throw badRequest("prompt_alt_tokens_k is not offered by this server");
      if (request.recordStabilityInfo) throw badRequest("record_stability_info (StableReinforce's sampler records) is not offered by this server");
      const target = request.samplingSessionId !== undefined ? await sessions.getSampling(entity, request.samplingSessionId) : await samplingTarget(entity, request.baseModel ?? null, request.modelPath ?? null).then((t) => ({ base_model: t.baseModel, model_path: t.modelPath }));
      const prompt = (request.prompt?.chunks ?? []).flatMap((chunk, i) => {
        if (chunk.type !== "" && chunk.type !== "encoded_text") throw badRequest(`prompt.chunks[${i}] is a ${chunk.type} chunk; only encoded_text (token ids) is offered`);
        return chunk.tokens.map((t) => Number(t));
      });
      if (prompt.length === 0) throw badRequest("prompt is empty");
      const params = request.samplingParams;
      const sample: Omit<TokenSampleRequest, "entity" | "signal"> = {
        model: target.model_path ?? target.base_model,
        prompt,
        numSamples: Number(request.numSamples || 1n),
        maxTokens: optionalNumber(params?.maxTokens),
        temperature: params?.temperature ?? 1,
        topK: Number(params?.topK ?? -1n),
        topP: params?.topP ?? 1,
        seed: optionalNumber(params?.seed),
        stop: stopOf(params),
        promptLogprobs: request.promptLogprobs ?? false,
        topkPromptLogprobs: Number(request.topkPromptLogprobs),
        topkSampleLogprobs: Number(request.topkSampleLogprobs),
        promptLogprobsLastN: optionalNumber(request.promptLogprobsLastN),
      };
      if (sample.promptLogprobsLastN !== null && !sample.promptLogprobs) throw badRequest("prompt_logprobs_last_n needs prompt_logprobs");
      return futureMessage(await api.sample(entity, sample));
    },
    async retrieveFuture(request, context) {
      const record = await futures.settled(principalOf(context).entity, request.requestId, deps.retrieveWaitMs, context.signal);
      return { result: await futureResult(futures, record) };
    },
    async cancelFuture(request, context) {
      const entity = principalOf(context).entity;
      for (const id of [request.requestId, ...request.requestIds].filter((id) => id !== "")) await futures.cancel(entity, id);
      return { status: "ok" };
    },
    async listTrainingRuns(request, context) {
      const entity = principalOf(context).entity;
      const limit = Number(request.limit || 20n);
      const offset = Number(request.offset);
      const page = await runs.list(entity, offset, limit);
      return { trainingRuns: await Promise.all(page.runs.map(runMessage)), cursor: { offset: BigInt(offset), limit: BigInt(limit), totalCount: BigInt(page.total) } };
    },
    async getTrainingRun(request, context) {
      return runMessage(await runs.getOwned(principalOf(context).entity, request.trainingRunId));
    },
    async listUserCheckpoints(request, context) {
      const limit = Number(request.limit || 100n);
      const offset = Number(request.offset);
      const page = await tinkerCheckpoints.listOfEntity(principalOf(context).entity, offset, limit);
      return { checkpoints: page.checkpoints.map(checkpointMessage), cursor: { offset: BigInt(offset), limit: BigInt(limit), totalCount: BigInt(page.total) } };
    },
    async listCheckpoints(request, context) {
      const run = await runs.getOwned(principalOf(context).entity, request.trainingRunId);
      const limit = Number(request.limit || 100n);
      const offset = Number(request.offset);
      const page = await tinkerCheckpoints.list(run._id, offset, limit);
      return { checkpoints: page.checkpoints.map(checkpointMessage), cursor: { offset: BigInt(offset), limit: BigInt(limit), totalCount: BigInt(page.total) } };
    },
    async deleteCheckpoint(request, context) {
      const entity = principalOf(context).entity;
      const checkpoint = await tinkerCheckpoints.getOwned(entity, request.trainingRunId, request.checkpointId);
      await tinkerCheckpoints.remove(checkpoint, deps.checkpoints);
      return {};
    },
    async weightsInfo(request, context) {
      const parsed = parseTinkerPath(request.tinkerPath);
      if (!parsed) throw badRequest(`"${request.tinkerPath}" is not a checkpoint path: tinker://{training_run_id}/weights/{name} or .../sampler_weights/{name}`);
      const checkpoint = await tinkerCheckpoints.getOwned(principalOf(context).entity, parsed.trainingRunId, parsed.checkpointId);
      return {
        baseModel: checkpoint.base_model,
        optimizerConfig: { type: "adamw" },
        isLora: true,
        loraRank: BigInt(checkpoint.lora.rank),
        trainUnembed: checkpoint.lora.train_unembed,
        trainMlp: checkpoint.lora.train_mlp,
        trainAttn: checkpoint.lora.train_attn,
      };
    },
  });

  /** What a sampling client samples: a base model, or a sampler checkpoint of the caller's (checked here). */
  async function samplingTarget(entity: string, baseModel: string | null, modelPath: string | null): Promise<{ baseModel: string; modelPath: string | null }> {
    if (modelPath !== null && modelPath !== "") {
      const parsed = parseTinkerPath(modelPath);
      if (!parsed) throw badRequest(`model_path "${modelPath}" is not a tinker:// checkpoint path`);
      if (parsed.checkpointType !== "sampler") throw badRequest(`${modelPath} is a training checkpoint; sample a sampler checkpoint (save_weights_for_sampler)`);
      const checkpoint = await tinkerCheckpoints.getOwned(entity, parsed.trainingRunId, parsed.checkpointId);
      return { baseModel: checkpoint.base_model, modelPath: tinkerPath(checkpoint) };
    }
    if (baseModel === null || baseModel === "") throw badRequest("base_model or model_path is required");
    if (!deps.catalog.has(baseModel)) throw badRequest(`unknown base model "${baseModel}"; this deployment offers: ${deps.catalog.names().join(", ")}`);
    return { baseModel, modelPath: null };
  }

  async function runMessage(run: TrainingRunRecord): Promise<MessageInitShape<typeof TrainingRunSchema>> {
    const [training, sampler] = await Promise.all([tinkerCheckpoints.latest(run._id, "training"), tinkerCheckpoints.latest(run._id, "sampler")]);
    return {
      trainingRunId: run._id,
      baseModel: run.base_model,
      modelOwner: run.entity,
      isLora: true,
      corrupted: false,
      loraRank: BigInt(run.lora.rank),
      lastRequestTime: run.last_request_at.toISOString(),
      ...(training ? { lastCheckpoint: checkpointMessage(training) } : {}),
      ...(sampler ? { lastSamplerCheckpoint: checkpointMessage(sampler) } : {}),
      userMetadata: stringMap(run.user_metadata),
    };
  }

}

/** The service's own URL as the client reached it (behind a TLS proxy: X-Forwarded-Proto). */
function baseUrlOf(headers: Headers): string {
  // HTTP/2's :authority reaches handlers as Host (the transcoder and connect-node both map it).
  const host = headers.get("host") ?? "localhost";
  return `${headers.get("x-forwarded-proto") === "https" ? "https" : "http"}://${host}`;
}

function futureMessage(handle: FutureHandle) {
  return { requestId: handle.requestId, ...(handle.modelId !== null ? { modelId: handle.modelId } : {}), sampleSequenceIds: handle.sampleSequenceIds ?? [] };
}

function checkpointMessage(record: TinkerCheckpointRecord): MessageInitShape<typeof CheckpointSchema> {
  return {
    checkpointId: record.checkpoint_id,
    checkpointType: record.type,
    time: record.created_at.toISOString(),
    tinkerPath: tinkerPath(record),
    sizeBytes: BigInt(record.size_bytes),
    public: false,
    userMetadata: record.user_metadata ?? {},
    ...(record.expires_at ? { expiresAt: record.expires_at.toISOString() } : {}),
  };
}
