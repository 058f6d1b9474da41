// Training service: job creation only records a queued job (the worker runs it); jobs are read and
// cancelled here; their progress is in the Events service.
import type { JsonObject } from "@bufbuild/protobuf";
import { CreateSftTrainingJobRequestSchema, CreateTrainingJobRequestSchema, Training, type TrainingJob } from "../../gen/srl/v1/training_pb.js";
import { ApiError, badRequest } from "../core/errors.js";
import { principalOf } from "../gateway/auth/authenticate.js";
import { defineHandlers, sentJson } from "../gateway/pipeline.js";
import type { EventLog } from "../events/event-log.js";
import type { ModelRegistry } from "../models/registry.js";
import { listEnvelope } from "../store/pagination.js";
import { artifactUrl, type ArtifactRecord, type Artifacts } from "../artifacts/store.js";
import { resolveTrainingData } from "./artifact-url.js";
import type { TrainingJobRecord, TrainingJobs } from "./jobs.js";
import { checkRlConfig, checkSftConfig } from "./config-checks.js";
import { checkKlReferenceName } from "./kl-reference.js";
import { openDownload } from "./artifact-download.js";
import type { Checkpoints } from "../models/checkpoints.js";
import type { ModelRecord } from "../models/registry.js";
import type { Trainability } from "./trainability.js";

export interface TrainingDeps {
  artifacts: Artifacts;
  checkpoints: Checkpoints;
  jobs: TrainingJobs;
  events: EventLog;
  registry: ModelRegistry;
  artifactHttpsHosts: readonly string[];
  trainability: Trainability;
  /** Called after a job was queued (wakes the in-process worker). */
  onJobCreated?: () => void;
}

export function trainingHandlers(deps: TrainingDeps) {
  const { jobs, registry } = deps;
  return defineHandlers(Training, {
    async createTrainingJob(request, context) {
      const entity = principalOf(context).entity;
      const model = await registry.getOwned(entity, request.modelId);
      await refuseUntrainable(deps.trainability, model);
      if (request.trajectoryGroups.length === 0) throw badRequest("trajectory_groups must not be empty");
      const body = sentJson(context, CreateTrainingJobRequestSchema, request);
      const experimentalConfig = (body.experimental_config ?? {}) as JsonObject;
      checkRlConfig(request.experimentalConfig);
      checkKlReferenceName(request.experimentalConfig?.klRefAdapterPath, entity);
      const job = await jobs.createRl({ entity, modelId: model._id, groups: body.trajectory_groups as JsonObject[], experimentalConfig });
      deps.onJobCreated?.();
      return { id: job._id };
    },

    async createSftTrainingJob(request, context) {
      const entity = principalOf(context).entity;
      const model = await registry.getOwned(entity, request.modelId);
      await refuseUntrainable(deps.trainability, model);
      checkSftConfig(request.config);
      const artifact = await resolveTrainingData(deps.artifacts, entity, request.trainingDataUrl, deps.artifactHttpsHosts);
      if (artifact) await deps.artifacts.linkToModel(artifact._id, model._id);
      const body = sentJson(context, CreateSftTrainingJobRequestSchema, request);
      const config = { config: body.config ?? null, experimental_config: body.experimental_config ?? null } as JsonObject;
      const job = await jobs.createSft({ entity, modelId: model._id, trainingDataUrl: request.trainingDataUrl, config });
      deps.onJobCreated?.();
      return { id: job._id };
    },

    async createArtifact(request, context) {
      const principal = principalOf(context);
      const entity = request.entity ?? principal.entity;
      if (entity !== principal.entity) {
        throw new ApiError("permission_denied", `this API key belongs to entity "${principal.entity}" and cannot upload to "${entity}"`);
      }
      const single = request.content.byteLength > 0 ? [{ filename: request.filename ?? "train.jsonl", content: request.content }] : [];
      if (single.length > 0 && request.files.length > 0) throw badRequest("give the artifact's files either as content or as files, not both");
      const files = single.length > 0 ? single : request.files.map((file) => ({ filename: file.filename, content: file.content }));
      if (files.length === 0) throw badRequest("no file given: send content (with filename) or files");
      const empty = files.find((file) => file.content.byteLength === 0);
      if (empty) throw badRequest(`the artifact file ${empty.filename} is empty`);
      const record = await deps.artifacts.upload({
        entity,
        project: request.project,
        name: request.name,
        type: request.type ?? "dataset",
        version: request.version ?? null,
        files,
      });
      return artifactMessage(record);
    },

    async *downloadArtifactFile(request, context) {
      const source = await openDownload(deps, principalOf(context).entity, request.url, request.filename ?? null, request.format ?? null);
      let first = true;
      for await (const data of source.chunks) {
        yield first ? { contentType: source.contentType, data, filename: source.filename, size: BigInt(source.size) } : { contentType: source.contentType, data };
        first = false;
      }
      if (first) yield { contentType: source.contentType, data: new Uint8Array(), filename: source.filename, size: 0n };
    },

    async listTrainingJobs(request, context) {
      const model = await registry.getOwned(principalOf(context).entity, request.modelId);
      const page = await jobs.listForModel(model._id, { after: request.after, limit: request.limit ?? 20 });
      return listEnvelope({ items: page.items.map(jobMessage), hasMore: page.hasMore });
    },

    async getTrainingJob(request, context) {
      return jobMessage(await jobs.getOwned(principalOf(context).entity, request.trainingJobId));
    },

    async cancelTrainingJob(request, context) {
      const job = await jobs.getOwned(principalOf(context).entity, request.trainingJobId);
      if (await jobs.fail(job._id, "cancelled")) {
        if (!(await deps.events.hasEnded(job._id))) await deps.events.append(job._id, "training_failed", { error_message: "cancelled" });
      }
      return jobMessage(await jobs.getOwned(job.entity, job._id));
    },
  });
}

function jobMessage(job: TrainingJobRecord): Omit<TrainingJob, "$typeName"> {
  return {
    id: job._id,
    modelId: job.model_id,
    type: job.type,
    status: job.status,
    createdAt: job.created_at.toISOString(),
    trainingStart: job.started_at?.toISOString(),
    trainingEnd: job.ended_at?.toISOString(),
    errorMessage: job.error_message ?? undefined,
    step: job.step ?? undefined,
  };
}

function artifactMessage(record: ArtifactRecord) {
  return {
    id: record._id,
    entity: record.entity,
    project: record.project,
    name: record.name,
    version: record.version,
    type: record.type,
    url: artifactUrl(record),
    files: record.files.map((f) => ({ name: f.name, size: BigInt(f.size) })),
    createdAt: record.created_at.toISOString(),
  };
}

async function refuseUntrainable(trainability: Trainability, model: ModelRecord): Promise<void> {
  const refusal = await trainability.refusal(model.base_model);
  if (refusal) throw badRequest(refusal);
}
