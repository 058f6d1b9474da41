// The KL reference of an RL job (training-semantics §4.3), resolved by the service: the trainer
// only ever sees an adapter (sent with the job) or "the base model". `kl_ref_adapter_path` is a server path in
// ART's local backend; here it names a checkpoint of the caller's models instead
// (`{project}/{name}:step{N}` or `wandb-artifact:///{entity}/{project}/{name}:step{N}`), so a client
// cannot make the server read an arbitrary file. `kl_penalty_reference_step` k is this model's
// checkpoint k; `kl_penalty_step_lag` L is the checkpoint L steps before the policy being trained
// (its latest), never before step 0. Step 0 is the base model.
import type { JsonObject } from "@bufbuild/protobuf";
import { badRequest } from "../core/errors.js";
import { type CheckpointRecord, type Checkpoints, type ModelName, type ModelRecord, type ModelRegistry, parseModelName } from "../models/index.js";
import { TrainingInputError } from "./trainer/api.js";

type CheckpointName = Extract<ModelName, { kind: "registered" }> & { step: number };

/** Checked when the job is created: the reference must be written as a checkpoint name. */
export function checkKlReferenceName(value: string | undefined, entity: string): void {
  if (value === undefined) return;
  checkpointName(value, entity, (message) => badRequest(`experimental_config.kl_ref_adapter_path: ${message}`));
}

/**
 * The job's experimental config without the reference settings, and the reference checkpoint
 * (null: the base model).
 */
export async function resolveKlReference(
  deps: { registry: ModelRegistry; checkpoints: Checkpoints },
  model: ModelRecord,
  latestStep: number,
  config: JsonObject,
): Promise<{ config: JsonObject; reference: CheckpointRecord | null }> {
  const { kl_ref_adapter_path: named, kl_penalty_reference_step: referenceStep, kl_penalty_step_lag: lag, ...rest } = config;
  const coefficient = typeof config.kl_penalty_coef === "number" ? config.kl_penalty_coef : 0;
  if (coefficient <= 0) return { config: rest, reference: null };
  const fail = (message: string) => new TrainingInputError(`KL reference: ${message}`);
  let owner = model;
  let step: number;
  if (typeof named === "string") {
    const name = checkpointName(named, model.entity, fail);
    const found = await deps.registry.findByName(model.entity, name.project, name.name);
    if (!found) throw fail(`kl_ref_adapter_path ${named}: no such model`);
    if (found.base_model !== model.base_model) throw fail(`kl_ref_adapter_path ${named} is trained on ${found.base_model}, not on this model's ${model.base_model}`);
    owner = found;
    step = name.step;
  } else if (typeof referenceStep === "number") {
    step = referenceStep;
  } else if (typeof lag === "number") {
    step = Math.max(0, latestStep - lag);
  } else {
    step = 0;
  }
  if (step === 0) return { config: rest, reference: null };
  const checkpoint = await deps.checkpoints.atStep(owner._id, step);
  if (!checkpoint) throw fail(`${owner.project}/${owner.name} has no checkpoint at step ${step}`);
  return { config: rest, reference: checkpoint.adapter_sha256 ? checkpoint : null };
}

function checkpointName(value: string, entity: string, error: (message: string) => Error): CheckpointName {
  const name = parseModelName(value, () => false);
  if (name.kind !== "registered" || typeof name.step !== "number") {
    throw error(`name a checkpoint as {project}/{name}:step{N} or wandb-artifact:///{entity}/{project}/{name}:step{N} (server paths are not read), got "${value}"`);
  }
  if (name.entity !== null && name.entity !== entity) throw error(`"${value}" belongs to another entity`);
  return name as CheckpointName;
}
