// What CreateEvaluation checks before anything is generated: the caller's model, its steps, the
// prompt set and the metric (compiled here, so a bad pattern or schema costs no generation).
import type { CreateEvaluationRequest } from "../../gen/srl/v1/evaluations_pb.js";
import { badRequest, notFound } from "../core/errors.js";
import type { Checkpoints, ModelRecord, ModelRegistry } from "../models/index.js";
import { scorerOf, type Scorer } from "./metrics/scorer.js";

export const DEFAULT_MAX_TOKENS = 128;
export const DEFAULT_TEMPERATURE = 0;

export interface CheckedRequest {
  model: ModelRecord;
  steps: number[];
  scorer: Scorer;
  maxTokens: number;
  temperature: number;
}

export async function checkRequest(entity: string, request: CreateEvaluationRequest, deps: { registry: ModelRegistry; checkpoints: Checkpoints }): Promise<CheckedRequest> {
  const model = await deps.registry.getOwned(entity, request.modelId);
  const steps = request.steps;
  if (steps.length === 0) throw badRequest("steps must name one to four checkpoints (0 is the base model)");
  for (const [i, step] of steps.entries()) {
    if (step < 0) throw badRequest(`steps[${i}] must be 0 or more, not ${step}`);
    if (steps.indexOf(step) !== i) throw badRequest(`steps must be distinct: step ${step} is given twice`);
  }
  // Step 0 is the base model: it is there whether or not a row for it is.
  for (const step of steps) {
    if (step !== 0 && !(await deps.checkpoints.atStep(model._id, step))) throw notFound(`model ${model._id} has no checkpoint at step ${step}`);
  }
  if (request.items.length === 0) throw badRequest("items must hold at least one prompt");
  if (!request.metric) throw badRequest("metric is required");
  return {
    model,
    steps,
    scorer: scorerOf(request.metric, request.items),
    maxTokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
    temperature: request.temperature ?? DEFAULT_TEMPERATURE,
  };
}
