// Combinations and ranges of training configs that field rules cannot express; each failure names
// the field (400). The RL combinations are checked by the functions the job runner uses too
// (trainer/rl/config.ts), so the API and the runner cannot disagree.
import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import type { ExperimentalTrainingConfig, SftTrainingConfig } from "../../gen/srl/v1/training_pb.js";
import { badRequest } from "../core/errors.js";
import { TrainingInputError } from "./trainer/api.js";
import { checkKlReference, resolveLossFn } from "./trainer/rl/config.js";
import { refuseUnsupportedRlSettings } from "./trainer/rl/refused-settings.js";

/**
 * quantizedBase: whether the model's base is quantized (precalculate_logprobs's default there),
 * null when not known yet; the runner checks again with the trainer's answer.
 */
export function checkRlConfig(config: ExperimentalTrainingConfig | undefined, quantizedBase: boolean | null = null): void {
  if (!config) return;
  for (const [field, value] of [
    ["learning_rate", config.learningRate],
    ["epsilon", config.epsilon],
    ["epsilon_high", config.epsilonHigh],
    ["kl_penalty_coef", config.klPenaltyCoef],
  ] as const) {
    if (value !== undefined && !(value >= 0)) throw badRequest(`experimental_config.${field} must be >= 0, got ${value}`);
  }
  try {
    checkKlReference(config.klPenaltyReferenceStep, config.klPenaltyStepLag);
    resolveLossFn(config.ppo, config.lossFn);
    refuseUnsupportedRlSettings({ ...config, precalculateLogprobs: config.precalculateLogprobs ?? quantizedBase });
  } catch (error) {
    throw error instanceof TrainingInputError ? badRequest(error.message) : error;
  }
}

export function checkSftConfig(config: SftTrainingConfig | undefined): void {
  if (!config) return;
  const batch = valueOf(config.batchSize);
  if (batch !== undefined && batch !== "auto" && !(typeof batch === "number" && Number.isInteger(batch) && batch >= 1)) {
    throw badRequest(`config.batch_size must be a positive integer or "auto", got ${JSON.stringify(batch)}`);
  }
  const rate = valueOf(config.learningRate);
  const rates = Array.isArray(rate) ? rate : rate === undefined ? [] : [rate];
  if (Array.isArray(rate) && rate.length === 0) throw badRequest("config.learning_rate must not be an empty list");
  for (const value of rates) {
    if (typeof value !== "number" || !(value >= 0)) throw badRequest(`config.learning_rate must be a number >= 0 or a list of them, got ${JSON.stringify(value)}`);
  }
}

function valueOf(value: Value | undefined): JsonValue | undefined {
  const json = value ? toJson(ValueSchema, value) : null;
  return json === null ? undefined : json;
}
