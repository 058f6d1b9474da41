// The Evaluations service's RPC handlers: run a prompt set on a model's checkpoints, read the
// results back, delete them. Everything is the caller's entity's own; another's reads as absent.
import { Evaluations } from "../../gen/srl/v1/evaluations_pb.js";
import { defineHandlers, principalOf } from "../core/rpc/index.js";
import { ChatCompletions, type InferenceEngine, type ModelResolver, type RequestLimits } from "../inference/index.js";
import type { Checkpoints, ModelRegistry } from "../models/index.js";
import { checkRequest } from "./request-checks.js";
import { runEvaluation } from "./runner.js";
import type { EvaluationStore } from "./store.js";

export interface EvaluationsDeps {
  engine: InferenceEngine;
  resolver: ModelResolver;
  limits: RequestLimits;
  registry: ModelRegistry;
  checkpoints: Checkpoints;
  store: EvaluationStore;
}

export function evaluationsHandlers(deps: EvaluationsDeps) {
  const chat = new ChatCompletions(deps);
  return defineHandlers(Evaluations, {
    async createEvaluation(request, context) {
      const entity = principalOf(context).entity;
      const checked = await checkRequest(entity, request, deps);
      const evaluation = await runEvaluation(chat, { entity, signal: context.signal }, request, checked);
      await deps.store.save(entity, evaluation);
      return evaluation;
    },

    async listEvaluations(request, context) {
      const model = await deps.registry.getOwned(principalOf(context).entity, request.modelId);
      return { object: "list", data: await deps.store.listForModel(model._id, request.limit ?? 20) };
    },

    async getEvaluation(request, context) {
      return deps.store.getOwned(principalOf(context).entity, request.evaluationId);
    },

    async deleteEvaluation(request, context) {
      await deps.store.deleteOwned(principalOf(context).entity, request.evaluationId);
      return { id: request.evaluationId, deleted: true };
    },
  });
}
