// Models service: the model registry, checkpoints, trajectory logs, tracking runs, plus the
// deployment's base-model catalog. (Its health, system check and current-entity RPCs are the
// system folder's: services/system/handlers.ts.)
import type { JsonObject } from "@bufbuild/protobuf";
import {
  LogTrajectoriesRequestSchema,
  Models,
  type Checkpoint,
  type Model,
  type RunMetric,
  type StoredTrajectoryGroup,
  type TrajectoryBatch,
} from "../../gen/srl/v1/models_pb.js";
import { ApiError, badRequest } from "../core/errors.js";
import { listEnvelope } from "../store/index.js";
import { defineHandlers, principalOf, sentJson } from "../core/rpc/index.js";
import type { TrainingJobs } from "../jobs/index.js";
import type { Trainability } from "./trainability.js";
import type { BaseModelCatalog } from "./catalog.js";
import type { CheckpointRecord, Checkpoints } from "./checkpoints.js";
import type { ModelRecord, ModelRegistry } from "./registry.js";
import type { RunMetricRecord, Runs } from "./runs.js";
import { splitMetrics } from "./log-metrics.js";
import type { TrajectoryLog } from "./trajectory-log.js";
import { TrajectoryBatches, type StoredGroupView, type TrajectoryBatchView } from "./trajectory-batches.js";
import type { ModelDeletion } from "./delete-model.js";

export interface ModelsDeps {
  catalog: BaseModelCatalog;
  registry: ModelRegistry;
  checkpoints: Checkpoints;
  runs: Runs;
  trajectoryLog: TrajectoryLog;
  deletion: ModelDeletion;
  jobs: TrainingJobs;
  trainability: Trainability;
}

