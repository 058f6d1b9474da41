// A `lora` artifact logged for a model (ART's `_experimental_fork_checkpoint` does this) becomes
// that model's checkpoint: the trainer converts the PEFT adapter into llama.cpp's LoRA GGUF for
// the base model (reading only the GGUF's metadata, so it answers while a job trains), and the
// checkpoint is stored with both, served at once. The step is the artifact's `step{N}` alias, or
// the one after the model's newest.
import { stat } from "node:fs/promises";
import { badRequest, conflict } from "../core/errors.js";
import type { BaseModelCatalog, Checkpoints, ModelRecord } from "../models/index.js";
import { TrainingInputError, type AdapterFileSet, type BaseModelRef } from "../training/index.js";
import type { ImportCheckpoint } from "./artifact-uploads.js";

const PEFT_FILES = ["adapter_config.json", "adapter_model.safetensors"];
/** A conversion reads metadata and rewrites tensors: seconds even for large adapters. */
const CONVERT_TIMEOUT_MS = 120_000;

export interface LoraImportDeps {
  catalog: BaseModelCatalog;
  checkpoints: Checkpoints;
  baseModelPath(source: string): Promise<string>;
  convertAdapter(ref: BaseModelRef, peft: Record<string, Uint8Array>, signal: AbortSignal): Promise<AdapterFileSet>;
}

export function loraImporter(deps: LoraImportDeps): ImportCheckpoint {
  return async (model: ModelRecord, step: number | null, peft: Record<string, Uint8Array>, metadata: string) => {
    const missing = PEFT_FILES.filter((name) => !(name in peft));
    if (missing.length > 0) throw badRequest(`a lora artifact for model ${model.name} must hold a PEFT adapter: ${missing.join(" and ")} missing (it has ${Object.keys(peft).join(", ") || "no files"})`);
    const latest = await deps.checkpoints.latest(model._id);
    const target = step ?? (latest?.step ?? 0) + 1;
    if (target < 1) throw badRequest("a lora artifact's step alias must be step1 or later (step 0 is the base model)");
    if (await deps.checkpoints.atStep(model._id, target)) throw conflict(`model ${model.name} already has a checkpoint at step ${target}`);
    const base = deps.catalog.get(model.base_model);
    if (!base) throw badRequest(`base model ${model.base_model} of ${model.name} is no longer offered by this deployment`);
    const ggufPath = await deps.baseModelPath(base.source);
    const ref: BaseModelRef = { name: base.name, ggufPath, ggufSize: (await stat(ggufPath)).size, source: base.source, trainWeights: base.trainWeights ?? "" };
    const converted = await deps
      .convertAdapter(ref, Object.fromEntries(PEFT_FILES.map((name) => [name, peft[name] as Uint8Array])), AbortSignal.timeout(CONVERT_TIMEOUT_MS))
      .catch((error: unknown) => {
        // The adapter itself is wrong (shapes, modules, format): the caller's to fix.
        throw error instanceof TrainingInputError ? badRequest(`the lora artifact's adapter does not fit ${base.name}: ${error.message}`) : error;
      });
    const gguf = converted.gguf["adapter.gguf"];
    if (!gguf) throw new Error("the trainer converted the adapter without a GGUF");
    const checkpoint = await deps.checkpoints.create(model._id, target, {}, { gguf, peft: converted.peft });
    await deps.checkpoints.setArtifactFields(checkpoint._id, { metadata });
    return { checkpointId: checkpoint._id };
  };
}
