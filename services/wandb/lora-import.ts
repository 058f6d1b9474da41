// A `lora` artifact logged for a model (ART's `_experimental_fork_checkpoint` does this) becomes
// that model's checkpoint: the trainer converts the PEFT adapter into llama.cpp's LoRA GGUF for
// the base model (reading only the GGUF's metadata, so it answers while a job trains), and the
// checkpoint is stored with both, served at once. The step is the artifact's `step{N}` alias, or
// the one after the model's newest, within 1..MAX_STEP.
//
// The artifact is checked as a trained adapter is (weights' adapter-check.ts), before anything is
// converted or stored: rank and alpha in bounds, only LoRA A/B tensors of the base model's
// projections with its dims, every value finite. Any of that wrong is a 400 naming why; a NaN
// adapter is never served.
import { badRequest, conflict } from "../core/errors.js";
import type { BaseModelCatalog, Checkpoints, ModelRecord } from "../models/index.js";
import { baseModelRefOf, TrainingInputError, type AdapterFileSet, type BaseModelRef } from "../training/index.js";
import { ADAPTER_GGUF_FILE, AdapterCheckError, adapterBaseOf, checkAdapterFiles, checkPeftFiles, PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE } from "../weights/index.js";
import type { ImportCheckpoint } from "./artifact-uploads.js";

const PEFT_FILES = [PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE];
/** Steps are int32 on every API (and a step past 2^53 would make "the next step" equal to itself). */
export const MAX_STEP = 2 ** 31 - 1;
/** A conversion reads metadata and rewrites tensors: seconds even for large adapters. */
const CONVERT_TIMEOUT_MS = 120_000;

export interface LoraImportDeps {
  catalog: BaseModelCatalog;
  checkpoints: Checkpoints;
  baseModelPath(source: string): Promise<string>;
  convertAdapter(ref: BaseModelRef, peft: Record<string, Uint8Array>, signal: AbortSignal): Promise<AdapterFileSet>;
}

export function loraImporter(deps: LoraImportDeps): ImportCheckpoint {
  return async (model: ModelRecord, step: number | null, peft: Record<string, Uint8Array>, metadata: string, key: string) => {
    // A retried import (its commit crashed after the checkpoint was stored) answers that checkpoint.
    const earlier = await deps.checkpoints.ofJob(model._id, key);
    if (earlier) {
      await deps.checkpoints.setArtifactFields(earlier._id, { metadata });
      return { checkpointId: earlier._id };
    }
    const missing = PEFT_FILES.filter((name) => !(name in peft));
    if (missing.length > 0) throw badRequest(`a lora artifact for model ${model.name} must hold a PEFT adapter: ${missing.join(" and ")} missing (it has ${Object.keys(peft).join(", ") || "no files"})`);
    if (step !== null && !(Number.isSafeInteger(step) && step <= MAX_STEP)) throw badRequest(`a lora artifact's step alias must name a step from 1 to ${MAX_STEP}; it names ${step > MAX_STEP ? `one beyond ${MAX_STEP}` : String(step)}`);
    const latest = await deps.checkpoints.latest(model._id);
    const target = step ?? (latest?.step ?? 0) + 1;
    if (target < 1) throw badRequest("a lora artifact's step alias must be step1 or later (step 0 is the base model)");
    if (target > MAX_STEP) throw badRequest(`model ${model.name} is at step ${latest?.step ?? 0}: a lora artifact without a step alias would be step ${target}, past ${MAX_STEP}`);
    if (await deps.checkpoints.atStep(model._id, target)) throw conflict(`model ${model.name} already has a checkpoint at step ${target}`);
    const base = deps.catalog.get(model.base_model);
    if (!base) throw badRequest(`base model ${model.base_model} of ${model.name} is no longer offered by this deployment`);
    const ggufPath = await deps.baseModelPath(base.source);
    const ref = await baseModelRefOf(base, ggufPath);
    const adapterBase = await adapterBaseOf(ggufPath);
    const given = Object.fromEntries(PEFT_FILES.map((name) => [name, peft[name] as Uint8Array]));
    try {
      checkPeftFiles(given, adapterBase);
    } catch (error) {
      if (error instanceof AdapterCheckError) throw badRequest(`the lora artifact's adapter cannot be used with ${base.name}: ${error.message}`);
      throw error;
    }
    const converted = await deps
      .convertAdapter(ref, given, AbortSignal.timeout(CONVERT_TIMEOUT_MS))
      .catch((error: unknown) => {
        // The adapter itself is wrong (shapes, modules, format): the caller's to fix.
        throw error instanceof TrainingInputError ? badRequest(`the lora artifact's adapter does not fit ${base.name}: ${error.message}`) : error;
      });
    const gguf = converted.gguf[ADAPTER_GGUF_FILE];
    if (!gguf) throw new Error("the trainer converted the adapter without a GGUF");
    // The input passed; what the trainer made of it must too (a failure here is the trainer's, a 500).
    await checkAdapterFiles(converted, adapterBase).catch((error: unknown) => {
      throw new Error(`the trainer's conversion of the lora artifact is not a usable adapter: ${error instanceof Error ? error.message : String(error)}`);
    });
    const checkpoint = await deps.checkpoints.create(model._id, target, {}, { gguf, peft: converted.peft }, key);
    await deps.checkpoints.setArtifactFields(checkpoint._id, { metadata });
    return { checkpointId: checkpoint._id };
  };
}