export function modelsHandlers(deps: ModelsDeps) {
  const { registry, checkpoints, runs } = deps;
  const batches = new TrajectoryBatches(deps.trajectoryLog, deps.jobs, checkpoints);
  return defineHandlers(Models, {
    async createModel(request, context) {
      const principal = principalOf(context);
      const entity = request.entity ?? principal.entity;
      if (entity !== principal.entity) {
        throw new ApiError("permission_denied", `this API key belongs to entity "${principal.entity}" and cannot create models in "${entity}"`);
      }
      const refusal = await deps.trainability.refusal(request.baseModel);
      if (refusal) throw badRequest(`${refusal} (GET /v1/preview/base-models/details says which base models can be trained)`);
      const { model } = await registry.create({
        entity,
        project: request.project,
        name: request.name,
        baseModel: request.baseModel,
        returnExisting: request.returnExisting ?? false,
      });
      return modelMessage(model);
    },

    async listModels(request, context) {
      const page = await registry.list(principalOf(context).entity, { after: request.after, limit: request.limit ?? 20, project: request.project });
      return listEnvelope({ items: page.items.map(modelMessage), hasMore: page.hasMore });
    },

    async getModel(request, context) {
      return modelMessage(await registry.getOwned(principalOf(context).entity, request.modelId));
    },

    async deleteModel(request, context) {
      const model = await registry.getOwned(principalOf(context).entity, request.modelId);
      const result = await deps.deletion.delete(model);
      return { modelId: model._id, deletedCheckpoints: result.deletedCheckpoints, deletedRun: result.deletedRun };
    },

    async listCheckpoints(request, context) {
      const model = await registry.getOwned(principalOf(context).entity, request.modelId);
      const page = await checkpoints.list(model._id, { after: request.after, limit: request.limit ?? 20, order: request.order === "desc" ? "desc" : "asc" });
      return listEnvelope({ items: page.items.map(checkpointMessage), hasMore: page.hasMore });
    },

    async deleteCheckpoints(request, context) {
      const model = await registry.getOwned(principalOf(context).entity, request.modelId);
      const result = await checkpoints.deleteSteps(model._id, request.steps);
      return { deletedCount: result.deleted, notFoundSteps: result.notFound };
    },

    async logTrajectories(request, context) {
      const model = await registry.getOwned(principalOf(context).entity, request.modelId);
      if (request.split.trim() === "") throw badRequest("split must not be empty");
      const groups = (sentJson(context, LogTrajectoriesRequestSchema, request).trajectory_groups ?? []) as JsonObject[];
      const current = await checkpoints.latest(model._id);
      const step = current?.step ?? 0;
      await deps.trajectoryLog.store(model._id, request.split, step, groups);
      const metrics = splitMetrics(request.split, groups);
      await runs.append(model.run_id, step, request.split, metrics);
      if (current) await checkpoints.mergeMetrics(current._id, metrics);
      return {
        step,
        numGroups: groups.length,
        numTrajectories: request.trajectoryGroups.reduce((n, g) => n + g.trajectories.length, 0),
        metrics,
      };
    },

    async listTrajectoryBatches(request, context) {
      const model = await registry.getOwned(principalOf(context).entity, request.modelId);
      const page = await batches.list(model._id, { split: request.split, after: request.after, limit: request.limit ?? 20 });
      return listEnvelope({ items: page.items.map(batchMessage), hasMore: page.hasMore });
    },

    async listTrajectoryGroups(request, context) {
      const model = await registry.getOwned(principalOf(context).entity, request.modelId);
      const page = await batches.groups(model._id, request.batchId, { after: request.after, limit: request.limit ?? 100 });
      return listEnvelope({ items: page.items.map(groupMessage), hasMore: page.hasMore });
    },

    async getRun(request, context) {
      const run = await runs.get(request.runId, principalOf(context).entity);
      return {
        id: run._id,
        entity: run.entity,
        project: run.project,
        name: run.name,
        modelId: run.model_id ?? undefined,
        createdAt: run.created_at.toISOString(),
        summary: run.summary,
      };
    },

    async listRunMetrics(request, context) {
      const run = await runs.get(request.runId, principalOf(context).entity);
      const page = await runs.listMetrics(run._id, { after: request.after, limit: request.limit ?? 100, name: request.name });
      return listEnvelope({ items: page.items.map(runMetricMessage), hasMore: page.hasMore });
    },

    listBaseModels: () => ({ models: deps.catalog.names() }),

    async listBaseModelDetails() {
      const details = await Promise.all(deps.catalog.names().map((name) => deps.trainability.of(name)));
      return {
        object: "list",
        data: details.flatMap((d) =>
          d
            ? [
                {
                  name: d.name,
                  trainable: d.trainable ?? undefined,
                  trainingNote: d.note ?? undefined,
                  architecture: d.architecture ?? undefined,
                  quantized: d.quantized ?? undefined,
                  contextLength: d.contextLength ?? undefined,
                },
              ]
            : [],
        ),
      };
    },
  });
}

function modelMessage(model: ModelRecord): Omit<Model, "$typeName"> {
  return {
    id: model._id,
    entity: model.entity,
    project: model.project,
    name: model.name,
    baseModel: model.base_model,
    runId: model.run_id,
    createdAt: model.created_at.toISOString(),
  };
}

function batchMessage(batch: TrajectoryBatchView): Omit<TrajectoryBatch, "$typeName"> {
  return {
    id: batch.id,
    source: batch.source,
    split: batch.split,
    step: batch.step,
    numGroups: batch.numGroups,
    createdAt: batch.createdAt.toISOString(),
    trainingJobId: batch.trainingJob?.id,
    trainingJobStatus: batch.trainingJob?.status,
    producedStep: batch.trainingJob?.producedStep ?? undefined,
  };
}

function groupMessage(group: StoredGroupView): Omit<StoredTrajectoryGroup, "$typeName"> {
  return { id: group.id, index: group.index, group: group.group };
}

function checkpointMessage(checkpoint: CheckpointRecord): Omit<Checkpoint, "$typeName"> {
  return { id: checkpoint._id, step: checkpoint.step, metrics: checkpoint.metrics };
}

function runMetricMessage(metric: RunMetricRecord): Omit<RunMetric, "$typeName"> {
  return { id: metric.id, step: metric.step, split: metric.split, name: metric.name, value: metric.value, time: metric.time.toISOString() };
}
