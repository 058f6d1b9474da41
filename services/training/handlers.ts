// Training service: job creation only records a queued job (the worker runs it); jobs are read and
// cancelled here; their progress is in the Events service.
import type { JsonObject } from "@bufbuild/protobuf";
import { CreateSftTrainingJobRequestSchema, CreateTrainingJobRequestSchema, Training, type TrainingJob } from "../../gen/srl/v1/training_pb.js";
import { badRequest } from "../core/errors.js";
import { principalOf } from "../gateway/auth/authenticate.js";
import { defineHandlers, sentJson } from "../gateway/pipeline.js";
import type { EventLog } from "../events/event-log.js";
import type { ModelRegistry } from "../models/registry.js";
import type { Db } from "mongodb";
import { resolveTrainingData } from "./artifact-url.js";
import type { TrainingJobRecord, TrainingJobs } from "./jobs.js";
import { checkRlConfig, checkSftConfig } from "./config-checks.js";

export interface TrainingDeps {
  db: Db;
  jobs: TrainingJobs;
  events: EventLog;
  registry: ModelRegistry;
  artifactHttpsHosts: readonly string[];
}

export function trainingHandlers(deps: TrainingDeps) {
  const { jobs, registry } = deps;
  return defineHandlers(Training, {
    async createTrainingJob(request, context) {
      const entity = principalOf(context).entity;
      const model = await registry.getOwned(entity, request.modelId);
      if (request.trajectoryGroups.length === 0) throw badRequest("trajectory_groups must not be empty");
      const body = sentJson(context, CreateTrainingJobRequestSchema, request);
      const experimentalConfig = (body.experimental_config ?? {}) as JsonObject;
      checkRlConfig(request.experimentalConfig);
      const job = await jobs.createRl({ entity, modelId: model._id, groups: body.trajectory_groups as JsonObject[], experimentalConfig });
      return { id: job._id };
    },

    async createSftTrainingJob(request, context) {
      const entity = principalOf(context).entity;
      const model = await registry.getOwned(entity, request.modelId);
      checkSftConfig(request.config);
      await resolveTrainingData(deps.db, entity, request.trainingDataUrl, deps.artifactHttpsHosts);
      const body = sentJson(context, CreateSftTrainingJobRequestSchema, request);
      const config = { config: body.config ?? null, experimental_config: body.experimental_config ?? null } as JsonObject;
      const job = await jobs.createSft({ entity, modelId: model._id, trainingDataUrl: request.trainingDataUrl, config });
      return { id: job._id };
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
