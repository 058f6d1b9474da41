// Training service: job creation only records a queued job (the worker runs it); jobs are read and
// cancelled here; their progress is in the Events service.
import type { JsonObject } from "@bufbuild/protobuf";
import { CreateSftTrainingJobRequestSchema, CreateTrainingJobRequestSchema, Training, type TrainingJob } from "../../gen/srl/v1/training_pb.js";
import { badRequest, overloaded } from "../core/errors.js";
import { defineHandlers, principalOf, sentJson } from "../core/rpc/index.js";
import type { EventLog } from "../events/index.js";
import type { Checkpoints, ModelRecord, ModelRegistry, Trainability } from "../models/index.js";
import { listEnvelope } from "../store/index.js";
import type { Artifacts } from "../artifacts/index.js";
import { resolveTrainingData } from "./artifact-url.js";
import type { TrainingJobRecord, TrainingJobs } from "../jobs/index.js";
import { checkRlConfig, checkSftConfig } from "./config-checks.js";
import { checkKlReferenceName } from "./kl-reference.js";
import { openDownload } from "./artifact-download.js";

export interface TrainingDeps {
  artifacts: Artifacts;
  checkpoints: Checkpoints;
  jobs: TrainingJobs;
  events: EventLog;
  registry: ModelRegistry;
  artifactHttpsHosts: readonly string[];
  trainability: Trainability;
  /** Unfinished jobs one entity may have (ENTITY_MAX_JOBS); 0: no limit. */
  maxJobsPerEntity?: number;
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
      checkRlConfig(request.experimentalConfig, (await deps.trainability.of(model.base_model))?.quantized ?? null);
      checkKlReferenceName(request.experimentalConfig?.klRefAdapterPath, entity);
      await refuseOverJobLimit(jobs, entity, deps.maxJobsPerEntity ?? 0);
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
      await refuseOverJobLimit(jobs, entity, deps.maxJobsPerEntity ?? 0);
      const job = await jobs.createSft({ entity, modelId: model._id, trainingDataUrl: request.trainingDataUrl, config });
      deps.onJobCreated?.();
      return { id: job._id };
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

async function refuseUntrainable(trainability: Trainability, model: ModelRecord): Promise<void> {
  const refusal = await trainability.refusal(model.base_model);
  if (refusal) throw badRequest(refusal);
}

/** An entity's unfinished jobs are bounded, so its backlog cannot grow without end (workers take entities in turn anyway). */
async function refuseOverJobLimit(jobs: TrainingJobs, entity: string, max: number): Promise<void> {
  if (max <= 0) return;
  const unfinished = await jobs.unfinishedOf(entity);
  if (unfinished >= max) throw overloaded(`this entity has ${unfinished} training jobs queued or running (ENTITY_MAX_JOBS=${max}); wait for some to finish`, 30);
}
